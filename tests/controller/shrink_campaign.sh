#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/shrink_campaign.sh: planned shrinks under elasticd, N ranks
# over 2 nodes (N/2 GPUs on each), real trainer under elastic-run. One job of
# --elastic-gpus=N/2-N holds N/2 GPUs on one node and grants of N/2 on the
# other; each run the admin lowers its maximum to N/2 (scontrol update of the
# elastic tag, as elasticd reads it), elasticd orders the release of the other
# node's grants, and the job shrinks to N/2 ranks; then the maximum goes back
# to N and the job grows again (a re-form). On a runtime that survives a lost
# daemon (Open MPI 6) every shrink must be in place (the ranks on the released
# node leave at a step boundary, the others go on: no relaunch); on Open MPI 5
# each shrink is a planned re-form (relaunch). Either way no step is lost or
# redone, every sample is used once per epoch, and the final model equals a
# static run's bit for bit. Prints, for each shrink, the order (elasticd's
# log) -> the first step committed at N/2 ranks, and libelastic's pause (the
# commit that saw the stop -> the survivors' new world; in place only), with
# medians and maxima.
#   ELASTIC_SHRINK_RUNS (default 2), ELASTIC_SHRINK_NP (4 or 8; default 4)
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"

runs=${ELASTIC_SHRINK_RUNS:-2}
np=${ELASTIC_SHRINK_NP:-4}
[[ $runs =~ ^[1-9][0-9]*$ ]] || t_fail "ELASTIC_SHRINK_RUNS='$runs': give a count of at least 1"
[[ $np =~ ^(4|8)$ ]] || t_fail "ELASTIC_SHRINK_NP='$np': give 4 or 8 ranks (half on each of 2 nodes)"
half=$((np / 2))
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_block_nodes node3 node4
# node1 and node2 keep $half GPUs free each: the job's N GPUs are N/2 a node
[ "$half" -lt 4 ] && ctl_block_gpus $((4 - half)) node1 node2
in_place=0
t_runtime_in_place && in_place=1

# Long enough for every run (a shrink, its acknowledgement and a grow: about
# 5.5 s on a quiet host, 1.3 epochs of 32 steps at 8 ranks, 3.3 at 4; twice
# that under a whole check's load), not much longer: the rest runs after the
# last.
epochs=$((runs * (np == 4 ? 8 : 4) + 4))
targs="--samples 4096 --global-batch 128"
ctl_reference "$epochs" "$targs"
ctl_start
j=$(ctl_train_job shrink alice acct_a "--epochs $epochs $targs --step-sleep 20000 --compare $T_DIR/ref.model" "" \
	--elastic-gpus="$half-$np" --elastic-grace=30 -N1 -n1)
out=$T_DIR/shrink.out

# Steps committed at SIZE after line LINE of the output: "step t" lines.
steps_at() { # size line
	tail -n +"$2" "$out" | sed -nE "s/^step ([0-9]+) epoch [0-9]+ size $1 .* t=([0-9.]+).*/\1 \2/p"
}
wait_steps() { # size count timeout line
	local end=$((SECONDS + $3))
	until [ -f "$out" ] && [ "$(steps_at "$1" "$4" | wc -l)" -ge "$2" ]; do
		# (slurmctld asked every 2 s, not each poll: the poll must not
		# take the CPU from what it measures)
		if grep -aq '^done: ' "$out" 2>/dev/null; then
			t_fail "the training ended before run $i of $runs: give it more epochs (now $epochs)"
		fi
		if [ $SECONDS -ge $end ] || { [ $((SECONDS % 2)) = 0 ] && ! squeue -h -j "$j" | grep -q .; }; then
			tail -n 30 "$out" "$T_DIR/elasticd.log" >&2
			t_fail "job $j does not train at $1 ranks ($2 steps after line $4 in $3 s)"
		fi
		sleep 0.1
	done
}
# elasticd's log stamp of the first (or, with "last", the last) line for the
# job matching WHAT after line LINE, in epoch seconds.
stamp_of() { # line what [last]
	local s
	s=$(tail -n +"$1" "$T_DIR/elasticd.log" | grep -a "job $j: $2" | if [ -n "${3:-}" ]; then tail -n1; else head -n1; fi |
		sed -E 's/^\[([^]]*)\].*/\1/')
	[ -n "$s" ] && date -d "${s/T/ }" +%s.%N
}
order_at() { stamp_of "$1" "ordered release of grant"; }
count_of() { tail -n +"$1" "$T_DIR/elasticd.log" | grep -ac "job $j: $2"; }

