#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/device/check.sh: the GPU path on one GPU, in one call on a machine with no
# Debian root, no Slurm and no ULFM Open MPI (the GPU machine). It takes Open MPI 5
# (ULFM) from the bundle that tests/device/bundle.sh makes, builds libelastic
# (with NCCL), the Python extension and the test programs there against that
# machine's own compiler, Python, CUDA and NCCL, and runs:
#   CPU side (everywhere): the bundle, the build, that the ranks load the bundle's
#     MPI, libelastic's load-time deps, a world change at size 1 (ULFM recovery),
#     the example on the CPU (the reference), pinned-shadow logic and step cost
#     on the CPU;
#   GPU side (SKIP with the reason where no GPU is visible): NCCL communicator +
#     elastic_gpu_allreduce on device buffers and its rebuild after a world
#     change at size 1, train_digits.py --device cuda against the CPU run, the
#     pinned host shadows (after each commit, on a redo, on a resume from a node
#     snapshot), the per-step cost against plain torch, two ranks on one GPU.
# One line per check (PASS:/FAIL:/SKIP: name ...), then "N passed, N failed, N
# skipped"; exit 1 when a check failed. Logs go under OUT (few files, so that
# a machine that hands back only a few gets them all): check.log, facts.txt,
# build.log, details.log (every check's log, each cut to its last 200 lines),
# logs.tar.gz.
#
# usage: tests/device/check.sh [--bundle DIR] [--out DIR] [--jobs N] [--keep]
#   --bundle  the bundle (default build-device/bundle)
#   --out     where the logs go (default $OUT, else build-device/out)
#   --jobs    parallel compiles (default: the number of cores)
#   --keep    keep the scratch directory (build tree, runs) and print its path
#   --deadline  seconds after which the checks not yet begun SKIP (default
#             400: the logs are written inside a limit of 8 minutes)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$src/build-device/bundle
out=${OUT:-$src/build-device/out}
jobs=$(nproc 2>/dev/null || echo 2)
keep=0 deadline=400
while [ $# -gt 0 ]; do
	case "$1" in
	--bundle) bundle=$(cd "$2" && pwd) || exit 2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--deadline) deadline=$2; shift 2 ;;
	-h | --help) sed -n '2,29p' "$0"; exit 0 ;;
	*) echo "check.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
W=$(mktemp -d /tmp/device-check.XXXXXX)
B=$W/build # the build tree, laid out as automake's (top_builddir of the tests)
mkdir -p "$W/logs" "$W/tmp" "$W/sm" "$W/shm"
exec > >(tee "$out/check.log") 2>&1
T0=$SECONDS

npass=0 nfail=0 nskip=0
pass() { echo "PASS: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP: $1 ($2)"; nskip=$((nskip + 1)); }
info() { echo "INFO: $*"; }
# 0 when check $1 may begin: time is left before the deadline
due() {
	[ $((SECONDS - T0)) -lt "$deadline" ] && return 0
	skip "$1" "out of time: ${deadline} s deadline passed (--deadline)"
	return 1
}
log_of() { echo "$W/logs/$1.log"; }
# the last line of file $1 that starts with $2, without it
last_of() { sed -n "s/^$2//p" "$1" 2>/dev/null | tail -n 1; }

finish() {
	local f
	{
		for f in "$W"/logs/*.log; do
			[ -e "$f" ] || continue
			echo "===== ${f##*/} ($(wc -l <"$f") lines; the last 200)"
			tail -n 200 "$f"
		done
	} >"$out/details.log" 2>&1
	tar -C "$W" -czf "$out/logs.tar.gz" logs 2>/dev/null
	echo "$npass passed, $nfail failed, $nskip skipped ($((SECONDS - T0)) s)"
	if [ $keep = 1 ]; then echo "scratch kept in $W"; else rm -rf "$W"; fi
	[ $nfail = 0 ]
}

# ---- what this machine has -------------------------------------------------
facts() {
	local py_inc
	py_inc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
	{
		echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo)"
		echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
		echo "cc: $(${CC:-cc} --version 2>/dev/null | head -n 1 || echo none)"
		echo "python: $(command -v python3) $(python3 -V 2>&1 | cut -d' ' -f2), headers: $py_inc/Python.h $([ -f "$py_inc/Python.h" ] && echo present || echo MISSING)"
		python3 - <<'PY' 2>&1 | sed 's/^/torch: /'
try:
    import torch
except Exception as e:
    print("not importable (%s)" % e)
else:
    cuda = torch.cuda.is_available()
    print("%s, CUDA %s, GPU %s, NCCL %s" % (
        torch.__version__, torch.version.cuda,
        torch.cuda.get_device_name(0) if cuda else "none visible",
        ".".join(map(str, torch.cuda.nccl.version())) if cuda else "-"))
PY
		echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1 || echo none)"
		echo "nvidia-smi: $(nvidia-smi -L 2>/dev/null | head -n 4 | paste -sd';' || true)"
		echo "bundle: $bundle ($(du -sh "$bundle" 2>/dev/null | cut -f1)), needs glibc >= $(sed -n 's/^glibc-needed: //p' "$bundle/MANIFEST" 2>/dev/null)"
		echo "git: $(git -C "$src" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
	} >"$out/facts.txt"
	sed 's/^/INFO: /' "$out/facts.txt"
}

