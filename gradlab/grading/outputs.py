"""What `gradlab grade` writes, each file atomically (written aside, then renamed):

    OUT/<student>/results.json   Gradescope's format (gradlab.grading.gradescope)
    OUT/<student>/report.html    the HTML report of that student's checks
    OUT/<student>/gradlab.json   the full records, read back when a run resumes
    OUT/grades.csv               a row per student: score, max_score, a column per kind
    OUT/class.json               the same, with every test's score, the seed, the rubric
    OUT/summary.html             score histogram, pass rate per check, most frequent diagnoses

A student's files are complete once results.json is there (it is written
last, and carries the resume key): a run killed half-way loses nothing.
"""
import csv
import hashlib
import io
import json
import os
import re
from collections import defaultdict

from gradlab.contract.records import dumps
from gradlab.grading.gradescope import results_json

RESULTS, REPORT, RECORDS = "results.json", "report.html", "gradlab.json"


def atomic_write(path, data):
    """Write `data` (text, or bytes) aside, then rename it to `path`, creating its folder."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    if isinstance(data, bytes):
        with open(tmp, "wb") as fh:
            fh.write(data)
    else:
        # a student's folder or file name that is not UTF-8 (a Latin-1 zip) is written as \udce9, not a crash
        with open(tmp, "w", encoding="utf-8", errors="backslashreplace", newline="") as fh:
            fh.write(data)
    os.replace(tmp, path)


def resume_key(entry, rubric, seed, version, limits):
    """What a student's grade depends on: the submission, the rubric, the seed,
    gradlab's version and the limits it ran under."""
    parts = [entry.digest(), rubric.digest(), str(seed), version, repr(limits)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def already_graded(out, student, key):
    """(results, student result) from a previous run with the same key, else None."""
    folder = os.path.join(out, student)
    try:
        with open(os.path.join(folder, RESULTS)) as fh:
            results = json.load(fh)
        if results.get("extra_data", {}).get("key") != key:
            return None
        with open(os.path.join(folder, RECORDS)) as fh:
            return results, json.load(fh)
    except (OSError, ValueError):
        return None


def write_student(out, student_result, rubric, seed, version, key, report_html=None, written=None, call_limit=None):
    """A student's three files; `written` (a dict) gets {path: sha256 of what was written} for verify().
    call_limit: the grade's seconds per call, for the replay lines."""
    folder = os.path.join(out, student_result["student"])
    results = results_json(student_result, rubric, seed, version, key, call_limit)
    if report_html is None:
        report_html = render_student_report(student_result, rubric)
    files = [(REPORT, report_html), (RECORDS, dumps(student_result)),
             (RESULTS, dumps(results, indent=1))]          # results.json last: it marks "done"
    for name, text in files:
        atomic_write(os.path.join(folder, name), text)
        if written is not None:
            written[os.path.join(folder, name)] = _sha(text)
    return results


def _sha(text):
    data = text.encode("utf-8", errors="backslashreplace") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def verify(out, written, graded, records, rubric):
    """After grading: every student file this run wrote that is no longer what it wrote (a submission's code,
    running as the same user, can write into OUT) is written again from the results in memory. Returns the
    paths put back."""
    restored = []
    for path, sha in written.items():
        try:
            with open(path, "rb") as fh:
                same = hashlib.sha256(fh.read()).hexdigest() == sha
        except OSError:
            same = False
        if same:
            continue
        student = os.path.basename(os.path.dirname(path))
        name = os.path.basename(path)
        if student not in graded:
            continue
        text = {RESULTS: lambda: dumps(graded[student], indent=1),
                RECORDS: lambda: dumps(records[student]),
                REPORT: lambda: render_student_report(records[student], rubric)}[name]()
        atomic_write(path, text)
        restored.append(path)
    return restored


FIGURES = ("heatmap", "curve")


def render_student_report(student_result, rubric):
    """The student's HTML report. Figures are drawn for the checks that did not
    pass; a passing check (collapsed in the report) keeps its message and tables.
    Drawing every figure cost 18 matplotlib figures, 2-8 s, per student: more
    than grading them."""
    from gradlab.frontends.report import render
    kinds = [_lean(student_result["kinds"][k]) for k in rubric.kinds]
    return render(kinds, student=student_result["student"], notes=student_result.get("notes", ()))


def _lean(kind_result):
    checks = []
    for record in kind_result["checks"]:
        details = record.get("details") or {}
        if record["status"] == "pass" and details.get("views"):
            details = {**details, "views": [v for v in details["views"] if v.get("type") not in FIGURES]}
            record = {**record, "details": details}
        checks.append(record)
    return {**kind_result, "checks": checks}


def write_class(out, graded, rubric, seed, version):
    """grades.csv and class.json from {student: results} (students in name order)."""
    kinds = list(rubric.kinds)
    maximum = rubric.max_score()
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["student", "score", "max_score"] + kinds)
    students = {}
    for student in sorted(graded):
        results = graded[student]
        per_kind = _per_kind(results, kinds)
        writer.writerow([_text_cell(student), _num(results["score"]), _num(maximum)]
                        + [_num(per_kind[k]) for k in kinds])
        students[student] = {"score": results["score"], "max_score": maximum,
                             "kinds": per_kind, "tests": {t["name"]: t["score"] for t in results["tests"]},
                             "execution_time": results.get("execution_time")}
    atomic_write(os.path.join(out, "grades.csv"), buf.getvalue())
    atomic_write(os.path.join(out, "class.json"), dumps(
        {"gradlab_version": version, "seed": seed, "kinds": kinds, "max_score": maximum,
         "rubric": rubric.to_dict(), "students": students}, indent=1))


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _text_cell(text):
    """A text cell a spreadsheet shows as text: a student named '=HYPERLINK(...)' or '+1+2' (a folder name
    the teacher does not choose) would be a formula when grades.csv is opened. Quoted with a leading "'", as
    OWASP's rule for CSV injection says."""
    return "'" + text if text.startswith(FORMULA_START) else text


