#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/reshape.sh: a shrink that no grants add up to is still
# exact and one re-form. On one node of 4 GPUs, job 1 (alice, the real
# elastic-run + elastic_train, priority 10000) grows to 4: its lead's GPU and
# grants of 1 and 2. Job 2 (bob, priority 5000) arrives: 3 / 1, job 1 gives
# back its 1-GPU grant. Job 3 (bob, 5000) arrives: 2 / 1 / 1, and job 1 must
# give back 1 where it holds only a 2-GPU grant. elasticd re-shapes: it
# releases the 2 and starts a 1 in its place, and elastic-run waits for that
# grant before relaunching, so job 1 goes 3 -> 2 in one re-form and holds
# exactly 2 (never 1) once it trains again; with elasticd's default cool-down
# (10 s) a plain over-release would leave it on 1 for 10 s at least.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_block_nodes node2 node3 node4
# elasticd's default cool-down: the GPU given back beyond the excess must
# return with the release itself, not with a grow a tick later.
ctl_conf PolicyMode=priority CoolDown=10
ctl_start

j1=$(ctl_train_job train-alice alice acct_a \
	"--epochs 400 --samples 4096 --global-batch 128 --step-sleep 25000" 10000 \
	--elastic-gpus=1-4 --elastic-grace=30 -N1 -n1)
out=$T_DIR/train-alice.out

# Latest size the trainer reported.
size_now() { grep -aEo '^step [0-9]+ epoch [0-9]+ size [0-9]+' "$out" 2>/dev/null | tail -n1 | awk '{print $6}'; }
wait_size() { # size timeout
	local end=$((SECONDS + $2))
	until [ "$(size_now)" = "$1" ]; do
		[ $SECONDS -lt $end ] || t_fail "job 1 does not train at size $1 after $2 s (now '$(size_now)')"
		sleep 0.2
	done
}
grant_sizes() { squeue -h -t R -n "elastic:$j1" -O "tres-alloc:200" | grep -o 'gres/gpu=[0-9]*' | cut -d= -f2 | sort -n | paste -sd' '; }

ctl_wait_split 60 "$j1=4"
wait_size 4 60
[ "$(grant_sizes)" = "1 2" ] || t_fail "job 1's grants are '$(grant_sizes)', not '1 2'"
t_log "job 1 ($j1): 4 GPUs (its own and grants of 1 and 2), training at 4"

j2=$(ctl_job bob acct_b 1 4 10 5000)
ctl_client bob "$j2"
ctl_wait_split 60 "$j1=3" "$j2=1"
wait_size 3 60
[ "$(grant_sizes)" = "2" ] || t_fail "after 4 -> 3 job 1's grants are '$(grant_sizes)', not '2'"
t_log "job 2 ($j2) arrived: 3 / 1, job 1 gave back its 1-GPU grant"

mark=$(wc -l <"$out")
logmark=$(wc -l <"$T_DIR/elasticd.log")
j3=$(ctl_job bob acct_b 1 4 10 5000)
ctl_client bob "$j3"
ctl_wait_split 60 "$j1=2" "$j2=1" "$j3=1"
wait_size 2 60
sleep 2 # a second re-form, if any, would follow within the grant's start
after=$(tail -n +"$((mark + 1))" "$out" | tr -d '\000')
reforms=$(grep -Ec "elastic-run [^ ]+: re-form [0-9]+: " <<<"$after")
[ "$reforms" = 1 ] || t_fail "job 1 re-formed $reforms times for 3 -> 2, not once: $(grep -E 're-form [0-9]+:' <<<"$after")"
grep -Eq "re-form [0-9]+: 2 ranks on" <<<"$after" ||
	t_fail "job 1's re-form was not onto 2 GPUs: $(grep -E 're-form [0-9]+:' <<<"$after")"
grep -Eq "waited [0-9]+ ms for 1 GPU of grants before launching" <<<"$after" ||
	t_fail "elastic-run did not wait for the grant that replaces the released one"
sizes=$(grep -aEo '^step [0-9]+ epoch [0-9]+ size [0-9]+' <<<"$after" | awk '{print $6}' | uniq | paste -sd' ')
[ "$sizes" = "3 2" ] || [ "$sizes" = "2" ] || t_fail "job 1 trained at sizes '$sizes' during 3 -> 2 (want 3 then 2)"
[ "$(grant_sizes)" = "1" ] || t_fail "after 3 -> 2 job 1's grants are '$(grant_sizes)', not '1'"
[ "$(ctl_gpus "$j1")" = 2 ] || t_fail "job 1 holds $(ctl_gpus "$j1") GPUs, not 2"
tail -n +"$((logmark + 1))" "$T_DIR/elasticd.log" | grep -Eq "job $j1: .*release of grant [0-9]+ \(2 GPUs" ||
	t_fail "elasticd did not release job 1's 2-GPU grant"
t_log "job 3 ($j3) arrived: 2 / 1 / 1; job 1 re-shaped its 2-GPU grant to 1 in one re-form: $(grep -E 'waited [0-9]+ ms' <<<"$after" | sed 's/^elastic-run [^ ]*: //')"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
