#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/job_tag_modify.sh: job_submit/elastic tags the job (seen in
# `scontrol show job`, parsed back by the tag format elasticd uses), and a job
# update that breaks the elastic request is refused with a clear message while
# harmless updates go through.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
es_need_plugins
t_scratch

id=$(t_sbatch alice --hold --elastic-gpus=2-4 --elastic-grace=20 --wrap 'sleep 30')
plain=$(t_sbatch alice --hold --wrap 'sleep 30')
tag=$(es_job_field "$id" AdminComment)
[ "$tag" = "elastic:min=2,max=4,grace=20,sizes=any,weight=1" ] || t_fail "job $id AdminComment '$tag'"
[ "$(es_job_field "$id" TresPerJob)" = "gres/gpu:2" ] || t_fail "job $id TresPerJob not gres/gpu:2"
[ -z "$(es_job_field "$plain" AdminComment)" ] || t_fail "plain job $plain got an AdminComment"
# scontrol reads it with slurm_load_job(), the public API elasticd uses.
t_log "job $id tagged: $tag"

# job_submit/elastic learns jobs from slurmctld's job list about once a
# second; give it time to see the two jobs.
sleep 2.5

# Update as root (the only one allowed to touch AdminComment); must fail with MSG.
upd_refused() { # job msg args...
	local j=$1 msg=$2 out
	shift 2
	out=$(scontrol update JobId="$j" "$@" 2>&1) && t_fail "scontrol update $j $* was accepted"
	case "$out" in *"$msg"*) ;; *) t_fail "scontrol update $j $*: expected '$msg', got: $out" ;; esac
	t_log "refused as expected: update $* -> $(head -n1 <<<"$out")"
}
upd_refused "$id" "elastic: job $id is elastic: changing its AdminComment would remove its elastic tag" \
	AdminComment=hello
upd_refused "$id" "elastic: AdminComment: elastic tag 'elastic:min=0,max=4,grace=20,sizes=any': --elastic-gpus=0-4: MIN must be at least 1" \
	AdminComment=elastic:min=0,max=4,grace=20,sizes=any
upd_refused "$id" "elastic: the job asks for 8 GPUs, which --elastic-gpus=2-4 --elastic-sizes=any does not allow" \
	TresPerJob=gres/gpu:8
upd_refused "$id" "elastic: the job asks for 0 GPUs" TresPerJob=gres/gpu:0
upd_refused "$id" "elastic: the job asks for 1 GPUs" Gres=gpu:1
upd_refused "$plain" "elastic: job $plain was not submitted as an elastic job; an elastic tag cannot be added later" \
	AdminComment=elastic:min=1,max=2,grace=20,sizes=any
p=es$$
scontrol create PartitionName=$p Nodes=node4 State=UP || t_fail "cannot create partition $p"
trap 'rc=$?; scontrol delete PartitionName='$p' 2>/dev/null || true; t_cleanup $rc' EXIT
parts=$(es_conf_value AllowedPartitions "")
if [ -n "$parts" ]; then
	upd_refused "$id" "elastic: partition '$p' does not take elastic jobs" Partition=$p
fi
# The tag and the GPU request are unchanged.
[ "$(es_job_field "$id" AdminComment)" = "$tag" ] || t_fail "job $id tag changed"
[ "$(es_job_field "$id" TresPerJob)" = "gres/gpu:2" ] || t_fail "job $id GPU request changed"

# Updates that keep the request valid go through.
scontrol update JobId="$id" Comment=still-elastic || t_fail "Comment update refused"
scontrol update JobId="$id" TresPerJob=gres/gpu:3 || t_fail "TresPerJob=gres/gpu:3 (within 2-4) refused"
scontrol update JobId="$id" AdminComment=elastic:min=2,max=4,grace=60,sizes=any,weight=1 ||
	t_fail "a valid tag change (grace 60) refused"
[ "$(es_job_field "$id" AdminComment)" = "elastic:min=2,max=4,grace=60,sizes=any,weight=1" ] ||
	t_fail "job $id tag not updated"
scontrol update JobId="$plain" AdminComment=just-a-note || t_fail "plain job AdminComment refused"
scontrol update JobId="$plain" Partition=$p || t_fail "plain job partition change refused"
t_log "PASS: tag visible via scontrol; 7 breaking updates refused; valid updates accepted"
