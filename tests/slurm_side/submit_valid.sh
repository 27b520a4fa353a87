#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/submit_valid.sh: elastic jobs submitted with valid options
# run; the batch script and its srun tasks see the ELASTIC_* values; the job
# got its MIN GPUs and the elastic tag; srun alone works as well.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
es_need_plugins
t_scratch
cat >"$T_DIR/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^ELASTIC_(JOB_ID|MIN_GPUS|MAX_GPUS|GRACE|SIZES|WEIGHT|CONTROLLER)=' | sed 's/^/batch /' | sort
echo "batch CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
srun -n2 bash -c 'echo "task$SLURM_PROCID $(env | grep -E "^ELASTIC_(JOB_ID|MIN_GPUS|MAX_GPUS)=" | sort | tr "\n" " ")"'
JOB

# 1. All options, as alice.
id=$(t_sbatch alice --elastic-gpus=2-8 --elastic-grace=45 --elastic-sizes=8,2,4 \
	--elastic-policy-weight=3 -n2 -o "$T_DIR/out1" "$T_DIR/job.sh")
t_log "job $id submitted"
tag=$(es_job_field "$id" AdminComment)
[ "$tag" = "elastic:min=2,max=8,grace=45,sizes=2/4/8,weight=3" ] ||
	t_fail "job $id AdminComment is '$tag'"
tres=$(es_job_field "$id" TresPerJob)
[ "$tres" = "gres/gpu:2" ] || t_fail "job $id TresPerJob is '$tres', expected gres/gpu:2 (MIN)"
t_wait_job "$id" 60
cat "$T_DIR/out1"
for kv in JOB_ID=$id MIN_GPUS=2 MAX_GPUS=8 GRACE=45 SIZES=2,4,8 WEIGHT=3 \
	CONTROLLER=$(es_conf_value ControllerHost localhost):$ES_PORT; do
	t_grep "^batch ELASTIC_$kv\$" "$T_DIR/out1" "batch script of job $id lacks ELASTIC_$kv"
done
t_grep '^batch CUDA_VISIBLE_DEVICES=[0-9]+,[0-9]+$' "$T_DIR/out1" "job $id did not get 2 GPUs"
for t in 0 1; do
	t_grep "^task$t ELASTIC_JOB_ID=$id ELASTIC_MAX_GPUS=8 ELASTIC_MIN_GPUS=2 \$" "$T_DIR/out1" \
		"task $t of job $id lacks the ELASTIC_* values"
done

# 2. Only --elastic-gpus=N: MAX = MIN, grace = DefaultGrace, sizes any, weight 1.
id=$(t_sbatch bob --elastic-gpus=1 -n2 -o "$T_DIR/out2" "$T_DIR/job.sh")
t_wait_job "$id" 60
for kv in JOB_ID=$id MIN_GPUS=1 MAX_GPUS=1 GRACE=$ES_DEFGRACE SIZES=any WEIGHT=1; do
	t_grep "^batch ELASTIC_$kv\$" "$T_DIR/out2" "batch script of job $id lacks ELASTIC_$kv"
done
tag=$(es_job_field "$id" AdminComment)
[ "$tag" = "elastic:min=1,max=1,grace=$ES_DEFGRACE,sizes=any,weight=1" ] ||
	t_fail "job $id AdminComment is '$tag'"

# 3. A GPU request inside MIN..MAX is kept (here 2 nodes x 1 GPU = 2 of 1-4).
id=$(t_sbatch alice --elastic-gpus=1-4 -N2 --gres=gpu:1 -n2 -o "$T_DIR/out3" "$T_DIR/job.sh")
[ "$(es_job_field "$id" TresPerNode)" = "gres/gpu:1" ] || t_fail "job $id lost its --gres=gpu:1"
t_wait_job "$id" 60
t_grep '^batch ELASTIC_MAX_GPUS=4$' "$T_DIR/out3" "job $id lacks ELASTIC_MAX_GPUS=4"

# 4. srun alone (local context, then the remote side of its own job).
out=$(cd "$T_DIR" && t_as alice srun --elastic-gpus=1-2 --elastic-sizes=pow2 -n1 \
	bash -c 'echo "$ELASTIC_JOB_ID $ELASTIC_MIN_GPUS $ELASTIC_MAX_GPUS $ELASTIC_SIZES $SLURM_JOB_ID"' 2>&1) ||
	t_fail "srun --elastic-gpus=1-2: $out"
read -r ejid emin emax esz sjid <<<"$out"
[ "$ejid" = "$sjid" ] && [ "$emin $emax $esz" = "1 2 pow2" ] ||
	t_fail "srun task saw '$out', expected '<jobid> 1 2 pow2 <jobid>'"
# 5. salloc: steps inside the allocation get ELASTIC_*; srun inside a job
# cannot restate the request.
out=$(cd "$T_DIR" && t_as bob salloc --elastic-gpus=2-4 -n1 srun -n1 \
	bash -c 'echo "$ELASTIC_JOB_ID $ELASTIC_MIN_GPUS $ELASTIC_MAX_GPUS $SLURM_JOB_ID"' 2>/dev/null) ||
	t_fail "salloc --elastic-gpus=2-4 srun: $out"
read -r ejid emin emax sjid <<<"$out"
[ "$ejid" = "$sjid" ] && [ "$emin $emax" = "2 4" ] || t_fail "salloc step saw '$out'"
id=$(t_sbatch alice --elastic-gpus=1-3 -o "$T_DIR/out5" --wrap 'srun -n1 --elastic-gpus=2 true; echo "srun rc=$?"')
t_wait_job "$id" 60
t_grep "^srun rc=[1-9]" "$T_DIR/out5" "srun --elastic-gpus inside job $id was not refused"
t_grep "elastic: --elastic-gpus=2: srun inside job $id cannot change its elastic request" "$T_DIR/out5" \
	"srun inside job $id: message missing"
# 6. A step the elastic job starts in another job of its user (as elastic-run
# does in grant jobs: srun --jobid=GRANT --overlap) keeps the elastic job's id.
other=$(t_sbatch alice -o /dev/null --gres=gpu:1 --wrap 'sleep 60')
for _ in $(seq 100); do [ "$(t_job_state "$other")" = RUNNING ] && break; sleep 0.2; done
id=$(t_sbatch alice --elastic-gpus=1-3 -o "$T_DIR/out6" \
	--wrap "srun --jobid=$other --overlap -n1 bash -c 'echo \"in \$SLURM_JOB_ID: \$ELASTIC_JOB_ID \$ELASTIC_MAX_GPUS\"'")
t_wait_job "$id" 60
scancel "$other"
t_grep "^in $other: $id 3\$" "$T_DIR/out6" "step of job $id in job $other lost the elastic job's ELASTIC_*"
t_log "PASS: sbatch (2 users, 3 shapes), srun and salloc: tasks see ELASTIC_*, jobs tagged, MIN GPUs requested"
