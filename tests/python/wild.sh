#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/wild.sh: habits of DDP scripts from the wild, under mpirun --with-ft ulfm
# on one host (tests/python/wild_checks.py):
#  - torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE read after
#    `import slurm_elastic.torch` and before init_process_group, at 3 ranks (KeyError:
#    'LOCAL_RANK' before they were set at import); MASTER_ADDR and MASTER_PORT set;
#  - a resnet18-sized model (11 M parameters) built without a seed after rank 0 alone
#    drew random numbers, so that the ranks start from different weights: at 2 and 3
#    ranks every rank ends with the same model; at 3 ranks with rank 2 SIGKILLed inside
#    the first step (the one that hands rank 0's weights out), the survivors drop that
#    step, heal in place and still end equal (a dropped first step goes back to rank
#    0's weights, not to each rank's own).
set -u
. "$(dirname "$0")/common.sh"
python3 -c 'import torch' 2>/dev/null || t_skip "no torch in this Python (Debian: python3-torch)"
t_scratch
t_mpi_scratch

t_py wild_checks.py env 3
t_py_ok env 3
t_log "$(grep -m1 '^OK env rank 0' "$T_DIR/env")"

unseeded() { # name np [KILL=rank,step]
	local name=$1 np=$2
	shift 2
	timeout -s KILL 240 env "$@" $MPIRUN -x KILL -np "$np" python3 "$here/wild_checks.py" unseeded \
		"$T_DIR/$name" >"$T_DIR/$name.out" 2>&1 || true
}
same() { # name ranks...: their final models, equal to the bit; their first weights differed
	local name=$1 inits
	shift
	inits=$(awk '/^INIT rank/ { print $4 }' "$T_DIR/$name.out" | sort -u | wc -l)
	[ "$inits" -ge 2 ] || t_fail "$name: the ranks built the same weights ($inits distinct): the case tests nothing"
	python3 - "$T_DIR/$name" "$@" <<'PY' || { tail -n 30 "$T_DIR/$name.out"; t_fail "$name: the ranks' models differ"; }
import sys, torch
base, ranks = sys.argv[1], sys.argv[2:]
sd = [torch.load("%s.%s.pt" % (base, r)) for r in ranks]
bad = [k for k in sd[0] for o in sd[1:] if not torch.equal(sd[0][k], o[k])]
if bad:
    print("differ: %s" % ", ".join(sorted(set(bad))[:5]))
    sys.exit(1)
PY
}
unseeded un2 2
n=$(grep -c '^OK unseeded rank' "$T_DIR/un2.out" || true)
[ "$n" = 2 ] || { tail -n 30 "$T_DIR/un2.out"; t_fail "un2: $n of 2 ranks trained the unseeded model"; }
same un2 0 1
unseeded un3 3
n=$(grep -c '^OK unseeded rank' "$T_DIR/un3.out" || true)
[ "$n" = 3 ] || { tail -n 30 "$T_DIR/un3.out"; t_fail "un3: $n of 3 ranks trained the unseeded model"; }
same un3 0 1 2
unseeded un3kill 3 KILL=2,0
t_grep '^KILL rank 2 in step 0' "$T_DIR/un3kill.out" "rank 2 was killed in the first step"
n=$(grep -c '^OK unseeded rank [01]: 5 steps committed, world 2' "$T_DIR/un3kill.out" || true)
[ "$n" = 2 ] || { tail -n 30 "$T_DIR/un3kill.out"; t_fail "un3kill: $n of 2 survivors trained the 5 steps at 2 ranks"; }
same un3kill 0 1
t_log "PASS: an unseeded 11 M-parameter model trains one model at 2 and 3 ranks, and after a rank lost in its first step; torchrun's variables are there before init_process_group"
