# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/warm.py: the warm interpreter ("zygote") that elastic-run keeps on
# each node of a Python job: torch and the script's imports done, MPI not initialized;
# a rank wrapper hands it argv, environment, cwd and stdio, and it forks the rank.
"""A pre-warmed Python interpreter for elastic-run's relaunches.

A re-form (node lost, grow, shrink) restarts every rank; a fresh ``python3``
spends seconds importing torch and the script's other modules before MPI
starts. elastic-run therefore starts, once per node and job, ahead of need::

    python3 [FLAGS] -m slurm_elastic.warm --lifeline SOCKET SCRIPT

which listens on the abstract unix socket SOCKET at once, then imports torch
and the modules SCRIPT imports at its top level (read
with :mod:`ast`; ``mpi4py.MPI``, which initializes MPI, is left out; a module
that fails to import is left to the rank), checks that it is still
single-threaded with MPI not initialized (otherwise it says so and exits:
the ranks start cold), and then takes the ranks' requests. A rank that
connects while the zygote imports waits for it: one import per node and
job, not one per rank (the ranks of a launch would otherwise import torch
side by side, each on its own, on the same cores). The rank wrapper (``elastic-run --rank``), started by the PRRTE
daemon as usual, connects and sends the rank's argv, environment, cwd and open file descriptors
(SCM_RIGHTS), its umask and CPU affinity. The zygote forks; the child takes
them over (``dup2``, the environment replaced, plus what the zygote's imports
set in it, SIGUSR1 blocked until libelastic takes it, dies with the zygote) and runs SCRIPT as ``__main__``, exactly as ``python3 SCRIPT``
would from there on. The zygote tells the wrapper the child's pid and, at
the end, its wait status; the wrapper relays signals and ends with that
status, so PRRTE and ULFM see the rank end as a plain rank's. When the wrapper dies
the zygote kills the child; when the zygote dies its children die
(PR_SET_PDEATHSIG) and their wrappers report them killed. With
``--lifeline`` the zygote ends at the end of its stdin (elastic-run holds
the other end of that pipe, through srun), and writes ``ready`` on its
stdout once it serves (elastic-run waits for it before a re-form onto a new
node or grant).

A request is refused (the wrapper then starts ``python3`` itself and says
so with ``-v``) when the interpreter or its flags differ, or when a
variable read while importing differs from the zygote's (``PYTHON*``,
``LD_*``, ``OMP_*``, ``MKL_*``, ``OPENBLAS_*``, ``KMP_*``, ``GOMP_*``,
``TORCH_*``, ``ONEDNN_*``, ``DNNL_*``), or when the peer is another user.

What differs from a fresh interpreter: modules imported by the zygote are
the versions on disk when elastic-run started the zygote on that node, not
at each relaunch; their import-time side effects happened once, in the
zygote; resource limits, nice value and cgroup are the zygote's (its srun
step's, in the same job); ``ps`` shows the rank as the zygote's command
line. The rank's first writes to memory it shares with the zygote copy
pages (copy-on-write), spread over its start (not measured apart).

``ELASTIC_WARM_IMPORTS`` (comma-separated) replaces the list read from the
script; ``torch`` is always imported.
"""

import ast
import fcntl
import gc
import os
import runpy
import select
import shutil
import signal
import socket
import struct
import sys
import time

# (oneDNN's ONEDNN_*/DNNL_* are read once, at its first kernel: torch's imports in
# the zygote may come first, and a forked rank would keep the zygote's values)
_ENV_PREFIXES = ("PYTHON", "LD_", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "TORCH_",
                 "ONEDNN_", "DNNL_")
_MAX_FDS = 250


def _log(verbose, msg):
    if verbose:
        sys.stderr.write("elastic-run warm %s: %s\n" % (os.environ.get("SLURMD_NODENAME", ""),
                                                        msg))
        sys.stderr.flush()


