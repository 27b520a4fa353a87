#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/device/bundle.sh: makes the bundle that tests/device/check.sh needs on a
# machine with no Debian root (the GPU machine): the Open MPI 5 (ULFM) runtime
# of the testbed root (libraries, mpirun/prterun/prted/ompi_info, the PMIx,
# PRRTE, hwloc, libevent, libfabric and UCX libraries they load, help files)
# and the headers that libelastic and python/_core.c are built against there
# (mpi.h, mpi-ext.h, hwloc, PMIx). Copied out of the testbed root's installed
# Debian 13 packages, so the bundle is exactly what the testbed tests run.
#
# usage: tests/device/bundle.sh [--out DIR]   (as root; default build-device/bundle)
#   The root is made first when it is missing (testbed/run). The bundle must
#   stay under the device's 64 MiB carry limit; the script checks that and
#   that every library the bundle's programs load is in it (or is glibc's).
#        tests/device/bundle.sh --try [CHECK-ARGS...]
#   Runs tests/device/check.sh against build-device/bundle inside the testbed
#   root with the root's own Open MPI, PMIx, PRRTE, hwloc, libevent, libfabric
#   and UCX (libraries, programs, headers, help files) hidden, as on the GPU
#   machine: what works there came from the bundle.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
out=$src/build-device/bundle
limit=$((64 * 1024 * 1024))

# The libraries the GPU machine has itself: glibc's. Everything else the
# programs load travels in the bundle.
glibc_re='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil)\.so'
# Common system libraries: carried in lib/sys, put on the path only where the
# device lacks them (check.sh), so that its own copies stay in use.
sys_re='^(libz|libudev|libcap)\.so'

