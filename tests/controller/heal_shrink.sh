#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/heal_shrink.sh: a planned shrink after a rank was lost and
# healed in place (a runtime that survives a lost daemon: Open MPI 6). A lost
# rank's GPU stays held (its node and grant live on): the world is smaller
# than the GPU set. The rank wrapper says where its rank ran, so elastic-run
# knows that GPU holds no live rank, and a release still needs no relaunch:
#  1. 4 ranks over 2 nodes (2 GPUs each); one rank on the grants' node is SIGKILLed: the
#     others heal in place at 3; the admin lowers the maximum to 2, elasticd
#     orders that node's grants released: its live rank leaves at a step
#     boundary, the 2 on node1 go on (planned shrink in place, 1 leaver).
#  2. Back to 4 (a grow: re-form), then both ranks there are SIGKILLed:
#     the 2 on node1 heal in place; the maximum goes to 2 again: the released
#     GPUs hold no live rank, so the release is acknowledged at once, with no
#     stop at all.
# Neither shrink may relaunch; no step is lost or redone, every sample is used
# once per epoch, and the final model equals a static run's bit for bit.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"

ctl_setup
t_runtime_in_place || t_skip "needs an MPI runtime that heals a lost rank in place (testbed runtime ompi6)"
ctl_need_trainer
t_ompi_env
ctl_block_nodes node3 node4
ctl_block_gpus 2 node1 node2 # the job's 4 GPUs are 2 a node

epochs=20
targs="--samples 4096 --global-batch 128"
ctl_reference "$epochs" "$targs"
ctl_start
# The lost ranks' GPUs stay rankless until the shrinks below take them: a
# re-form onto them (2 s by default) would race the test's own steps.
j=$(CTL_RUN_ARGS="--replace-after 120" ctl_train_job heal alice acct_a "--epochs $epochs $targs --step-sleep 20000 --compare $T_DIR/ref.model" "" \
	--elastic-gpus=2-4 --elastic-grace=30 -N1 -n1)
out=$T_DIR/heal.out

