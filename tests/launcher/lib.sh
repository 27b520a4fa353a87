# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/lib.sh: an elastic_train run under elastic-run over a 2-GPU
# job on node1 and a grant job on node2, with a reference run without any
# change first (sourced after tests/lib.sh).

# lr_setup: the cluster, Open MPI's settings, the scratch directory (unless
# the test made it first) with elastic-run in it; sets train (elastic_train).
lr_setup() {
	t_need_cluster
	t_ompi_env
	[ -d "${T_DIR:-}" ] || t_scratch
	train=${top_builddir:?}/examples/elastic_train
	[ -x "$train" ] || t_skip "examples/elastic_train not built"
	cp "$top_builddir/launcher/elastic-run" "$T_DIR/"
}

# lr_start ARGS GRANT_GPUS [GRANT2_GPUS]: submits both jobs, starts the run;
# sets lead, grant, train. The job's output is $T_DIR/lead.out. GRANT_GPUS 0:
# no grant (the job alone on node1). GRANT2_GPUS: a second grant on node2
# after the first (which then hosts node2's daemon), the first's id in
# grant1, the second's in grant. LR_PATH: directories put before
# elastic-run's PATH; LR_RUN_ARGS: elastic-run's options.
lr_start() {
	local args=$1 ggpus=$2 g2=${3:-}
	lr_setup
	# (elastic_train in place: its libtool wrapper finds libelastic in the build tree)
	lead=$(t_sbatch root -N1 -n2 -w node1 --gres=gpu:2 -H -o "$T_DIR/lead.out" -D "$T_DIR" --wrap "
# the reference: the same training, no change, 2 ranks, without the pause
# that paces the elastic run's steps (a sleep changes no number)
ELASTIC_JOB_ID=ref\$SLURM_JOB_ID mpirun --bind-to none -np 2 $train $args --step-sleep 0 --quiet --out ref.model > ref.out 2>&1 || echo 'reference failed'
echo reference-done
${LR_PATH:+PATH=$LR_PATH:\$PATH }exec ./elastic-run -v ${LR_RUN_ARGS:-}-- $train $args --compare ref.model")
	if [ "$ggpus" = 0 ]; then
		scontrol release "$lead"
	elif [ -n "$g2" ]; then
		t_grant_start "$lead" "$ggpus"
		grant1=$grant
		t_grant_release "$lead" "$g2"
	else
		t_grant_release "$lead" "$ggpus"
	fi
}

# lr_wait_step N: until the elastic run printed step N.
lr_wait_step() {
	local end=$((SECONDS + 90))
	until grep -aq "^step $1 " "$T_DIR/lead.out" 2>/dev/null; do
		[ $SECONDS -lt $end ] || {
			cat "$T_DIR/lead.out"
			t_fail "the elastic run did not reach step $1"
		}
		sleep 0.2
	done
}

# lr_first_step_after_reform: the first step printed by the relaunch.
lr_first_step_after_reform() {
	awk '/re-form 1:/{f=1} f && /^step [0-9]+ /{print $2; exit}' "$T_DIR/lead.out"
}

# lr_wrapper RANK [VAR=VALUE...]: the pid of the wrapper (elastic-run --rank)
# of rank RANK of the elastic run whose environment also holds each
# VAR=VALUE given; nothing when none does.
lr_wrapper() {
	local rank=$1 p
	shift
	for p in $(t_pgrep -f -- "elastic-run --rank .*$train" || true); do
		t_env_has "$p" "OMPI_COMM_WORLD_RANK=$rank" "$@" && echo "$p" && return 0
	done
	return 0
}

# lr_hold PID SECONDS WHAT: holds process PID still (tests/hold.py) for
# SECONDS at most, in the background, and returns once it is held; how the
# hold ended is the last line of $T_DIR/hold.out. WHAT names PID in the
# failure when it cannot be held within 10 s.
lr_hold() {
	local end=$((SECONDS + 10))
	python3 "$(dirname "${BASH_SOURCE[0]}")/../hold.py" "$1" "$2" >"$T_DIR/hold.out" 2>&1 &
	until grep -q '^held' "$T_DIR/hold.out" 2>/dev/null; do
		[ $SECONDS -lt $end ] || t_fail "$3 could not be held: $(cat "$T_DIR/hold.out")"
		sleep 0.05
	done
}
