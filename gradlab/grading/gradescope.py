"""A StudentResult -> Gradescope's autograder results.json.

One test per KIND::CHECK of the rubric, in the rubric's order: its score and
max_score, status "passed" (full points) or "failed", the check's message and
how to replay it as output, and the rubric's visibility. The top-level score
is the sum of the tests'; gradlab's version, the seed and the resume key go in
`extra_data`, which Gradescope stores without showing
(https://gradescope-autograders.readthedocs.io/en/latest/specs/). Every output
is plain text (`output_format`): Gradescope renders the top-level one as HTML
by default, and the outputs quote the student's code and error messages.
"""
import shlex

from gradlab.execution.harness import DEFAULT_TIMEOUT

from gradlab.grading.rubric import credit, partial_words

STATUS = {True: "passed", False: "failed"}
TEXT = "text"     # Gradescope's output_format that renders nothing: a student's `<b>` or `<script>` shows as written


def results_json(student_result, rubric, seed, version, key=None, call_limit=None):
    tests = []
    for kind, rules in rubric.kinds.items():
        kind_result = student_result["kinds"][kind]
        records = {r["name"]: r for r in kind_result["checks"]}
        impl = kind_result.get("impl", "")
        for check, rule in rules.items():
            record = records.get(check) or {"name": check, "status": "error",
                                            "message": f"{kind}: {check} was not run (no record)"}
            score = credit(rule, record)
            tests.append({
                "name": f"{kind}::{check}",
                "score": score,
                "max_score": rule.points,
                "status": STATUS[score >= rule.points],
                "output": _output(record, kind, check, impl, seed, call_limit) + partial_words(rule, record, score),
                "output_format": TEXT,
                "visibility": rule.visibility,
                "tags": [kind, record["status"]],
            })
    total = round(sum(t["score"] for t in tests), 4)
    maximum = round(sum(t["max_score"] for t in tests), 4)
    lines = [f"gradlab {version}, seed {seed}: {total:g} / {maximum:g} points"]
    for kind in rubric.kinds:
        got = round(sum(t["score"] for t in tests if t["tags"][0] == kind), 4)
        of = round(sum(t["max_score"] for t in tests if t["tags"][0] == kind), 4)
        lines.append(f"  {kind}: {got:g} / {of:g}")
    lines += [f"note: {n}" for n in student_result.get("notes", [])]
    extra = {"gradlab_version": version, "seed": seed, "student": student_result["student"],
             "digest": student_result["digest"], "rubric": rubric.digest()}
    if key:
        extra["key"] = key
    return {
        "score": total,
        "execution_time": round(student_result.get("seconds", 0.0), 3),
        "output": "\n".join(lines),
        "output_format": TEXT,
        "visibility": rubric.visibility,
        "stdout_visibility": "hidden",
        "extra_data": extra,
        "tests": tests,
    }


def _output(record, kind, check, impl, seed, call_limit=None):
    text = record.get("message") or record["status"]
    if record["status"] == "skip" and not text.startswith("not run"):
        text = f"skipped, so no points: {text}"
    file = impl.split("/", 1)[1] if "/" in impl else ""
    if record["status"] in ("fail", "error") and file.endswith(".py"):
        # (the grade's own limit per call when it is not check's default: replayed without it, a call that ran
        # past --call-timeout 1 had 20 s and passed)
        limit = ["--timeout", f"{call_limit:g}"] if call_limit is not None and call_limit != DEFAULT_TIMEOUT else []
        text += "\nreplay: " + shlex.join(["gradlab", "check", kind, "--impl", file, "--checks", check, *limit,
                                          "--seed", str(seed)])
    return text
