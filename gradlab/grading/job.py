"""One student's grading: `grade_submission(entry, kinds, rubric, seed, limits)`.

It writes the entry's files into a scratch folder (notebooks become the .py
source of the cells that define things), opens each file once to learn which
kinds it registers, and runs each kind's checks (the rubric's) through the run
plan every front end uses (gradlab.execution.plan.Plan, what `gradlab.check`
runs), on the implementation already opened for its file: a file is imported
once, not once per kind. Every kind of the assignment comes back with a
result: a kind nobody registered, or that a file which failed to import would
have registered, gets each of its checks as an error with the reason. A file
that fails to import costs only the kinds it would have registered.

Each file is opened in a worker process of its own (gradlab.execution.remote:
the student's code runs there, under the per-call and whole-submission time
limits, the memory and output limits); the process that calls this function
runs the checks and computes every verdict from the numbers the worker sends
back, and never imports the student's code. A worker that dies (os._exit, a
signal, a limit) costs the check that was running an error, and the next call
gets a fresh worker. `isolate=False` imports the files here (debugging only).
"""
import contextlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from gradlab.contract.errors import UsageError
from gradlab.contract.kinds import KINDS
from gradlab.contract.records import ERROR, CheckRecord, KindResult
from gradlab.execution import harness, loader
from gradlab.execution.limits import Limits as WorkerLimits
from gradlab.execution.plan import Plan
from gradlab.execution.runner import time_limit

DEFAULT_WALL = 300.0     # seconds for one whole submission


@dataclass(frozen=True)
class Limits:
    wall: float = DEFAULT_WALL                  # whole submission (the grader kills the job past it)
    call: float = harness.DEFAULT_TIMEOUT       # one call into the student's code
    memory_mb: int = 4096                       # address space of the student's worker
    output_mb: int = 16                         # what the student's code may print or write

    def per_call(self):
        return min(self.call, self.wall)

    def for_worker(self, deadline):
        """The worker's limits for a file opened now: the per-call limit, and what is
        left of the submission's wall time (every file of a student shares it)."""
        left = max(0.1, round(deadline - time.monotonic(), 1))
        return WorkerLimits(timeout=self.per_call(), wall=left, memory_mb=self.memory_mb,
                            output_mb=self.output_mb, workers=os.cpu_count() or 1)


