# SPDX-License-Identifier: GPL-2.0-or-later
"""A rank's multiprocessing forkserver and the DataLoader workers it forks.

Imported by the forkserver itself: slurm_elastic.torch puts it in the
forkserver's preload list (Python 3.14 starts DataLoader workers through a
forkserver by default). Those processes are not the rank's children, so
two things a forked worker gets from the rank are set here:
- they end with the rank: a SIGKILLed rank otherwise leaves its forkserver
  and workers under init, holding the launch's output open, and mpirun (and
  elastic-run's re-form) waits for them. The forkserver asks the kernel for
  SIGKILL when the rank dies, and each process it forks asks the same of
  the forkserver;
- they ignore SIGUSR1, elastic-run's call for a planned re-form, which
  libelastic takes in the rank and which would end them.
Nothing else: no MPI, no torch.
"""
import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return


signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # kept across fork
_parent = os.getppid()
_die_with_parent()
if os.getppid() != _parent:  # the rank died before the request
    os._exit(1)
os.register_at_fork(after_in_child=_die_with_parent)