die() {
	printf 'bundle: error: %s\n' "$*" >&2
	exit 1
}
say() { printf '[bundle %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Inside the root: copy what the bundle holds into $1.
in_root() {
	local d=$1 L=/usr/lib/x86_64-linux-gnu f n seeds
	local inc=$L/openmpi/include pmix=$L/pmix2
	rm -rf "$d"
	mkdir -p "$d/lib/sys" "$d/ompi/bin" "$d/ompi/share" "$d/ompi/etc" "$d/pmix/lib/pmix" \
		"$d/pmix/share" "$d/include/openmpi/mpiext" "$d/include/nccl-fallback"
	# programs: mpirun is Debian's mpirun.openmpi (the alternatives link's target)
	cp -L /usr/bin/mpirun.openmpi "$d/ompi/bin/mpirun"
	ln -s mpirun "$d/ompi/bin/mpiexec"
	for f in prterun prted prte ompi_info prte_info pterm.openmpi; do
		[ -e "/usr/bin/$f" ] && cp -L "/usr/bin/$f" "$d/ompi/bin/${f%.openmpi}"
	done
	cp -L "$pmix"/lib/pmix/*.so "$d/pmix/lib/pmix/"
	# The libraries: the closure of what the programs and libmpi load, by
	# the names the loader asks for.
	seeds="$L/libmpi.so.40 $L/libhwloc.so.15 $L/libpmix.so.2 $(ls "$d"/ompi/bin/* "$d"/pmix/lib/pmix/*.so)"
	# shellcheck disable=SC2086
	for f in $seeds; do ldd "$f"; done | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
		while read -r n f; do
			[[ $n =~ $glibc_re ]] && continue
			if [[ $n =~ $sys_re ]]; then cp -L "$f" "$d/lib/sys/$n"; else cp -L "$f" "$d/lib/$n"; fi
		done
	for n in libmpi.so.40 libhwloc.so.15 libpmix.so.2; do
		[ -e "$d/lib/$n" ] || cp -L "$L/$n" "$d/lib/$n"
	done
	ln -s libmpi.so.40 "$d/lib/libmpi.so"
	ln -s libhwloc.so.15 "$d/lib/libhwloc.so"
	ln -s libpmix.so.2 "$d/lib/libpmix.so"
	# help files and defaults (OPAL_PREFIX, PRTE_PREFIX, PMIX_PREFIX find them)
	cp -a /usr/share/openmpi /usr/share/prte "$d/ompi/share/"
	cp -a "$pmix/share/pmix" "$d/pmix/share/"
	cp /etc/openmpi/openmpi-mca-params.conf "$d/ompi/etc/"
	# headers for building libelastic, the Python extension and the tests
	cp "$inc/mpi.h" "$inc/mpi-ext.h" "$inc/mpi_portable_platform.h" "$d/include/"
	cp "$inc"/openmpi/mpiext/*_c.h "$d/include/openmpi/mpiext/"
	cp -a /usr/include/hwloc.h /usr/include/hwloc "$d/include/"
	cp -a "$pmix"/include/pmix*.h "$d/include/"
	[ -d "$pmix/include/pmix" ] && cp -a "$pmix/include/pmix" "$d/include/"
	# a NCCL header for a device whose NCCL has none (the host's CUDA tree)
	[ -f /usr/local/cuda/include/nccl.h ] && cp /usr/local/cuda/include/nccl.h "$d/include/nccl-fallback/"
	find "$d" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec strip --strip-unneeded {} + 2>/dev/null || true
	_manifest "$d" >"$d/MANIFEST"
}

# What is in the bundle: packages and versions, the newest glibc symbol
# version any file needs (the device's glibc must be at least that).
_manifest() {
	local d=$1 f need
	echo "slurm-elastic device bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) from the testbed root"
	echo "root: $(cat /etc/debian_version 2>/dev/null) $(sed -n 's/^dist //p' /.elastic-testbed-key 2>/dev/null)"
	need=$(find "$d" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0 | xargs -0 objdump -T 2>/dev/null |
		grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
	echo "glibc-needed: ${need#GLIBC_}"
	echo "packages:"
	dpkg-query -W -f '  ${Package} ${Version}\n' openmpi-bin libopenmpi40 libopenmpi-dev libpmix2t64 \
		libhwloc15 libhwloc-dev libevent-core-2.1-7t64 libevent-pthreads-2.1-7t64 libfabric1 libucx0 2>/dev/null
	echo "files:"
	(cd "$d" && find . -type f ! -name MANIFEST | sort | sed 's/^/  /')
}

# Inside the root: every library the bundle's programs and libraries load
# resolves inside the bundle (lib, then lib/sys) or is glibc's.
check_closure() {
	local d=$1 f bad=0 n p
	while read -r f; do
		while read -r n p; do
			[[ $n =~ $glibc_re ]] && continue
			case "$p" in
			"$d"/*) ;;
			*) echo "bundle: $f loads $n from ${p:-nowhere} (not in the bundle)" >&2; bad=1 ;;
			esac
		done < <(LD_LIBRARY_PATH=$d/lib:$d/lib/sys ldd "$f" 2>/dev/null |
			awk '$2 == "=>" { print $1, ($3 == "not" ? "" : $3) }')
	done < <(find "$d" -type f \( -name '*.so*' -o -path '*/bin/*' \))
	return $bad
}

# Inside the root: hide its own runtime (an empty file over each library and
# program, an empty directory over its header and help directories), then run
# check.sh with the bundle.
try_in_root() {
	local L=/usr/lib/x86_64-linux-gnu f
	for f in /usr/bin/mpirun.openmpi /usr/bin/prterun /usr/bin/prted /usr/bin/prte /usr/bin/ompi_info \
		"$L"/libmpi.so.40.* "$L"/libopen-pal.so.80.* "$L"/libprrte.so.3.* "$L"/openmpi/lib/libprrte.so.3.* \
		"$L"/pmix2/lib/libpmix.so.2.* "$L"/libhwloc.so.15.* "$L"/libevent_core-2.1.so.7.* \
		"$L"/libevent_pthreads-2.1.so.7.* "$L"/libfabric.so.1.* "$L"/libuc[mpst].so.0.* /usr/include/hwloc.h; do
		[ -e "$f" ] && mount --bind /dev/null "$f"
	done
	for f in "$L"/openmpi/include "$L"/pmix2/include "$L"/pmix2/share /usr/include/hwloc /usr/share/openmpi \
		/usr/share/prte /etc/openmpi; do
		[ -d "$f" ] && mount -t tmpfs none "$f"
	done
	ompi_info >/dev/null 2>&1 && die "the root's ompi_info still runs: hiding failed"
	exec bash /src/tests/device/check.sh "$@"
}

case "${1:-}" in
--try-in-root)
	shift
	try_in_root "$@"
	;;
--try)
	shift
	[ -f "$out/MANIFEST" ] || die "no bundle at $out: make it first (tests/device/bundle.sh)"
	exec "$src/testbed/run" unshare --mount --propagation unchanged -- \
		bash /src/tests/device/bundle.sh --try-in-root --bundle /src/build-device/bundle "$@"
	;;
--in-root)
	in_root "$2"
	check_closure "$2" || die "the bundle is not closed (see above)"
	exit 0
	;;
--out) out=$(mkdir -p "$2" && cd "$2" && pwd) ;;
-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
"") ;;
*) die "unknown argument '$1' (try --help)" ;;
esac
[ "$(id -u)" = 0 ] || die "run it as root (it enters the testbed root with testbed/run)"
case "$out/" in "$src"/*) ;; *) die "--out must be inside the source tree ($src): the root sees it at /src" ;; esac
say "copying the Open MPI runtime and headers out of the testbed root into $out"
"$src/testbed/run" bash /src/tests/device/bundle.sh --in-root "/src${out#"$src"}"
size=$(du -sb "$out" | cut -f1)
say "bundle: $((size / 1024)) KiB in $(find "$out" -type f | wc -l) files, glibc >= $(sed -n 's/^glibc-needed: //p' "$out/MANIFEST") needed"
[ "$size" -lt "$limit" ] || die "the bundle is $size bytes: over the device's 64 MiB carry limit"
echo "$out"
