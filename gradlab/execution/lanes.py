"""Several kinds of one run at once: one lane per core, each a gradlab process
with a worker of its own.

`gradlab check all --impl FILE` runs many kinds, each independent of the others
(its own module builds, its own random streams: plan.rng_for). Through a worker,
gradlab's process and the worker take turns, so one run keeps about one core
busy. With N lanes, N kinds run at once:

- The run's own process (the coordinator) has loaded the submission in a worker
  to learn what it registers and to check every option (Plan); it stops that
  worker, then forks N lanes. A lane is a copy of gradlab's process, which has
  never imported the student's code (isolation is required): it opens a worker
  of its own for the same submission and runs the kinds it is handed with
  Plan.run_kind, exactly as a run of one lane does, sending each record back.
- The coordinator hands out kinds one at a time, heaviest first (the training
  checks dominate), and shows the records in the plan's kind order, as one lane
  would: a kind's records stream while it is the first unfinished kind; a later
  kind's wait until then. What the student's code printed (-v) travels the same
  way, with its kind.
- Every verdict is a record made by gradlab's code in a lane from the numbers
  its worker sent, as in one lane. A lane that ends without finishing its kind
  (gradlab's failure, or the student's code killing it) gives that kind's
  missing checks an error record, never a pass, and its later kinds go to the
  other lanes (or, with none left, to the coordinator itself).
- The time limits hold per call as before; the wall-time limit counts from the
  run's start in every lane (each lane's worker gets what is left of it).
- Ctrl-C reaches the lanes (same process group): each stops its worker and
  ends; the coordinator waits for them, then exits 130 as a run of one lane does
  (SIGTERM and SIGHUP the same way, exit 143 and 129).

Lanes are used only where they help and are safe: a run through workers of more
than one kind, in a process running no other thread (a fork copies only the
calling thread), on Linux.
"""
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import time
from multiprocessing.connection import Pipe, wait

from gradlab.contract.errors import UsageError
from gradlab.contract.records import ERROR, CheckRecord, RunResult
from gradlab.execution import harness, loader, zygote
from gradlab.execution import limits as limits_mod

# The relative cost of a check, for the order kinds are handed out in: the training checks run a model for
# tens of steps (measured through a worker on the references: train 0.8 s, copy_task 0.3 s, overfit 0.1 s,
# most others 5-30 ms).
WEIGHTS = {"train": 40, "copy_task": 15, "overfit": 5}
STOP_SECONDS = 5       # after Ctrl-C, how long a lane has to stop its worker before it is killed


def lanes_for(plan, asked=None):
    """How many lanes `plan` runs in (1: in this process, kind after kind). asked: the number wanted
    (None: one per core)."""
    wanted = asked if asked is not None else (os.cpu_count() or 1)
    if wanted <= 1 or len(plan.kind_list) < 2 or not _remote(plan.loaded):
        return 1
    if not sys.platform.startswith("linux") or zygote._threads() != 1:
        return 1
    return min(wanted, len(plan.kind_list))


def run(plan, on_record, n):
    """Every planned kind of `plan` in `n` lanes: a RunResult, in the plan's kind order."""
    todo = sorted(plan.kind_list, key=lambda k: -_cost(plan, k))
    shown = _Shown(plan, on_record)
    limits = _lane_limits(plan, n)
    plan.loaded.close()            # the lanes start their own workers (the plan's restarts if it is used again)
    scratch = tempfile.mkdtemp(prefix="gradlab-lanes-")     # the lanes' workers' folders: gone with the run
    lanes = []
    try:
        for _ in range(n):
            lanes.append(_Lane.start(plan, limits, scratch))
            lanes[-1].give(todo)
        while any(lane.open for lane in lanes):
            for lane in _readable(lanes):
                for message in lane.read():
                    if shown.take(message):
                        lane.give(todo)
                if not lane.open:
                    _ended(lane, shown, todo)
        for kind in list(todo):    # no lane left (none could start its worker): the rest here, as one lane
            todo.remove(kind)
            shown.run_here(kind)
    except BaseException:
        _stop(lanes)
        raise
    finally:
        for lane in lanes:
            lane.wait(STOP_SECONDS)
            lane.sweep()
        shutil.rmtree(scratch, ignore_errors=True)
    return RunResult([shown.results[k] for k in plan.kind_list])


def _cost(plan, kind):
    return sum(WEIGHTS.get(spec.name, 1) for spec in plan.checks_for(kind))


def _remote(loaded):
    from gradlab.execution.remote import RemoteImplementation
    return isinstance(loaded, RemoteImplementation)


