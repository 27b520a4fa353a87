#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/plugins_loaded.sh: the cluster runs the Slurm the tree
# was built against (24.11 or 26.05; configure's), its slurmctld loaded
# job_submit/elastic (and read elastic.conf), its slurmd/slurmstepd and the
# client commands load elastic.so, whose options sbatch/salloc/srun list.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
es_need_plugins
t_scratch
ver=$(scontrol --version)
want=${slurm_built_against:?the tests run under make check}
[ "${ver#* }" = "$want" ] || t_fail "the tree was built against Slurm $want, the cluster runs '$ver'"
cfg=$(scontrol show config)
log=$(sed -n 's/^SlurmctldLogFile *= *//p' <<<"$cfg")
[ -f "$log" ] || t_fail "slurmctld log '$log' not found"
grep -q "elastic: loaded $ES_CONF" "$log" || t_fail "slurmctld log $log does not say it loaded $ES_CONF"
t_log "slurmctld ($ver): $(grep "elastic: loaded" "$log" | tail -n1)"
for cmd in sbatch salloc srun; do
	help=$($cmd --help 2>&1)
	for o in "elastic-gpus=MIN[-MAX]" elastic-grace=SECONDS elastic-sizes= elastic-policy-weight=N; do
		grep -qF -- "--$o" <<<"$help" || t_fail "$cmd --help does not list --$o"
	done
done
# slurmd's own plugin stack: an elastic step on every node gets ELASTIC_*
# from slurmstepd (remote context), nothing from the caller's environment.
out=$(cd "$T_DIR" && unset ELASTIC_JOB_ID && t_as bob srun -N4 -n4 --elastic-gpus=4-8 \
	bash -c 'echo "$SLURMD_NODENAME $ELASTIC_JOB_ID $ELASTIC_MIN_GPUS-$ELASTIC_MAX_GPUS $SLURM_JOB_ID"' 2>&1) ||
	t_fail "srun -N4 --elastic-gpus=4-8: $out"
nodes=$(awk '$2 == $4 && $3 == "4-8" {print $1}' <<<"$out" | sort -u | wc -l)
[ "$nodes" = 4 ] || t_fail "expected ELASTIC_* from slurmstepd on 4 nodes, got: $out"
t_log "PASS: job_submit/elastic in slurmctld, elastic.so in sbatch/salloc/srun and in slurmstepd on 4 nodes"
