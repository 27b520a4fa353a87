#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/foundation/two_users_fairshare.sh: jobs of both test users (alice in
# acct_a, bob in acct_b) run, are charged to their own accounts, and their
# usage shows in sshare (after slurmctld's next priority calculation, which
# runs once a minute at the shortest).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_need_cluster
t_scratch
ja=$(t_sbatch alice -n1 --gres=gpu:1 -o "$T_DIR/a.out" --wrap 'id -un; sleep 3')
jb=$(t_sbatch bob -n1 --gres=gpu:1 -o "$T_DIR/b.out" --wrap 'id -un; sleep 3')
t_log "alice job $ja, bob job $jb"
t_wait_job "$ja" 60
t_wait_job "$jb" 60
t_grep '^alice$' "$T_DIR/a.out" "alice's job did not run as alice"
t_grep '^bob$' "$T_DIR/b.out" "bob's job did not run as bob"
acc=$(sacct -n -X -j "$ja,$jb" -o User,Account -P | sort | paste -sd' ')
[ "$acc" = "alice|acct_a bob|acct_b" ] || t_fail "accounts in sacct: '$acc'"
# Usage is folded into the association tree by the priority thread.
end=$((SECONDS + 90))
while :; do
	ua=$(sshare -n -P -A acct_a -u alice -o User,RawUsage | awk -F'|' '$1=="alice"{print $2}')
	ub=$(sshare -n -P -A acct_b -u bob -o User,RawUsage | awk -F'|' '$1=="bob"{print $2}')
	[ "${ua:-0}" -gt 0 ] && [ "${ub:-0}" -gt 0 ] && break
	[ $SECONDS -lt $end ] || t_fail "sshare RawUsage still alice=${ua:-none} bob=${ub:-none} after 90 s"
	sleep 2
done
sshare -a -o Account,User,RawShares,RawUsage,FairShare
t_log "PASS: usage in sshare: alice=$ua bob=$ub"
