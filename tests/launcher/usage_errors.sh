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
check 3 "SLURM_JOB_ID=abc is not a job id" env SLURM_JOB_ID=abc "$ER" true
check 2 "ELASTIC_MIN_GPUS=0 is not an integer in [1, 65536]" env SLURM_JOB_ID=5 ELASTIC_MIN_GPUS=0 "$ER" true
check 2 "ELASTIC_MAX_GPUS=2 is not an integer in [4, 65536]" env SLURM_JOB_ID=5 ELASTIC_MIN_GPUS=4 ELASTIC_MAX_GPUS=2 "$ER" true
check 2 "ELASTIC_SIZES=x,y is not a list of sizes" env SLURM_JOB_ID=5 ELASTIC_SIZES=x,y "$ER" true
check 2 "needs HOST CMD" env -u ELASTIC_RUN_MAP "$ER" --agent
check 1 "host nodeX is not in this job's GPU set" env ELASTIC_RUN_MAP="node1=5:0" "$ER" --agent nodeX true
check 0 "usage: elastic-run" "$ER" --help
t_log "PASS: every bad input refused with its message"
