#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/torch.sh: slurm_elastic.torch under mpirun --with-ft ulfm: an MLP with Adam
# trains at 1 and 2 ranks to the same model (float32 sums in another order: within 1e-4),
# zero_grad(set_to_none=True) gives the same model bit for bit, a rank SIGKILLed mid-step
# is healed in place (3 -> 2) with each committed step applied once, the habits that
# break registration are refused, and a DataLoader over the torch Sampler yields each
# rank's share (every sample once an epoch).
set -u
. "$(dirname "$0")/common.sh"
python3 -c 'import torch' 2>/dev/null || t_skip "no torch in this Python (Debian: python3-torch)"
t_scratch
t_mpi_scratch

t_py torch_checks.py train 1 "$T_DIR/m1.npy" || true
mv "$T_DIR/train" "$T_DIR/train1"
grep -q '^OK train rank 0' "$T_DIR/train1" || { cat "$T_DIR/train1"; t_fail "train at 1 rank"; }
t_log "1 rank: $(grep '^loss' "$T_DIR/train1")"
t_py torch_checks.py train 2 "$T_DIR/m2.npy" || true
t_py_ok train 2
t_log "2 ranks: $(grep '^loss' "$T_DIR/train")"
t_py torch_checks.py train_none 2 "$T_DIR/m2none.npy" || true
t_py_ok train_none 2
t_py torch_checks.py kill 3 "$T_DIR/mkill.npy" || true
t_py_ok kill 2
t_grep '^KILL rank 2 at step 5' "$T_DIR/kill" "the victim was killed"
k=$(sed -n 's/^KILL .* t=//p' "$T_DIR/kill")
c=$(sed -n 's/^first commit after a change t=\([0-9.]*\).*/\1/p' "$T_DIR/kill" | head -1)
[ -n "$c" ] || { cat "$T_DIR/kill"; t_fail "no commit after the kill"; }
t_log "kill at 3 ranks -> next commit at 2: $(awk -v k="$k" -v c="$c" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }')"

# A launch ended between steps (after step 6's update and report, before step
# 7 began), as mpirun ends one after a lost node, with per-step node
# snapshots: the relaunch resumes at step 7, not redoing the reported step 6
# (reported after ctx.updated(): the update is applied, the node snapshot
# takes it then, elastic_step_updated), and ends with the uninterrupted
# run's model.
mkdir -p "$T_DIR/shm"
export ELASTIC_JOB_ID=between$$ ELASTIC_SHM_DIR=$T_DIR/shm ELASTIC_SNAPSHOT_EVERY=1 BETWEEN_FLAG=$T_DIR/between.flag
t_py torch_checks.py between 2 "$T_DIR/mbetween.npy" || true
t_grep '^REPORTED step 6 rank 0' "$T_DIR/between" "rank 0 reported step 6, then the launch ended"
t_py torch_checks.py resume 2 "$T_DIR/mresume.npy" || true
t_py_ok resume 2
t_grep '^FIRST step 7 resumed 1' "$T_DIR/resume" "the relaunch resumed at step 7 (step 6 not redone)"
unset ELASTIC_JOB_ID ELASTIC_SHM_DIR ELASTIC_SNAPSHOT_EVERY BETWEEN_FLAG
cmp -s "$T_DIR/mresume.npy" "$T_DIR/m2.npy" || t_fail "the resumed run's model differs from the uninterrupted 2-rank run's"
t_log "launch ended between steps 6 and 7: the relaunch resumed at step 7, model equal to the uninterrupted run's"

python3 - "$T_DIR" <<'PY' || t_fail "final models differ (see above)"
import sys, numpy as np
d = sys.argv[1]
m1, m2, mn, mk = (np.load("%s/%s.npy" % (d, n)) for n in ("m1", "m2", "m2none", "mkill"))
ok = True
if not np.array_equal(m2, mn):
    print("set_to_none run differs from the plain run at 2 ranks"); ok = False
for name, m in (("2 ranks", m2), ("3 -> 2 ranks after a kill", mk)):
    err = float(np.max(np.abs(m - m1)))
    print("%s vs 1 rank: max abs difference %.3g" % (name, err))
    if not np.allclose(m, m1, rtol=1e-4, atol=1e-5):
        ok = False
sys.exit(0 if ok else 1)
PY
t_py torch_checks.py habits 2 || true
t_py_ok habits 2
t_py torch_checks.py sampler 2 || true
t_py_ok sampler 2
exit 0
