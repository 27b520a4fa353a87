#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/train_e2e.sh: the reference scenario end to end, with the
# real pieces: sbatch --elastic-gpus (SPANK + job_submit), elasticd, and in
# each job elastic-run running elastic_train on libelastic. 2 nodes x 4 GPUs:
# job 1 (alice) alone grows to 8 ranks; job 2 (bob) arrives -> 4/4; job 2's
# priority 10000 vs 5000 -> 5/3; job 1 finishes -> job 2 grows to 8. Both
# jobs complete at the sizes of the scenario in that order, every epoch uses
# every sample once (the trainer's own check: 0 bad, 0 violations), the loss
# falls, and each final model equals a static 2-rank run of the same
# training bit for bit (the trainer's reduction is exact whatever the size).
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_block_nodes node3 node4

# Static references: the same trainings at 2 ranks, once each, no resize.
targs="--samples 4096 --global-batch 128"
ctl_references "$targs" 20 26
ctl_start

# One training job of USER, output in train-USER.out: prints its id.
train_job() { # user account epochs priority (set before it enters the split)
	ctl_train_job "train-$1" "$1" "$2" \
		"--epochs $3 $targs --step-sleep 25000 --compare $T_DIR/ref-$3.model" "$4" \
		--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1
}
# Latest size rank 0 of USER's job reported.
size_of() { grep -aEo '^step [0-9]+ epoch [0-9]+ size [0-9]+' "$T_DIR/train-$1.out" 2>/dev/null | tail -n1 | awk '{print $6}'; }
wait_size() { # user size timeout
	local end=$((SECONDS + $3))
	until [ "$(size_of "$1")" = "$2" ]; do
		if [ $SECONDS -ge $end ]; then
			tail -n 30 "$T_DIR/train-$1.out" >&2
			tail -n 30 "$T_DIR/elasticd.log" >&2
			t_fail "$1's job does not train at size $2 after $3 s (now $(size_of "$1"))"
		fi
		sleep 0.2
	done
}

t_start=$(date +%Y-%m-%dT%H:%M:%S)
j1=$(train_job alice acct_a 20 5000)
ctl_wait_split 30 "$j1=8"
wait_size alice 8 60
t_log "job 1 ($j1): 8 GPUs, training at 8 ranks"

# Job 2 waits up to 15 s for its grants (elastic-run's default is 3 s):
# under a loaded host Slurm has taken 3.4 s to start them, and what this
# checks is that elastic-run waits for them, not how fast Slurm is.
j2=$(CTL_RUN_ARGS="--grant-wait 15" train_job bob acct_b 26 5000)
ctl_wait_split 90 "$j1=4" "$j2=4"
wait_size alice 4 60
wait_size bob 4 60
t_log "job 2 ($j2) arrived: 4/4 GPUs, both training at 4 ranks"
# It launched on its share at once: elastic-run waited for the grants
# elasticd started for it (--grant-wait) rather than launching on its first
# GPU and re-forming a moment later.
first=$(grep -a -m1 -E "elastic-run [^ ]+: job $j2: [0-9]+ ranks? on" "$T_DIR/train-bob.out")
case "$first" in
*": job $j2: 4 ranks on"*) t_log "job 2's first launch: ${first#*: job $j2: }" ;;
*) t_fail "job 2 did not launch on its share of 4 at once: '$first'" ;;
esac

t0=$(date +%s.%N)
scontrol update JobId="$j2" Priority=10000
ctl_wait_split 90 "$j1=3" "$j2=5"
wait_size alice 3 60
wait_size bob 5 60
t_log "priority 10000 vs 5000: 5/3 GPUs and ranks $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")s after the update"

t_wait_job "$j1" 400
t_log "job 1 completed"
ctl_wait_split 90 "$j2=8"
wait_size bob 8 60
t_log "job 2 alone: 8 GPUs, 8 ranks"
t_wait_job "$j2" 400
t_log "job 2 completed"

