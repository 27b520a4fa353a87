#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/jam.sh: no user can jam the job channel. alice opens 1,100
# connections that each send one valid sealed query and then stay idle: elasticd
# answers and closes every one, and a job of bob registers within 1 s. Then
# 1,100 silent connections (over the table's 1,024): bob's job, reconnecting,
# still registers within 1 s (the quietest connection bound to no job makes
# room). Last, with ChannelIdleTimeout=2, silent connections are closed after
# 2 s. (The first elasticd has ChannelIdleTimeout=60, so that on a loaded
# machine the silent flood still fills the table when bob connects.) The
# per-uid cap (256) is not reached here, post-query connections close first;
# with that close removed by hand, step 1 fails: alice's 257th query is refused
# ("uid N holds 256 connections already (limit 256 per uid)").
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_conf ChannelIdleTimeout=60
ctl_start
N=1100

as() { # user cmd...: run as user with the cluster's munge socket
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		env ELASTIC_MUNGE_SOCKET="$ELASTIC_MUNGE_SOCKET" "$@"
}

# bob's job, running and known to elasticd before the flood.
jb=$(ctl_job bob acct_b 1 1 10)
end=$((SECONDS + 30))
until ctl status -p -j "$jb" 2>/dev/null | grep -q "^$jb|"; do
	[ $SECONDS -lt $end ] || t_fail "elasticd never listed bob's job $jb"
	sleep 0.2
done
t_log "bob's job $jb runs; elasticd lists it"

# N sealed queries from alice, each with its own credential (munge refuses
# a replayed one).
as alice bash -c "for i in \$(seq $N); do '$CTL_BIN/elastic-ctl' seal query || exit 1; done" \
	>"$T_DIR/queries" || t_fail "cannot seal $N queries as alice"
t_log "$N sealed queries from alice ($(stat -c %s "$T_DIR/queries") bytes)"

# flood MODE [COUNT]: COUNT (default N) connections, query (each sends one
# frame and reads the answer) or silent. Prints
# "answered A closed C" once the connections settled (5 s at most), then
# holds them open until $T_DIR/done exists (60 s at most).
flood() {
	python3 - "$CTL_PORT" "$1" "$T_DIR/queries" "$T_DIR" "${2:-$N}" <<'EOF'
import os, resource, select, socket, struct, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
port, mode, frames, tdir, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
data, f = open(frames, 'rb').read(), []
while data:
    ln = 12 + struct.unpack('>I', data[8:12])[0]
    f.append(data[:ln])
    data = data[ln:]
assert mode == 'silent' or len(f) == n, len(f)
t0 = time.time()
conns = []
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect((os.environ["CTL_HOST"], port))
    if mode == 'query':
        s.sendall(f[i])
    s.setblocking(False)
    conns.append(s)
got = {s.fileno(): b'' for s in conns}
closed = set()
poller = select.poll()
for s in conns:
    poller.register(s, select.POLLIN)
by_fd = {s.fileno(): s for s in conns}
connected = time.time() - t0
end = time.time() + (5 if mode == 'query' else 0.5)
while time.time() < end and len(closed) < n:
    for fd, ev in poller.poll(200):
        try:
            b = by_fd[fd].recv(65536)
        except ConnectionError:
            b = b''
        if b:
            got[fd] += b
        else:
            closed.add(fd)
            poller.unregister(fd)

def types(b):  # message types of the frames in b (header byte 5)
    t = []
    while len(b) >= 12:
        t.append(b[5])
        b = b[12 + struct.unpack('>I', b[8:12])[0]:]
    return t

END, ERROR = 9, 10  # common/proto.h
answered = sum(1 for b in got.values() if END in types(b) and ERROR not in types(b))
print("answered %d closed %d connected-in %.2f s" % (answered, len(closed), connected), flush=True)
open(os.path.join(tdir, 'flooded'), 'w').close()
end = time.time() + 60
while time.time() < end and not os.path.exists(os.path.join(tdir, 'done')):
    time.sleep(0.05)
EOF
}

# Start bob's client; succeed when elasticd logs the registration number
# $1 of job $jb within 1 s (3 s for an ASan + UBSan elasticd, whose every
# allocation is checked: tests/controller/run-sanitized.sh). Sets REG_S.
reg_bound=1.0
[ -z "${ELASTIC_TEST_SANITIZED:-}" ] || reg_bound=3.0
bob_registers() { # nth
	local t0 now
	t0=$(date +%s.%N)
	ctl_client bob "$jb"
	while [ "$(grep -c "job $jb: registered from" "$T_DIR/elasticd.log")" -lt "$1" ]; do
		now=$(date +%s.%N)
		if awk "BEGIN{exit !($now - $t0 > $reg_bound)}"; then
			tail -n 20 "$T_DIR/elasticd.log" >&2
			cat "$T_DIR/client-$jb.out" >&2
			t_fail "bob's job $jb did not register within $reg_bound s (registration $1)"
		fi
		sleep 0.02
	done
	now=$(date +%s.%N)
	REG_S=$(awk "BEGIN{printf \"%.3f\", $now - $t0}")
}

