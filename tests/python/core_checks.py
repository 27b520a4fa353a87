# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/core_checks.py: checks of slurm_elastic (no torch) run under mpirun by
# tests/python/core.sh; one scenario per invocation (argv[1]); prints "OK <scenario>" on
# every rank that passed, "CHECK FAILED: ..." otherwise.
import errno
import os
import sys
import threading
import time

import numpy as np

import slurm_elastic as se

scenario = sys.argv[1]
failed = []


def check(cond, what):
    if not cond:
        failed.append(what)
        print("CHECK FAILED: %s" % what, flush=True)


def expect_error(fn, eno, text, what):
    try:
        fn()
    except se.Error as e:
        check(e.errno == eno, "%s: errno %s, expected %s (%s)" % (what, e.errno, eno, e))
        check(text in str(e), "%s: message %r lacks %r" % (what, str(e), text))
        return e
    except Exception as e:  # noqa: BLE001 (reported)
        check(False, "%s: raised %r, expected slurm_elastic.Error" % (what, e))
        return None
    check(False, "%s: no error raised" % what)
    return None


def finish(ctx):
    print("OK %s rank %d" % (scenario, ctx.rank) if not failed else
          "FAILED %s: %s" % (scenario, "; ".join(failed)), flush=True)


if scenario == "api":
    # errors of the library arrive as slurm_elastic.Error (OSError) with its text
    check(issubclass(se.Error, OSError), "Error is an OSError")
    expect_error(lambda: se.batch_plan(0, 4, 2, 0), errno.EINVAL, "global", "batch_plan(0)")
    p = se.batch_plan(10, 4, 3, 1)
    check(p.share == 3 and p.offset == 4 and p.accum == 1, "batch_plan(10,4,3,1) = %r" % (p,))
    with se.Context() as ctx:
        w = np.zeros(8, dtype=np.float64)
        counter = np.zeros(1, dtype=np.int64)
        ctx.register("w", w)
        ctx.register("counter", counter)
        expect_error(lambda: ctx.register("w", np.zeros(2)), errno.EEXIST, "already registered",
                     "register twice")
        try:
            ctx.register("ro", bytes(8))
            check(False, "a read-only buffer was registered")
        except (TypeError, BufferError):
            pass
        expect_error(lambda: ctx.allreduce(np.ones(2)), errno.EPROTO, "", "allreduce outside a step")
        sums = []
        for step in ctx.steps(5):
            g = np.full(8, float(ctx.rank + 1))
            try:
                ctx.allreduce(g.astype(np.int8))
                check(False, "int8 allreduce accepted")
            except TypeError as e:
                check("int8" in str(e) or "format" in str(e), "type error text: %s" % e)
            if not ctx.allreduce(g):
                continue
            sums.append(g[0])
            step.on_commit(lambda g=g: (w.__iadd__(g), counter.__iadd__(1)))
        n = ctx.size
        check(ctx.step == 5, "5 steps committed (%d)" % ctx.step)
        check(counter[0] == 5, "each committed step applied once (%d)" % counter[0])
        check(np.all(w == 5 * n * (n + 1) / 2), "w = %r" % w[:2])
        expect_error(lambda: ctx.register("late", np.zeros(2)), errno.EBUSY, "first step has begun",
                     "register after the first step")
        # the same errors through a log callback: an exception raised in it
        # reaches the caller of the call that logged
        def bad_log(level, msg):
            raise ValueError("from the log callback: " + msg)
        ctx._c.set_log(bad_log, se._core.LOG_INFO)
        try:
            for step in ctx.steps(6):
                step.fail()  # logs "step 5 failed on some rank: redo" at commit
            check(False, "the log callback's exception did not reach the caller")
        except ValueError as e:
            check("failed on some rank" in str(e), "log callback exception text: %s" % e)
        ctx._c.set_log(None)
        # the GPU data plane: a NCCL communicator where a GPU is visible, else
        # ENODEV with the reason (here: no GPU, or a build without NCCL)
        try:
            comm = ctx._c.nccl_comm()
            print("rank %d: NCCL communicator 0x%x" % (ctx.rank, comm), flush=True)
        except se.Error as e:
            check(e.errno == errno.ENODEV and "elastic_nccl_comm" in str(e),
                  "nccl_comm without a GPU: %s" % e)
            print("rank %d: no NCCL data plane: %s" % (ctx.rank, e), flush=True)
        finish(ctx)

