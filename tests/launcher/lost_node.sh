#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/lost_node.sh: a node lost under a running launch, elastic_train
# under elastic-run over a 2-GPU job on node1 and a 2-GPU grant on node2.
# Every process of the grant job on node2 is killed (the PRRTE daemon, the
# rank wrappers and ranks, the grant's own script), as when the node dies;
# Slurm still lists the grant as running until the node reports its end,
# here 3 s later (node2's slurmd and the grant's batch slurmstepd are
# stopped meanwhile, as a dying node answers late or never). With a runtime
# that ends mpirun on a lost daemon (Open MPI 5), elastic-run re-forms once,
# on node1 alone: node2, whose ranks never said how they ended, is left out
# while Slurm lists it, and forgotten once Slurm no longer does.
# (Relaunching onto node2 at once fails a second time: two re-forms for one
# loss.) With a runtime that heals in place, the survivors heal; with
# LOST=daemon, node2's GPUs, still the job's and held with no rank, are
# then taken again by a re-form.
# LOST=daemon (tests/launcher/lost_daemon.sh): only the daemon and the ranks
# die, the node and its grant live on: node2 is left out for the hold
# (10 s), then taken again (a growth, in place on Open MPI 5).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
mode=${LOST:-node}
lr_start "--epochs $([ "$mode" = node ] && echo 6 || echo 14) --samples 4096 --global-batch 128 --step-sleep 40000" 2
lr_wait_step 20
victims="" named=""
for p in /proc/[0-9]*; do
	read -r comm 2>/dev/null <"$p/comm" || continue
	# (the daemon case: the grant's own script lives)
	[ "$mode" = node ] || case "$comm" in prted | elastic-run | elastic_train | lt-elastic_trai) ;; *) continue ;; esac
	t_env_has "${p#/proc/}" "SLURM_JOB_ID=$grant" SLURMD_NODENAME=node2 || continue
	victims="$victims ${p#/proc/}"
	r=$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
	named="$named $comm${r:+[rank $r]}"
done
[ -n "$victims" ] || t_fail "no process of grant $grant found on node2"
if [ "$mode" = node ]; then
	stepd=$(t_pgrep -f "^slurmstepd: \[$grant\.batch\]" || true)
	[ -n "$stepd" ] || t_fail "no batch slurmstepd of grant $grant found"
	slurmd=$(t_pgrep -f "^slurmd -N node2\$" || true)
	[ -n "$slurmd" ] || t_fail "no slurmd of node2 found"
	trap 'rc=$?; kill -CONT $stepd $slurmd 2>/dev/null; t_cleanup $rc' EXIT
	kill -STOP $slurmd $stepd
	t_log "node2 lost: SIGKILL to the $(echo $victims | wc -w) processes of grant $grant there ($named ); its slurmd and batch slurmstepd stopped for 3 s"
	# all stopped first, then killed: a node dies at once, so no process
	# of it may see another one end (a rank wrapper whose daemon died
	# first ends its rank with SIGTERM and reports it: 1 run in 57)
	kill -STOP $victims 2>/dev/null || true
	kill -KILL $victims 2>/dev/null || true
	sleep 3
	kill -CONT $stepd $slurmd
else
	t_log "node2's daemon lost: SIGKILL to the daemon and ranks of grant $grant there ($(echo $victims | wc -w) processes); the grant lives on"
	kill -KILL $victims 2>/dev/null || true
fi
t_wait_job "$lead" 180
cat "$T_DIR/lead.out"
end=$([ "$mode" = node ] && echo 2 || echo 4)
t_grep "job $lead: 4 ranks on node1:2 GPUs" "$T_DIR/lead.out" "the first launch did not use 4 GPUs"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without failure"
if t_runtime_in_place; then
	t_grep "^done: .* 0 bad, 0 violations" "$T_DIR/lead.out" "some sample was not used once per epoch"
	t_grep "the survivors healed in place at 2 ranks" "$T_DIR/lead.out" "the survivors did not heal in place"
	if [ "$mode" = node ]; then
		# the grant ended with the node: nothing to take again
		! grep -aq "lost with their node or its daemon" "$T_DIR/lead.out" ||
			t_fail "node2's GPUs were taken again after its grant ended: $(grep -a -m1 'lost with their node' "$T_DIR/lead.out")"
		t_log "PASS: healed in place"
	else
		# the grant lives on: its GPUs, held with no rank, are taken again.
		# (A rank whose wrapper still reported its end, a SIGPIPE, counts
		# as failed rather than lost with its daemon: the message then
		# names 1 GPU, or both kinds, and the re-form is the same.)
		t_grep "[12] GPUs? held with no rank for [0-9]* s \([^)]*\): re-forming onto all 4 GPUs" \
			"$T_DIR/lead.out" "node2's GPUs, still the job's, were not taken again"
		t_grep "re-form 1: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs " "$T_DIR/lead.out" \
			"the re-form did not take node2's 2 GPUs again"
		t_grep "^done: .* size 4 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not end at 4 ranks"
		t_log "PASS: healed in place, then $(grep -ao '[12] GPUs\{0,1\} held with no rank.*' "$T_DIR/lead.out")"
	fi
	exit 0
fi
t_grep "^done: .* size $end .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size $end with every sample once"
t_grep "node2: its ranks never said how they ended" "$T_DIR/lead.out" "elastic-run did not see node2's ranks lost"
t_grep "re-form 1: 2 ranks on node1:2 GPUs \(job $lead\) " "$T_DIR/lead.out" "the re-form did not leave node2 out"
! grep -aq 're-form 2:' "$T_DIR/lead.out" || t_fail "a second re-form for one lost node: $(grep -a -m1 're-form 2:' "$T_DIR/lead.out")"
if [ "$mode" = node ]; then
	t_grep "node2: Slurm no longer lists the job's GPUs there" "$T_DIR/lead.out" "elastic-run did not forget node2 once its grant ended"
	t_log "PASS: $(grep -ao 're-form 1:.*' "$T_DIR/lead.out"); $(grep -ao 'node2: Slurm no longer lists.*' "$T_DIR/lead.out")"
else
	t_grep "node2: Slurm still lists the job's GPUs there 1[0-9] s after its ranks were lost: taking them again" "$T_DIR/lead.out" "node2 was not taken again after its hold"
	t_grep "grew in place: 2 ranks joined" "$T_DIR/lead.out" "node2's GPUs did not join in place"
	t_log "PASS: $(grep -ao 're-form 1:.*' "$T_DIR/lead.out"); $(grep -ao 'node2: Slurm still lists.*' "$T_DIR/lead.out"); $(grep -ao 'grew in place:.*' "$T_DIR/lead.out")"
fi
