#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/warm.sh: the warm interpreter without Slurm: a zygote (python3 -m
# slurm_elastic.warm) started by hand and ranks started by mpirun through elastic-run's
# rank wrapper. (1) The ranks are forked by the zygote and train, also (1c) when they
# start before it and wait for it, and (1d) start cold when it ends unusable; (2) a
# rank whose import-time environment differs (OMP_NUM_THREADS, ONEDNN_MAX_CPU_ISA) is
# refused and starts cold, saying so; (3) a rank wrapper SIGKILLed: the zygote kills
# the rank it forked, and the others heal in place (3 -> 2) and finish.
set -u
. "$(dirname "$0")/common.sh"
py_need_torch
t_scratch
t_mpi_scratch
ex=$top_srcdir/examples/pytorch/train_digits.py
export ELASTIC_RUN_VERBOSE=1
py_zygote warmtest "$ex"
t_log "$(cat "$T_DIR/zygote.out")"
run() { # out ranks args...
	local out=$1 np=$2
	shift 2
	timeout -s KILL 200 $MPIRUN -x SLURMD_NODENAME -x ELASTIC_RUN_VERBOSE -x ELASTIC_RUN_WARM \
		-np "$np" "$top_builddir/launcher/elastic-run" --rank python3 "$ex" --timings "$@" >"$T_DIR/$out" 2>&1
}

# (1) forked warm
run warm 2 --epochs 1 || { cat "$T_DIR/warm"; t_fail "warm run"; }
t_grep "^done: 12 steps, 1 epochs, size 2, each committed step applied once: yes" "$T_DIR/warm" "warm run trained"
n=$(grep -c "started warm: pid" "$T_DIR/warm")
[ "$n" = 2 ] || { cat "$T_DIR/warm"; t_fail "$n of 2 ranks started warm"; }
t_grep '^timings \(fresh, step 0, warm\)' "$T_DIR/warm" "rank 0 says warm"
t_log "$(grep '^timings' "$T_DIR/warm")"

