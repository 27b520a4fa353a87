# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/ddp_verify.py: what the DDP tests (ddp.sh, cluster_ddp*.sh) check of a run of
# ddp_checks.py, from what its ranks printed (USED, EVAL, RESUMED lines), recorded (LR and
# RESUMED lines, <scenario>.rec) and saved (each rank's final model and buffers, rank 0's .pt):
#  - every rank ends with the same model and buffers, and the model was saved after the loop;
#  - each sample is trained once in each epoch, over the committed steps of every launch;
#  - the learning rate of every committed step is the reference run's;
#  - optionally, the model equals a reference run's (float32 summation order aside), or the
#    evaluation loss is near the reference's.
# A run's lines may come from several outputs (a launch and its relaunch): a RESUMED line
# drops what the earlier launches printed for the steps the relaunch redoes. STEP lines
# give a committed step's whole global batch.
import collections
import glob
import math
import os
import zlib

import numpy as np


class Runs:
    """The runs of one test directory. check() prints one line per finding;
    ok says whether every check passed."""

    def __init__(self, d, epochs, samples=512):
        self.d, self.epochs, self.samples = d, epochs, samples
        self.ok = True

    def fail(self, msg):
        print("FAIL:", msg, flush=True)
        self.ok = False

    @staticmethod
    def whole(w):
        """Whether the words w are a whole line of their kind. The ranks' lines
        reach the job's output through several forwarders (mpirun, srun), and
        under load one line may be cut by another's, or spliced with pieces of
        others: such lines are left out (a committed step's samples are in its
        STEP lines too, and every rank prints the LR line). USED and STEP lines
        end with "ck CRC END", the CRC-32 of the words before."""
        try:
            if w[0] in ("USED", "STEP"):
                head = 7 if w[0] == "USED" else 5
                return (len(w) > head + 3 and w[1] == "epoch" and w[3] == "step"
                        and w[-1] == "END" and w[-3] == "ck"
                        and int(w[-2], 16) == zlib.crc32(" ".join(w[:-3]).encode())
                        and (w[0] == "STEP" or w[5] == "rank")
                        and all(int(x) >= 0 for x in w[2:head:2] + w[head:-3]))
            if w[0] == "LR":
                return len(w) == 6 and w[1] == "step" and w[4] == "size" and \
                    int(w[2]) >= 0 and float(w[3]) >= 0 and int(w[5]) > 0
            if w[0] == "RESUMED":
                return len(w) == 8 and int(w[3]) >= 0 and int(w[5]) >= 0 and int(w[7]) > 0
            if w[0] == "EVAL":
                # "nan" is a whole word: the check below names it
                return len(w) == 3 and not float(w[2]) < 0
        except ValueError:
            return False
        return False

    def lines(self, outs, tag):
        """The words of the tag's lines over outputs outs (in launch order),
        without those of steps a later launch redid. USED and STEP lines
        come without their check words (ck CRC END). LR lines come from the
        ranks' record files (<name>.rec, written whole)."""
        col = 4 if tag in ("USED", "STEP") else 2
        res, cut = [], 0
        for name in outs:
            p = os.path.join(self.d, name + (".rec" if tag == "LR" else ".out"))
            if not os.path.exists(p):
                continue
            for w in (l.split() for l in open(p, errors="replace")):
                if w[:1] not in (["RESUMED"], [tag]):
                    continue
                if not self.whole(w):
                    cut += 1
                elif w[0] == "RESUMED":
                    at = int(w[3])
                    res = [x for x in res if tag == "EVAL" or int(x[col]) < at]
                else:
                    res.append(w[:-3] if tag in ("USED", "STEP") else w)
        if cut:
            print("%s: %d %s or RESUMED lines cut by other output, left out" % (outs[0], cut, tag))
        return res

    def states(self, sc):
        return {int(p.split(".")[-2]): np.load(p)
                for p in glob.glob(os.path.join(self.d, "%s.*.npy" % sc))}

    def check(self, sc, outs=None, ranks=2, model_ref=None, lr_ref=None, eval_ref=None,
              rtol=1e-4, atol=1e-5):
        """Run sc (its outputs outs, default [sc]): at least `ranks` final
        states, all equal; the .pt saved; samples once per epoch; the LR of
        lr_ref's committed steps; the model of model_ref; the evaluation
        loss within 10 % (+0.02) of eval_ref's."""
        outs = outs or [sc]
        st = self.states(sc)
        if len(st) < ranks:
            self.fail("%s: final states of %d ranks (%d expected)" % (sc, len(st), ranks))
            return
        first = st[min(st)]
        for r in sorted(st):
            if not np.array_equal(st[r], first):
                self.fail("%s: rank %d's model and buffers differ from rank %d's (max %.3g)"
                          % (sc, r, min(st), np.max(np.abs(st[r] - first))))
        if model_ref:
            ref = self.states(model_ref)[0]
            err = float(np.max(np.abs(first - ref)))
            print("%s: final model of %d ranks vs %s: max |dw| %.3g" % (sc, len(st), model_ref, err))
            if not np.allclose(first, ref, rtol=rtol, atol=atol):
                self.fail("%s: the model differs from %s's (max |dw| %.3g)" % (sc, model_ref, err))
        if not os.path.exists(os.path.join(self.d, sc + ".pt")):
            self.fail("%s: no model saved after the loop" % sc)
        # each committed step's samples: what its ranks reported training, or
        # its whole global batch (STEP lines) where a rank died before it could
        # report (a node lost right after a commit); a rank's samples outside
        # its step's batch fail
        trained = collections.defaultdict(list)
        for w in self.lines(outs, "USED"):
            trained[(int(w[2]), int(w[4]))] += [int(i) for i in w[7:]]
        whole = {(int(w[2]), int(w[4])): [int(i) for i in w[5:]]
                 for w in self.lines(outs, "STEP")}
        uses = collections.Counter()
        for key in set(trained) | set(whole):
            got = trained.get(key, [])
            if key in whole:
                if not set(got) <= set(whole[key]):
                    self.fail("%s: epoch %d step %d: a rank trained samples outside the "
                              "step's batch" % (sc, key[0], key[1]))
                if sorted(got) != sorted(whole[key]):
                    print("%s: epoch %d step %d: %d of its %d samples reported by the ranks "
                          "(the others' ranks died after the commit)"
                          % (sc, key[0], key[1], len(got), len(whole[key])))
                got = whole[key]
            for i in got:
                uses[(key[0], i)] += 1
        bad = [(e, i, uses[(e, i)]) for e in range(self.epochs) for i in range(self.samples)
               if uses[(e, i)] != 1]
        if bad:
            self.fail("%s: %d samples not trained exactly once in their epoch, e.g. %s"
                      % (sc, len(bad), bad[:5]))
        else:
            print("%s: each of %d samples trained once in each of %d epochs"
                  % (sc, self.samples, self.epochs))
        if lr_ref:
            want = {int(w[2]): w[3] for w in self.lines([lr_ref], "LR")}
            got, apart = {}, set()
            for w in self.lines(outs, "LR"):  # one line per rank and step
                if got.setdefault(int(w[2]), w[3]) != w[3]:
                    apart.add(int(w[2]))
            if apart:
                self.fail("%s: the ranks disagree on the learning rate at committed steps %s"
                          % (sc, sorted(apart)[:5]))
            diff = [s for s in sorted(want) if got.get(s) != want[s]]
            if diff or len(got) != len(want) or not want:
                self.fail("%s: the learning rate differs from %s's at committed steps %s "
                          "(%d steps against %d)" % (sc, lr_ref, diff[:5], len(got), len(want)))
            else:
                print("%s: the learning rate of all %d committed steps equals %s's"
                      % (sc, len(want), lr_ref))
        if eval_ref:
            ev = [float(w[2]) for w in self.lines(outs, "EVAL")]
            ref = [float(w[2]) for w in self.lines([eval_ref], "EVAL")]
            if any(math.isnan(x) for x in ev[-1:] + ref[-1:]):
                self.fail("%s: evaluation loss %s against %s's %s: not a number"
                          % (sc, ev[-1:], eval_ref, ref[-1:]))
            elif not ev or not ref or abs(ev[-1] - ref[-1]) > 0.1 * ref[-1] + 0.02:
                self.fail("%s: evaluation loss %s against %s's %s" % (sc, ev[-1:], eval_ref, ref[-1:]))
            else:
                print("%s: evaluation loss %.4f against %s's %.4f" % (sc, ev[-1], eval_ref, ref[-1]))
