#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/latency.py: how long a re-split takes with real training (the C trainer
# under elastic-run), a slow reaction timing against the default one in one
# run: a priority update -> the new split in force in both jobs, and a job
# arrival -> both jobs at 4 / 4; and where the time goes.
"""usage: latency.py [--build DIR] [--out DIR] [--arrivals N] [--swaps N] [--modes slow,fast]

Run inside `testbed/cluster exec` as root, on an idle cluster of 2 nodes x 4
GPUs with the elastic plugins loaded and no elasticd running (bench/latency.sh
finds or starts one). For each mode it starts its own elasticd:
  slow:  ELASTICD_TIMING=slow (elasticd(8): slurmctld's job list polled
         every 250 ms whatever is under way; a job just started held by
         CoolDown before it grows to its share), jobs run
         with elastic-run --grant-wait 0 (a new job launches on its first
         GPU, then re-forms onto its grants) and Open MPI ranks that spin
         while they wait (mpi_yield_when_idle=0: on this 2-core machine 8
         spinning ranks make every step 3x slower);
  fast:  the default timing (polled every 50 ms while a change is under
         way; a job just started grows to its share at once; elastic-run
         waits for the grants of a new job; ranks yield while they wait).
         elastic-run's other change (a grant that adds usable GPUs stops
         the ranks without asking Slurm first) is in both modes.
Each swap starts CoolDown (elastic.conf) after the previous resize: within
it a job keeps its GPUs by policy, which is not what is measured.
Then job 1 (alice, --elastic-gpus=1-8) grows to 8 GPUs; --arrivals times
job 2 (bob) is submitted (-> 4 / 4) and cancelled again (-> job 1 on 8);
then with job 2 running, the priorities are swapped --swaps times (10000 vs
5000: 5 / 3 <-> 3 / 5). "In force" is the first step both jobs commit at
their new sizes (by the trainer's own clock). Where the time goes, from
elasticd's log (ms stamps):
  tick     the event -> elasticd orders the shrinking job's release
  shrink   the order -> the job acknowledges: it stopped at a step boundary
           and re-formed on fewer GPUs
  slurm    the ack -> elasticd tells the growing job its grants started:
           elasticd cancels the released grant, Slurm ends it and starts
           the new grants (at an arrival, job 2 itself first)
  stop     the grants told -> the growing job's last step at its old size
           (elastic-run looks up its GPUs, asks the ranks to stop, they stop
           at the next step boundary)
  relaunch that step -> its first step at the new size (mpirun ends,
           elastic-run relaunches it over more GPUs, the ranks resume)
  start    at an arrival, job 2 launched on its share at once (elastic-run
           waited for the grants: --grant-wait): its grants told -> its
           first step on 4 GPUs
Prints medians per mode and the ratio; writes OUT/latency.txt.
"""
import argparse
import os
import re
import statistics
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "examples", "demo"))
import elastic_cluster as ec  # noqa: E402 (examples/demo)
from elastic_cluster import die, run, steps, wait_for  # noqa: E402

# Per mode: elasticd's environment, and settings of the jobs (train.sbatch).
MODES = {"slow": ({"ELASTICD_TIMING": "slow"},
                  {"ELASTIC_RUN_OPTS": "--grant-wait 0", "OMPI_MCA_mpi_yield_when_idle": "0"}),
         "fast": ({"ELASTICD_TIMING": "default"}, {})}
PHASES = ("tick", "shrink", "slurm", "stop", "relaunch", "start")


def log_events(path):
    """[(t, kind, job)] from an elasticd log: order, ack, announce."""
    res = []
    pats = (("order", re.compile(r"job (\d+): ordered release of grant")),
            ("ack", re.compile(r"job (\d+): acknowledged the release of grant")),
            ("announce", re.compile(r"job (\d+): told grant \d+ started")))
    try:
        with open(path, errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return res
    for line in lines:
        m = re.match(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})\] elasticd: (.*)", line)
        if not m:
            continue
        t = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + int(m.group(2)) / 1e3
        for kind, pat in pats:
            k = pat.match(m.group(3))
            if k:
                res.append((t, kind, k.group(1)))
    return res


def first_step_at(out, size, after):
    """Time of the first step committed at size after the given time."""
    return next((t for _, s, t in steps(out) if t > after and s == size), None)