def _lane_limits(plan, n):
    """The lanes' workers' limits: BLAS threads shared among n workers; polling only with a core to spare
    for each lane (a lane and its worker take turns: one core each); the wall time left."""
    limits = plan.loaded.session.limits
    spare = (os.cpu_count() or 1) >= 2 * n
    wall = limits.wall
    deadline = plan.loaded.session.wall_deadline
    if wall and deadline is not None:
        wall = max(0.01, deadline - time.monotonic())
    return dataclasses.replace(limits, workers=n, spin=limits.spin and spare, wall=wall)


def _readable(lanes):
    open_ = {lane.conn: lane for lane in lanes if lane.open}
    return [open_[conn] for conn in wait(list(open_))]


def _ended(lane, shown, todo):
    """A lane that ended: a kind it had started and not finished has its missing checks as errors (the lane's
    worker is gone with it); a kind it had not started goes back to be handed out again."""
    kind, started = lane.kind, lane.started
    lane.kind = None
    if kind is None:
        return
    if not started:
        todo.insert(0, kind)
        return
    shown.lost(kind, f"gradlab's process checking {kind} ended ({lane.how_ended()}) before the kind was done; "
                     "not judged")


def _stop(lanes):
    """Ctrl-C or a failure here: every lane stops its worker and ends (SIGINT, as the terminal sends it),
    and is killed if it has not within STOP_SECONDS."""
    for lane in lanes:
        lane.signal(signal.SIGINT)
    end = time.monotonic() + STOP_SECONDS
    for lane in lanes:
        lane.wait(max(0.0, end - time.monotonic()))


class _Shown:
    """The records as one lane would show them: a kind's while it is the first unfinished one in the plan's
    order, a later kind's when it becomes so."""

    def __init__(self, plan, on_record):
        self.plan, self.on_record = plan, on_record
        self.results = {k: plan.result(k) for k in plan.kind_list}
        self.waiting = {k: [] for k in plan.kind_list}     # kind -> messages not shown yet
        self.done = set()
        self.cursor = 0

    def take(self, message):
        """A lane's message; True when the lane is done with its kind."""
        what, kind = message[0], message[1]
        if what == "printed":                 # ("printed", lines the lane's code printed while quiet)
            harness.count_printed(message[1])
            return False
        if what == "out" and kind is None:     # (printed between kinds: shown as it comes)
            harness.student_output(message[2])
            return False
        if kind not in self.results:
            raise RuntimeError(f"a lane sent a message about {kind!r}, which is not planned")
        if what in ("start", "tokens"):     # (_Lane.read has taken note)
            return False
        if what == "failed":                  # the kind could not run there (a UsageError): its checks are errors
            self.lost(kind, message[2])
            return True
        self.waiting[kind].append(message)
        if what == "done":
            self.done.add(kind)
        self._flush()
        return what == "done"

    def lost(self, kind, why):
        have = {r.name for r in self.results[kind].checks}
        have |= {m[2].name for m in self.waiting[kind] if m[0] == "record"}
        for spec in self.plan.checks_for(kind):
            if spec.name not in have:
                self.waiting[kind].append(("record", kind, CheckRecord(spec.name, ERROR, f"{kind}: {why}")))
        self.done.add(kind)
        self._flush()

    def run_here(self, kind):
        """A kind run in this process (its worker restarted), when no lane is left to run it."""
        self.plan.run_kind(kind, lambda result, record: self.take(("record", kind, record)))
        self.take(("done", kind))

    def _flush(self):
        kinds = self.plan.kind_list
        while self.cursor < len(kinds):
            kind = kinds[self.cursor]
            for message in self.waiting[kind]:
                self._show(message)
            self.waiting[kind] = []
            if kind not in self.done:
                return
            self.cursor += 1

    def _show(self, message):
        what, kind, value = message[0], message[1], message[2] if len(message) > 2 else None
        result = self.results[kind]
        if what == "record":
            result.checks.append(value)
            if self.on_record:
                self.on_record(result, value)
        elif what == "out":
            harness.student_output(value)


