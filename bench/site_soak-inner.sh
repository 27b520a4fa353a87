#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/site_soak-inner.sh: the soak of bench/site_soak.sh, run inside the
# testbed root against the running cluster (testbed/cluster exec): elastic
# jobs of four users (C trainers and the PyTorch example) beside plain jobs,
# the faults a site sees, and the final table. Arguments and environment:
# bench/site_soak.sh --help.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
minutes=${1:?minutes}
total=$((minutes * 60))
njobs=${SOAK_JOBS:-24}
step_us=${SOAK_STEP_SLEEP_US:-1000000}
plain_every=${SOAK_PLAIN_EVERY_S:-2}
loss_every=${SOAK_NODE_LOSS_EVERY_S:-600}
down_s=${SOAK_NODE_DOWN_S:-60}
cooldown=${SOAK_COOLDOWN_S:-120}
max_ranks=${SOAK_MAX_RANKS:-200}
T_KEEP=1
ctl_setup
ctl_need_trainer
t_ompi_env
S=$T_DIR PLAIN="" SAMPLER=""
soak_stop() {
	local rc=$?
	: >"$S/stop-plain"
	: >"$S/stop-sampler"
	# shellcheck disable=SC2086
	kill $PLAIN $SAMPLER 2>/dev/null || true
	ctl_cleanup "$rc"
}
trap 'soak_stop' EXIT
echo "$S" >/tmp/site_soak.dir
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ctl_conf PolicyMode=priority "CoolDown=$cooldown" MaxGpusPerJob=64 DefaultGrace=60 \
	TickSeconds=2 "MetricsAddress=127.0.0.1:$mport"
