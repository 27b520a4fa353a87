#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/train_e2e.sh: the reference scenario end to end, with the
# real pieces: sbatch --elastic-gpus (SPANK + job_submit), elasticd, and in
# each job elastic-run running elastic_train on libelastic. 2 nodes x 4 GPUs:
# job 1 (alice) alone grows to 8 ranks; job 2 (bob) arrives -> 4/4; job 2's
# priority 10000 vs 5000 -> 5/3; job 1 finishes -> job 2 grows to 8. Both
# jobs complete, every epoch uses every sample once, and the loss falls.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
sbatch --help 2>&1 | grep -q -- --elastic-gpus ||
	t_skip "the SPANK plugin is not loaded (cluster started without this build's plugins)"
train=${top_builddir:?}/examples/elastic_train
run=$top_builddir/launcher/elastic-run
[ -x "$train" ] && [ -x "$run" ] || t_skip "elastic_train or elastic-run not built"
ctl_block_nodes node3 node4
ctl_start

# One training job of USER: prints its id.
train_job() { # user account epochs
	local id
	cat >"$T_DIR/job-$1.sh" <<EOF
#!/bin/bash
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_coll=^han
exec $run -v -- $train --epochs $3 --samples 4096 --global-batch 128 --step-sleep 25000
EOF
	chmod 755 "$T_DIR/job-$1.sh"
	id=$(t_sbatch "$1" -A "$2" -J "train-$1" --elastic-gpus=1-8 --elastic-grace=30 -N1 -n1 \
		-D "$T_DIR" -o "$T_DIR/train-$1.out" "$T_DIR/job-$1.sh")
	echo "$id" >>"$T_DIR/jobs"
	echo "$id"
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

j1=$(train_job alice acct_a 20)
scontrol update JobId="$j1" Priority=5000
ctl_wait_split 30 "$j1=8"
wait_size alice 8 60
t_log "job 1 ($j1): 8 GPUs, training at 8 ranks"

j2=$(train_job bob acct_b 26)
scontrol update JobId="$j2" Priority=5000
ctl_wait_split 90 "$j1=4" "$j2=4"
wait_size alice 4 60
wait_size bob 4 60
t_log "job 2 ($j2) arrived: 4/4 GPUs, both training at 4 ranks"

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

for u in alice bob; do
	f=$T_DIR/train-$u.out
	grep -aq "^done: " "$f" || t_fail "$u's training did not finish: $(tail -n 5 "$f")"
	! grep -aq "every sample used exactly once: NO" "$f" || t_fail "$u's job skipped or repeated samples"
	sizes=$(grep -aEo '^step [0-9]+ epoch [0-9]+ size [0-9]+' "$f" | awk '{print $6}' | uniq | tr '\n' ' ')
	first=$(grep -aEo '^step [0-9]+ .* loss [0-9.]+' "$f" | head -n1 | awk '{print $NF}')
	last=$(grep -aEo '^step [0-9]+ .* loss [0-9.]+' "$f" | tail -n1 | awk '{print $NF}')
	awk "BEGIN{exit !($last < $first)}" || t_fail "$u's loss did not fall ($first -> $last)"
	t_log "$u: sizes $sizes; loss $first -> $last; $(grep -a '^done: ' "$f")"
done
ctl_alive || t_fail "elasticd died"
t_log "PASS"
