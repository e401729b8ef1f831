"""Each student's job in a trusted gradlab process of its own: N judges on N cores.

`run_isolated(entry, kinds, rubric, seed, limits)` -> StudentResult dict. The job
(gradlab.grading.job.grade_submission) runs in a child forked from a
forkserver that has NumPy, gradlab and its checks imported already (a child
costs a fork, not an interpreter start). The child never imports the student's
code: grade_submission opens each file in a worker process
(gradlab.execution.remote), which enforces the per-call and whole-submission
time limits and the memory and output limits, and turns a worker's death into
the running check's error. The checks are CPU-bound Python, so one judging
process per core is what grades N students at once.

The child starts its own session, so whatever is left of it dies with it, and
returns its result in a file. A child that ends without one is gradlab's
failure, not the student's code (which runs elsewhere): every kind of that
student gets the error, never a pass.
"""
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
from gradlab.contract.records import json_default
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
        _socket_fits()
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        if spawn.get_preparation_data is not _preparation_data:
            _preparation_data.original = spawn.get_preparation_data
            spawn.get_preparation_data = _preparation_data
        _context = ctx
    return _context


SOCKET_PATH_MAX = 107     # bytes of an AF_UNIX socket's path (Linux); the forkserver listens on one in TMPDIR


def _socket_fits():
    """The forkserver's socket goes in TMPDIR (TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX): a longer path was a
    traceback ('OSError: AF_UNIX path too long') as grading started; one line instead."""
    import tempfile
    folder = tempfile.gettempdir()
    if len(os.fsencode(folder)) + len("/pymp-xxxxxxxx/listener-xxxxxxxx") > SOCKET_PATH_MAX:
        from gradlab.contract.errors import UsageError
        raise UsageError(f"TMPDIR={folder}: too long for the grader's socket (a Unix socket's path holds "
                         f"{SOCKET_PATH_MAX} bytes, and it goes in TMPDIR); set TMPDIR to a shorter folder, e.g. /tmp")


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


GRACE = 30.0   # seconds past the submission's wall time the judging may take (workers start, reports render)


def run_isolated(entry, kinds, rubric, seed, limits=Limits()):
    """Grade one entry in a child process; returns the StudentResult as a dict."""
    start = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="gradlab-job-")
    try:
        result_path = os.path.join(scratch, "result.json")
        workdir = tempfile.mkdtemp(dir=scratch)
        outcome = _run_child(entry, kinds, rubric, seed, limits, result_path, workdir,
                             start + limits.wall + GRACE)
        done = _read_result(result_path)
        if done is None or "crash" in done:
            why = (f"gradlab's grading job failed: {done['crash']}; please report it" if done
                   else _why(outcome, limits))
            if outcome != "timeout" and done is None and not os.path.exists(os.path.join(workdir, "started")):
                raise UsageError(f"a grading job could not start ({why.replace('the process running it ', '')}; "
                                 f"its error is above); nothing was graded for {entry.student}")
            result, report = _give_up(entry, kinds, rubric, seed, why), None
        else:
            result, report = StudentResult.from_dict(done["result"]), done.get("report_html")
        result.seconds = time.monotonic() - start
        out = result.to_dict()
        if done is not None and isinstance(done.get("result"), dict) and "worker_starts" in done["result"]:
            out["worker_starts"] = done["result"]["worker_starts"]   # in gradlab.json, for the teacher
        if report is not None:
            out["report_html"] = report
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_child(entry, kinds, rubric, seed, limits, result_path, workdir, deadline):
    if _stopping:
        raise Stopped()
    ctx = context()
    proc = ctx.Process(target=_child, args=(entry, kinds, rubric, seed, limits, result_path, workdir),
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
        _kill_group(proc)
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


def _child(entry, kinds, rubric, seed, limits, result_path, workdir):
    """In the child (gradlab's code only): grade through workers, write the result, exit hard."""
    os.setsid()
    open(os.path.join(workdir, "started"), "w").close()
    out = os.open(os.path.join(workdir, "output.txt"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.chdir(workdir)
    tempfile.tempdir = workdir          # the workers' folders too: removed with the job's, even if it is killed
    from gradlab.execution import harness, remote, zygote
    harness.set_quiet(True)
    zygote.ENABLED = os.environ.get("GRADLAB_FORK_WORKERS", "1") != "0"   # this process is the workers' zygote
    code = 0
    try:
        result = grade_submission(entry, kinds, rubric, seed, limits,
                                  workdir=os.path.join(workdir, "files")).to_dict()
        from gradlab.grading.outputs import render_student_report
        html = render_student_report(result, rubric)   # here, so N reports render on N cores
        result["cpu_seconds"] = sum(getattr(resource.getrusage(who), f)
                                    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                                    for f in ("ru_utime", "ru_stime"))
        result["worker_starts"] = {"forked": remote.STARTS["forked"], "spawned": remote.STARTS["spawned"],
                                   "why_spawned": sorted(set(remote.STARTS["reasons"]))[:5]}
        done = {"result": result, "report_html": html}
    except BaseException as e:   # a bug of ours: the parent reports it
        done = {"crash": f"{type(e).__name__}: {e}"}
        code = 3
    tmp = result_path + ".tmp"
    with open(tmp, "w") as fh:
        # Python's own JSON (NaN / Infinity tokens): only gradlab's parent reads this file, and keeps the floats;
        # the files written for readers go through records.dumps (strict JSON)
        json.dump(done, fh, default=json_default)
    os.replace(tmp, result_path)
    os._exit(code)   # no atexit


def _read_result(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):
        return None


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


def _give_up(entry, kinds, rubric, seed, why):
    result = StudentResult(entry.student, entry.digest(), sorted(entry.files), notes=[why])
    for kind in kinds:
        result.kinds[kind] = failed_kind(kind, entry.student, seed, rubric.checks(kind),
                                         f"{kind}: not graded: {why}").to_dict()
    return result