# The sizes a job trained at, in order, must hold WANT as a subsequence and
# end with its last element.
sizes_follow() { # "sizes seen" "sizes wanted"
	awk -v seen="$1" -v want="$2" 'BEGIN { ns = split(seen, s, " "); nw = split(want, w, " ")
		j = 1; for (i = 1; i <= ns && j <= nw; i++) if (s[i] == w[j]) j++
		exit !(j > nw && s[ns] == w[nw]) }'
}
for u in alice bob; do
	f=$T_DIR/train-$u.out
	e=$([ $u = alice ] && echo 20 || echo 26)
	grep -aEq "^done: [0-9]+ steps, $e epochs, .*usage: $e epochs checked, 0 bad, 0 violations" "$f" ||
		t_fail "$u's training did not finish with every sample used once ($e epochs checked, 0 bad, 0 violations): $(grep -a '^done: ' "$f" || tail -n 5 "$f")"
	grep -aq "^model matches reference" "$f" ||
		t_fail "$u's final model is not the static run's: $(grep -a '^model ' "$f" || echo 'no comparison line')"
	sizes=$(grep -aEo '^step [0-9]+ epoch [0-9]+ size [0-9]+' "$f" | awk '{print $6}' | uniq | tr '\n' ' ')
	want=$([ $u = alice ] && echo "8 4 3" || echo "4 5 8")
	sizes_follow "$sizes" "$want" || t_fail "$u's job trained at sizes '$sizes', not through '$want' in that order"
	first=$(grep -aEo '^step [0-9]+ .* loss [0-9.]+' "$f" | head -n1 | awk '{print $NF}')
	last=$(grep -aEo '^step [0-9]+ .* loss [0-9.]+' "$f" | tail -n1 | awk '{print $NF}')
	awk "BEGIN{exit !($last < $first)}" || t_fail "$u's loss did not fall ($first -> $last)"
	t_log "$u: sizes $sizes(through $want); loss $first -> $last; $(grep -a '^done: ' "$f"); $(grep -a '^model matches' "$f")"
	# A runtime that survives a lost daemon (Open MPI 6): alice's shrinks
	# (8 -> 4 -> 3) are done in place: ranks on the released GPUs leave at
	# a step boundary, the others go on in the same launch.
	if [ $u = alice ] && t_runtime_in_place; then
		n=$(grep -ac 'planned shrink in place: [0-9]* ranks\{0,1\} left after step' "$f")
		[ "$n" -ge 2 ] || t_fail "alice's shrinks were not done in place ($n planned shrinks in place; $(grep -a 're-form [0-9]*:' "$f" | head -3))"
		grep -aq "job [0-9]*: finished (1 launch," "$f" ||
			t_fail "alice's job was relaunched: $(grep -a -B1 -E 're-form [0-9]+:' "$f" | grep -a -E 'mpirun ended|re-form [0-9]+:|controller:' | head -4)"
		t_log "alice: $n planned shrinks in place, no relaunch; pauses: $(grep -aEo 'size [0-9]+ -> [0-9]+ in [0-9.]+ ms' "$f" | sort -u | paste -sd';' -)"
	fi
done
# Every grant that ran ends COMPLETED 0:0 in accounting, released by its
# job or ended with it, not CANCELLED (a grant cancelled while it was still
# pending never ran: NodeList "None assigned").
# (The accounting database outlives the cluster: jobs of earlier runs
# with the same ids are left out by their time.)
grants() { sacct -X -n -P -S "$t_start" --name="elastic:$j1,elastic:$j2" -o JobID,JobName,NodeList,AllocTRES,State,ExitCode; }
end=$((SECONDS + 30))
until [ -n "$(grants)" ] && ! grants | grep -qE '\|(RUNNING|PENDING|COMPLETING)\|'; do
	[ $SECONDS -lt $end ] || t_fail "sacct does not show the grants ended after 30 s: $(grants | paste -sd' ' -)"
	sleep 1
done
grants | sed 's/^/  /'
bad=$(grants | awk -F'|' '$3 != "None assigned" && ($5 != "COMPLETED" || $6 != "0:0")')
[ -z "$bad" ] || t_fail "grants that ran did not end COMPLETED 0:0: $(paste -sd' ' - <<<"$bad")"
n=$(grants | awk -F'|' '$3 != "None assigned"' | wc -l)
[ "$n" -ge 3 ] || t_fail "only $n grants ran"
t_log "sacct: the $n grants that ran ended COMPLETED 0:0"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