say() { t_log "$*" | tee -a "$S/events.log"; }
now() { date +%s.%N; }
T0=$(now)
rel() { awk -v a="$T0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }

# ---- four users: alice and bob of the testbed, carol and dave of the soak
# (site_soak.sh adds them to the root before slurmctld starts: it finds a
# user's uid when it loads the associations); the cluster's elastic.conf
# lets them in.
for u in carol:2003 dave:2004; do
	id "${u%%:*}" >/dev/null 2>&1 || useradd -m -u "${u##*:}" -U -s /bin/bash "${u%%:*}"
done
sacctmgr -i add account acct_c,acct_d Cluster="el$ELASTIC_TESTBED_INSTANCE" Fairshare=1 >/dev/null 2>&1 || true
sacctmgr -i add user carol Account=acct_c DefaultAccount=acct_c >/dev/null 2>&1 || true
sacctmgr -i add user dave Account=acct_d DefaultAccount=acct_d >/dev/null 2>&1 || true
sacctmgr -i modify user carol,dave set qos+=elastic >/dev/null 2>&1 || true
# (and jobs up to 64 GPUs: the cluster's elastic.conf, which the SPANK and
# job_submit plugins read, allows 16)
sed -i -e 's/^AllowedUsers=.*/AllowedUsers=alice,bob,carol,dave,root/' -e 's/^MaxGpusPerJob=.*/MaxGpusPerJob=64/' \
	"$(dirname "$SLURM_CONF")/elastic.conf"
scontrol reconfigure && sleep 3
users=(alice bob carol dave) accts=(acct_a acct_b acct_c acct_d)

# ---- one idle rank's memory, and the elastic jobs sized to fit
mpirun --with-ft ulfm --oversubscribe --bind-to none -np 2 "$train" --quiet --epochs 1 \
	--samples 256 --global-batch 128 --step-sleep 5000000 >/dev/null 2>&1 &
mp=$!
sleep 4
# (its two ranks: this root's trainers with the probe's pause, not the
# trainers of another root's cluster)
probe=$(for p in $(t_pgrep -x elastic_train); do
	tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q -- '--step-sleep 5000000' && echo "$p"
done)
rss_kb=$(for p in $probe; do
	awk '/^VmRSS:/ { print $2 }' /proc/$p/status 2>/dev/null
done | sort -n | tail -n1)
# shellcheck disable=SC2086
kill $mp $probe 2>/dev/null
wait $mp 2>/dev/null || true
avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
fit=$((avail_kb / 2 / ${rss_kb:-30000}))
[ $fit -lt "$max_ranks" ] && max_ranks=$fit
say "one idle rank: $((rss_kb / 1024)) MiB RSS; memory available $((avail_kb / 1024)) MiB: the elastic jobs' maxima add up to at most $max_ranks ranks"
# MIN-MAX of each job, from 1-4 to 4-64, the largest halved until they fit
mins=() maxs=()
shapes=("1 4" "2 8" "1 16" "4 32" "4 64" "2 4" "1 8" "2 16")
for ((i = 0; i < njobs; i++)); do
	read -r a b <<<"${shapes[i % ${#shapes[@]}]}"
	mins+=("$a") maxs+=("$b")
done
while :; do
	sum=0 big=0
	for ((i = 0; i < njobs; i++)); do
		sum=$((sum + maxs[i]))
		[ "${maxs[i]}" -gt "${maxs[big]}" ] && big=$i
	done
	[ $sum -le "$max_ranks" ] || [ "${maxs[big]}" -le 4 ] && break
	maxs[big]=$((maxs[big] / 2))
	[ "${mins[big]}" -le "${maxs[big]}" ] || mins[big]=${maxs[big]}
done
say "$njobs elastic jobs, maxima adding up to $sum ranks: $(for ((i = 0; i < njobs; i++)); do printf '%s-%s ' "${mins[i]}" "${maxs[i]}"; done)"

# ---- PyTorch jobs: the first SOAK_TORCH_JOBS slots of at most 4 GPUs train
# examples/pytorch/train_digits.py under elastic-run instead (its ranks
# forked by warm interpreters, about 250 MiB each with torch)
ntorch=${SOAK_TORCH_JOBS:-2}
ex=$top_srcdir/examples/pytorch/train_digits.py
if [ "$ntorch" -gt 0 ] && ! python3 -c 'import torch, sklearn' 2>/dev/null; then
	say "no torch or sklearn in this root: no PyTorch job"
	ntorch=0
fi
# (the Python tests' setup: the binding from the build tree, one thread a
# rank, py_digits_reference)
[ "$ntorch" = 0 ] || . "$top_srcdir/tests/python/common.sh"
torch_slot=()
for ((i = 0, k = 0; i < njobs && k < ntorch; i++)); do
	[ "${maxs[i]}" -le 4 ] || continue
	torch_slot[i]=1
	k=$((k + 1))
done
[ "$ntorch" = 0 ] || say "PyTorch jobs in slots ${!torch_slot[*]}"

# ---- training: 16 steps an epoch, the step paced at step_us; a job of E
# epochs is checked against a static 2-rank run of E epochs
targs="--samples 2048 --global-batch 128"
# What the soak runs itself, as the site's users and observers (the static
# reference runs, the plain jobs' submitter, the sampler), goes where the
# nodes' work goes: into their cpu cgroup when `up` made one
# (ELASTIC_TESTBED_NODE_CPU=own), not beside the controller's daemons.
node_work() { # command...
	(
		cg=$(cat "$ELASTIC_TESTBED_DIR/run/node-cpu-cgroup" 2>/dev/null) &&
			echo "$BASHPID" >"$cg/cgroup.procs" 2>/dev/null || true
		"$@"
	)
}
ref() { # epochs
	[ -f "$S/ref-$1.model" ] || node_work ctl_references "$targs" "$1" || exit 1
}
step_s=$(awk -v u="$step_us" 'BEGIN { print u / 1e6 + 0.3 }')
n_sub=0
# A PyTorch job of E epochs (12 steps each; at most 12 epochs, the steps
# paced to fill its time: more steps would carry the float32 rounding of
# other world sizes past the comparison's tolerance) is checked against a
# static 2-rank run of E epochs (site_soak_table.py).
ref_torch() { # epochs
	[ -f "$S/ref-torch-$1.npy" ] && return
	node_work py_digits_reference "$1" $(($1 * 12)) "$S/ref-torch-$1.npy" || exit 1
	chmod 644 "$S/ref-torch-$1.npy"
}
submit() { # slot seconds
	local i=$1 e name id u pause kind=c
	u=$((i % 4))
	n_sub=$((n_sub + 1))
	name=soak$n_sub
	if [ -n "${torch_slot[i]:-}" ]; then
		kind=torch
		read -r e pause < <(awk -v s="$2" 'BEGIN { e = int(s / 12 / 1.3); e = e < 2 ? 2 : e > 12 ? 12 : e
			printf "%d %.2f\n", e, s / (12 * e) }')
		ref_torch "$e"
		id=$(train="python3 $ex" ctl_train_job "$name" "${users[u]}" "${accts[u]}" \
			"--epochs $e --step-sleep $pause --out $S/$name.npy" "" \
			--elastic-gpus="${mins[i]}-${maxs[i]}" --elastic-grace=60 -N1 -n1)
	else
		e=$(awk -v s="$2" -v t="$step_s" 'BEGIN { e = int(s / (16 * t)); print e < 1 ? 1 : e }')
		ref "$e"
		id=$(ctl_train_job "$name" "${users[u]}" "${accts[u]}" \
			"--epochs $e $targs --step-sleep $step_us --compare $S/ref-$e.model" "" \
			--elastic-gpus="${mins[i]}-${maxs[i]}" --elastic-grace=60 -N1 -n1)
	fi
	printf '%s %s %s %s %s %s %s %s\n' "$id" "$name" "${users[u]}" "${mins[i]}" "${maxs[i]}" "$e" "$i" "$kind" >>"$S/elastic.jobs"
	echo "$id" >"$S/slot-$i"
}

# ---- elasticd
ctl_start
echo "$CTL_PID" >"$S/ctl.pid"
scrape() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:'"$mport"'/metrics", timeout=5).read().decode())' 2>/dev/null; }
sdiag --reset >/dev/null 2>&1 || true
for ((i = 0; i < njobs; i++)); do
	submit "$i" "$(awk -v t="$total" -v r=$((RANDOM % 100)) 'BEGIN { print t * (0.3 + 0.3 * r / 100) }')"
done
say "submitted $njobs elastic jobs"

# ---- plain jobs: 1-8 GPUs, 30-300 s, every plain_every s while at most 20 wait
plain_loop() {
	local n=0 u k t
	while [ ! -e "$S/stop-plain" ]; do
		if [ "$(squeue -h -t PD -n plain 2>/dev/null | wc -l)" -lt 20 ]; then
			u=$((RANDOM % 4)) k=$((1 + RANDOM % 8)) t=$((30 + RANDOM % 271))
			if (cd "$S" && runuser -u "${users[u]}" -- env SLURM_CONF="$SLURM_CONF" \
				sbatch -A "${accts[u]}" -J plain -N1 -n1 --gres=gpu:$k -o /dev/null \
				--wrap "sleep $t" >>"$S/plain.ids" 2>>"$S/plain.err"); then
				n=$((n + 1))
			fi
		fi
		sleep "$plain_every"
	done
}
node_work plain_loop &
PLAIN=$!

# ---- the sampler: every 10 s each elastic job's GPUs (Slurm) and size
# (its last step line); every 30 s whether two ranks or two jobs share a GPU
sample_gpus() {
	# Slurm's GPU indices per running job and node
	scontrol show job -d 2>/dev/null | awk '
		/^JobId=/ { split($1, a, "="); job = a[2] }
		/^ *JobState=RUNNING/ { run[job] = 1 }
		/ Nodes=.*GRES=gpu/ && job != "" {
			node = ""; idx = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^Nodes=/) node = substr($i, 7)
				if ($i ~ /IDX:/) { idx = $i; sub(/.*IDX:/, "", idx); sub(/\).*/, "", idx) }
			}
			if (node != "" && idx != "") print job, node, idx
		}' >"$S/gres.now"
	# every elastic rank: its job (environment and cgroup), node and GPU
	local p env job node gpu cg
	: >"$S/ranks.now"
	# (this root's: another root's clusters may run beside this one)
	# (and the PyTorch ranks started cold: python3 with a rank's
	# environment; one forked by a warm interpreter shows the interpreter's
	# environment in /proc and is not seen here, its job's GPUs are still
	# checked against every other job's)
	for p in $(t_pgrep -x elastic_train; t_pgrep -x python3); do
		env=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ") || continue
		grep -q '^OMPI_COMM_WORLD_RANK=' <<<"$env" || continue
		job=$(sed -n 's/^SLURM_JOB_ID=//p' <<<"$env")
		node=$(sed -n 's/^SLURMD_NODENAME=//p' <<<"$env")
		gpu=$(sed -n 's/^ELASTIC_GPU=//p' <<<"$env")
		[ -n "$job" ] && [ -n "$gpu" ] || continue
		cg=$(grep -o 'job_[0-9]*' "/proc/$p/cgroup" 2>/dev/null | head -n1)
		echo "$p $job $node $gpu ${cg#job_}" >>"$S/ranks.now"
	done
	python3 - "$S/gres.now" "$S/ranks.now" "$(rel)" >>"$S/sharing.log" <<'PY'
