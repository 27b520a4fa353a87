#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/site_soak_table.py DIR SECONDS: the final table of a soak
(bench/site_soak.sh) from the files its run left in DIR; exit 1 when
something was lost: a job that did not end with every sample once and the
static run's model, a step twice, a GPU used by two jobs or ranks, a grant
or step left over."""
import collections
import os
import re
import subprocess
import sys

D, elapsed = sys.argv[1], float(sys.argv[2])
bad = []


def rows(name):
    path = os.path.join(D, name)
    if not os.path.exists(path):
        return []
    return [line.split() for line in open(path) if line.strip()]


def text(name):
    path = os.path.join(D, name)
    return open(path, errors="replace").read() if os.path.exists(path) else ""


jobs = rows("elastic.jobs")  # id name user min max epochs slot [kind: c, torch]
held = collections.defaultdict(list)  # job -> [(t, gpus)]
for t, j, g in rows("held.tsv"):
    held[j].append((float(t), int(g)))
size = collections.defaultdict(list)  # job -> [(t, step, size)]
for t, j, s, n in rows("size.tsv"):
    size[j].append((float(t), int(s), int(n)))


def gpu_seconds(j):
    """Held: each 10 s sample's GPUs over the time to the next; trained:
    the GPUs of the world that committed steps in that time."""
    h = held.get(j, [])
    steps = size.get(j, [])
    tot = trained = 0.0
    for (t0, g), (t1, _) in zip(h, h[1:]):
        dt = t1 - t0
        tot += dt * g
        before = [x for x in steps if x[0] <= t0]
        after = [x for x in steps if t0 < x[0] <= t1]
        if before and after and after[-1][1] > before[-1][1]:
            trained += dt * min(g, after[-1][2])
    return tot, trained


def torch_result(name, epochs, out):
    """A PyTorch job (train_digits.py): its done line, and its final model
    against the static run's within float32 summation-order noise (the
    tolerance of tests/python/common.sh); (done, model, max |dw|)."""
    done = re.search(r"^done: \d+ steps, (\d+) epochs, size \d+, each committed step applied "
                     r"once: yes, samples once per epoch: yes", out, re.M)
    done = done if done and done.group(1) == epochs else None
    try:
        import numpy as np
        a = np.load(os.path.join(D, name + ".npy"))
        b = np.load(os.path.join(D, f"ref-torch-{epochs}.npy"))
        dw = float(np.max(np.abs(a - b)))
        return done, bool(np.allclose(a, b, rtol=1e-3, atol=1e-4)), dw
    except (OSError, ValueError, ImportError):
        return done, False, None


def sacct_state(j):
    try:
        out = subprocess.run(["sacct", "-X", "-n", "-P", "-j", j, "-o", "State,ExitCode"],
                             capture_output=True, text=True, timeout=30).stdout
        return out.strip().splitlines()[0] if out.strip() else "?"
    except Exception:
        return "?"


print(f"soak over {elapsed:.0f} s; elastic jobs:")
hdr = ("job", "user", "gpus", "epochs", "result", "sizes", "held GPU-s", "trained",
       "heals", "grew", "shrank", "re-forms by cause")
fmt = "{:>8} {:<6} {:>6} {:>6} {:<26} {:>7} {:>10} {:>8} {:>5} {:>4} {:>6}  {}"
print(fmt.format(*hdr))
tot_h = tot_t = 0.0
causes_all = collections.Counter()
heal_all = grew_all = shrank_all = 0
torch_dw = []
for j, name, user, lo, hi, epochs, _slot, *kind in jobs:
    out = text(name + ".out")
    torch = kind == ["torch"]
    if torch:
        done, model, dw = torch_result(name, epochs, out)
        torch_dw.append(dw)
        counts_ok = bool(done)
    else:
        done = re.search(r"^done: \d+ steps, (\d+) epochs, .*usage: (\d+) epochs checked, "
                         r"(\d+) bad, (\d+) violations", out, re.M)
        model = re.search(r"^model matches reference", out, re.M)
        counts_ok = done and done.group(1) == epochs and done.group(3) == "0" and done.group(4) == "0"
    stepl = re.findall(r"^step (\d+) ", out, re.M)
    dups = len(stepl) - len(set(stepl))
    order = all(int(a) < int(b) for a, b in zip(stepl, stepl[1:]))
    st = sacct_state(j)
    if counts_ok and model and dups == 0 and order and st == "COMPLETED|0:0":
        res = "ok"
    elif not done and st.startswith(("RUNNING", "PENDING")):
        res = "still " + st.split("|")[0].lower()
    else:
        why = []
        if not done:
            why.append("no done line" if not torch else "no done line with each step and sample once")
        elif not counts_ok:
            why.append(f"{done.group(3)} bad, {done.group(4)} violations")
        if done and not model:
            why.append("model differs")
        if dups:
            why.append(f"{dups} steps twice")
        if not order:
            why.append("steps out of order")
        if st != "COMPLETED|0:0":
            why.append(st)
        res = "LOST: " + ", ".join(why)
    if res != "ok":
        bad.append(f"job {j}: {res}")
    sizes = sorted({n for _, _, n in size.get(j, [])})
    hs, ts = gpu_seconds(j)
    tot_h += hs
    tot_t += ts
    causes = collections.Counter(re.findall(r"re-form cause: (\w+)", out))
    heals = len(re.findall(r"the survivors healed in place", out))
    grew = len(re.findall(r"^.*grew in place:", out, re.M))
    shrank = len(re.findall(r"planned shrink in place: \d+ ranks? left after", out))
    causes_all.update(causes)
    heal_all += heals
    grew_all += grew
    shrank_all += shrank
    print(fmt.format(j + ("*" if torch else ""), user, f"{lo}-{hi}", epochs, res[:26],
                     f"{min(sizes)}-{max(sizes)}" if sizes else "-", f"{hs:.0f}", f"{ts:.0f}",
                     heals, grew, shrank, " ".join(f"{c} {n}" for c, n in sorted(causes.items())) or "-"))
if torch_dw:
    print(f"* PyTorch (train_digits.py, checked against a static 2-rank run within rtol 1e-3, "
          f"atol 1e-4): max |dw| " + ", ".join("-" if d is None else f"{d:.2g}" for d in torch_dw))
print(f"all {len(jobs)} jobs: GPU-s held {tot_h:.0f}, trained {tot_t:.0f}"
      f" ({100 * tot_t / tot_h:.0f} %)" if tot_h else "no GPU held")
print(f"  heals in place {heal_all}, grown in place {grew_all}, shrunk in place {shrank_all}; "
      f"re-forms: " + (", ".join(f"{c} {n}" for c, n in sorted(causes_all.items())) or "none"))

# GPU sharing, sampled
share = text("sharing.log")
samples = re.findall(r"^t=\d+ gpus=(\d+) ranks=(\d+) violations=(\d+)", share, re.M)
viol = [line[10:] for line in share.splitlines() if line.startswith("VIOLATION ")]
print(f"GPU sharing: {len(samples)} samples, up to {max((int(g) for g, _, _ in samples), default=0)} GPUs held"
      f" and {max((int(r) for _, r, _ in samples), default=0)} ranks seen at once; {len(viol)} violations")
for v in viol[:5]:
    print("  " + v)
if viol:
    bad.append(f"{len(viol)} GPU sharing violations")

orph = [line for line in text("orphans.txt").splitlines() if line.strip()]
print(f"left over at the end: {len(orph)} grants or steps" + (": " + "; ".join(orph[:5]) if orph else ""))
if orph:
    bad.append(f"{len(orph)} grants or steps left over")


# elasticd: ticks (histograms, both lives) and memory
def hist(t, family):
    b = collections.OrderedDict()
    for le, n in re.findall(r'^' + family + r'_bucket\{le="([^"]+)"\} (\d+)', t, re.M):
        b[le] = int(n)
    return b


def both_lives(family):
    h1 = hist(text("metrics-before-kill.txt"), family)
    h2 = hist(text("metrics-end.txt"), family)
    return collections.OrderedDict((le, h1.get(le, 0) + h2.get(le, 0)) for le in (h2 or h1))


def quantile(cum, q):
    """The bucket bound where the cumulative count passes q (an upper
    bound), with linear interpolation inside the bucket."""
    n = list(cum.values())[-1] if cum else 0
    prev_le, prev_n = 0.0, 0
    for le, c in cum.items():
        if c >= q * n and n:
            hi = float("inf") if le == "+Inf" else float(le)
            if hi == float("inf") or c == prev_n:
                return hi
            return prev_le + (hi - prev_le) * (q * n - prev_n) / (c - prev_n)
        prev_le, prev_n = (float(le) if le != "+Inf" else prev_le), c
    return float("nan")


def ticks_line(cum):
    n = list(cum.values())[-1] if cum else 0
    over = n - cum.get("0.1", n)
    return (f"p50 {1e3 * quantile(cum, 0.5):.1f} ms, p99 {1e3 * quantile(cum, 0.99):.1f} ms, "
            f"{over} over 100 ms")


wall = both_lives("slurm_elastic_tick_seconds")
own = both_lives("slurm_elastic_tick_less_cpu_wait_seconds")
n = list(wall.values())[-1] if wall else 0
rss = [(float(t), int(k)) for t, k in rows("ctl_rss.tsv") if int(k) > 0]
print(f"elasticd: {n} ticks, {ticks_line(wall)}"
      + (f"; less their wait for a CPU: {ticks_line(own)}" if own else "") + "; RSS "
      + (f"{rss[0][1] / 1024:.1f} MiB at the start, {max(k for _, k in rss) / 1024:.1f} MiB at most, "
         f"{rss[-1][1] / 1024:.1f} MiB at the end" if rss else "not sampled"))

# the slow ticks elasticd logged (100 ms or more), with what they waited on
slow, nslow = [], 0
for name in ("elasticd-1.log", "elasticd.log"):
    for line in text(name).splitlines():
        m = re.search(r"(?:(\d+) more over \d+ ms .*the slowest: )?((?:a tick|a look between ticks|"
                      r"a wait for slurmctld before a tick or a look) took (\d+) ms.*)$", line)
        if m:
            nslow += int(m.group(1)) if m.group(1) else 1
            slow.append((int(m.group(3)), m.group(2)))
print(f"elasticd's ticks, looks between ticks and waits for a ping of 100 ms or more: {nslow}; "
      "the slowest:")
for _, line in sorted(slow, reverse=True)[:3]:
    print("  " + line)

# slurmctld's time on elasticd's calls (elasticd runs as SlurmUser)
sd = text("sdiag.txt")
users = {u: (int(c), int(tt)) for u, c, tt in
         re.findall(r"^\s+(\S+)\s+\(\s*\d+\) count:(\d+)\s+ave_time:\d+\s+total_time:(\d+)", sd, re.M)}
if users:
    mine = users.get("slurm", (0, 0))
    alltime = sum(tt for _, tt in users.values())
    print(f"slurmctld (sdiag): elasticd's {mine[0]} calls took {mine[1] / 1e6:.2f} s, "
          f"{100 * mine[1] / alltime:.1f} % of all RPC time and {100 * mine[1] / 1e6 / elapsed:.2f} % of the run's time")
else:
    print("slurmctld (sdiag): no per-user statistics")
ev = text("events.log")
print("events: " + "; ".join([
    f"{len(rows('lost.nodes'))} nodes lost and back",
    f"slurmctld restarted {ev.count('slurmctld restart (')}",
    f"policy changed by SIGHUP {ev.count('SIGHUP to elasticd')}",
    f"elasticd SIGKILLed {ev.count('elasticd SIGKILLed')}",
    f"plain jobs submitted {len(rows('plain.ids'))}"]))
if bad:
    print("SOAK FAILED: " + "; ".join(bad))
    sys.exit(1)
print("SOAK PASSED: nothing lost, no GPU shared")
