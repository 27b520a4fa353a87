# SPDX-License-Identifier: GPL-2.0-or-later
"""Processes of a rank's multiprocessing forkserver end with the rank.

Imported by the forkserver itself (slurm_elastic.torch puts it in the
forkserver's preload list; Python 3.14 starts DataLoader workers through a
forkserver by default). A SIGKILLed rank leaves its forkserver and the
workers it forked behind, under init, holding the launch's output open, so
that mpirun (and elastic-run's re-form) waits for them. Here the forkserver
asks the kernel for SIGKILL when the rank dies, and so does each worker it
forks when the forkserver dies. Nothing else: no MPI, no torch.
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


_parent = os.getppid()
_die_with_parent()
if os.getppid() != _parent:  # the rank died before the request
    os._exit(1)
os.register_at_fork(after_in_child=_die_with_parent)
