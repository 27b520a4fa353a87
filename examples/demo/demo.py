#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# examples/demo/demo.py: drives the reference scenario on a testbed cluster
# (two elastic training jobs: elastic_train in C and the PyTorch example;
# a priority change, a node loss, a rank loss),
# prints a live line per change, and ends with the timeline, the losses, a
# chart and a check of both jobs against static runs of the same training.
"""usage: demo.py [options]   (inside `testbed/cluster exec`: needs SLURM_CONF,
ELASTIC_TESTBED_DIR and ELASTIC_MUNGE_SOCKET; run as root)

The cluster must have 2 nodes x 4 GPUs with the elastic plugins of BUILD
loaded. demo.py starts its own elasticd (the cluster's elastic.conf), then:
  1. job 1 (alice, --elastic-gpus=1-8) starts alone and grows to 8 GPUs;
  2. job 2 (bob, same request; by default the PyTorch example of
     examples/pytorch, an MLP on sklearn's digits: --torch-job) arrives: 4 / 4;
  3. job 2's priority goes to 10000 (job 1 stays at 5000): 3 / 5;
  4. job 2 loses its part of the node it shares with job 1 (daemon, rank and
     grant job SIGKILLed): it resumes on its remaining GPUs, elasticd grants
     replacements; one rank of job 1 is SIGKILLed and healed in place (ULFM);
  5. job 1 finishes: job 2 grows to 8 and finishes.
Exit status 0 when every expectation held, 1 otherwise (the reason printed).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elastic_cluster as ec  # noqa: E402 (next to this file)
from elastic_cluster import HERE, die, run  # noqa: E402

ec.set_name("demo")


class Job:
    def __init__(self, num, user, account, epochs, torch=False):
        self.num, self.user, self.account, self.epochs = num, user, account, epochs
        self.torch = torch  # trains examples/pytorch (digits MLP) instead of elastic_train
        self.id = None
        self.out = None
        self.reference = None
        self.spread = None  # the PyTorch job: its static run on 3 ranks
        self.model = None  # the PyTorch job: its final parameters (.npy)
        self.replayed = None  # the PyTorch job: what its replay showed (Demo.replay)
        self.gpus = 0
        self.layout = ""
        self.ranks = 0
        # between a re-form's relaunch and the new world's first step no
        # rank trains: the GPU-seconds count none there
        self.relaunching = False
        # when its GPUs last grew and its ranks last fell: which one the
        # GPUs without a rank wait on (see idle_cause)
        self.grown = self.shrunk = 0.0
        self.size_since = 0  # first step committed at the current size
        self.step = -1
        self.steps = {}  # step -> (epoch, size, loss, t, test accuracy or None)
        self.repeated = []  # steps printed twice
        self.offset = 0
        self.partial = ""
        self.pending = ""  # what the next change of size is about
        self.launches = []  # (t, ranks, text)
        self.next = 0  # the step that must come next
        self.problems = []  # steps lost or repeated
        self.unprinted = []  # committed steps whose line was lost with their launch
        self.resume_pending = False
        self.planned_stop = None
        self.heals = []  # (t, step, size, ms)
        self.reforms = 0
        self.done = None
        self.compare = None
        self.finished_line = None
        self.reasons = []  # elasticd's lines about this job since its last change
        self.cause = ""  # what the demo did to it, for its next change
        self.priority = None

    def training(self):
        """The ranks training now: none during a relaunch or without GPUs."""
        return self.ranks if self.gpus and not self.relaunching else 0

    def idle_cause(self):
        """Why some of the job's GPUs have no training rank now ("" when all
        have one): a key of IDLE_CAUSES."""
        if self.gpus <= self.training():
            return ""
        if self.step < 0:
            return "start"
        if self.relaunching:
            return "relaunch"
        return "join" if self.grown > self.shrunk else "gone"

    def label(self):
        return f"job {self.num} ({self.user}, {self.id}{', PyTorch' if self.torch else ''})"

    def trainer(self):
        """What its rank processes run (to find them)."""
        return "train_digits.py" if self.torch else "elastic_train"

    def steps_total(self, a):
        if self.torch:  # 1500 training samples of sklearn's digits
            return self.epochs * -(-DIGITS_TRAIN // a.batch)
        return self.epochs * -(-a.samples // a.batch)


# The fewest re-forms (relaunches over a new set of GPUs) and in-place heals
# the scenario needs, per job and cause: one per change that moves the job's
# GPUs. A job starts on its share at once: Slurm starts it on its MIN of 1,
# elasticd starts its grants, and elastic-run waits for them before the first
# launch (--grant-wait), so no grow at the start. Job 1: starts on 8, gives 4
# to job 2 and 1 more at the priority change (shrink, shrink), heals a lost
# rank in place, re-forms onto the lost rank's GPU 2 s later (replace: a rank
# on each GPU it holds) and keeps its GPUs through job 2's node loss. Job 2:
# starts on 4, grows to 5 at the priority change, re-forms on 4 after the
# node loss (failure), back to 5 when the node is back, to 8 when job 1 ends
# (grow x3).
CAUSES = ec.CAUSES
# Why a GPU a job holds has no training rank on it (Job.idle_cause), in the
# order the demo prints them.
IDLE_CAUSES = {
    "start": "first launch (the job's first step not reached: MPI start, imports)",
    "join": "new GPUs before their ranks train (a grant's interpreter starts, the "
            "ranks reach a step boundary)",
    "relaunch": "re-forms (every GPU, from the relaunch to the new world's first step)",
    "gone": "GPUs of lost or shrunk ranks (until released or given a rank again)",
}
# The bound of one event of each cause: seconds each of its idle GPUs may
# wait for a training rank. Asserted per event (Demo.idle_events), the
# largest printed beside it. A first launch or a re-form may take elastic-run's
# own bound after a commit (30 s at least), plus a PyTorch interpreter's
# start on two busy cores; new GPUs wait for the next step boundary; a lost
# or shrunk rank's GPU waits for its release or for the re-form onto it.
IDLE_BOUND_S = {"start": 60, "join": 30, "relaunch": 60, "gone": 60}
DIGITS_TRAIN = 1500  # examples/pytorch/train_digits.py's training split
# A committed step as rank 0 prints it (the job's and its static run's):
# step, epoch, size, loss, test accuracy (with --accuracy), time
STEP_LINE = re.compile(r"step (\d+) epoch (\d+) size (\d+) .*loss ([0-9.]+)(?: acc ([0-9.]+))? "
                       r"t=([0-9.]+)")
TORCH_TRAIN = os.path.join(ec.SRC, "examples/pytorch/train_digits.py")
TORCH_SBATCH = os.path.join(ec.SRC, "examples/pytorch/train.sbatch")
MIN_REFORMS = {1: {"grow": 0, "shrink": 2, "failure": 0, "replace": 1, "other": 0, "heal": 1},
               2: {"grow": 3, "shrink": 0, "failure": 1, "replace": 0, "other": 0, "heal": 0}}
# On a runtime that heals a lost node in place (Open MPI 6): job 1's shrinks
# are done in place (its ranks on the released GPUs leave, no relaunch) and
# job 2's node loss heals in place instead of re-forming.
MIN_REFORMS_IN_PLACE = {
    1: {"grow": 0, "shrink": 0, "failure": 0, "replace": 1, "other": 0, "heal": 1},
    2: {"grow": 3, "shrink": 0, "failure": 0, "replace": 0, "other": 0, "heal": 1}}


def runtime_in_place(build):
    """Does elastic-run (of this build) heal a lost node in place with this
    mpirun? (`elastic-run --runtime`)"""
    p = subprocess.run([os.path.join(build, "launcher/elastic-run"), "--runtime"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = p.stdout.splitlines()[0] if p.stdout else ""
    return p.returncode == 0 and first.endswith("heals in place")


class Demo:
    def __init__(self, a):
        self.a = a
        self.build = a.build
        self.in_place = runtime_in_place(a.build)  # Open MPI 6: a lost node heals in place
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.events = []  # (t, kind, job num or 0, text, extra dict)
        self.alloc = []  # (t, gpus1, gpus2, ranks1, ranks2, idle cause1, idle cause2)
        self.jobs = [Job(1, "alice", "acct_a", a.epochs1, a.torch_job == 1),
                     Job(2, "bob", "acct_b", a.epochs2, a.torch_job == 2)]
        for j in self.jobs:
            if j.torch:
                j.epochs = a.torch_epochs
        self.stop = threading.Event()
        self.elasticd = None
        self.mport, self.prom, self.t_scrape = None, None, 0.0
        self.log_off = 0
        self.log_partial = ""
        self.latency = {}
        self.failed = []
        self.drained = []
        # This run's node snapshots (tmpfs, as /dev/shm on a real node): all
        # fake nodes share this host, and so may other runs (the clusters of
        # other roots): a directory of its own, so that a snapshot left by
        # another run's killed job is never found, and the cleanup of one run
        # never takes another's.
        self.shm = tempfile.mkdtemp(prefix="elastic-demo-", dir="/dev/shm")
        os.chmod(self.shm, 0o1777)

    # ---- output ------------------------------------------------------
    def rel(self, t):
        return t - self.t0

    def live(self, t, job, what, text, kind, extra=None):
        """One live line and one event."""
        with self.lock:
            self.events.append((t, kind, job.num if job else 0, what + ("  " + text if text else ""),
                                extra or {}))
        who = f"job {job.num} ({job.user})" if job else "demo"
        stamp = time.strftime("%H:%M:%S", time.localtime(t))
        print(f"  {stamp} {self.rel(t):6.1f}s  {who:<12} {what:<15} {text}", flush=True)

    def step_title(self, text):
        print(f"\n==== [{self.rel(time.time()):5.1f}s] {text}", flush=True)
        with self.lock:
            self.events.append((time.time(), "step", 0, text, {}))

    # ---- observation (a thread) --------------------------------------
    def poll_squeue(self):
        """{job num: [(nodes, gpus, own)]} from squeue."""
        h = ec.held([j.id for j in self.jobs])
        return {j.num: h[j.id] for j in self.jobs if j.id in h}

    def poll_log(self):
        path = os.path.join(self.a.out, "elasticd.log")
        try:
            with open(path, errors="replace") as f:
                f.seek(self.log_off)
                data = f.read()
                self.log_off = f.tell()
        except OSError:
            return
        data = self.log_partial + data
        lines = data.split("\n")
        self.log_partial = lines.pop()
        for line in lines:
            m = re.search(r"elasticd: job (\d+): (.*)$", line)
            if not m:
                continue
            for j in self.jobs:
                if j.id == m.group(1):
                    text = m.group(2)
                    if re.match(r"(grow|shrink|start|stop|waits|held|cancelled grant)", text):
                        if text not in j.reasons:
                            j.reasons.append(text)

    def poll_out(self, j):
        if not j.out:
            return
        try:
            with open(j.out, "rb") as f:
                f.seek(j.offset)
                data = f.read().decode(errors="replace")
                j.offset = f.tell()
        except OSError:
            return
        data = j.partial + data
        lines = data.split("\n")
        j.partial = lines.pop()
        for line in lines:
            self.parse_line(j, line)

    def parse_line(self, j, line):
        m = STEP_LINE.match(line)
        if m:
            step, epoch, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
            loss, t = float(m.group(4)), float(m.group(6))
            acc = float(m.group(5)) if m.group(5) else None
            if step in j.steps:
                j.repeated.append(step)
            self.account(j, "step", step)
            j.relaunching = False
            j.steps[step] = (epoch, size, loss, t, acc)
            j.step = max(j.step, step)
            if size != j.ranks:
                old = j.ranks
                if size < old:
                    j.shrunk = time.time()
                j.ranks, j.size_since = size, step
                what = f"ranks {old} -> {size}" if old else f"ranks {size}"
                text = f"{j.pending}; " if j.pending else ""
                accs = f", test accuracy {acc:.3f}" if acc is not None else ""
                self.live(t, j, what, f"{text}training from step {step} (loss {loss:.4f}{accs})",
                          "ranks",
                          {"step": step, "size": size, "loss": loss})
                j.pending = ""
            return
        m = re.search(r"resumed at committed step (\d+)", line)
        if m and j.resume_pending:
            j.resume_pending = False
            self.account(j, "resume", int(m.group(1)))
            return
        m = re.search(r"planned re-form: stopping after committed step (\d+)", line)
        if m:
            j.planned_stop = int(m.group(1))
            return
        m = re.match(r"redo step (\d+): size now (\d+), recovery ([0-9.]+) ms t=([0-9.]+)", line)
        if m:
            step, size, ms, t = int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))
            j.heals.append((t, step, size, ms))
            old = j.ranks
            j.ranks, j.size_since = size, step
            j.shrunk = time.time()
            self.live(t, j, f"ranks {old} -> {size}",
                      f"healed in place (ULFM): redoing step {step} on {size} ranks, "
                      f"recovery {ms:.1f} ms, no relaunch", "heal",
                      {"step": step, "size": size, "ms": ms})
            return
        m = re.search(r"elastic-run \S+: job \d+: (\d+) ranks? on (.*)$", line)
        if m:
            j.pending = f"first launch on {m.group(2)}"
            j.launches.append((time.time(), int(m.group(1)), m.group(2)))
            return
        m = re.search(r"elastic-run \S+: re-form (\d+): (\d+) ranks? on (.*) \((\d+) ms after", line)
        if m:
            j.reforms = int(m.group(1))
            j.relaunching = True
            j.pending = f"re-form {m.group(1)} on {m.group(3)}"
            j.resume_pending = True
            j.launches.append((time.time(), int(m.group(2)), m.group(3)))
            return
        m = re.search(r"elastic-run \S+: (job \d+: finished .*)$", line)
        if m:
            j.finished_line = m.group(1)
            return
        m = re.match(r"done: (.*)", line)
        if m:
            j.done = m.group(1)
            return
        m = re.match(r"model (matches|DIFFERS from) reference: max \|dw\| = (\S+)", line)
        if m:
            j.compare = (m.group(1) == "matches", m.group(2))

    def account(self, j, what, n):
        """Every step 0..N-1 must be committed once, in order: printed by
        rank 0, or committed as its launch ended and found in the node
        snapshot by the next launch; never redone."""
        if what == "step":
            if n < j.next:
                j.problems.append(f"step {n} committed again (expected {j.next})")
            elif n > j.next:
                j.problems.append(f"steps {j.next}..{n - 1} skipped")
            j.next = max(j.next, n + 1)
            return
        stop, j.planned_stop = j.planned_stop, None
        if n < j.next:
            j.problems.append(f"relaunch resumed at step {n}: steps {n}..{j.next - 1} redone")
        elif stop is not None and stop != n:
            j.problems.append(f"planned stop after {stop} steps but resumed at {n}")
        else:
            # Steps committed before an aborted mpirun whose lines died with
            # it (its output forwarding ends at once): the snapshot has them.
            # That none was skipped shows in the model, equal bit for bit to
            # the static run's.
            j.unprinted.extend(range(j.next, n))
        j.next = max(j.next, n)

    def observe(self):
        last = None
        while not self.stop.is_set():
            held = self.poll_squeue()
            now = time.time()
            self.keep_scrape(now)
            self.poll_log()
            for j in self.jobs:
                self.poll_out(j)
                parts = held.get(j.num, [])
                gpus = sum(n for _, n, _ in parts)
                if gpus != j.gpus:
                    old, j.gpus = j.gpus, gpus
                    per = {}
                    for nodes, n, _ in parts:
                        per[nodes] = per.get(nodes, 0) + n
                    j.layout = " ".join(f"{k}:{v}" for k, v in sorted(per.items()))
                    up = gpus > old
                    if up:
                        j.grown = now
                    mine = [r for r in j.reasons if r.startswith(("grow", "start"))
                            == up and not r.startswith("held")]
                    why = "; ".join(["elasticd: " + r for r in mine] +
                                    ([j.cause] if j.cause and not up else []))
                    j.reasons = [r for r in j.reasons if r not in mine and
                                 not r.startswith("held")]
                    if not up:
                        j.cause = ""
                    if not why and old == 0:
                        why = "its minimum, started by Slurm"
                    if gpus == 0:
                        why = "job ended"
                    self.live(now, j, f"GPUs {old} -> {gpus}",
                              f"{why}" + (f" [{j.layout}]" if j.layout else ""), "gpus",
                              {"old": old, "new": gpus})
            cur = tuple(j.gpus for j in self.jobs) + tuple(
                j.training() for j in self.jobs) + tuple(j.idle_cause() for j in self.jobs)
            if cur != last:
                with self.lock:
                    self.alloc.append((now,) + cur)
                last = cur
            self.stop.wait(0.25)

    # ---- waiting -------------------------------------------------------
    def wait(self, what, cond, timeout, gone=None):
        """Wait for cond(); fail after timeout s, or at once when gone() says
        it can no longer come (a message naming why)."""
        end = time.time() + timeout
        while not cond():
            why = gone() if gone else None
            if why:
                self.diagnose()
                self.fail(f"{what}: cannot be reached: {why}")
            if time.time() > end:
                self.diagnose()
                self.fail(f"{what}: not reached in {timeout} s")
            if self.elasticd and not self.elasticd.alive():
                self.fail("elasticd exited (see elasticd.log)")
            time.sleep(0.2)
        return time.time()

    def dwell(self, j, n):
        return j.ranks > 0 and j.step - j.size_since >= n

    def diagnose(self):
        print("---- squeue", flush=True)
        print(run(["squeue", "-o", "%i %j %u %T %N %b %Q"], check=False))
        print("---- elastic-ctl status")
        print(run([self.ctl_bin(), "status"], check=False))
        for j in self.jobs:
            if j.out and os.path.exists(j.out):
                print(f"---- last lines of {j.out}")
                with open(j.out, errors="replace") as f:
                    print("".join(f.readlines()[-15:]))

    def fail(self, msg):
        self.failed.append(msg)
        raise SystemExit(f"demo: FAILED: {msg}")

    # ---- actions ---------------------------------------------------------
    def ctl_bin(self):
        return os.path.join(self.build, "plugin/elasticd/elastic-ctl")

    def start_elasticd(self):
        """elasticd serving OpenMetrics on a free port, and a real Prometheus
        scraping it every second where the package is installed."""
        self.elasticd = ec.Elasticd(self.build, os.path.join(self.a.out, "elasticd.log"),
                                    extra=["MetricsAddress=127.0.0.1:0"]).start()
        self.mport = self.elasticd.metrics_port()
        if self.mport and ec.Prometheus.available():
            self.prom = ec.Prometheus(os.path.join(self.a.out, "prometheus")).start(self.mport)

    def keep_scrape(self, now):
        """Every 2 s, elasticd's OpenMetrics text while it shows a job:
        metrics.txt holds the last one."""
        if not self.mport or now - self.t_scrape < 2:
            return
        self.t_scrape = now
        text = self.elasticd.scrape(self.mport) if self.elasticd else None
        if text and "slurm_elastic_job_gpus{" in text:
            with open(os.path.join(self.a.out, "metrics.txt"), "w") as f:
                f.write(text)

    def metrics_lines(self):
        """What elasticd's OpenMetrics and Prometheus saw of the run."""
        print("\n==== Metrics (elasticd's OpenMetrics endpoint, MetricsAddress)")
        path = os.path.join(self.a.out, "metrics.txt")
        if not os.path.exists(path):
            print("  no scrape showed a job")
        else:
            with open(path) as f:
                lines = [x.rstrip() for x in f if x.startswith("slurm_elastic")]
            j2 = f'jobid="{self.jobs[1].id}"'
            shown = [x for x in lines if j2 in x and
                     re.match(r"slurm_elastic_job_(gpus|ranks|step|reforms_total|"
                              r"recovery_seconds_count)\{", x) and not x.endswith(" 0")]
            print(f"  last scrape with a job ({path}, {len(lines)} samples), job 2's:")
            for x in shown[:8]:
                print(f"    {x}")
        if not self.prom:
            print("  Prometheus not installed (Debian package prometheus): no history")
            return
        q = self.prom.query
        scrapes = q("count_over_time(up[30m])")
        print(f"  Prometheus (scraped every 1 s, {int(scrapes[0][1]) if scrapes else 0} "
              f"scrapes; dashboard: slurm-conf/grafana-elastic.json):")
        by_id = {str(j.id): j for j in self.jobs}
        most = {m.get("jobid"): v for m, v in q("max_over_time(slurm_elastic_job_gpus[30m])") or []}
        reforms, inplace, p50 = {}, {}, {}
        for m, v in q("max_over_time(slurm_elastic_job_reforms_total[30m]) > 0") or []:
            reforms.setdefault(m.get("jobid"), []).append(f"{m.get('cause')} {v:.0f}")
        for m, v in q("max_over_time(slurm_elastic_job_resizes_in_place_total[30m]) > 0") or []:
            inplace.setdefault(m.get("jobid"), []).append(f"{m.get('kind')} {v:.0f}")
        for m, v in q("histogram_quantile(0.5, max_over_time("
                      "slurm_elastic_job_recovery_seconds_bucket[30m]))") or []:
            p50[m.get("jobid")] = v
        for jid, j in sorted(by_id.items(), key=lambda x: x[1].num):
            med = p50.get(jid)
            print(f"    {j.label()}: most GPUs held {most.get(jid, 0):.0f}; re-forms: "
                  f"{', '.join(sorted(reforms.get(jid, []))) or 'none'}; in place: "
                  f"{', '.join(sorted(inplace.get(jid, []))) or 'none'}; median recovery "
                  + (f"{med:.2f} s" if med is not None and med == med else "-"))

    def train_args(self, j):
        if j.torch:
            return ["--epochs", str(j.epochs), "--global-batch", str(self.a.batch),
                    "--lr", str(self.a.torch_lr), "--seed", str(j.num)]
        # 100 ms more a step while the pace file exists (steps 1-3 of the scenario): job
        # 1's 1920 steps last 190 s at that pace, so it still has steps to go when step 4
        # kills one of its ranks, however slowly job 2's PyTorch ranks start and re-form
        # on a loaded host (75 s for steps 1-3 under a whole test suite's load)
        return ["--epochs", str(j.epochs), "--samples", str(self.a.samples), "--features",
                str(self.a.features), "--lr", str(self.a.lr), "--global-batch", str(self.a.batch),
                "--seed", str(j.num), "--step-sleep", "100000",
                "--sleep-while", os.path.join(self.a.out, "pace")]

    def reference(self, j):
        """The same training as a static 2-rank run, with no failure: its model.
        The PyTorch job's also on 3 ranks: how far float32 rounding alone
        takes a static run (train_digits.py --compare-spread)."""
        j.reference = os.path.join(self.a.out, f"reference-job{j.num}.model"
                                   + (".npy" if j.torch else ""))
        t = time.time()
        self.static_run(j, 2, j.reference, f"reference-job{j.num}.out")
        also = ""
        if j.torch:
            j.spread = os.path.join(self.a.out, f"reference-job{j.num}-3ranks.model.npy")
            self.static_run(j, 3, j.spread, f"reference-job{j.num}-3ranks.out")
            also = " and 3"
        print(f"  static reference of job {j.num}: {j.epochs} epochs on 2{also} ranks, "
              f"{time.time() - t:.1f} s -> {j.reference}", flush=True)

    def static_run(self, j, ranks, model, log):
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   TMPDIR=self.a.out)
        for k in list(env):
            if k.startswith(("ELASTIC_", "SLURM_JOB")) and k != "ELASTIC_MUNGE_SOCKET":
                del env[k]
        prog = [os.path.join(self.build, "examples/elastic_train")]
        if j.torch:
            env["PYTHONPATH"] = os.path.join(self.build, "python")
            env["OMP_NUM_THREADS"] = "1"
            prog = ["-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS", "python3", TORCH_TRAIN]
        # the PyTorch run prints every step's loss: a model check that fails
        # names the first step where the job's loss left it (first_departure)
        quiet = [] if j.torch else ["--quiet"]
        with open(os.path.join(self.a.out, log), "w") as f:
            p = subprocess.run(["mpirun", "--bind-to", "none", "--oversubscribe", "-np",
                                str(ranks)] + prog + self.train_args(j)
                               + quiet + ["--out", model],
                               stdout=f, stderr=subprocess.STDOUT, env=env, timeout=300)
        if p.returncode != 0 or not os.path.exists(model):
            die(f"the static reference run of job {j.num} on {ranks} ranks failed "
                f"(see {self.a.out}/{log})")
        os.chmod(model, 0o644)

    def replay(self, j):
        """Job j's world sizes replayed in static runs (examples/pytorch/replay.py):
        its loss at every step and its model must be the replay's bit for bit.
        A static run on a fixed number of ranks rounds differently from the first
        step on and can end far from a job that lost nothing. Returns (equal,
        the verdict)."""
        sys.path.insert(0, os.path.dirname(TORCH_TRAIN))
        import replay  # noqa: E402 (examples/pytorch)
        work = os.path.join(self.a.out, f"replay-job{j.num}")
        env = dict(os.environ, PYTHONPATH=os.path.join(self.build, "python"), TMPDIR=self.a.out)
        rc, verdict = replay.replay(j.out, j.model, ["python3", TORCH_TRAIN] + self.train_args(j),
                                    ["mpirun", "--bind-to", "none", "--oversubscribe"], work,
                                    say=lambda s, **k: print("  " + s, **k), env=env)
        return rc == 0, verdict + ("" if rc == 0 else f" (see {work})")

    def submit(self, j):
        j.out = os.path.join(self.a.out, f"job{j.num}.out")
        if j.torch:
            return self.submit_torch(j)
        j.id = ec.submit_train(self.build, j.user, j.account, j.out, self.a.out, {
            "EPOCHS": j.epochs, "SAMPLES": self.a.samples, "FEATURES": self.a.features,
            "LR": self.a.lr, "GLOBAL_BATCH": self.a.batch, "SAMPLE_US": self.a.sample_us,
            "SEED": j.num, "ELASTIC_SHM_DIR": self.shm, "REFERENCE": j.reference})
        j.priority = 5000
        with open(os.path.join(self.a.out, "jobs"), "a") as f:
            f.write(f"{j.num} {j.id} {j.user}\n")
        self.live(time.time(), j, "submitted",
                  f"sbatch --elastic-gpus=1-8 train.sbatch: Slurm job {j.id}, priority 5000, "
                  f"{j.epochs} epochs", "action")

    def torch_pace(self, j):
        """The PyTorch job's simulated GPU time per sample, in seconds:
        --torch-sample-us, or more when another job trains and must end
        first. The other job's steps sleep while the PyTorch ranks start
        CPU-bound, so that which one ends first would otherwise depend on
        the host's load (step 5 wants the PyTorch job to outlast the other
        by the time it takes to grow to all GPUs). The other job's rest is
        taken at 3 ranks (its size from step 3 on); the PyTorch job's steps
        at 5 ranks, with 30 s to spare."""
        pace = self.a.torch_sample_us / 1e6
        other = [o for o in self.jobs if o is not j and o.id and o.done is None and not o.torch]
        if not other:
            return pace
        o = other[0]
        left = max(0, o.steps_total(self.a) - max(o.step, 0) - 1)
        rest_s = left * self.a.batch / 3 * self.a.sample_us / 1e6
        need = (rest_s + 30) / (j.steps_total(self.a) * self.a.batch / 5)
        if need > pace:
            print(f"  (job {j.num}: {need * 1e3:.1f} ms of simulated GPU time a sample, not "
                  f"{pace * 1e3:.1f}: job {o.num} has about {rest_s:.0f} s of training left)",
                  flush=True)
        return max(pace, need)

    def submit_torch(self, j):
        """examples/pytorch/train.sbatch as the user writes it (elastic-run,
        one rank of train_digits.py per GPU), with simulated GPU time per
        sample (steps get faster with more ranks) and the test accuracy on
        every step line."""
        j.model = os.path.join(self.a.out, f"job{j.num}.model.npy")
        extra = (f"--sample-sleep {self.torch_pace(j):.4f} --accuracy "
                 f"--compare {j.reference} --compare-spread {j.spread} --out {j.model}")
        env = ",".join(["ALL", f"ELASTIC_BIN={self.build}/launcher", f"TRAIN={TORCH_TRAIN}",
                        f"PYTHONPATH={os.path.join(self.build, 'python')}",
                        f"EPOCHS={j.epochs}", f"GLOBAL_BATCH={self.a.batch}",
                        f"LR={self.a.torch_lr}", f"SEED={j.num}", f"ELASTIC_SHM_DIR={self.shm}",
                        f"TRAIN_ARGS={extra}"])
        j.id = ec.sbatch(["-A", j.account, "-J", f"digits-{j.user}", "-D", self.a.out, "-o",
                          j.out, f"--export={env}", TORCH_SBATCH], user=j.user, priority=5000)
        j.priority = 5000
        with open(os.path.join(self.a.out, "jobs"), "a") as f:
            f.write(f"{j.num} {j.id} {j.user}\n")
        self.live(time.time(), j, "submitted",
                  f"sbatch --elastic-gpus=1-8 examples/pytorch/train.sbatch: Slurm job {j.id}, "
                  f"priority 5000, PyTorch MLP on sklearn's digits, {j.epochs} epochs", "action")

    def lose_node(self, j):
        """Job j loses the node where it holds only grants: SIGKILL to all its
        processes there (PRRTE daemon, ranks, the grant's own script)."""
        held = self.poll_squeue().get(j.num, [])
        lead = [nodes for nodes, _, own in held if own]
        grants = run(["squeue", "-h", "-t", "R", "-n", f"elastic:{j.id}", "-o", "%i %N %b"]).split()
        byn = {}
        for i in range(0, len(grants) - 2, 3):
            byn.setdefault(grants[i + 1], []).append(grants[i])
        cand = [n for n in byn if n not in lead]
        if not cand:
            self.fail(f"job {j.num} holds no node with grants only (leader on {lead}, "
                      f"grants {byn}): no node to lose without ending its batch script")
        node = sorted(cand)[0]
        ids = set(byn[node])
        victims = ec.procs(lambda env, cmd: env.get("SLURM_JOB_ID") in ids)
        if not any("prted" in c for _, c in victims):
            self.fail(f"no PRRTE daemon of job {j.num} found on {node} (grants {sorted(ids)})")
        nranks = sum(1 for _, c in victims if j.trainer() in c and "--rank" not in c
                     and "gpu-rank" not in c)
        # Out of service for new work, as a lost node is; job 1's processes
        # there (its batch script among them) keep running.
        self.drained.append(node)
        run(["scontrol", "update", f"NodeName={node}", "State=DRAIN",
             f"Reason=demo: lost for job {j.id}"])
        t = time.time()
        for pid, _ in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        j.pending = (f"lost {node}: its other ranks healed in place (no relaunch)" if self.in_place
                     else f"lost {node}: resumed from the last committed step")
        j.cause = f"its grant on {node} ended with the node's processes"
        self.live(t, j, "NODE LOST",
                  f"{node}: SIGKILL to its {len(victims)} processes of job {j.num} there (the PRRTE "
                  f"daemon prted, {nranks} rank, grant job {' '.join(sorted(ids))}); {node} "
                  f"drained: no new work there",
                  "failure", {"node": node, "y": j.ranks})
        return t, node

    def kill_rank(self, j):
        ids = {j.id} | set(run(["squeue", "-h", "-n", f"elastic:{j.id}", "-o", "%i"],
                               check=False).split())
        ranks = ec.procs(lambda env, cmd: env.get("SLURM_JOB_ID") in ids and
                           "OMPI_COMM_WORLD_RANK" in env and
                           (j.trainer() in cmd if j.torch else j.trainer() in cmd.split()[0]))
        best = None
        for pid, cmd in ranks:
            try:
                r = int(ec.proc_env(pid)["OMPI_COMM_WORLD_RANK"])
            except (OSError, KeyError, ValueError):
                continue
            if r > 0 and (best is None or r > best[1]):
                best = (pid, r)
        if not best:
            self.fail(f"no rank process (other than rank 0) of job {j.num} found")
        t = time.time()
        os.kill(best[0], signal.SIGKILL)
        self.live(t, j, "RANK KILLED", f"SIGKILL to rank {best[1]} (pid {best[0]}); its daemon "
                  f"lives", "failure", {"rank": best[1], "y": j.ranks})
        return t

    # ---- the scenario ------------------------------------------------------
    def scenario(self):
        a, j1, j2 = self.a, self.jobs[0], self.jobs[1]
        T = a.timeout
        pace = os.path.join(a.out, "pace")
        open(pace, "w").close()
        self.step_title("1. job 1 (alice, --elastic-gpus=1-8) starts alone and grows to the "
                        "free GPUs")
        self.submit(j1)
        self.wait("job 1 on 8 GPUs and 8 ranks",
                  lambda: j1.gpus == 8 and j1.ranks == 8 and self.dwell(j1, a.dwell), T)

        self.step_title("2. job 2 (bob, same request) arrives: fair share 4 / 4, job 1 gives "
                        "GPUs back at a step boundary")
        self.submit(j2)
        self.wait("4 / 4 GPUs and ranks", lambda: j1.gpus == 4 and j2.gpus == 4 and
                  j1.ranks == 4 and j2.ranks == 4 and self.dwell(j1, a.dwell) and
                  self.dwell(j2, a.dwell), T)

        self.step_title(f"3. scontrol update JobId={j2.id} Priority=10000 (job 1 stays at "
                        f"5000): 3 / 5")
        t = time.time()
        run(["scontrol", "update", f"JobId={j2.id}", "Priority=10000"])
        j2.priority = 10000
        self.live(t, j2, "priority 10000", f"scontrol update JobId={j2.id} Priority=10000",
                  "action")
        ts = self.wait("3 / 5 GPUs", lambda: j1.gpus == 3 and j2.gpus == 5, T)
        tr = self.wait("3 / 5 ranks", lambda: j1.ranks == 3 and j2.ranks == 5, T)
        self.latency = {"gpus": ts - t, "ranks": tr - t}
        print(f"  -> new split held by Slurm {ts - t:.1f} s and in force in both jobs "
              f"{tr - t:.1f} s after the priority update", flush=True)
        self.wait("some steps at 3 / 5", lambda: self.dwell(j1, a.dwell) and
                  self.dwell(j2, a.dwell), T)

        self.step_title("4. one rank of job 1 is killed and healed in place; job 2 loses a node "
                        "(its daemon and ranks there killed) and " +
                        ("its other ranks heal in place, with no relaunch" if self.in_place
                         else "resumes on its other GPUs"))
        reforms1 = j1.reforms
        heals1 = len(j1.heals)
        before1 = j1.step
        os.unlink(pace)  # full speed from here on
        self.kill_rank(j1)
        self.wait("job 1 healed in place", lambda: len(j1.heals) > heals1 and j1.step > before1, T)
        if j1.reforms != reforms1:
            self.fail("job 1 was relaunched after losing one rank (expected an in-place heal)")
        before = j2.step
        t_loss, node = self.lose_node(j2)
        self.wait(f"job 2 training on its GPUs left after losing {node}",
                  lambda: j2.ranks in range(1, 5) and j2.step > before, T)
        self.loss_resume = {"t": t_loss, "last_before": before}
        self.wait("a few steps on the GPUs left", lambda: j2.step >= before + self.a.dwell, T)
        t = time.time()
        run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
        self.drained.remove(node)
        self.live(t, None, f"{node} back", f"scontrol update NodeName={node} State=RESUME: "
                  f"in service again", "action")
        # (a slow relaunch may find job 1 ended and the job already on 8 GPUs)
        self.wait("job 2 back on 5 GPUs and 5 ranks (replacement GPUs granted)",
                  lambda: j2.gpus >= 5 and j2.ranks >= 5, T)

        self.step_title("5. job 1 finishes: job 2 grows to all free GPUs and finishes")
        self.wait("job 1 to finish", lambda: j1.done is not None and j1.gpus == 0, a.timeout_end)
        self.wait("job 2 on 8 GPUs and 8 ranks", lambda: j2.gpus == 8 and j2.ranks == 8, T,
                  lambda: j2.done is not None and
                  f"job 2 finished (step {j2.step}) before it could grow: give it more "
                  f"epochs (--torch-epochs, now {j2.epochs})")
        self.wait("job 2 to finish", lambda: j2.done is not None and j2.gpus == 0, a.timeout_end)
        time.sleep(1.0)  # the last lines of the outputs

    # ---- the report ----------------------------------------------------------
    def report(self):
        a, j1, j2 = self.a, self.jobs[0], self.jobs[1]
        for j in self.jobs:
            self.poll_out(j)
        print("\n==== Allocation timeline (GPUs held / ranks training)")
        print(f"  {'time':>7}  {'job 1':>9}  {'job 2':>9}  event")
        rows = sorted(self.events, key=lambda e: e[0])
        g = {1: 0, 2: 0}
        r = {1: 0, 2: 0}
        for t, kind, num, text, extra in rows:
            if kind == "gpus":
                g[num] = extra["new"]
            elif kind in ("ranks", "heal"):
                r[num] = extra["size"]
            if kind == "step":
                continue
            head = f"job {num}: " if num else ""
            print(f"  {self.rel(t):6.1f}s  {g[1]:>3} / {r[1]:<3}  {g[2]:>3} / {r[2]:<3}  "
                  f"{head}{text[:90]}")

        print("\n==== Loss of each job at its start, at every resize and at its end")
        print("  (loss of that step's batch, and the mean over the 16 steps before it)")
        for j in self.jobs:
            steps = sorted(j.steps)
            if not steps:
                continue
            print(f"  {j.label()}:")
            prev = None
            marks = []
            for s in steps:
                size = j.steps[s][1]
                if prev is None:
                    marks.append((s, "start", size))
                elif size != prev:
                    marks.append((s, f"{prev} -> {size} ranks", size))
                prev = size
            marks.append((steps[-1], "end", prev))
            for s, what, size in marks:
                win = [j.steps[k][2] for k in steps if s - 16 <= k < s]
                mean = f"{sum(win) / len(win):.4f}" if win else "   -  "
                acc = j.steps[s][4]
                accs = f"  test accuracy {acc:.3f}" if acc is not None else ""
                print(f"    step {s:>4}  {what:<16} size {size}  loss {j.steps[s][2]:.4f}  "
                      f"mean of 16 before {mean}{accs}")
        self.write_chart()

    def write_chart(self):
        a = self.a
        end = time.time()
        data = os.path.join(a.out, "chart.dat")
        with open(data, "w") as f:
            f.write("# t gpus1 gpus2 ranks1 ranks2 (seconds since the demo started)\n")
            last = None
            for row in self.alloc + [(end,) + self.alloc[-1][1:]]:
                if last is not None:  # step form: hold the previous value until now
                    f.write(f"{self.rel(row[0]):.2f} {last[1]} {last[2]} {last[3]} {last[4]}\n")
                f.write(f"{self.rel(row[0]):.2f} {row[1]} {row[2]} {row[3]} {row[4]}\n")
                last = row
        marks = os.path.join(a.out, "chart-marks.dat")
        with open(marks, "w") as f:
            f.write("# t y kind label\n")
            nact = 1
            for t, kind, num, text, extra in sorted(self.events, key=lambda e: e[0]):
                if kind in ("ranks", "heal"):
                    f.write(f"{self.rel(t):.2f} {extra['size']} resize{num} \"\"\n")
                elif kind == "failure":
                    lab = f"{extra['node']} lost" if "node" in extra else f"rank {extra['rank']} killed"
                    y = extra.get("y", 4)
                    f.write(f"{self.rel(t):.2f} {y} failure{num} \"{lab}\"\n")
                elif kind == "action":
                    lab = f"job {num} submitted" if text.startswith("submitted") else \
                        f"job {num} priority 10000" if text.startswith("priority") else \
                        text.split("  ")[0]
                    nact += 1
                    f.write(f"{self.rel(t):.2f} {9.5 - 0.75 * (nact % 2)} action \"{lab}\"\n")
        png = os.path.join(a.out, "gpus.png")
        p = subprocess.run(["gnuplot", "-e", f"datadir='{a.out}'; outfile='{png}'",
                            os.path.join(HERE, "gpus.gp")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            print(f"  (chart not drawn: gnuplot: {p.stdout.strip()})")
        else:
            os.chmod(png, 0o644)
        self.png = png

    def verify(self):
        """The checks the demo promises; returns a list of problems."""
        bad = []
        for j in self.jobs:
            total = j.steps_total(self.a)
            m = re.match(r"(\d+) steps", j.done or "")
            if not j.done:
                bad.append(f"job {j.num} did not finish")
            elif int(m.group(1)) != total or j.next != total:
                bad.append(f"job {j.num}: {m.group(1)} steps done, {j.next} seen, {total} "
                           f"expected")
            elif " NO" in j.done:
                bad.append(f"job {j.num}: its own check failed: {j.done}")
            bad += [f"job {j.num}: {p}" for p in j.problems]
            if j.repeated:
                bad.append(f"job {j.num}: steps printed twice: {j.repeated[:10]}")
            if j.torch and j.compare and os.path.exists(j.model or "") and (
                    self.a.replay == "always" or self.a.replay == "auto" and not j.compare[0]):
                print(f"\n  job {j.num}: model {j.compare[1]} from the static run; its world "
                      f"sizes replayed in static runs (examples/pytorch/replay.py):", flush=True)
                ok, j.replayed = self.replay(j)
                print(f"  replay: {j.replayed}", flush=True)
                if not ok:
                    bad.append(f"job {j.num}: differs from the static replay of its world "
                               f"sizes: {j.replayed}")
                continue
            if not j.compare or not j.compare[0]:
                bad.append(f"job {j.num}: final model does not match the static run "
                           f"({j.compare}){self.first_departure(j)}")
        return bad + self.idle_over_bound()

    def first_departure(self, j):
        """Where the PyTorch job's printed loss first left its static run's by
        more than float32 summation order explains (relative 1e-4), with the
        world size then: a wrong step shows as a jump at one step, rounding
        as a slow drift late in the run. "" when there is nothing to tell."""
        if not j.torch or not j.reference:
            return ""
        ref = {}
        try:
            with open(os.path.join(self.a.out, f"reference-job{j.num}.out"), errors="replace") as f:
                for line in f:
                    m = STEP_LINE.match(line)
                    if m:
                        ref[int(m.group(1))] = float(m.group(4))
        except OSError:
            return ""
        for s in sorted(j.steps):
            if s in ref and abs(j.steps[s][2] - ref[s]) > 1e-4 * max(ref[s], 1e-3):
                return (f"; the loss first left the static run's at step {s} (size "
                        f"{j.steps[s][1]}: {j.steps[s][2]:.6f}, static {ref[s]:.6f})")
        return "; the loss never left the static run's by 1e-4 (relative)"

    def summary(self, bad, secs):
        a = self.a
        print("\n==== Result")
        for j in self.jobs:
            cmp = f"model matches the static run (max |dw| = {j.compare[1]})" if j.compare and \
                j.compare[0] else f"model check: {j.compare}"
            if j.replayed:
                cmp = f"model max |dw| {j.compare[1]} from the static run; replay: {j.replayed}"
            once = "each once, in order" if not j.problems and not j.repeated else "NOT each once"
            print(f"  {j.label()}: {j.next} steps committed, {once} ({len(j.steps)} printed by "
                  f"rank 0, {len(j.unprinted)} committed as a launch ended); {j.reforms} "
                  f"re-forms, {len(j.heals)} in-place heal(s); {cmp}")
        if self.latency:
            print(f"  priority update -> split held by Slurm {self.latency['gpus']:.1f} s, in "
                  f"force in both jobs {self.latency['ranks']:.1f} s")
        self.reform_table()
        self.gpu_seconds_lines()
        for b in bad:
            print(f"  PROBLEM: {b}")
        print(f"\n  chart:      {self.png}")
        print(f"  job logs:   {self.jobs[0].out}, {self.jobs[1].out}")
        print(f"  elasticd:   {a.out}/elasticd.log")
        print(f"  timeline:   {a.out}/events.tsv, {a.out}/chart.dat")
        print(f"  slurm logs: {os.environ['ELASTIC_TESTBED_DIR']}/log")
        host = os.environ.get("ELASTIC_TESTBED_HOSTROOT")
        if host:
            print(f"  (paths inside the testbed root; on this machine: {host}{a.out})")
        print(f"  the demo took {secs:.0f} s: {'OK' if not bad else 'FAILED'}", flush=True)

    def gpu_seconds(self):
        """Per job: GPU-seconds held (GPUs Slurm gave it), trained (GPUs
        with a rank of the running world on them; none from a re-form's
        relaunch to the new world's first step) and the rest by cause
        (IDLE_CAUSES), integrated over the allocation timeline; also in
        gpu-seconds.tsv."""
        rows = self.alloc
        out = {}
        for j in self.jobs:
            held = trained = 0.0
            idle = dict.fromkeys(IDLE_CAUSES, 0.0)
            for a, b in zip(rows, rows[1:]):
                dt = b[0] - a[0]
                g, r = a[j.num], a[2 + j.num]
                held += dt * g
                trained += dt * min(g, r)
                if g > r:
                    idle[a[4 + j.num]] += dt * (g - r)
            out[j.num] = (held, trained, idle)
        with open(os.path.join(self.a.out, "gpu-seconds.tsv"), "w") as f:
            f.write("# job\theld\ttrained\t" + "\t".join(IDLE_CAUSES) +
                    " (GPU-seconds; the last columns: held, not trained, by cause)\n")
            for num, (h, t, idle) in sorted(out.items()):
                f.write(f"{num}\t{h:.1f}\t{t:.1f}" +
                        "".join(f"\t{idle[c]:.1f}" for c in IDLE_CAUSES) + "\n")
        return out

    def idle_events(self):
        """The events that left GPUs without a training rank: per job, each
        run of the allocation timeline with one idle cause, as (job number,
        cause, start, seconds, GPU-seconds, most GPUs idle at once)."""
        rows = self.alloc
        events = []
        for j in self.jobs:
            ev = None
            for a, b in zip(rows, rows[1:]):
                g, r, c = a[j.num], a[2 + j.num], a[4 + j.num]
                if not c or g <= r:
                    ev = None
                    continue
                if ev is None or ev[1] != c:
                    ev = [j.num, c, a[0], 0.0, 0.0, 0]
                    events.append(ev)
                ev[3] += b[0] - a[0]
                ev[4] += (b[0] - a[0]) * (g - r)
                ev[5] = max(ev[5], g - r)
        return [tuple(e) for e in events]

    def idle_over_bound(self):
        """Events whose GPU-seconds without training passed their bound
        (IDLE_BOUND_S per idle GPU)."""
        return [f"job {num}: {IDLE_CAUSES[c].split(' (')[0]}, at {self.rel(t):.0f} s: "
                f"{gs:.1f} GPU-s held without training ({s:.1f} s, up to {n} GPUs), over its "
                f"bound of {IDLE_BOUND_S[c]} s per GPU ({IDLE_BOUND_S[c] * n} GPU-s)"
                for num, c, t, s, gs, n in self.idle_events() if gs > IDLE_BOUND_S[c] * n]

    def gpu_seconds_lines(self):
        gs = self.gpu_seconds()
        th = sum(h for h, _, _ in gs.values())
        tt = sum(t for _, t, _ in gs.values())
        for num, (h, t, _) in sorted(gs.items()):
            pct = f"{100 * t / h:.0f} %" if h else "-"
            print(f"  job {num}: GPU-seconds held {h:.0f}, trained {t:.0f} ({pct})")
        if not th:
            print("  no GPU held")
            return
        print(f"  both jobs: GPU-seconds held {th:.0f}, trained {tt:.0f} "
              f"({100 * tt / th:.0f} %; the share grows with the run's length: the "
              f"events below are bounded, each)")
        print("  held without training, by cause: GPU-s in all; events; the largest "
              "event, against its bound:")
        events = self.idle_events()
        for c, text in IDLE_CAUSES.items():
            total = sum(idle[c] for _, _, idle in gs.values())
            mine = [e for e in events if e[1] == c]
            worst = max(mine, key=lambda e: e[4] / e[5], default=None)
            print(f"    {total:5.1f}  {text}" +
                  "".join(f"; job {num} {idle[c]:.1f}" for num, (_, _, idle) in sorted(gs.items())
                          if idle[c] >= 0.05) +
                  (f"; {len(mine)} event{'s' if len(mine) != 1 else ''}, the largest "
                   f"{worst[4]:.1f} GPU-s ({worst[3]:.1f} s, up to {worst[5]} GPUs; bound "
                   f"{IDLE_BOUND_S[c]} s per GPU)" if worst else ""))

    def reform_table(self):
        """Re-forms per job and cause (from each job's output) against the
        scenario's minimum; also in reforms.tsv."""
        print("  re-forms per job and cause (this run / the scenario's minimum):")
        rows = []
        for j in self.jobs:
            got = {c: 0 for c in CAUSES}
            for cause, _ in ec.reforms(j.out):
                got[cause] += 1
            want = (MIN_REFORMS_IN_PLACE if self.in_place else MIN_REFORMS)[j.num]
            over = [c for c in CAUSES if got[c] > want[c]]
            total = sum(got[c] for c in CAUSES if c != "heal")
            least = sum(want[c] for c in CAUSES if c != "heal")
            print(f"    {j.label()}: " + ", ".join(f"{c} {got[c]}/{want[c]}" for c in CAUSES) +
                  f"; re-forms {total}/{least}" + (f" (over the minimum: {', '.join(over)})"
                                                   if over else " (the minimum)"))
            rows += [(j.num, c, got[c], want[c]) for c in CAUSES]
        with open(os.path.join(self.a.out, "reforms.tsv"), "w") as f:
            f.write("# job\tcause\tcount\tminimum\n")
            for r in rows:
                f.write("\t".join(str(x) for x in r) + "\n")

    def save(self):
        with open(os.path.join(self.a.out, "events.tsv"), "w") as f:
            f.write("# t_rel\tkind\tjob\ttext\n")
            for t, kind, num, text, extra in sorted(self.events, key=lambda e: e[0]):
                f.write(f"{self.rel(t):.3f}\t{kind}\t{num}\t{text}\n")
        with open(os.path.join(self.a.out, "alloc.tsv"), "w") as f:
            f.write("# t_rel\tgpus1\tgpus2\tranks1\tranks2\tidle1\tidle2 (training ranks: "
                    "none during a relaunch; idle: why a GPU has no training rank, "
                    "- when every one has)\n")
            for row in self.alloc:
                f.write(f"{self.rel(row[0]):.3f}\t" + "\t".join(str(x) for x in row[1:5]) +
                        "".join(f"\t{c or '-'}" for c in row[5:]) + "\n")

    def cleanup(self):
        self.stop.set()
        for n in self.drained:
            subprocess.run(["scontrol", "update", f"NodeName={n}", "State=RESUME"])
        ec.cancel_with_grants([j.id for j in self.jobs if j.id])
        shutil.rmtree(self.shm, ignore_errors=True)
        if self.elasticd:
            self.elasticd.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("--out", help="output directory (default: a new one under "
                   "$ELASTIC_TESTBED_DIR/jobs)")
    p.add_argument("--build", default=os.environ.get("ELASTIC_BUILD_DIR", "/src/build-testbed"),
                   help="build tree with elasticd, elastic-run, elastic_train")
    p.add_argument("--epochs1", type=int, default=60,
                   help="job 1's epochs (60, 32 steps each, 100 ms slower before step 4: it "
                   "must last through step 4, "
                   "however slowly job 2's PyTorch ranks start)")
    p.add_argument("--epochs2", type=int, default=9, help="job 2's epochs (9)")
    p.add_argument("--torch-job", type=int, choices=(0, 1, 2), default=2,
                   help="the job that trains the PyTorch example (examples/pytorch: an MLP on "
                   "sklearn's digits) instead of elastic_train; 0: none (2)")
    p.add_argument("--torch-epochs", type=int, default=40,
                   help="epochs of the PyTorch job (40, 12 steps each)")
    p.add_argument("--replay", choices=("auto", "always", "never"), default="auto",
                   help="replay the PyTorch job's world sizes in static runs and require its "
                   "loss at every step and its final model bit for bit: auto, when its model is "
                   "farther from the static run than float32 rounding across world sizes "
                   "usually takes it (one mpirun a world size it had, 1-3 min); always; never")
    p.add_argument("--torch-sample-us", type=int, default=4000,
                   help="simulated GPU time per sample of the PyTorch job, microseconds, at "
                   "least (4000; more when job 1's training left needs it: job 2 must outlast "
                   "job 1, and more steps instead would let float32 rounding at different "
                   "world sizes grow past the model check's tolerance)")
    p.add_argument("--torch-lr", default="0.01", help="Adam's learning rate in the PyTorch job")
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--lr", default="0.1")
    p.add_argument("--batch", type=int, default=128, help="global batch (128)")
    p.add_argument("--sample-us", type=int, default=1000,
                   help="simulated GPU time per sample, microseconds (1000)")
    p.add_argument("--dwell", type=int, default=10,
                   help="steps each state is kept before the next step of the scenario (10)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per expected change")
    p.add_argument("--timeout-end", type=int, default=400, help="seconds for a job to finish")
    a = p.parse_args()
    ec.need_cluster(gpus_per_node=4, nodes=2, build=a.build)
    if not shutil.which("gnuplot"):
        die("gnuplot is not installed")
    a.out = ec.out_dir(a.out, "demo")

    d = Demo(a)
    print(f"==== slurm-elastic demo: 2 nodes x 4 GPUs, outputs in {a.out}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    d.start_elasticd()
    print(f"  elasticd started (log {a.out}/elasticd.log)")
    for j in d.jobs:
        d.reference(j)
    print(f"\n  {'time':>8} {'+t':>7}  {'who':<12} {'what':<15} details")
    obs = threading.Thread(target=d.observe, daemon=True)
    obs.start()
    t0 = time.time()
    ok = False
    try:
        d.scenario()
        ok = True
    except SystemExit as e:
        print(str(e), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("demo: interrupted", file=sys.stderr)
    finally:
        d.stop.set()
        obs.join(5)
        d.cleanup()
    d.save()
    try:
        d.report()
        bad = d.verify() if ok else d.failed or ["the scenario did not finish"]
        d.metrics_lines()
        d.summary(bad, time.time() - t0)
    finally:
        if d.prom:
            d.prom.stop()
    sys.exit(0 if ok and not bad else 1)


if __name__ == "__main__":
    main()