def _per_kind(results, kinds):
    got = {k: 0.0 for k in kinds}
    for t in results["tests"]:
        kind = t["name"].split("::", 1)[0]
        if kind in got:
            got[kind] += t["score"]
    return {k: round(v, 4) for k, v in got.items()}


def _num(value):
    return f"{value:g}"


def read_seed(out):
    """The seed an earlier run of this OUT folder used (so the same command resumes)."""
    try:
        with open(os.path.join(out, "class.json")) as fh:
            return int(json.load(fh)["seed"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ---- summary.html ------------------------------------------------------------

def diagnosis_key(message):
    """A message's first clause with its numbers, file positions and
    parentheses blurred, so the same bug in two submissions reads the same."""
    line = (message or "").splitlines()[0] if message else ""
    line = line.split("; ")[0]                       # the finding, not the advice after it
    line = re.sub(r"\([^()]*\)", "(...)", line)      # what differs per student: indices, the kinds registered
    line = re.sub(r"[\w./-]+\.(py|ipynb):\d+", "FILE:LINE", line)
    # numbers, not the digits of a name: 'w1', blocks.0.ln1 stay as they are
    line = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w])", "#", line)
    return line[:240]


def summary_context(graded, records, rubric, seed, version):
    from gradlab.frontends.report.render import shortened      # (one way to cut a line: the report's)
    maxima = rubric.max_score()
    scores = sorted(r["score"] for r in graded.values())
    bins = 10
    counts = [0] * bins
    for s in scores:
        counts[min(bins - 1, int(bins * s / maxima)) if maxima else 0] += 1
    top = max(counts) if counts else 1
    histogram = [{"label": f"{i * maxima / bins:g}-{(i + 1) * maxima / bins:g}", "count": c,
                  "height": round(100 * c / top) if top else 0} for i, c in enumerate(counts)]
    names = [t["name"] for t in next(iter(graded.values()))["tests"]] if graded else []
    rates = []
    for name in names:
        passed = sum(1 for r in graded.values() for t in r["tests"] if t["name"] == name and t["status"] == "passed")
        rates.append({"name": name, "passed": passed, "rate": round(100 * passed / len(graded))})
    # one diagnosis = one (kind, blurred message): the students who share it, and the checks it failed. A kind
    # not graded ("layernorm: not graded: importing main.py raised ...") says the submission's reason, the same for
    # every kind it costs: one diagnosis for all of them, not one row per kind with the student in each
    students, checks, example, costs = defaultdict(set), defaultdict(set), {}, defaultdict(set)
    for student, result in sorted(records.items()):
        for kind in rubric.kinds:
            for r in result["kinds"][kind]["checks"]:
                if r["status"] in ("fail", "error") and r["name"] in rubric.kinds[kind]:
                    whole = r["message"].startswith(f"{kind}: not graded: ")
                    text = r["message"][len(kind) + 2:] if whole else r["message"]
                    key = (None if whole else kind, diagnosis_key(text))
                    students[key].add(student)
                    checks[key].add(r["name"])
                    costs[key].add(kind)
                    example.setdefault(key, text if whole else r["message"])
    diagnoses = []
    for (kind, text), who in students.items():
        if kind is None:
            lost = [k for k in rubric.kinds if k in costs[(kind, text)]]
            diagnoses.append({"test": f"{', '.join(lost)} (not graded)", "count": len(who), "students": sorted(who),
                              "text": shortened(example[(kind, text)].split("\n")[0], 300)})
            continue
        names = [c for c in rubric.kinds[kind] if c in checks[(kind, text)]]
        test = (f"{kind} (all {len(names)} checks)" if len(names) == len(rubric.kinds[kind]) and len(names) > 1
                else ", ".join(f"{kind}::{c}" for c in names))
        # shown: one student's own first line, cut at a clause (the key groups them, and keeps only the finding:
        # the cause, "the transpose of the right one", comes after it)
        shown = shortened(example[(kind, text)].split("\n")[0], 300)
        diagnoses.append({"test": test, "text": shown, "count": len(who), "students": sorted(who)})
    diagnoses.sort(key=lambda d: (-d["count"], d["test"], d["text"]))
    diagnoses = diagnoses[:25]
    mean = sum(scores) / len(scores) if scores else 0.0
    return {"version": version, "seed": seed, "n": len(graded), "max_score": maxima, "histogram": histogram,
            "rates": rates, "diagnoses": diagnoses, "mean": mean,
            "full": sum(1 for s in scores if s >= maxima - 1e-9)}


