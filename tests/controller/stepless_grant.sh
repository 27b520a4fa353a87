#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/stepless_grant.sh: a grant in which no step can begin (suspended
# with scontrol as the launch's srun asks for its step, as a grant whose steps
# slurmctld will not create after a restart) holds the job's launch; at the launch
# bound elastic-run signals the sruns, their words reach its log at once, it names the
# step that never began with them, and the grant is left out and given back to
# elasticd, which cancels it and grants again. alice's job
# (--launch-timeout 15) on node1, her grant on node1: the rank's step in the grant (its
# wrapper's srun) never begins, as in the slurmctld restart this stands for. (A
# daemon's step on another node: tests/launcher/launch_bound.sh.) She trains again on
# her own GPU, grows back to 2 on the new grant and completes with the static run's
# model, every sample once; GPU-seconds held without training are bounded by the
# launch bound (15 s x 2 GPUs, 2 s of slack); no grant is left over and elasticd stays
# up. bob's job on node2 meets the same once alice's grant is cancelled and elasticd
# is stopped (an admin's restart): his bound comes while no elasticd answers, and the
# elasticd started after hears the grant given back when his job reconnects, and
# cancels it though it never announced it (a suspended grant).
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
# node1: 2 GPUs for alice (her own, one grant), then node2: 2 for bob; the other
# nodes: none
ctl_block_gpus 2 node1
ctl_block_nodes node3 node4 node2
block2=${CTL_BLOCKERS##* }
targs="--samples 4096 --global-batch 128"
epochs=30
ctl_reference $epochs "$targs"
ctl_start

# the first srun into the grant waits while the test suspends it (ctl_srun_hold)
ctl_srun_hold

declare -A job grant node
submit() { # name user account node
	cat >"$T_DIR/$1.sh" <<SH
#!/bin/bash
# (the launch waits until the job holds its grant)
until [ -e "$T_DIR/go-$1" ]; do sleep 0.1; done
PATH=$T_DIR/bin:\$PATH exec $run -v --launch-timeout 15 -- $train --epochs $epochs $targs --step-sleep 20000 --compare $T_DIR/ref.model
SH
	chmod 755 "$T_DIR/$1.sh"
	job[$1]=$(t_sbatch "$2" -A "$3" -J "$1" -D "$T_DIR" -o "$T_DIR/$1.out" \
		--elastic-gpus=1-2 --elastic-grace=30 -N1 -n1 -w "$4" "$T_DIR/$1.sh")
	echo "${job[$1]}" >>"$T_DIR/jobs"
	local end=$((SECONDS + 30)) g
	until g=$(squeue -h -n "elastic:${job[$1]}" -t R -o %i) && [ -n "$g" ]; do
		[ $SECONDS -lt $end ] || t_fail "$1: no grant within 30 s"
		sleep 0.1
	done
	grant[$1]=$g
	node[$1]=$(squeue -h -j "$g" -o %N)
	[ "${node[$1]}" = "$5" ] || {
		squeue -a -o '%i %j %u %T %N %b %r' >&2
		t_fail "$1: grant $g runs on ${node[$1]}, not $5"
	}
	t_log "$1: job ${job[$1]}, grant $g on $5"
}
submit alice alice acct_a node1 node1
scancel "$block2"
ctl_block_gpus 2 node2
submit bob bob acct_b node2 node2
# Each job's grant suspended as its launch's first srun is about to ask for a step in it:
# the launch started, its srun held (ctl_srun_hold) ...
launch_to_srun() { # name
	printf '%s\n' "${grant[$1]}" >>"$T_DIR/hold-list"
	touch "$T_DIR/go-$1"
	ctl_srun_wait "${grant[$1]}" 60 >/dev/null
	# (once elastic-run heard elasticd announce it and looked at Slurm's list after: a
	# suspended grant is not listed, and a look after the suspension would make a
	# change of the set of it, not a launch that cannot start)
	ctl_wait_line 10 "$T_DIR/$1.out" "controller: grant ${grant[$1]} started" \
		"elasticd did not announce grant ${grant[$1]}"
	sleep 1
}
# ... then the grant suspended, and the srun let go.
suspend_grant() { # name
	scontrol suspend "${grant[$1]}" || t_fail "$1: cannot suspend grant ${grant[$1]}"
	touch "$T_DIR/held-${grant[$1]}"
	t_log "$1: grant ${grant[$1]} suspended as the launch's srun asks for a step there"
}
launch_to_srun alice
suspend_grant alice
# alice's grant given back to the elasticd that announced it; then elasticd stopped
ctl_wait_line 30 "$T_DIR/elasticd.log" "job ${job[alice]}: cancelled grant ${grant[alice]} " \
	"elasticd did not cancel alice's grant ${grant[alice]}"
launch_to_srun bob
kill "$CTL_PID"
wait "$CTL_PID" 2>/dev/null || true
t_log "elasticd stopped"
# bob's bound comes while no elasticd answers: the grant waits to be given back
suspend_grant bob
ctl_wait_line 30 "$T_DIR/bob.out" "not connected: grant ${grant[bob]} is given back once it answers" \
	"bob's job did not keep grant ${grant[bob]} to give back"
ctl_start
# (only the elasticd started now can: the one before was stopped before his bound)
ctl_wait_line 30 "$T_DIR/elasticd.log" "job ${job[bob]}: cancelled grant ${grant[bob]} \(given back by the job: unusable\)" \
	"the elasticd started after bob's bound did not cancel his grant ${grant[bob]}"
t_log "bob: grant ${grant[bob]} given back to the elasticd started after his bound, and cancelled"

check() { # name step-kind
	local n=$1 out=$T_DIR/$1.out g=${grant[$1]} line took
	t_wait_job "${job[$n]}" 240
	ctl_train_done "$out" $epochs
	# the bound names the step that never began, and where
	line=$(grep -aE "no step committed .* after mpirun started, 2 GPUs held \(the launch bound: --launch-timeout 15\)" "$out" | head -n1)
	[ -n "$line" ] || { cat "$out"; t_fail "$n: no line of the launch bound"; }
	[[ $line == *"${node[$n]}: the $2's step in job $g never began (its srun said: error: Unable to create step for job $g"* ]] ||
		t_fail "$n: the bound's line does not name the $2's step in grant $g with srun's words: $line"
	took=$(sed -n 's/.*no step committed \([0-9.]*\) s after.*/\1/p' <<<"$line")
	awk -v t="$took" 'BEGIN { exit !(t >= 15 && t <= 17) }' ||
		t_fail "$n: the launch was ended after $took s, bound 15 s"
	# srun's words, at once: signalled at the bound, it says them before the bound's line
	tr -d '\0' <"$out" | awk -v g="$g" '
		index($0, "srun into job " g " on ") && / Unable to create step/ && !s { s = NR }
		/no step committed .*the launch bound/ && !b { b = NR }
		END { exit !(s && b && s < b) }' ||
		t_fail "$n: srun's words on grant $g do not come before the bound's line"
	t_grep "grant $g on ${node[$n]}: the launch's $2 step there never began \(srun said: .*Unable to create step.*\): left out of the next launches, given back to the controller" \
		"$out" "$n: grant $g was not left out and given back"
	t_grep "job ${job[$n]}: gives back grant $g, which it cannot use" "$T_DIR/elasticd.log" \
		"$n: elasticd did not hear the grant given back"
	t_grep "job ${job[$n]}: cancelled grant $g \(given back by the job: unusable\)" "$T_DIR/elasticd.log" \
		"$n: elasticd did not cancel grant $g"
	# trained again at 2 on a grant of its own after that
	tr -d '\0' <"$out" | awk -v g="$g" 'index($0, "grant " g " on ") && /left out/ { f = 1 } f && /^step [0-9]+ epoch [0-9]+ size 2 / { ok = 1 } END { exit !ok }' ||
		t_fail "$n: did not train at 2 again after grant $g was given back"
	t_log "$n: $(sed 's/^elastic-run [0-9:.]*: //' <<<"$line")"
	t_log "$n: $(grep -a "srun into job $g on " "$out" | head -n1 | sed 's/^elastic-run //')"
	t_log "$n: held without training $(awk -v t="$took" 'BEGIN { printf "%.1f", 2 * t }') GPU-s (bound 15 s x 2 GPUs)"
}
check alice rank
check bob rank
# the grants given back are gone, and no grant is left over
ctl_no_grants_left 15 "after the jobs ended"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
