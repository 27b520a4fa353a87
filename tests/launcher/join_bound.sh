#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/join_bound.sh: a growth in place whose new ranks cannot
# start is bounded as a launch is. elastic_train runs under elastic-run
# --launch-timeout 10 on 2 GPUs of node1; a grant of 2 GPUs starts on node2
# and elastic-run plans a growth in place (a runtime that joins in place:
# Open MPI 5.0.x). The new daemon's srun into the grant hangs 60 s (an srun
# wrapper in elastic-run's PATH, standing for a slurmctld that restarted as
# the srun asked for its step), so every rank waits in MPI_Comm_spawn. At
# the bound elastic-run says the new ranks have not joined, ends the launch
# and launches again onto the 4 GPUs (the srun is not held again): the job
# trains at 4 within 40 s of the order (the bound, 5 s for mpirun to end
# on SIGTERM before SIGKILL, the relaunch), with each sample once per epoch and
# the model of a run that never changed.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
t_need_cluster
t_runtime_grows || t_skip "needs a runtime that joins ranks in place (testbed runtime ompi5)"
t_scratch
mkdir -p "$T_DIR/bin"
# srun: the first into a job other than the caller's waits 60 s first
cat >"$T_DIR/bin/srun" <<EOS
#!/bin/bash
for a in "\$@"; do
	case \$a in --jobid=*) g=\${a#--jobid=} ;; esac
done
if [ -n "\${g:-}" ] && [ "\$g" != "\${SLURM_JOB_ID:-}" ] && mkdir "$T_DIR/srun-held" 2>/dev/null; then
	sleep 60
fi
exec /usr/bin/srun "\$@"
EOS
chmod 755 "$T_DIR/bin/srun"
args="--epochs 6 --samples 4096 --global-batch 128 --step-sleep 20000"
LR_PATH=$T_DIR/bin LR_RUN_ARGS="--launch-timeout 10 " lr_start "$args" 0
lr_wait_step 15
t_grant_start "$lead" 2
er=$(t_pgrep -f "^./elastic-run -v --launch-timeout 10 -- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
t_log "grant $grant running on node2: SIGUSR1 to elastic-run (pid $er)"
t0=$SECONDS
kill -USR1 "$er"
end=$((SECONDS + 40))
until grep -aqE '^step [0-9]+ epoch [0-9]+ size 4 ' "$T_DIR/lead.out"; do
	grep -aq '^done: ' "$T_DIR/lead.out" && t_fail "the training ended at 2 (give it more epochs)"
	[ $SECONDS -lt $end ] || { grep -av '^step' "$T_DIR/lead.out" | tail -n 20 >&2; t_fail "no step at size 4 within 40 s of the order"; }
	sleep 0.2
done
took=$((SECONDS - t0))
[ -d "$T_DIR/srun-held" ] || t_fail "no srun into grant $grant was held: the growth did not start its daemon there"
t_wait_job "$lead" 180
scancel "$grant" 2>/dev/null || true
t_grep "grow in place: 2 new ranks join the 2 running" "$T_DIR/lead.out" "elastic-run did not plan a growth in place"
t_grep "grow in place: 2 new ranks not joined 1[0-9.]* s after the order \(the launch bound: --launch-timeout 10\), on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\); ending the launch to launch again" \
	"$T_DIR/lead.out" "elastic-run did not end the stalled growth at its bound"
t_grep "re-form 1: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\)" "$T_DIR/lead.out" "no relaunch onto the 4 GPUs"
t_grep "^done: .* size 4 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 4 with every sample once per epoch"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without change"
t_log "PASS: trains at 4 ${took} s after the order: $(grep -ao 'grow in place: 2 new ranks not joined [0-9.]* s' "$T_DIR/lead.out")"
