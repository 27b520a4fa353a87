#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/warm.sh: the warm interpreter without Slurm: a zygote (python3 -m
# slurm_elastic.warm) started by hand and ranks started by mpirun through elastic-run's
# rank wrapper. (1) The ranks are forked by the zygote and train; (2) a rank whose
# import-time environment differs (OMP_NUM_THREADS) is refused and starts cold, saying
# so; (3) a rank wrapper SIGKILLed: the zygote kills the rank it forked, and the others
# heal in place (3 -> 2) and finish.
set -u
. "$(dirname "$0")/common.sh"
py_need_torch
t_scratch
t_mpi_scratch
ex=$top_srcdir/examples/pytorch/train_digits.py
export SLURMD_NODENAME=warmtest ELASTIC_RUN_VERBOSE=1 ELASTIC_RUN_WARM=elastic-warm-test.$$
python3 -m slurm_elastic.warm -v "$ELASTIC_RUN_WARM.$SLURMD_NODENAME" "$ex" </dev/null \
	>"$T_DIR/zygote.out" 2>&1 &
zygote=$!
trap 'rc=$?; kill $zygote 2>/dev/null; t_cleanup $rc' EXIT
end=$((SECONDS + 120))
until grep -q "@$ELASTIC_RUN_WARM.$SLURMD_NODENAME" /proc/net/unix; do
	[ $SECONDS -lt $end ] && kill -0 $zygote 2>/dev/null || { cat "$T_DIR/zygote.out"; t_fail "the zygote did not start"; }
	sleep 0.1
done
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

# (2) refused: OMP_NUM_THREADS differs from the zygote's
OMP_NUM_THREADS=2 run refused 2 --epochs 1 || { cat "$T_DIR/refused"; t_fail "refused run"; }
t_grep "^done: 12 steps" "$T_DIR/refused" "the refused ranks ran cold"
n=$(grep -c "the warm interpreter refused: environment differs: OMP_NUM_THREADS: starting python3 cold" "$T_DIR/refused")
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
for p in $(pgrep -f -- "elastic-run --rank python3 $ex"); do
	tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2 && shim=$p
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
