#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/reload.sh: operating elasticd. --help and --version of
# elasticd, elastic-ctl and elastic-run; `elasticd -t` on a good file (exit
# 0, every value printed), on broken ones (exit 1, file:line named) and with
# no file at the default path (the built-in defaults, also for the daemon);
# SIGHUP re-reads elastic.conf (a good new value is taken, a bad file is
# refused and the configuration in use kept) and reopens the log file, and
# the daemon lives on through it all.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ED=$CTL_BIN/elasticd

# -- --help and --version: usage on stdout, exit 0 --
for p in "$ED" "$CTL_BIN/elastic-ctl" "${top_builddir:?}/launcher/elastic-run"; do
	name=$(basename "$p")
	out=$("$p" --help 2>/dev/null) || t_fail "$name --help: exit $?"
	grep -q "^usage: $name" <<<"$out" || t_fail "$name --help: no usage on stdout: $out"
	out=$("$p" --version 2>/dev/null) || t_fail "$name --version: exit $?"
	[[ "$out" =~ ^$name\ [0-9] ]] || t_fail "$name --version printed '$out'"
done
t_log "--help and --version of elasticd, elastic-ctl, elastic-run: usage/version on stdout, exit 0"

# -- elasticd -t --
good=$T_DIR/elastic.conf
out=$("$ED" -t -f "$good" 2>&1) || t_fail "elasticd -t on a good file: exit $?: $out"
grep -qx "# $good: usable" <<<"$out" || t_fail "elasticd -t: no 'usable' line: $out"
grep -qx "TickSeconds=1" <<<"$out" && grep -qx "PolicyMode=priority" <<<"$out" &&
	grep -qx "MaxGpusPerJob=64" <<<"$out" || t_fail "elasticd -t does not print the values in use: $out"
# every key (the annotated slurm-conf/elastic.conf holds each once: test_elastic_conf)
nkeys=$(grep -c '^[A-Za-z]*=' "${top_srcdir:-/src}/slurm-conf/elastic.conf")
[ "$(grep -c '^[A-Za-z]*=' <<<"$out")" = "$nkeys" ] || t_fail "elasticd -t: expected $nkeys keys: $out"
out=$("$ED" --test-config -f "$good" 2>&1) || t_fail "elasticd --test-config: exit $?"
t_log "elasticd -t good file: exit 0, $(grep -c '=' <<<"$out") values printed"
n=$(($(wc -l <"$good") + 1))
bad() { # expect line...
	local expect=$1 f=$T_DIR/bad.conf out rc=0
	shift
	{
		cat "$good"
		printf '%s\n' "$@"
	} >"$f"
	out=$("$ED" -t -f "$f" 2>&1) || rc=$?
	[ $rc = 1 ] || t_fail "elasticd -t with '$*': exit $rc, expected 1: $out"
	grep -qF "elasticd: $f:$expect" <<<"$out" || t_fail "elasticd -t with '$*': expected '$f:$expect', got: $out"
	grep -qF "configuration $f is NOT usable" <<<"$out" || t_fail "elasticd -t with '$*': no verdict: $out"
	t_log "elasticd -t '$*': exit 1: $(head -n1 <<<"$out")"
}
bad "$n: unknown key 'TickSecond' (did you mean 'TickSeconds'?)" "TickSecond=2"
bad "$n: unknown key 'Bogus'" "Bogus=1"
bad "$n: MaxGrace=0 is out of range [1, 86400]" "MaxGrace=0"
bad "$n: TickSeconds given a second time (first at $T_DIR/bad.conf:3)" "TickSeconds=5"
out=$("$ED" -t -f "$T_DIR/none.conf" 2>&1) && t_fail "elasticd -t with a missing named file: exit 0: $out"
grep -qF "$T_DIR/none.conf: cannot open: No such file or directory" <<<"$out" || t_fail "missing -f file: $out"
# No file at the default path (beside slurm.conf): the built-in defaults.
mkdir -p "$T_DIR/etc"
cp "$SLURM_CONF" "$T_DIR/etc/slurm.conf"
out=$(env -u ELASTIC_CONF SLURM_CONF="$T_DIR/etc/slurm.conf" "$ED" -t 2>&1) ||
	t_fail "elasticd -t with no file at the default path: exit $?: $out"
