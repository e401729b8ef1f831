"""`gradlab grade`: a class folder -> per-student results, graded N at a time.

Each student is one job (gradlab.grading.isolate.run_isolated: the student's
code in processes of its own, killed at the time limit), run by a local pool of
N threads that each wait on one job's process, or sent to a Dask distributed
cluster (`--scheduler ADDRESS`). A student's outputs are written as soon as
that student is graded; the class files after every student. The same command
again grades only the students whose submission, rubric, seed, gradlab version
or limits changed.
"""
import concurrent.futures
import os
import sys
import time

from gradlab import __version__
from gradlab.contract import options
from gradlab.contract.errors import UsageError
from gradlab.frontends.status import StatusLine
from gradlab.grading import outputs, rubric as rubric_mod
from gradlab.grading.isolate import run_isolated, start, stop_all
from gradlab.grading.job import Limits
from gradlab.grading.submissions import discover


def grade_class(submissions, out, kinds=None, rubric_path=None, seed=None, workers=None, limits=Limits(),
                scheduler=None, stream=None):
    """Grade every entry of `submissions` into `out`; returns {student: results.json dict}."""
    stream = stream or sys.stdout
    kinds = rubric_mod.parse_kinds(kinds) if kinds else None
    rubric = rubric_mod.load(rubric_path, kinds)
    ignored = []
    entries = discover(submissions, exclude=[out], ignored=ignored)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a folder")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create it ({e.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: cannot write there")
    seed = options.check_seed(seed)
    if seed is None:
        seed = outputs.read_seed(out)
    if seed is None:
        from gradlab.execution.runner import new_seed
        seed = new_seed()
    kinds = list(rubric.kinds)
    graded, records, todo = {}, {}, []
    for entry in entries:
        key = outputs.resume_key(entry, rubric, seed, __version__, limits)
        done = outputs.already_graded(out, entry.student, key)
        if done:
            graded[entry.student], records[entry.student] = done
        else:
            todo.append((entry, key))
    print(f"grading {len(todo)} of {len(entries)} submissions ({len(entries) - len(todo)} already graded) for "
          f"{', '.join(kinds)} ({rubric.max_score():g} points), seed {seed}, gradlab {__version__}", file=stream)
    if ignored:
        print(f"not submissions, skipped: {_ignored_words(ignored)}", file=stream)
    stale = _stale_results(out, {e.student for e in entries})
    if stale:
        print(f"warning: {out} holds the results of {len(stale)} student(s) no longer in {submissions} "
              f"({', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''}): left as they are, and not in grades.csv; "
              "remove their folders if they left the class", file=stream)
    progress = Progress(stream, len(todo))

    written = {}      # every student file this run wrote: path -> its sha256, verified at the end

    def finished(entry, key, student_result):
        report = student_result.pop("report_html", None)
        results = outputs.write_student(out, student_result, rubric, seed, __version__, key, report, written,
                                        limits.call)
        graded[entry.student], records[entry.student] = results, student_result
        outputs.write_class(out, graded, rubric, seed, __version__)
        progress.update(entry.student, results, rubric.max_score())

    if todo:
        start()
        if scheduler:
            _on_dask(scheduler, todo, kinds, rubric, seed, limits, finished)
        else:
            _locally(workers or os.cpu_count() or 1, todo, kinds, rubric, seed, limits, finished)
    progress.close()
    restored = outputs.verify(out, written, graded, records, rubric)
    if restored:
        shown = ", ".join(os.path.relpath(p, out) for p in restored[:5]) + (" ..." if len(restored) > 5 else "")
        print(f"warning: {len(restored)} result file(s) changed during grading and were written again from the "
              f"results ({shown}): a submission's code writes into {out}? (it runs as your user: grade in a "
              "container to keep it out)", file=stream)
    outputs.write_class(out, graded, rubric, seed, __version__)
    outputs.write_summary(out, graded, records, rubric, seed, __version__)
    print_table(stream, graded, rubric)
    written_files = [os.path.join(out, name) for name in ("grades.csv", "summary.html", "class.json")]   # (out/: one /)
    print(f"wrote {', '.join(written_files)} and a folder per student", file=stream)
    return graded