# ---- the bundle's Open MPI ---------------------------------------------------
use_bundle() {
	local f n need have k v
	export OPAL_PREFIX=$bundle/ompi PRTE_PREFIX=$bundle/ompi PMIX_PREFIX=$bundle/pmix
	export PATH=$bundle/ompi/bin:$PATH
	# lib/sys holds common system libraries: used only where this machine lacks them
	mkdir -p "$W/syslib"
	for f in "$bundle"/lib/sys/*; do
		[ -e "$f" ] || continue
		n=${f##*/}
		ldconfig -p 2>/dev/null | grep -q " $n " || ln -sf "$f" "$W/syslib/$n"
	done
	export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	[ -n "$(ls "$W/syslib")" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$W/syslib
	# Debian's /etc/openmpi defaults (sysconfdir does not move with OPAL_PREFIX)
	while IFS='=' read -r k v; do
		k=$(echo "$k" | tr -d ' ') v=$(echo "$v" | tr -d ' ')
		[ -n "$k" ] && [ "${k#\#}" = "$k" ] && export "OMPI_MCA_$k=$v"
	done <"$bundle/ompi/etc/openmpi-mca-params.conf"
	# mpirun (given --prefix by OPAL_PREFIX) sets the ranks' LD_LIBRARY_PATH
	# to the prefix's lib alone: keep this one (the bundle, and the machine's
	# own entries, such as its CUDA driver's directory)
	export OMPI_MCA_mca_base_env_list=LD_LIBRARY_PATH
	# the testbed's settings (loopback, no coll/han under ULFM, root allowed)
	eval "$(bash "$src/testbed/cluster-inner.sh" env --ompi)"
	export TMPDIR=$W/tmp OMPI_MCA_btl_sm_backing_directory=$W/sm
	export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONDONTWRITEBYTECODE=1
	need=$(sed -n 's/^glibc-needed: //p' "$bundle/MANIFEST")
	have=$(getconf GNU_LIBC_VERSION | awk '{ print $2 }')
	if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
		echo "glibc $have here, the bundle's Open MPI needs $need"
		return 1
	fi
	local oi
	oi=$(ompi_info 2>&1)
	if ! grep -q 'FT MPI support: yes' <<<"$oi"; then
		echo "$oi" | head -n 5
		echo "the bundle's ompi_info does not say 'FT MPI support: yes': $(echo "$oi" | grep -m1 -i 'error\|support' | cut -c1-160)"
		return 1
	fi
	grep -E 'Open MPI:|FT MPI support' <<<"$oi"
	mpirun --version 2>&1 | head -n 1
}
MPIRUN="mpirun --with-ft ulfm --oversubscribe --bind-to none"

# ---- the build (the device's compiler, Python, CUDA, NCCL) ------------------
# Sets have_cuda, have_nccl, have_py and the reasons why not.
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -d "$CUDA" ] || ! command -v nvcc >/dev/null || CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
have_cuda=no have_nccl=no have_py=no why_cuda="" why_nccl="" why_py=""
find_nccl() { # prints "INCDIR LIBDIR": the NCCL torch loads (its wheel) first
	python3 - "$CUDA" "$bundle" <<'PY'
import glob, os, sys
cuda, bundle = sys.argv[1], sys.argv[2]
libs = []
try:
    import nvidia
    for p in nvidia.__path__:
        libs += sorted(glob.glob(os.path.join(p, "**", "libnccl.so.2"), recursive=True))
except Exception:
    pass
libs += glob.glob(os.path.join(cuda, "lib64", "libnccl.so.2"))
libs += glob.glob("/usr/lib/x86_64-linux-gnu/libnccl.so.2")
for lib in libs:
    d = os.path.dirname(lib)
    for inc in (os.path.join(d, "..", "include"), os.path.join(cuda, "include"),
                os.path.join(bundle, "include", "nccl-fallback")):
        if os.path.exists(os.path.join(inc, "nccl.h")):
            print(os.path.realpath(inc), d)
            sys.exit(0)
sys.exit(1)
PY
}

