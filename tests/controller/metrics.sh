#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/metrics.sh: elasticd's OpenMetrics endpoint (MetricsAddress)
# scraped by a real Prometheus (Debian's package, run without systemd) and
# checked by promtool, with one elastic job alone on 2 nodes x 4 GPUs (8 GPUs,
# its grants running); then a real elastic-run job loses the grant that runs
# its other node's PRRTE daemon, and its re-form (or heal in place, where the
# runtime heals a lost daemon) and recovery time reach the scrape and
# Prometheus; then bad requests get their error codes, a silent client does
# not block a scrape, and elasticd lives on.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
command -v prometheus >/dev/null && command -v promtool >/dev/null ||
	t_skip "prometheus and promtool not installed (Debian package prometheus)"
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_conf PolicyMode=priority "MetricsAddress=127.0.0.1:0"
ctl_block_nodes node3 node4
ctl_start
port=$(ctl_metrics_port) || exit 1
t_log "OpenMetrics on 127.0.0.1:$port"

# GET PATH (or send RAW bytes): prints "CODE" then the body.
http() { # path | --raw bytes
	python3 - "$port" "$@" <<'PY'
import socket, sys
port, args = int(sys.argv[1]), sys.argv[2:]
req = args[1].encode() if args[0] == "--raw" else ("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % args[0]).encode()
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(req)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
head, _, body = data.partition(b"\r\n\r\n")
print(head.split(b" ")[1].decode() if head else "none")
sys.stdout.write(body.decode())
PY
}

j1=$(ctl_job alice acct_a 1 8 10 5000)
ctl_client alice "$j1"
ctl_wait_split 30 "$j1=8"
t_log "job $j1 alone: 8 GPUs after ${CTL_WAITED}s"

# The scrape as elasticd serves it, once its state has caught up with squeue.
end=$((SECONDS + 10))
until http /metrics >"$T_DIR/scrape" && grep -q "^slurm_elastic_job_gpus{jobid=\"$j1\",user=\"alice\"} 8$" "$T_DIR/scrape"; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/scrape"; t_fail "no slurm_elastic_job_gpus 8 for job $j1"; }
	sleep 0.5
done
[ "$(head -n1 "$T_DIR/scrape")" = 200 ] || t_fail "GET /metrics: $(head -n1 "$T_DIR/scrape")"
sed 1d "$T_DIR/scrape" >"$T_DIR/metrics.txt"
t_grep "^slurm_elastic_job_gpus_target\{jobid=\"$j1\",user=\"alice\"\} 8$" "$T_DIR/metrics.txt" "the target"
grants=$(ctl_grants "$j1" | grep -c RUNNING)
t_grep "^slurm_elastic_job_grants\{jobid=\"$j1\",user=\"alice\"\} $grants$" "$T_DIR/metrics.txt" "the job's $grants grants"
t_grep "^slurm_elastic_grants\{state=\"running\"\} $grants$" "$T_DIR/metrics.txt" "the running grants"
t_grep "^slurm_elastic_gpus_free 0$" "$T_DIR/metrics.txt" "no free GPU"
t_grep "^slurm_elastic_job_channel_connected\{jobid=\"$j1\",user=\"alice\"\} 1$" "$T_DIR/metrics.txt" "the channel up"
t_grep "^slurm_elastic_channel_connections [1-9]" "$T_DIR/metrics.txt" "channel connections"
t_grep "^slurm_elastic_job_step\{jobid=\"$j1\"," "$T_DIR/metrics.txt" "the job's step"
t_grep "^slurm_elastic_tick_seconds_count [1-9]" "$T_DIR/metrics.txt" "ticks timed"
ticks=$(sed -n 's/^slurm_elastic_tick_seconds_count //p' "$T_DIR/metrics.txt")
t_grep "^slurm_elastic_tick_seconds_bucket\{le=\"\+Inf\"\} $ticks$" "$T_DIR/metrics.txt" "every tick in the +Inf bucket"
t_grep "^slurm_elastic_tick_less_cpu_wait_seconds_bucket\{le=\"\+Inf\"\} $ticks$" "$T_DIR/metrics.txt" "every tick in the +Inf bucket, less its wait for a CPU"
t_grep "^slurm_elastic_tick_cpu_wait_seconds_total [0-9.]+$" "$T_DIR/metrics.txt" "the ticks' wait for a CPU"
t_grep "^slurm_elastic_tick_phase_seconds_total\{phase=\"observe\"\} [0-9.]*[1-9]" "$T_DIR/metrics.txt" "time spent reading slurmctld"
t_grep "^slurm_elastic_tick_phase_seconds_total\{phase=\"act\"\} [0-9.]*[1-9]" "$T_DIR/metrics.txt" "time spent acting on Slurm"
t_grep "^slurm_elastic_slurm_calls_total\{call=\"nodes\"\} [1-9]" "$T_DIR/metrics.txt" "node lists read"
submits=$(sed -n 's/^slurm_elastic_slurm_calls_total{call="submit"} //p' "$T_DIR/metrics.txt")
[ "${submits:-0}" -ge "$grants" ] || t_fail "slurm_elastic_slurm_calls_total{call=\"submit\"} is '$submits' for $grants grants"
t_grep "^slurm_elastic_slurm_call_seconds_total\{call=\"nodes\"\} [0-9.]*[1-9]" "$T_DIR/metrics.txt" "time waited on node lists"
t_grep "^# EOF$" "$T_DIR/metrics.txt" "the OpenMetrics end"
# promtool lints the Prometheus text format, where a counter's TYPE line
# names its _total samples; in OpenMetrics (what elasticd serves) it names
# the family without _total. promtool's "X_total no help text" for such a
# family X is that difference; anything else (a parse error: status 1, or
# another lint) fails.
promtool_check() { # file
	local rc=0 other
	promtool check metrics <"$1" >"$T_DIR/promtool.out" 2>&1 || rc=$?
	other=$(grep -vE '^slurm_elastic_(job_reforms|job_resizes_in_place|tick_phase_seconds|tick_cpu_wait_seconds|slurm_calls|slurm_call_seconds)_total no help text$' "$T_DIR/promtool.out" | grep -v '^$' || true)
	{ [ $rc = 0 ] || [ $rc = 3 ]; } && [ -z "$other" ] ||
		{ cat "$T_DIR/promtool.out"; t_fail "promtool check metrics refuses the scrape (status $rc)"; }
}
promtool_check "$T_DIR/metrics.txt"
t_log "promtool check metrics: ok ($(grep -c '^slurm_elastic' "$T_DIR/metrics.txt") samples)"
grep "jobid=\"$j1\"" "$T_DIR/metrics.txt" | head -n 4 | sed 's/^/    /'

# A wait on slurmctld, stopped 2 s, is logged with what it waited on: the
# gate's ping sent ahead of a tick or a look (unanswered), or a call in a
# tick or a look; at once, or (after another slow one this minute) in the
# minute's summary line; checked at the end.
t_ctld_files
ctld=$(cat "$T_CTLD_PIDFILE")
kill -STOP "$ctld"
sleep 2
kill -CONT "$ctld"

# A real Prometheus scrapes it every second.
ppport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T_DIR/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: elasticd
    static_configs:
      - targets: ["127.0.0.1:$port"]
YML
prometheus --config.file="$T_DIR/prometheus.yml" --storage.tsdb.path="$T_DIR/tsdb" \
	--web.listen-address="127.0.0.1:$ppport" >"$T_DIR/prometheus.log" 2>&1 &
CTL_CLIENTS="$CTL_CLIENTS $!"
query() { # promql -> first value or ""
	python3 - "$ppport" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
port, q = sys.argv[1], sys.argv[2]
try:
    r = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(q)), timeout=5))
    res = r["data"]["result"]
    print(res[0]["value"][1] if res else "")
