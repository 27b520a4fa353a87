#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/compare.py: slurm-elastic against what users do today, measured in one
# run on the testbed cluster (2 nodes x 4 GPUs): failure recovery (restart-all
# from a checkpoint vs libelastic's paths A and B), the two demo jobs elastic
# vs static, and the re-split latency (bench/latency.py).
"""usage: compare.py [--build DIR] [--out DIR] [--parts failures,jobs,latency]

Run inside `testbed/cluster exec` as root, on a cluster of 2 nodes x 4 GPUs
with the elastic plugins loaded and no elasticd running (compare.py starts
its own for the parts that need one). Prints the figures and writes them to
OUT/compare.txt.

failures: the same training (4 ranks on 2 nodes, 2 GPUs each) is hit by a
  failure near step --fail-step: a rank SIGKILLed (process failure), or all
  of one node's processes of the job SIGKILLed (node loss: daemon and
  ranks). Static: plain mpirun (no ULFM) in a restart loop inside the
  allocation, resuming from a checkpoint written every --ckpt-every steps (the
  torchrun restart-all way; optimistic: no requeue wait, same nodes). Elastic:
  elastic-run + libelastic: path A heals a process failure in place (ULFM),
  path B re-forms on the GPUs left and resumes from the node snapshot.
  Wall time lost = from the failure to the first commit of a step past the
  last one committed before it (for the static runs: restart, then redoing
  the steps since the checkpoint); steps recomputed = committed steps done
  twice.
jobs: the two demo jobs (1: --epochs1, 2: --epochs2, job 2 submitted --gap
  seconds after job 1): static (each asks for all 8 GPUs: first come first
  served, job 2 waits) vs elastic (--elastic-gpus=1-8, equal priority).
  Completion time = end - submit; GPU utilisation = GPU-seconds spent in
  training steps / (8 x makespan).
latency: bench/latency.py (elasticd's slow timing,
  ELASTICD_TIMING=slow, against the default one:
  a priority update and a job arrival -> the new split in force in both
  jobs, and where the time goes); its options --arrivals, --swaps, --modes,
  --latency-sample-us.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(SRC, "examples", "demo")
sys.path.insert(0, DEMO)
import elastic_cluster as ec  # noqa: E402 (examples/demo)
from elastic_cluster import OMPI, die, done, kill, run, sbatch, state, steps, wait_for  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latency  # noqa: E402 (bench/latency.py)

ec.set_name("compare")


def last_step(path):
    s = steps(path)
    return s[-1][0] if s else -1


def procs(pred):
    return [pid for pid, _ in ec.procs(pred)]


class Bench:
    def __init__(self, a):
        self.a = a
        self.b = a.build
        self.train = os.path.join(self.b, "examples/elastic_train")
        self.erun = os.path.join(self.b, "launcher/elastic-run")
        self.res = []
        self.elasticd = None
        self.jobs = []
        # snapshot keys unique to this run (Slurm job ids restart with a cluster)
        self.stamp = time.strftime("%Y%m%d%H%M%S")
        # this run's node snapshots only (the fake nodes share one /dev/shm)
        self.shm = f"/dev/shm/elastic-compare-{self.stamp}"
        os.makedirs(self.shm, exist_ok=True)
        os.chmod(self.shm, 0o1777)

    def say(self, text):
        print(text, flush=True)
        self.res.append(text)

    def args(self, epochs, seed=1):
        return (f"--epochs {epochs} --samples 4096 --features 64 --lr 0.1 --global-batch 128 "
                f"--seed {seed}")

    def rank_cmd(self):
        return f"{DEMO}/gpu-rank {self.a.sample_us} 128 {self.train}"

    # ---- elasticd ---------------------------------------------------------
    def start_elasticd(self, tag, env=None):
        self.elasticd = ec.Elasticd(self.b, os.path.join(self.a.out, f"elasticd-{tag}.log"),
                                    env).start()

    def stop_elasticd(self):
        if self.elasticd:
            self.elasticd.stop()
        self.elasticd = None

    def cancel_all(self):
        ec.cancel_with_grants(self.jobs)
        self.jobs = []
        wait_for("the cluster to be idle", lambda: not run(["squeue", "-h"], check=False).strip(),
                 120, 0.5)

    # ---- part 1: failures ---------------------------------------------------
    def failure_run(self, kind, how):
        """kind: static|elastic; how: none|process|node. Returns a dict."""
        a = self.a
        tag = f"{kind}-{how}"
        d = os.path.join(a.out, tag)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o1777)
        out = os.path.join(d, "job.out")
        args = self.args(a.fail_epochs)
        if kind == "static":
            script = f"""#!/bin/bash
{OMPI}
export ELASTIC_JOB_ID=static.{self.stamp}.$SLURM_JOB_ID ELASTIC_CHECKPOINT_DIR={d}/ckpt ELASTIC_CHECKPOINT_EVERY={a.ckpt_every}
mkdir -p {d}/ckpt
for launch in 1 2 3 4 5; do
	# a restarted job has no node-local state of the previous run: fresh snapshot dir
	export ELASTIC_SHM_DIR={d}/shm.$launch; mkdir -p $ELASTIC_SHM_DIR
	echo "launch $launch t=$(date +%s.%N)"
	# (mpirun's status says nothing here: it can end 0 after losing a daemon)
	rm -f {d}/model
	mpirun --bind-to none -np 4 {self.rank_cmd()} {args} --out {d}/model
	[ -s {d}/model ] && exit 0
	echo "launch $launch failed t=$(date +%s.%N)"
