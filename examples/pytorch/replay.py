#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Check an elastic run bit for bit: replay its world sizes in static runs.

An elastic job's model differs from a static run's on a fixed number of ranks
by float32 rounding: the gradients of a global batch are summed in another
order at another world size. Over many Adam steps that rounding can grow past
any tolerance, so a comparison with a static run cannot tell a lost step from
rounding. A replay can. It runs the same training as one static mpirun for
each stretch of steps the job trained at one size, each resuming from the
checkpoint the one before it wrote (ELASTIC_CHECKPOINT_DIR), as a re-form
resumes. A job that lost nothing printed the replay's loss at every step and
ends with the replay's model, bit for bit.

    replay.py --log job.out --model job.npy -- python3 train_digits.py --epochs 40 ...

The job's log is what its rank 0 printed: one line a committed step, ``step N
... size S ... loss L`` (train_digits.py without --quiet), and ``done: N
steps``. A step committed as its launch ended may have no line; it is replayed
at the size of the step before it. The program must take ``--steps N`` (stop
once N steps are committed in all) and ``--out FILE`` (the final parameters,
.npy), as train_digits.py does; give it the job's training options, and
run it with the job's OMP_NUM_THREADS (torch's threads may split its sums
otherwise; 1 when unset, as train.sbatch sets it).

Prints one line a stretch and the verdict; exit status 0 when the replay
equals the job at every printed step and in every parameter, 1 when it does
not (the first difference is named), 2 when it could not run.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

STEP = re.compile(r"step (\d+) epoch \d+ size (\d+) .*?loss (\S+)")
DONE = re.compile(r"done: (\d+) steps")


def read_log(path):
    """({step: (size, loss text)}, steps done or None) from a job's output."""
    steps, done = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\0", "")
            m = STEP.match(line)
            if m:
                steps[int(m.group(1))] = (int(m.group(2)), m.group(3))
                continue
            m = DONE.match(line)
            if m:
                done = int(m.group(1))
    return steps, done


def stretches(steps, total):
    """[(first step after the stretch, size)] covering steps 0..total-1."""
    runs, size = [], None
    for s in range(total):
        size = steps[s][0] if s in steps else size
        if size is None:
            raise ValueError("step %d: no line gives its world size (nor one before it)" % s)
        if runs and runs[-1][1] == size:
            runs[-1][0] = s + 1
        else:
            runs.append([s + 1, size])
    return [tuple(r) for r in runs]


def static_env(ckpt, tmp, base=None):
    """base (this environment) without elastic-run's and Slurm's job variables
    (a static run registers with no controller), with the checkpoint directory."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(("ELASTIC_", "SLURM_JOB", "SLURM_STEP"))}
    env.update(ELASTIC_CHECKPOINT_DIR=ckpt, ELASTIC_CHECKPOINT_EVERY="1",
               OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("TMPDIR", tmp)
    return env


def same_steps(steps, got, first, end, where):
    """None when the replay printed the job's size and loss at each of the
    job's printed steps first..end-1, else the first difference."""
    for s in range(first, end):
        if s in steps and got.get(s) != steps[s]:
            g = got.get(s)
            return "step %d: the job's loss %s at %d ranks, the replay's %s (%s)" % (
                s, steps[s][1], steps[s][0], "%s at %d ranks" % (g[1], g[0]) if g else "none",
                where)
    return None


def same_model(model, other, where):
    """None when the two .npy files hold the same parameters bit for bit,
    else how they differ."""
    import numpy as np

    a, b = np.load(model), np.load(other)
    if a.shape != b.shape or a.dtype != b.dtype:
        return "%s holds %s %s parameters, the replay's %s %s" % (model, a.shape, a.dtype,
                                                                   b.shape, b.dtype)
    if not a.size:
        return None
    # bits, not values: -0.0 against 0.0 and NaN are differences too
    bits = [x.reshape(-1).view(np.uint8).reshape(x.size, -1) for x in (a, b)]
    diff = np.flatnonzero((bits[0] != bits[1]).any(axis=1))
    if diff.size:
        i = int(diff[0])
        return "%d of %d parameters differ from the replay's, the first #%d: %r against %r (%s)" \
            % (diff.size, a.size, i, float(a.flat[i]), float(b.flat[i]), where)
    return None


