#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""tests/hold.py PID SECONDS: hold process PID still, as a host too loaded to
run it would, for SECONDS at most, then let it go on.

A process stopped with SIGSTOP goes on at the SIGCONT that a runtime sends
before it ends a process; one held here (ptrace-stopped) stays still through
SIGCONT and SIGTERM, which wait for it, and ends at SIGKILL. Prints "held
PID", then how PID's hold ended: "ended (signal N) while held" or "let go
after S s". Exits 1 when PID cannot be held."""
import ctypes
import os
import sys
import time

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000  # waitpid: any child, traced ones included

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def main():
    pid, seconds = int(sys.argv[1]), float(sys.argv[2])
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0 or \
            libc.ptrace(PTRACE_INTERRUPT, pid, None, None) != 0:
        print("hold: cannot hold %d: %s" % (pid, os.strerror(ctypes.get_errno())),
              file=sys.stderr)
        return 1
    print("held %d" % pid, flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got, status = os.waitpid(pid, os.WNOHANG | WALL)
        if got == pid and (os.WIFEXITED(status) or os.WIFSIGNALED(status)):
            how = ("signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status)
                   else "exit %d" % os.WEXITSTATUS(status))
            print("%d ended (%s) while held" % (pid, how), flush=True)
            return 0
        time.sleep(0.005)
    # (signals that came meanwhile stay pending: delivered once it goes on)
    libc.ptrace(PTRACE_DETACH, pid, None, None)
    print("%d let go after %.1f s" % (pid, seconds), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
