# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/ctl-lib.sh: helpers of the elasticd cluster tests (sourced
# after tests/lib.sh): a private elasticd, elastic jobs, proto-clients standing
# in for the jobs' libelastic, and GPU counts as squeue shows them.

CTL_BIN=${top_builddir:-/src/build-testbed}/plugin/elasticd
CTL_PORT=${ELASTIC_CTL_TEST_PORT:-${ELASTIC_TESTBED_ELASTICD_PORT:-6820}}
CTL_PID=""
CTL_CLIENTS=""
CTL_BLOCKERS=""

ctl_setup() {
	t_need_cluster
	[ -x "$CTL_BIN/elasticd" ] || t_skip "elasticd not built at $CTL_BIN"
	[ -n "${ELASTIC_MUNGE_SOCKET:-}" ] || t_skip "no ELASTIC_MUNGE_SOCKET (run inside testbed/cluster exec)"
	# One elasticd per cluster at a time: tests of every component that start
	# one take this lock (two daemons would both act on the same jobs).
	exec 9>"${ELASTIC_TESTBED_DIR:-/tmp}/elasticd-test.lock"
	flock -w 900 9 || t_skip "another test holds the elasticd lock for 900 s"
	t_scratch
	trap 'ctl_cleanup' EXIT
	ctl_conf
}

ctl_cleanup() { # [exit status]
	local rc=${1:-$?} p
	for p in $CTL_CLIENTS; do kill "$p" 2>/dev/null || true; done
	[ -n "$CTL_PID" ] && kill "$CTL_PID" 2>/dev/null
	for p in $CTL_BLOCKERS; do scancel "$p" 2>/dev/null || true; done
	if [ -f "${T_DIR:-/nonexistent}/jobs" ]; then
		# The test's jobs and their grants (elasticd is gone: cancel them here).
		for p in $(cat "$T_DIR/jobs"); do
			scancel "$p" 2>/dev/null || true
			scancel -n "elastic:$p" 2>/dev/null || true
		done
	fi
	if [ -n "${T_DIR:-}" ] && [ -f "$T_DIR/elasticd.log" ] && [ -n "${CTL_SHOW_LOG:-}" ]; then
		echo "---- elasticd log"
		cat "$T_DIR/elasticd.log"
	fi
	t_cleanup "$rc"
	return 0
}

# Where the test's elasticd listens: the cluster's head address, which jobs
# on every fake node reach (testbed/cluster env; loopback when the nodes
# share it).
CTL_HOST=${ELASTIC_TESTBED_HEAD_ADDR:-127.0.0.1}
export CTL_HOST

# elastic.conf of the test's elasticd; extra Key=Value lines as arguments,
# which replace the test defaults of the same keys (a key may appear once).
ctl_conf() {
	local l given=" ${*%%=*} "
	{
		# (the test's own state file: a pause or drain of one test stays there)
		for l in "ControllerHost=$CTL_HOST" "ControllerPort=$CTL_PORT" TickSeconds=1 \
			CoolDown=0 Hysteresis=1 GrantQos=elastic "MungeSocket=$ELASTIC_MUNGE_SOCKET" \
			"StateFile=$T_DIR/elasticd.state"; do
			[[ "$given" == *" ${l%%=*} "* ]] || echo "$l"
		done
		for l in "$@"; do echo "$l"; done
	} >"$T_DIR/elastic.conf"
}

# A test that trains for real under elasticd: the SPANK plugin loaded, the
# example trainer and elastic-run built; sets train and run.
ctl_need_trainer() {
	t_need_spank
	train=${top_builddir:?}/examples/elastic_train
	run=$top_builddir/launcher/elastic-run
	[ -x "$train" ] && [ -x "$run" ] || t_skip "elastic_train or elastic-run not built"
}

ctl() { "$CTL_BIN/elastic-ctl" -c "$CTL_HOST:$CTL_PORT" "$@"; }