def replay(log, model, prog, mpirun, work, timeout=600, say=print, env=None):
    """Run the replay in work (env: the environment to run it in, this one by
    default). Returns (exit status: 0 equal, 1 not, 2 not run; the verdict).
    A stretch whose steps differ from the job's ends the replay there."""
    steps, done = read_log(log)
    if done is None:
        return 2, "%s: no 'done: N steps' line (the job did not finish)" % log
    try:
        runs = stretches(steps, done)
    except ValueError as e:
        return 2, "%s: %s" % (log, e)
    work = os.path.abspath(work)  # ELASTIC_CHECKPOINT_DIR must be absolute
    os.makedirs(work, exist_ok=True)
    ckpt = os.path.join(work, "checkpoint")
    shutil.rmtree(ckpt, ignore_errors=True)
    out = os.path.join(work, "replay.npy")
    env = static_env(ckpt, work, env)
    export = [x for k in ("PYTHONPATH", "OMP_NUM_THREADS", "TMPDIR", "ELASTIC_CHECKPOINT_DIR",
                          "ELASTIC_CHECKPOINT_EVERY") if k in env for x in ("-x", k)]
    where = ", ".join("%d ranks to step %d" % (n, end - 1) for end, n in runs)
    got, t0, first = {}, time.time(), 0
    for i, (end, n) in enumerate(runs):
        last = i == len(runs) - 1
        cmd = mpirun + ["-np", str(n)] + export + prog + \
            ([] if last else ["--steps", str(end)]) + ["--out", out]
        path = os.path.join(work, "replay-%d.out" % i)
        t = time.time()
        with open(path, "w") as f:
            try:
                rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                                    timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "killed after %d s" % timeout
        if rc != 0:
            return 2, "stretch %d (%d ranks to step %d) failed (%s): %s; the command: %s" % (
                i, n, end - 1, rc, path, shlex.join(cmd))
        s, d = read_log(path)
        got.update(s)
        say("replay: steps %d-%d on %d ranks, %.1f s" % (first, end - 1, n, time.time() - t),
            flush=True)
        bad = same_steps(steps, got, first, end, where)
        if bad:
            return 1, bad
        first = end
    if d != done:
        return 1, "the replay did %s steps, the job %d (%s)" % (d, done, where)
    bad = same_model(model, out, where)
    if bad:
        return 1, bad
    return 0, ("equal to a static replay of its world sizes (%s; %.0f s): the same loss at all "
               "%d printed steps, every parameter bit for bit" % (where, time.time() - t0,
                                                                  len(steps)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log", required=True, help="the job's output (its rank 0's step lines)")
    p.add_argument("--model", required=True, help="the job's final parameters (.npy, --out)")
    p.add_argument("--mpirun", default="mpirun --bind-to none --oversubscribe",
                   help="the launcher and its options ('%(default)s'); -np is added")
    p.add_argument("--workdir", help="where the replay's outputs and checkpoint go "
                   "(default: a new temporary directory, removed when the replay is equal)")
    p.add_argument("--timeout", type=int, default=600, help="seconds a stretch may take (600)")
    p.add_argument("prog", nargs=argparse.REMAINDER,
                   help="-- the training program and its options, as the job ran it")
    a = p.parse_args()
    prog = a.prog[1:] if a.prog[:1] == ["--"] else a.prog
    if not prog:
        p.error("no training program: give it after --")
    for opt, path in (("--log", a.log), ("--model", a.model)):
        if not os.path.isfile(path):
            p.error("%s %s: no such file" % (opt, path))
    work = a.workdir or tempfile.mkdtemp(prefix="replay.")
    rc, verdict = replay(a.log, a.model, prog, shlex.split(a.mpirun), work, a.timeout)
    print("replay: %s%s" % ("" if rc == 0 else "NOT EQUAL: " if rc == 1 else "FAILED: ",
                            verdict), flush=True)
    if rc == 0 and not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    elif rc:
        print("replay: its outputs are in %s" % work, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
