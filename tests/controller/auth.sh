#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/auth.sh: the job channel refuses what it must. bob speaking
# for alice's job, forged and replayed credentials, a header that lies about the
# sealed type, messages before hello, controller-only types, malformed
# frames and an ack naming a grant that is no release of the job are all
# dropped with a log line; elasticd keeps serving alice's job.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_start

as() { # user cmd...: run as user with the cluster's munge socket
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		env ELASTIC_MUNGE_SOCKET="$ELASTIC_MUNGE_SOCKET" "$@"
}
ECTL=("$CTL_BIN/elastic-ctl" -c "$CTL_HOST:$CTL_PORT")
bob_uid=$(id -u bob)

j=$(ctl_job alice acct_a 1 2 10)
ctl_client alice "$j"
end=$((SECONDS + 20))
until [ "$(ctl status -p -j "$j" 2>/dev/null | cut -d'|' -f9)" = 1 ]; do
	[ $SECONDS -lt $end ] || t_fail "alice's client never registered for job $j"
	sleep 0.2
done
t_log "alice's job $j registered on the channel"

expect_refused() { # what regex-in-reply regex-in-log output
	echo "$4" | grep -Eq -- "$2" || t_fail "$1: reply '$4' does not match /$2/"
	echo "$4" | grep -q "^closed" || t_fail "$1: connection not closed ('$4')"
	sleep 0.1
	grep -Eq -- "$3" "$T_DIR/elasticd.log" || t_fail "$1: no log line matching /$3/"
	ctl_alive || t_fail "$1: elasticd died"
	t_log "$1: refused ($(echo "$4" | head -n1))"
}

# 1. bob says hello for alice's job with his own (valid) credential.
out=$(as bob "${ECTL[@]}" proto-client -j "$j" -x 5 2>&1) && rc=0 || rc=$?
[ $rc = 3 ] || t_fail "bob's proto-client for job $j exited $rc: $out"
echo "$out" | grep -q "error uid $bob_uid may not speak for job $j" || t_fail "bob was not told why: $out"
grep -q "rejected message .*(uid $bob_uid): uid $bob_uid may not speak for job $j" "$T_DIR/elasticd.log" ||
	t_fail "no log line for bob's hello"
t_log "bob's hello for alice's job: refused"

# 2. bob sends a sealed ack about alice's job (an attempt to end a release).
out=$(as bob "${ECTL[@]}" seal ack job="$j" order=1 result=ok grant=99 | as bob "${ECTL[@]}" send)
expect_refused "bob's ack for job $j" "^error uid $bob_uid may not speak" "uid $bob_uid may not speak for job $j" "$out"

# 3. alice's status before a hello on its connection.
out=$(as alice "${ECTL[@]}" seal status job="$j" gpus=1 step=3 | as alice "${ECTL[@]}" send)
expect_refused "status before hello" "before a hello" "status about job $j before a hello" "$out"

# 4. A controller-only type sent to the controller.
out=$(as alice "${ECTL[@]}" seal target job="$j" order=1 target=2 | as alice "${ECTL[@]}" send)
expect_refused "target sent by a job" "not one elasticd accepts" "a target message is not one elasticd accepts" "$out"

# 5. Replay: the same sealed query twice; munged refuses the second.
as alice "${ECTL[@]}" seal query >"$T_DIR/query.frame"
out=$("${ECTL[@]}" send <"$T_DIR/query.frame")
echo "$out" | grep -q "^reply end" || t_fail "a fresh sealed query was not answered: $out"
out=$("${ECTL[@]}" send <"$T_DIR/query.frame")
expect_refused "replayed credential" "munge credential rejected" "munge credential rejected: .*[Rr]eplayed" "$out"

# 6. Forged: one character of the credential changed.
as alice "${ECTL[@]}" seal query >"$T_DIR/q2.frame"
python3 - "$T_DIR/q2.frame" "$T_DIR/forged.frame" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = 12 + len(b[12:]) // 2          # a byte in the middle of the credential
b[i] = ord('A') if b[i] != ord('A') else ord('B')
open(sys.argv[2], 'wb').write(b)
EOF
out=$("${ECTL[@]}" send <"$T_DIR/forged.frame")
expect_refused "forged credential" "munge credential rejected" "munge credential rejected" "$out"

# 7. The header says ack, the sealed payload is a query.
python3 - "$T_DIR/q2.frame" "$T_DIR/retyped.frame" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[5] = 6                            # ELASTIC_MSG_ACK
open(sys.argv[2], 'wb').write(b)
EOF
out=$("${ECTL[@]}" send <"$T_DIR/retyped.frame")
expect_refused "header type differs from sealed type" "header says ack but the sealed payload is query" \
	"header says ack but the sealed payload is query" "$out"