build() {
	local b=$B cc=${CC:-cc} f cflags inc nccl_inc="" nccl_lib="" major py_inc srcs
	cflags="-std=gnu11 -O2 -g -fPIC -pthread -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror=implicit-function-declaration"
	mkdir -p "$b/obj" "$b/libelastic/.libs" "$b/tests/libelastic" "$b/examples" "$b/python/slurm_elastic"
	if [ -f "$CUDA/include/cuda_runtime_api.h" ] && ls "$CUDA"/lib64/libcudart.so* >/dev/null 2>&1; then
		have_cuda=yes
		major=$(sed -n 's/^#define CUDART_VERSION *\([0-9]*\).*/\1/p' "$CUDA/include/cuda_runtime_api.h")
		major=$((major / 1000))
		if read -r nccl_inc nccl_lib < <(find_nccl); then
			have_nccl=yes
		else
			why_nccl="no libnccl.so.2 (nvidia-nccl wheel, $CUDA/lib64) found"
		fi
	else
		why_cuda="no CUDA runtime in $CUDA (set CUDA_HOME)"
		why_nccl=$why_cuda
	fi
	{
		echo "/* written by tests/device/check.sh */"
		echo "#define _GNU_SOURCE 1"
		echo '#define PACKAGE_VERSION "0.1.0-device"'
		[ -f "$bundle/include/pmix.h" ] && echo "#define HAVE_PMIX 1"
		if [ $have_cuda = yes ]; then
			echo "#define HAVE_CUDA 1"
			echo "#define ELASTIC_CUDART_MAJOR $major"
			echo "#define ELASTIC_CUDA_LIBDIR \"$CUDA/lib64\""
		fi
		if [ $have_nccl = yes ]; then
			echo "#define HAVE_NCCL 1"
			echo "#define ELASTIC_NCCL_LIBDIR \"$nccl_lib\""
			grep -q ncclCommShrink "$nccl_inc/nccl.h" && echo "#define HAVE_NCCL_COMM_SHRINK 1"
		fi
	} >"$b/config.h"
	echo "config.h:"
	cat "$b/config.h"
	[ $have_nccl = yes ] && echo "NCCL: $nccl_inc/nccl.h ($(sed -n 's/^#define NCCL_VERSION_CODE *//p' "$nccl_inc/nccl.h")), $nccl_lib/libnccl.so.2"
	inc="-I$b -I$src/libelastic -I$src/libelastic/include -I$src/common -I$bundle/include"
	[ $have_cuda = yes ] && inc="$inc -I$CUDA/include"
	[ $have_nccl = yes ] && inc="$inc -I$nccl_inc"
	# libelastic as libelastic/Makefile.am builds it: every source but the
	# GPU file of the other kind, the no-NCCL stubs only without NCCL, and
	# common's contract, write-all loop and rank-end report (their symbols
	# hidden)
	srcs="$src/common/contract.c $src/common/io.c $src/common/rankend.c"
	for f in "$src"/libelastic/*.c; do
		case "${f##*/}" in
		gpu.c) [ $have_cuda = yes ] || continue ;;
		gpu_none.c) [ $have_cuda = no ] || continue ;;
		nccl_none.c) [ $have_nccl = no ] || continue ;;
		esac
		srcs="$srcs $f"
	done
	# shellcheck disable=SC2086,SC2016
	printf '%s\n' $srcs | xargs -P "$jobs" -I{} sh -c '
		f={}; o=$0/obj/$(basename "$f" .c).o
		case "$f" in */common/*.c) extra=-fvisibility=hidden ;; *) extra= ;; esac
		exec $1 $2 $extra $3 -c "$f" -o "$o"' "$b" "$cc" "$cflags" "$inc" || return 1
	printf '{ global: elastic_[a-z]*; local: *; };\n' >"$b/obj/elastic.map"
	local pmix="" gpulibs=""
	[ -f "$bundle/include/pmix.h" ] && pmix=-lpmix
	[ $have_nccl = yes ] && gpulibs="-L$nccl_lib -l:libnccl.so.2 -Wl,-rpath,$nccl_lib"
	[ $have_cuda = yes ] && gpulibs="$gpulibs -L$CUDA/lib64 -lcudart -Wl,-rpath,$CUDA/lib64"
	# shellcheck disable=SC2086
	$cc -shared -pthread -o "$b/libelastic/.libs/libelastic.so.0" -Wl,-soname,libelastic.so.0 \
		-Wl,--version-script="$b/obj/elastic.map" "$b"/obj/*.o -L"$bundle/lib" -lmpi -lhwloc \
		$pmix -lm -ldl || return 1
	ln -sf libelastic.so.0 "$b/libelastic/.libs/libelastic.so"
	local link="-L$b/libelastic/.libs -lelastic -Wl,-rpath,$b/libelastic/.libs -L$bundle/lib -lmpi"
	# shellcheck disable=SC2086
	$cc $cflags $inc "$src/examples/elastic_train.c" -o "$b/examples/elastic_train" $link -lm || return 1
	# shellcheck disable=SC2086
	$cc $cflags $inc "$src/tests/libelastic/nccl_comm.c" -o "$b/tests/libelastic/nccl_comm" $link \
		$gpulibs || return 1
	# the Python extension and the package, as python/Makefile.am lays it out
	py_inc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
	if [ -f "$py_inc/Python.h" ]; then
		# shellcheck disable=SC2086
		$cc $cflags -Wno-missing-prototypes -fno-strict-aliasing $inc -I"$py_inc" -shared \
			"$src/python/_core.c" -o "$b/python/slurm_elastic/_core.so" $link || return 1
		for f in "$src"/python/slurm_elastic/*.py; do ln -sf "$f" "$b/python/slurm_elastic/"; done
		have_py=yes
	else
		why_py="no Python.h for $(python3 -V 2>&1) in '$py_inc': carry its headers"
	fi
	return 0
}

# ---- checks ------------------------------------------------------------------
gpus=0 why_gpu=""
probe_gpu() {
	local n
	n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
	if [ "$n" = 0 ]; then
		why_gpu="no GPU visible (nvidia-smi lists none)"
	elif ! python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
		why_gpu="nvidia-smi lists $n GPU(s) but torch.cuda.is_available() is False"
	else
		gpus=$n
	fi
}
# Why a GPU check cannot run here ("" when it can): no GPU, no CUDA/NCCL
# build, no Python binding (for the Python ones).
gpu_blocker() { # [py]
	[ -n "$why_gpu" ] && { echo "$why_gpu"; return; }
	[ $have_nccl = yes ] || { echo "libelastic built without NCCL: $why_nccl"; return; }
	[ "${1:-}" = py ] && [ $have_py = no ] && echo "$why_py"
}

# 0 when check $1 on device $2 may begin: time is left and, on cuda, a GPU
# and the Python binding built for it are here (else it SKIPs, saying why).
may_run() { # name device
	local why
	due "$1" || return 1
	[ "$2" = cuda ] || return 0
	why=$(gpu_blocker py)
	[ -z "$why" ] || { skip "$1" "$why"; return 1; }
}

# A test script of the tree (tests/*/X.sh): exit 0/1/77 as PASS/FAIL/SKIP.
c_tree_test() { # name script
	local l rc
	due "$1" || return
	l=$(log_of "$1")
	(cd "$W" && top_srcdir=$src top_builddir=$B timeout -s KILL 300 bash "$src/$2") >"$l" 2>&1
	rc=$?
	case $rc in
	0) pass "$1 ($2: $(grep -v '^\[' "$l" | tail -n 1 | cut -c1-160))" ;;
	77) skip "$1" "$2: $(last_of "$l" '.*SKIP: ')" ;;
	*) fail "$1 ($2 exit $rc: $(last_of "$l" '.*FAIL: ' | cut -c1-200))" ;;
	esac
}

