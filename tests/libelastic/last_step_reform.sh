#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/last_step_reform.sh: a planned re-form asked during the
# training's last step. Seen in the site soak (bench/site_soak.sh): a grant
# started as a job's last step ran, the ranks stopped after that commit
# (exit 75), the relaunch resumed past the end, trained one step more than
# the training has and ended with another model; its failure then
# relaunched the job from step 0. The request must be dropped instead: the
# training ends in this launch. Here elastic-run's part is played by hand:
# 2 ranks, 2 epochs of 4 steps, the last step's update slowed by 2 s and
# SIGUSR1 sent to both ranks meanwhile; in both commit modes the launch
# must end 0 with every step once and the model of a run without it. And a
# relaunch that resumes after the last step (the launch ended between the
# last commit and the end) must train no step more.
set -u
. "$(dirname "$0")/common.sh"
t_scratch
t_mpi_scratch
args="--epochs 2 --samples 512 --global-batch 128"
unset ELASTIC_JOB_ID
t_reference 60 2 $args --quiet

for mode in "" --update-after-commit; do
	export ELASTIC_JOB_ID=t$$${mode:+-after}
	out=$T_DIR/out${mode:+-after}
	timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args $mode --slow-update 7:2000000 \
		--compare "$T_DIR/ref.model" >"$out" 2>&1 &
	mp=$!
	end=$((SECONDS + 30))
	until grep -aq '^step 6 ' "$out"; do
		[ $SECONDS -lt $end ] && kill -0 $mp 2>/dev/null || { cat "$out"; t_fail "no step 6"; }
		sleep 0.05
	done
	sleep 0.5 # inside step 7's slowed update
	# (this run's: the same test may run beside it, in another build tree)
	pids=$(t_pgrep -f -- "--slow-update 7:2000000" | while read -r p; do
		case "$(cat "/proc/$p/comm" 2>/dev/null)" in elastic_train | lt-elastic_tra*) ;; *) continue ;; esac
		t_env_has "$p" "ELASTIC_JOB_ID=$ELASTIC_JOB_ID" && echo "$p"
	done)
	[ "$(echo $pids | wc -w)" = 2 ] || t_fail "the 2 ranks' processes not found: '$pids'"
	# shellcheck disable=SC2086
	kill -USR1 $pids
	t_log "${mode:-copy at commit}: SIGUSR1 to both ranks during step 7, the last"
	wait $mp
	rc=$?
	grep -a -e '^libelastic' -e '^done:' -e '^model' "$out" | tail -n 4
	[ $rc = 0 ] || t_fail "${mode:-copy at commit}: mpirun ended $rc (75: the ranks stopped for a re-form after the last step)"
	! grep -aq 'planned re-form: stopping' "$out" || t_fail "a rank stopped for a re-form after the last step"
	t_grep '^done: 8 steps, 2 epochs, .* 0 bad, 0 violations' "$out" "the training ended after its 8 steps"
	t_grep '^model matches reference' "$out" "the model of a run without the request"
	[ "$(grep -ac '^step ' "$out")" = 8 ] || t_fail "not 8 step lines: $(grep -ac '^step ' "$out")"
	ls /dev/shm/elastic-"$ELASTIC_JOB_ID"-* >/dev/null 2>&1 && t_fail "snapshots left in /dev/shm"
done

# A launch that ended between the last commit and the end (rank 0 exits 75
# right after committing step 7, the last): its relaunch resumes at the end
# and must train no step (elastic_start before the loop's test).
export ELASTIC_JOB_ID=t$$-end
timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --exit-at 0:7 >"$T_DIR/end1" 2>&1
t_grep '^EXIT rank 0 after step 7 ' "$T_DIR/end1" "rank 0 left after the last step"
timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --compare "$T_DIR/ref.model" >"$T_DIR/end2" 2>&1
rc=$?
grep -a -e '^libelastic' -e '^done:' -e '^model' "$T_DIR/end2" | tail -n 4
[ $rc = 0 ] || t_fail "the relaunch after the last step ended $rc"
t_grep 'resumed at committed step 8' "$T_DIR/end2" "the relaunch resumed after the last step"
! grep -aq '^step ' "$T_DIR/end2" || t_fail "the relaunch trained past the end: $(grep -a -m1 '^step ' "$T_DIR/end2")"
t_grep '^done: 8 steps, 2 epochs' "$T_DIR/end2" "the relaunch ended at 8 steps"
t_grep '^model matches reference' "$T_DIR/end2" "the relaunch kept the model"
t_log "PASS: a re-form asked in the last step is dropped (both commit modes); a relaunch after the last step trains nothing"
