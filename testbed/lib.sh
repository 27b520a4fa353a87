# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/lib.sh: shared paths and helpers of the testbed scripts (sourced).

# Where the cached Debian roots live: outside the clone, so that a fresh
# clone on the same machine reuses them.
TB_CACHE=${ELASTIC_TESTBED_CACHE:-/var/cache/slurm-elastic}
TB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TB_SRC=$(cd "$TB_DIR/.." && pwd)
# Inside the root the source tree is always seen here.
TB_SRC_IN_ROOT=/src
# The MPI runtime of the root, one switch (ELASTIC_TESTBED_RUNTIME):
#   ompi5  Debian 13's Open MPI 5.0.7 / PRRTE 3 / PMIx 5 (the default); the
#          fake nodes share the host's loopback;
#   ompi6  the same Debian 13 root with Open MPI 6 / PRRTE 5 / PMIx 7 (and
#          what they need: glibc, gcc runtime, hwloc) pinned from Debian sid;
#          each fake node is its own network + UTS namespace on a private
#          bridge (PRRTE 5 refuses loopback addresses). Slurm, Python and
#          torch stay Debian 13's, so the switch changes only the runtime;
#   sid    a root made entirely from Debian sid: Slurm 26.05, Open MPI 6 /
#          PRRTE 5 / PMIx 7, sid's MariaDB, Python and torch; the cluster
#          layout of ompi6 (a network namespace per node).
TB_RUNTIME=${ELASTIC_TESTBED_RUNTIME:-ompi5}
case "$TB_RUNTIME" in
ompi5 | ompi6 | sid) ;;
*)
	printf '[testbed] error: ELASTIC_TESTBED_RUNTIME=%s: not a runtime (ompi5, ompi6 or sid)\n' "$TB_RUNTIME" >&2
	exit 1
	;;
esac
export ELASTIC_TESTBED_RUNTIME=$TB_RUNTIME
# The suite the ompi6 runtime's packages are pinned from.
TB_SID=sid
# The Debian suite the root is made from.
TB_SUITE=trixie
[ "$TB_RUNTIME" = sid ] && TB_SUITE=$TB_SID

tb_log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
tb_die() {
	printf '[testbed] error: %s\n' "$*" >&2
	exit 1
}

# The Debian mirror this machine already uses (ELASTIC_TESTBED_MIRROR wins).
tb_mirror() {
	local m=${ELASTIC_TESTBED_MIRROR:-}
	[ -n "$m" ] || m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
		grep -v security | grep -i debian | head -n1 || true)
	[ -n "$m" ] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
		awk '{print $2}' | grep -v security | grep -i debian | head -n1 || true)
	echo "${m:-http://deb.debian.org/debian}"
}

# The recipe hash: the files that say how the root is made, and the runtime.
tb_recipe_hash() {
	{
		cat "$TB_DIR/mkroot" "$TB_DIR/packages.list" "$TB_DIR/root-setup.sh"
		[ "$TB_RUNTIME" = ompi5 ] || echo "runtime $TB_RUNTIME"
	} | sha256sum | cut -c1-12
}

