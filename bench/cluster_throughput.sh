#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/cluster_throughput.sh: PolicyMode=fairshare against throughput on the
# testbed cluster, in one run. For each mode, on node1 and node2 (8 GPUs;
# node3 and node4 blocked), two C trainers whose scaling differs by
# construction are submitted together: "mid" spends 60 ms a step whatever
# its size and 4 ms per sample split among its ranks (a fourth GPU still adds
# 0.37 of one, a fifth 0.29), "sat" 200 ms a step and 0.4 ms per sample (a
# second GPU adds 0.06 of one); both --elastic-gpus=1-8. PLAIN_AT seconds
# later a plain job asks for 2 GPUs for 30 s. Per mode it prints each
# trainer's completion time (submit to end), the set's (first submit to last
# end), the trainers' GPU-seconds (squeue sampled every 0.5 s) per sample
# trained, and the plain job's wait (submit to start).
#
# usage: cluster_throughput.sh [--modes "fairshare throughput"] [--plain-at S]
# Run inside the testbed cluster (testbed/cluster exec); top_builddir is the
# build tree (default /src/build-testbed). About 4 minutes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
export top_builddir=${top_builddir:-/src/build-testbed}
modes="fairshare throughput" plain_at=20
while [ $# -gt 0 ]; do
	case "$1" in
	--modes) modes=$2; shift 2 ;;
	--plain-at) plain_at=$2; shift 2 ;;
	*) echo "usage: cluster_throughput.sh [--modes \"fairshare throughput\"] [--plain-at S]" >&2; exit 2 ;;
	esac
done
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/controller/ctl-lib.sh"
T_NAME=cluster_throughput
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_block_nodes node3 node4
targs="--samples 2048 --global-batch 64"
declare -A epochs=([mid]=16 [sat]=6) sleeps=([mid]="--step-sleep 60000 --sample-sleep 4000"
	[sat]="--step-sleep 200000 --sample-sleep 400")
ctl_references "$targs" 6 16
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# Slurm's time of a job's field (SubmitTime, StartTime, EndTime) in seconds.
slurm_time() { date -d "$(scontrol show job "$1" | grep -o "$2=[^ ]*" | cut -d= -f2)" +%s; }

declare -A row
for mode in $modes; do
	ctl_conf "PolicyMode=$mode" CoolDown=2 "StateFile=$T_DIR/state-$mode"
	ctl_start
	t0=$(now)
	declare -A id=()
	for n in mid sat; do
		u=alice a=acct_a
		[ $n = sat ] && u=bob a=acct_b
		id[$n]=$(ctl_train_job "$mode-$n" $u $a \
			"--epochs ${epochs[$n]} $targs ${sleeps[$n]} --compare $T_DIR/ref-${epochs[$n]}.model" "" \
			--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1)
	done
	gpu_s=0 plain="" last=$(now)
	while :; do
		t=$(now)
		g=$(($(ctl_gpus "${id[mid]}") + $(ctl_gpus "${id[sat]}")))
		gpu_s=$(awk -v s="$gpu_s" -v g="$g" -v d="$(since "$last" "$t")" 'BEGIN { print s + g * d }')
		last=$t
		if [ -z "$plain" ] && awk -v d="$(since "$t0" "$t")" -v p="$plain_at" 'BEGIN { exit !(d >= p) }'; then
			plain=$(sbatch --parsable -J plain -N1 --gres=gpu:2 -o /dev/null --wrap 'sleep 30')
			echo "$plain" >>"$T_DIR/jobs"
		fi
		[ -z "$(squeue -h -j "${id[mid]},${id[sat]}" -t PD,R,CG 2>/dev/null)" ] && break
		awk -v d="$(since "$t0" "$t")" 'BEGIN { exit !(d > 600) }' && t_fail "$mode: the trainers did not end in 600 s"
		sleep 0.5
	done
	t_wait_job "$plain" 120
	for n in mid sat; do
		ctl_train_done "$T_DIR/$mode-$n.out" "${epochs[$n]}"
		row[$mode.$n]=$(($(slurm_time "${id[$n]}" EndTime) - $(slurm_time "${id[$n]}" SubmitTime)))
	done
	first=$(slurm_time "${id[mid]}" SubmitTime)
	end=$(slurm_time "${id[mid]}" EndTime)
	e2=$(slurm_time "${id[sat]}" EndTime)
	[ "$e2" -gt "$end" ] && end=$e2
	row[$mode.set]=$((end - first))
	samples=$((2048 * (${epochs[mid]} + ${epochs[sat]})))
	row[$mode.gpus]=$(awk -v g="$gpu_s" -v s="$samples" 'BEGIN { printf "%.1f GPU-s, %.2f GPU-ms per sample", g, 1000 * g / s }')
	row[$mode.wait]=$(($(slurm_time "$plain" StartTime) - $(slurm_time "$plain" SubmitTime)))
	kill -TERM "$CTL_PID"
	t_wait_gone "$CTL_PID" 20 || t_fail "elasticd did not stop"
done
printf '%-11s %8s %8s %8s %-40s %s\n' mode "mid JCT" "sat JCT" "set JCT" "trainers' GPU-seconds" "plain job's wait"
for mode in $modes; do
	printf '%-11s %7ss %7ss %7ss %-40s %ss\n' "$mode" "${row[$mode.mid]}" "${row[$mode.sat]}" \
		"${row[$mode.set]}" "${row[$mode.gpus]}" "${row[$mode.wait]}"
done
