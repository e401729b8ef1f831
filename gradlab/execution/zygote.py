"""Starting a worker by forking the judging process instead of a fresh `python`.

A spawned worker (`python -m gradlab.execution.worker`) pays an interpreter
start, `import numpy` and gradlab's worker code: ~0.15-0.2 s of CPU, several
times per student when a class is graded. A grading job
(gradlab.grading.isolate) is already such a process: forked from the grader's
forkserver with NumPy and gradlab imported, BLAS on one thread, single-threaded,
and it never imports student code. So there the job is the zygote: Session.start
forks it, and the child turns itself into exactly the worker a spawn would
give, then runs the worker module as `__main__` (runpy, as `python -m` does):

- a new session and process group, the worker's temporary folder as its cwd,
  stdin /dev/null, stdout and stderr the captured output file, and no file
  descriptor but those and its two pipes;
- os.environ replaced by remote.worker_env (HOME and TMPDIR in its folder, the
  BLAS thread variables, the GRADLAB_WORKER token), and /proc/<pid>/environ
  rewritten in place to that clean environment, token first: the job's own
  environment (the teacher's shell) is not readable there, and every
  descendant forked without exec carries the token, so limits.sweep finds a
  double-forked daemon exactly as it finds one of a spawned worker;
- signal handlers, NumPy's error state and global random state (reseeded from
  the OS), tempfile's cached folder and sys.argv as in a fresh interpreter;
  gradlab's reference modules (gradlab.modules) dropped from sys.modules, as
  in a spawned worker, so the loader sees a student's import of them happen;
- none of the job's exit handlers or finalizers run in the child (they would
  stop the job's other workers); the limits (RLIMIT_AS, RLIMIT_FSIZE, no core,
  parent-death signal) are set by the worker at init, as when spawned.

The parent stays the job, as with a spawn: the job reaps it, its subreaper
collects what it leaves, killing the job kills it (PDEATHSIG).

`refusal(impl, limits)` says why a worker must be spawned instead (None: it
can be forked): forking is off (grading jobs and gradlab's command line, through
Limits.fork, turn it on; GRADLAB_FORK_WORKERS=1 anywhere else, e.g. a
single-threaded script checking many files; =0 nowhere), the process
runs threads (a fork would copy held locks; BLAS threads would be missing),
the worker wants more than the one BLAS thread the process has, or a file
next to the submission is named like a module the job has imported (a fresh
interpreter would import the student's file for it). A fork that fails, or a
child that does not come up, falls back to a spawn; remote.STARTS counts both
and keeps the reasons.
"""
import ctypes
import gc
import os
import subprocess
import sys
import time

# On in a grading job (gradlab.grading.isolate, single-threaded; GRADLAB_FORK_WORKERS=0 turns it off
# there) and for the runs of gradlab's command line (Limits.fork); elsewhere only with
# GRADLAB_FORK_WORKERS=1; and always only where refusal() finds nothing.
ENABLED = os.environ.get("GRADLAB_FORK_WORKERS") == "1"
_prepared = False


# ---- in the parent ---------------------------------------------------------------------------

def refusal(impl, limits):
    """Why a worker for `impl` cannot be forked from this process (None: it can)."""
    if not (ENABLED or getattr(limits, "fork", False)) or os.environ.get("GRADLAB_FORK_WORKERS") == "0":
        return "forking workers is off in this process"
    if not sys.platform.startswith("linux"):
        return "forking workers needs Linux's /proc"
    threads = _threads()
    if threads != 1:
        return f"this process runs {threads} threads"
    if limits.blas_threads() != 1:
        return f"the worker wants {limits.blas_threads()} BLAS threads, this process has one"
    if impl is not None and not os.path.isfile(os.fspath(impl)):
        return "the submission is not a file"
    _prepare()
    if impl is not None:
        clash = _shadowed(os.path.dirname(os.path.abspath(os.fspath(impl))))
        if clash:
            return f"the submission's folder holds {clash!r}, named like a module gradlab's process has imported"
    return None


def _threads():
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return -1


def _prepare():
    """Import once, in the zygote, what the worker imports before any student code runs."""
    global _prepared
    if not _prepared:
        import gradlab.contract.config  # noqa: F401
        import gradlab.execution.discovery  # noqa: F401
        import gradlab.execution.loader  # noqa: F401
        import gradlab.execution.worker  # noqa: F401
        import gradlab.numerics.tolerance  # noqa: F401
        _prepared = True


def _shadowed(folder):
    """A name in the submission's folder that `import NAME` would find there in a
    fresh worker, but finds in sys.modules here (None: no such name). Only a folder
    or a file that Python imports counts: a data file beside the code (random.npy,
    token.json) is never imported."""
    import importlib.machinery
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for entry in sorted(names):
        if os.path.isdir(os.path.join(folder, entry)):
            stem = entry
        elif entry.endswith(tuple(importlib.machinery.all_suffixes())):
            stem = entry.split(".", 1)[0]
        else:
            continue
        if stem.isidentifier() and stem in sys.modules:
            return entry
    return None