# What Debian serves now for the suite: "13.8 of <date>", the Version and
# Date of the suite's InRelease. Debian rewrites a stable suite's Release file only
# when it publishes a point release, so a change here means the packages a
# fresh machine gets have changed (2026-11-23: trixie 13.8 of Sat, 21 Nov
# 2026 brought the libmariadb3 that broke slurmdbd's first start).
# Looked up at most every ELASTIC_TESTBED_DIST_TTL seconds (default 600) and
# remembered in $TB_CACHE/dist-$TB_SUITE; ELASTIC_TESTBED_DIST overrides it
# (the scripts export it after the first look, so one run asks once). When
# the mirror does not answer, the last state seen is used, with a warning.
tb_dist() { # [suite: default $TB_SUITE; the ompi6 root adds $TB_SID's state]
	local suite=${1:-$TB_SUITE}
	if [ "$suite" != "$TB_SID" ] && [ -n "${ELASTIC_TESTBED_DIST:-}" ]; then
		echo "$ELASTIC_TESTBED_DIST"
		return 0
	fi
	if [ "$suite" = "$TB_SID" ] && [ -n "${ELASTIC_TESTBED_DIST_SID:-}" ]; then
		echo "$ELASTIC_TESTBED_DIST_SID"
		return 0
	fi
	local memo=$TB_CACHE/dist-$suite ttl=${ELASTIC_TESTBED_DIST_TTL:-600} now rel
	now=$(date +%s)
	if [ -s "$memo" ] && [ $((now - $(stat -c %Y "$memo"))) -lt "$ttl" ]; then
		cat "$memo"
		return 0
	fi
	if rel=$(curl -fsS --max-time 15 "$(tb_mirror)/dists/$suite/InRelease" 2>/dev/null |
		awk '!v && /^Version:/ { v = $2 } !d && /^Date:/ { sub(/^Date: */, ""); d = $0 }
			END { if (d != "") print (v != "" ? v : "?") " of " d }') && [ -n "$rel" ]; then
		mkdir -p "$TB_CACHE"
		echo "$rel" >"$memo.tmp.$$" && mv -f "$memo.tmp.$$" "$memo"
		echo "$rel"
	elif [ -s "$memo" ]; then
		tb_log "warning: $(tb_mirror)/dists/$suite/InRelease did not answer: using the last state seen ($(cat "$memo"))"
		cat "$memo"
	else
		tb_log "warning: $(tb_mirror)/dists/$suite/InRelease did not answer and no state was ever seen"
		echo "unknown"
	fi
}

# The cache key: the recipe plus what Debian serves. A developer's machine
# thus rebuilds its root exactly when a fresh machine would get other
# packages.
tb_root_key() {
	tb_key_lines | sha256sum | cut -c1-12
}

# The key's parts, as a root's .elastic-testbed-key file holds them.
tb_key_lines() {
	printf 'recipe %s\ndist %s\n' "$(tb_recipe_hash)" "$(tb_dist)"
	[ "$TB_RUNTIME" = ompi6 ] && printf 'dist-%s %s\n' "$TB_SID" "$(tb_dist "$TB_SID")"
	return 0
}

tb_root() { echo "$TB_CACHE/root-$(tb_root_key)"; }

tb_root_ready() { [ -f "$(tb_root)/.elastic-testbed-ready" ]; }

# Look Debian's state up once for this run and everything it starts
# (ELASTIC_TESTBED_DIST: trixie's, ELASTIC_TESTBED_DIST_SID: sid's).
tb_pin_dist() {
	if [ "$TB_RUNTIME" != sid ]; then
		ELASTIC_TESTBED_DIST=$(tb_dist)
		export ELASTIC_TESTBED_DIST
	fi
	if [ "$TB_RUNTIME" != ompi5 ]; then
		ELASTIC_TESTBED_DIST_SID=$(tb_dist "$TB_SID")
		export ELASTIC_TESTBED_DIST_SID
	fi
}

# The lock file of a root: every package and its exact version.
TB_LOCK=/etc/elastic-testbed-packages.lock

# The CUDA tree to show inside the root (a link to /usr/local/cuda-13.0 here).
tb_cuda_dir() {
	local d=${ELASTIC_CUDA_DIR:-/usr/local/cuda}
	[ -e "$d" ] && readlink -f "$d"
}

# A copy of a root, without what its clusters and tests write while they run
# (/tmp, the clusters' state in /var/lib/elastic-testbed): a root can be
# copied while a cluster runs in it.
tb_copy_root() { # from to
	local rc=0
	rm -rf "$2" && mkdir -p "$2"
	# (tar: 1 is "a file changed or vanished as it was read", 2 a real error)
	tar -C "$1" --exclude=./tmp --exclude=./var/lib/elastic-testbed --exclude=./var/tmp \
		--warning=no-file-changed --warning=no-file-removed -cf - . |
		tar -C "$2" -xpf - || rc=$?
	[ "$rc" -le 1 ] || tb_die "copying the root $1 to $2 failed (tar: $rc)"
	mkdir -p "$2/tmp" "$2/var/tmp"
	chmod 1777 "$2/tmp" "$2/var/tmp"
}