elif scenario == "gil":
    # rank 1 blocks in an allreduce while rank 0 sleeps: a Python thread of
    # rank 1 must keep running (the GIL is released in the blocking call)
    with se.Context() as ctx:
        ctx.register("w", np.zeros(1))
        ticks = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.001)
        t = threading.Thread(target=spin)
        for step in ctx.steps(1):
            buf = np.ones(4)
            if ctx.rank == 0:
                time.sleep(1.0)
                ctx.allreduce(buf)
            else:
                t.start()
                t0, before = time.monotonic(), ticks[0]
                ctx.allreduce(buf)
                waited, during = time.monotonic() - t0, ticks[0] - before
                stop.set()
                t.join()
                print("rank 1 waited %.2f s in allreduce, %d thread ticks meanwhile"
                      % (waited, during), flush=True)
                check(waited > 0.5, "rank 1 waited in the allreduce (%.2f s)" % waited)
                check(during > 100, "the thread ran while rank 1 was blocked (%d ticks)" % during)
        finish(ctx)

elif scenario == "mismatch":
    # registrations that differ across ranks: EINVAL on every rank at the first step
    with se.Context() as ctx:
        ctx.register("w", np.zeros(8 if ctx.rank == 0 else 9))
        e = expect_error(lambda: next(iter(ctx.steps(1))), errno.EINVAL, "", "mismatched registration")
        print("rank %d: %s" % (ctx.rank, e), flush=True)
        finish(ctx)
        ctx._done = True  # not complete: leave without elastic_complete

elif scenario == "inside":
    # registered state changed inside a step (update-after-commit promise broken):
    # EPROTO on every rank, naming the buffer on the rank that did it
    with se.Context() as ctx:
        w = np.zeros(8)
        ctx.register("w", w)
        try:
            for step in ctx.steps(3):
                g = np.ones(8)
                ctx.allreduce(g)
                if ctx.rank == 0 and step.index == 1:
                    w += 1  # wrong: inside the step
                step.on_commit(lambda g=g: w.__iadd__(g))
            check(False, "the change inside the step was not caught")
        except se.Error as e:
            check(e.errno == errno.EPROTO, "errno %s" % e.errno)
            check(ctx.rank != 0 or "'w' changed inside step 1" in str(e), "text: %s" % e)
            print("rank %d: %s" % (ctx.rank, e), flush=True)
        ctx._done = True
        finish(ctx)

elif scenario == "kill":
    # 3 ranks; the last one is SIGKILLed inside step 4: the survivors redo the
    # step at size 2 (the loop body never sees ELASTIC_REDO), the change
    # callback runs, and each committed step is applied exactly once
    with se.Context() as ctx:
        applied = np.zeros(10, dtype=np.int64)
        ctx.register("applied", applied)
        changes = []
        ctx.on_change(lambda: changes.append(ctx.size))
        victim = ctx.size - 1
        seen = []
        for step in ctx.steps(10):
            seen.append((step.index, step.redo, ctx.size))
            if ctx.rank == victim and step.index == 4 and ctx.size == 3:
                print("KILL rank %d at step 4 t=%.6f" % (ctx.rank, time.time()), flush=True)
                os.kill(os.getpid(), 9)
            one = np.ones(1)
            if not ctx.allreduce(one):
                continue
            step.on_commit(lambda i=step.index: applied.__setitem__(i, applied[i] + 1))
            if step.redo:
                print("first commit after a change t=%.6f size %d" % (time.time(), ctx.size),
                      flush=True)
        check(ctx.size == 2, "size after the kill: %d" % ctx.size)
        check(list(applied) == [1] * 10, "each step applied once: %r" % list(applied))
        check(changes == [2], "change callback saw size 2 once: %r" % changes)
        check(any(i == 4 and r for i, r, s in seen), "step 4 was redone: %r" % seen)
        finish(ctx)