SUMMARY = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="gradlab {{ version }}">
<title>gradlab class summary</title>
<style>
 body { font: 15px/1.5 -apple-system, "Segoe UI", Arial, sans-serif; color: #1f2328; margin: 0; }
 main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 60px; }
 h2 { font-size: 19px; margin: 32px 0 10px; border-bottom: 1px solid #d0d7de; }
 table { border-collapse: collapse; } td, th { padding: 3px 10px; border-bottom: 1px solid #eaeef2; text-align: left; }
 .hist { display: flex; align-items: flex-end; gap: 6px; height: 160px; margin: 10px 0 4px; }
 .bar { width: 60px; background: #0969da; color: #fff; text-align: center; font-size: 12px; min-height: 1px; }
 .labels { display: flex; gap: 6px; font-size: 11px; color: #57606a; } .labels span { width: 60px; text-align: center; }
 .rate { display: inline-block; height: 10px; background: #1a7f37; vertical-align: middle; }
 code { font: 13px ui-monospace, Menlo, Consolas, monospace; }
</style></head><body><main>
<h1>Class summary</h1>
<p>{{ n }} student{{ "" if n == 1 else "s" }} graded by gradlab {{ version }} with seed {{ seed }}; mean {{ "%.4g" % mean }} of
{{ "%g" % max_score }} points; {{ full }} with full marks.</p>
<h2>Scores</h2>
<div class="hist">{% for b in histogram %}<div class="bar" style="height: {{ b.height }}%"
 title="{{ b.count }} students">{{ b.count if b.count }}</div>{% endfor %}</div>
<div class="labels">{% for b in histogram %}<span>{{ b.label }}</span>{% endfor %}</div>
<h2>Pass rate per check</h2>
<table><tr><th>test</th><th>passed</th><th></th></tr>
{% for r in rates %}<tr><td><code>{{ r.name }}</code></td><td>{{ r.passed }} / {{ n }} ({{ r.rate }}%)</td>
<td><span class="rate" style="width: {{ r.rate }}px"></span></td></tr>{% endfor %}</table>
<h2>Most frequent diagnoses</h2>
{% if not diagnoses %}<p>No check failed.</p>{% endif %}
<table>{% for d in diagnoses %}<tr><td>{{ d.count }}</td><td><code>{{ d.test }}</code><br>{{ d.text }}<br>
<small>{{ d.students | join(", ") }}</small></td></tr>{% endfor %}</table>
</main></body></html>
"""


def write_summary(out, graded, records, rubric, seed, version):
    from jinja2 import Environment
    html = Environment(autoescape=True).from_string(SUMMARY).render(
        **summary_context(graded, records, rubric, seed, version))
    atomic_write(os.path.join(out, "summary.html"), html)
