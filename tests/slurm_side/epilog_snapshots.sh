#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/epilog_snapshots.sh: the SPANK plugin's job epilog removes
# the node-local snapshots of a job that ends without completing its
# training (/dev/shm/elastic-<jobid>-*, and in the ELASTIC_SHM_DIR an elastic
# job was submitted with), and leaves other jobs' files alone.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_need_cluster
grep -q elastic.so "$(dirname "$SLURM_CONF")/plugstack.conf" 2>/dev/null ||
	t_skip "the SPANK plugin is not loaded in this cluster"
t_scratch
other=/dev/shm/elastic-999999999-0-node1-0.snap
: >"$other"
# The job writes what a killed training leaves behind, then ends.
id=$(t_sbatch root -N1 -w node1 -o "$T_DIR/out" --wrap \
	'n=0; for f in 0-node1-0.snap 0-node1-1.snap owner; do : > /dev/shm/elastic-$SLURM_JOB_ID-$f && n=$((n + 1)); done; echo $n')
t_wait_job "$id" 60
t_grep '^3$' "$T_DIR/out" "the job did not write its 3 files"
end=$((SECONDS + 20))
while ls /dev/shm/elastic-"$id"-* >/dev/null 2>&1; do
	[ $SECONDS -lt $end ] || t_fail "snapshots of job $id still there 20 s after its end: $(ls /dev/shm/elastic-"$id"-*)"
	sleep 0.3
done
[ -e "$other" ] || t_fail "the epilog of job $id removed another job's file $other"
rm -f "$other"
t_log "job $id's 3 snapshot files removed by its epilog, other jobs' kept"

# An elastic job submitted with ELASTIC_SHM_DIR: its epilog cleans that
# directory too.
t_need_spank
shm=$T_DIR/shm
mkdir -p "$shm"
other=$shm/elastic-999999999-0-node1-0.snap
: >"$other"
id=$(ELASTIC_SHM_DIR=$shm t_sbatch root --elastic-gpus=1 -w node1 -o "$T_DIR/out2" --wrap \
	'n=0; for f in 0-node1-0.snap 0-node1-1.snap owner; do : > $ELASTIC_SHM_DIR/elastic-$SLURM_JOB_ID-$f && n=$((n + 1)); done; echo $n')
t_wait_job "$id" 60
t_grep '^3$' "$T_DIR/out2" "the elastic job did not write its 3 files in $shm"
end=$((SECONDS + 20))
while ls "$shm"/elastic-"$id"-* >/dev/null 2>&1; do
	[ $SECONDS -lt $end ] || t_fail "snapshots of job $id still in $shm 20 s after its end: $(ls "$shm"/elastic-"$id"-*)"
	sleep 0.3
done
[ -e "$other" ] || t_fail "the epilog of job $id removed another job's file $other"
t_log "PASS: the epilogs removed the snapshot files in /dev/shm and in the job's ELASTIC_SHM_DIR, other jobs' kept"