class Latency:
    def __init__(self, a, say=print):
        self.a, self.say = a, say
        self.b = a.build
        self.shm = a.shm
        self.jobs = []
        self.res = {}  # mode -> {"arrival"|"priority": [dict]}
        self.cooldown = float(ec.site_setting("CoolDown", 10))  # elasticd's default: 10 s

    def submit(self, n, d):
        user, acct = ec.USERS[n - 1]
        out = os.path.join(d, f"job{n}-{len(self.jobs)}.out")
        j = ec.submit_train(self.b, user, acct, out, d, {
            "EPOCHS": 400, "SEED": n, "SAMPLE_US": self.a.lat_sample_us,
            "ELASTIC_SHM_DIR": self.shm, **self.job_env})
        self.jobs.append(j)
        return j, out

    def training_at(self, out, size, after, nsteps=3):
        return len([1 for _, s, t in steps(out) if t > after and s == size]) >= nsteps

    def measure(self, log, t0, moves):
        """moves: [(job, out, new size, shrinking?)]. Waits until each job
        commits a step at its new size; returns the total and the phases."""
        force = {}
        for job, out, size, _ in moves:
            force[job] = wait_for(f"job {job} training on {size}",
                                  lambda: first_step_at(out, size, t0), 180, 0.05)
        t_force = max(force.values())
        time.sleep(0.3)  # the log lines of the last tick
        ev = [e for e in log_events(log) if t0 <= e[0] <= t_force]
        shrinker = next(j for j, _, _, s in moves if s)
        grower = next(j for j, _, _, s in moves if not s)
        t_order = next((t for t, k, j in ev if k == "order" and j == shrinker), None)
        t_ack = max((t for t, k, j in ev if k == "ack" and j == shrinker), default=None)
        t_ann = max((t for t, k, j in ev if k == "announce" and j == grower), default=None)
        r = {"total": t_force - t0}
        out_g = next(o for j, o, _, _ in moves if j == grower)
        t_stop = max((t for _, _, t in steps(out_g) if t < force[grower]), default=None)
        if t_order and t_ack and t_ann and t_stop:
            r.update(tick=t_order - t0, shrink=t_ack - t_order, slurm=t_ann - t_ack,
                     stop=t_stop - t_ann, relaunch=force[grower] - t_stop)
        elif t_order and t_ack and t_ann:
            # An arrival: job 2 waited for its grants (elastic-run
            # --grant-wait) and launched on its share at once.
            r.update(tick=t_order - t0, shrink=t_ack - t_order, slurm=t_ann - t_ack,
                     start=force[grower] - t_ann)
        elif t_order and t_ack and not t_ann:
            # The growing job found its grants running at its first launch
            # (an arrival): no re-form of it at all.
            r.update(tick=t_order - t0, shrink=t_ack - t_order, start=force[grower] - t_ack)
        return r

    def mode(self, name):
        a = self.a
        d = ec.out_dir(os.path.join(a.out, name), name)
        log = os.path.join(d, "elasticd.log")
        el = ec.Elasticd(self.b, log, MODES[name][0]).start()
        self.job_env = MODES[name][1]
        res = {"arrival": [], "priority": []}
        try:
            j1, o1 = self.submit(1, d)
            t = time.time()
            wait_for("job 1 on 8 GPUs, training", lambda: ec.gpus([j1])[j1] == 8 and
                     self.training_at(o1, 8, t), 240)
            for k in range(a.arrivals):
                t0 = time.time()
                j2, o2 = self.submit(2, d)
                r = self.measure(log, t0, [(j1, o1, 4, True), (j2, o2, 4, False)])
                res["arrival"].append(r)
                self.line(name, f"arrival {k + 1}", r)
                if k + 1 < a.arrivals:
                    ec.cancel_with_grants([j2])
                    t = time.time()
                    wait_for("job 1 back on 8", lambda: ec.gpus([j1])[j1] == 8 and
                             self.training_at(o1, 8, t), 180)
            wait_for("a few steps at 4 / 4", lambda: self.training_at(o1, 4, t0, 5) and
                     self.training_at(o2, 4, t0, 5), 120)
            time.sleep(self.cooldown + 0.2)  # the arrival's resize, as between swaps
            for k in range(a.swaps):
                hi, lo = ((j2, o2), (j1, o1)) if k % 2 == 0 else ((j1, o1), (j2, o2))
                t0 = time.time()
                run(["scontrol", "update", f"JobId={lo[0]}", "Priority=5000"])
                run(["scontrol", "update", f"JobId={hi[0]}", "Priority=10000"])
                r = self.measure(log, t0, [(lo[0], lo[1], 3, True), (hi[0], hi[1], 5, False)])
                res["priority"].append(r)
                self.line(name, f"swap {k + 1}", r)
                tf = t0 + r["total"]
                wait_for("a few steps", lambda: self.training_at(hi[1], 5, tf, 5) and
                         self.training_at(lo[1], 3, tf, 5), 120)
                # The next swap after the site's CoolDown: a job resized
                # less than CoolDown ago keeps its GPUs by policy, which is
                # not what this measures.
                time.sleep(max(0.0, tf + self.cooldown + 0.2 - time.time()))
        finally:
            el.stop()
            ec.cancel_with_grants(self.jobs)
            self.jobs = []
            wait_for("the cluster to be idle", lambda: not run(["squeue", "-h"],
                                                               check=False).strip(), 120, 0.5)
        self.res[name] = res

    def line(self, mode, what, r):
        ph = " ".join(f"{p} {r[p]:.2f}" for p in PHASES if p in r)
        print(f"   {mode:<5} {what:<10} in force {r['total']:.2f} s  ({ph})", flush=True)

    def report(self):
        med = lambda rs, k: statistics.median([r[k] for r in rs if k in r]) \
            if any(k in r for r in rs) else float("nan")
        cnt = lambda rs, k: sum(1 for r in rs if k in r)
        for ev, title in (("priority", "priority update -> new split in force in both jobs"),
                          ("arrival", "job arrival -> both jobs at 4 / 4")):
            self.say(f"\n   {title} (median s; n = runs)")
            self.say(f"   {'mode':<6} {'n':>3} {'total':>7} {'max':>7}   " +
                     " ".join(f"{p:>8}" for p in PHASES) + "   (phases: median of the runs "
                     "that had them, n in brackets)")
            for m, res in self.res.items():
                rs = res[ev]
                if not rs:
                    continue
                self.say(f"   {m:<6} {len(rs):>3} {med(rs, 'total'):>7.2f} "
                         f"{max(r['total'] for r in rs):>7.2f}   " +
                         " ".join(f"{med(rs, p):>5.2f}[{cnt(rs, p)}]" for p in PHASES))
            if all(m in self.res and self.res[m][ev] for m in ("slow", "fast")):
                t, f = med(self.res["slow"][ev], "total"), med(self.res["fast"][ev], "total")
                self.say(f"   slow / fast: {t / f:.2f}x")

    def run(self):
        a = self.a
        self.say(f"\n== re-split latency with training (C trainer, {a.lat_sample_us} us per sample "
                 f"per GPU): {a.arrivals} arrivals, {a.swaps} priority swaps per mode")
        for m in a.modes.split(","):
            if m not in MODES:
                die(f"unknown mode '{m}' (slow, fast)")
            self.mode(m)
        self.report()


