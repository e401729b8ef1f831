"""Limits on the worker process that runs the student's code, and cleaning up
after it: time per call and per submission (measured by gradlab, in the
parent), memory (address space) and output size (set in the worker with
setrlimit, hard limits the student's code cannot raise), killing the worker's
whole process group and anything it left behind, and saying in one line how
a worker ended.
"""
import ctypes
import os
import re
import signal
import time
from dataclasses import dataclass

from gradlab.execution.harness import innermost_student_frame

DEFAULT_TIMEOUT = 20.0        # seconds for one call into student code
DEFAULT_WALL = 600.0          # seconds for one submission (every check of every kind)
DEFAULT_MEMORY_MB = 4096      # address space; NumPy + SciPy + OpenBLAS (1 thread) take ~0.25 GB of it
DEFAULT_OUTPUT_MB = 10        # what the student's code may print (stdout + stderr)


@dataclass(frozen=True)
class Limits:
    timeout: float = DEFAULT_TIMEOUT        # per call; 0 or None: none
    wall: float = DEFAULT_WALL              # per submission; 0 or None: none
    memory_mb: int = DEFAULT_MEMORY_MB      # 0 or None: none
    output_mb: float = DEFAULT_OUTPUT_MB    # 0 or None: none
    workers: int = 0                        # how many workers run at once (BLAS threads = cores // workers); 0: cores
    fork: bool = False                      # the workers may be forked from this process (gradlab's own command
                                            # line; zygote.refusal still decides, GRADLAB_FORK_WORKERS=0: never)
    spin: bool = False                      # one worker at a time, a core to spare: gradlab and the worker poll
                                            # for a reply before they sleep (protocol.Channel; see spins())

    def spins(self):
        """Whether reads poll before they sleep: asked for (gradlab check, gradlab.check from the main
        thread) and a core to spare. Off where several run at once (grading, pytest -n, a thread pool):
        measured here, grading a class 2 at a time took 16% longer with it."""
        return bool(self.spin) and (os.cpu_count() or 1) >= 2

    def blas_threads(self):
        cores = os.cpu_count() or 1
        return max(1, cores // (self.workers or cores))


# ---- in the worker ------------------------------------------------------------------

def apply_in_worker(memory_mb, output_mb):
    """Hard limits on this process (the worker), before any student code runs."""
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))     # a crash leaves no core file
    if memory_mb:
        size = int(memory_mb) << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if output_mb:
        size = int(output_mb * (1 << 20))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    _set_parent_death_signal()


def _set_parent_death_signal():
    """If gradlab itself dies (kill -9), the worker gets SIGKILL instead of living on."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# ---- in gradlab (the parent) -----------------------------------------------------------

_subreaper = False


def set_subreaper(on):
    """While workers run, orphans of theirs (a double fork, a setsid'd daemon) are
    reparented to gradlab instead of init, so they can be found and killed (Linux
    only). Turned off again when no worker runs, so a program that calls
    gradlab.check does not collect the orphans of its other children meanwhile."""
    global _subreaper
    if _subreaper == bool(on):
        return _subreaper
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(36, 1 if on else 0, 0, 0, 0) == 0:    # PR_SET_CHILD_SUBREAPER
            _subreaper = bool(on)
    except (OSError, AttributeError):
        pass
    return _subreaper


def become_subreaper():
    return set_subreaper(True)


def _stat(pid):
    """(ppid, pgid, sid, state, start tick) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[1]), int(fields[2]), int(fields[3]), fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _pids():
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _has_token(pid, token):
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return token.encode() in fh.read()
    except OSError:
        return False


