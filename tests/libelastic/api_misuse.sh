#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/api_misuse.sh: run api_misuse (bad input, wrong order, redo without
# failure, rebuild without failure, resume from a node snapshot) under mpirun, 2 ranks.
set -u
. "$(dirname "$0")/common.sh"
prog=$top_builddir/tests/libelastic/api_misuse
[ -x "$prog" ] || t_fail "$prog is not built"
t_scratch
t_mpi_scratch
timeout -s KILL 60 $MPIRUN -np 2 "$prog" "$T_DIR" >"$T_DIR/out" 2>&1
rc=$?
cat "$T_DIR/out"
[ $rc = 137 ] && t_fail "api_misuse hung (60 s)"
[ $rc = 0 ] || t_fail "api_misuse failed (exit $rc)"
t_grep '^api_misuse: [0-9]+ checks per rank, 0 failed' "$T_DIR/out" "all checks passed"
# GPU binding: off unless asked (a process's own threads keep their cores)
ELASTIC_DEBUG=3 timeout -s KILL 60 $MPIRUN -np 1 "$TRAIN" --epochs 1 --quiet >"$T_DIR/nobind" 2>&1 ||
	{ cat "$T_DIR/nobind"; t_fail "elastic_train -np 1 failed"; }
t_grep 'binding left alone \(ELASTIC_BIND=gpu' "$T_DIR/nobind" "no binding by default"
# asked (ELASTIC_BIND=gpu): bound near the GPU, or left alone with the reason
ELASTIC_BIND=gpu ELASTIC_DEBUG=3 timeout -s KILL 60 $MPIRUN -x ELASTIC_BIND -np 1 "$TRAIN" --epochs 1 --quiet \
	>"$T_DIR/bind" 2>&1 || { cat "$T_DIR/bind"; t_fail "elastic_train -np 1 failed"; }
t_grep 'bound to cores .* near GPU|binding left alone: .+' "$T_DIR/bind" "binding decision logged"
t_log "$(grep -Eo '(bound to cores|binding left alone).*' "$T_DIR/bind" | head -1)"
# a value it does not know fails elastic_init with the variable's name
ELASTIC_BIND=cores timeout -s KILL 60 $MPIRUN -x ELASTIC_BIND -np 1 "$TRAIN" --epochs 1 --quiet \
	>"$T_DIR/badbind" 2>&1 && t_fail "ELASTIC_BIND=cores was accepted"
t_grep "ELASTIC_BIND='cores'" "$T_DIR/badbind" "bad ELASTIC_BIND refused"
exit 0