class _NoMPI:
    """An import hook that keeps modules which initialize MPI at import
    (mpi4py.MPI) out of the zygote: their import fails there and is done
    in the rank instead."""

    def find_spec(self, name, path=None, target=None):
        if name == "mpi4py.MPI":
            raise ImportError("slurm_elastic.warm: mpi4py.MPI initializes MPI: not "
                              "imported ahead")
        return None


def script_imports(path):
    """The modules a script imports at its top level (import X, from X
    import Y; relative imports and __future__ left out)."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    mods = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            mods += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module != "__future__":
                mods += ["%s.%s" % (node.module, a.name) for a in node.names
                         if a.name != "*"] + [node.module]
    return mods


def _import(name):
    """Import a module, or a name that may be an attribute of one (from X
    import Y gives X.Y: a submodule or not)."""
    try:
        __import__(name)
        return True
    except ImportError:
        if "." in name and name.rsplit(".", 1)[0] in sys.modules:
            return True  # an attribute, not a submodule
        raise


def warm_up(script, verbose):
    """Import torch and the script's modules; returns (count, failures)."""
    sys.path[0:0] = [os.path.dirname(os.path.abspath(script))]
    wanted = os.environ.get("ELASTIC_WARM_IMPORTS")
    # torch._dynamo too: torch's optimizers import it at their first step
    # (0.6-0.9 s here), on the way to every relaunch's first commit
    if wanted is not None:
        listed = [m for m in wanted.split(",") if m]
    else:
        try:
            listed = script_imports(script)
        except (OSError, SyntaxError, ValueError):
            listed = []  # the rank says what is wrong with the script
    mods = ["torch", "torch._dynamo"] + listed
    hook = _NoMPI()
    sys.meta_path.insert(0, hook)
    failed = []
    try:
        for m in mods:
            try:
                _import(m)
            except Exception as e:  # noqa: BLE001: a module that cannot load ahead loads later
                failed.append("%s (%s)" % (m, str(e).splitlines()[0] if str(e) else
                                           type(e).__name__))
    finally:
        sys.meta_path.remove(hook)
        del sys.path[0]
    return len(mods), failed


def _threads():
    return len(os.listdir("/proc/self/task"))


def _mpi_initialized():
    core = sys.modules.get("slurm_elastic._core")
    if core is None:
        return False
    return bool(core.mpi_initialized())


def _hung_up(conn):
    """Whether the peer closed its end (a request waits in the socket
    after that: its data was sent before)."""
    p = select.poll()
    p.register(conn, select.POLLRDHUP)
    return any(ev & (select.POLLRDHUP | select.POLLHUP) for _fd, ev in p.poll(0))


def listen(name):
    """The zygote's socket, listening at once: ranks that come while it
    imports wait in the backlog instead of starting cold."""
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    lsock.bind("\0" + name)
    lsock.listen(256)
    return lsock


def _env_key(env):
    return {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES)}


def _recv_request(conn):
    """(argv, env, cwd, fd map, umask, cpus) from a rank wrapper: a 4-byte
    length with the fds attached, then NUL-separated fields: "v1", argc,
    argv..., envc, env..., cwd, the fd numbers the received fds take, the
    umask (octal) and the CPU affinity ("0,1,5"; empty: unknown)."""
    head, fds, _flags, _addr = socket.recv_fds(conn, 4, _MAX_FDS)
    if len(head) != 4:
        raise ValueError("short request")
    (n,) = struct.unpack("<I", head)
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ValueError("request cut short")
        buf += chunk
    f = [os.fsdecode(x) for x in buf.split(b"\0")]
    if f[0] != "v1":
        raise ValueError("request version %r" % f[0])
    argc = int(f[1])
    argv = f[2:2 + argc]
    envc = int(f[2 + argc])
    env = f[3 + argc:3 + argc + envc]
    cwd = f[3 + argc + envc]
    targets = [int(x) for x in f[4 + argc + envc].split(",") if x]
    if len(targets) != len(fds):
        raise ValueError("%d fds sent for %d targets" % (len(fds), len(targets)))
    mask = int(f[5 + argc + envc], 8)
    cpus = {int(x) for x in f[6 + argc + envc].split(",") if x}
    return (argv, dict(e.split("=", 1) for e in env if "=" in e), cwd,
            list(zip(fds, targets)), mask, cpus)