def add_args(p):
    p.add_argument("--arrivals", type=int, default=3)
    p.add_argument("--swaps", type=int, default=4)
    p.add_argument("--modes", default="slow,fast")
    p.add_argument("--latency-sample-us", dest="lat_sample_us", type=int, default=200,
                   help="simulated GPU time per sample in the latency runs (200)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("--build", default=os.environ.get("ELASTIC_BUILD_DIR", "/src/build-testbed"))
    p.add_argument("--out")
    add_args(p)
    a = p.parse_args()
    ec.set_name("latency")
    ec.need_cluster(gpus_per_node=4, nodes=2, build=a.build)
    if run(["squeue", "-h"], check=False).strip():
        die("the cluster is not idle")
    a.out = ec.out_dir(a.out, "latency")
    a.shm = f"/dev/shm/elastic-latency-{time.strftime('%Y%m%d%H%M%S')}"
    os.makedirs(a.shm, exist_ok=True)
    os.chmod(a.shm, 0o1777)
    res = []

    def say(text):
        print(text, flush=True)
        res.append(text)

    t0 = time.time()
    print(f"latency: outputs in {a.out}", flush=True)
    lat = Latency(a, say)
    try:
        lat.run()
    finally:
        ec.cancel_with_grants(lat.jobs)
        run(["rm", "-rf", a.shm], check=False)
    say(f"\n(one run, {time.time() - t0:.0f} s, on {os.uname().nodename}; fake GPUs, 2 CPU "
        f"cores shared by all ranks: times are upper bounds)")
    with open(os.path.join(a.out, "latency.txt"), "w") as f:
        f.write("\n".join(res) + "\n")


if __name__ == "__main__":
    main()
