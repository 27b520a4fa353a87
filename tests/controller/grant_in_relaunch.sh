#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/grant_in_relaunch.sh: a grant that starts while elastic-run
# relaunches the job, after Slurm was asked for the job's GPUs and before the
# new mpirun: Slurm's answer lacks the grant, the order arrives with the
# launch. alice's job (2-4 GPUs, maximum set to 3) trains at 3; one of her
# ranks is SIGKILLed: the others heal around it (or re-form, where the
# runtime cannot), and re-form onto all 3 GPUs 2 s later. A re-form's look
# at Slurm once mpirun ended is held (squeue, a wrapper in her PATH) until
# elasticd, told her maximum is 4 again, has started a grant and told her
# so. She relaunches on 3, then takes the grant (a grow, in place where the
# runtime can) and trains at 4; she completes with the static run's model,
# every sample once, and elasticd stays up.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_block_nodes node3 node4
ctl_block_gpus 2 node1 node2 # 2 free GPUs on each of node1 and node2

epochs=30
targs="--samples 4096 --global-batch 128"
ctl_reference "$epochs" "$targs"
ctl_start

# squeue for elastic-run: the real one; once her output has more "mpirun
# status" lines (elastic-run -v) than $sq/arm says, the first call keeps its
# answer until $sq/go appears (at most 60 s).
sq=$T_DIR/sq
mkdir -p "$sq" "$T_DIR/bin"
chmod 777 "$sq"
cat >"$T_DIR/bin/squeue" <<EOS
#!/bin/bash
out=\$(/usr/bin/squeue "\$@")
rc=\$?
if [ -e "$sq/arm" ] && [ "\$(grep -ac '^elastic-run [0-9:.]*: mpirun status' "$T_DIR/alice.out")" -gt "\$(cat "$sq/arm")" ] &&
	mkdir "$sq/held" 2>/dev/null; then
	for i in \$(seq 600); do [ -e "$sq/go" ] && break; sleep 0.1; done
fi
[ -z "\$out" ] || printf '%s\n' "\$out"
exit \$rc
EOS
chmod 755 "$T_DIR/bin/squeue" "$T_DIR/bin"

j=$(CTL_TRAIN_PATH=$T_DIR/bin ctl_train_job alice alice acct_a "--epochs $epochs $targs --step-sleep 20000 --compare $T_DIR/ref.model" "" \
	--elastic-gpus=2-4 --elastic-grace=30 -N1 -n1)
out=$T_DIR/alice.out
# The trainer's processes (the ranks, not elastic-run, mpirun, the sruns or
# the rank wrappers, whose command lines name the trainer too).
ranks() {
	local p
	for p in $(t_pgrep -f -- "--step-sleep 20000 --compare $T_DIR/ref.model"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = elastic_train ] && echo "$p"
	done
	return 0
}

ctl_set_max "$j" 3
ctl_wait_split 60 "$j=3"
ctl_wait_steps "$out" 3 3 90 1 "the start at 3"
t_log "job $j trains at 3"

# One rank killed with the hold armed: the re-form asks Slurm and is held.
lo=$(($(wc -l <"$out") + 1))
grep -ac '^elastic-run [0-9:.]*: mpirun status' "$out" >"$sq/arm"
victim=$(ranks | head -n 1)
[ -n "$victim" ] || t_fail "no rank of job $j found"
kill -KILL "$victim"
end=$((SECONDS + 30))
until [ -d "$sq/held" ]; do
	[ $SECONDS -lt $end ] || { tail -n 20 "$out" >&2; t_fail "no re-form asked Slurm for the job's GPUs within 30 s of the kill"; }
	sleep 0.1
done
t_log "rank $victim killed; the re-form's look at Slurm is held"

# Meanwhile a grant starts for her, and elasticd tells her.
le=$(($(wc -l <"$T_DIR/elasticd.log") + 1))
ctl_set_max "$j" 4
end=$((SECONDS + 30))
until tail -n +"$le" "$T_DIR/elasticd.log" | grep -aq "job $j: told grant [0-9]* started"; do
	[ $SECONDS -lt $end ] || { tail -n 20 "$T_DIR/elasticd.log" >&2; t_fail "elasticd told job $j of no grant within 30 s of the maximum raised to 4"; }
	sleep 0.1
done
sleep 0.5 # (the order on its way to her elastic-run)
touch "$sq/go"
t_log "$(tail -n +"$le" "$T_DIR/elasticd.log" | grep -a -m1 "job $j: told grant" | sed 's/^.*\(job [0-9]*: told\)/\1/'); the look at Slurm let go"

ctl_wait_steps "$out" 4 3 60 "$lo" "the grant that started during the relaunch"
t_log "job $j trains at 4: $(tail -n +"$lo" "$out" | grep -a -m1 -e 'grow in place:' -e 'grow: ' -e 'controller: grant' | sed 's/^elastic-run [0-9:.]*: //')"

t_wait_job "$j" 600
ctl_train_done "$out" "$epochs"
ctl_alive || t_fail "elasticd died"
t_log "PASS: the grant that started during the relaunch was taken; model equal to the static run's"
