#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/signal_once.sh: a signal mpirun passes on reaches a rank once. The
# daemon signals the rank wrapper's whole process group, so a rank the wrapper
# started has it already; a second copy from the wrapper, late under load, was a
# second re-form request (a planned shrink in place, then a re-form nobody asked
# for). The wrapper is stopped while mpirun passes SIGUSR1 on and continued a
# second later: the rank must count one SIGUSR1, not two.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
ER=${top_builddir:?}/launcher/elastic-run
[ -x "$ER" ] || t_fail "elastic-run not built"
command -v mpirun >/dev/null || t_skip "no mpirun in PATH"
t_ompi_env
t_scratch
cat >"$T_DIR/rank.py" <<'PY'
import signal, sys, time
n = 0
def usr1(sig, frame):
    global n
    n += 1
    print("USR1 at %.3f" % time.time(), flush=True)
signal.signal(signal.SIGUSR1, usr1)
# the wrapper starts a rank with SIGUSR1 blocked until it has a handler (libelastic's way)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    time.sleep(0.02)
print("COUNT %d" % n, flush=True)
PY
mpirun --oversubscribe --bind-to none -np 1 "$ER" --rank python3 "$T_DIR/rank.py" 8 \
	>"$T_DIR/out" 2>&1 &
mp=$!
trap 'rc=$?; kill -CONT $wrapper 2>/dev/null; kill $mp 2>/dev/null; t_cleanup $rc' EXIT
wrapper=""
end=$((SECONDS + 30))
until grep -q '^ready' "$T_DIR/out" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/out"; t_fail "the rank did not start"; }
	sleep 0.1
done
wrapper=$(t_pgrep -f -- "^$ER --rank python3 $T_DIR/rank.py")
[ -n "$wrapper" ] || t_fail "no rank wrapper found"
kill -STOP "$wrapper"
kill -USR1 "$mp"
sleep 1
kill -CONT "$wrapper"
wait "$mp"
grep -v btl "$T_DIR/out"
t_grep '^USR1 at' "$T_DIR/out" "the rank got mpirun's SIGUSR1"
t_grep '^COUNT 1$' "$T_DIR/out" "the rank got mpirun's SIGUSR1 once (the wrapper passed on a second)"
t_log "PASS: one SIGUSR1 through mpirun reached the rank once, with its wrapper stopped for 1 s"
exit 0