class _Lane:
    """A forked gradlab process that runs the kinds it is handed (see _lane_main), and the pipes to it."""

    def __init__(self, pid, conn, to_lane):
        self.pid, self.conn, self.to_lane = pid, conn, to_lane     # (multiprocessing Connections: one way each)
        self.kind = None          # the kind it was handed last and has not finished
        self.started = False      # whether it said it started that kind
        self.open = True          # it may still send something
        self.status = None        # its exit status, once waited for
        self.tokens = set()       # the environment tokens of its workers (limits.sweep finds what they left)

    @classmethod
    def start(cls, plan, limits, scratch):
        from_lane, to_here = Pipe(duplex=False)
        from_here, to_lane = Pipe(duplex=False)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                  # the lane
            code = 1
            try:
                from_lane.close()
                to_lane.close()
                tempfile.tempdir = scratch        # its workers' folders go there
                _stop_on_signals()
                _lane_main(plan, limits, from_here, to_here)
                code = 0
            except BaseException:     # Ctrl-C (its worker is stopped by then), a worker that would not start, or
                pass                  # a bug of ours: the coordinator sees the kind unfinished (_ended)
            finally:
                os._exit(code)       # none of the coordinator's exit handlers (they would stop its workers)
        from_here.close()
        to_here.close()
        return cls(pid, from_lane, to_lane)

    def give(self, todo):
        """Hand the lane the next kind, or tell it to finish."""
        self.kind, self.started = (todo.pop(0) if todo else None), False
        try:
            self.to_lane.send(self.kind)
        except OSError:              # it has ended: its end is read next (_ended gives the kind back)
            pass

    def read(self):
        """The messages the lane has sent (its pipe is readable); at its end, none, and open is False."""
        out = []
        try:
            while not out or self.conn.poll():
                out.append(self.conn.recv())
        except (EOFError, OSError):     # ended (a message cut short by a kill is as good as none)
            self.open = False
        for message in out:
            if message[0] == "start":
                self.started = True
            elif message[0] == "tokens":
                self.tokens.update(message[2])
        return out

    def sweep(self):
        """What the lane's workers left running, if the lane could not stop them itself (killed, or ended
        with an error: a sweep that finds nothing costs a look at /proc)."""
        if self.status is not None and (os.WIFSIGNALED(self.status) or os.WEXITSTATUS(self.status) != 0):
            for token in self.tokens:
                limits_mod.sweep(set(), token)

    def signal(self, sig):
        if self.status is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, seconds):
        """Reap the lane (killed if it has not ended within `seconds`), and close its pipes."""
        end = time.monotonic() + seconds
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            elif time.monotonic() >= end:
                self.signal(signal.SIGKILL)
                self.status = os.waitpid(self.pid, 0)[1]
            else:
                time.sleep(0.005)
        self.conn.close()
        self.to_lane.close()

    def how_ended(self):
        self.wait(STOP_SECONDS)
        if os.WIFSIGNALED(self.status):
            return f"killed by signal {os.WTERMSIG(self.status)}"
        return f"exit status {os.WEXITSTATUS(self.status)}"


STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop_on_signals():
    """In a lane: Ctrl-C, SIGTERM and SIGHUP (not where they were ignored: nohup) stop it once
    (_interrupted_once). The coordinator's own handler, inherited by the fork, would stop it too, but a
    second signal would cut the stop short."""
    signal.signal(signal.SIGINT, _interrupted_once)
    for sig in STOPPING[1:]:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _interrupted_once)


def _interrupted_once(signum, frame):
    """A lane's SIGINT (SIGTERM, SIGHUP): the first stops the lane (KeyboardInterrupt: its worker is stopped
    on the way out); any later one is ignored, so that stopping it is not cut short. (Ctrl-C reaches a lane
    twice: from the terminal, and from the coordinator's _stop; `timeout`'s SIGTERM goes to the whole group,
    and the coordinator's SIGINT follows.)"""
    for sig in STOPPING:
        signal.signal(sig, harness.ignore_signal)
    raise KeyboardInterrupt


class _Tokens:
    """The environment tokens of the lane's workers, sent to the coordinator as they are new (if the lane is
    killed, the coordinator sweeps what its workers left running with them)."""

    def __init__(self, conn):
        from gradlab.execution import remote
        self.conn, self.all, self.sent = conn, remote.TOKENS, 0

    def send(self, kind):
        if len(self.all) > self.sent:
            self.conn.send(("tokens", kind, self.all[self.sent:]))
            self.sent = len(self.all)


def _lane_main(plan, limits, from_coordinator, to_coordinator):
    """In the lane: open a worker, then run each kind handed over until told to finish (None)."""
    send = to_coordinator.send
    current = [None]
    tokens = _Tokens(to_coordinator)
    # what the file prints as it is imported again here was shown (or counted) when the coordinator's worker
    # imported it: neither shown nor counted a second time
    harness.forward_output(lambda text: None)
    quiet = harness.printed_lines()
    plan.loaded = loader.open_implementation(plan.impl, plan.isolate, limits)
    plan._opened = True
    printed = harness.printed_lines() - quiet
    harness.forward_output(lambda text: send(("out", current[0], text)))
    try:
        while (kind := from_coordinator.recv()) is not None:
            current[0] = kind
            send(("start", kind))
            tokens.send(kind)

            def record(result, record, kind=kind):
                tokens.send(kind)                   # (a worker started anew during the check: its token first)
                send(("record", kind, record))
            try:
                plan.run_kind(kind, record)
            except UsageError as e:
                send(("failed", kind, f"cannot judge: {e}"))
                continue
            send(("done", kind))
        send(("printed", harness.printed_lines() - quiet - printed))   # (the lane's own count)
    finally:
        plan.close()