# (1b) on another node than mpirun's, the runtime starts the daemon with its
# own library directories before LD_LIBRARY_PATH (PRRTE's remote launch);
# the launch agent names them (ELASTIC_RUN_LD_ADDED) and the ranks there
# are still forked warm
ld_added=/usr/lib/x86_64-linux-gnu/pmix2/lib:/usr/lib
LD_LIBRARY_PATH=$ld_added${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ELASTIC_RUN_LD_ADDED=$ld_added \
	MPIRUN="$MPIRUN -x LD_LIBRARY_PATH -x ELASTIC_RUN_LD_ADDED" run remote 2 --epochs 1 ||
	{ cat "$T_DIR/remote"; t_fail "run with the runtime's library path"; }
n=$(grep -c "started warm: pid" "$T_DIR/remote")
[ "$n" = 2 ] || { cat "$T_DIR/remote"; t_fail "$n of 2 ranks with the runtime's library path started warm"; }

# (1c) a zygote elastic-run lists (ELASTIC_RUN_WARM_LIVE) but that srun has
# not started yet: the ranks wait for it to listen and to import, one
# import for both, rather than starting cold beside it
late() { # out imports pythonpath: ranks first, then their zygote
	local out=$1
	ELASTIC_GPU_JOB=42 ELASTIC_RUN_WARM_LIVE="other.42 $SLURMD_NODENAME.42" \
		MPIRUN="$MPIRUN -x ELASTIC_GPU_JOB -x ELASTIC_RUN_WARM_LIVE" run "$out" 2 --epochs 1 &
	local mp=$! end=$((SECONDS + 60))
	until [ "$(t_pgrep -f -- "elastic-run --rank python3 $ex" | wc -l)" -ge 2 ]; do
		[ $SECONDS -lt $end ] || t_fail "$out: the rank wrappers did not start"
		sleep 0.1
	done
	sleep 1
	ELASTIC_WARM_IMPORTS=$2 PYTHONPATH=$3 python3 -m slurm_elastic.warm -v \
		"$ELASTIC_RUN_WARM.$SLURMD_NODENAME.42" "$ex" </dev/null >"$T_DIR/$out.zygote" 2>&1 &
	local z=$!
	wait $mp || { cat "$T_DIR/$out" "$T_DIR/$out.zygote"; t_fail "$out: run"; }
	kill $z 2>/dev/null
	wait $z 2>/dev/null
	t_grep "^done: 12 steps, 1 epochs, size 2, each committed step applied once: yes" "$T_DIR/$out" \
		"$out: trained"
}
late late "" "${PYTHONPATH:-}"
n=$(grep -c "started warm: pid" "$T_DIR/late")
[ "$n" = 2 ] || { cat "$T_DIR/late" "$T_DIR/late.zygote"; t_fail "$n of 2 ranks waited for their late zygote"; }
t_log "late zygote: $(grep ready "$T_DIR/late.zygote"); $(grep '^timings' "$T_DIR/late")"
# (1d) the same, but the zygote cannot serve (an import starts a thread):
# the waiting ranks start cold when it ends, and say so
printf 'import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n' \
	>"$T_DIR/spawns_thread.py"
late unusable spawns_thread "$T_DIR${PYTHONPATH:+:$PYTHONPATH}"
t_grep "not usable: 2 threads" "$T_DIR/unusable.zygote" "the zygote said why it cannot serve"
n=$(grep -c "the warm interpreter did not take the rank (.*): starting python3 cold" "$T_DIR/unusable")
[ "$n" = 2 ] || { cat "$T_DIR/unusable"; t_fail "$n of 2 ranks started cold when their zygote ended"; }

# (2) refused: OMP_NUM_THREADS and oneDNN's ISA limit differ from the zygote's
ONEDNN_MAX_CPU_ISA=SSE41 OMP_NUM_THREADS=2 run refused 2 --epochs 1 ||
	{ cat "$T_DIR/refused"; t_fail "refused run"; }
t_grep "^done: 12 steps" "$T_DIR/refused" "the refused ranks ran cold"
n=$(grep -c "the warm interpreter refused: environment differs: OMP_NUM_THREADS, ONEDNN_MAX_CPU_ISA: starting python3 cold" "$T_DIR/refused")
[ "$n" = 2 ] || { cat "$T_DIR/refused"; t_fail "$n of 2 ranks said why they started cold"; }
t_grep '^timings \(fresh, step 0, cold\)' "$T_DIR/refused" "rank 0 says cold"

# (3) a wrapper SIGKILLed: its forked rank dies, the others heal in place
run kill 3 --epochs 3 --step-sleep 0.2 &
mp=$!
end=$((SECONDS + 120))
until grep -q "^step 3 " "$T_DIR/kill" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/kill"; t_fail "no step 3"; }
	sleep 0.1
done
pid=$(awk '/--rank 2: started warm: pid/ { for (i = 1; i <= NF; i++) if ($i == "pid") print $(i + 1) }' "$T_DIR/kill")
shim=""
for p in $(t_pgrep -f -- "elastic-run --rank python3 $ex"); do
	t_env_has "$p" OMPI_COMM_WORLD_RANK=2 && shim=$p
done
[ -n "$pid" ] && [ -n "$shim" ] && [ -d "/proc/$pid" ] || t_fail "rank 2 (pid '$pid', wrapper '$shim') not found"
kill -KILL "$shim"
sleep 1
[ -d "/proc/$pid" ] && t_fail "rank 2 (pid $pid) outlived its wrapper (pid $shim)"
t_log "rank 2's wrapper (pid $shim) SIGKILLed: the zygote killed rank 2 (pid $pid)"
wait $mp || true
t_grep "^done: 36 steps, 3 epochs, size 2, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/kill" "the others healed in place and finished at 2 ranks"
kill $zygote
exit 0
