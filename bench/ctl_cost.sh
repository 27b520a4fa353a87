#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/ctl_cost.sh: what elasticd costs slurmctld, with the whole job list
# read on every tick and change check (ELASTICD_QUERY=full)
# beside the targeted queries (the default), in one run.
#
# Two elastic jobs share node1 and node2 (8 GPUs; node3 and node4 blocked),
# with proto-clients on the channel, priorities 3000 and 1000
# (PolicyMode=priority, TickSeconds=2). The queue is filled with held jobs of
# alice to 0, 3,000 and 9,000 pending; each queue is measured without and
# with churn (alice submits a job and cancels it every 0.5 s). Per cell and
# mode, over WINDOW seconds (after sdiag --reset): the RPCs of SlurmUser
# (elasticd, and the job_submit plugin's job cache inside slurmctld: both
# are this product's, both run as SlurmUser) from sdiag, count and
# slurmctld time, and the
# share of the window that is; the per-type counts of the job and node RPCs
# elasticd uses (all users: the grants' own squeue polls are in them); CPU of
# slurmctld and elasticd from /proc. After the window: FLIPS priority
# updates, each timed from `scontrol update` to the first change of the
# running grants in squeue (the update in force, Slurm's view), median; and
# one new elastic job, timed from sbatch to elastic-ctl status listing it.
# Mode "none" is the baseline: no elasticd in the window (slurmctld's CPU
# without it; SlurmUser's RPCs are then the job_submit plugin's alone).
#
# usage: ctl_cost.sh [--window S] [--queues "0 3000 9000"] [--modes "none full targeted"]
#                    [--flips N] [--no-churn]
# Run inside the testbed cluster (testbed/cluster exec); top_builddir is the
# build tree (default /src/build-testbed). The full run (30 s windows) takes
# about 25 minutes; --window 5 --queues "0 3000" a few.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
export top_builddir=${top_builddir:-/src/build-testbed}
window=30 queues="0 3000 9000" modes="none full targeted" flips=3 churns="0 1"
while [ $# -gt 0 ]; do
	case "$1" in
	--window) window=$2; shift 2 ;;
	--queues) queues=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--flips) flips=$2; shift 2 ;;
	--no-churn) churns=0; shift ;;
	-h | --help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "ctl_cost: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/controller/ctl-lib.sh"
T_NAME=ctl_cost
ctl_setup
ctl_conf TickSeconds=2 PolicyMode=priority

# sdiag names users; elasticd and slurmctld run as SlurmUser.
slurm_user=$(scontrol show config | awk '/^SlurmUser/ { sub(/\(.*/, "", $3); print $3 }')
ctld_pid=$(cat "$(scontrol show config | awk '/^SlurmctldPidFile/ { print $3 }')")
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # clock ticks
hz=$(getconf CLK_TCK)
now() { date +%s.%N; }

bench_cleanup() {
	local rc=$?
	[ -n "${churn_pid:-}" ] && kill "$churn_pid" 2>/dev/null
	[ -n "${fill_pid:-}" ] && { pkill -P "$fill_pid"; kill "$fill_pid"; } 2>/dev/null
	scancel -u alice -n fill 2>/dev/null
	scancel -u alice -n churn 2>/dev/null
	ctl_cleanup "$rc"
}
trap bench_cleanup EXIT

# Held jobs of alice until the queue holds N of them.
fill() { # n
	local have
	have=$(squeue -h -u alice -n fill -t PD | wc -l)
	[ "$have" -lt "$1" ] || return 0
	# In the background: a signal's trap runs at once, not after xargs.
	seq $(($1 - have)) | runuser -u alice -- env SLURM_CONF="$SLURM_CONF" \
		xargs -P 2 -I{} sbatch -Q -H -J fill -A acct_a -o /dev/null --wrap true &
	fill_pid=$!
	wait "$fill_pid"
	fill_pid=""
	t_log "queue: $(squeue -h -t PD | wc -l) pending"
}

churn_start() {
	runuser -u alice -- env SLURM_CONF="$SLURM_CONF" bash -c '
		while :; do
			id=$(sbatch --parsable -H -J churn -A acct_a -o /dev/null --wrap true) &&
				scancel "${id%%;*}"
			sleep 0.5
		done' &
	churn_pid=$!
}
churn_stop() { kill "$churn_pid" 2>/dev/null; wait "$churn_pid" 2>/dev/null; churn_pid=""; }

# Running grants of both jobs, one line.
grant_set() { squeue -h -t R -n "elastic:$j1,elastic:$j2" -o %i | sort | tr '\n' ' '; }
# Wait until the grant set stays the same for 2 s (at most 60 s).
steady() {
	local last cur same=0 end=$((SECONDS + 60))
	last=$(grant_set)
	while [ $same -lt 10 ] && [ $SECONDS -lt $end ]; do
		sleep 0.2
		cur=$(grant_set)
		if [ "$cur" = "$last" ]; then same=$((same + 1)); else same=0 last=$cur; fi
	done
}

# Seconds from a priority update to the first change of the grant set.
flip() { # job priority
	local before t0 end
	before=$(grant_set)
	t0=$(now)
	scontrol update JobId="$1" Priority="$2"
	end=$((SECONDS + 30))
	while [ "$(grant_set)" = "$before" ] && [ $SECONDS -lt $end ]; do sleep 0.02; done
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }'
}

# Seconds from sbatch of an elastic job to elastic-ctl status listing it.
discover() {
	local id t0 end
	t0=$(now)
	id=$(ctl_job bob acct_b 1 8 5)
	end=$((SECONDS + 30))
	until ctl status -p 2>/dev/null | grep -q "^$id[^0-9]"; do
		[ $SECONDS -lt $end ] || break
		sleep 0.02
	done
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }'
	scancel "$id"
}