# The ranks load the bundle's Open MPI, not one of this machine's.
c_self_contained() {
	local l
	due self_contained || return
	l=$(log_of self_contained)
	PYTHONPATH=$B/python timeout -s KILL 120 $MPIRUN -np 1 python3 -c '
import sys
import slurm_elastic as se
with se.Context() as ctx:
    maps = open("/proc/self/maps").read().split("\n")
libs = sorted({l.split()[-1] for l in maps if "/lib" in l and ".so" in l})
mpi = [p for p in libs if any(k in p.rsplit("/", 1)[-1] for k in
       ("libmpi", "libopen-pal", "libpmix", "libprrte", "libhwloc", "libevent"))]
print("\n".join(mpi))
out = [p for p in mpi if not p.startswith(sys.argv[1])]
print("OUTSIDE " + " ".join(out) if out else "OK %d MPI libraries, all from the bundle" % len(mpi))
' "$(readlink -f "$bundle")" >"$l" 2>&1
	if grep -q '^OK ' "$l"; then
		pass "self_contained (a rank: $(last_of "$l" 'OK '))"
	else
		fail "self_contained ($(grep -m1 '^OUTSIDE\|rror' "$l" | cut -c1-200))"
	fi
}

# A world change at size 1 (recovery through the bundle's ULFM) and, with a
# GPU, the NCCL communicator rebuilt after it.
c_world_change() {
	local l rc why
	due world_change || return
	l=$(log_of world_change)
	ELASTIC_DEBUG=3 timeout -s KILL 120 $MPIRUN -np 1 "$B/tests/libelastic/nccl_comm" --change-at 2 >"$l" 2>&1
	rc=$?
	if [ $rc = 137 ]; then
		fail "world_change (nccl_comm --change-at 2 hung: killed after 120 s)"
		return
	fi
	if grep -q 'world change at step 2: redone at size 1' "$l"; then
		pass "world_change_cpu (a simulated world change at step 2, size 1: ULFM recovery, step redone; $(grep -m1 'recovered: size' "$l" | sed 's/.*\(recovered: .*\)/\1/' | cut -c1-90))"
		why=$(last_of "$l" 'SKIP: ')
		skip nccl_rebuild "${why_gpu:-$why}"
	elif grep -q 'NCCL allreduce correct on 1 ranks.*after a world change (communicator rebuilt)' "$l" &&
		grep -q 'NCCL communicator \(aborted; rebuilt on next use\|shrunk\)' "$l"; then
		pass "world_change_cpu (ULFM recovery at size 1: $(grep -m1 'recovered: size' "$l" | sed 's/.*\(recovered: .*\)/\1/' | cut -c1-90))"
		pass "nccl_rebuild (elastic_nccl_comm + elastic_gpu_allreduce on device buffers, size 1; after the change: $(grep -m1 -o 'NCCL communicator [a-z; ]*' "$l"), allreduce correct again)"
	elif grep -q '^SKIP: ' "$l" && [ $have_nccl = no ]; then
		skip world_change_cpu "libelastic built without NCCL: nccl_comm has no --change-at path ($why_nccl)"
		skip nccl_rebuild "$why_nccl"
	else
		fail "world_change (exit $rc: $(grep -m1 -i 'error\|nccl_comm:' "$l" | cut -c1-200))"
	fi
}

