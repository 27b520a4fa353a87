# SPDX-License-Identifier: GPL-2.0-or-later
# examples/demo/elastic_cluster.py: what the demo and the benches share to drive
# elastic training jobs on a testbed cluster: commands, the cluster's shape,
# a private elasticd, job submission, GPUs held as squeue shows them, the
# trainer's step lines, the processes of a job, and re-forms by cause.
"""Helpers for drivers that run inside `testbed/cluster exec` as root
(examples/demo/demo.py, bench/compare.py, bench/latency.py).

Each driver names itself once (set_name) so that errors read
"<name>: error: ...". Nothing here keeps state between calls except the
Elasticd object.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))  # examples/demo
SRC = os.path.dirname(os.path.dirname(HERE))
TRAIN_SBATCH = os.path.join(HERE, "train.sbatch")



def _ompi():
    """The testbed's Open MPI settings ("export K=V ..."), from the one place
    that names them (testbed/cluster env --ompi), also put into this
    process's environment: the static runs and the jobs (sbatch's
    --export=ALL) get them from there."""
    line = subprocess.run(["bash", os.path.join(SRC, "testbed", "cluster-inner.sh"), "env",
                           "--ompi"], stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    for kv in line.split():
        k, eq, v = kv.partition("=")
        if eq:
            os.environ.setdefault(k, v)
    return line


OMPI = _ompi()
USERS = (("alice", "acct_a"), ("bob", "acct_b"))  # job 1's and job 2's owner

_name = "elastic"


def set_name(name):
    global _name
    _name = name


def die(msg):
    print(f"{_name}: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def run(cmd, check=True, timeout=60, env=None):
    """Run cmd (a list); return its stdout. A failure with check ends the driver."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        if check:
            die(f"{' '.join(cmd)}: no answer in {timeout} s")
        return ""
    if check and p.returncode != 0:
        die(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def wait_for(what, cond, timeout=300, step=0.2):
    """Poll cond() until it returns something true; return that. Dies after timeout."""
    end = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.time() > end:
            die(f"{what}: not reached in {timeout} s")
        time.sleep(step)


def need_cluster(gpus_per_node=4, nodes=2, build=None):
    """The environment of `testbed/cluster exec`, root, and a cluster of
    nodes x gpus_per_node with the elastic plugins (and build's programs)."""
    for v in ("SLURM_CONF", "ELASTIC_TESTBED_DIR", "ELASTIC_MUNGE_SOCKET"):
        if not os.environ.get(v):
            die(f"{v} is not set: run inside 'testbed/cluster exec'")
    if os.geteuid() != 0:
        die("run as root (it submits jobs for alice and bob and kills processes)")
    if build:
        for b in ("plugin/elasticd/elasticd", "launcher/elastic-run", "examples/elastic_train"):
            if not os.access(os.path.join(build, b), os.X_OK):
                die(f"{build}/{b} is not built")
    if "--elastic-gpus" not in run(["sbatch", "--help"], check=False):
        die("sbatch has no --elastic-gpus: the cluster was started without the elastic "
            "plugins (ELASTIC_BUILD_DIR)")
    rows = [line.split() for line in run(["sinfo", "-h", "-N", "-o", "%N %G"]).splitlines()
            if line.strip()]
    have = {r[0]: r[1] for r in rows if len(r) > 1}
    if len(have) != nodes or any(g != f"gpu:{gpus_per_node}" for g in have.values()):
        die(f"needs a cluster of exactly {nodes} nodes x {gpus_per_node} GPUs "
            f"(ELASTIC_TESTBED_NODES={nodes}); this one has {have}")


def out_dir(out, prefix):
    """The output directory (a new one under the cluster's jobs/ when None),
    writable by the jobs' users."""
    if not out:
        out = os.path.join(os.environ["ELASTIC_TESTBED_DIR"], "jobs",
                           time.strftime(f"{prefix}-%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o1777)
    return out


def sbatch(args, user=None, priority=None):
    """Submit (as user when given); return the job id. With priority, the
    job enters Slurm's queue (and elasticd's split) with that priority only:
    it is submitted deferred (--begin, which elasticd leaves out), its
    priority set, then its start time set to now. Setting the priority
    after a plain sbatch races elasticd's tick: multifactor gives a new
    user's job a higher priority first, so the split would change twice."""
    cmd = ["sbatch", "--parsable"] + (["--begin=now+3600"] if priority is not None else []) + args
    if user:
        cmd = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}"] + cmd
    out = run(cmd).strip().split(";")[0]
    if not out.isdigit():
        die(f"sbatch printed no job id: {out}")
    if priority is not None:
        run(["scontrol", "update", f"JobId={out}", f"Priority={priority}"])
        run(["scontrol", "update", f"JobId={out}", "StartTime=now"])
    return out


def submit_train(build, user, account, out, workdir, settings, priority=5000):
    """examples/demo/train.sbatch (--elastic-gpus=1-8) as user, with the
    trainer of build and settings (a dict: EPOCHS, SEED, SAMPLE_US, ...).
    Returns the job id; its priority is set to priority."""
    env = ",".join(["ALL", f"ELASTIC_BIN={build}/launcher",
                    f"TRAIN={build}/examples/elastic_train", f"DEMO_DIR={HERE}"] +
                   [f"{k}={v}" for k, v in settings.items()])
    return sbatch(["-A", account, "-J", f"train-{user}", "-D", workdir, "-o", out,
                   f"--export={env}", TRAIN_SBATCH], user=user, priority=priority)


def state(job):
    """The job's state in squeue, GONE when it left."""
    return run(["squeue", "-h", "-j", job, "-o", "%T"], check=False).strip() or "GONE"


def cancel_with_grants(jobs):
    for j in jobs:
        subprocess.run(["scancel", j], stderr=subprocess.DEVNULL)
        subprocess.run(["scancel", "-n", f"elastic:{j}"], stderr=subprocess.DEVNULL)


def held(jobs):
    """{job: [(nodes, gpus, own)]} of running Slurm jobs: each elastic job's
    own allocation (own True) and its grants (named elastic:<job>)."""
    out = run(["squeue", "-h", "-t", "R", "-O", "JobID:16,Name:40,NodeList:40,tres-alloc:300"],
              check=False, timeout=10)
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        jid, name = f[0], f[1]
        nodes = f[2] if len(f) > 3 else ""
        m = re.search(r"gres/gpu=(\d+)", f[-1])
        n = int(m.group(1)) if m else 0
        for j in jobs:
            if j and (jid == j or name == f"elastic:{j}"):
                res.setdefault(j, []).append((nodes, n, jid == j))
    return res


def gpus(jobs):
    """{job: GPUs it holds now (own allocation + running grants)}."""
    h = held(jobs)
    return {j: sum(n for _, n, _ in h.get(j, [])) for j in jobs}


STEP_RE = re.compile(r"step (\d+) epoch (\d+) size (\d+) .*loss ([0-9.]+) t=([0-9.]+)")


def steps(path):
    """[(step, size, t)] of the trainer's step lines in path, in file order."""
    out = []
    try:
        with open(path, "rb") as f:
            for line in f.read().decode(errors="replace").split("\n"):
                m = STEP_RE.match(line)
                if m:
                    out.append((int(m.group(1)), int(m.group(3)), float(m.group(5))))
    except OSError:
        pass
    return out


def done(path):
    try:
        with open(path, "rb") as f:
            return b"\ndone: " in f.read()
    except OSError:
        return False


def proc_env(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(kv.split("=", 1) for kv in f.read().decode(errors="replace").split("\0")
                    if "=" in kv)


def procs(pred):
    """[(pid, cmdline)] of this cluster's processes whose environment (a
    dict) and command line satisfy pred(env, cmd)."""
    res = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            env = proc_env(p)
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if env.get("SLURM_CONF") == os.environ["SLURM_CONF"] and pred(env, cmd):
            res.append((int(p), cmd.strip()))
    return res


def kill(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def site_conf():
    """The cluster's elastic.conf (testbed/cluster writes it)."""
    return os.path.join(os.environ["ELASTIC_TESTBED_DIR"], "etc/elastic.conf")


def site_setting(key, default):
    """KEY's value in the cluster's elastic.conf as a string, else default."""
    try:
        with open(site_conf()) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                if k == key:
                    return v
    except (OSError, KeyError):
        pass
    return default


class Elasticd:
    """A private elasticd on the cluster's elastic.conf (one per cluster),
    its log in log; env adds to its environment; extra: lines added to its
    own copy of elastic.conf (next to the log), e.g. MetricsAddress."""

    def __init__(self, build, log, env=None, extra=None):
        self.build, self.log, self.env, self.p = build, log, env, None
        self.extra = extra or []

    def ctl(self):
        return os.path.join(self.build, "plugin/elasticd/elastic-ctl")

    def answers(self):
        return subprocess.run([self.ctl(), "status", "-p"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def start(self):
        conf = site_conf()
        if not os.path.exists(conf):
            die(f"{conf} is missing: start the cluster with the plugins built (ELASTIC_BUILD_DIR)")
        if self.answers():
            die("an elasticd already answers for this cluster: stop it first (one per cluster)")
        if self.extra:
            own = self.log + ".conf"
            with open(conf) as f, open(own, "w") as g:
                g.write(f.read().rstrip("\n") + "\n" + "\n".join(self.extra) + "\n")
            conf = own
        self.p = subprocess.Popen(
            [os.path.join(self.build, "plugin/elasticd/elasticd"), "-D", "-f", conf, "-L",
             self.log], stdout=subprocess.DEVNULL, stderr=open(self.log + ".stderr", "w"),
            env=dict(os.environ, **(self.env or {})))
        end = time.time() + 15
        while not self.answers():
            if self.p.poll() is not None or time.time() > end:
                die(f"elasticd did not start (see {self.log})")
            time.sleep(0.1)
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def metrics_port(self):
        """The port elasticd serves OpenMetrics on (MetricsAddress), from its
        log, or None."""
        try:
            with open(self.log) as f:
                m = re.search(r"serving OpenMetrics on .* \(port (\d+)\)", f.read())
        except OSError:
            return None
        return int(m.group(1)) if m else None

    def scrape(self, port):
        """The text of GET /metrics, or None."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            return None

    def stop(self):
        if self.alive():
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
        self.p = None


class Prometheus:
    """A real Prometheus (Debian's package, no systemd) scraping elasticd's
    OpenMetrics every second, its data and log under dir."""

    def __init__(self, dir_):
        self.dir, self.p, self.port = dir_, None, None

    @staticmethod
    def available():
        return shutil.which("prometheus") is not None

    def start(self, target_port):
        os.makedirs(self.dir, exist_ok=True)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        conf = os.path.join(self.dir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: elasticd\n"
                    f"    static_configs:\n      - targets: [\"127.0.0.1:{target_port}\"]\n")
        self.p = subprocess.Popen(
            ["prometheus", f"--config.file={conf}",
             f"--storage.tsdb.path={os.path.join(self.dir, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "prometheus.log"), "w"))
        return self

    def query(self, promql):
        """[(labels, value)] of an instant query, or None."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?query=" +
               urllib.parse.quote(promql))
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                res = json.load(r)
        except (OSError, ValueError):
            return None
        if res.get("status") != "success":
            return None
        return [(x["metric"], float(x["value"][1])) for x in res["data"]["result"]]

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()


# ---- re-forms of a job, by cause, from its output ---------------------------
# elastic-run says how each launch ended ("mpirun ended after ...: N ranks
# ok, N failed, N asked to re-form, N killed, N lost"): ranks asked to
# re-form mean an order of the controller, the last one before it (a grant
# started: grow; a release: shrink); none asked and some failed, killed or
# lost mean a failure (a node or daemon lost). libelastic prints "redo step"
# for a heal in place (no relaunch). tests/demo/scenario.sh counts the same
# way in awk.
CAUSES = ("grow", "shrink", "failure", "replace", "other", "heal")
_REFORM_RE = re.compile(r"elastic-run \S+: re-form \d+: (\d+) ranks? on")
_ENDED_RE = re.compile(r"mpirun ended after .*: \d+ ranks? ok, (\d+) failed, (\d+) asked to "
                       r"re-form, (\d+) killed, (\d+) lost")


def reforms(path):
    """[(cause, ranks)] of the job's re-forms and in-place heals in order;
    cause is one of CAUSES."""
    res, order, cause = [], None, "other"
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return res
    for line in text.split("\n"):
        if "controller: release grant" in line:
            order = "shrink"
        elif re.search(r"controller: grant \d+ started", line):
            order = "grow"
        elif "held with no rank for" in line:
            order = "replace"
        m = _ENDED_RE.search(line)
        if m:
            failed, asked, killed, lost = (int(x) for x in m.groups())
            cause = (order or "other") if asked else "failure" if failed + killed + lost \
                else "other"
            order = None
        m = _REFORM_RE.search(line)
        if m:
            res.append((cause, int(m.group(1))))
            cause = "other"
            continue
        m = re.match(r"redo step \d+: size now (\d+)", line)
        if m:
            res.append(("heal", int(m.group(1))))
    return res
