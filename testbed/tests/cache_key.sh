#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/tests/cache_key.sh: the cached root follows what Debian serves.
# Its key is the recipe plus the suite's Release (Version and Date of the
# InRelease file); a changed Release or a changed recipe makes mkroot
# rebuild, and says why; the root's lock file lists every package's exact
# version. Run after mkroot (testbed/check does): nothing is rebuilt here.
. "$(dirname "$0")/lib.sh"
. "$TT_TB/lib.sh"
# The variable that pins the suite's state (sid's has its own: the ompi6
# root needs both).
distvar=ELASTIC_TESTBED_DIST
[ "$TB_SUITE" = "$TB_SID" ] && distvar=ELASTIC_TESTBED_DIST_SID
unset "$distvar"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

real=$(tb_dist)
# (sid's Release has no Version: "? of DATE")
[[ "$real" =~ ^([0-9.]+|\?)\ of\ .+ ]] || tt_fail "the suite's Release was not read from $(tb_mirror): '$real'"
tt_ok "Debian $TB_SUITE as served now: $real"

tt_run "$TT_TB/mkroot" --status
[ "$TT_RC" = 0 ] || tt_fail "mkroot --status: the root just made is not current: $TT_OUT"
tt_expect_out "status" '^state: +current'
tt_ok "mkroot --status: the cached root is current"

root=$(tb_root)
lock=$root$TB_LOCK
[ -s "$lock" ] || tt_fail "no lock file $lock"
grep -qF "Debian $TB_SUITE, $real;" "$lock" || tt_fail "the lock file does not name the Release it was made from: $(head -n1 "$lock")"
n=$(grep -vc '^#' "$lock")
[ "$n" -ge 100 ] || tt_fail "the lock file lists only $n packages"
for p in slurmdbd libmariadb3 mariadb-server openmpi-bin slurmctld; do
	v=$(chroot "$root" dpkg-query -W -f '${Version}' "$p") || tt_fail "$p is not installed in the root"
	grep -qx "$p $v" "$lock" || tt_fail "the lock file does not say '$p $v'"
done
tt_ok "the lock file lists $n packages with their exact versions (slurmdbd, libmariadb3, ... as dpkg says)"

# A Release published after the root was made: another key, a rebuild due.
drift="99.1 of Mon, 01 Jan 2035 00:00:00 UTC"
k0=$(tb_root_key)
k1=$(export "$distvar=$drift" && tb_root_key)
[ "$k0" != "$k1" ] || tt_fail "the key did not change with the Release ($k0)"
tt_run env "$distvar=$drift" "$TT_TB/mkroot" --status
[ "$TT_RC" = 1 ] || tt_fail "mkroot --status saw no rebuild due after a new Release: $TT_OUT"
tt_expect_out "drift" "rebuild due: Debian $TB_SUITE changed since the cached root: '${real//\?/\\?}' -> '$drift'"
tt_ok "a new Release changes the key ($k0 -> $k1) and mkroot --status says a rebuild is due, and why"

# The same through the remembered Release: what a later look at the mirror
# would write there is what the key follows.
mkdir -p "$tmp/cache"
echo "$drift" >"$tmp/cache/dist-$TB_SUITE"
k2=$(ELASTIC_TESTBED_CACHE=$tmp/cache bash -c '. "$1/lib.sh"; tb_dist; tb_root_key' _ "$TT_TB" | tail -n1)
[ "$k2" = "$k1" ] || tt_fail "the key does not follow the remembered Release ($k2, want $k1)"
touch -d '2 hours ago' "$tmp/cache/dist-$TB_SUITE"
d3=$(ELASTIC_TESTBED_CACHE=$tmp/cache bash -c '. "$1/lib.sh"; tb_dist' _ "$TT_TB")
[ "$d3" = "$real" ] || tt_fail "an old remembered Release was not looked up again: '$d3'"
tt_ok "the remembered Release is used while fresh and looked up again when old"

# A changed recipe: another key, and mkroot says so.
cp -a "$TT_TB" "$tmp/tb"
echo "# drift test" >>"$tmp/tb/packages.list"
k4=$(bash -c '. "$1/lib.sh"; tb_root_key' _ "$tmp/tb")
[ "$k4" != "$k0" ] || tt_fail "the key did not change with packages.list"
tt_run "$tmp/tb/mkroot" --status
[ "$TT_RC" = 1 ] || tt_fail "mkroot --status saw no rebuild due after a recipe change: $TT_OUT"
tt_expect_out "recipe" "rebuild due: the recipe changed"
tt_ok "a changed recipe changes the key ($k0 -> $k4) and mkroot --status says why"
