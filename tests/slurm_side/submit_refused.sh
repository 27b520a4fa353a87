#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/submit_refused.sh: every bad elastic request is refused at
# submit time with one line naming the option and the allowed range, and no
# job is created: first by the SPANK plugin in sbatch, then (with sbatch's
# checks relaxed through plugstack.conf arguments) by job_submit/elastic,
# which also enforces the site's partitions, users and reserved names.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
es_need_plugins
t_scratch
G=$ES_MAXGPUS
gr="(allowed: MIN[-MAX] with 1 <= MIN <= MAX <= $G)"

# -- in sbatch (SPANK, allocator context) --
es_refused alice "elastic: --elastic-gpus=abc: not a whole number of GPUs $gr" --elastic-gpus=abc
es_refused alice "elastic: --elastic-gpus=: not a whole number of GPUs" --elastic-gpus=
es_refused alice "elastic: --elastic-gpus=0: MIN must be at least 1 $gr" --elastic-gpus=0
es_refused alice "elastic: --elastic-gpus=-2: GPU counts cannot be negative" --elastic-gpus=-2
es_refused alice "elastic: --elastic-gpus=4-2: MIN 4 is greater than MAX 2 $gr" --elastic-gpus=4-2
es_refused alice "elastic: --elastic-gpus=1-$((G + 1)): MAX $((G + 1)) is above the site limit MaxGpusPerJob=$G $gr" \
	--elastic-gpus=1-$((G + 1))
es_refused alice "elastic: --elastic-gpus=1-99999999999999999999: number too large" \
	--elastic-gpus=1-99999999999999999999
es_refused alice "elastic: --elastic-grace=0: must be at least 1 (allowed: 1 to $ES_MAXGRACE seconds)" \
	--elastic-gpus=1 --elastic-grace=0
es_refused alice "elastic: --elastic-grace=-5: cannot be negative" --elastic-gpus=1 --elastic-grace=-5
es_refused alice "elastic: --elastic-grace=1m: not a whole number" --elastic-gpus=1 --elastic-grace=1m
es_refused alice "elastic: --elastic-grace=$((ES_MAXGRACE + 1)): too large (allowed: 1 to $ES_MAXGRACE seconds)" \
	--elastic-gpus=1 --elastic-grace=$((ES_MAXGRACE + 1))
es_refused alice "elastic: --elastic-sizes=odd: 'odd' is not a GPU count (allowed: any, pow2, or a comma-separated list" \
	--elastic-gpus=1-4 --elastic-sizes=odd
es_refused alice "elastic: --elastic-sizes=1,8: 8 is outside --elastic-gpus=1-4" \
	--elastic-gpus=1-4 --elastic-sizes=1,8
es_refused alice "elastic: --elastic-sizes=2,4: the job starts at MIN=1 GPUs, which is not one of its sizes" \
	--elastic-gpus=1-4 --elastic-sizes=2,4
es_refused alice "elastic: --elastic-sizes=4,2: the job starts at MIN=1 GPUs, which is not one of its sizes" \
	--elastic-gpus=1-4 --elastic-sizes=4,2
es_refused alice "elastic: --elastic-sizes=pow2: the job starts at MIN=3 GPUs" \
	--elastic-gpus=3-8 --elastic-sizes=pow2
es_refused alice "elastic: --elastic-policy-weight=0: must be at least 1 (allowed: 1 to 1000)" \
	--elastic-gpus=1 --elastic-policy-weight=0
es_refused alice "elastic: --elastic-grace needs --elastic-gpus=MIN[-MAX]" --elastic-grace=30

# -- in slurmctld (job_submit/elastic is the authority) --
# The same options through a client whose SPANK limits are wide open: the
# SPANK plugin lets them pass, slurmctld refuses them.
wide=$(es_client_conf "conf=$ES_CONF" MaxGpusPerJob=4096 MaxGrace=86400)
SLURM_CONF=$wide ES_ALSO="Batch job submission failed" es_refused alice \
	"sbatch: error: elastic: --elastic-gpus=1-$((G + 1)): MAX $((G + 1)) is above the site limit MaxGpusPerJob=$G $gr" \
	--elastic-gpus=1-$((G + 1))
SLURM_CONF=$wide ES_ALSO="Batch job submission failed" es_refused alice \
	"sbatch: error: elastic: --elastic-grace=$((ES_MAXGRACE + 1)): too large (allowed: 1 to $ES_MAXGRACE seconds)" \
	--elastic-gpus=1 --elastic-grace=$((ES_MAXGRACE + 1))