grep -qx "# $T_DIR/etc/elastic.conf: not found: elasticd uses the built-in defaults" <<<"$out" &&
	grep -qx "ControllerPort=6820" <<<"$out" || t_fail "elasticd -t, no default file: $out"
t_log "elasticd -t with no file at the default path: the built-in defaults, exit 0"
# The daemon itself starts on the defaults there (-p: not the default port).
env -u ELASTIC_CONF SLURM_CONF="$T_DIR/etc/slurm.conf" "$ED" -D -p "$CTL_PORT" \
	-L "$T_DIR/defaults.log" &
dpid=$!
CTL_CLIENTS="$CTL_CLIENTS $dpid"
ctl_wait_line 10 "$T_DIR/defaults.log" "started \(pid $dpid\)" "elasticd start on the built-in defaults"
grep -qF "$T_DIR/etc/elastic.conf not found: the built-in defaults" "$T_DIR/defaults.log" ||
	t_fail "elasticd does not say it uses the built-in defaults: $(cat "$T_DIR/defaults.log")"
kill -0 "$dpid" || t_fail "elasticd on the built-in defaults exited"
kill "$dpid"
wait "$dpid" 2>/dev/null || true
t_log "elasticd starts with no file at the default path: $(grep -o 'elasticd: .*not found.*' "$T_DIR/defaults.log")"

# -- SIGHUP --
ctl_start
log=$T_DIR/elasticd.log
# A good new file: its values are taken; the log file is reopened (moved
# away as logrotate does, a new one appears).
sed -i -e 's/^TickSeconds=1$/TickSeconds=3/' "$good"
echo "PolicyMode=fairshare" >>"$good"
mv "$log" "$log.1"
kill -HUP "$CTL_PID"
ctl_wait_line 10 "$log" "SIGHUP: re-read $good: PolicyMode=fairshare TickSeconds=3 " "the new values after SIGHUP"
ctl_alive || t_fail "elasticd died on SIGHUP"
ctl status -p >/dev/null || t_fail "elasticd does not answer after SIGHUP"
t_log "SIGHUP, good file: $(grep -o 'SIGHUP: re-read.*' "$log"); log reopened at $log"
# A broken file: refused, the configuration in use kept.
cp "$good" "$T_DIR/good.conf"
echo "TickSecond=2" >>"$good"
kill -HUP "$CTL_PID"
ctl_wait_line 10 "$log" "SIGHUP: $good:[0-9]+: unknown key 'TickSecond'.*keeping the configuration in use \(PolicyMode=fairshare TickSeconds=3\)" \
	"the broken file refused after SIGHUP"
sleep 1
ctl_alive || t_fail "elasticd died on SIGHUP with a broken file"
ctl status -p >/dev/null || t_fail "elasticd does not answer after SIGHUP with a broken file"
t_log "SIGHUP, broken file: $(grep -o 'error: SIGHUP: .*' "$log" | tail -n1)"
# A key only a restart applies: said so as a notice, not an error, the old
# one kept (still answers).
cp "$T_DIR/good.conf" "$good"
sed -i -e "s/^ControllerPort=.*/ControllerPort=$((CTL_PORT + 1))/" "$good"
kill -HUP "$CTL_PID"
ctl_wait_line 10 "$log" "elasticd: notice: SIGHUP: ControllerPort=$((CTL_PORT + 1)) takes effect when elasticd restarts; keeping ControllerPort=$CTL_PORT" \
	"ControllerPort kept after SIGHUP"
ctl status -p >/dev/null || t_fail "elasticd does not answer on its port after SIGHUP"
ctl_alive || t_fail "elasticd died"
t_log "PASS: --help/--version; elasticd -t good, 4 broken, missing, defaults; SIGHUP takes a good file, refuses a broken one, reopens the log; daemon alive ($CTL_PID)"