import sys
def expand(s):
    out = set()
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-"); out.update(range(int(a), int(b) + 1))
        elif part:
            out.add(int(part))
    return out
owner, bad = {}, []
held = {}
for line in open(sys.argv[1]):
    job, nodes, idx = line.split()
    # "Nodes=node[3-4]" lines give the same indices on each node
    names = []
    if "[" in nodes:
        pre, rng = nodes.split("[", 1)
        for part in rng.rstrip("]").split(","):
            if "-" in part:
                a, b = part.split("-")
                names += [pre + str(k) for k in range(int(a), int(b) + 1)]
            else:
                names.append(pre + part)
    else:
        names = [nodes]
    for n in names:
        for g in expand(idx):
            if (n, g) in owner and owner[(n, g)] != job:
                bad.append(f"GPU {g} of {n} held by jobs {owner[(n, g)]} and {job}")
            owner[(n, g)] = job
            held.setdefault((job, n), set()).add(g)
ranks, seen = 0, {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) < 4:
        continue
    pid, job, node, gpu = f[0], f[1], f[2], int(f[3])
    cg = f[4] if len(f) > 4 else ""
    ranks += 1
    if cg and cg != job:
        bad.append(f"rank pid {pid} of job {job} runs in job {cg}'s cgroup")
    if gpu not in held.get((job, node), set()):
        bad.append(f"rank pid {pid} of job {job} uses GPU {gpu} of {node}, which Slurm does not give that job")
    if (node, gpu) in seen:
        bad.append(f"GPU {gpu} of {node} used by ranks {seen[(node, gpu)]} and {pid} (job {job})")
    seen[(node, gpu)] = f"{pid} (job {job})"