class Zygote:
    def __init__(self, name, script, verbose, env0, set_by_imports, lifeline=False):
        self.name, self.script, self.verbose = name, script, verbose
        self.lifeline = lifeline
        self.set_by_imports = set_by_imports
        self.exe = os.path.realpath(sys.executable)
        self.flags = [a for a in sys.orig_argv[1:sys.orig_argv.index("-m")]]
        self.env = _env_key(env0)
        self.kids = {}  # pid -> (conn, pidfd)

    def refuse_reason(self, argv, env):
        if len(argv) < 2 + len(self.flags):
            return "no script"
        exe = shutil.which(argv[0], path=env.get("PATH", os.defpath))
        if exe is None or os.path.realpath(exe) != self.exe:
            return "interpreter %s is not the zygote's %s" % (argv[0], self.exe)
        if argv[1:1 + len(self.flags)] != self.flags:
            return "interpreter flags differ from the zygote's %s" % (self.flags,)
        script = argv[1 + len(self.flags)]
        if script.startswith("-"):
            return "option %s (only python3 [FLAGS] SCRIPT ARGS is run warm)" % script
        key = _env_key(env)
        if key != self.env:
            diff = sorted(set(key.items()) ^ set(self.env.items()))
            return "environment differs: %s" % ", ".join(sorted({k for k, _ in diff}))
        return None

    def serve(self, lsock):
        """Accept requests on lsock (bound and listening) until one makes
        this process a rank (returns (script, argv) in the child) or the
        zygote is told to stop."""
        poller = select.poll()
        poller.register(lsock, select.POLLIN)
        if self.lifeline:  # stdin: a pipe from elastic-run; its end is ours
            poller.register(0, select.POLLIN)
        by_fd = {}
        while True:
            for fd, _ev in poller.poll():
                if fd == 0:
                    if not os.read(0, 4096):
                        _log(self.verbose, "elastic-run is done: the zygote ends")
                        sys.exit(0)
                    continue
                if fd == lsock.fileno():
                    conn, _ = lsock.accept()
                    res = self._request(conn, lsock, poller, by_fd)
                    if res is not None:
                        return res  # in the child
                    continue
                pid = by_fd.get(fd)
                if pid is None:
                    continue  # the other end of a rank already done
                conn, pidfd = self.kids.pop(pid)
                for f in (conn.fileno(), pidfd):
                    del by_fd[f]
                    poller.unregister(f)
                try:
                    os.kill(pid, signal.SIGKILL)  # no-op when it ended
                except ProcessLookupError:
                    pass
                _, ws = os.waitpid(pid, 0)
                os.close(pidfd)
                try:
                    conn.sendall(b"exit %d\n" % ws)
                except OSError:
                    pass
                conn.close()

    def _request(self, conn, lsock, poller, by_fd):
        try:
            uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                      12))[1]
            if uid != os.getuid():
                conn.close()
                return None
            argv, env, cwd, fds, mask, cpus = _recv_request(conn)
        except (OSError, ValueError, IndexError) as e:
            _log(self.verbose, "bad request: %s" % e)
            conn.close()
            return None
        why = self.refuse_reason(argv, env)
        if why is None and _threads() != 1:
            why = "the zygote has %d threads: forking it is unsafe" % _threads()
        if why:
            for fd, _ in fds:
                os.close(fd)
            try:
                conn.sendall(b"no %s\n" % why.encode())
            except OSError:
                pass
            conn.close()
            return None
        if _hung_up(conn):
            # the wrapper gave up waiting (its rank was ended meanwhile):
            # no rank for it
            for fd, _ in fds:
                os.close(fd)
            conn.close()
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            return self._become(conn, lsock, argv, env, cwd, fds, parent, mask, cpus)
        for fd, _ in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.kids[pid] = (conn, pidfd)
        by_fd[conn.fileno()] = pid  # the wrapper died (EOF): kill the child
        by_fd[pidfd] = pid  # the child ended
        poller.register(conn, select.POLLIN)
        poller.register(pidfd, select.POLLIN)
        try:
            conn.sendall(b"pid %d\n" % pid)
        except OSError:
            pass
        return None

    def _become(self, conn, lsock, argv, env, cwd, fds, parent, mask, cpus):
        """In the child: take over the rank's identity; returns (script, args)."""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the zygote
        if os.getppid() != parent:
            os._exit(1)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        # the zygote's own descriptors go first (their numbers may be the
        # rank's), then the received ones move above every target and down
        # onto their numbers
        for pid, (c, pidfd) in self.kids.items():
            c.close()
            os.close(pidfd)
        self.kids.clear()
        conn.close()
        lsock.close()
        top = max([t for _, t in fds] + [2]) + 1
        staged = []
        for fd, target in fds:
            staged.append((fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top), target))
            os.close(fd)
        keep = set()
        for fd, target in staged:
            os.dup2(fd, target, inheritable=True)
            os.close(fd)
            keep.add(target)
        for fd in (0, 1, 2):  # not open in the wrapper: not the zygote's either
            if fd not in keep:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
        os.umask(mask)
        if cpus:
            try:
                os.sched_setaffinity(0, cpus)
            except OSError:
                pass
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        os.environ.update(self.set_by_imports)
        os.environ["ELASTIC_WARM_FORKED"] = "%.6f" % time.time()
        for f in (sys.stdout, sys.stderr):
            try:
                f.reconfigure(line_buffering=f.isatty())
            except (AttributeError, ValueError, OSError):
                pass
        return argv[1 + len(self.flags):]