class ForkedProcess:
    """The Popen calls Session makes (pid, poll, wait, returncode), for a forked worker."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -9      # reaped by someone else: gone
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        if self.poll() is None:
            self._await_exit(timeout)
        delay = 0.0005
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        return self.returncode

    def _await_exit(self, timeout):
        """Sleep until the process exits (a pidfd turns readable then), at most `timeout` seconds."""
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return
        try:
            import select
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll(None if timeout is None else max(0, int(timeout * 1000)))
        finally:
            os.close(fd)


def fork_worker(read_fd, write_fd, out_fd, tmp, env, token):
    """Fork this process into a worker (see the module's docstring); returns its ForkedProcess.
    OSError when the fork itself fails."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    pid = os.fork()
    if pid == 0:                                  # the child: never returns
        _child(read_fd, write_fd, out_fd, tmp, env, token)
    return ForkedProcess(pid)


# ---- in the child -----------------------------------------------------------------------------

_KEEP = []   # the job's stdio objects, kept alive so their destructors never close fds 0-2


def _child(read_fd, write_fd, out_fd, tmp, env, token):
    code = 70
    try:
        become_worker(read_fd, write_fd, out_fd, tmp, env, token)
    except BaseException:                         # a failure of ours: the parent spawns instead
        try:
            import traceback
            os.write(2, ("gradlab could not turn a forked process into a worker: "
                         + traceback.format_exc().strip().splitlines()[-1] + "\n").encode(errors="replace"))
        finally:
            os._exit(code)
    code = 0
    try:
        import runpy
        runpy.run_module("gradlab.execution.worker", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit
            atexit._run_exitfuncs()               # the student's own (the job's were dropped)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def become_worker(read_fd, write_fd, out_fd, tmp, env, token):
    """Turn this freshly forked process into a worker's process, as spawned."""
    import atexit
    import random
    import signal
    import tempfile
    import weakref

    gc.freeze()                  # the job's objects are never collected here: no destructor closes an fd
    atexit._clear()              # nor runs the job's exit handlers
    for finalizer in list(getattr(weakref.finalize, "_registry", {})):
        finalizer.detach()       # nor its finalizers (they stop the job's other workers)
    from gradlab.execution import harness, remote
    remote._live.clear()         # the job's sessions are not this process's to close
    harness.set_quiet(False)     # nor its quiet count: a print here goes to the output file, counted by the job
    harness.forward_output(None)     # (and a lane's way of showing output is the lane's)
    os.setsid()
    _own_fds(read_fd, write_fd, out_fd)
    os.chdir(tmp)
    _set_environment(env, token)
    _reset_signals(signal)
    _KEEP.extend([sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__])
    import io
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True,
                                                   errors="backslashreplace")
    sys.dont_write_bytecode = True                # PYTHONDONTWRITEBYTECODE
    sys.argv = ["-m", str(read_fd), str(write_fd)]   # as `python -m gradlab.execution.worker R W` (runpy sets [0])
    sys.path.insert(0, tmp)                       # `python -m` puts the cwd first
    tempfile.tempdir = None                       # computed again from TMPDIR
    # pytest's assertion rewriter (a process checking files under GRADLAB_FORK_WORKERS=1): a spawned
    # worker has no such import hook, and runpy cannot run a module through it
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_pytest")]
    _drop_modules("gradlab.modules")
    from gradlab.execution import loader
    loader._reference_cache = None                # read again from the modules, imported afresh
    _drop_modules("gradlab.execution.worker")      # it runs as __main__, as with `python -m`
    import numpy as np
    np.seterr(divide="warn", over="warn", under="ignore", invalid="warn")
    np.random.seed()                              # fresh global state (random reseeds itself at fork)
    random.seed()
    if os.getppid() == 1:
        raise RuntimeError("the judging process ended while the worker was starting")


def _own_fds(read_fd, write_fd, out_fd):
    """stdin /dev/null, stdout and stderr the output file, the two pipes; nothing else."""
    null = os.open(os.devnull, os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    keep = {0, 1, 2, read_fd, write_fd}
    for fd in [int(n) for n in os.listdir("/proc/self/fd")]:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    for fd in (read_fd, write_fd):
        os.set_inheritable(fd, True)


def _set_environment(env, token):
    """os.environ replaced (exec'd children get it), and this process's
    /proc/<pid>/environ rewritten in place: the clean environment, token first."""
    os.environ.clear()
    os.environ.update(env)
    start, end = _environ_block()
    first = f"GRADLAB_WORKER={token}"
    entries = [first] + [f"{k}={v}" for k, v in env.items() if k != "GRADLAB_WORKER"]
    block = b""
    for entry in entries:
        data = entry.encode(errors="surrogateescape") + b"\0"
        if len(block) + len(data) > end - start:
            break
        block += data
    if not block:
        raise RuntimeError("the process's environment block is too small for the worker's token")
    ctypes.memmove(start, block + b"\0" * (end - start - len(block)), end - start)
    with open("/proc/self/environ", "rb") as fh:
        if not fh.read().startswith(first.encode() + b"\0"):
            raise RuntimeError("the worker's token could not be written into /proc/self/environ")


def _environ_block():
    """(start, end) addresses of this process's environment strings (/proc/self/stat, fields 50-51)."""
    with open("/proc/self/stat", "rb") as fh:
        text = fh.read().decode()
    fields = text[text.rfind(")") + 2:].split()
    start, end = int(fields[47]), int(fields[48])
    if not 0 < start < end:
        raise RuntimeError("this kernel does not say where the environment block is")
    return start, end


def _reset_signals(signal):
    """Handlers as a fresh interpreter has them."""
    signal.set_wakeup_fd(-1)
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            handler = signal.getsignal(number)
        except (ValueError, OSError):
            continue
        if number == signal.SIGINT:
            wanted = signal.default_int_handler
        elif number in (signal.SIGPIPE, signal.SIGXFSZ):
            wanted = signal.SIG_IGN
        else:
            wanted = signal.SIG_DFL
        if handler is not wanted and handler is not None:
            try:
                signal.signal(number, wanted)
            except (ValueError, OSError):
                pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _drop_modules(package):
    """Forget an imported package, so that importing it runs it (as in a fresh worker)."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    parent, _, child = package.rpartition(".")
    if parent in sys.modules and hasattr(sys.modules[parent], child):
        delattr(sys.modules[parent], child)