print(f"t={sys.argv[3]} gpus={len(owner)} ranks={ranks} violations={len(bad)}")
for b in bad:
    print("VIOLATION " + b)
PY
}
sampler() {
	local k=0
	while [ ! -e "$S/stop-sampler" ]; do
		local t
		t=$(rel)
		squeue -h -t R -O "JobID:16,Name:40,tres-alloc:300" 2>/dev/null | awk -v t="$t" '
			{ n = 0; if (match($3, /gres\/gpu=[0-9]+/)) n = substr($3, RSTART + 9, RLENGTH - 9)
			  j = $1; if ($2 ~ /^elastic:/) j = substr($2, 9); g[j] += n }
			END { for (j in g) print t, j, g[j] }' >>"$S/held.tsv"
		while read -r id name _; do
			awk -v t="$t" -v j="$id" '/^step [0-9]+ epoch [0-9]+ size [0-9]+/ { s = $2; n = $6 } END { if (s != "") print t, j, s, n }' \
				"$S/$name.out" 2>/dev/null
		done <"$S/elastic.jobs" >>"$S/size.tsv"
		p=$(cat "$S/ctl.pid" 2>/dev/null)
		echo "$t $(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)" >>"$S/ctl_rss.tsv"
		[ $((k % 3)) = 0 ] && sample_gpus
		k=$((k + 1))
		sleep 10
	done
}
node_work sampler &
SAMPLER=$!


