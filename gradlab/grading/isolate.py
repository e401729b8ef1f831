"""Each student's job in a process of its own, killed at the submission's time limit.

`run_isolated(entry, kinds, rubric, seed, limits)` -> StudentResult dict. The job
(gradlab.grading.job.grade_submission) runs in a child forked from a
forkserver that has NumPy, gradlab and its checks imported already, so a child
costs a fork, not an interpreter start. The child:

- starts its own session (process group), so the student's threads and child
  processes die with it;
- gets limits on address space and on the size of what it writes, its stdout
  and stderr go to a file in a fresh scratch folder (its working directory);
- tells the parent, through an events file, what it starts and finishes.

When the child ends early (os._exit, a signal, a crash, the time limit), the
parent knows from the events where: the file being imported is marked broken
with the reason, the check running gets an error with the reason, the kind's
later checks are not run, and a fresh child grades the kinds after it with
the time that is left. One student's endless loop costs that student the
time limit and nobody else anything.

When gradlab.check itself runs a file in a worker process (the worker issue),
this wrapper becomes a plain call of grade_submission.
"""
import itertools
import json
import multiprocessing
import os
import resource
import shutil
import signal
import tempfile
import threading
import time
from multiprocessing import spawn

from gradlab.contract.errors import UsageError
from gradlab.contract.records import ERROR, SKIP, CheckRecord, KindResult
from gradlab.grading.job import Limits, StudentResult, failed_kind, grade_submission

PRELOAD = ["gradlab.grading.preload"]
_context = None
_live = set()          # children running now (pids), so Ctrl-C can end them at once
_stopping = False


class Stopped(Exception):
    """The grader is being stopped (Ctrl-C): no new child is started."""


def start():
    """Allow jobs again (a new grading run in this process)."""
    global _stopping
    _stopping = False


def stop_all():
    """End every running job (each whole process group) and start no more."""
    global _stopping
    _stopping = True
    for pid in list(_live):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def context():
    """The forkserver, started once per process with gradlab preloaded and BLAS on one thread
    (N jobs on N cores; two BLAS threads per job on a busy machine cost 10x, not 2x)."""
    global _context
    if _context is None:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        if spawn.get_preparation_data is not _preparation_data:
            _preparation_data.original = spawn.get_preparation_data
            spawn.get_preparation_data = _preparation_data
        _context = ctx
    return _context


_starting = threading.local()


