#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/ctld_down.sh: elasticd answers while slurmctld does not.
# On 12 GPUs: a stand-in job (a proto-client that acknowledges a release 8 s
# after its order) holds 6, alice's training job 6. bob's training job arrives
# and elasticd orders both to release 2 (the split 4/4/4). At alice's order
# slurmctld stops (state saved, as for an upgrade) and stays down 45 s, longer
# than two of scontrol's waits for it (MessageTimeout and its retries).
# Throughout, a scrape of the metrics and `elastic-ctl status` are timed every
# 0.25 s:
#  - every scrape and every status answers within 1 s;
#  - slurm_elastic_slurmctld_up reads 0 within 2 s of slurmctld's end (a tick of 1 s
#    and a ping), and elasticd's log says so;
#  - the stand-in's acknowledgement is taken while slurmctld is down, and the
#    grants it released end COMPLETED (not cancelled) once slurmctld answers; so
#    do alice's (her re-form waits for Slurm: she acknowledges once it answers);
#  - alice's job, also re-formed by SIGUSR1 as slurmctld stops, cannot read its
#    GPUs from Slurm for its relaunch: it asks again until slurmctld answers;
#  - the split 4/4/4 is reached after slurmctld's return, both trainers train to
#    the end with the static run's model, every sample once, no step twice; no
#    grant is left and elasticd stays up.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
t_ctld_files
ctl_conf "MetricsAddress=127.0.0.1:0"
ctl_block_nodes node4
targs="--samples 4096 --global-batch 128"
epochs=90
ctl_reference $epochs "$targs"
ctl_start
port=$(ctl_metrics_port) || exit 1
t0_test=$(date +%Y-%m-%dT%H:%M:%S)

# the stand-in first: 6 GPUs, as its maximum says
jc=$(ctl_job alice acct_a 1 6 60 5000)
ctl_client alice "$jc" -a 8
ctl_wait_split 30 "$jc=6"
touch "$T_DIR/slow"
ja=$(ctl_train_job alice alice acct_a "--epochs $epochs $targs --step-sleep 20000 --sleep-while $T_DIR/slow --compare $T_DIR/ref.model" 5000 \
	--elastic-gpus=1-8 --elastic-grace=60 -N1 -n1)
ctl_wait_split 60 "$ja=6"
ctl_wait_line 90 "$T_DIR/alice.out" "^step [0-9]+ epoch [0-9]+ size 6" "alice's job does not train at 6"
t_log "alice's job $ja trains at 6 beside the stand-in $jc"

# The prober: every 0.25 s a scrape and an elastic-ctl status, each timed; one
# line each: epoch-seconds, scrape ms, slurmctld_up, status ms, status rc.
probe=$T_DIR/probe.txt
python3 - "$port" "$CTL_BIN/elastic-ctl" "$CTL_HOST:$CTL_PORT" >"$probe" 2>"$T_DIR/probe.err" <<'PY' &
import socket, subprocess, sys, time
port, ctl, addr = int(sys.argv[1]), sys.argv[2], sys.argv[3]
while True:
    t = time.time()
    up = "none"
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        for l in data.decode(errors="replace").splitlines():
            if l.startswith("slurm_elastic_slurmctld_up "):
                up = l.split()[1]
    except OSError as e:
        up = "error:" + str(e).replace(" ", "_")
    ms_scrape = (time.time() - t) * 1000
    t2 = time.time()
    try:
        rc = subprocess.run([ctl, "-c", addr, "status"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=5).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    ms_status = (time.time() - t2) * 1000
    print("%.3f %.1f %s %.1f %s" % (t, ms_scrape, up, ms_status, rc), flush=True)
    time.sleep(max(0.0, 0.25 - (time.time() - t)))
PY
prober=$!
CTL_CLIENTS="$CTL_CLIENTS $prober"

# bob's job: elasticd orders alice's release; slurmctld stops at that order.
jb=$(ctl_train_job bob bob acct_b "--epochs $epochs $targs --step-sleep 20000 --sleep-while $T_DIR/slow --compare $T_DIR/ref.model" 5000 \
	--elastic-gpus=1-8 --elastic-grace=60 -N1 -n1)
ctl_wait_line 60 "$T_DIR/alice.out" "controller: release grant" "no release order reached alice's job"
era=$(t_pgrep -u alice -f "elastic-run -v .*-- $train" | head -n1)
[ -n "$era" ] || t_fail "no elastic-run of alice's"
T_CTLD_DOWN_HOOK='stopped=$(date +%s.%N); kill -USR1 $era' t_ctld_restart 45
back=$(date +%s.%N)
t_log "slurmctld stopped at alice's release order, down 45 s, answering again; alice's job re-formed (SIGUSR1) as it stopped"
ctl_wait_split 90 "$ja=4" "$jb=4" "$jc=4"
t_log "split 4/4/4 reached $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $back}") s after slurmctld answered"
kill "$prober" 2>/dev/null || true