ctl_start() {
	"$CTL_BIN/elasticd" -D -f "$T_DIR/elastic.conf" -L "$T_DIR/elasticd.log" &
	CTL_PID=$!
	local end=$((SECONDS + 10))
	until ctl status -p >/dev/null 2>&1; do
		kill -0 "$CTL_PID" 2>/dev/null || {
			cat "$T_DIR/elasticd.log" >&2
			t_fail "elasticd exited at start"
		}
		[ $SECONDS -lt $end ] || t_fail "elasticd does not answer on port $CTL_PORT"
		sleep 0.1
	done
	# Started as root, it answers as SlurmUser (elasticd(8), PRIVILEGES).
	local user slurm_user
	user=$(ps -o user= -p "$CTL_PID")
	slurm_user=$(scontrol show config | sed -n 's/^SlurmUser *= *\([^(]*\)(.*/\1/p')
	[ "$user" = "$slurm_user" ] || t_fail "elasticd runs as '$user', not as SlurmUser '$slurm_user'"
	# dumpable after the change of uid (a crash leaves a core): the kernel
	# gives an undumpable process's /proc files to root
	[ "$user" = root ] || [ "$(stat -c %U "/proc/$CTL_PID/status")" = "$user" ] ||
		t_fail "elasticd is not dumpable after becoming $user (/proc/$CTL_PID/status owned by $(stat -c %U "/proc/$CTL_PID/status"))"
	t_log "elasticd up (pid $CTL_PID, port $CTL_PORT, user $user)"
}

ctl_alive() { kill -0 "$CTL_PID" 2>/dev/null; }

# The port elasticd serves OpenMetrics on (ctl_conf ...
# "MetricsAddress=127.0.0.1:0"), as its log names it last (a restarted
# elasticd's).
ctl_metrics_port() {
	local port
	port=$(sed -n 's/.*serving OpenMetrics on .* (port \([0-9]*\)).*/\1/p' "$T_DIR/elasticd.log" | tail -n 1)
	[ -n "$port" ] || t_fail "elasticd does not say where it serves OpenMetrics"
	echo "$port"
}

# elasticd's OpenMetrics text.
ctl_scrape() {
	local port
	port=$(ctl_metrics_port) || exit 1
	python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())' "$port"
}

ctl_kill9() {
	kill -9 "$CTL_PID"
	wait "$CTL_PID" 2>/dev/null || true
	t_log "elasticd SIGKILLed (pid $CTL_PID)"
	CTL_PID=""
}

# A job submitted deferred ($CTL_DEFER) enters the split with PRIORITY only:
# its priority is set, then its start time set to now. Setting the priority
# after a plain sbatch races elasticd's tick (multifactor gives a new user's
# job 10000 first: a wrong split, then a second re-split); elasticd leaves a
# deferred job out.
CTL_DEFER=--begin=now+3600
ctl_start_with_priority() { # job priority
	scontrol update JobId="$1" Priority="$2" || t_fail "cannot set job $1's priority"
	scontrol update JobId="$1" StartTime=now || t_fail "cannot start deferred job $1"
}

# An elastic job of USER. With the SPANK and job_submit plugins loaded it is
# submitted the way users do (--elastic-gpus; job_submit makes it request MIN
# GPUs and tags it); without them, a leader with MIN GPUs is tagged by hand
# (AdminComment as root) exactly as job_submit_elastic would. Prints its id.
# With PRIORITY, it enters the split with that priority (ctl_start_with_priority).
# CTL_SBATCH_EXTRA: more sbatch options (word-split), e.g. -H.
ctl_job() { # user account min max grace [priority]
	local u=$1 a=$2 min=$3 max=$4 grace=$5 prio=${6:-} id extra=()
	[ -n "$prio" ] && extra=("$CTL_DEFER")
	# shellcheck disable=SC2206
	extra+=(${CTL_SBATCH_EXTRA:-})
	if t_have_spank; then
		id=$(t_sbatch "$u" -A "$a" -J "ejob-$u" --elastic-gpus="$min-$max" "${extra[@]}" \
			--elastic-grace="$grace" -N1 -n1 --wrap 'sleep 3000')
		echo "$id" >>"$T_DIR/jobs"
		scontrol show job "$id" | grep -q "AdminComment=elastic:min=$min,max=$max" ||
			t_fail "job $id submitted with --elastic-gpus has no elastic tag"
	else
		id=$(t_sbatch "$u" -A "$a" -J "ejob-$u" --gres=gpu:"$min" "${extra[@]}" -N1 -n1 --wrap 'sleep 3000')
		# Called in $(...): remember the job in a file for the cleanup.
		echo "$id" >>"$T_DIR/jobs"
		scontrol update JobId="$id" AdminComment="elastic:min=$min,max=$max,grace=$grace,sizes=any,weight=1" ||
			t_fail "cannot tag job $id"
	fi
	[ -z "$prio" ] || ctl_start_with_priority "$id" "$prio"
	echo "$id"
}