# train_digits.py through its command line, on 1 rank: $1 = cpu or cuda.
digits() {
	PYTHONPATH=$B/python timeout -s KILL 300 $MPIRUN -np 1 python3 "$src/examples/pytorch/train_digits.py" \
		--epochs 4 --device "$1" --out "$W/digits-$1.npy" >"$(log_of "digits_$1")" 2>&1
}
digits_summary() { # log: "N steps, loss A -> B, accuracy C"
	local first last
	first=$(sed -n 's/^step 0 .* loss \([0-9.]*\).*/\1/p' "$1" | head -n 1)
	last=$(sed -n 's/^epoch .* loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p' "$1" | tail -n 1)
	echo "$(grep -o '^done: [0-9]* steps' "$1" | cut -d' ' -f2) steps, loss ${first:-?} -> ${last% *}, test accuracy ${last#* }"
}
c_digits_cpu() {
	local l
	due digits_cpu || return
	l=$(log_of digits_cpu)
	if digits cpu && [ -s "$W/digits-cpu.npy" ] && grep -q '^done: .*applied once: yes' "$l"; then
		pass "digits_cpu (train_digits.py --device cpu, 1 rank, 4 epochs: $(digits_summary "$l"))"
	else
		fail "digits_cpu (train_digits.py --device cpu: $(tail -n 1 "$l" | cut -c1-200))"
	fi
}
c_digits_cuda() {
	local l why
	due digits_cuda || return
	why=$(gpu_blocker py)
	[ -z "$why" ] || { skip digits_cuda "$why"; return; }
	l=$(log_of digits_cuda)
	if ! { digits cuda && [ -s "$W/digits-cuda.npy" ] && grep -q '^done: .*applied once: yes' "$l"; }; then
		fail "digits_cuda (train_digits.py --device cuda: $(tail -n 1 "$l" | cut -c1-200))"
		return
	fi
	pass "digits_cuda (train_digits.py --device cuda end to end, 1 rank, 4 epochs: $(digits_summary "$l"))"
	[ -s "$W/digits-cpu.npy" ] || { fail "digits_cuda_vs_cpu (no CPU run to compare with)"; return; }
	python3 - "$W/digits-cuda.npy" "$W/digits-cpu.npy" >>"$l" 2>&1 <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = np.abs(a - b)
ok = a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=1e-4)
print("%s max |dw| %.3g, |dw|/|w| %.3g over %d parameters" % (
    "OK" if ok else "BAD", d.max(), np.linalg.norm(a - b) / np.linalg.norm(b), a.size))
PY
	if grep -q '^OK ' "$l"; then
		pass "digits_cuda_vs_cpu (final model CUDA vs CPU: $(last_of "$l" 'OK '); tolerance rtol 1e-3, atol 1e-4)"
	else
		fail "digits_cuda_vs_cpu (final model CUDA vs CPU: $(last_of "$l" 'BAD ' | cut -c1-160); tolerance rtol 1e-3, atol 1e-4)"
	fi
}

