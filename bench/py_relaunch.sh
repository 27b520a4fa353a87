#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/py_relaunch.sh: what a re-form costs a PyTorch job, cold (ELASTIC_WARM=off: a new
# python3 per rank) against warm (the default: ranks forked by elastic-run's zygotes),
# side by side in one run. Each round: examples/pytorch/train.sbatch (no elasticd) on
# node1's 2 GPUs + a grant of 1 GPU on node2, 3 ranks; once node1's zygote is ready and a
# few steps are committed, every process of the job on node2 is SIGKILLed and the grant
# cancelled; elastic-run re-forms at 2 ranks. Prints kill -> first commit after the
# re-form and its breakdown (elastic-run's times and the rank's, train_digits.py
# --timings), and the first launch's start -> first commit, the median of
# BENCH_RELAUNCH_ROUNDS rounds a mode (default 3), modes alternating. Needs the
# testbed cluster (run it inside `testbed/cluster exec`) with this build's SPANK
# plugin, torch and sklearn; says "skipped" otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
top_builddir=${top_builddir:-$(cd "${PWD}/.." && pwd)}
rounds=${BENCH_RELAUNCH_ROUNDS:-3}
skip() { echo "py_relaunch: $*; skipped"; exit 0; }
[ -e "$top_builddir/python/slurm_elastic/_core.so" ] || skip "the Python binding is not built"
[ -n "${SLURM_CONF:-}" ] && scontrol ping >/dev/null 2>&1 || skip "no testbed cluster (run inside testbed/cluster exec)"
sbatch --help 2>&1 | grep -q -- --elastic-gpus || skip "the SPANK plugin is not loaded"
python3 -c 'import torch, sklearn' 2>/dev/null || skip "no torch/sklearn"

. "$here/cluster_jobs.sh"
bench_jobs_setup py_relaunch

# One round: prints "MODE kill->end X" and "MODE <part> X" lines for the parts.
round() { # mode (off|auto)
	local mode=$1 out=$D/job.$1.$RANDOM lead grant last victims t_kill tl
	lead=$(submit -N1 -n1 -w node1 --gres=gpu:2 -H -o "$out" \
		--export="ALL,ELASTIC_WARM=$mode,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$top_srcdir/examples/pytorch/train_digits.py,EPOCHS=1000,TRAIN_ARGS=--timings" \
		"$D/train.sbatch") || return 1
	grant=$(submit -N1 -w node2 --gres=gpu:1 -J "elastic:$lead" -o /dev/null --wrap "sleep 600") || return 1
	until [ "$(state "$grant")" = RUNNING ]; do sleep 0.1; done
	scontrol release "$lead"
	wait_for "$out" '^step 5 .* size 3 ' 180 || { echo "round $mode: no step 5" >&2; cat "$out" >&2; return 1; }
	if [ "$mode" != off ]; then
		wait_for "$out" 'elastic-run warm node1: ready' 120 || { echo "round $mode: zygote not ready" >&2; return 1; }
	fi
	last=$(grep -a '^step [0-9]* ' "$out" | tail -1 | awk '{print $2}')
	wait_for "$out" "^step $((last + 2)) " 60 || return 1
	victims=""
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		case "$comm" in prted | elastic-run | python3*) ;; *) continue ;; esac
		env=$'\n'$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null)$'\n' || continue
		[[ $env == *$'\n'"SLURM_JOB_ID=$grant"$'\n'* && $env == *$'\n'"SLURMD_NODENAME=node2"$'\n'* ]] &&
			victims="$victims ${p#/proc/}"
	done
	t_kill=$(date +%s.%N)
	kill -KILL $victims 2>/dev/null
	scancel "$grant"
	wait_for "$out" '^timings \(resumed' 120 || { echo "round $mode: no relaunch" >&2; tail -20 "$out" >&2; return 1; }
	wait_for "$out" 'first commit after a change' 10
	scancel "$lead"
	# the first launch (both modes cold; with warm on, the zygotes start beside it)
	grep -a '^timings (fresh' "$out" | head -1 | sed -n "s/.*; total \([0-9.]*\) s.*/$mode\tfirst launch (cold in both modes): process start -> first commit\t\1/p"
	tl=$(grep -a '^timings (resumed' "$out" | head -1)
	c=$(awk '/re-form 1:/ { f = 1 } f && /first commit after a change/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^t=/) print substr($i, 3); exit }' "$out")
	echo "$tl" | awk -v mode="$mode" -v k="$t_kill" -v c="$c" '{
		n = split($0, a, /[:;,] /)
		for (i = 1; i <= n; i++) if (a[i] ~ / -?[0-9.]+ s$/) {
			part = a[i]; sub(/ -?[0-9.]+ s$/, "", part); v = a[i]; sub(/ s$/, "", v); sub(/.* /, "", v)
			sub(/ \(forked by the warm zygote\)| \(exec\)/, "", part)
			if (part ~ /^since|^total/) continue
			print mode "\t" part "\t" v
		}
		if (match($0, /previous mpirun ended at [0-9.]+/)) {
			e = substr($0, RSTART + 25, RLENGTH - 25); print mode "\tkill -> previous mpirun ended\t" e - k
		}
		print mode "\tkill -> first commit after the re-form\t" c - k
		print mode "\twarm\t" ($0 ~ /, warm\)/ ? 1 : 0)
	}'
}

echo "py_relaunch: $rounds rounds a mode, 3 ranks -> node2 lost -> 2 ranks (STEP_SLEEP 0)"
for r in $(seq "$rounds"); do
	round off >>"$D/res" || exit 1
	round auto >>"$D/res" || exit 1
done
python3 - "$D/res" "$rounds" <<'PY'
import sys, statistics as st
rows, order = {}, []
for line in open(sys.argv[1]):
    mode, part, v = line.rstrip("\n").split("\t")
    if part not in order:
        order.append(part)
    rows.setdefault(part, {}).setdefault(mode, []).append(float(v))
first = ["kill -> previous mpirun ended"]
last = ["kill -> first commit after the re-form",
        "first launch (cold in both modes): process start -> first commit"]
print("%-58s %10s %10s   (median of %s rounds, seconds)" % ("", "cold", "warm", sys.argv[2]))
for part in first + [p for p in order if p not in first + last + ["warm"]] + last:
    r = rows.get(part, {})
    f = lambda m: ("%.3f" % st.median(r[m])) if m in r else "-"
    print("%-58s %10s %10s" % (part, f("off"), f("auto")))
w = rows["warm"]
print("ranks started warm: cold mode %d of %d rounds, warm mode %d of %d"
      % (sum(w.get("off", [])), len(w.get("off", [])), sum(w.get("auto", [])), len(w.get("auto", []))))
for m, name in (("off", "cold"), ("auto", "warm")):
    print("kill -> first commit, %s, every round: %s" % (name, " ".join(
        "%.3f" % x for x in rows[last[0]].get(m, []))))
print("(first launch row: with warm on, the zygotes import torch beside the first "
      "launch's ranks, on the same cores)")
PY