no_relaunch() { # line what
	local r
	r=$(tail -n +"$1" "$out" | grep -a -m1 -e 're-form [0-9]*:' -e 'all ranks re-form') &&
		t_fail "$2: the job was relaunched: $r"
	return 0
}
# The trainer's processes on the grants' node (pids), by their environment;
# not the srun that starts a rank in its grant's step (the second grant on a
# node: elastic-run(1)), nor the rank wrapper and the process in that step
# that runs the trainer, whose command lines name the trainer too.
ranks_on_gnode() {
	local p
	for p in $(t_pgrep -f -- "--step-sleep 20000 --compare $T_DIR/ref.model"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" != srun ] || continue
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURMD_NODENAME=$gnode" &&
			! tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qxE -- '--rank|--rank-in-step' &&
			echo "$p"
	done
}
acked_all() { # line of elasticd.log
	local n a
	n=$(tail -n +"$1" "$T_DIR/elasticd.log" | grep -ac "job $j: ordered release of grant")
	a=$(tail -n +"$1" "$T_DIR/elasticd.log" | grep -ac "job $j: acknowledged the release of grant")
	[ "$n" -gt 0 ] && [ "$a" -ge "$n" ]
}
wait_acked() { # line what
	local end=$((SECONDS + 30))
	until acked_all "$1"; do
		[ $SECONDS -lt $end ] || t_fail "$2: the releases were not all acknowledged in 30 s"
		sleep 0.2
	done
}

ctl_wait_steps "$out" 4 3 90 1 "start"
t_log "job $j: 4 ranks over 2 nodes: $(ctl_grants "$j" | awk '{print $3 ":" $4}' | paste -sd' ')"
# the node of the grants (the job's own 2 GPUs are on the other)
gnode=$(ctl_grants "$j" | awk '{print $3}' | sort -u)
[ "$(echo $gnode | wc -w)" = 1 ] || t_fail "the grants should be on one node, found '$gnode'"

# 1. one of the grants node's 2 ranks lost, then its grants released: 1 rank leaves
lo=$(($(wc -l <"$out") + 1))
victims=$(ranks_on_gnode | xargs)
[ "$(echo $victims | wc -w)" = 2 ] || t_fail "2 ranks on $gnode expected, found pids '$victims'"
kill -KILL "${victims%% *}"
ctl_wait_steps "$out" 3 2 30 "$lo" "case 1 (a rank lost)"
# elastic-run says it when it next reads rank 0's progress record: under
# load that came after the survivors' second step at 3 (seen on sid).
end=$((SECONDS + 10))
until grep -aq "1 rank lost; the survivors healed in place at 3 ranks" "$out" || [ $SECONDS -ge $end ]; do
	sleep 0.1
done
t_grep "1 rank lost; the survivors healed in place at 3 ranks" "$out" "case 1: elastic-run's line on the heal"
no_relaunch "$lo" "case 1, the heal"
lo=$(($(wc -l <"$out") + 1))
le=$(($(wc -l <"$T_DIR/elasticd.log") + 1))
ctl_set_max "$j" 2
ctl_wait_steps "$out" 2 2 60 "$lo" "case 1 (the grants released)"
no_relaunch "$lo" "case 1, the shrink"
tail -n +"$lo" "$out" | grep -aq "planned shrink in place: the 1 rank on released GPUs leave" ||
	t_fail "case 1: not 1 leaver: $(tail -n +"$lo" "$out" | grep -a -m2 'planned shrink')"
wait_acked "$le" "case 1"
t_log "case 1: a rank lost and healed at 3, then $gnode's grants released: $(tail -n +"$lo" "$out" | grep -a -m1 'planned shrink in place: 1 rank left' | sed 's/^elastic-run [0-9:.]*: //')"

# back to 4 ranks (a grow re-forms)
lo=$(($(wc -l <"$out") + 1))
ctl_set_max "$j" 4
ctl_wait_steps "$out" 4 3 90 "$lo" "the grow back to 4"

# 2. both ranks of the grants' node lost, then its grants released: nobody leaves
lo=$(($(wc -l <"$out") + 1))
victims=$(ranks_on_gnode | xargs)
[ "$(echo $victims | wc -w)" = 2 ] || t_fail "2 ranks on $gnode expected after the grow, found pids '$victims'"
kill -KILL $victims
ctl_wait_steps "$out" 2 2 30 "$lo" "case 2 (the grants' ranks lost)"
no_relaunch "$lo" "case 2, the heal"
lo=$(($(wc -l <"$out") + 1))
le=$(($(wc -l <"$T_DIR/elasticd.log") + 1))
ctl_set_max "$j" 2
wait_acked "$le" "case 2"
ctl_wait_steps "$out" 2 2 30 "$lo" "case 2 (after the release)"
no_relaunch "$lo" "case 2, the release"
line=$(tail -n +"$lo" "$out" | grep -a -m1 "released GPUs with no live rank") ||
	t_fail "case 2: elastic-run did not acknowledge at once: $(tail -n +"$lo" "$out" | grep -a -m3 -e 'planned shrink' -e 'asking the')"
tail -n +"$lo" "$out" | grep -aq "asking the .* ranks to re-form" && t_fail "case 2: the ranks were asked to stop"
t_log "case 2: $gnode's ranks lost and healed at 2, then its grants released: ${line#elastic-run * }"

t_wait_job "$j" 600
ctl_train_done "$out" "$epochs"
launches=$(grep -ao "job [0-9]*: finished ([0-9]* launch" "$out" | awk '{print $4}' | tr -d '(')
# A launch in which the runtime started no rank (PRRTE's daemon on the
# grant's node exited at once, tests/launcher/daemon_start.sh) is made
# again on the same GPUs: the runtime's, not a re-form of the job.
again=$(grep -ac "(again: the launch before started no rank)" "$out" || true)
[ "$again" = 0 ] || t_log "$again launch(es) made again after the runtime started no rank: $(grep -a -m1 'srun into job .*Exited with exit code' "$out" | cut -d' ' -f3-)"
[ "$((launches - again))" = 2 ] || t_fail "$launches launches ($again of them again after no rank started): 2 expected (the start and the grow back to 4)"
ctl_alive || t_fail "elasticd died"
t_log "PASS: 2 launches (start, grow); both shrinks after a heal in place, model equal to the static run's"