# A job of USER that trains for real (after ctl_need_trainer): its batch
# script $T_DIR/NAME.sh execs elastic-run -v over elastic_train with
# TRAIN_ARGS, its output goes to $T_DIR/NAME.out; SBATCH_ARGS (the elastic
# request, nodes...) follow. CTL_TRAIN_PATH: a directory put before elastic-run's
# PATH (ctl_srun_hold); CTL_RUN_ARGS: elastic-run's options. With PRIORITY (not empty) it enters the split
# with that priority (ctl_start_with_priority). Prints its id.
ctl_train_job() { # name user account "train args" priority sbatch-args...
	local name=$1 u=$2 a=$3 targs=$4 prio=$5 id extra=()
	shift 5
	[ -n "$prio" ] && extra=("$CTL_DEFER")
	printf '#!/bin/bash\n%sexec %s -v %s-- %s %s\n' "${CTL_TRAIN_PATH:+PATH=$CTL_TRAIN_PATH:\$PATH }" \
		"$run" "${CTL_RUN_ARGS:+$CTL_RUN_ARGS }" "$train" "$targs" >"$T_DIR/$name.sh"
	chmod 755 "$T_DIR/$name.sh"
	id=$(t_sbatch "$u" -A "$a" -J "$name" "${extra[@]}" -D "$T_DIR" -o "$T_DIR/$name.out" \
		"$@" "$T_DIR/$name.sh")
	echo "$id" >>"$T_DIR/jobs"
	[ -z "$prio" ] || ctl_start_with_priority "$id" "$prio"
	echo "$id"
}