# Pinned host shadows (tests/device/shadows.py): after each commit, on a redo,
# on a resume from a node snapshot. $1 = cpu or cuda.
c_shadows() {
	local dev=$1 name l
	name=shadows_$dev
	may_run "$name" "$dev" || return
	l=$(log_of "$name")
	rm -rf "$W/shm"/*
	export ELASTIC_JOB_ID=device-shadows-$dev ELASTIC_SHM_DIR=$W/shm
	PYTHONPATH=$B/python timeout -s KILL 180 $MPIRUN -np 1 python3 "$src/tests/device/shadows.py" \
		--device "$dev" --phase train --state "$W/shadows-$dev.npz" >"$l" 2>&1
	PYTHONPATH=$B/python timeout -s KILL 180 $MPIRUN -np 1 python3 "$src/tests/device/shadows.py" \
		--device "$dev" --phase resume --state "$W/shadows-$dev.npz" >>"$l" 2>&1
	unset ELASTIC_JOB_ID ELASTIC_SHM_DIR
	if grep -q '^SKIP ' "$l"; then
		skip "$name" "$(last_of "$l" 'SKIP ')"
	elif [ "$(grep -c '^OK ' "$l")" = 3 ] && ! grep -q '^BAD ' "$l"; then
		pass "$name ($(grep '^OK ' "$l" | cut -d' ' -f2- | paste -sd';' | cut -c1-300))"
	else
		fail "$name ($(grep -m2 '^BAD \|Error' "$l" | paste -sd';' | cut -c1-250); $(grep -c '^OK ' "$l") of 3 parts OK)"
	fi
}

# Per-step cost of ElasticDataParallel against plain torch (tests/device/step_cost.py).
c_step_cost() { # dev widths steps
	local dev=$1 name l w
	name=step_cost_$dev
	may_run "$name" "$dev" || return
	l=$(log_of "$name")
	: >"$l"
	for w in $2; do
		PYTHONPATH=$B/python timeout -s KILL 180 $MPIRUN -np 1 python3 "$src/tests/device/step_cost.py" \
			--device "$dev" --width "$w" --steps "$3" >>"$l" 2>&1
	done
	if [ "$(grep -c '^COST ' "$l")" = "$(echo $2 | wc -w)" ]; then
		pass "$name ($(grep '^COST ' "$l" | cut -d' ' -f2- | paste -sd';'))"
	else
		fail "$name ($(grep -m1 -i 'error' "$l" | cut -c1-200))"
	fi
}

# slurm_elastic.torch (the DDP layer) on device $1, 1 rank: the DDP scripts of
# tests/python/ddp_checks.py (mean loss, a DataLoader with workers, SGD with
# momentum, a per-step StepLR, clipping, an in-step weight edit): an MLP, BatchNorm
# + Dropout, a transformer in bf16 autocast, and a launch SIGTERMed in step 15 and
# resumed from its node snapshot. On cuda the models are compared with the CPU's.
ddp_run() { # scenario device [VAR=value...]
	local sc=$1 dev=$2
	shift 2
	mkdir -p "$W/ddp-$dev"
	env "$@" DEVICE="$dev" EPOCHS=3 PYTHONPATH="$B/python" timeout -s KILL 180 $MPIRUN -np 1 \
		python3 "$src/tests/python/ddp_checks.py" "$sc" "$W/ddp-$dev" \
		>"$(log_of "ddp_$dev")".$sc 2>&1
	cat "$(log_of "ddp_$dev")".$sc >>"$(log_of "ddp_$dev")"
}
c_ddp() { # device
	local dev=$1 name l sc
	name=ddp_$dev
	may_run "$name" "$dev" || return
	l=$(log_of "$name")
	: >"$l"
	rm -rf "$W/shm"/*
	for sc in exact1 bn lm1; do ddp_run $sc "$dev"; done
	ddp_run exact_stop "$dev" ELASTIC_JOB_ID="ddp-$dev" ELASTIC_SHM_DIR="$W/shm" \
		ELASTIC_SNAPSHOT_EVERY=1 STOP_STEP=15
	ddp_run exact_resume "$dev" ELASTIC_JOB_ID="ddp-$dev" ELASTIC_SHM_DIR="$W/shm" \
		ELASTIC_SNAPSHOT_EVERY=1
	python3 - "$W" "$dev" >>"$l" 2>&1 <<'PY'
import os, re, sys
import numpy as np
w, dev = sys.argv[1], sys.argv[2]
d = os.path.join(w, "ddp-" + dev)
bad, said = [], []

def text(sc):
    p = os.path.join(w, "logs", "ddp_%s.log.%s" % (dev, sc))
    return open(p).read() if os.path.exists(p) else ""

def lrs(sc):
    return dict(re.findall(r"^LR step (\d+) (\S+)", text(sc), re.M))

for sc in ("exact1", "bn", "lm1", "exact_resume"):
    if "OK %s rank 0" % sc not in text(sc):
        t = [l for l in text(sc).splitlines() if "FAIL" in l or "Error" in l or "rror:" in l]
        bad.append("%s: no OK line (%s)" % (sc, (t or ["see details.log"])[-1][:160]))
if "TERM rank 0 at step 15" not in text("exact_stop"):
    bad.append("exact_stop: the launch did not end in step 15")
if "RESUMED at step 15 epoch 1 size 1" not in text("exact_resume"):
    bad.append("exact_resume: no 'RESUMED at step 15 epoch 1 size 1'")
ref_lr, lr = lrs("exact1"), {**lrs("exact_stop"), **lrs("exact_resume")}
if not ref_lr or lr != ref_lr:
    bad.append("stop + resume: the learning rates of the %d committed steps differ from the "
               "uninterrupted run's %d" % (len(lr), len(ref_lr)))
try:
    a, b = np.load(d + "/exact_resume.0.npy"), np.load(d + "/exact1.0.npy")
    said.append("stop at step 15 + resume vs uninterrupted: max |dw| %.3g" % np.abs(a - b).max())
    if np.abs(a - b).max() > 1e-5:
        bad.append("the resumed model differs from the uninterrupted one by %.3g"
                   % np.abs(a - b).max())
except Exception as e:
    bad.append("no final model to compare (%s)" % e)
steps = re.findall(r"^STEPS (\d+)", text("bn"), re.M)
said.append("BatchNorm: %s steps, buffers kept" % (steps[-1] if steps else "?"))
ev = re.findall(r"^EVAL loss (\S+)", text("lm1"), re.M)
said.append("transformer bf16 eval loss %s" % (ev[-1] if ev else "?"))
if dev != "cpu":
    c = os.path.join(w, "ddp-cpu")
    try:
        a, b = np.load(d + "/exact1.0.npy"), np.load(c + "/exact1.0.npy")
        ok = a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=1e-4)
        said.append("MLP %s vs cpu: max |dw| %.3g, |dw|/|w| %.3g (rtol 1e-3, atol 1e-4)" % (
            dev, np.abs(a - b).max(), np.linalg.norm(a - b) / np.linalg.norm(b)))
        if not ok:
            bad.append("the %s model differs from the CPU's beyond the tolerance" % dev)
        ec = re.findall(r"^EVAL loss (\S+)", open(os.path.join(w, "logs", "ddp_cpu.log.lm1")).read(), re.M)
        said.append("transformer eval loss %s vs cpu %s" % (ev[-1] if ev else "?", ec[-1] if ec else "?"))
        if not ev or not ec or abs(float(ev[-1]) - float(ec[-1])) > 0.05:
            bad.append("the transformer's eval loss differs from the CPU's by more than 0.05")
    except Exception as e:
        bad.append("no CPU run to compare with (%s)" % e)
print(("BAD " + "; ".join(bad)) if bad else ("OK " + "; ".join(said)))
PY
	if grep -q '^OK ' "$l"; then
		pass "$name (slurm_elastic.torch DDP on $dev, 1 rank: $(last_of "$l" 'OK '))"
	else
		fail "$name ($(last_of "$l" 'BAD ' | cut -c1-300))"
	fi
}

# Per-step cost of slurm_elastic.torch's DDP against torch's DDP over NCCL on the
# same GPU (bench/ddp_step.py): ResNet widths 64 and 512 on 32x32 images, global batch 256.
c_ddp_cost_cuda() {
	local l w r mode
	may_run ddp_cost_cuda cuda || return
	l=$(log_of ddp_cost_cuda)
	: >"$l"
	for w in 64 512; do
		for r in 1 2; do
			for mode in nccl elastic; do
				MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29400 + RANDOM % 500)) RANK=0 WORLD_SIZE=1 \
					PYTHONPATH=$B/python timeout -s KILL 120 $MPIRUN -np 1 python3 \
					"$src/bench/ddp_step.py" $mode 100 $w 256 cuda 32 2>&1 |
					sed "s/^/width $w round $r /" >>"$l"
			done
		done
	done
	python3 - "$l" >>"$l.sum" 2>&1 <<'PY'
import collections, statistics, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) > 6 and w[5] in ("step_ms", "keep_ms"):
        v[(w[1], w[4], w[5])].append(float(w[6]))
out = []
for width in ("64", "512"):
    n, e = v.get((width, "nccl", "step_ms")), v.get((width, "elastic", "step_ms"))
    k = v.get((width, "elastic", "keep_ms"))
    if not n or not e:
        print("BAD width %s: no figure for %s" % (width, "nccl" if not n else "elastic"))
        sys.exit(1)
    out.append("width %s: torch DDP nccl %.2f ms, slurm_elastic %.2f ms (%.2fx), state keep %.2f ms"
               % (width, statistics.median(n), statistics.median(e),
                  statistics.median(e) / statistics.median(n), statistics.median(k or [0])))
print("OK " + "; ".join(out))
PY
	cat "$l.sum" >>"$l"
	if grep -q '^OK ' "$l"; then
		pass "ddp_cost_cuda ($(last_of "$l" 'OK '); medians of 2 rounds of 100 steps)"
	else
		fail "ddp_cost_cuda ($(grep -m1 '^BAD \|rror' "$l" | cut -c1-250))"
	fi
}

# Two ranks on one GPU: refused, with a message that says so, not a hang.
c_two_ranks_one_gpu() {
	local l rc why msg
	due two_ranks_one_gpu || return
	why=$(gpu_blocker)
	[ -z "$why" ] || { skip two_ranks_one_gpu "$why"; return; }
	l=$(log_of two_ranks_one_gpu)
	CUDA_VISIBLE_DEVICES=0 timeout -s KILL 90 $MPIRUN -np 2 -x CUDA_VISIBLE_DEVICES \
		"$B/tests/libelastic/nccl_comm" >"$l" 2>&1
	rc=$?
	msg=$(grep -m1 'elastic_nccl_comm' "$l" | cut -c1-220)
	if [ $rc = 137 ]; then
		fail "two_ranks_one_gpu (hung: killed after 90 s)"
	elif [ $rc = 0 ]; then
		fail "two_ranks_one_gpu (not refused: 2 ranks ran NCCL on one GPU)"
	elif grep -qiE 'duplicate GPU|same GPU|one GPU per rank|both on GPU' <<<"$msg"; then
		pass "two_ranks_one_gpu (refused, exit $rc: $msg)"
	else
		fail "two_ranks_one_gpu (refused, exit $rc, but the message does not say why: ${msg:-$(grep -m1 -i error "$l" | cut -c1-200)})"
	fi
}

# ---- the run -----------------------------------------------------------------
# cluster-inner.sh (the Open MPI settings) asks hostname, which a bare image may lack
command -v hostname >/dev/null || { hostname() { uname -n; }; export -f hostname; }
echo "tests/device/check.sh on $(uname -n) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [ ! -f "$bundle/MANIFEST" ]; then
	facts
	fail "bundle (no bundle at $bundle: make it with tests/device/bundle.sh and carry it)"
	finish
	exit
fi
use_bundle >"$(log_of bundle)" 2>&1
bundle_rc=$?
facts # (after use_bundle: a torch that links libmpi, as Debian's, loads the bundle's)
if [ $bundle_rc = 0 ]; then
	pass "bundle (Open MPI $(sed -n 's/^ *Open MPI: *//p' "$(log_of bundle)" | head -n 1), FT MPI support yes; from $bundle)"
else
	fail "bundle ($(tail -n 1 "$(log_of bundle)" | cut -c1-200))"
	finish
	exit
fi
if build >"$out/build.log" 2>&1; then
	pass "build (libelastic: CUDA $have_cuda, NCCL $have_nccl; Python extension $have_py; $(($(grep -c 'warning:' "$out/build.log"))) warnings; log build.log)"
else
	fail "build ($(grep -m1 'error' "$out/build.log" | cut -c1-200))"
	finish
	exit
fi
[ $have_py = yes ] || fail "build_python ($why_py)"
probe_gpu
[ -n "$why_gpu" ] || info "GPUs: $gpus ($(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -n 1))"
# CPU side
[ $have_py = yes ] && c_self_contained
c_tree_test no_gpu_deps tests/libelastic/no_gpu_deps.sh
c_world_change
c_tree_test nccl_comm tests/libelastic/nccl_comm.sh
if [ $have_py = yes ]; then
	c_tree_test python_gpu tests/python/gpu.sh
	c_digits_cpu
	c_ddp cpu
	c_shadows cpu
	c_step_cost cpu 128 20
fi
# GPU side
c_ddp cuda
c_ddp_cost_cuda
c_digits_cuda
c_shadows cuda
c_step_cost cuda "128 4096" 50
c_two_ranks_one_gpu
finish