def main(args=None):
    args = sys.argv[1:] if args is None else args
    verbose = lifeline = False
    while args and args[0] in ("-v", "--lifeline"):
        verbose = verbose or args[0] == "-v"
        lifeline = lifeline or args[0] == "--lifeline"
        args = args[1:]
    if len(args) != 2:
        sys.stderr.write("usage: python3 [FLAGS] -m slurm_elastic.warm [-v] [--lifeline] SOCKET SCRIPT "
                         "(started by elastic-run)\n")
        return 2
    name, script = args
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    signal.signal(signal.SIGHUP, lambda *a: sys.exit(0))
    lsock = listen(name)
    t0 = time.time()
    env0 = dict(os.environ)
    n, failed = warm_up(script, verbose)
    # what the imports set in the environment (sklearn: KMP_*), applied again
    # in each child, as the same imports in a fresh interpreter would
    set_by_imports = {k: v for k, v in os.environ.items() if env0.get(k) != v}
    if failed:
        _log(verbose, "not imported ahead: %s" % "; ".join(failed))
    if _threads() != 1 or _mpi_initialized():
        _log(True, "not usable: %s after the imports; relaunches start python3 cold"
             % ("MPI initialized" if _mpi_initialized() else "%d threads" % _threads()))
        return 1
    gc.collect()
    gc.freeze()  # the children share these objects' pages
    z = Zygote(name, script, verbose, env0, set_by_imports, lifeline)
    _log(verbose, "ready in %.2f s (%d modules imported ahead, %d in all)"
         % (time.time() - t0, n - len(failed), len(sys.modules)))
    if lifeline:
        # elastic-run reads it (through srun) before a re-form that needs
        # this zygote: the ranks keep training until it is ready
        sys.stdout.flush()
        os.write(1, b"ready\n")
    res = z.serve(lsock)
    # the child (gc stays frozen: collecting the zygote's objects would copy
    # their pages): run the script as python3 SCRIPT ARGS would

    sys.argv = list(res)
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # not the cwd of -m
    runpy.run_path(sys.argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