def _stale_results(out, students):
    """The student folders in `out` (a results.json inside) whose student is not in this class any more."""
    try:
        names = sorted(os.listdir(out))
    except OSError:
        return []
    return [n for n in names if n not in students and os.path.isfile(os.path.join(out, n, outputs.RESULTS))]


def _ignored_words(names):
    """The files of the class folder that are not submissions, with what to do where it is clear."""
    def why(name):
        low = name.lower()
        if low.endswith((".py", ".ipynb")):
            return f"{name} (rename it to {os.path.splitext(name)[0]}{os.path.splitext(low)[1]})"
        if low.endswith((".zip", ".tar", ".tar.gz", ".tgz")):
            return f"{name} (an archive: unpack it into a folder of its own)"
        if ".py." in low or ".ipynb." in low:
            return f"{name} (not a .py or .ipynb name)"
        return name
    shown = [why(n) for n in names[:12]]
    return ", ".join(shown) + (f" and {len(names) - 12} more" if len(names) > 12 else "")


def _locally(workers, todo, kinds, rubric, seed, limits, finished):
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_isolated, entry, kinds, rubric, seed, limits): (entry, key)
                   for entry, key in todo}
        try:
            for future in concurrent.futures.as_completed(futures):
                entry, key = futures[future]
                finished(entry, key, future.result())
        except BaseException:   # Ctrl-C, or a bug of ours: end the running jobs now, not at their time limit
            for f in futures:
                f.cancel()
            stop_all()
            raise


def _on_dask(address, todo, kinds, rubric, seed, limits, finished):
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise UsageError("--scheduler needs Dask: pip install 'gradlab[cluster]'") from None
    client = address if not isinstance(address, str) else None
    own = client is None
    if own:
        try:
            client = Client(address, timeout=10)
        except OSError as e:
            raise UsageError(f"--scheduler {address}: cannot connect ({e})") from None
    try:
        futures = {}
        for entry, key in todo:   # pure=False: a job is run, never taken from a cache
            future = client.submit(run_isolated, entry, kinds, rubric, seed, limits, pure=False,
                                   key=f"gradlab-grade-{entry.student}-{key}")
            futures[future] = (entry, key)
        for future in as_completed(futures):
            entry, key = futures[future]
            finished(entry, key, future.result())
    finally:
        if own:
            client.close()


class Progress:
    """One line rewritten in place on a terminal: students done, failures, ETA."""

    def __init__(self, stream, total):
        self.line, self.total = StatusLine(stream), total
        self.start = time.monotonic()
        self.done = self.below = 0

    def update(self, student, results, maximum):
        self.done += 1
        self.below += results["score"] < maximum - 1e-9
        if not self.line.enabled:
            return
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        self.line.show(f"[{self.done}/{self.total} graded, {self.below} below full marks, {elapsed:.0f} s, "
                       f"ETA {eta:.0f} s] {student}: {results['score']:g}/{maximum:g}")

    def close(self):
        self.line.clear()


def print_table(stream, graded, rubric):
    """The class's scores, a row per student, columns aligned whatever the points (partial credit: 86.67)."""
    kinds = list(rubric.kinds)
    maximum = rubric.max_score()
    names = sorted(graded)
    rows = []
    for name in names:
        per = outputs._per_kind(graded[name], kinds)
        rows.append([name, f"{_points(graded[name]['score'])}/{_points(maximum)}"] + [_points(per[k]) for k in kinds])
    head = ["student", "score"] + kinds
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print(f"{row[0]:<{widths[0]}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(row[1:], widths[1:])),
              file=stream)


def _points(value):
    """Points as a person reads them: at most two decimals (2/3 of a point: 0.67)."""
    return f"{round(float(value), 2):g}"