except Exception:
    print("")
PY
}
end=$((SECONDS + 60))
until [ "$(query "slurm_elastic_job_gpus{jobid=\"$j1\"}")" = 8 ]; do
	[ $SECONDS -lt $end ] || { tail -n 20 "$T_DIR/prometheus.log"; t_fail "Prometheus has no slurm_elastic_job_gpus 8 for job $j1 after 60 s"; }
	sleep 1
done
[ "$(query 'up{job="elasticd"}')" = 1 ] || t_fail "Prometheus says the elasticd target is not up"
t_log "Prometheus $(prometheus --version 2>&1 | head -n1 | awk '{ print $3 }') scraped it: slurm_elastic_job_gpus{jobid=\"$j1\"} = 8, up = 1"

# A real elastic-run job, 2 GPUs on each of node1 and node2 (its own and a
# grant), loses its grant on the other node: mpirun ends and elastic-run
# re-forms (a runtime that heals in place: the survivors heal). The scrape
# shows it by cause and a recovery observed; Prometheus has the histogram.
scancel "$j1"
scancel -n "elastic:$j1"
end=$((SECONDS + 30))
until [ "$(ctl_gpus "$j1")" = 0 ]; do
	[ $SECONDS -lt $end ] || t_fail "job $j1 and its grants did not end"
	sleep 0.2
done
ctl_block_gpus 2 node1 node2
j2=$(ctl_train_job mtrain alice acct_a "--epochs 400 --samples 4096 --global-batch 128 --step-sleep 25000" "" \
	--elastic-gpus=2-4 --elastic-grace=30 -N1 -n1)
out=$T_DIR/mtrain.out
ctl_wait_split 60 "$j2=4"
ctl_wait_line 90 "$out" '^step [0-9]+ epoch [0-9]+ size 4 ' "job $j2 does not train at 4"
lnode=$(squeue -h -j "$j2" -o %N)
off=$(ctl_grants "$j2" | awk -v n="$lnode" '$2 == "RUNNING" && $3 != n { print $1 }')
[ -n "$off" ] || t_fail "job $j2 has no running grant off its node $lnode: $(ctl_grants "$j2")"
# The grant whose step runs that node's PRRTE daemon: its loss ends mpirun
# where the runtime re-forms (a grant with a rank only, beside the daemon's,
# heals in place there too)
grant=""
for p in $(t_pgrep -x prted || true); do
	for g in $off; do t_env_has "$p" "SLURM_JOB_ID=$g" && grant=$g; done
	[ -z "$grant" ] || break
done
[ -n "$grant" ] || t_fail "no PRRTE daemon (prted) in job $j2's grants off its node: $(echo $off)"
t_log "job $j2 trains at 4 (on $lnode and grant $grant); cancelling grant $grant"
scancel "$grant"
if t_runtime_in_place; then
	want="slurm_elastic_job_resizes_in_place_total{jobid=\"$j2\",user=\"alice\",kind=\"heal\"}"
else
	want="slurm_elastic_job_reforms_total{jobid=\"$j2\",user=\"alice\",cause=\"failure\"}"
fi
count="slurm_elastic_job_recovery_seconds_count{jobid=\"$j2\",user=\"alice\"}"
end=$((SECONDS + 90))
value() { awk -v k="$1" '$1 == k { print $2; exit }' "$T_DIR/scrape"; } # sample
until http /metrics >"$T_DIR/scrape" && [ "$(value "$want")" -ge 1 ] 2>/dev/null &&
	[ "$(value "$count")" -ge 1 ] 2>/dev/null; do
	[ $SECONDS -lt $end ] || {
		grep "jobid=\"$j2\"" "$T_DIR/scrape" >&2
		tail -n 30 "$out" >&2
		t_fail "no $want >= 1 with a recovery observed in 90 s after the grant was cancelled"
	}
	sleep 0.5
done
sed 1d "$T_DIR/scrape" >"$T_DIR/metrics2.txt"
promtool_check "$T_DIR/metrics2.txt"
grep -E "^slurm_elastic_job_(reforms|resizes_in_place)_total\{jobid=\"$j2\"" "$T_DIR/metrics2.txt" | sed 's/^/    /'
grep -E "^slurm_elastic_job_recovery_seconds_(sum|count)\{jobid=\"$j2\"" "$T_DIR/metrics2.txt" | sed 's/^/    /'
grep -a 're-form cause:\|healed in place' "$out" | sed 's/^/    /'
end=$((SECONDS + 30))
until [ "$(query "$count")" -ge 1 ] 2>/dev/null; do
	[ $SECONDS -lt $end ] || t_fail "Prometheus has no $count >= 1 after 30 s"
	sleep 1
done
p50=$(query "histogram_quantile(0.5, slurm_elastic_job_recovery_seconds_bucket{jobid=\"$j2\"})")
[ -n "$p50" ] || t_fail "Prometheus gives no histogram_quantile of job $j2's recovery seconds"
t_log "promtool ok; Prometheus: $count = $(query "$count"), median recovery (histogram_quantile) $p50 s"

# Bad requests: their codes, and elasticd serves on.
[ "$(http / | head -n1)" = 404 ] || t_fail "GET / is not 404"
[ "$(http --raw $'POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n' | head -n1)" = 405 ] || t_fail "POST is not 405"
[ "$(http --raw $'GET /metrics HTTP/9\r\n\r\n' | head -n1)" = 400 ] || t_fail "HTTP/9 is not 400"
[ "$(http --raw "GET /metrics HTTP/1.1"$'\r\n'"X: $(head -c 5000 /dev/zero | tr '\0' a)"$'\r\n\r\n' | head -n1)" = 431 ] ||
	t_fail "a 5 kB head is not 431"
# A client that connects and says nothing neither blocks a scrape nor stays.
python3 -c "import socket, time; s = socket.create_connection(('127.0.0.1', $port)); time.sleep(8)" &
silent=$!
sleep 0.5
t0=$(date +%s%N)
[ "$(http /metrics | head -n1)" = 200 ] || t_fail "no scrape beside a silent client"
ms=$((($(date +%s%N) - t0) / 1000000))
# (the silent client holds its connection 8 s; a python3 start is up to 1 s of
# this under the whole check's load)
[ $ms -lt 4000 ] || t_fail "a scrape beside a silent client took $ms ms"
wait "$silent"
ctl_alive || t_fail "elasticd died on bad requests"
t_log "404, 405, 400 and 431 answered; a scrape beside a silent client took $ms ms; elasticd alive"

slow='(a tick|a look between ticks|a wait for slurmctld before a tick or a look) took [0-9]{3,} ms \((observe [0-9]+ ms, decide [0-9]+ ms, act [0-9]+ ms, )?CPU [0-9]+ ms, waiting for a CPU [0-9]+ ms\); Slurm calls: [a-z_]+ [0-9]+ \([0-9]{3,} ms\)'
end=$((SECONDS + 65))
until grep -aqE "$slow" "$T_DIR/elasticd.log"; do
	[ $SECONDS -lt $end ] || { grep -a 'tick' "$T_DIR/elasticd.log" | tail -n 5; t_fail "no log line of a tick or look of 100 ms or more, naming what it waited on, after slurmctld stopped 2 s"; }
	sleep 1
done
t_log "the slow tick, logged: $(grep -aoE "$slow.*" "$T_DIR/elasticd.log" | head -n 1)"
exit 0