i=0
wait_steps "$np" 3 90 1
t_log "job $j: $np ranks over 2 nodes: $(ctl_grants "$j" | awk '{print $3 ":" $4}' | paste -sd' ')"
: >"$T_DIR/order_ms"
: >"$T_DIR/pause_ms"
for i in $(seq 1 "$runs"); do
	lo=$(($(wc -l <"$out") + 1))
	le=$(($(wc -l <"$T_DIR/elasticd.log") + 1))
	ctl_set_max "$j" "$half"
	wait_steps "$half" 1 60 "$lo"
	t_first=$(steps_at "$half" "$lo" | head -n1 | awk '{print $2}')
	t_ord=$(order_at "$le") || t_fail "run $i: no release order in elasticd's log"
	ms=$(awk -v a="$t_ord" -v b="$t_first" 'BEGIN { printf "%.1f", (b - a) * 1e3 }')
	echo "$ms" >>"$T_DIR/order_ms"
	how="re-formed"
	pause=""
	if [ "$in_place" = 1 ]; then
		# elastic-run's line comes when it reads rank 0's record of the new size
		end=$((SECONDS + 10))
		until line=$(tail -n +"$lo" "$out" | grep -a -m1 "planned shrink in place: $half ranks left after step") ||
			[ $SECONDS -ge $end ] || tail -n +"$lo" "$out" | grep -aq 're-form [0-9]*:'; do
			sleep 0.1
		done
		[ -n "$line" ] ||
			t_fail "run $i: the shrink to $half was not done in place: $(tail -n +"$lo" "$out" | grep -a -m2 -e 're-form [0-9]*:' -e 'planned shrink')"
		pause=$(tail -n +"$lo" "$out" | grep -aEo "size $np -> $half in [0-9.]+ ms" | awk '{print $6}' | sort -n | tail -n1)
		[ -n "$pause" ] && echo "$pause" >>"$T_DIR/pause_ms"
		how="in place (${line##*go on (}"
		how="${how%%)*}), pause ${pause:-?} ms"
	fi
	# In place the releases are acknowledged (elasticd then cancels the
	# grants) only after the survivors committed a step at their new size;
	# the next run starts once they are, as an admin would.
	end=$((SECONDS + 30))
	until n_ord=$(count_of "$le" "ordered release of grant") &&
		[ "$n_ord" -gt 0 ] && [ "$(count_of "$le" "acknowledged the release of grant")" -ge "$n_ord" ]; do
		[ $SECONDS -lt $end ] || t_fail "run $i: $n_ord releases ordered, not all acknowledged in 30 s"
		sleep 0.2
	done
	t_ack=$(stamp_of "$le" "acknowledged the release of grant" last)
	# (in place; a re-form acknowledges once the ranks stopped)
	[ "$in_place" = 0 ] || awk -v a="$t_ack" -v f="$t_first" 'BEGIN { exit !(a > f) }' ||
		t_fail "run $i: the release was acknowledged ($t_ack) before the first step at $half ranks ($t_first)"
	ack=$(awk -v a="$t_ack" -v o="$t_ord" 'BEGIN { printf "%.0f", (a - o) * 1e3 }')
	t_log "run $i: order -> first step at $half ranks $ms ms, $how; acknowledged $ack ms after the order"
	lo=$(($(wc -l <"$out") + 1))
	ctl_set_max "$j" "$np"
	wait_steps "$np" 3 90 "$lo"
done
t_wait_job "$j" 600
ctl_train_done "$out" "$epochs"
nsteps=$(grep -aEo '^done: [0-9]+ steps' "$out" | awk '{print $2}')
# (each run checked its shrink was in place before any re-form; a grow may
# take two re-forms when its grants start far apart)
launches=$(grep -ao "job [0-9]*: finished ([0-9]* launch" "$out" | awk '{print $4}' | tr -d '(')
t_log "$launches launches for $runs shrinks and $runs grows"
stats() { sort -n "$1" | awk '{ a[NR] = $1 } END { if (!NR) { print "none"; exit } m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "median %.1f ms, max %.1f ms (%d runs)", m, a[NR], NR }'; }
t_log "$np -> $half ranks over 2 nodes, $runs planned shrinks ($([ "$in_place" = 1 ] && echo "in place" || echo "re-formed")): order -> first step at $half ranks: $(stats "$T_DIR/order_ms")"
[ "$in_place" = 1 ] && t_log "$np -> $half: libelastic's pause (the commit that saw the stop -> the new world): $(stats "$T_DIR/pause_ms")"
ctl_alive || t_fail "elasticd died"
t_log "PASS: $runs shrinks and grows, $nsteps steps once each, model equal to the static run's"
