#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/submit_api.sh: requests that bypass sbatch (libslurm with
# a hand-made SPANK job environment) are checked by job_submit/elastic alone:
# bad values and an AdminComment are refused with their message and leave
# no job; a valid raw request is tagged like one from sbatch.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
es_need_plugins
t_scratch
api=${top_builddir:-/src/build-testbed}/tests/slurm_side/submit_api
[ -x "$api" ] || api=$(dirname "$0")/submit_api
[ -x "$api" ] || t_skip "submit_api not built (make check builds it)"
O=_SLURM_SPANK_OPTION_elastic_elastic
G=$ES_MAXGPUS

api_refused() { # user expect env...
	local u=$1 expect=$2 name=es-api-$$-$RANDOM out
	shift 2
	out=$(cd "$T_DIR" && t_as "$u" "$api" "$name" "$@" 2>&1) &&
		t_fail "raw request $* as $u accepted: $out"
	case "$out" in *"$expect"*) ;; *) t_fail "raw request $*: expected '$expect', got: $out" ;; esac
	[ -z "$(squeue -h -n "$name" -o %i)" ] || t_fail "raw request $* left a job"
	t_log "refused as expected: $* -> $(grep -F -- "$expect" <<<"$out" | head -n1)"
}
api_refused alice "elastic: --elastic-gpus=0: MIN must be at least 1 (allowed: MIN[-MAX] with 1 <= MIN <= MAX <= $G)" \
	${O}_gpus=0
api_refused alice "elastic: --elastic-gpus=x: not a whole number of GPUs" ${O}_gpus=x
api_refused alice "elastic: --elastic-gpus=1-$((G + 1)): MAX $((G + 1)) is above the site limit MaxGpusPerJob=$G" \
	${O}_gpus=1-$((G + 1))
api_refused alice "elastic: --elastic-grace=0: must be at least 1" ${O}_gpus=1 ${O}_grace=0
api_refused alice "elastic: --elastic-sizes=3: the job starts at MIN=1 GPUs" ${O}_gpus=1-4 ${O}_sizes=3
api_refused alice "elastic: --elastic-policy-weight=5000: too large" ${O}_gpus=1 ${O}_policy_weight=5000
api_refused alice "elastic: --elastic-grace needs --elastic-gpus" ${O}_grace=30
api_refused root "elastic: the AdminComment of an elastic job holds its elastic tag" \
	--admin-comment=note ${O}_gpus=1

out=$(cd "$T_DIR" && t_as bob "$api" es-api-ok-$$ ${O}_gpus=2-4 ${O}_sizes=2,4 2>&1) ||
	t_fail "valid raw request refused: $out"
id=$(head -n1 <<<"$out")
es_track_job "$id"
tag=$(es_job_field "$id" AdminComment)
[ "$tag" = "elastic:min=2,max=4,grace=$ES_DEFGRACE,sizes=2/4,weight=1" ] || t_fail "job $id tag '$tag'"
[ "$(es_job_field "$id" TresPerJob)" = "gres/gpu:2" ] || t_fail "job $id does not ask for 2 GPUs"
t_log "PASS: raw requests checked by slurmctld alone; valid one tagged $tag"