# srun for elastic-run's PATH ($T_DIR/bin: CTL_TRAIN_PATH, or a job script's PATH):
# the real one, but the first srun into a job named in $T_DIR/hold-list ("any":
# any job but the one of the caller's step) makes $T_DIR/hold-JOB and waits up to
# 30 s for $T_DIR/held-JOB, so that the test acts on Slurm (suspends that job,
# stops slurmctld) exactly while a launch asks for its step. ctl_srun_wait JOB|any
# waits for such an srun and prints its job.
ctl_srun_hold() {
	mkdir -p "$T_DIR/bin"
	cat >"$T_DIR/bin/srun" <<EOS
#!/bin/bash
for a in "\$@"; do
	case \$a in --jobid=*) g=\${a#--jobid=} ;; esac
done
if [ -n "\${g:-}" ] && [ "\$g" != "\${SLURM_JOB_ID:-}" ] &&
	grep -qxE "\$g|any" "$T_DIR/hold-list" 2>/dev/null && mkdir "$T_DIR/hold-\$g" 2>/dev/null; then
	for i in \$(seq 300); do [ -e "$T_DIR/held-\$g" ] && break; sleep 0.1; done
fi
exec /usr/bin/srun "\$@"
EOS
	chmod 755 "$T_DIR/bin/srun" "$T_DIR/bin"
}
ctl_srun_wait() { # job|any timeout
	local end=$((SECONDS + $2)) d
	while :; do
		for d in "$T_DIR"/hold-*/; do
			[ -d "$d" ] || continue
			d=${d%/}
			d=${d##*/hold-}
			[ ! -e "$T_DIR/held-$d" ] && { [ "$1" = any ] || [ "$1" = "$d" ]; } && { echo "$d"; return 0; }
		done
		[ $SECONDS -lt $end ] || t_fail "no srun into job $1 within $2 s"
		sleep 0.05
	done
}

# The trainer's static reference: EPOCHS epochs of TARGS on 2 ranks, its
# final model in $T_DIR/ref.model (readable by the jobs' users).
ctl_reference() { # epochs "train args"
	timeout 300 mpirun --with-ft ulfm --oversubscribe --bind-to none -np 2 "$train" --quiet \
		--epochs "$1" $2 --out "$T_DIR/ref.model" >"$T_DIR/ref.out" 2>&1 ||
		{ tail "$T_DIR/ref.out"; t_fail "the static reference run failed"; }
	chmod 644 "$T_DIR/ref.model"
}

# The end of a training job's output OUT: EPOCHS epochs with every sample
# once, the static reference's model, and no step committed twice (a step
# line twice; a relaunch may lose the last step line of the ended launch on
# its way through mpirun: the model and the usage check say none was
# skipped).
# Static references: trainings of E epochs (for each E) with "train args" at
# 2 ranks, no resize, as $T_DIR/ref-E.model (elastic_train --compare's file).
ctl_references() { # "train args" epochs...
	local targs=$1 e
	shift
	for e in "$@"; do
		timeout 120 mpirun --with-ft ulfm --oversubscribe --bind-to none -np 2 "$train" \
			--quiet --epochs "$e" $targs --out "$T_DIR/ref-$e.model" >"$T_DIR/ref-$e.out" 2>&1 ||
			{ tail "$T_DIR/ref-$e.out"; t_fail "the static reference run of $e epochs failed"; }
		chmod 644 "$T_DIR/ref-$e.model"
	done
}
ctl_train_done() { # out epochs
	local dups
	grep -aEq "^done: [0-9]+ steps, $2 epochs, .*usage: $2 epochs checked, 0 bad, 0 violations" "$1" ||
		t_fail "the training did not finish with every sample used once: $(grep -a '^done: ' "$1" || tail -n 5 "$1")"
	grep -aq "^model matches reference" "$1" ||
		t_fail "the final model is not the static run's: $(grep -a '^model ' "$1" || echo 'no comparison line')"
	dups=$(grep -aEo '^step [0-9]+ ' "$1" | sort | uniq -d | wc -l)
	[ "$dups" = 0 ] || t_fail "$dups steps committed more than once"
}

# Job JOB's elastic tag (its AdminComment, as elasticd reads it).
ctl_tag() { # job
	local t
	t=$(scontrol show job "$1" | grep -o 'AdminComment=elastic:[^ ]*' | cut -d= -f2-)
	[ -n "$t" ] || t_fail "job $1 has no elastic tag"
	echo "$t"
}

# Set JOB's elastic maximum to MAX in its tag (elasticd reads it at its next
# tick), as an admin would with scontrol.
ctl_set_max() { # job max
	local t
	t=$(ctl_tag "$1") || exit 1
	scontrol update JobId="$1" AdminComment="$(sed -E "s/,max=[0-9]+/,max=$2/" <<<"$t")" ||
		t_fail "cannot set job $1's maximum to $2"
}

# Background proto-client as USER for JOB; its events go to $T_DIR/client-JOB.out.
ctl_client() { # user job args...
	local u=$1 j=$2
	shift 2
	# setpriv execs (runuser would stay as a parent that a kill misses).
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		env ELASTIC_MUNGE_SOCKET="$ELASTIC_MUNGE_SOCKET" \
		"$CTL_BIN/elastic-ctl" -c "$CTL_HOST:$CTL_PORT" proto-client -j "$j" -g 1 -r -s 1 "$@" \
		>>"$T_DIR/client-$j.out" 2>&1 &
	CTL_CLIENTS="$CTL_CLIENTS $!"
}

# Root jobs holding all 4 GPUs of node3 and node4: the elastic jobs then
# share the 8 GPUs of node1 and node2, as in the reference scenario.
ctl_block_nodes() { ctl_block_gpus 4 "$@"; }

# Root jobs holding GPUS GPUs on each node named.
ctl_block_gpus() { # gpus node...
	local g=$1 n id ids=""
	shift
	for n in "$@"; do
		id=$(sbatch --parsable -J blocker -w "$n" --gres=gpu:"$g" -N1 -n1 -o /dev/null --wrap 'sleep 3000') ||
			t_fail "blocker on $n"
		CTL_BLOCKERS="$CTL_BLOCKERS $id"
		ids=${ids:+$ids,}$id
	done
	# (these blockers: another test's beside this one may wait for its own)
	local end=$((SECONDS + 20))
	while squeue -h -t PD -j "$ids" 2>/dev/null | grep -q .; do
		[ $SECONDS -lt $end ] ||
			t_fail "blockers did not start: $(squeue -h -j "$ids" -o '%i %N %T %r' | paste -sd';' -)"
		sleep 0.2
	done
}

# GPUs job JOB holds now, as slurmctld says: its own allocation (when
# running) plus its running grants (name elastic:JOB).
ctl_gpus() { # job
	squeue -h -t R -O "JobID:16,Name:40,tres-alloc:300" | awk -v j="$1" '
		($1 == j || $2 == "elastic:" j) {
			n = 0
			if (match($3, /gres\/gpu=[0-9]+/)) n = substr($3, RSTART + 9, RLENGTH - 9)
			s += n
		}
		END { print s + 0 }'
}

# 0 once no grant of any job is pending, running or suspended; fails
# naming them after SECONDS (WHEN: after what, for the message).
ctl_no_grants_left() { # seconds when
	local end=$((SECONDS + $1)) left
	while left=$(squeue -h -t PD,R,S -o '%i %j %T' | awk '$2 ~ /^elastic:/') && [ -n "$left" ]; do
		[ $SECONDS -lt $end ] || t_fail "grants left over $1 s $2: $left"
		sleep 0.5
	done
}

# Grants of JOB: "id state node gres" lines.
ctl_grants() { squeue -h -n "elastic:$1" -o '%i %T %N %b'; }

# Wait until every JOB=GPUS pair holds (from squeue); fail after timeout.
# Sets CTL_WAITED to the seconds it took.
# CTL_MIN[JOB] is the fewest GPUs JOB held at any poll of the wait (a dip
# below both the start and the end means a release of more than asked).
declare -A CTL_MIN
ctl_wait_split() { # timeout job=gpus...
	local t=$1 start now ok p g
	shift
	start=$(date +%s.%N)
	for p in "$@"; do CTL_MIN[${p%%=*}]=999; done
	while :; do
		ok=1
		for p in "$@"; do
			g=$(ctl_gpus "${p%%=*}")
			[ "$g" -lt "${CTL_MIN[${p%%=*}]}" ] && CTL_MIN[${p%%=*}]=$g
			[ "$g" = "${p#*=}" ] || ok=0
		done
		now=$(date +%s.%N)
		if [ $ok = 1 ]; then
			CTL_WAITED=$(awk "BEGIN{printf \"%.2f\", $now - $start}")
			return 0
		fi
		if awk "BEGIN{exit !($now - $start > $t)}"; then
			echo "---- squeue" >&2
			squeue -o '%i %j %u %T %N %b %Q' >&2
			echo "---- elastic-ctl status" >&2
			ctl status >&2 || true
			echo "---- elasticd log (tail)" >&2
			tail -n 40 "$T_DIR/elasticd.log" >&2
			local s=""
			for p in "$@"; do s="$s ${p%%=*}=$(ctl_gpus "${p%%=*}")"; done
			t_fail "split $* not reached in ${t}s (now:$s)"
		fi
		sleep 0.1
	done
}

# "step" lines at SIZE in the training output OUT after its line LINE.
ctl_steps_at() { # out size line
	tail -n +"$3" "$1" | grep -aEc "^step [0-9]+ epoch [0-9]+ size $2 "
}

# Wait until OUT has COUNT step lines at SIZE after its line LINE; fail
# after TIMEOUT seconds, or once the training ended, naming WHAT.
ctl_wait_steps() { # out size count timeout line what
	local end=$((SECONDS + $4))
	until [ -f "$1" ] && [ "$(ctl_steps_at "$1" "$2" "$5")" -ge "$3" ]; do
		grep -aq '^done: ' "$1" 2>/dev/null && t_fail "$6: the training ended before $3 steps at $2 ranks"
		[ $SECONDS -lt $end ] || { tail -n 30 "$1" "$T_DIR/elasticd.log" >&2; t_fail "$6: no $3 steps at $2 ranks in $4 s"; }
		sleep 0.1
	done
}

# Median of numbers on stdin.
ctl_median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# Wait until FILE has a line matching REGEX (extended); fail after timeout.
ctl_wait_line() { # timeout file regex what
	local end=$((SECONDS + $1))
	until grep -Eq -- "$3" "$2" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			echo "---- $2:" >&2
			cat "$2" >&2 || true
			t_fail "$4 (no line matching /$3/ in $2 after $1 s)"
		fi
		sleep 0.1
	done
}