# From here on every refusal must come from slurmctld.
export ES_ALSO="Batch job submission failed"
# GPU request outside MIN..MAX.
es_refused alice "elastic: the job asks for 3 GPUs, which --elastic-gpus=1-2 --elastic-sizes=any does not allow" \
	--elastic-gpus=1-2 --gpus=3
es_refused alice "elastic: the job asks for 4 GPUs" --elastic-gpus=1-2 -N2 --gres=gpu:2
es_refused alice "elastic: elastic jobs take GPUs per job (--gpus) or per node" \
	--elastic-gpus=1-2 -n1 --gpus-per-task=1
es_refused alice "elastic: --elastic-gpus=1 on 2 nodes: every node needs a GPU, so MIN must be at least the node count" \
	--elastic-gpus=1-4 -N2
es_refused alice "elastic: job arrays cannot be elastic" --elastic-gpus=1 --array=1-2
# Names reserved for the controller's grant jobs.
qos=$(es_conf_value GrantQos elastic)
prefix=$(es_conf_value GrantNamePrefix elastic:)
es_refused alice "elastic: QOS '$qos' is reserved for the grant jobs of the elastic controller" --qos="$qos"
out=$(cd "$T_DIR" && t_as alice sbatch --hold --job-name="${prefix}999" -o /dev/null --wrap true 2>&1) &&
	t_fail "a job named ${prefix}999 from alice was accepted: $out"
case "$out" in *"elastic: job names starting with '$prefix' are reserved"*) ;; *) t_fail "reserved name: got $out" ;; esac
# Users and partitions elastic.conf does not allow.
users=$(es_conf_value AllowedUsers "")
if [ -n "$users" ] && ! grep -qw nobody <<<"${users//,/ }"; then
	es_refused nobody "elastic: user nobody ($(id -u nobody)) may not submit elastic jobs (AllowedUsers=$users)" \
		--elastic-gpus=1
else
	t_log "AllowedUsers is open: user check not exercised here"
fi
parts=$(es_conf_value AllowedPartitions "")
if [ -n "$parts" ]; then
	p=es$$
	scontrol create PartitionName=$p Nodes=node4 State=UP || t_fail "cannot create partition $p"
	trap 'rc=$?; scontrol delete PartitionName='$p' 2>/dev/null || true; t_cleanup $rc' EXIT
	es_refused alice "elastic: partition '$p' does not take elastic jobs (allowed: $parts)" \
		--elastic-gpus=1 -p "$p"
	# The same job without --elastic-gpus is an ordinary job there.
	id=$(t_sbatch alice --hold -p "$p" --wrap true)
	[ -z "$(es_job_field "$id" AdminComment)" ] || t_fail "plain job $id got an AdminComment"
	# Without -p an elastic job goes to the first allowed partition.
	id=$(t_sbatch alice --hold --elastic-gpus=1 --wrap true)
	[ "$(es_job_field "$id" Partition)" = "${parts%%,*}" ] || t_fail "job $id not in ${parts%%,*}"
else
	t_log "AllowedPartitions is open: partition check not exercised here"
fi

unset ES_ALSO

# -- plugstack.conf arguments --
bad=$(es_client_conf "conf=$ES_CONF" Bogus=1)
out=$(cd "$T_DIR" && SLURM_CONF=$bad t_as alice sbatch --hold -o /dev/null --elastic-gpus=1 --wrap true 2>&1) &&
	t_fail "sbatch with plugstack argument Bogus=1 went on: $out"
case "$out" in *"elastic.conf is fixed: plugstack.conf argument: unknown key 'Bogus'"*) ;; *) t_fail "plugstack Bogus=1: got $out" ;; esac
# A file named by conf= must exist; without it only elastic jobs stop.
bad=$(es_client_conf "conf=$T_DIR/none.conf")
out=$(cd "$T_DIR" && SLURM_CONF=$bad t_as alice sbatch --hold -o /dev/null --elastic-gpus=1 --wrap true 2>&1) &&
	t_fail "elastic sbatch with a missing conf= file went on: $out"
case "$out" in *"elastic: elastic jobs are refused until elastic.conf is fixed: $T_DIR/none.conf: cannot open"*) ;; *) t_fail "missing conf=: got $out" ;; esac
id=$(SLURM_CONF=$bad t_sbatch alice --hold -o /dev/null --wrap true)
t_log "PASS: $ES_N bad requests refused with their message, none left a job; bad plugstack arguments refuse elastic jobs only (plain job $id accepted)"