done
exit 1
"""
            f = os.path.join(d, "job.sh")
            with open(f, "w") as fh:
                fh.write(script)
            job = sbatch(["-N2", "--ntasks-per-node=2", "--gres=gpu:2", "-o", out, "-D", d, f])
            self.jobs.append(job)
            grant = None
        else:
            f = os.path.join(d, "job.sh")
            with open(f, "w") as fh:
                fh.write(f"#!/bin/bash\n{OMPI}\nexport ELASTIC_JOB_ID=el.{self.stamp}.$SLURM_JOB_ID "
                         f"ELASTIC_SHM_DIR={self.shm}\n"
                         f"exec {self.erun} -v -- {self.rank_cmd()} {args}\n")
            job = sbatch(["-H", "-N1", "-n1", "-w", "node1", "--gres=gpu:2", "-o", out, "-D", d, f])
            self.jobs.append(job)
            grant = sbatch(["-N1", "-w", "node2", "--gres=gpu:2", "-J", f"elastic:{job}", "-o",
                            "/dev/null", "--wrap", "sleep 3000"])
            self.jobs.append(grant)
            wait_for("the grant job", lambda: state(grant) == "RUNNING", 60)
            run(["scontrol", "release", job])
        wait_for(f"{tag}: 4 ranks training", lambda: any(s[1] == 4 for s in steps(out)), 180)
        t_fail = None
        if how != "none":
            wait_for(f"{tag}: step {a.fail_step}", lambda: last_step(out) >= a.fail_step, 300, 0.05)
            if how == "process":
                ids = {job} | ({grant} if grant else set())
                victims = procs(lambda env, cmd: env.get("SLURM_JOB_ID") in ids and
                                env.get("OMPI_COMM_WORLD_RANK") == "3" and
                                "elastic_train" in cmd.split()[0])
            elif kind == "static":
                victims = procs(lambda env, cmd: env.get("SLURM_JOB_ID") == job and
                                env.get("SLURMD_NODENAME") == "node2" and
                                ("prted" in cmd or "elastic_train" in cmd))
            else:
                victims = procs(lambda env, cmd: env.get("SLURM_JOB_ID") == grant)
            if not victims:
                die(f"{tag}: no process to kill")
            t_fail = time.time()
            kill(victims)
        wait_for(f"{tag}: the end", lambda: state(job) == "GONE", 600, 0.5)
        if not done(out):
            die(f"{tag}: the training did not finish (see {out})")
        s = steps(out)
        r = {"tag": tag, "total": s[-1][2] - s[0][2], "t_fail": t_fail}
        if t_fail:
            before = [x for x in s if x[2] < t_fail]
            after = [x for x in s if x[2] >= t_fail]
            sb, tb = before[-1][0], before[-1][2]
            dts = [before[i][2] - before[i - 1][2] for i in range(1, len(before))
                   if before[i][0] == before[i - 1][0] + 1][-20:]
            dt = statistics.median(dts) if dts else 0
            first = after[0]
            # the first step after the failure that is new progress; lines of
            # steps committed while the runtime tore a launch down can be lost
            # with it, so progress is counted by step numbers
            x = next(x for x in after if x[0] > sb)
            r.update({"resumed": first[0], "last_before": sb,
                      "recomputed": max(0, sb + 1 - first[0]),
                      "first_commit_s": first[2] - t_fail,
                      "lost_s": x[2] - t_fail, "step_s": dt,
                      "size_after": first[1]})
        with open(os.path.join(d, "result.txt"), "w") as fh:
            fh.write(repr(r) + "\n")
        return r

    def part_failures(self):
        a = self.a
        self.say(f"\n== failure recovery: 4 ranks on 2 nodes, {a.fail_epochs * 32} steps, failure "
                 f"at step {a.fail_step}; static checkpoint every {a.ckpt_every} steps")
        rows = []
        for kind, how in (("elastic", "none"), ("static", "process"), ("elastic", "process"),
                          ("static", "node"), ("elastic", "node")):
            r = self.failure_run(kind, how)
            rows.append(r)
            self.cancel_all()
            if r["t_fail"]:
                print(f"   {r['tag']}: last commit before step {r['last_before']}, resumed at "
                      f"{r['resumed']} on {r['size_after']} ranks, lost {r['lost_s']:.2f} s, "
                      f"{r['recomputed']} steps recomputed, run {r['total']:.1f} s", flush=True)
            else:
                print(f"   {r['tag']}: run {r['total']:.1f} s", flush=True)
        by = {r["tag"]: r for r in rows}
        self.say(f"   {'failure':<24} {'handled by':<36} {'wall time lost':>14} "
                 f"{'steps recomputed':>17} {'ranks after':>12}")
        for how, name in (("process", "process failure (1 rank)"), ("node", "node loss")):
            st, el = by[f"static-{how}"], by[f"elastic-{how}"]
            path = "A: heal in place (ULFM)" if how == "process" else "B: re-form, node snapshot"
            self.say(f"   {name:<24.24} {'static: restart-all from checkpoint':<36} "
                     f"{st['lost_s']:>12.2f} s {st['recomputed']:>17} {st['size_after']:>12}")
            ratio = st["lost_s"] / el["lost_s"] if el["lost_s"] > 0 else float("inf")
            self.say(f"   {'':<24} {'elastic path ' + path:<36} {el['lost_s']:>12.2f} s "
                     f"{el['recomputed']:>17} {el['size_after']:>12}   "
                     f"(static/elastic: {ratio:.1f}x)")

    # ---- part 2: the two demo jobs --------------------------------------------
    def busy_gpu_s(self, out):
        s = steps(out)
        return sum((s[i][2] - s[i - 1][2]) * s[i][1] for i in range(1, len(s))
                   if s[i][0] == s[i - 1][0] + 1)

    def sacct(self, job):
        row = run(["sacct", "-n", "-X", "-P", "-j", job, "-o", "Submit,Start,End,State"],
                  check=False).strip().split("\n")[0].split("|")
        conv = lambda v: time.mktime(time.strptime(v, "%Y-%m-%dT%H:%M:%S"))
        return conv(row[0]), conv(row[1]), conv(row[2]), row[3]

    def two_jobs(self, mode):
        a = self.a
        d = os.path.join(a.out, f"jobs-{mode}")
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o1777)
        ids, outs, t_sub = [], [], []
        for n, (user, acct, ep) in enumerate((("alice", "acct_a", a.epochs1),
                                              ("bob", "acct_b", a.epochs2)), 1):
            out = os.path.join(d, f"job{n}.out")
            if n == 2:
                time.sleep(max(0, t_sub[0] + a.gap - time.time()))
            if mode == "static":
                f = os.path.join(d, f"job{n}.sh")
                with open(f, "w") as fh:
                    fh.write(f"#!/bin/bash\n{OMPI}\n"
                             f"export ELASTIC_JOB_ID=st.{self.stamp}.$SLURM_JOB_ID\n"
                             f"exec mpirun --bind-to none -np 8 {self.rank_cmd()} "
                             f"{self.args(ep, n)}\n")
                os.chmod(f, 0o755)
                j = sbatch(["-A", acct, "-N2", "--ntasks-per-node=4", "--gres=gpu:4", "-o", out,
                            "-D", d, f], user=user)
            else:
                j = ec.submit_train(self.b, user, acct, out, d, {
                    "EPOCHS": ep, "SEED": n, "SAMPLE_US": a.sample_us,
                    "ELASTIC_SHM_DIR": self.shm})
            t_sub.append(time.time())
            ids.append(j)
            outs.append(out)
            self.jobs.append(j)
        for j in ids:
            wait_for(f"job {j} to end", lambda: state(j) == "GONE", 900, 1)
        for o, ep in zip(outs, (a.epochs1, a.epochs2)):
            if not done(o):
                die(f"{mode}: training did not finish (see {o})")
            if not any(x[0] == 0 for x in steps(o)) or steps(o)[-1][0] != ep * 32 - 1:
                die(f"{mode}: {o} does not show steps 0..{ep * 32 - 1}")
        time.sleep(1)
        acc = [self.sacct(j) for j in ids]
        done_t = [max(x[2] for x in steps(o)) for o in outs]
        comp = [done_t[i] - t_sub[i] for i in range(2)]
        wait2 = acc[1][1] - acc[1][0]
        span = max(done_t) - t_sub[0]
        busy = sum(self.busy_gpu_s(o) for o in outs)
        self.jobs = []
        return {"comp": comp, "span": span, "util": busy / (8 * span), "wait2": wait2}

    def part_jobs(self):
        a = self.a
        self.say(f"\n== the two demo jobs ({a.epochs1} and {a.epochs2} epochs, job 2 submitted "
                 f"{a.gap} s after job 1; {a.sample_us} us per sample per GPU)")
        st = self.two_jobs("static")
        self.cancel_all()
        self.start_elasticd("jobs")
        try:
            el = self.two_jobs("elastic")
        finally:
            self.stop_elasticd()
            self.cancel_all()
        self.say(f"   {'':<34} {'static':>9} {'elastic':>9} {'elastic/static':>15}")
        for name, s, e in (("job 1 completion (s)", st["comp"][0], el["comp"][0]),
                           ("job 2 completion (s)", st["comp"][1], el["comp"][1]),
                           ("mean completion (s)", sum(st["comp"]) / 2, sum(el["comp"]) / 2),
                           ("makespan (s)", st["span"], el["span"]),
                           ("job 2 wait for its start (s)", st["wait2"], el["wait2"]),
                           ("GPU utilisation (training)", st["util"], el["util"])):
            self.say(f"   {name:<34} {s:>9.2f} {e:>9.2f} {e / s if s else float('inf'):>15.2f}")

    # ---- part 3: latency (bench/latency.py) -------------------------------------
    def part_latency(self):
        self.a.shm = self.shm
        lat = latency.Latency(self.a, self.say)
        try:
            lat.run()
        finally:
            ec.cancel_with_grants(lat.jobs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("--build", default=os.environ.get("ELASTIC_BUILD_DIR", "/src/build-testbed"))
    p.add_argument("--out")
    p.add_argument("--parts", default="failures,jobs,latency")
    p.add_argument("--sample-us", type=int, default=1000)
    p.add_argument("--fail-epochs", type=int, default=5)
    p.add_argument("--fail-step", type=int, default=80)
    p.add_argument("--ckpt-every", type=int, default=25)
    p.add_argument("--epochs1", type=int, default=6)
    p.add_argument("--epochs2", type=int, default=6)
    p.add_argument("--gap", type=float, default=10)
    latency.add_args(p)
    a = p.parse_args()
    for v in ("SLURM_CONF", "ELASTIC_TESTBED_DIR", "ELASTIC_MUNGE_SOCKET"):
        if not os.environ.get(v):
            print(f"compare: SKIP: {v} is not set (run inside 'testbed/cluster exec' on a "
                  f"cluster of 2 nodes x 4 GPUs)")
            sys.exit(0)
    ec.need_cluster(gpus_per_node=4, nodes=2, build=a.build)
    if run(["squeue", "-h"], check=False).strip():
        die("the cluster is not idle")
    a.out = ec.out_dir(a.out, "compare")
    b = Bench(a)
    t0 = time.time()
    print(f"compare: outputs in {a.out}", flush=True)
    try:
        for part in a.parts.split(","):
            {"failures": b.part_failures, "jobs": b.part_jobs, "latency": b.part_latency}[part]()
    finally:
        b.stop_elasticd()
        subprocess.run(["rm", "-rf", b.shm])
        for j in b.jobs:
            subprocess.run(["scancel", j], stderr=subprocess.DEVNULL)
    b.say(f"\n(one run, {time.time() - t0:.0f} s, on {os.uname().nodename}: 2 CPU cores shared "
          f"by all ranks; fake GPUs, each step waits {a.sample_us} us per sample of a rank's "
          f"share, {a.lat_sample_us} us in the latency runs)")
    with open(os.path.join(a.out, "compare.txt"), "w") as f:
        f.write("\n".join(b.res) + "\n")


if __name__ == "__main__":
    main()
