#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/ranks_per_gpu.sh: elastic-run inside a job holding 1 GPU on
# one node, with a grant job (elastic:<jobid>, 2 GPUs, another node) standing
# in for elasticd's: 3 ranks, one per GPU, each rank's CUDA_VISIBLE_DEVICES a
# single GPU of its own node, daemons in the job holding the GPUs; a rank
# killed in the middle is healed in place (ULFM) and the run finishes at 2.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_need_cluster
t_ompi_env
t_scratch
cp "${top_builddir:?}/launcher/elastic-run" "$top_builddir/tests/foundation/ulfm_smoke" "$T_DIR/"
lead=$(t_sbatch root -N1 -w node1 --gres=gpu:1 -H -o "$T_DIR/lead.out" -D "$T_DIR" --wrap "
./elastic-run -v -- ./ulfm_smoke 100 1 40")
t_grant_release "$lead" 2
t_wait_job "$lead" 120
cat "$T_DIR/lead.out"
t_grep "elastic-run .*job $lead: 3 ranks on node1:1 GPU \(job $lead\), node2:2 GPUs \(job $grant\)" \
	"$T_DIR/lead.out" "elastic-run did not see 1 + 2 GPUs"
for r in 0 1 2; do
	t_grep "^rank $r of 3 on .* CUDA_VISIBLE_DEVICES=[0-9]+$" "$T_DIR/lead.out" "rank $r has not exactly one GPU"
done
n2=$(grep -E 'SLURMD_NODENAME=node2\) CUDA_VISIBLE_DEVICES=[01]$' "$T_DIR/lead.out" | grep -Eo '=[01]$' | sort -u | wc -l)
[ "$n2" = 2 ] || t_fail "the 2 ranks on node2 do not have GPUs 0 and 1 (got $n2 distinct)"
t_grep 'finished 100 iterations at size 2 after 1 recoveries' "$T_DIR/lead.out" "no in-place recovery to size 2"
t_grep "job $lead: finished \(1 launch, 2 of 3 ranks at the end\)" "$T_DIR/lead.out" "elastic-run relaunched or failed"
# The remote daemon ran as a step of the grant job.
sacct -n -j "$grant" -o JobID,JobName%30 | grep -q "$grant\.0" || t_fail "no step of grant $grant ran the daemon"
t_log "PASS"
