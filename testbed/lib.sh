# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/lib.sh: shared paths and helpers of the testbed scripts (sourced).

# Where the cached Debian 13 roots live: outside the clone, so that a fresh
# clone on the same machine reuses them.
TB_CACHE=${ELASTIC_TESTBED_CACHE:-/var/cache/slurm-elastic}
TB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TB_SRC=$(cd "$TB_DIR/.." && pwd)
# Inside the root the source tree is always seen here.
TB_SRC_IN_ROOT=/src

tb_log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
tb_die() {
	printf '[testbed] error: %s\n' "$*" >&2
	exit 1
}

# The recipe hash: what decides whether a cached root is still good.
tb_recipe_hash() {
	cat "$TB_DIR/mkroot" "$TB_DIR/packages.list" "$TB_DIR/root-setup.sh" |
		sha256sum | cut -c1-12
}

tb_root() { echo "$TB_CACHE/root-$(tb_recipe_hash)"; }

tb_root_ready() { [ -f "$(tb_root)/.elastic-testbed-ready" ]; }

# The CUDA tree to show inside the root (a link to /usr/local/cuda-13.0 here).
tb_cuda_dir() {
	local d=${ELASTIC_CUDA_DIR:-/usr/local/cuda}
	[ -e "$d" ] && readlink -f "$d"
}
