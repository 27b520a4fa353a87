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
#    0's weights, not to each rank's own);
#  - torch.distributed's collectives (all_reduce with SUM/MAX/MIN/AVG over six dtypes,
#    broadcast, all_gather, all_gather_object, broadcast_object_list, reduce, barrier)
#    equal to torch's own over gloo, before the first step, inside a step and between
#    steps; a rank SIGKILLed as the others call all_reduce between steps: they run it
#    again on the healed world and get its sum;
#  - examples/pytorch/imagenet_{ddp,elastic}.py: at most 10 lines apart; the twin under
#    torch's DDP, the port at 2 ranks, then resumed from its checkpoint at 3.
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
# torch.distributed's collectives, each against torch's own over gloo in the same 3
# processes (before the first step, inside a step, between steps); a rank lost as the
# others call all_reduce between steps: they get the sum over the healed world
t_py wild_checks.py collectives 3 $((20000 + RANDOM % 20000))
t_py_ok collectives 3
t_log "$(grep -m1 '^OK collectives rank 0' "$T_DIR/collectives")"
t_py wild_checks.py collectives_kill 3
t_grep '^KILL rank 2 before all_reduce' "$T_DIR/collectives_kill" "rank 2 was killed"
t_py_ok collectives_kill 2
t_log "$(grep -m1 '^OK collectives_kill rank 0' "$T_DIR/collectives_kill")"
# the example pair: a torchrun script in the shape of torchelastic's ImageNet example
# (image folder, resnet18, no seed, all_reduce'd metrics, rank 0's checkpoint broadcast
# at start) and its elastic port, at most 10 lines apart; the twin runs under torch's
# own DDP (torchrun's variables from mpirun's), the port trains 2 epochs at 2 ranks
# and resumes from its checkpoint at 3 ranks for the third
ex=$top_srcdir/examples/pytorch
n=$(diff "$ex/imagenet_ddp.py" "$ex/imagenet_elastic.py" | grep '^>' | grep -Evc '^> (#|""")' || true)
[ "$n" -le 10 ] || t_fail "imagenet_elastic.py changes $n lines of imagenet_ddp.py (10 at most)"
python3 "$ex/imagenet_elastic.py" "$T_DIR/images" --make-data 8 || t_fail "the example's image folder"
cat >"$T_DIR/torchrun-env" <<'SH'
#!/bin/sh
export RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK \
	LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE MASTER_ADDR=127.0.0.1 MASTER_PORT=$TWIN_PORT USE_LIBUV=0
exec "$@"
SH
chmod +x "$T_DIR/torchrun-env"
TWIN_PORT=$((20000 + RANDOM % 20000)) timeout -s KILL 180 $MPIRUN -x TWIN_PORT -np 2 "$T_DIR/torchrun-env" \
	python3 "$ex/imagenet_ddp.py" "$T_DIR/images" --epochs 1 --checkpoint "$T_DIR/twin.pt" \
	>"$T_DIR/twin.out" 2>&1 || { tail -n 20 "$T_DIR/twin.out"; t_fail "imagenet_ddp.py under torch's DDP"; }
t_grep '^epoch 0 loss [0-9.]+ ' "$T_DIR/twin.out" "the torchrun twin trained its epoch"
timeout -s KILL 240 $MPIRUN -np 2 python3 "$ex/imagenet_elastic.py" "$T_DIR/images" --epochs 2 \
	--checkpoint "$T_DIR/ck.pt" >"$T_DIR/port.out" 2>&1 || { tail -n 20 "$T_DIR/port.out"; t_fail "imagenet_elastic.py at 2 ranks"; }
t_grep '^epoch 1 loss [0-9.]+ .*rank 0 of 2' "$T_DIR/port.out" "the port's second epoch at 2 ranks"
timeout -s KILL 240 $MPIRUN -np 3 python3 "$ex/imagenet_elastic.py" "$T_DIR/images" --epochs 3 \
	--checkpoint "$T_DIR/ck.pt" >"$T_DIR/port3.out" 2>&1 || { tail -n 20 "$T_DIR/port3.out"; t_fail "imagenet_elastic.py resumed at 3 ranks"; }
t_grep "^=> loaded checkpoint $T_DIR/ck.pt \(epoch 2\)" "$T_DIR/port3.out" "the port's checkpoint, broadcast from rank 0"
[ "$(grep -c '^epoch [0-9]' "$T_DIR/port3.out")" = 1 ] && t_grep '^epoch 2 loss [0-9.]+ .*rank 0 of 3' "$T_DIR/port3.out" \
	"the resumed port trained its third epoch only" || { cat "$T_DIR/port3.out"; t_fail "the resumed port did not train epoch 2 alone"; }
t_log "example: $n lines changed; $(grep -h '^epoch' "$T_DIR/port.out" "$T_DIR/port3.out" | tail -n 1)"
t_log "PASS: an unseeded 11 M-parameter model trains one model at 2 and 3 ranks, and after a rank lost in its first step; torchrun's variables are there before init_process_group; the collectives equal gloo's"