# The probes from slurmctld's end to its new start (45 s later).
awk -v a="$stopped" '$1 >= a && $1 <= a + 45' "$probe" >"$T_DIR/probe-down.txt"
n=$(wc -l <"$T_DIR/probe-down.txt")
worst_scrape=$(awk 'BEGIN{m=0} $2 > m {m=$2} END{print m}' "$T_DIR/probe-down.txt")
worst_status=$(awk 'BEGIN{m=0} $4 > m {m=$4} END{print m}' "$T_DIR/probe-down.txt")
[ "$n" -ge 50 ] || t_fail "only $n probes while slurmctld was down, one every 0.25 s expected (slowest scrape $worst_scrape ms, status $worst_status ms; probe.txt in the scratch files) $(head -c 300 "$T_DIR/probe.err")"
bad=$(awk '$2 > 1000 || $4 > 1000 || $5 != 0 || $3 ~ /^(none|error)/' "$T_DIR/probe-down.txt" | head -n 3 | paste -sd';' -)
[ -z "$bad" ] || t_fail "a scrape or status did not answer within 1 s while slurmctld was down (time scrape-ms up status-ms rc): $bad"
first0=$(awk -v a="$stopped" '$3 == "0" {printf "%.2f", $1 - a; exit}' "$T_DIR/probe-down.txt")
[ -n "$first0" ] || t_fail "slurm_elastic_slurmctld_up never read 0 while slurmctld was down"
awk "BEGIN{exit !($first0 <= 2.0)}" || t_fail "slurm_elastic_slurmctld_up read 0 only $first0 s after slurmctld ended"
up1=$(awk '$3 == "1"' "$T_DIR/probe-down.txt" | awk -v a="$stopped" -v f="$first0" '$1 > a + f' | head -n 1)
[ -z "$up1" ] || t_fail "slurm_elastic_slurmctld_up read 1 again while slurmctld was down: $up1"
grep -aq "no snapshot of slurmctld: slurmctld does not answer" "$T_DIR/elasticd.log" ||
	t_fail "elasticd's log does not say that slurmctld does not answer"
t_log "$n probes while slurmctld was down: slowest scrape $worst_scrape ms, slowest status $worst_status ms; slurmctld_up 0 after $first0 s"

# The releases: the stand-in's acknowledged while slurmctld was down, alice's
# once it answered; every released grant ended COMPLETED. (A grant whose end
# elasticd could not ask for at once, slurmctld still coming back, has its
# release ordered again and acknowledged twice: each grant counts once.)
gc=$(grep -aEo "job $jc: acknowledged the release of grant [0-9]+" "$T_DIR/elasticd.log" | awk '{print $NF}' | sort -nu | paste -sd, -)
ga=$(grep -aEo "job $ja: acknowledged the release of grant [0-9]+" "$T_DIR/elasticd.log" | awk '{print $NF}' | sort -nu | paste -sd, -)
[ -n "$gc" ] && [ -n "$ga" ] || t_fail "releases not acknowledged: the stand-in's '$gc', alice's '$ga'"
for g in ${gc//,/ }; do
	grep -aq "job $jc: grant $g ends once slurmctld answers" "$T_DIR/elasticd.log" ||
		t_fail "the stand-in's acknowledgement of grant $g was not taken while slurmctld was down: $(grep -a "grant $g\b" "$T_DIR/elasticd.log" | tail -n 3)"
done
end=$((SECONDS + 30))
acct() { sacct -X -n -P -S "$t0_test" -j "$gc,$ga" -o JobID,State; }
until [ "$(acct | grep -cE '\|(COMPLETED|CANCELLED.*|FAILED)$')" = "$(echo "$gc,$ga" | tr , '\n' | wc -l)" ]; do
	[ $SECONDS -lt $end ] || t_fail "released grants did not end within 30 s: $(acct | paste -sd' ' -)"
	sleep 1
done
[ -z "$(acct | grep -v '|COMPLETED$')" ] || t_fail "released grants not ended COMPLETED: $(acct | paste -sd' ' -)"
t_log "released: the stand-in's grants $gc (acknowledged while slurmctld was down), alice's $ga; in sacct: $(acct | paste -sd' ' -)"

# alice's relaunch read her GPUs from Slurm while slurmctld was down: it
# asked again until slurmctld answered, and did not end the job.
grep -aq "cannot find this job's GPUs yet: .*asking Slurm again in" "$T_DIR/alice.out" ||
	t_fail "alice's relaunch did not wait for slurmctld: $(grep -a "GPUs" "$T_DIR/alice.out" | tail -n 3)"
grep -aE "Slurm answered after [0-9]+ s" "$T_DIR/alice.out" | head -n 1 | sed 's/^/    /'

rm "$T_DIR/slow" # the rest of the training at full speed
t_wait_job "$ja" 300
t_wait_job "$jb" 300
ctl_train_done "$T_DIR/alice.out" $epochs
ctl_train_done "$T_DIR/bob.out" $epochs
scancel "$jc"
ctl_no_grants_left 15 "after the jobs ended"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
