#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/status.sh: live status of a real training job. An elastic
# job (sbatch --elastic-gpus=2, elastic-run, elastic_train on libelastic)
# trains under elasticd; `elastic-ctl status` shows what the job itself
# reported: its GPUs, a STEP that moves on while it trains (within a few
# steps of what rank 0 prints) and a RATE in samples/s near the trainer's
# own (global batch x steps/s). Against an elasticd older than the measured
# scaling, status still answers and `elastic-ctl scaling` says why it cannot.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_block_nodes node2 node3 node4
ctl_start

id=$(ctl_train_job job alice acct_a \
	"--epochs 30 --samples 4096 --global-batch 128 --step-sleep 50000" "" \
	--elastic-gpus=2 -N1 -n1 -w node1)

# job|user|min|max|target|gpus|state|grants|connected|resized|nodes|step|rate
field() { ctl status -j "$id" -p 2>/dev/null | awk -F'|' -v f="$1" '{ print $f }'; }
printed() { grep -aEo '^step [0-9]+ ' "$T_DIR/job.out" | tail -n1 | awk '{ print $2 }'; }
end=$((SECONDS + 90))
until [ "$(field 12)" != "-" ] && [ "$(field 12)" -ge 20 ] 2>/dev/null; do
	[ $SECONDS -lt $end ] || { tail -n 20 "$T_DIR/job.out"; ctl status; t_fail "elastic-ctl status shows no step for job $id after 90 s (step '$(field 12)')"; }
	sleep 0.5
done
line1=$(ctl status -j "$id" -p)
p1=$(printed)
sleep 3
line2=$(ctl status -j "$id" -p)
p2=$(printed)
t_log "status: $line1"
t_log "status 3 s later: $line2 (rank 0 printed steps $p1 .. $p2)"
IFS='|' read -r _ user _ _ _ gpus _ _ conn _ _ s1 r1 _ <<<"$line1"
IFS='|' read -r _ _ _ _ _ _ _ _ _ _ _ s2 r2 _ <<<"$line2"
[ "$user" = alice ] || t_fail "user '$user', expected alice"
[ "$gpus" = 2 ] || t_fail "GPUS $gpus, expected the job's 2"
[ "$conn" = 1 ] || t_fail "channel not connected ($conn)"
[ "$s2" -gt "$s1" ] || t_fail "STEP did not move on while the job trained ($s1 -> $s2)"
# what elasticd shows is what the job reported: within a few steps of rank 0
[ $((p1 - s1)) -le 30 ] && [ $((s1 - p1)) -le 30 ] ||
	t_fail "STEP $s1 is far from the step rank 0 printed ($p1)"
# 128 samples a step, a step about 50 ms (sleep) plus its cost on 2 shared
# cores: somewhere between 128 and 2560 samples/s
awk -v r="$r2" 'BEGIN { exit !(r >= 128 && r <= 2560) }' ||
	t_fail "RATE $r2 samples/s is not that of 128-sample steps of 50-1000 ms"
# An elasticd older than the measured scaling refuses the key that asks for
# it: status asks again without it; scaling says why it shows nothing. A
# stand-in answers each connection with frames sealed beforehand.
seal() { "$CTL_BIN/elastic-ctl" seal "$@"; }
seal error reason="line 2: unknown key 'scaling'" >"$T_DIR/old-1"
{ seal jobinfo job=77 user=alice min=1 max=8 target=2 gpus=2 state=steady \
	resized=0 connected=1 grants=0 && seal end count=1; } >"$T_DIR/old-2"
seal error reason="line 2: unknown key 'scaling'" >"$T_DIR/old-3"
python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(3)
print(s.getsockname()[1], flush=True)
s.settimeout(30)
for i in (1, 2, 3):
    c, _ = s.accept()
    c.settimeout(5)
    need, got = 12, b""
    while len(got) < need:  # one whole frame: its header gives its length
        b = c.recv(65536)
        if not b:
            break
        got += b
        if len(got) >= 12:
            need = 12 + int.from_bytes(got[8:12], "big")
    c.sendall(open("%s/old-%d" % (sys.argv[1], i), "rb").read())
    c.close()
' "$T_DIR" >"$T_DIR/old-port" &
old_pid=$!
end=$((SECONDS + 10))
until [ -s "$T_DIR/old-port" ]; do
	[ $SECONDS -lt $end ] || t_fail "the stand-in elasticd did not start"
	sleep 0.1
done
old=127.0.0.1:$(cat "$T_DIR/old-port")
out=$("$CTL_BIN/elastic-ctl" -c "$old" status -p 2>&1) ||
	t_fail "elastic-ctl status against an older elasticd failed: $out"
[ "$out" = "77|alice|1|8|2|2|steady|0|1|0|-|-|-|-" ] ||
	t_fail "elastic-ctl status against an older elasticd printed '$out'"
out=$("$CTL_BIN/elastic-ctl" -c "$old" scaling 2>&1) &&
	t_fail "elastic-ctl scaling against an older elasticd exited 0: $out"
grep -q "older than elastic-ctl" <<<"$out" ||
	t_fail "elastic-ctl scaling against an older elasticd said: $out"
wait "$old_pid" || t_fail "the stand-in elasticd did not serve its 3 connections"
t_log "an elasticd that refuses 'scaling': status asked again without it; scaling said: $out"
t_log "PASS: job $id shows 2 GPUs, step $s1 -> $s2, $r2 samples/s"