# 1. N idle post-query connections from alice.
rm -f "$T_DIR/flooded" "$T_DIR/done"
flood query >"$T_DIR/flood1.out" &
fpid=$!
ctl_wait_line 60 "$T_DIR/flood1.out" "^answered" "alice's query flood did not settle"
read -r _ answered _ closed _ took _ <"$T_DIR/flood1.out"
[ "$answered" = $N ] || t_fail "$answered of $N queries answered"
[ "$closed" = $N ] || t_fail "elasticd closed $closed of $N answered connections not bound to a job (the rest stay open)"
t_log "alice: $N queries answered, all $N connections closed by elasticd (connected in $took s)"
bob_registers 1
t_log "bob's job $jb registered in $REG_S s with alice's $N sockets still open on her side"
touch "$T_DIR/done"
wait "$fpid" || t_fail "query flood script failed"

# 2. bob's client goes away; N silent connections; bob's job reconnects.
for p in $CTL_CLIENTS; do kill "$p" 2>/dev/null || true; done
CTL_CLIENTS=""
ctl_wait_line 10 "$T_DIR/elasticd.log" "job $jb: connection from .* closed" "bob's connection close not seen"
rm -f "$T_DIR/flooded" "$T_DIR/done"
flood silent >"$T_DIR/flood2.out" &
fpid=$!
ctl_wait_line 60 "$T_DIR/flood2.out" "^answered" "silent flood did not settle"
evict='too many connections (1024): closing .*(unauthenticated), the quietest without a job'
idle0=$(grep -c 'idle connection not bound to a job' "$T_DIR/elasticd.log")
ev0=$(grep -c "$evict" "$T_DIR/elasticd.log")
bob_registers 2
ev1=$(grep -c "$evict" "$T_DIR/elasticd.log")
t_log "$N silent connections held ($(cut -d' ' -f5-6 "$T_DIR/flood2.out"), $ev0 closed for newer ones, $idle0 timed out): bob's job $jb registered again in $REG_S s"
# bob's connection found the table full: a silent one was closed for it.
[ "$ev1" -gt "$ev0" ] || t_fail "bob's connection did not make room by closing a silent one ($ev0 -> $ev1; $idle0 had timed out before)"
touch "$T_DIR/done"
wait "$fpid" || t_fail "silent flood script failed"
[ "$(ctl status -p -j "$jb" | cut -d'|' -f9)" = 1 ] || t_fail "bob's job lost its connection"

# 3. The idle timeout: elasticd again with ChannelIdleTimeout=2; 50 silent
# connections are closed after 2 s; bob's job, registered and silent (no
# status), is not.
kill "$CTL_PID"
wait "$CTL_PID" 2>/dev/null || true
CTL_PID=""
for p in $CTL_CLIENTS; do kill "$p" 2>/dev/null || true; done
CTL_CLIENTS=""
ctl_conf ChannelIdleTimeout=2
ctl_start
ctl_client bob "$jb" -s 0
idle='(unauthenticated): idle connection not bound to a job: closing'
i0=$(grep -cF "$idle" "$T_DIR/elasticd.log")
rm -f "$T_DIR/flooded" "$T_DIR/done"
flood silent 50 >"$T_DIR/flood3.out" &
fpid=$!
ctl_wait_line 30 "$T_DIR/flood3.out" "^answered" "small silent flood did not settle"
t0=$SECONDS
until [ $(($(grep -cF "$idle" "$T_DIR/elasticd.log") - i0)) -ge 50 ]; do
	[ $((SECONDS - t0)) -lt 10 ] || t_fail "$(($(grep -cF "$idle" "$T_DIR/elasticd.log") - i0)) of 50 silent connections closed after 10 s (ChannelIdleTimeout=2)"
	sleep 0.2
done
t_log "50 silent connections closed by the 2 s idle timeout"
touch "$T_DIR/done"
wait "$fpid" || t_fail "small silent flood script failed"
end=$((SECONDS + 10))
until [ "$(ctl status -p -j "$jb" 2>/dev/null | cut -d'|' -f9)" = 1 ]; do
	[ $SECONDS -lt $end ] || t_fail "bob's job did not reconnect to the new elasticd"
	sleep 0.2
done
closes=$(grep -c "job $jb: connection from .* closed" "$T_DIR/elasticd.log")
regs=$(grep -c "job $jb: registered from" "$T_DIR/elasticd.log")
sleep 4
[ "$(grep -c "job $jb: connection from .* closed" "$T_DIR/elasticd.log")" = "$closes" ] &&
	[ "$(grep -c "job $jb: registered from" "$T_DIR/elasticd.log")" = "$regs" ] ||
	t_fail "bob's silent job connection was closed (ChannelIdleTimeout=2)"
t_log "bob's silent job connection kept 4 s past the 2 s idle timeout"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
