#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/standby.sh: one elasticd acts, a second stands by and
# takes over. Two elasticd started at once on the controller host and its
# backup address: one acts, the other stands by and says which one acts,
# to jobs and to elastic-ctl alike. Two real training jobs share 8 GPUs; as
# the first shrinks for the second (a release ordered), the active elasticd
# is SIGKILLed. The standby takes over within TakeoverTimeout (5 s) plus
# its read-back, keeps the drain an administrator set, finishes the release
# the dead one ordered, and both jobs end with their static runs' models.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
. "${top_srcdir:-/src}/tests/slurm_side/lib.sh"
ctl_setup
ctl_need_trainer
es_need_plugins
t_ompi_env
ctl_block_nodes node3 node4

# The backup controller's address: another loopback address, or on the
# nodes' bridge (one network namespace per node) a second address there.
if [ "$CTL_HOST" = 127.0.0.1 ]; then
	BACKUP=127.0.0.2
else
	BACKUP=${CTL_HOST%.*}.2
	ip -o addr show | grep -q " inet $BACKUP/" ||
		ip addr add "$BACKUP/24" dev "$(ip -o addr show | awk -v a="$CTL_HOST" '$4 ~ "^" a "/" {print $2; exit}')" ||
		t_skip "cannot add the backup address $BACKUP beside $CTL_HOST"
fi
# Jobs learn both addresses from the cluster's elastic.conf (the SPANK
# plugin's); it is put back at the end.
cp "$ES_CONF" "$T_DIR/cluster-elastic.conf"
trap 'rc=$?; cp "$T_DIR/cluster-elastic.conf" "$ES_CONF"; ctl_cleanup $rc' EXIT
echo "BackupControllerHost=$BACKUP" >>"$ES_CONF"
ctl_conf "BackupControllerHost=$BACKUP" TakeoverTimeout=5
BOTH="$CTL_HOST:$CTL_PORT,$BACKUP:$CTL_PORT"
ectl() { "$CTL_BIN/elastic-ctl" -c "$BOTH" "$@"; }

targs="--samples 4096 --global-batch 128"
ctl_references "$targs" 24 16

# 1. Two started at once.
"$CTL_BIN/elasticd" -D -f "$T_DIR/elastic.conf" -L "$T_DIR/a.log" &
pa=$!
"$CTL_BIN/elasticd" -D -f "$T_DIR/elastic.conf" -L "$T_DIR/b.log" &
pb=$!
CTL_CLIENTS="$CTL_CLIENTS $pa $pb"
end=$((SECONDS + 15))
until [ "$(cat "$T_DIR/a.log" "$T_DIR/b.log" 2>/dev/null | grep -c 'holds the controller role')" = 1 ] &&
	grep -q "standing by: the active elasticd is" "$T_DIR/a.log" "$T_DIR/b.log"; do
	[ $SECONDS -lt $end ] || { tail -n 5 "$T_DIR/a.log" "$T_DIR/b.log" >&2; t_fail "not one active and one standing by after 15 s"; }
	sleep 0.2
done
if grep -q 'holds the controller role' "$T_DIR/a.log"; then
	active=$pa standby=$pb alog=$T_DIR/a.log slog=$T_DIR/b.log
else
	active=$pb standby=$pa alog=$T_DIR/b.log slog=$T_DIR/a.log
fi
held=$(grep -o 'this elasticd ([^)]*)' "$alog" | head -n1 | tr -d '()' | awk '{print $3}')
saddr=$(grep -o 'started (pid [0-9]*): listening on [^,]*' "$slog" | head -n1 | awk '{print $NF}')
t_log "two elasticd at once: $held acts (pid $active), $saddr stands by: $(grep -o 'standing by: .*' "$slog" | head -n1)"
out=$("$CTL_BIN/elastic-ctl" -c "$saddr" status 2>&1) && t_fail "the standby answered status: $out"
grep -q "standby: the active elasticd is $held" <<<"$out" || t_fail "the standby's answer does not name $held: $out"
ectl status >/dev/null || t_fail "elastic-ctl with both addresses found no active elasticd"
sleep 3
[ "$(cat "$T_DIR/a.log" "$T_DIR/b.log" | grep -c 'holds the controller role')" = 1 ] ||
	t_fail "a second elasticd took the role from a live one"
ectl drain node4 >/dev/null || t_fail "elastic-ctl drain node4 failed"

# 2. Two jobs; the active is killed while the first shrinks for the second.
# (equal priorities: the split is 8, then 4/4, whatever the lanes' load)
a=$(ctl_train_job alice alice acct_a "--epochs 24 $targs --step-sleep 25000 --compare $T_DIR/ref-24.model" 5000 \
	--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1)
ctl_wait_split 60 "$a=8"
b=$(ctl_train_job bob bob acct_b "--epochs 16 $targs --step-sleep 25000 --compare $T_DIR/ref-16.model" 5000 \
	--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1)
ctl_wait_line 60 "$alog" "job $a: shrinking" "no release ordered to job $a"
kill -9 "$active"
t0=$(date +%s.%N)
t_log "SIGKILLed the active elasticd (pid $active) as job $a shrinks: $(grep -a "job $a: shrinking" "$alog" | tail -n1 | cut -d' ' -f3-)"
ctl_wait_line 20 "$slog" "holds the controller role" "the standby did not take over"
took=$(awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
t_log "$saddr took over ${took} s after the kill (TakeoverTimeout 5 s): $(grep -a 'claiming the controller role' "$slog" | tail -n1 | cut -d' ' -f3-)"
awk -v t="$took" 'BEGIN { exit !(t <= 8) }' || t_fail "the takeover took $took s, more than TakeoverTimeout + 3 s"
grep -aq "elastic activity as administrators left it .*drained: node4" "$slog" ||
	t_fail "the new active elasticd did not read the drain back: $(grep -a 'administrators' "$slog" | tail -n1)"
ectl show | grep -q "drained: node4" || t_fail "elastic-ctl show after the takeover: $(ectl show)"
ctl_wait_split 60 "$a=4" "$b=4"
t_log "after the takeover: $a/$b hold 4/4 GPUs; $(grep -aEo "release of grant [0-9]+ was ordered before[^:]*" "$slog" | head -n1)"
grep -aE "registered job $a" "$T_DIR/alice.out" | tail -n1 | grep -qF "controller $saddr:" ||
	t_fail "job $a did not register with the new active elasticd: $(grep -a 'controller' "$T_DIR/alice.out" | tail -n 3)"
# what job a saw of the controllers
grep -a "controller [0-9a-z.]*:[0-9]*: " "$T_DIR/alice.out" | sed 's/^/  /'
ectl resume node4 >/dev/null || true
t_wait_job "$b" 300
t_wait_job "$a" 300
ctl_train_done "$T_DIR/alice.out" 24
ctl_train_done "$T_DIR/bob.out" 16
kill -0 "$standby" || t_fail "the elasticd that took over died"
t_log "PASS: one active at a time; takeover in $took s; both jobs trained through it to their static runs' models"