@dataclass
class StudentResult:
    student: str
    digest: str
    files: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)    # kind -> KindResult dict (every kind of the assignment)
    notes: list = field(default_factory=list)    # notebook cells skipped, duplicate registrations, crashes
    seconds: float = 0.0                          # wall time, all processes included
    cpu_seconds: float = 0.0                      # CPU time of the process that graded it (when isolated)

    def to_dict(self):
        return {"student": self.student, "digest": self.digest, "files": self.files, "kinds": self.kinds,
                "notes": self.notes, "seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3)}

    @classmethod
    def from_dict(cls, d):
        return cls(d["student"], d["digest"], d.get("files", []), d["kinds"], d.get("notes", []),
                   d.get("seconds", 0.0), d.get("cpu_seconds", 0.0))


REGISTER_LITERAL = re.compile(r"""register\(\s*["'](\w+)["']""")


def grade_submission(entry, kinds, rubric, seed, limits=Limits(), *, workdir=None, isolate=True):
    """Grade one Entry; returns a StudentResult with a KindResult dict for every
    kind in `kinds`. The student's files run in workers (one per file, closed
    before this returns); `isolate=False` imports them in this process."""
    start = time.perf_counter()
    deadline = time.monotonic() + limits.wall
    own = workdir is None
    root = tempfile.mkdtemp(prefix="gradlab-grade-") if own else workdir
    opened = []
    try:
        folder = os.path.join(root, entry.student)
        files, named, notes, broken, notebooks = _materialise(entry, folder)
        result = StudentResult(entry.student, entry.digest(), sorted(entry.files), notes=notes)
        result.notes += [f"{path}: not graded, {why}" for path, why in entry.skipped]
        result.notes += [f"{path}: not copied beside the code, {why}" for path, why in entry.left_out]
        if not entry.files:
            broken["(submission)"] = _no_code(entry.others)
        refusals = {}
        found = _discover(files, broken, result.notes, limits, deadline, isolate, opened, refusals)
        for kind in kinds:
            kind_result = _grade_kind(kind, found, broken, named, rubric, seed, limits, result.student, isolate,
                                      result.notes, refusals)
            result.kinds[kind] = _as_submitted(kind_result.to_dict(), root, notebooks)
        result.notes = _as_submitted(result.notes, root, notebooks)
        result.seconds = time.perf_counter() - start
        return result
    finally:
        for implementation in opened:
            implementation.close()
        if own:
            shutil.rmtree(root, ignore_errors=True)


def _no_code(others):
    """Why a submission without a .py or .ipynb file is not graded, with what it holds."""
    if not others:
        return "the submission holds no .py or .ipynb file"
    archive = any(o.lower().endswith((".zip", ".tar", ".gz", ".tgz", ".7z", ".rar")) for o in others)
    return (f"the submission holds no .py or .ipynb file (it holds {', '.join(others[:5])}"
            f"{'...' if len(others) > 5 else ''}"
            f"{'; an archive is not unpacked: unpack it into the folder' if archive else ''})")


def _materialise(entry, folder):
    """Write the entry's files, its data files beside them (code that reads a file next to it finds it);
    notebooks become <stem>_ipynb.py. Returns
    ({path on disk: name shown}, {name: kinds its source registers by a literal},
    notes, {name shown: reason it cannot be imported}, [(generated file's name, notebook's name,
    origins of its lines)])."""
    from gradlab.grading.notebook import to_source
    for name, raw in entry.data.items():
        _write(os.path.join(folder, *name.split("/")), raw)
    files, named, notes, broken, notebooks = {}, {}, [], {}, []
    for name, raw in sorted(entry.files.items()):
        path = os.path.join(folder, *name.split("/"))
        if name.endswith(".ipynb"):
            try:
                source, skipped, origins = to_source(raw, name)
            except ValueError as e:      # not a notebook: said in the results, as a file that does not import is
                broken[name] = str(e)
                notes.append(broken[name])
                continue
            notes.extend(skipped)
            path = path[:-len(".ipynb")] + "_ipynb.py"
            notebooks.append((os.path.basename(path), os.path.basename(name), origins))
            raw = source.encode()
        named[name] = set(REGISTER_LITERAL.findall(raw.decode("utf-8", "replace")))
        _write(path, raw)
        files[path] = name
    return files, named, notes, broken, notebooks


def _write(path, raw):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(raw)


def _discover(files, broken, notes, limits, deadline, isolate, opened, refusals):
    """{kind: (opened implementation, name of the file that defines it)}: each file
    is opened once, in a worker of its own, and serves every kind it registers.
    Import failures (an exception, os._exit, a limit) go to `broken`; kinds a file that imports
    registers but that do not count (a misspelled kind, gradlab's own reference) to `refusals`."""
    from gradlab.grading.notebook import failures
    found = {}
    for path, name in files.items():
        if name in broken:
            continue
        try:
            if isolate:
                loaded = loader.open_implementation(path, isolate=True, limits=limits.for_worker(deadline))
            else:
                with time_limit(limits.per_call()):
                    loaded = loader.load(path)
        except UsageError as e:
            notes.extend(failures(path))
            message = str(e)
            if "registers nothing" in message:   # a helper module: fine
                continue
            broken[name] = message.replace(path, name)
            notes.append(f"{name}: {broken[name]}")
            continue
        notes.extend(failures(path))   # a notebook's kept statements that raised, skipped at import
        opened.append(loaded)
        for kind, why in getattr(loaded, "refused", {}).items():
            refusals.setdefault(kind, why.replace(path, name))
        for kind, registration in loaded.registrations.items():
            owner = files.get(_owner(registration, files), name)
            if kind in found and found[kind][1] != owner:
                notes.append(f"{kind} is registered by both {found[kind][1]} and {owner}; graded: {found[kind][1]}")
                continue
            found[kind] = (loaded, owner)
    return found


def _owner(registration, files):
    """The entry's file that defines the registered callable (a file that imports
    a sibling sees the sibling's registrations too): from the registration's
    "file.py:12" (what a worker reports), or the function's code in-process."""
    code = getattr(registration.target, "__code__", None) or getattr(
        getattr(registration.target, "__init__", None), "__code__", None)
    if code is not None:
        path = os.path.abspath(code.co_filename)
        return path if path in files else None
    base = str(registration.where).rsplit(":", 1)[0]
    matches = [p for p in files if os.path.basename(p) == base]
    return matches[0] if len(matches) == 1 else None


def _grade_kind(kind, found, broken, named, rubric, seed, limits, student, isolate, notes=(), refusals=None):
    """The kind's checks (the rubric's) through the run plan every front end uses,
    on the implementation already opened for its file."""
    checks = rubric.checks(kind)
    if kind not in found:
        return failed_kind(kind, student, seed, checks, _missing_reason(kind, found, broken, named, notes, refusals))
    loaded, name = found[kind]
    try:
        with contextlib.nullcontext() if isolate else time_limit(limits.per_call()):   # a worker keeps its own
            plan = Plan(loaded.name, kinds=kind, checks=checks, seed=seed, loaded=loaded)
            kind_result = plan.run_kind(kind)
    except UsageError as e:
        return failed_kind(kind, student, seed, checks, f"{kind}: {e}".replace(loaded.name, name))
    kind_result.impl = f"{student}/{name}"
    for record in kind_result.checks:   # the worker names `gradlab check`'s flag; grade's is --timeout
        record.message = record.message.replace("raise it with --wall-time", "raise it with --timeout")
    return kind_result


def _missing_reason(kind, found, broken, named, notes=(), refusals=None):
    """Why `kind` has no registration. A file that does not import is said first: it is the likely cause
    even when its source does not name the kind literally (register(KIND)), and a message cut short (a
    report's line, the summary's diagnosis) still shows it. A notebook cell skipped whole that registers it
    (a cell magic, invalid Python) is said the same way, and so is a registration that does not count (a
    misspelled kind: register("layer_norm")). A submission without code is said alone."""
    if "(submission)" in broken:
        return f"{kind}: not graded: {broken['(submission)']}"
    if refusals and kind in refusals:
        return f"{kind}: not graded: {refusals[kind]}"
    suspects = [n for n in broken if kind in named.get(n, ())]
    if suspects:
        return f"{kind}: not graded: {_import_failure(suspects[0], broken)}"
    skipped = [n for n in notes if f"register({kind!r})" in n and "not graded" in n]
    if skipped:
        return f"{kind}: not graded: {skipped[0]}"
    registered = ", ".join(sorted(found)) or "nothing"
    if broken:
        return (f"{kind}: not graded: {_import_failure(next(iter(broken)), broken)}; it may be the file that "
                f"registers {kind}: the files that import register {registered}")
    above = "the function" if KINDS[kind].form == "function" else "its build(cfg) factory"
    return (f"{kind}: not registered by any file of the submission (it registers {registered}); "
            f"add @gradlab.register({kind!r}) above {above}")


def _import_failure(name, broken):
    """The reason file `name` could not be imported, naming the file."""
    message = broken[name]
    return message if name in message or name.startswith("(") else f"{name}: {message}"


def failed_kind(kind, student, seed, checks, reason):
    """A KindResult whose every check is an error with `reason` (the kind is in
    every student's results, graded or not)."""
    result = KindResult(kind, student, seed, {})
    result.checks = [CheckRecord(c, ERROR, reason) for c in checks]
    return result


def _as_submitted(value, root, notebooks=()):
    """Every string of a result as the student knows their files: scratch paths -> paths within the
    submission, and a notebook's generated file and its lines -> the notebook's cells and lines."""
    from gradlab.grading.notebook import relocate
    prefix = root.rstrip("/") + "/"

    def said(value):
        if isinstance(value, str):
            value = value.replace(prefix, "")
            for generated, shown, origins in notebooks:
                if generated in value:
                    value = relocate(value, generated, shown, origins)
            return value
        if isinstance(value, dict):
            return {k: said(v) for k, v in value.items()}
        if isinstance(value, list):
            return [said(v) for v in value]
        return value
    return said(value)
