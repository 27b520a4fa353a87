#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/cluster_failures.sh: elastic_train inside Slurm allocations spanning 2
# fake nodes (mpirun --with-ft ulfm in the job, as elastic-run will run it), N ranks:
#  path A: SIGKILL one rank at a random step: ULFM heals in place, the job finishes
#          on N-1 ranks;
#  path B: SIGKILL the PRRTE daemon of the second node with its ranks (a node lost):
#          mpirun ends; the job script relaunches on the first node with the same
#          ELASTIC_JOB_ID and resumes from the node snapshot.
# Both: the model of a run without failure, every sample once per epoch, no hang.
#   ELASTIC_CLUSTER_RUNS (default 1 of each), ELASTIC_CLUSTER_NP (4; 8 also works)
set -u
. "$(dirname "$0")/common.sh"
t_need_cluster
t_scratch

runs=${ELASTIC_CLUSTER_RUNS:-1}
np=${ELASTIC_CLUSTER_NP:-4}
per=$((np / 2))
RANDOM=${ELASTIC_CLUSTER_SEED:-$$}
cat >"$T_DIR/job.sh" <<JOB
#!/bin/bash
# One host, two fake nodes: loopback only (TESTBED-NOTES); coll/han crashes under ULFM.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_coll=^han
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ELASTIC_JOB_ID=\$SLURM_JOB_ID
mkdir -p "$T_DIR/tmp.\$SLURM_JOB_ID"
export TMPDIR="$T_DIR/tmp.\$SLURM_JOB_ID"
train="$TRAIN --quiet --step-sleep 4000 --epochs 3 --samples 4096 --global-batch 128"
mode=\$1; shift
if [ "\$mode" = ref ]; then
	timeout 120 mpirun --with-ft ulfm --bind-to none -np $np \$train --out "$T_DIR/ref.model"
	echo "mpirun exit \$?"
	exit 0
fi
if [ "\$mode" = rank ]; then
	timeout 120 mpirun --with-ft ulfm --bind-to none -np $np \$train --compare "$T_DIR/ref.model" "\$@"
	echo "mpirun exit \$?"
	exit 0
fi
# node: lose node 2's daemon and ranks after \$1 ms, then re-form on node 1
timeout 120 mpirun --with-ft ulfm --bind-to none -np $np \$train --progress "$T_DIR/progress.\$SLURM_JOB_ID" &
mp=\$!
sleep \$(awk -v m="\$1" 'BEGIN { printf "%.3f", m / 1000 }')
node2=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | sed -n 2p)
# this job's processes on that node: prted (and ranks) with our job id and node name
victims=""
for p in /proc/[0-9]*; do
	env=\$( { tr '\0' '\n' <"\$p/environ"; } 2>/dev/null) || continue
	grep -qx "SLURM_JOB_ID=\$SLURM_JOB_ID" <<<"\$env" || continue
	grep -qx "SLURMD_NODENAME=\$node2" <<<"\$env" || continue
	case "\$(cat "\$p/comm" 2>/dev/null)" in prted | elastic_train) victims="\$victims \${p#/proc/}" ;; esac
done
echo "NODE LOST \$node2: killing\$victims t=\$(date +%s.%N)"
[ -n "\$victims" ] && kill -KILL \$victims
wait \$mp
echo "first mpirun exit \$?"
echo "last committed before the loss: \$(cat "$T_DIR/progress.\$SLURM_JOB_ID" 2>/dev/null)"
node1=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | sed -n 1p)
ELASTIC_DEBUG=2 timeout 120 mpirun --with-ft ulfm --bind-to none -np $per --host "\$node1:$per" \$train --compare "$T_DIR/ref.model" 2>&1 | grep -av '^libelastic\[[1-9]'
echo "second mpirun exit \$?"
JOB
chmod +x "$T_DIR/job.sh"
sbatch_args=(-N2 --ntasks-per-node="$per" --gres=gpu:"$per" -D "$T_DIR")

id=$(t_sbatch root "${sbatch_args[@]}" -o "$T_DIR/ref.out" "$T_DIR/job.sh" ref)
t_wait_job "$id" 180
t_grep '^done: 96 steps' "$T_DIR/ref.out" "reference run"

pass=0 total=0
for i in $(seq 1 "$runs"); do
	# path A
	total=$((total + 1))
	rank=$((RANDOM % np)) step=$((RANDOM % 96))
	id=$(t_sbatch root "${sbatch_args[@]}" -o "$T_DIR/a$i.out" "$T_DIR/job.sh" rank --kill "$rank:$step:reduce")
	t_wait_job "$id" 180
	# (on 2 nodes, ULFM sometimes also takes down the killed rank's node-mate:
	# any smaller size is a pass if the result is exact)
	size=$(sed -n 's/^done: 96 steps, 3 epochs, size \([0-9]*\) .* 0 bad, 0 violations.*/\1/p' "$T_DIR/a$i.out")
	if [ -n "$size" ] && [ "$size" -lt "$np" ] && grep -q '^model matches reference' "$T_DIR/a$i.out"; then
		pass=$((pass + 1))
		t_log "path A run $i (job $id, $np ranks on 2 nodes): kill rank $rank at step $step: ok at size $size, kill to next commit $(t_recovery_ms "$T_DIR/a$i.out") ms"
	else
		t_log "path A run $i (job $id): kill rank $rank at step $step: FAILED"
		tail -20 "$T_DIR/a$i.out" | sed 's/^/    | /'
	fi
	# path B
	total=$((total + 1))
	delay=$((700 + RANDOM % 600))
	id=$(t_sbatch root "${sbatch_args[@]}" -o "$T_DIR/b$i.out" "$T_DIR/job.sh" node "$delay")
	t_wait_job "$id" 240
	out=$T_DIR/b$i.out
	last=$(sed -n 's/^last committed before the loss: 0*\([0-9]\)/\1/p' "$out")
	resumed=$(sed -n 's/.*resumed at committed step \([0-9]*\).*/\1/p' "$out" | head -1)
	if grep -q '^NODE LOST node[0-9]*: killing [0-9]' "$out" &&
		grep -Eq "^done: 96 steps, 3 epochs, size $per .* 0 bad, 0 violations" "$out" &&
		grep -q '^model matches reference' "$out" && [ -n "$resumed" ] &&
		[ "$resumed" -ge "${last:-0}" ]; then
		pass=$((pass + 1))
		t_log "path B run $i (job $id): lost node 2 after $delay ms (last recorded step ${last:-none}), re-formed on $per ranks, resumed at $resumed: ok"
	else
		t_log "path B run $i (job $id): lost node 2 after $delay ms: FAILED (last ${last:-?}, resumed ${resumed:-none})"
		tail -25 "$out" | sed 's/^/    | /'
	fi
done
t_log "cluster: $pass/$total runs passed ($np ranks over 2 nodes)"
[ "$pass" = "$total" ] || t_fail "$((total - pass)) of $total runs failed"
exit 0
