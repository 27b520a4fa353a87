#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/usage_errors.sh: elastic-run refuses bad input with a clear
# line and a distinct status, and starts nothing.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
ER=${top_builddir:?}/launcher/elastic-run
[ -x "$ER" ] || t_fail "elastic-run not built"
check() { # want-status want-text cmd...
	local want=$1 text=$2 out st
	shift 2
	out=$("$@" 2>&1)
	st=$?
	[ "$st" = "$want" ] || t_fail "'$*': status $st, want $want ($out)"
	case "$out" in *"$text"*) ;; *) t_fail "'$*': no '$text' in: $out" ;; esac
}
check 3 "not inside a Slurm allocation" env -u SLURM_JOB_ID "$ER" true
check 2 "no program given" env SLURM_JOB_ID=5 "$ER"
check 2 "unknown option '--bogus'" env SLURM_JOB_ID=5 "$ER" --bogus true
check 2 "--max-relaunch x: not an integer" env SLURM_JOB_ID=5 "$ER" --max-relaunch x true
check 2 "--mpirun needs a value" env SLURM_JOB_ID=5 "$ER" --mpirun
check 2 "--grant-wait takes 0 to 600 seconds, not '601'" env SLURM_JOB_ID=5 "$ER" --grant-wait 601 true
check 2 "--grant-wait -1: not an integer" env SLURM_JOB_ID=5 "$ER" --grant-wait -1 true
check 2 "--launch-timeout 10m: not an integer" env SLURM_JOB_ID=5 "$ER" --launch-timeout 10m true
check 2 "--max-failures -1: not an integer" env SLURM_JOB_ID=5 "$ER" --max-failures -1 true
check 2 "--launch-timeout needs a value" env SLURM_JOB_ID=5 "$ER" --launch-timeout
check 2 "--replace-after takes 1 to 100000 seconds, not '0'" env SLURM_JOB_ID=5 "$ER" --replace-after 0 true
check 2 "--replace-after 2s: not an integer" env SLURM_JOB_ID=5 "$ER" --replace-after 2s true
check 3 "SLURM_JOB_ID=abc is not a job id" env SLURM_JOB_ID=abc "$ER" true
# The job's ELASTIC_* contract, read by the same parser as libelastic's
# (common/contract.c), with the same limits.
check 2 "ELASTIC_MIN_GPUS='0': expected an integer in 1..4096" env SLURM_JOB_ID=5 ELASTIC_MIN_GPUS=0 "$ER" true
check 2 "ELASTIC_MAX_GPUS='2': expected an integer in 4..4096" env SLURM_JOB_ID=5 ELASTIC_MIN_GPUS=4 ELASTIC_MAX_GPUS=2 "$ER" true
check 2 "ELASTIC_SIZES='x,y': 'x' is not a GPU count" env SLURM_JOB_ID=5 ELASTIC_SIZES=x,y "$ER" true
check 2 "MIN=3 GPUs, which is not one of its sizes" env SLURM_JOB_ID=5 ELASTIC_MIN_GPUS=3 ELASTIC_MAX_GPUS=8 ELASTIC_SIZES=pow2 "$ER" true
check 2 "needs HOST CMD" env -u ELASTIC_RUN_MAP "$ER" --agent
check 1 "host nodeX is not in this job's GPU set" env ELASTIC_RUN_MAP="node1=5:0" "$ER" --agent nodeX true
# a node added by a growth in place: in the map file, not in the environment's map
mapf=$(mktemp)
echo "node1=5:0;nodeY=6:0,1" >"$mapf"
check 1 "host nodeZ is not in this job's GPU set" env ELASTIC_RUN_MAP="node1=5:0" ELASTIC_RUN_MAP_FILE="$mapf" "$ER" --agent nodeZ true
check 1 "host nodeY is not in this job's GPU set" env ELASTIC_RUN_MAP="node1=5:0" ELASTIC_RUN_MAP_FILE=/nonexistent "$ER" --agent nodeY true
# (found there: the daemon's srun goes into the grant's job; an srun that
# says what it was asked stands in for Slurm's)
bin=$(mktemp -d)
printf '#!/bin/sh\necho "srun $*"\n' >"$bin/srun"
chmod +x "$bin/srun"
# (the step says it began first: elastic-run --step-started)
check 0 "srun --jobid=6 --overlap -N1 -n1 --kill-on-bad-exit=0 -w nodeY /bin/sh -c '$(readlink -f "$ER")' --step-started;true" \
	env PATH="$bin:$PATH" ELASTIC_RUN_MAP="node1=5:0" ELASTIC_RUN_MAP_FILE="$mapf" "$ER" --agent nodeY true
rm -rf "$mapf" "$bin"
# the rank wrapper of a joined rank (internal mode, started by libelastic)
check 2 "--join: needs BASE MAP" "$ER" --rank --join x node1=5:0 true
check 2 "--join: needs BASE MAP" "$ER" --rank --join 2
check 2 "no program" "$ER" --rank --join 2 node1=5:0
check 0 "usage: elastic-run" "$ER" --help

# elastic-ctl snapshots: the node snapshot files by the contract's names.
CTL=${top_builddir:?}/plugin/elasticd/elastic-ctl
shm=$(mktemp -d)
trap 'rm -rf "$shm"' EXIT
for f in elastic-41-1700000000-0000000000000001-0000abcd-0.snap elastic-41-0000000000000002-0000abcd-1.snap \
	elastic-42-0000000000000001-0000abcd-0.snap elastic-job-0000000000000001-0000abcd-0.snap elastic-43-x.tmp other.snap; do
	echo x >"$shm/$f"
done
export ELASTIC_SHM_DIR=$shm
check 0 "elastic-42-0000000000000001-0000abcd-0.snap" "$CTL" snapshots
[ "$("$CTL" snapshots | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' ')" = "41 41 42 " ] ||
	t_fail "elastic-ctl snapshots listed: $("$CTL" snapshots)"
check 0 "removed 2 snapshot files" "$CTL" snapshots --remove 41
[ "$(ls "$shm" | sort | tr '\n' ' ')" = "elastic-42-0000000000000001-0000abcd-0.snap elastic-43-x.tmp elastic-job-0000000000000001-0000abcd-0.snap other.snap " ] ||
	t_fail "after --remove 41: $(ls "$shm")"
check 2 "name the job ids" "$CTL" snapshots --remove
check 2 "'4x' is not a job id" "$CTL" snapshots 4x
check 1 "$shm/none: No such file" env ELASTIC_SHM_DIR="$shm/none" "$CTL" snapshots
t_log "PASS: every bad input refused with its message; elastic-ctl snapshots lists and removes by job"