elif scenario == "early_usr1":
    # a re-form asked for while the rank was still starting (elastic-run starts
    # ranks with SIGUSR1 blocked): pending until elastic_init unblocks it, then
    # taken at the first commit; without the block it would have killed the rank
    import signal
    out = sys.argv[2]
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    sys.stdout = open("%s.%d" % (out, rank), "w")
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    if rank == 0:
        os.kill(os.getpid(), signal.SIGUSR1)  # pending: we are "still importing"
    with se.Context() as ctx:
        w = np.zeros(1)
        ctx.register("w", w)
        ctx.on_exit(lambda status, why: print("exit hook: status %d (%s)" % (status, why)))
        for step in ctx.steps(50):
            print("step %d begun" % step.index)
            g = np.ones(1)
            ctx.allreduce(g)
            step.on_commit(lambda g=g: w.__iadd__(g))
        print("NOT REACHED: the loop ended without a re-form")

elif scenario == "exit_hook":
    # a planned re-form (SIGUSR1 on rank 0 at step 3): the library ends every
    # process with status 75; before that the exit hook runs and Python's
    # buffered output is flushed (stdout is a file here: block-buffered)
    out = sys.argv[2]
    sys.stdout = open("%s.%d" % (out, int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))), "w")
    with se.Context() as ctx:
        w = np.zeros(1)
        ctx.register("w", w)
        ctx.on_exit(lambda status, why: print("exit hook: status %d (%s)" % (status, why)))
        for step in ctx.steps(50):
            print("step %d begun" % step.index)  # buffered, never flushed by us
            if ctx.rank == 0 and step.index == 3:
                os.kill(os.getpid(), 10)  # SIGUSR1, as elastic-run sends it
            g = np.ones(1)
            ctx.allreduce(g)
            step.on_commit(lambda g=g: w.__iadd__(g))
        print("NOT REACHED: the loop ended without a re-form")

elif scenario == "term_idle":
    # SIGTERM while the library owes no snapshot (argv[2]: "before" the
    # first step, "after" the training completed), with node snapshots
    # every 50 steps: the library's handler passes it on at once (default
    # action: the rank dies of it) rather than waiting 2 s for a step
    import signal
    when = sys.argv[2]
    with se.Context() as ctx:
        w = np.zeros(1)
        ctx.register("w", w)
        if when == "after":
            for step in ctx.steps(3):
                g = np.ones(1)
                ctx.allreduce(g)
                step.on_commit(lambda g=g: w.__iadd__(g))
            ctx.complete()
        print("SIGTERM %s t=%.6f" % (when, time.time()), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        print("NOT REACHED: alive 10 s after SIGTERM", flush=True)

elif scenario == "sigusr1":
    # a Python SIGUSR1 handler silently turns planned re-forms off: refused
    import signal
    signal.signal(signal.SIGUSR1, lambda s, f: None)
    try:
        se.Context()
        check(False, "a Python SIGUSR1 handler was accepted")
    except RuntimeError as e:
        check("SIGUSR1" in str(e), "text: %s" % e)
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    with se.Context() as ctx:
        ctx.register("w", np.zeros(1))
        signal.signal(signal.SIGUSR1, lambda s, f: None)  # after: caught at the next step
        try:
            for step in ctx.steps(1):
                pass
            check(False, "a SIGUSR1 handler set after the Context was not caught")
        except RuntimeError as e:
            check("SIGUSR1" in str(e), "text: %s" % e)
        ctx._done = True
        finish(ctx)
elif scenario == "after_close":
    # the program runs on after the context ended: the finalize guard
    # (ELASTIC_FINALIZE_TIMEOUT=1 here) must not end it once MPI_Finalize returned
    with se.Context() as ctx:
        ctx.register("w", np.zeros(1))
        for step in ctx.steps(2):
            ctx.allreduce(np.ones(1))
        rank = ctx.rank
    time.sleep(2.5)
    print("OK after_close rank %d: alive 2.5 s after finalize" % rank, flush=True)
elif scenario == "usr1_none":
    # with planned re-forms turned off, SIGUSR1 is the program's to use
    import signal
    os.environ["ELASTIC_STOP_SIGNAL"] = "none"
    signal.signal(signal.SIGUSR1, lambda s, f: None)
    with se.Context() as ctx:
        ctx.register("w", np.zeros(1))
        signal.signal(signal.SIGUSR1, lambda s, f: None)
        for step in ctx.steps(2):
            pass
        check(ctx.step == 2, "ELASTIC_STOP_SIGNAL=none: Python SIGUSR1 handlers are fine")
        finish(ctx)
else:
    sys.exit("unknown scenario " + scenario)
sys.exit(1 if failed else 0)