def _preparation_data(name):
    """multiprocessing re-runs the parent's main script in every child it starts
    (a teacher's script calling grade_class, `python - < x.py`, a Dask worker's
    entry point). A job needs nothing from it: its target is importable. So for
    the jobs started here (this thread, inside _run_child), leave it out."""
    data = _preparation_data.original(name)
    if getattr(_starting, "job", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


def run_isolated(entry, kinds, rubric, seed, limits=Limits()):
    """Grade one entry in child processes; returns the StudentResult as a dict."""
    start = time.monotonic()
    deadline = start + limits.wall
    skip = {"files": {}, "kinds": {}}
    notes = []
    scratch = tempfile.mkdtemp(prefix="gradlab-job-")
    try:
        for attempt in itertools.count():   # each attempt gets further: a file or a kind fewer to do
            events_path = os.path.join(scratch, f"events-{attempt}.jsonl")
            workdir = tempfile.mkdtemp(dir=scratch)
            outcome = _run_child(entry, kinds, rubric, seed, limits, skip, events_path, workdir, deadline)
            events = _read_events(events_path)
            final = [e for e in events if e["event"] == "end"]
            if final:
                result = StudentResult.from_dict(final[0]["result"])
                result.notes = notes + result.notes
                report = final[0].get("report_html")
                break
            if not events and outcome != "timeout":   # it died before any student code could run: ours
                why = _why(outcome, limits).replace("the process running it ", "")
                raise UsageError(f"a grading job could not start ({why}; its error is above); "
                                 f"nothing was graded for {entry.student}")
            progress = _progress(events, kinds, rubric, seed, entry.student, outcome, skip, notes, limits)
            if outcome == "timeout" or not progress:
                result = _give_up(entry, kinds, rubric, seed, skip, notes, outcome, limits)
                report = None
                break
        result.seconds = time.monotonic() - start
        out = result.to_dict()
        if report is not None:
            out["report_html"] = report
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_child(entry, kinds, rubric, seed, limits, skip, events_path, workdir, deadline):
    if _stopping:
        raise Stopped()
    ctx = context()
    proc = ctx.Process(target=_child, args=(entry, kinds, rubric, seed, limits, skip, events_path, workdir),
                       daemon=True)
    _starting.job = True
    try:
        proc.start()
    finally:
        _starting.job = False
    _live.add(proc.pid)
    try:
        proc.join(max(0.0, deadline - time.monotonic()))
        if _stopping:
            raise Stopped()
        if proc.exitcode is None:
            _kill_group(proc)
            proc.join()
            return "timeout"
        _kill_group(proc)   # whatever the student started in the child's session
        return proc.exitcode
    finally:
        _live.discard(proc.pid)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.exitcode is None:
        proc.kill()


def _child(entry, kinds, rubric, seed, limits, skip, events_path, workdir):
    """In the child: isolate, grade, write the result as the last event, exit hard."""
    os.setsid()
    mb = 1 << 20
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_mb * mb, limits.output_mb * mb))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writing past the limit fails, it does not kill
    except (ValueError, OSError):
        pass
    events = open(events_path, "a", buffering=1)
    events.write('{"event": "start"}\n')
    out = os.open(os.path.join(workdir, "output.txt"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.chdir(workdir)
    from gradlab.execution import harness
    harness.set_quiet(True)

    def emit(event):
        events.write(json.dumps(event, default=_jsonable) + "\n")

    code = 0
    try:
        result = grade_submission(entry, kinds, rubric, seed, limits, skip=skip, on_event=emit,
                                  workdir=os.path.join(workdir, "files")).to_dict()
        from gradlab.grading.outputs import render_student_report
        html = render_student_report(result, rubric)   # here, so N reports render on N cores
        result["cpu_seconds"] = sum(getattr(resource.getrusage(who), f)
                                    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                                    for f in ("ru_utime", "ru_stime"))
        emit({"event": "end", "result": result, "report_html": html})
    except BaseException as e:   # a bug of ours: the parent reports it as the job's crash
        emit({"event": "crash", "error": f"{type(e).__name__}: {e}"})
        code = 3
    events.close()
    os._exit(code)   # no atexit, no waiting for the student's threads


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def _read_events(path):
    events = []
    try:
        with open(path) as fh:
            for line in fh:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    break   # a line cut short by the kill
    except FileNotFoundError:
        pass
    return events


def _why(outcome, limits):
    if outcome == "timeout":
        return f"the submission ran past its time limit of {limits.wall:g} s (an endless loop?)"
    if isinstance(outcome, int) and outcome < 0:
        try:
            name = signal.Signals(-outcome).name
        except ValueError:
            name = f"signal {-outcome}"
        if -outcome == signal.SIGKILL:
            return "the process running it was killed (SIGKILL: out of memory?)"
        return f"the process running it was killed by {name}"
    return f"the process running it exited with status {outcome} (os._exit or a crash)"


def _progress(events, kinds, rubric, seed, student, outcome, skip, notes, limits):
    """Learn from a child that ended early; True when the next child can get further."""
    why = _why(outcome, limits)
    crash = [e for e in events if e["event"] == "crash"]
    if crash:
        why = f"gradlab's grading job failed: {crash[0]['error']}; please report it"
    for e in events:
        if e["event"] == "kind_done":
            skip["kinds"][e["kind"]] = e["result"]
        if e["event"] == "discovered":
            skip["missing"] = e["missing"]   # kinds no file registers: known without running anything
    started = [e for e in events if e["event"] in ("import", "imported", "kind", "kind_done")]
    if not started:
        return False
    last = started[-1]
    if last["event"] == "import":
        skip["files"][last["file"]] = f"importing {last['file']}: {why}"
        notes.append(f"{last['file']}: {why} while it was imported")
        return True
    if last["event"] == "kind":
        kind = last["kind"]
        records = [CheckRecord.from_dict(e["record"]) for e in events
                   if e["event"] == "record" and e["kind"] == kind]
        skip["kinds"][kind] = _cut_short(kind, student, seed, rubric.checks(kind), records, why).to_dict()
        notes.append(f"{kind}: {why}")
        return True
    return False


def _cut_short(kind, student, seed, planned, records, why):
    """The checks that finished keep their verdicts; the one that was running
    gets the error, and the kind's checks after it are not run."""
    result = KindResult(kind, student, seed, {})
    result.checks = list(records)
    done = {r.name for r in records}
    waiting = [name for name in planned if name not in done]
    for i, name in enumerate(waiting):
        if i == 0:
            result.checks.append(CheckRecord(name, ERROR, f"{kind}: {why}, during this check"))
        else:
            result.checks.append(CheckRecord(name, SKIP, f"not run: {why} during an earlier check"))
    return result


def _give_up(entry, kinds, rubric, seed, skip, notes, outcome, limits):
    why = _why(outcome, limits)
    result = StudentResult(entry.student, entry.digest(), sorted(entry.files), notes=notes)
    for kind in kinds:
        if kind in skip["kinds"]:
            result.kinds[kind] = skip["kinds"][kind]
        elif kind in skip.get("missing", {}):
            result.kinds[kind] = failed_kind(kind, entry.student, seed, rubric.checks(kind),
                                             skip["missing"][kind]).to_dict()
        else:
            result.kinds[kind] = failed_kind(kind, entry.student, seed, rubric.checks(kind),
                                             f"{kind}: not graded: {why}").to_dict()
    return result
