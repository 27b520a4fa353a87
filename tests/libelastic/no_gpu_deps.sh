#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/no_gpu_deps.sh: libelastic.so loads on a host without CUDA or NCCL: none
# of its NEEDED entries names libcudart, libcuda or libnccl (gpu.c dlopens them on first
# use), and a program linked with it starts with no CUDA library on its load path.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_builddir:=$(cd "${PWD}/.." && pwd)}"
. "$here/../lib.sh"
lib=$top_builddir/libelastic/.libs/libelastic.so
[ -e "$lib" ] || t_fail "$lib is not built"
command -v readelf >/dev/null || t_skip "no readelf (binutils)"
t_scratch
readelf -d "$lib" >"$T_DIR/dyn" || t_fail "readelf -d $lib failed"
grep NEEDED "$T_DIR/dyn"
grep -q NEEDED "$T_DIR/dyn" || t_fail "readelf shows no NEEDED entry at all in $lib"
if grep NEEDED "$T_DIR/dyn" | grep -Eq 'libcudart|libcuda\.|libnccl'; then
	t_fail "libelastic.so needs a CUDA/NCCL library at load"
fi
if grep -Eq 'RPATH|RUNPATH' "$T_DIR/dyn" && grep -E 'RPATH|RUNPATH' "$T_DIR/dyn" | grep -q cuda; then
	t_fail "libelastic.so carries a CUDA run path"
fi
# the whole closure, as the dynamic loader resolves it
ldd "$lib" >"$T_DIR/ldd" 2>&1 || t_fail "ldd $lib failed"
if grep -Eq 'libcudart|libnccl' "$T_DIR/ldd"; then
	cat "$T_DIR/ldd"
	t_fail "ldd shows CUDA/NCCL in libelastic.so's closure"
fi
echo "libelastic.so: no CUDA or NCCL library needed at load"
exit 0
