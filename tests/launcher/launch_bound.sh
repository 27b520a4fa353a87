#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/launch_bound.sh: a launch in which a rank never comes (as when its srun
# into a grant hangs after a slurmctld restart) holds its GPUs and trains nothing until
# elastic-run's launch bound ends it; the job then launches again and completes with
# the model of a run without any failure. Three jobs side by side:
#  - first: the first launch's rank 1 never reaches MPI_Init; --launch-timeout 15 ends
#    that launch 15 s after mpirun started.
#  - reform: a planned re-form (SIGUSR1 to elastic-run at step 10) whose rank 1 never
#    reaches MPI_Init; the default bound, once the job has shown how long a launch takes
#    to its first commit, is 30 s (3 x that, at least 30 s).
#  - ended: a rank in a grant's step whose srun does not end after the program did (it
#    is stopped, as one waiting for a restarting slurmctld to end its step): once every
#    rank said how it ended, mpirun may run on 10 s; then the launch is ended.
#  - stepless: the grant on node3 that hosts the job's daemon there is suspended as the
#    launch agent's srun asks for its step (slurmctld then creates none: srun waits,
#    silent, as after a slurmctld restart): at --launch-timeout 15 elastic-run signals
#    the sruns, hears their words at once, names the step that never began with them,
#    and the grant is left out of
#    the next launches (no controller to give it back to here: the controller test
#    stepless_grant.sh does that).
# The first two assert the bound (GPU-seconds held without training at most the bound
# x 2 GPUs plus 2 s), the relaunch, every sample once per epoch and the reference
# model, and that nothing of the ended launch is left running.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
lr_setup
# the program: rank 1 of launch $1 (ELASTIC_RUN_GEN) never reaches MPI_Init
cat >"$T_DIR/stall.sh" <<'SH'
#!/bin/sh
gen=$1
shift
if [ "$ELASTIC_RUN_GEN" = "$gen" ] && [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
	echo "stall: rank 1 of launch $gen never starts" >&2
	exec sleep 3600
fi
exec "$@"
SH
chmod +x "$T_DIR/stall.sh"
# (100 ms steps: the SIGUSR1 at step 10 lands 5 s before the training's end, even
# when the test's polls lag on a loaded host)
args="--epochs 2 --samples 4096 --global-batch 128 --step-sleep 100000"
declare -A job
submit() { # name node gen elastic-run-options
	local opts=${4:+$4 }
	job[$1]=$(t_sbatch root -N1 -n2 -w "$2" --gres=gpu:2 -o "$T_DIR/$1.out" -D "$T_DIR" --wrap "
ELASTIC_JOB_ID=ref\$SLURM_JOB_ID mpirun --bind-to none -np 2 $train $args --step-sleep 0 --quiet --out ref-$1.model > ref-$1.out 2>&1 || echo 'reference failed'
exec ./elastic-run -v $opts-- ./stall.sh $3 $train $args --compare ref-$1.model")
}
submit first node1 1 "--launch-timeout 15"
submit reform node2 2 ""
# ended: 1 GPU on node3 and a grant of 1 there (its rank runs in the grant's step,
# through an srun)
# (400 ms steps until its srun is stopped, full speed after: the other cases come
# first, and a loaded host must not see it end before)
touch "$T_DIR/ended.slow"
ended=$(t_sbatch root -N1 -n1 -w node3 --gres=gpu:1 -H -o "$T_DIR/ended.out" -D "$T_DIR" --wrap "
exec ./elastic-run -v -- $train --epochs 2 --samples 4096 --global-batch 128 --step-sleep 400000 --sleep-while $T_DIR/ended.slow")
t_grant_release "$ended" 1 node3
ended_grant=$grant
# stepless: its own GPU on node4, a grant of 1 on node3 (the daemon's step there); srun
# as elastic-run calls it, but the first srun into that grant suspends it first
mkdir -p "$T_DIR/bin"
cat >"$T_DIR/bin/srun" <<EOS
#!/bin/bash
for a in "\$@"; do
	case \$a in --jobid=*) g=\${a#--jobid=} ;; esac
done
if [ -n "\${g:-}" ] && grep -qx "\$g" "$T_DIR/hold-list" 2>/dev/null && mkdir "$T_DIR/hold-\$g" 2>/dev/null; then
	scontrol suspend "\$g" && echo "test: grant \$g suspended before its srun" >&2
fi
exec /usr/bin/srun "\$@"
EOS
chmod +x "$T_DIR/bin/srun"
stepless=$(t_sbatch root -N1 -n1 -w node4 --gres=gpu:1 -H -o "$T_DIR/stepless.out" -D "$T_DIR" --wrap "
PATH=$T_DIR/bin:\$PATH exec ./elastic-run -v --launch-timeout 15 -- $train --epochs 2 --samples 4096 --global-batch 128 --step-sleep 20000")
t_grant_start "$stepless" 1 node3
echo "$grant" >"$T_DIR/hold-list"
stepless_grant=$grant
scontrol release "$stepless"
# reform: the planned re-form at step 10
end=$((SECONDS + 120))
until grep -aq "^step 10 " "$T_DIR/reform.out" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/reform.out"; t_fail "reform: no step 10"; }
	sleep 0.1
done
er=$(t_pgrep -f "^./elastic-run -v -- ./stall.sh 2" | head -n1)
[ -n "$er" ] || t_fail "reform: no elastic-run process"
kill -USR1 "$er"
t_log "reform: SIGUSR1 to elastic-run at step 10"

# ended: the srun of the rank in the grant's step is stopped while it trains, as one
# that waits for a restarting slurmctld to end its step: the program ends, the srun
# does not
end=$((SECONDS + 120))
until grep -aq "^step 10 " "$T_DIR/ended.out" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/ended.out"; t_fail "ended: no step 10"; }
	sleep 0.05
done
stopped=$(t_pgrep -f "^srun --jobid=$ended_grant --overlap .*--rank-in-step" || true)
stopped=${stopped%%$'\n'*}
[ -n "$stopped" ] || t_fail "ended: no srun into grant $ended_grant"
kill -STOP "$stopped"
rm "$T_DIR/ended.slow"
t_log "ended: srun $stopped (rank 1, in grant $ended_grant's step) stopped at step 10"

check() { # name bound bound-words
	local out=$T_DIR/$1.out line took
	t_wait_job "${job[$1]}" 150
	line=$(grep -aE "no step committed .* after mpirun started, 2 GPUs held \(the launch bound: $3\)" "$out" | head -n1)
	[ -n "$line" ] || { cat "$out"; t_fail "$1: no line of the launch bound ($3)"; }
	took=$(sed -n 's/.*no step committed \([0-9.]*\) s after.*/\1/p' <<<"$line")
	awk -v t="$took" -v b="$2" 'BEGIN { exit !(t >= b && t <= b + 2) }' ||
		t_fail "$1: the launch was ended after $took s, bound $2 s"
	# the host whose ranks never reported is named, with its job
	[[ $line =~ ": node"[12]": 2 of 2 ranks never reported (ranks 0-1, job "[0-9]+")" ]] ||
		t_fail "$1: the bound's line does not name the silent ranks: $line"
	t_grep "^done: .* 0 bad, 0 violations" "$out" "$1: samples not used exactly once per epoch"
	t_grep "^model matches reference" "$out" "$1: the final model differs from the run without failure"
	t_log "$1: $(sed 's/^elastic-run [0-9:.]*: //' <<<"$line")"
	t_log "$1: held without training $(awk -v t="$took" 'BEGIN { printf "%.1f", 2 * t }') GPU-s (bound $2 s x 2 GPUs)"
}
check first 15 "--launch-timeout 15"
check reform 30 "3 x the slowest first commit of this run, [0-9.]+ s, at least 30 s"
# the launches: a launch that started no rank (Open MPI 6 kills the ranks before
# their wrappers report) is made again as the same world ("again")
launches() { grep -acE "^elastic-run [0-9:.]+: (job [0-9]+|re-form [0-9]+( again)?): 2 ranks on" "$T_DIR/$1.out"; }
[ "$(launches first)" = 2 ] || t_fail "first: $(launches first) launches, expected the first and one after the bound"
[ "$(launches reform)" = 3 ] ||
	t_fail "reform: $(launches reform) launches, expected the first, the planned re-form and one after the bound"
# ended: every rank said how it ended, mpirun ran on for the stopped srun: elastic-run
# ended the launch 10 s later, and the job finished with its one launch
t_wait_job "$ended" 120
t_grep "every rank ended 10 s ago and mpirun runs on" "$T_DIR/ended.out" "ended: the launch was not ended"
t_grep "job [0-9]+: finished \(1 launch," "$T_DIR/ended.out" "ended: the job did not finish"
t_grep "^done: .* 0 bad, 0 violations" "$T_DIR/ended.out" "ended: samples not used exactly once per epoch"
kill -CONT "$stopped" 2>/dev/null || true
t_log "ended: $(grep -a 'every rank ended' "$T_DIR/ended.out" | sed 's/^elastic-run [0-9:.]*: //')"
# stepless: srun's words come at once, and the bound names the daemon's step that never
# began with them; the grant is left out and the job trains on its own GPU to the end
g=$stepless_grant
t_wait_job "$stepless" 120
line=$(grep -a "no step committed .*the launch bound: --launch-timeout 15" "$T_DIR/stepless.out" | head -n1)
[[ $line == *"node3: the daemon's step in job $g never began (its srun said: error: Unable to create step for job $g"* ]] ||
	{ cat "$T_DIR/stepless.out"; t_fail "stepless: the bound's line does not name the daemon's step in grant $g with srun's words: $line"; }
tr -d '\0' <"$T_DIR/stepless.out" | awk -v g="$g" '
	index($0, "srun into job " g " on node3: ") && / Unable to create step/ && !s { s = NR }
	/no step committed .*the launch bound/ && !b { b = NR }
	END { exit !(s && b && s < b) }' ||
	t_fail "stepless: srun's words on grant $g do not come before the bound's line"
t_grep "grant $g on node3: the launch's daemon step there never began \(srun said: .*\): left out of the next launches$" \
	"$T_DIR/stepless.out" "stepless: grant $g was not left out"
t_grep "re-form 1: 1 rank on node4:1 GPU \(job $stepless\)" "$T_DIR/stepless.out" "stepless: no relaunch without grant $g"
t_grep "^done: .* 0 bad, 0 violations" "$T_DIR/stepless.out" "stepless: samples not used exactly once per epoch"
t_log "stepless: ${line#*: }"
t_log "stepless: $(grep -a "srun into job $g on " "$T_DIR/stepless.out" | head -n1 | sed 's/^elastic-run //')"
scancel "$g"
# nothing of the ended launches is left: the stalled ranks and their wrappers
left=$(t_pgrep -f "^sleep 3600" || true)
[ -z "$left" ] || t_fail "processes of the ended launch are left: $left"
t_log "PASS"