# sdiag's count and total time (us) of one line, by message type or user.
sd() { # file key
	awk -v k="$2" '$1 == k {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^count:/) c = substr($i, 7)
			if ($i ~ /^total_time:/) t = substr($i, 12)
		}
		print c + 0, t + 0; found = 1; exit }
		END { if (!found) print 0, 0 }' "$1"
}

rows=()
# The baseline: no elasticd over the same window (slurmctld's CPU without it).
measure_none() { # queue churn
	local q=$1 c=$2 c0 c1 t0 t1 f=$T_DIR/sdiag.none.$1.$2
	[ "$c" = 1 ] && churn_start
	sleep 3
	sdiag --reset >/dev/null
	c0=$(cpu "$ctld_pid") t0=$(now)
	sleep "$window"
	sdiag >"$f"
	c1=$(cpu "$ctld_pid") t1=$(now)
	[ "$c" = 1 ] && churn_stop
	read -r rn rt < <(sd "$f" "$slurm_user")
	rows+=("$(awk -v q="$q" -v c="$c" -v rn="$rn" -v rt="$rt" -v cc="$((c1 - c0))" -v hz="$hz" \
		-v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" 'BEGIN {
		printf "| %-9s | %5d | %-5s | %6d | %7.3f s | %5.2f %% | %5s | %5s | %5s | %5s | %5s | %6.2f s | %16s | %7s | %7s |\n",
			"none", q, c ? "yes" : "no", rn, rt / 1e6, 100 * rt / 1e6 / w, "-", "-", "-", "-", "-",
			cc / hz, "-", "-", "-" }')")
	t_log "${rows[-1]}"
}
measure() { # mode queue churn
	local mode=$1 q=$2 c=$3 c0 e0 t0 c1 e1 t1 f=$T_DIR/sdiag.$1.$2.$3 lat=() i
	if [ "$mode" = none ]; then
		measure_none "$q" "$c"
		return
	fi
	ELASTICD_QUERY=$mode ctl_start
	steady
	[ "$c" = 1 ] && churn_start
	sleep 3
	sdiag --reset >/dev/null
	c0=$(cpu "$ctld_pid") e0=$(cpu "$CTL_PID") t0=$(now)
	sleep "$window"
	sdiag >"$f"
	c1=$(cpu "$ctld_pid") e1=$(cpu "$CTL_PID") t1=$(now)
	for i in $(seq "$flips"); do
		steady
		if [ $((i % 2)) = 1 ]; then lat+=("$(flip "$j1" 1000)"); else lat+=("$(flip "$j1" 3000)"); fi
	done
	steady
	local disc
	disc=$(discover)
	scontrol update JobId="$j1" Priority=3000
	[ "$c" = 1 ] && churn_stop
	kill "$CTL_PID"
	wait "$CTL_PID" 2>/dev/null
	CTL_PID=""
	read -r rn rt < <(sd "$f" "$slurm_user")
	read -r ji jit < <(sd "$f" REQUEST_JOB_INFO)
	read -r js jst < <(sd "$f" REQUEST_JOB_INFO_SINGLE)
	read -r st stt < <(sd "$f" REQUEST_JOB_STATE)
	read -r ni nit < <(sd "$f" REQUEST_NODE_INFO)
	read -r fd fdt < <(sd "$f" REQUEST_FED_INFO)
	local med
	med=$(printf '%s\n' "${lat[@]}" | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }')
	rows+=("$(awk -v m="$mode" -v q="$q" -v c="$c" -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
		-v rn="$rn" -v rt="$rt" -v ji="$ji" -v js="$js" -v st="$st" -v ni="$ni" -v fd="$fd" \
		-v cc="$((c1 - c0))" -v ec="$((e1 - e0))" -v hz="$hz" -v med="$med" -v disc="$disc" 'BEGIN {
		printf "| %-9s | %5d | %-5s | %6d | %7.3f s | %5.2f %% | %5d | %5d | %5d | %5d | %5d | %6.2f s | %5.2f s (%4.1f %%) | %5s s | %5s s |\n",
			m, q, c ? "yes" : "no", rn, rt / 1e6, 100 * rt / 1e6 / w, ji, js, st, ni, fd,
			cc / hz, ec / hz, 100 * ec / hz / w, med, disc }')")
	t_log "${rows[-1]}"
}

ctl_block_nodes node3 node4
ctl_start
j1=$(ctl_job alice acct_a 1 8 5 3000)
j2=$(ctl_job bob acct_b 1 8 5 1000)
for j in "$j1" "$j2"; do
	until [ "$(t_job_state "$j")" = RUNNING ]; do sleep 0.2; done
	ctl_client "$(squeue -h -j "$j" -o %u)" "$j"
done
kill "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
CTL_PID=""
t_log "elastic jobs $j1 (priority 3000) and $j2 (1000); window ${window}s"
for q in $queues; do
	fill "$q"
	for c in $churns; do
		for m in $modes; do measure "$m" "$q" "$c"; done
	done
done

echo
echo "elasticd's cost to slurmctld (sdiag over ${window} s windows; RPC columns: calls in the window)"
echo
echo "| queries   | queue | churn | SlurmUser RPCs | slurmctld time | share | JOB_INFO | JOB_INFO_SINGLE | JOB_STATE | NODE_INFO | FED_INFO | slurmctld CPU | elasticd CPU | priority in force (median) | new job found |"
echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