def leftovers(worker_pids, token, since=None):
    """Processes the workers left behind: in a worker's process group or session,
    descended from a worker, or carrying the workers' environment token (a
    double fork with setsid keeps the environment it was started with). `since`:
    the workers' start (clock ticks); a process started before it cannot carry
    their token, so its environment is not read."""
    me = os.getpid()
    table = {pid: st for pid in _pids() if (st := _stat(pid)) is not None and pid != me}
    marked = set()
    for pid, (ppid, pgid, sid, state, start) in table.items():
        if pgid in worker_pids or sid in worker_pids or pid in worker_pids:
            marked.add(pid)
        elif state != "Z" and token and (since is None or start >= since) and _has_token(pid, token):
            marked.add(pid)
    grew = True
    while grew:                              # and everything below them
        grew = False
        for pid, (ppid, *_rest) in table.items():
            if pid not in marked and ppid in marked:
                marked.add(pid)
                grew = True
    return marked


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def sweep(worker_pids, token, rounds=50):
    """Kill the workers' process groups and everything they left behind, until
    nothing is left; reap what became gradlab's own zombie children by adoption
    (never a child someone else in this process waits for)."""
    worker_pids = set(worker_pids)
    ticks = [_stat(pid) for pid in worker_pids]          # not reaped yet: their pids are still theirs
    since = min(t[4] for t in ticks) if ticks and None not in ticks else None
    seen = leftovers(worker_pids, token, since) - worker_pids    # while the tree is intact (zombies too)
    for pgid in worker_pids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    kill_all(seen)
    for _ in range(rounds):
        found = leftovers(worker_pids, token, since) - worker_pids
        seen |= found
        alive = {pid for pid in found if (_stat(pid) or (0, 0, 0, "Z", 0))[3] != "Z"}
        _reap(seen)
        if not alive:
            break
        kill_all(alive)
        time.sleep(0.002)
    _reap_all(seen, seen | worker_pids)
    SWEPT.extend(seen)


SWEPT = []     # every process a sweep found and killed (the tests check that none is left, zombie or not)


def _reap(pids):
    me = os.getpid()
    for pid in pids:
        st = _stat(pid)
        if st is not None and st[0] == me and st[3] == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _reap_all(pids, killed, seconds=2.0):
    """Wait (briefly) until each killed process is gone, reaping those that die as
    gradlab's children: a SIGKILL takes effect a moment later, and a zombie whose
    parent was killed too is reparented to gradlab once that parent has exited."""
    me = os.getpid()
    pending = set(pids)
    deadline = time.monotonic() + seconds
    while pending:
        for pid in list(pending):
            st = _stat(pid)
            if st is None:
                pending.discard(pid)
            elif st[3] == "Z":
                if st[0] != me:
                    if st[0] not in killed:
                        pending.discard(pid)      # the zombie of a process that lives on: its to reap
                    continue                      # its parent was killed: it comes to gradlab
                try:
                    os.waitpid(pid, os.WNOHANG)   # gone by the next look
                except ChildProcessError:
                    pending.discard(pid)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.002)


# ---- how a worker ended, in words ---------------------------------------------------------

_SIGNAL_WORDS = {
    "SIGSEGV": "a segmentation fault (the C stack overflowed: recursion too deep?)",
    "SIGXFSZ": None,     # said by the caller: output over the limit
    "SIGKILL": "killed (SIGKILL): out of memory, or killed from outside",
    "SIGABRT": "aborted (SIGABRT)",
    "SIGBUS": "a bus error (SIGBUS)",
    "SIGFPE": "a floating-point exception (SIGFPE)",
}


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_end(returncode, output_mb):
    """'exited with status 3', 'was killed by SIGTERM', ..."""
    if returncode is None:
        return "stopped responding"
    if returncode >= 0:
        return f"ended the worker process (exit status {returncode}: os._exit, or sys.exit in a thread?)"
    name = signal_name(-returncode)
    if name == "SIGXFSZ":
        return f"wrote more than {output_mb:g} MB of output (raise the limit with --max-output)"
    words = _SIGNAL_WORDS.get(name)
    return f"crashed the worker process: {words}" if words else f"ended the worker process with signal {name}"


_FRAME = re.compile(r'^\s*File "(.*)", line (\d+) in (.*)$')


def last_seen(dump_text, files, gradlab_dir):
    """'file.py:LINE' of the student's innermost frame in a faulthandler dump:
    the thread that runs gradlab's worker loop first (the call that ran too
    long), else any thread."""
    blocks, current = [], []
    for line in dump_text.splitlines():
        if line.startswith(("Thread ", "Current thread ")):
            if current:
                blocks.append(current)
            current = []
            continue
        m = _FRAME.match(line)
        if m:
            current.append((m.group(1), int(m.group(2))))
    if current:
        blocks.append(current)
    main = [b for b in blocks if any(os.path.abspath(p).startswith(gradlab_dir) and p.endswith("worker.py")
                                     for p, _ in b)]
    for block in main + [b for b in blocks if b not in main]:
        found = innermost_student_frame(block[::-1], files, gradlab_dir)    # a dump lists the most recent call first
        if found:
            return found
    return None