# ---- the faults and changes, on a schedule
running_elastic() { squeue -h -t R -o '%i' -j "$(awk '{ print $1 }' "$S/elastic.jobs" | paste -sd, -)" 2>/dev/null; }
# the node with the most elastic ranks that is no elastic job's batch host
# (its batch script, and elastic-run with it, would die with it)
batch_hosts() {
	squeue -h -t R,CF,CG -o '%i %B' 2>/dev/null | grep -F -f <(awk '{ print $1 " " }' "$S/elastic.jobs") |
		awk '{ print $2 }' | sort -u
}
pick_node() {
	awk '{ print $3 }' "$S/ranks.now" 2>/dev/null | sort | uniq -c | sort -rn | awk '{ print $2 }' |
		grep -vxF -f <(batch_hosts; echo none) | head -n1
}
# Every process of node N (its UTS namespace) but the namespace's holder
# (testbed/cluster keeps the node's namespaces with it), stopped; again
# until no new one appears, so that none forked meanwhile lives on (a node
# lost loses all of it at once). Prints them.
stop_node() { # node slurmd-pid
	local uts pids="" new
	uts=$(ps -o utsns= -p "$2" | tr -d ' ')
	[ -n "$uts" ] || return 0
	while :; do
		# (one ps a pass: a fork per process took a minute with 64 nodes)
		new=$(ps -e -o pid=,utsns=,args= | awk -v u="$uts" -v have=" $pids " '
			$2 == u && $3 !~ /^elastic-netns/ && index(have, " " $1 " ") == 0 { printf "%s ", $1 }')
		[ -n "$new" ] || break
		# shellcheck disable=SC2086
		kill -STOP $new 2>/dev/null || true
		pids="$pids $new"
	done
	echo "$pids"
}
# Node N lost, unless an elastic job's batch script runs there (it would
# end the job; Slurm would requeue it): then its processes go on. 0: lost.
lose_node() { # node
	local n=$1 sd pids
	sd=$(t_pgrep -f "^slurmd -N $n\$" | head -n1)
	[ -n "$sd" ] || { say "no slurmd of $n found: no node lost"; return 1; }
	pids=$(stop_node "$n" "$sd")
	if batch_hosts | grep -qx "$n"; then
		# shellcheck disable=SC2086
		kill -CONT $pids 2>/dev/null || true
		say "node $n: an elastic job's batch script started there meanwhile: not lost"
		return 1
	fi
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
	scontrol update NodeName="$n" State=DOWN Reason="soak: node lost" 2>/dev/null || true
	echo "$n $(rel)" >>"$S/lost.nodes"
	say "node $n lost: its $(echo $pids | wc -w) processes SIGKILLed (slurmd, steps, ranks), the node DOWN"
}
back_node() { # node
	bash /src/testbed/cluster-inner.sh node-start "$1" >>"$S/events.log" 2>&1 || say "node-start $1 failed"
	scontrol update NodeName="$1" State=RESUME 2>/dev/null || true
	say "node $1 back (slurmd started, RESUME)"
}
at_ctld=$((total * 30 / 100)) at_hup=$((total * 45 / 100)) at_kill=$((total * 60 / 100))
next_loss=$((loss_every < total / 3 ? loss_every : total / 3)) down_node="" down_at=0
next_prio=30 done_ctld=0 done_hup=0 done_kill=0
t_ctld_files
while :; do
	t=$(rel)
	[ "$t" -lt "$total" ] || break
	# ended jobs replaced while a new one has time to finish
	for ((i = 0; i < njobs; i++)); do
		id=$(cat "$S/slot-$i")
		[ -z "$(squeue -h -j "$id" -o %T 2>/dev/null)" ] || continue
		left=$((total - t))
		if [ $left -gt $((total * 30 / 100)) ] && [ ! -e "$S/slot-$i.done" ]; then
			submit "$i" $((left * 6 / 10))
			say "job $id ended: slot $i gets job $(cat "$S/slot-$i") ($(tail -n1 "$S/elastic.jobs" | awk '{ print $6 }') epochs)"
		else
			: >"$S/slot-$i.done"
		fi
	done
	if [ "$t" -ge "$next_prio" ]; then
		j=$(running_elastic | shuf -n1)
		[ -z "$j" ] || scontrol update JobId="$j" Priority=$((1000 + RANDOM % 9000)) 2>/dev/null || true
		next_prio=$((t + 30))
	fi
	if [ -z "$down_node" ] && [ "$t" -ge "$next_loss" ]; then
		down_node=$(pick_node)
		if [ -n "$down_node" ] && lose_node "$down_node"; then
			down_at=$(rel)
			next_loss=$((t + loss_every))
		else
			down_node=""
			next_loss=$((t + 10))
		fi
	fi
	if [ -n "$down_node" ] && [ "$t" -ge $((down_at + down_s)) ]; then
		back_node "$down_node"
		down_node=""
	fi
	if [ $done_ctld = 0 ] && [ "$t" -ge $at_ctld ]; then
		say "slurmctld restart (down 5 s)"
		t_ctld_restart 5
		say "slurmctld back"
		done_ctld=1
	fi
	if [ $done_hup = 0 ] && [ "$t" -ge $at_hup ]; then
		sed -i 's/^PolicyMode=.*/PolicyMode=fairshare/' "$S/elastic.conf"
		kill -HUP "$CTL_PID"
		say "elastic.conf: PolicyMode=fairshare, SIGHUP to elasticd"
		done_hup=1
	fi
	if [ $done_kill = 0 ] && [ "$t" -ge $at_kill ]; then
		scrape >"$S/metrics-before-kill.txt"
		ctl_kill9
		sleep 3
		mv "$S/elasticd.log" "$S/elasticd-1.log"
		ctl_start
		echo "$CTL_PID" >"$S/ctl.pid"
		say "elasticd SIGKILLed and started again"
		done_kill=1
	fi
	sleep 1
done
[ -z "$down_node" ] || back_node "$down_node"
say "$minutes min over: no new plain job; waiting for the elastic jobs to end"
: >"$S/stop-plain"
wait "$PLAIN" 2>/dev/null || true
end=$((SECONDS + ${SOAK_TAIL_S:-$((total / 2 > 600 ? total / 2 : 600))}))
while [ -n "$(running_elastic; squeue -h -t PD -o %i -j "$(awk '{ print $1 }' "$S/elastic.jobs" | paste -sd, -)" 2>/dev/null)" ]; do
	[ $SECONDS -lt $end ] || { say "elastic jobs still running: $(running_elastic | paste -sd' ' -)"; break; }
	sleep 5
done
scrape >"$S/metrics-end.txt"
: >"$S/stop-sampler"
wait "$SAMPLER" 2>/dev/null || true
sdiag >"$S/sdiag.txt" 2>&1 || true
scancel -n plain 2>/dev/null || true
for u in "${users[@]}"; do scancel -u "$u" -n plain 2>/dev/null || true; done
sleep 5
orphans=$(squeue -h -o '%i %j %T' | awk '$2 ~ /^elastic:/')
steps=$(squeue -h -s -o '%i %j' 2>/dev/null | grep -E "^($(awk '{ print $1 }' "$S/elastic.jobs" | paste -sd'|' -))\." || true)
echo "$orphans" >"$S/orphans.txt"
echo "$steps" >>"$S/orphans.txt"
python3 /src/bench/site_soak_table.py "$S" "$(rel)" | tee "$S/table.txt"
exit "${PIPESTATUS[0]}"
