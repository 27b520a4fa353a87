#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/digits_compare.sh: the PyTorch example's final model check
# (train_digits.py --compare REF [--compare-spread REF2]) on made-up models:
# float32 rounding up to 10 times the difference between two static runs on
# other rank counts is accepted, so a long run matches; without REF2 the fixed
# tolerance (rtol 1e-3, atol 1e-4) holds; a model as far off as one that lost
# its optimizer state once (0.77) differs either way; a REF2 of another shape,
# a missing file or REF2 without REF is refused by name.
set -u
. "$(dirname "$0")/common.sh"
python3 -c 'import torch' 2>/dev/null || t_skip "no torch in this Python (Debian: python3-torch)"
t_scratch

cat >"$T_DIR/check.py" <<'PY'
# check.py CASE [SPREAD]: compare() on a made-up model; SPREAD: spread.npy
# (default), short.npy (another shape) or none
import os
import sys

import numpy as np

sys.path.insert(0, os.environ["EX"])
import train_digits as td  # noqa: E402

case, spread = sys.argv[1], (sys.argv[2:] or ["spread.npy"])[0]
rng = np.random.RandomState(1)
ref = rng.normal(0, 0.3, 9610).astype(np.float32)
ref[7] = 0.1
np.save("ref.npy", ref)
other = ref.copy()
other[3] += 0.0018  # as two static runs of 200 epochs on 2 and 3 ranks differ
np.save("spread.npy", other)
np.save("short.npy", ref[:100])
params = ref.copy()
params[7] += {"drift": 0.005, "lost": 0.77}[case]  # 0.77: Adam's moments lost once
td.compare(params, "ref.npy", None if spread == "none" else spread)
PY
run() { # case [spread]
	(cd "$T_DIR" && EX=$top_srcdir/examples/pytorch python3 check.py "$@") >"$T_DIR/$1${2:+-$2}" 2>&1
}
run drift
t_grep "^model matches reference: max \|dw\| = 0.005 .*static runs on other rank counts differ by 0.0018" \
	"$T_DIR/drift" "a long run's drift within 10 times the static runs' difference"
run drift none
t_grep "^model DIFFERS from reference: max \|dw\| = 0.005 " "$T_DIR/drift-none" \
	"the same drift without a second static run (the fixed tolerance)"
run lost
t_grep "^model DIFFERS from reference: max \|dw\| = 0.77" "$T_DIR/lost" "a lost optimizer state"
run lost short.npy && t_fail "a second static run of another shape was accepted: $(cat "$T_DIR/lost-short.npy")"
t_grep "^--compare-spread short.npy: \(100,\) parameters, the reference \(9610,\)" "$T_DIR/lost-short.npy" \
	"the refusal of a second static run of another shape"
# a missing file or a spread without its reference: refused before any
# training (argparse, exit 2), naming the option
ex=$top_srcdir/examples/pytorch/train_digits.py
(cd "$T_DIR" && python3 "$ex" --compare ref.npy --compare-spread nothere.npy) >"$T_DIR/missing" 2>&1
[ $? = 2 ] || t_fail "a missing --compare-spread file was not refused with exit 2: $(cat "$T_DIR/missing")"
t_grep "error: --compare-spread nothere.npy: no such file" "$T_DIR/missing" "the missing file named"
(cd "$T_DIR" && python3 "$ex" --compare-spread spread.npy) >"$T_DIR/alone" 2>&1
[ $? = 2 ] || t_fail "--compare-spread without --compare was not refused: $(cat "$T_DIR/alone")"
t_grep "error: --compare-spread needs --compare" "$T_DIR/alone" "--compare-spread without --compare"
t_log "drift 0.005 matches with a 0.0018 spread, not without; 0.77 differs; another shape and a missing file are refused"
t_cleanup 0