# 8. Malformed frames.
frame() { printf "$1"; }
out=$(frame 'GET / HTTP/1.0\r\n\r\n' | "${ECTL[@]}" send)
expect_refused "HTTP request" "bad magic" "bad magic 47455420" "$out"
out=$(frame 'ELJC\002\001\000\000\000\000\000\010MUNGE:x:' | "${ECTL[@]}" send)
expect_refused "version 2" "version 2 not supported" "protocol version 2 not supported" "$out"
out=$(frame 'ELJC\001\001\000\000\000\000\000\000' | "${ECTL[@]}" send)
expect_refused "empty body" "body length 0" "body length 0 not in" "$out"
out=$(frame 'ELJC\001\001\000\000\177\377\377\377' | "${ECTL[@]}" send)
expect_refused "2 GiB body" "body length 2147483647" "body length 2147483647" "$out"
out=$(frame 'ELJC\001\077\000\000\000\000\000\010MUNGE:x:' | "${ECTL[@]}" send)
expect_refused "unknown type" "unknown message type 63" "unknown message type 63" "$out"
out=$(frame 'ELJC\001\001\000\000\000\000\000\012HELLO:x\001y:' | "${ECTL[@]}" send)
expect_refused "not a credential" "not a munge credential" "body is not a munge credential" "$out"
out=$(frame 'ELJC\001\001\000\000\000\000\000\010MUNGE:x\001' | "${ECTL[@]}" send)
expect_refused "control byte in body" "0x01" "body byte 0x01" "$out"
out=$(frame 'ELJC\001\001\000\000\000\000\000\020MUNGE:abcdefghi:' | "${ECTL[@]}" send)
expect_refused "garbage credential" "munge credential rejected" "munge credential rejected" "$out"
# Truncated frame, then the peer goes away.
frame 'ELJC\001\001\000\000\000\000\001\000MUNGE:abc' | "${ECTL[@]}" send -w 0.3 >/dev/null
sleep 0.2
grep -q "closed in the middle of a frame" "$T_DIR/elasticd.log" || t_fail "truncated frame not logged"

# 9. 300 random byte strings, some with a valid header in front.
n=0
for i in $(seq 1 150); do
	head -c $((RANDOM % 600 + 1)) /dev/urandom | "${ECTL[@]}" send -w 0.5 >/dev/null
	{
		printf 'ELJC\001\001\000\000\000\000\002\000MUNGE:'
		head -c 506 /dev/urandom
	} | "${ECTL[@]}" send -w 0.5 >/dev/null
	n=$((n + 2))
done
ctl_alive || t_fail "elasticd died on random input"
t_log "$n random frames: elasticd alive"

# 10. Connection floods: 1100 idle connections (over the limit of 1024: the
# quietest are closed for newer ones), then 50 peers that start a frame and
# never finish it (the newest: they stay until the frame timeout).
python3 - "$CTL_PORT" <<'EOF'
import os, resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
port = int(sys.argv[1])
conns = []
for i in range(1100):
    s = socket.create_connection((os.environ["CTL_HOST"], port))
    conns.append(s)
slow = []
for i in range(50):
    s = socket.create_connection((os.environ["CTL_HOST"], port))
    s.sendall(b"ELJC\x01\x01\x00\x00\x00\x00\x01\x00MUNGE:")
    slow.append(s)
time.sleep(11)
for s in conns + slow:
    s.close()
EOF
ctl_alive || t_fail "elasticd died under a connection flood"
grep -q "too many connections (1024): closing .*, the quietest without a job" "$T_DIR/elasticd.log" || t_fail "connections over the limit: no quiet one closed for a new one"
grep -q "frame not finished in time: closing" "$T_DIR/elasticd.log" || t_fail "unfinished frames not timed out"
t_log "1100 idle + 50 half-frame connections: quietest closed over the limit, timed out, elasticd alive"

# Still serving: alice's job connected, status answers, root may speak for it.
[ "$(ctl status -p -j "$j" | cut -d'|' -f9)" = 1 ] || t_fail "alice's connection was lost"
out=$(as alice "${ECTL[@]}" seal query job="$j" | "${ECTL[@]}" send)
echo "$out" | grep -q "^reply jobinfo" || t_fail "query after the abuse not answered: $out"
# (alice's reconnecting client takes the job's connection back at once, so
# root's client ends "closed"; what matters is that it was answered.)
out=$("${ECTL[@]}" proto-client -j "$j" -x 2 2>&1) || true
echo "$out" | grep -q " target " || t_fail "root may not speak for job $j: $out"
grep -q "job $j: registered from .* (uid 0" "$T_DIR/elasticd.log" || t_fail "root's hello not accepted"
t_log "root's hello for job $j accepted; rejections logged: $(grep -c 'rejected message' "$T_DIR/elasticd.log")"

# alice's own job, but her ack names a grant that is no pending release of it
# (another user's grant, or one already ended): nothing to cancel, a log line.
out=$({
	as alice "${ECTL[@]}" seal hello job="$j" host=node1 gpus=1 step=0
	as alice "${ECTL[@]}" seal ack job="$j" order=7 result=ok grant=99
} | as alice "${ECTL[@]}" send -w 1)
echo "$out" | grep -q "^error" && t_fail "alice's ack naming grant 99 was refused: $out"
sleep 0.2
grep -q "job $j: ack of order 7 names grant 99, which is no pending release of job $j: ignored" "$T_DIR/elasticd.log" ||
	t_fail "an ack naming another job's grant left no log line"
ctl_alive || t_fail "elasticd died on an ack naming another job's grant"
t_log "alice's ack naming grant 99 (no release of job $j): ignored, logged"
t_log "PASS"
