"""`gradlab grade` on a class of our own, built from the zoo in a tmp folder:
correct, buggy, missing-kind, syntax-error, notebook and hostile students
(an endless loop that swallows the timeout, os._exit in backward and at import).
Each student's scores, the Gradescope format, resume, the Dask path, the
autograder zip and the rubric's one-line errors."""
import csv
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import zipfile

import pytest

import gradlab
from gradlab.contract.errors import UsageError

from gradlab_test_support import nan_adam, strict_json

from gradlab.frontends.cli import main
from gradlab.grading import rubric as rubric_mod
from gradlab.grading.job import Limits
from gradlab.grading.run import grade_class

ZOO = pathlib.Path(__file__).parent / "zoo"
EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"
KINDS = "layernorm,attention"
SEED = 5
TIMEOUT = 20.0   # frank costs this much wall time (asleep); less fails busy students on a loaded machine

MODULES = (EXAMPLES / "student_modules.py").read_text()      # a correct layernorm (and ffn, linear, ...)
ATTENTION = (ZOO / "grad_ok_attention.py").read_text()        # a correct attention
BAD_LAYERNORM = (ZOO / "grad_bad_layernorm_no_gamma.py").read_text()
HANG = ATTENTION + '''
import time


def _forward(self, x):          # an endless loop that swallows every exception, the timeout's too
    while True:
        try:
            time.sleep(0.2)
        except BaseException:
            pass


StudentAttention.forward = _forward
'''
EXIT_IN_BACKWARD = MODULES + "\nimport os\nLayerNorm.backward = lambda self, g: os._exit(0)\n"


def notebook(source):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# LayerNorm by hand"),
                nbformat.v4.new_code_cell("%matplotlib inline\n!pip install numpy\nimport numpy as np"),
                nbformat.v4.new_code_cell(source),
                nbformat.v4.new_code_cell("losses = []\nfor epoch in range(10**9):\n    losses.append(epoch)"),
                nbformat.v4.new_code_cell("%%time\nwhile True: pass"),
                nbformat.v4.new_code_cell("x = ((\n"),
                nbformat.v4.new_code_cell("import urllib.request\n"
                                          "data = urllib.request.urlopen('http://example.invalid')\nD = 64")]
    return nbformat.writes(nb)


CLASS = {
    "ada": {"modules.py": MODULES, "attention.py": ATTENTION},           # everything right
    "bob.py": BAD_LAYERNORM,                                              # a bug, and no attention at all
    "carol": {"attention.py": ATTENTION,                                  # one of two files does not parse
              "layernorm.py": 'import gradlab\n@gradlab.register("layernorm")\ndef build(cfg):\n    return 1 +\n'},
    "dave": {"a_exit.py": "import os\nos._exit(3)\n", "ln.py": MODULES},  # a file that ends the process at import
    "erin.ipynb": notebook(MODULES),                                      # a notebook with a training loop
    "frank": {"modules.py": MODULES, "attention.py": HANG},              # an endless loop
    "gina": {"modules.py": EXIT_IN_BACKWARD, "attention.py": ATTENTION},  # os._exit in backward
}

LAYERNORM_POINTS, ATTENTION_POINTS = 10, 12   # one point per applicable check (the default rubric)


def make_class(root, students=None):
    root.mkdir(parents=True, exist_ok=True)
    for name, content in CLASS.items():
        if students and name.split(".")[0] not in students:
            continue
        if isinstance(content, dict):
            for file, text in content.items():
                (root / name).mkdir(exist_ok=True)
                (root / name / file).write_text(text)
        else:
            (root / name).write_text(content)
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class, graded once per session: under xdist the first worker grades it
    and the others, waiting on a lock, resume it (nothing left to grade)."""
    import fcntl
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "gradlab-grade-class"
    root.mkdir(exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subs = root / "class"
        if not subs.exists():
            make_class(subs)
        results = grade_class(str(subs), str(root / "out"), kinds=KINDS, seed=SEED, workers=4,
                              limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    return subs, root / "out", results


def per_kind(results):
    got = {}
    for t in results["tests"]:
        kind = t["name"].split("::")[0]
        got[kind] = got.get(kind, 0) + t["score"]
    return got


def failing(results, kind):
    return {t["name"].split("::")[1]: t["output"] for t in results["tests"]
            if t["name"].startswith(kind + "::") and t["status"] == "failed"}


def test_every_student_has_every_kind_and_the_right_scores(graded):
    _, out, results = graded
    assert sorted(results) == ["ada", "bob", "carol", "dave", "erin", "frank", "gina"]
    scores = {s: per_kind(r) for s, r in results.items()}
    for s, r in results.items():
        assert {t["name"].split("::")[0] for t in r["tests"]} == {"layernorm", "attention"}, s
        assert r["score"] == pytest.approx(sum(scores[s].values()))
    assert scores["ada"] == {"layernorm": LAYERNORM_POINTS, "attention": ATTENTION_POINTS}
    # bob: the input gradient forgets gamma (gradient fails, the rest passes); attention never registered
    assert scores["bob"] == {"layernorm": LAYERNORM_POINTS - 1, "attention": 0}
    assert set(failing(results["bob"], "layernorm")) == {"gradient"}
    assert all("not registered by any file" in o and "@gradlab.register('attention')" in o
               for o in failing(results["bob"], "attention").values())
    # carol: the broken file costs only the kind it registers
    assert scores["carol"] == {"layernorm": 0, "attention": ATTENTION_POINTS}
    assert all("layernorm.py:4: syntax error" in o for o in failing(results["carol"], "layernorm").values())
    # dave: the file that exits at import costs nothing else
    assert scores["dave"] == {"layernorm": LAYERNORM_POINTS, "attention": 0}
    assert "a_exit.py: importing a_exit.py ended the worker process (exit status 3" in results["dave"]["output"]
    assert all(o.startswith("attention: not graded: importing a_exit.py ended the worker process")
               for o in failing(results["dave"], "attention").values())
    # erin's notebook: definitions graded, the training loop, the download and the magics skipped
    assert scores["erin"] == {"layernorm": LAYERNORM_POINTS, "attention": 0}
    assert "erin.ipynb: code cell 3 line 2: skipped `for epoch in range(10**9):`" in results["erin"]["output"]
    assert "erin.ipynb: code cell 4: skipped (cell magic %%time)" in results["erin"]["output"]
    assert "erin.ipynb: code cell 5 line 1: skipped (not valid Python" in results["erin"]["output"]
    assert "skipped `data = urllib.request.urlopen(" in results["erin"]["output"]
    # frank: the endless loop costs him attention (and the time limit), not his layernorm
    assert scores["frank"] == {"layernorm": LAYERNORM_POINTS, "attention": 0}
    assert f"ran past its wall-time limit of {TIMEOUT:g} s" in failing(results["frank"], "attention")["smoke"]
    assert results["frank"]["execution_time"] < TIMEOUT + 5
    # gina: os._exit in layernorm's backward ends that kind; a fresh process grades attention
    assert scores["gina"] == {"layernorm": 0, "attention": ATTENTION_POINTS}
    assert "backward ended the worker process (exit status 0" in failing(results["gina"], "layernorm")["smoke"]


def test_each_students_workers_are_forked_from_the_judging_job(graded):
    """No interpreter start per file: every worker (hostile students' restarts too) is a fork of the job."""
    _, out, results = graded
    for student in results:
        starts = json.loads((out / student / "gradlab.json").read_text())["worker_starts"]
        assert starts["forked"] >= 1 and starts["spawned"] == 0, (student, starts)


SCHEMA = {
    "type": "object",
    "required": ["score", "output_format", "tests"],   # output text, not HTML: it quotes the student's code
    "properties": {
        "score": {"type": "number"}, "execution_time": {"type": "number"}, "output": {"type": "string"},
        "output_format": {"const": "text"},
        "visibility": {"enum": list(rubric_mod.VISIBILITIES)},
        "stdout_visibility": {"enum": list(rubric_mod.VISIBILITIES)},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "score", "max_score", "status", "output", "output_format", "visibility"],
            "properties": {"name": {"type": "string", "pattern": "^[a-z_]+::[a-z_]+$"},
                           "score": {"type": "number", "minimum": 0}, "max_score": {"type": "number"},
                           "status": {"enum": ["passed", "failed"]}, "output": {"type": "string"},
                           "output_format": {"const": "text"},
                           "visibility": {"enum": list(rubric_mod.VISIBILITIES)},
                           "tags": {"type": "array", "items": {"type": "string"}}},
            "additionalProperties": False}},
    },
    "additionalProperties": False,   # only keys Gradescope's specification names
}


def test_results_json_follows_gradescopes_format(graded):
    import jsonschema
    _, out, results = graded
    for student in results:
        data = json.loads((out / student / "results.json").read_text())
        jsonschema.validate(data, SCHEMA)
        assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
        assert all(t["score"] <= t["max_score"] for t in data["tests"])
        assert all((t["status"] == "passed") == (t["score"] == t["max_score"]) for t in data["tests"])
        assert data["extra_data"]["seed"] == SEED and data["extra_data"]["gradlab_version"]
        assert f"seed {SEED}" in data["output"]
        assert f"<title>gradlab report for {student}</title>" in (out / student / "report.html").read_text()


def test_class_files(graded):
    _, out, results = graded
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [r["student"] for r in rows] == sorted(results)
    for r in rows:
        assert float(r["score"]) == pytest.approx(results[r["student"]]["score"])
        assert float(r["max_score"]) == LAYERNORM_POINTS + ATTENTION_POINTS
        assert float(r["layernorm"]) + float(r["attention"]) == pytest.approx(float(r["score"]))
    data = json.loads((out / "class.json").read_text())
    assert data["seed"] == SEED and set(data["students"]) == set(results)
    summary = (out / "summary.html").read_text()
    assert "layernorm::gradient" in summary and "Most frequent diagnoses" in summary
    assert "not registered by any file" in summary and "bob, carol, dave, erin" not in summary
    assert "bob, erin" in summary   # the students who share "attention not registered"
    # dave's attention is not said to be unregistered: his file that does not import is the likely cause
    assert "attention (not graded)" in summary and "not graded: importing a_exit.py ended the worker process" in summary
    # a diagnosis shows a student's own line with its cause, not the blurred first clause alone ("gradient of 'w#'")
    assert "&#39;w#&#39;" not in summary and "'w#'" not in summary


def test_a_diagnosis_key_blurs_numbers_not_the_digits_of_names():
    from gradlab.grading.outputs import diagnosis_key
    assert diagnosis_key("ffn: gradient of 'w1' in blocks.0.ln1 is 1.5e-3 off at 12; add it") == \
        "ffn: gradient of 'w1' in blocks.0.ln1 is # off at #"


def test_resume_grades_only_what_changed(graded, tmp_path):
    import shutil
    subs, shared, results = graded
    out = tmp_path / "out"
    shutil.copytree(shared, out)               # the shared folder stays as other tests read it
    (out / "bob" / "results.json").unlink()   # as if the grader had been killed while grading bob
    log = tmp_path / "log.txt"
    with open(log, "w") as stream:
        again = grade_class(str(subs), str(out), kinds=KINDS, workers=2, limits=Limits(wall=TIMEOUT), stream=stream)
    assert "grading 1 of 7 submissions (6 already graded)" in log.read_text()   # the seed came from class.json
    assert again["bob"]["score"] == results["bob"]["score"]
    assert {s: r["score"] for s, r in again.items()} == {s: r["score"] for s, r in results.items()}


def test_the_cli_exit_codes_and_a_wrong_rubric_in_one_line(tmp_path, capsys):
    subs = make_class(tmp_path / "class", ["ada"])
    bad = tmp_path / "rubric.toml"
    for text, words in [
        ("[attention]\npoints = 10\n[atention]\n", "unknown key 'atention' (did you mean 'attention'?)"),
        ("[attention.checks]\ngradiant = 3\n", "attention.checks.gradiant: not a check of attention"),
        ("[attention.checks.gradient]\npoints = 3\nvisibility = 'secret'\n", "not a Gradescope visibility"),
        ("[attention.checks.gradient]\npoints = 3\npartial = true\n", "partial credit is for checks"),
        ("[attention]\npoints = 2\n[attention.checks]\ngradient = 3\n", "attention.points is 2 but"),
        ("[attention\n", "not valid TOML"),
        (b"\xff\xfe[attention]\n", "not UTF-8 text"),      # a traceback (UnicodeDecodeError) before
    ]:
        bad.write_bytes(text) if isinstance(text, bytes) else bad.write_text(text)
        code = main(["grade", str(subs), "--rubric", str(bad), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, (text, err)
    code = main(["grade", str(subs), "--rubric", "/dev/zero", "--out", str(tmp_path / "o")])   # it hung, reading
    err = capsys.readouterr().err
    assert code == 2 and "not a regular file" in err and len(err.strip().splitlines()) == 1, err
    assert main(["grade", str(tmp_path / "nope"), "--kinds", "attention", "--out", str(tmp_path / "o")]) == 2
    assert main(["grade", str(subs), "--kinds", "atention", "--out", str(tmp_path / "o")]) == 2
    assert main(["grade", str(subs), "--out", str(tmp_path / "o")]) == 2
    capsys.readouterr()
    # grades written into the submissions folder would be read as students next time; a malformed scheduler
    # address ended in a traceback (ValueError: missing port number)
    for argv, words in [(["--out", str(subs)], "is inside the submissions folder"),
                        (["--out", str(subs / "grades")], "is inside the submissions folder"),
                        (["--out", str(tmp_path / "o"), "--scheduler", "bogus"], "is not a scheduler address"),
                        (["--out", str(tmp_path / "o"), "--scheduler", "tcp://host:port"], "tcp://HOST:PORT")]:
        assert main(["grade", str(subs), "--kinds", "attention", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
    assert not (subs / "grades").exists() and not (tmp_path / "o").exists()


def test_links_and_special_files_in_a_class_folder_are_not_read(tmp_path):
    # followed, a link graded a classmate's file (or gradlab's own reference) as this student's, /dev/zero ran
    # the grader out of memory, and a FIFO blocked it forever before anyone was graded
    from gradlab.grading.submissions import discover
    subs = tmp_path / "class"
    (subs / "bob").mkdir(parents=True)
    (subs / "bob" / "b.py").write_text(MODULES)
    (subs / "alice").mkdir()
    (subs / "alice" / "mine.py").symlink_to(subs / "bob" / "b.py")
    (subs / "alice" / "lib").symlink_to(subs / "bob", target_is_directory=True)
    (subs / "alice" / "own.py").write_text("x = 1\n")
    (subs / "carol.py").symlink_to(subs / "bob" / "b.py")
    (subs / "dave").mkdir()
    os.mkfifo(subs / "dave" / "pipe.py")
    (subs / "erin.py").symlink_to("/dev/zero")
    ignored = []
    entries = {e.student: e for e in discover(str(subs), ignored=ignored)}
    assert sorted(entries) == ["alice", "bob", "dave"]
    assert list(entries["alice"].files) == ["own.py"]
    assert sorted(entries["alice"].skipped) == [("lib", "a symbolic link to a folder: not followed"),
                                                ("mine.py", "a symbolic link: not followed")]
    assert entries["dave"].files == {} and entries["dave"].skipped == (("pipe.py", "not a regular file"),)
    assert sorted(ignored) == ["carol.py (a symbolic link: not followed)", "erin.py (a symbolic link: not followed)"]
    grade_class(str(subs), str(tmp_path / "out"), kinds="layernorm", seed=SEED, workers=1, stream=io.StringIO())
    notes = json.loads((tmp_path / "out" / "alice" / "gradlab.json").read_text())["notes"]
    assert "mine.py: not graded, a symbolic link: not followed" in notes


def test_rubric_points_visibility_and_partial_credit(tmp_path):
    path = tmp_path / "rubric.toml"
    path.write_text('visibility = "after_due_date"\n[lm]\npoints = 20\n[lm.checks]\ngradient = 5\nfinite = 0\n'
                    '[lm.checks.overfit]\npoints = 3\npartial = true\nvisibility = "hidden"\n')
    r = rubric_mod.load(str(path))
    rules = r.kinds["lm"]
    assert "finite" not in rules and rules["gradient"].points == 5 and rules["overfit"].partial
    assert r.max_score() == pytest.approx(20)
    assert rules["overfit"].visibility == "hidden" and rules["smoke"].visibility == "after_due_date"
    overfit = {"name": "overfit", "status": "fail",
               "metrics": {"reference_final_loss": 1.0, "reference_drop": 2.0, "limit": 2.0, "lowest_loss": 2.5}}
    assert rubric_mod.credit(rules["overfit"], overfit) == pytest.approx(1.5)   # half way to the bar
    # the numbers behind the points are in the student's output (the check's message does not show them)
    words = rubric_mod.partial_words(rules["overfit"], overfit, 1.5)
    assert "partial credit: 1.5 of 3 points: your lowest loss was 2.5, 50% of the way from the starting loss 3 " \
           "to the bar 2" in words
    assert rubric_mod.partial_words(rules["gradient"], {"name": "gradient", "status": "fail"}, 0) == ""
    assert rubric_mod.credit(rules["gradient"], {"name": "gradient", "status": "fail"}) == 0
    assert rubric_mod.credit(rules["gradient"], {"name": "gradient", "status": "skip"}) == 0


def test_a_file_that_does_not_import_is_said_first_and_once(tmp_path):
    # carol's only file had a syntax error and registered through a name (register(KIND)): every test said
    # "not registered ... add @gradlab.register('attention') ...; note: carol.py:1: syntax error", the cause
    # last, 24 times in her report (cut off before it), and summary.html showed only "not registered"
    (tmp_path / "class").mkdir()
    source = ATTENTION.replace('@gradlab.register("attention")', 'KIND = "attention"\n@gradlab.register(KIND)')
    assert "register(KIND)" in source
    (tmp_path / "class" / "carol.py").write_text("import numpy as np,\n" + source)
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="attention", seed=SEED,
                          workers=1, limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    outputs = failing(results["carol"], "attention").values()
    assert outputs and all(o.startswith("attention: not graded: carol.py:1: syntax error") for o in outputs)
    report = (tmp_path / "out" / "carol" / "report.html").read_text()
    verdict = report[report.index('id="what-is-wrong"'):report.index("</ul>", report.index('id="what-is-wrong"'))]
    assert verdict.count("<li>") == 1 and "carol.py:1: syntax error" in verdict
    failures = report[report.index('id="failures"'):report.index('id="summary"')]
    assert failures.count('<pre class="message">') == 1
    for check in ("smoke", "gradient", "overfit"):      # every check's chip still leads to the reason
        assert f'id="k0-attention-{check}"' in failures
    assert "not graded: carol.py:1: syntax error" in (tmp_path / "out" / "summary.html").read_text()




def test_every_file_grade_writes_is_strict_json_with_nan_as_a_string(tmp_path):
    # an optimizer that writes NaN into its parameters gave bare NaN tokens in gradlab.json, which JSON.parse rejects
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "nina.py").write_text(nan_adam())
    grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="adam", seed=SEED, workers=1,
                limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    texts = {name: (tmp_path / "out" / name).read_text()
             for name in ("nina/gradlab.json", "nina/results.json", "class.json")}
    for text in texts.values():
        strict_json(text)
    assert '"NaN"' in texts["nina/gradlab.json"]


def test_dask_scheduler_gives_the_same_scores(graded, tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (the [cluster] extra)")
    _, _, results = graded
    subs = make_class(tmp_path / "class", ["ada", "bob"])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        got = grade_class(str(subs), str(tmp_path / "out"), kinds=KINDS, seed=SEED, limits=Limits(wall=TIMEOUT),
                          scheduler=cluster.scheduler_address, stream=open(os.devnull, "w"))
    for student in ("ada", "bob"):   # same seed, same scores: other workers, another order, another machine
        assert [(t["name"], t["score"]) for t in got[student]["tests"]] == \
            [(t["name"], t["score"]) for t in results[student]["tests"]]


def test_autograder_zip_grades_a_fake_root(graded, tmp_path):
    _, _, results = graded
    zip_path = tmp_path / "autograder.zip"
    assert main(["autograder", "--kinds", KINDS, "--seed", str(SEED), "--out", str(zip_path)]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as zf:
        assert {"setup.sh", "run_autograder", "requirements.txt"} <= set(zf.namelist())
        zf.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "modules.py").write_text(BAD_LAYERNORM)   # bob's submission
    # README's recipe, as written, where the `python3` on PATH has no gradlab (without GRADLAB_PYTHON it failed)
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    recipe = re.search(r"`(GRADLAB_AUTOGRADER_ROOT=[^`]*run_autograder)`", readme).group(1)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").write_text("#!/bin/sh\necho 'No module named gradlab' >&2\nexit 1\n")
    (tmp_path / "bin" / "python3").chmod(0o755)
    command = re.sub(r"\bROOT\b", str(root), recipe).replace("=PYTHON", f"={sys.executable}")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["score"] == results["bob"]["score"]
    assert [t["name"] for t in data["tests"]] == [t["name"] for t in results["bob"]["tests"]]


def test_autograder_ships_a_wheel_given_as_requirement_and_refuses_one_that_is_not_there(tmp_path, capsys,
                                                                                         monkeypatch):
    # --requirement ./dist/gradlab-0.1.0-py3-none-any.whl was written into requirements.txt, the file left out
    # of the zip: setup.sh failed on Gradescope, and only there
    monkeypatch.chdir(tmp_path)
    name = "gradlab-0.1.0-py3-none-any.whl"
    argv = ["autograder", "--kinds", "layernorm", "--out", "autograder.zip", "--requirement", f"./dist/{name}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--requirement ./dist/{name}: no such file" in err and len(err.strip().splitlines()) == 1, err
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / name).write_bytes(b"the wheel's bytes")
    assert main(argv) == 0 and "warning" not in capsys.readouterr().out   # (a requirement given: nothing to warn)
    source = tmp_path / "source"
    with zipfile.ZipFile("autograder.zip") as zf:
        zf.extractall(source)
    assert (source / "packages" / name).read_bytes() == b"the wheel's bytes"
    assert (source / "requirements.txt").read_text().splitlines()[0] == f"./packages/{name}"
    # setup.sh, run from elsewhere as Gradescope may, runs pip from its own folder, where that path leads
    (tmp_path / "bin").mkdir()
    for tool, body in (("apt-get", "exit 0"), ("python3", 'echo "$PWD $*" > "$LOG"; test -f packages/' + name)):
        (tmp_path / "bin" / tool).write_text(f"#!/bin/sh\n{body}\n")
        (tmp_path / "bin" / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}", "LOG": str(tmp_path / "log")}
    done = subprocess.run(["bash", str(source / "setup.sh")], cwd="/", env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "log").read_text().split() == [str(source), "-m", "pip", "install", "--quiet", "-r",
                                                      "requirements.txt"]


def test_autograder_warns_when_the_default_requirement_cannot_install_this_gradlab(tmp_path, capsys, monkeypatch):
    # PyPI's gradlab is another project: gradlab==VERSION installs this one only from an index that has it, yet a
    # zip whose setup.sh would fail was written without a word
    from importlib import metadata
    from gradlab import __version__
    from gradlab.grading import autograder

    class Installed:
        def __init__(self, direct_url):
            self.version, self.direct_url = __version__, direct_url

        def read_text(self, name):
            return self.direct_url if name == "direct_url.json" else None

    said = {}
    for how, direct_url in [("index", None), ("checkout", '{"url": "file:///home/ta/gradlab", "dir_info": {}}'),
                            ("wheel", '{"url": "file:///home/ta/gradlab-0.1.0-py3-none-any.whl", "archive_info": {}}')]:
        monkeypatch.setattr(metadata, "distribution", lambda name, d=direct_url: Installed(d))
        assert main(["autograder", "--kinds", "layernorm", "--out", str(tmp_path / f"{how}.zip")]) == 0
        said[how] = capsys.readouterr().out.strip().splitlines()
    assert len(said["index"]) == 1 and "warning" not in said["index"][0]
    warning = said["checkout"][1]
    assert warning.startswith("warning: this gradlab was installed from /home/ta/gradlab, not from a package index, "
                              f"so setup.sh cannot install it as gradlab=={__version__}") and len(said["checkout"]) == 2
    assert "--requirement dist/gradlab-" in warning and "python -m pip wheel --no-deps -w dist" in warning
    assert "give --requirement /home/ta/gradlab-0.1.0-py3-none-any.whl (it goes in the zip)" in said["wheel"][1]
    monkeypatch.setattr(autograder, "_origin", lambda: None)
    assert autograder.default_requirement_warning() is None


def test_the_readme_rubric_is_a_valid_rubric(tmp_path):
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    block = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "rubric.toml").write_text(block)
    r = rubric_mod.load(str(tmp_path / "rubric.toml"))
    assert list(r.kinds) == ["attention", "lm"]
    assert sum(rule.points for rule in r.kinds["attention"].values()) == pytest.approx(10)
    assert r.kinds["attention"]["gradient"].points == 4 and "finite" not in r.kinds["attention"]
    assert r.kinds["attention"]["causality"].visibility == "visible"
    assert r.kinds["attention"]["smoke"].visibility == "after_due_date"
    assert r.kinds["lm"]["overfit"].partial and r.kinds["lm"]["overfit"].points == 3


def test_notebook_rule_keeps_definitions_and_skips_the_rest():
    from gradlab.grading.notebook import to_source
    source, notes, origins = to_source(notebook(
        "import numpy as np\nimport gradlab\nD = 64\nrng = np.random.default_rng(0)\n"
        "model = Model(D)\nplt.plot([1, 2]); plt.show()\n"
        "@gradlab.register('layernorm')\ndef build(cfg):\n    return None\n"
        "try:\n    import torch\nexcept ImportError:\n    torch = None\n").encode(), "nb.ipynb")
    compile(source, "nb.py", "exec")
    for kept in ("import numpy as np", "D = 64", "rng = np.random.default_rng(0)", "@gradlab.register('layernorm')",
                 "def build(cfg):", "import torch"):
        assert kept in source, kept
    for gone in ("model = Model(D)", "plt.plot", "pip install", "%matplotlib", "for epoch", "urlopen"):
        assert gone not in source, gone
    assert any("nb.ipynb: code cell 2 line 5: skipped `model = Model(D)`" in n for n in notes)
    # (two statements on a line were two identical notes; "cell 2" counts code cells: the markdown cell is not one)
    assert [n for n in notes if "line 6" in n] == [
        "nb.ipynb: code cell 2 line 6: skipped `plt.plot([1, 2]); plt.show()` (runs code at the top level; only "
        "definitions are graded)"]
    assert len(origins) == source.count("\n")
    assert origins[[ln.strip() for ln in source.splitlines()].index("D = 64")] == (2, 3)   # guarded: try: D = 64
    with pytest.raises(ValueError, match="not a readable notebook"):
        to_source(b'{"cells": [', "broken.ipynb")


def test_an_error_in_a_notebook_is_said_at_its_cell_and_line(tmp_path):
    # it said "at nia_ipynb.py:29": gradlab's generated file, whose lines the student has never seen (a
    # guarded statement adds lines to it)
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('setup')\nimport numpy as np"),
                nbformat.v4.new_markdown_cell("## LayerNorm"),
                nbformat.v4.new_code_cell(MODULES.replace("def backward(self, dy):",
                                                          "def backward(self, dy):\n        raise ValueError('oops')", 1))]
    assert "raise ValueError('oops')" in nb.cells[2].source
    line = nb.cells[2].source.splitlines().index("        raise ValueError('oops')") + 1
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "nia.ipynb").write_text(nbformat.writes(nb))
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm", seed=SEED,
                          workers=1, limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    smoke = failing(results["nia"], "layernorm")["smoke"]
    assert f"backward raised ValueError at nia.ipynb code cell 2 line {line}: oops" in smoke, smoke
    record = json.loads((tmp_path / "out" / "nia" / "gradlab.json").read_text())
    text = json.dumps(record)
    assert "_ipynb" not in text and f'nia.ipynb\\", code cell 2 line {line}, in backward' in text


def test_a_kept_notebook_line_that_fails_is_skipped_and_the_rest_graded(tmp_path):
    # each of these zeroed every kind of a correct notebook: the import failed as a whole
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from google.colab import drive\nimport numpy as np"),
                nbformat.v4.new_code_cell("X = np.load('data/train.npy')\nY = np.loadtxt('data/y.csv')"),
                nbformat.v4.new_code_cell("big = np.ones((60000, 60000))\nD = 64"),
                nbformat.v4.new_code_cell(MODULES)]
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "nora.ipynb").write_text(nbformat.writes(nb))
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm", seed=SEED,
                          workers=1, limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    assert per_kind(results["nora"]) == {"layernorm": LAYERNORM_POINTS}, failing(results["nora"], "layernorm")
    output = results["nora"]["output"]
    assert ("nora.ipynb: code cell 1 line 1: skipped `from google.colab import drive` (it raised "
            "ModuleNotFoundError: No module named 'google'; the rest of the notebook is graded)") in output
    assert "code cell 2 line 1: skipped `X = np.load('data/train.npy')` (runs code at the top level" in output
    assert "code cell 2 line 2: skipped `Y = np.loadtxt('data/y.csv')` (runs code at the top level" in output
    assert "code cell 3 line 1: skipped `big = np.ones((60000, 60000))` (it raised MemoryError" in output


def test_kept_statements_are_guarded_and_definitions_left_as_they_are():
    from gradlab.grading.notebook import _cell
    kept, skipped = _cell('from __future__ import annotations\nimport numpy as np\nD = 64; E = np.zeros(3)\n'
                          'S = """a\nb"""\ndef f(x):\n    return x\n', "n.ipynb: code cell 1")
    kept = "\n".join(kept)
    assert kept.count("try:") == 1 and "try:\n    import numpy as np\nexcept Exception" in kept
    assert "\nD = 64; E = np.zeros(3)\nS = \"\"\"a\nb\"\"\"\ndef f(x):" in kept and not skipped
    namespace = {"__file__": "/nonexistent/n_ipynb.py"}
    exec(compile(kept, "n_ipynb.py", "exec"), namespace)
    assert namespace["D"] == 64 and namespace["f"](3) == 3


def test_progress_line_on_a_terminal():
    import io
    from gradlab.grading.run import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    progress = Progress(stream, 3)
    progress.update("ada", {"score": 22.0}, 22.0)
    progress.update("bob", {"score": 9.0}, 22.0)
    assert "[2/3 graded, 1 below full marks" in stream.getvalue() and "ETA" in stream.getvalue()
    assert "bob: 9/22" in stream.getvalue()
    silent = io.StringIO()
    Progress(silent, 3).update("ada", {"score": 1.0}, 2.0)
    assert silent.getvalue() == ""    # a file or a pipe gets no progress line


def test_grading_from_a_teachers_script_without_a_main_guard(tmp_path):
    """multiprocessing re-runs the parent's main script in each child it starts;
    a script that grades at its top level would then grade again in every job."""
    subs = make_class(tmp_path / "class", ["bob"])
    script = tmp_path / "grade_my_class.py"
    script.write_text("import sys\nfrom gradlab.grading.run import grade_class\n"
                      f"r = grade_class({str(subs)!r}, {str(tmp_path / 'out')!r}, kinds='layernorm', seed=1)\n"
                      "print('SCORE', r['bob']['score'])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("SCORE") == 1 and "SCORE 9.0" in done.stdout


@pytest.mark.parametrize("argv, words", [
    (["--seed", "-3"], "--seed -3: must be an integer in [0, 4294967295]"),
    (["--timeout", "0"], "--timeout 0: a submission needs a finite time limit above 0 s"),
    (["--workers", "0"], "--workers 0: grades no submission at a time"),
    (["--max-output", "-1"], "--max-output -1: must be a number >= 0"),
    (["--max-memory", "100"], "--max-memory 100: is less than NumPy alone needs"),
])
def test_grade_options_are_checked_before_anything_runs(tmp_path, capsys, argv, words):
    subs = make_class(tmp_path / "class", ["bob"])
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_names_that_are_not_utf8_are_graded_and_checked(tmp_path, capsys):
    """A Latin-1 zip export: a student folder and a file named with the byte 0xE9. Grading crashed writing
    the student's files (UnicodeEncodeError) and `gradlab check --impl` blamed the student's import."""
    subs = tmp_path / "class"
    try:
        folder = subs / os.fsdecode(b"jos\xe9")
        folder.mkdir(parents=True)
        (folder / os.fsdecode(b"caf\xe9.py")).write_text(MODULES)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    out = tmp_path / "out"
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(out), "--seed", str(SEED)]) == 0
    assert "jos" in capsys.readouterr().out
    assert (out / "summary.html").exists() and (out / "grades.csv").exists()
    json_path, report_path = tmp_path / "r.json", tmp_path / "r.html"
    code = main(["check", "layernorm", "--impl", str(folder / os.fsdecode(b"caf\xe9.py")), "--seed", "0",
                 "--checks", "smoke", "--json", str(json_path), "--report", str(report_path)])
    assert code == 0, capsys.readouterr()
    assert json.loads(json_path.read_text())["passed"] is True
    assert report_path.exists()


def test_a_name_with_terminal_codes_is_shown_escaped_in_the_table(tmp_path, capsys):
    # a file named "\x1b[31mred\x1b[0m.py" coloured grade's table (and could erase its lines)
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "\x1b[31mred\x1b[0m.py").write_text(MODULES)
    out = tmp_path / "out"
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(out), "--seed", str(SEED)]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\\x1b[31mred\\x1b[0m  " in shown
    assert (out / "\x1b[31mred\x1b[0m" / "results.json").exists()     # (the files keep the name)


def test_names_that_a_spreadsheet_would_run_as_formulas_are_quoted_in_grades_csv(tmp_path):
    from gradlab.grading import outputs
    names = ['=HYPERLINK("x","A")', "+1+2", "-2+3", "@SUM(1)", "\tTAB", "\rCR", "alice", "o'neil", "x=1"]
    graded = {name: {"score": 1.0, "tests": [{"name": "layernorm::smoke", "score": 1.0}]} for name in names}
    outputs.write_class(str(tmp_path), graded, rubric_mod.load(None, ["layernorm"]), SEED, "0")
    rows = list(csv.DictReader((tmp_path / "grades.csv").open(newline="")))
    shown = {row["student"] for row in rows}
    assert shown == {"'=HYPERLINK(\"x\",\"A\")", "'+1+2", "'-2+3", "'@SUM(1)", "'\tTAB", "'\rCR", "alice", "o'neil",
                     "x=1"}
    assert set(json.loads((tmp_path / "class.json").read_text())["students"]) == set(names)   # (JSON: the name)


def test_a_students_file_given_for_the_class_is_said_to_be_a_file(tmp_path, capsys):
    # it said "no such folder", of a file that is there
    bob = tmp_path / "class" / "bob.py"
    bob.parent.mkdir()
    bob.write_text(MODULES)
    assert main(["grade", str(bob), "--kinds", "layernorm", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bob}: is a file; grade takes the class's folder" in err


def test_the_files_written_are_named_without_a_double_slash(tmp_path, capsys):
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "alice.py").write_text(MODULES)
    out = f"{tmp_path}/out/"
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", out, "--seed", str(SEED)]) == 0
    shown = capsys.readouterr().out
    assert f"wrote {out}grades.csv, {out}summary.html, {out}class.json and a folder per student" in shown
    assert "//" not in shown


def test_the_per_call_limit_has_a_flag_and_the_overtime_hint_names_it(tmp_path, capsys):
    """A forward that sleeps 1.5 s once: stopped at --call-timeout 1 (the hint named grade's --timeout, which is
    the whole submission's limit), graded at the default."""
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "slow.py").write_text(MODULES + "\nimport time\n_f = LayerNorm.forward\n"
                                  "def _slow(self, x, _seen=[]):\n    if not _seen:\n        _seen.append(1)\n"
                                  "        time.sleep(1.5)\n    return _f(self, x)\nLayerNorm.forward = _slow\n")
    out = tmp_path / "out"
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(out), "--seed", str(SEED),
                 "--call-timeout", "1"]) == 0
    capsys.readouterr()
    text = json.dumps(json.loads((out / "slow" / "results.json").read_text()))
    assert "ran past 1 s" in text and "gradlab grade --call-timeout" in text, text[:2000]


@pytest.mark.parametrize("name", ["grades.csv", "class.json.py"])
def test_a_student_named_as_a_class_file_is_refused_before_grading(tmp_path, capsys, name):
    """A folder grades.csv/ (or a file class.json.py) would put a student's results folder where the class's own
    file goes: it crashed with FileExistsError half-way through the run."""
    subs = make_class(tmp_path / "class", ["bob"])
    if name.endswith(".py"):
        (subs / name).write_text(MODULES)
    else:
        (subs / name).mkdir()
        (subs / name / "a.py").write_text(MODULES)
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "would take the place of the class's own" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path, capsys):
    subs = make_class(tmp_path / "class", ["bob"])
    (tmp_path / "file").write_text("")
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(tmp_path / "file" / "o")]) == 2
    err = capsys.readouterr().err
    assert "cannot create it" in err and len(err.strip().splitlines()) == 1


def test_files_that_are_not_submissions_are_told(tmp_path, capsys):
    """UPPER.PY, a zip and a README at the top level were skipped without a word; a folder holding only a zip
    was told it holds no .py file, not that an archive is there."""
    subs = make_class(tmp_path / "class", ["bob"])
    (subs / "ALICE.PY").write_text(MODULES)
    (subs / "README.txt").write_text("the class")
    (subs / "carol").mkdir()
    with zipfile.ZipFile(subs / "carol" / "carol.zip", "w") as z:
        z.writestr("carol.py", MODULES)
    assert main(["grade", str(subs), "--kinds", "layernorm", "--out", str(tmp_path / "o"), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "not submissions, skipped: ALICE.PY (rename it to ALICE.py), README.txt" in out
    carol = json.loads((tmp_path / "o" / "carol" / "gradlab.json").read_text())
    assert carol["kinds"]["layernorm"]["checks"][0]["message"] == (
        "layernorm: not graded: the submission holds no .py or .ipynb file (it holds carol.zip; an archive is not "
        "unpacked: unpack it into the folder)")


def test_an_empty_submission_is_said_to_hold_no_code_and_nothing_else(tmp_path):
    # judy's empty folder: "...holds no .py or .ipynb file; it may be the file that registers layernorm: the files
    # that import register nothing", the tail meant for a file that does not import
    (tmp_path / "class" / "judy").mkdir(parents=True)
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm", seed=SEED, workers=1,
                          stream=open(os.devnull, "w"))
    assert set(failing(results["judy"], "layernorm").values()) == {
        "layernorm: not graded: the submission holds no .py or .ipynb file"}


def test_fractional_points_add_up_to_the_rubrics_maximum_exactly(tmp_path):
    # 1 point shared by the 10 layernorm checks: 0.1 each, which sum to 0.9999999999999999 in floats; the maximum
    # is rounded as the scores are, or a student with every point would score above it
    path = tmp_path / "rubric.toml"
    path.write_text("[layernorm]\npoints = 1\n")
    r = rubric_mod.load(str(path))
    assert sum(rule.points for rule in r.kinds["layernorm"].values()) != 1      # what the rounding is for
    assert r.max_score() == 1


def test_a_rubric_whose_points_overflow_is_refused_in_one_line(tmp_path):
    # 1e308 points in two kinds: the total was inf, and writing the scores raised "cannot convert float NaN to
    # integer" after the whole class was graded (exit 1, no summary.html)
    path = tmp_path / "rubric.toml"
    path.write_text("[layernorm]\npoints = 1e308\n[ffn]\npoints = 1e308\n")
    with pytest.raises(UsageError, match=r"the points add up to inf, more than 1e\+09; give smaller points"):
        rubric_mod.load(str(path))


def test_a_replay_line_keeps_the_grades_own_time_limit_per_call():
    # graded with --call-timeout 1, a call past it was replayed at check's default of 20 s, and passed
    from gradlab.grading.gradescope import _output
    record = {"status": "error", "message": "layernorm: forward ran past 1 s"}
    assert _output(record, "layernorm", "shapes", "heidi/heidi.py", 1, call_limit=1.0).endswith(
        "replay: gradlab check layernorm --impl heidi.py --checks shapes --timeout 1 --seed 1")
    assert "--timeout" not in _output(record, "layernorm", "shapes", "heidi/heidi.py", 1, call_limit=20.0)


def test_a_kind_in_a_notebook_cell_skipped_whole_says_so_and_function_kinds_get_their_advice(tmp_path):
    # a %%time cell holding the kind: every check said "not registered ... add @gradlab.register('softmax') above
    # its build(cfg) factory", though the decorator was there (and a function kind has no factory)
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import numpy as np\nimport gradlab"),
                nbformat.v4.new_code_cell("%%time\n@gradlab.register('softmax')\ndef softmax(x, axis=-1):\n"
                                          "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
                                          "    return e / e.sum(axis=axis, keepdims=True)")]
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "tim.ipynb").write_text(nbformat.writes(nb))
    (tmp_path / "class" / "una.py").write_text("import gradlab\n")
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="softmax", seed=SEED, workers=1,
                          limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    said = set(failing(results["tim"], "softmax").values())
    assert said == {"softmax: not graded: tim.ipynb: code cell 2: skipped (cell magic %%time); it holds "
                    "register('softmax'), so that kind is not graded: remove that line"}, said
    assert all(o.endswith("add @gradlab.register('softmax') above the function")
               for o in failing(results["una"], "softmax").values())


@pytest.mark.parametrize("names", [("Zoë.py", "zoë"), ("Zo\u00eb.py", "Zoe\u0308.py")], ids=["case", "unicode form"])
def test_students_whose_names_differ_only_in_case_or_unicode_form_are_refused(tmp_path, names):
    # they were graded as two students: two rows that read alike, and one results folder on macOS or Windows
    from gradlab.grading.submissions import discover
    for name in names:
        if name.endswith(".py"):
            (tmp_path / name).write_text("import gradlab\n")
        else:
            (tmp_path / name).mkdir()
            (tmp_path / name / "m.py").write_text("import gradlab\n")
    with pytest.raises(UsageError, match="differ only in case or Unicode form"):
        discover(str(tmp_path))


def test_a_package_whose_files_import_each_other_relatively_is_graded(tmp_path):
    # `from .layers import LayerNorm` in a folder with __init__.py: "attempted relative import with no known
    # parent package", 0 points, in grade and in check alike
    classes, body = MODULES.split('@gradlab.register("layernorm")', 1)
    student = tmp_path / "class" / "pia"
    student.mkdir(parents=True)
    (student / "__init__.py").write_text("")
    (student / "layers.py").write_text(classes)
    (student / "main.py").write_text('import gradlab\nfrom .layers import LayerNorm\n\n\n'
                                     '@gradlab.register("layernorm")' + body.split("@gradlab.register", 1)[0])
    result = gradlab.check("layernorm", impl=str(student / "main.py"), seed=SEED)
    assert result.passed, [c.message for c in result.checks if not c.ok]
    for _ in range(2):      # in this process, twice: the second load found no registration in the kept module
        assert gradlab.check("layernorm", impl=str(student / "main.py"), seed=SEED, isolate=False,
                             checks=["smoke"]).passed
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm", seed=SEED,
                          workers=1, limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    assert per_kind(results["pia"]) == {"layernorm": LAYERNORM_POINTS}, failing(results["pia"], "layernorm")
    assert "relative import" not in results["pia"]["output"]


def test_the_student_report_lists_the_notes_on_the_submission(graded):
    # the notes (notebook lines skipped, a kind registered twice, a helper that did not import) were only in
    # results.json: report.html said "All 37 checks passed" and nothing of what was left out
    _, out, _ = graded
    report = (out / "erin" / "report.html").read_text()
    assert 'id="notes"' in report and "skipped `for epoch in range(10**9):`" in report
    assert 'id="notes"' not in (out / "ada" / "report.html").read_text()


def test_a_file_that_does_not_import_is_one_diagnosis_for_every_kind_it_costs(tmp_path):
    # it was a row per kind, each with the student counted once, which drowned the bugs students share
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "sam.py").write_text("import numpy as np,\n" + MODULES)
    grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm,attention", seed=SEED,
                workers=1, limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    summary = (tmp_path / "out" / "summary.html").read_text()
    table = summary[summary.index("Most frequent diagnoses"):]
    assert table.count("sam.py:1: syntax error") == 1 and "layernorm, attention (not graded)" in table


def test_a_misspelled_kind_in_a_file_costs_that_kind_only(tmp_path):
    # register("layer_norm") raised at import, and the file's correct attention was graded 0 with it
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "wendy.py").write_text(
        MODULES.replace('register("layernorm")', 'register("layer_norm")') + "\n" + ATTENTION)
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds=KINDS, seed=SEED,
                          workers=1, limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    assert per_kind(results["wendy"]) == {"layernorm": 0, "attention": ATTENTION_POINTS}
    said = set(failing(results["wendy"], "layernorm").values())
    assert len(said) == 1 and "'layer_norm' is no kind; did you mean 'layernorm'? Register it as 'layernorm'" \
        in said.pop()

SOFTMAX_READING_ITS_DATA = """\
import json, os
import numpy as np
import gradlab
HERE = os.path.dirname(os.path.abspath(__file__))
AXIS = json.load(open(os.path.join(HERE, "config.json")))["axis"]
SHIFT = np.load(os.path.join(HERE, "data", "init.npy"))

@gradlab.register("softmax")
def softmax(x, axis=AXIS):
    e = np.exp(x - x.max(axis=axis, keepdims=True) + SHIFT[0])
    return e / e.sum(axis=axis, keepdims=True)
"""


def test_a_submissions_data_files_are_copied_beside_its_code_and_counted_in_its_digest(tmp_path):
    # a correct submission that read config.json beside it scored 0: only its .py and .ipynb files were copied
    import numpy as np
    from gradlab.grading.submissions import MAX_DATA_MB, discover
    niaj = tmp_path / "class" / "niaj"
    (niaj / "data").mkdir(parents=True)
    (niaj / "sol.py").write_text(SOFTMAX_READING_ITS_DATA)
    (niaj / "config.json").write_text('{"axis": -1}')
    np.save(niaj / "data" / "init.npy", np.zeros(3))
    with open(niaj / "dataset.bin", "wb") as fh:      # too large to be copied (sparse: costs no disk)
        fh.truncate((MAX_DATA_MB << 20) + 1)
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="softmax", seed=SEED, workers=1,
                          limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    assert failing(results["niaj"], "softmax") == {}
    record = json.loads((tmp_path / "out" / "niaj" / "gradlab.json").read_text())
    assert record["files"] == ["sol.py"]                  # the code graded; the data went with it
    assert f"dataset.bin: not copied beside the code, larger than {MAX_DATA_MB} MB" in record["notes"]
    before = discover(str(tmp_path / "class"))[0]
    assert sorted(before.data) == ["config.json", "data/init.npy"] and before.others[-1] == "dataset.bin"
    (niaj / "config.json").write_text('{"axis": 1}')   # a changed data file grades the student again
    assert discover(str(tmp_path / "class"))[0].digest() != before.digest()


def test_a_submissions_data_files_are_copied_smallest_first_within_its_total(tmp_path, monkeypatch):
    from gradlab.grading import submissions
    monkeypatch.setattr(submissions, "MAX_DATA_TOTAL_MB", 1)
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "a.py").write_text("import gradlab\n")
    for name, size in (("big.npy", 700 << 10), ("cfg.json", 10), ("mid.npy", 500 << 10)):
        (tmp_path / "ann" / name).write_bytes(b"x" * size)
    entry = submissions.discover(str(tmp_path))[0]
    assert sorted(entry.data) == ["cfg.json", "mid.npy"]
    assert entry.left_out == (("big.npy", "over the 1 MB a submission's other files may take in all"),)


def test_a_notebook_that_cannot_be_read_is_said_in_the_notes_and_one_with_a_bom_is_read(tmp_path):
    # a notebook that is not JSON was said only in each kind's records, not among the notes; one saved with a
    # UTF-8 byte order mark (as Windows editors write; a .py file with one is read) was not read at all
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ola.ipynb").write_text('{"cells": [')
    (tmp_path / "class" / "pia.ipynb").write_bytes(b"\xef\xbb\xbf" + notebook(MODULES).encode())
    results = grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm", seed=SEED, workers=1,
                          limits=Limits(wall=TIMEOUT), stream=open(os.devnull, "w"))
    assert "note: ola.ipynb is not a readable notebook (NotJSONError" in results["ola"]["output"]
    assert per_kind(results["pia"]) == {"layernorm": LAYERNORM_POINTS}


def test_the_terminal_table_stays_aligned_with_partial_credit():
    # "zed 86.6667/100" pushed its row out of line with the header
    from gradlab.grading.run import print_table
    rubric = rubric_mod.load(kinds=["layernorm", "attention"])
    graded = {"zed": {"score": 260 / 3, "tests": [{"name": "layernorm::smoke", "score": 2 / 3},
                                                  {"name": "attention::smoke", "score": 86}]},
              "al": {"score": 22, "tests": [{"name": "layernorm::smoke", "score": 10},
                                            {"name": "attention::smoke", "score": 12}]}}
    out = io.StringIO()
    print_table(out, graded, rubric)
    lines = out.getvalue().splitlines()
    assert len({len(line) for line in lines}) == 1, lines
    assert "86.67/22" in lines[2] and "0.67" in lines[2]


def test_results_of_a_student_no_longer_in_the_class_are_said(tmp_path):
    # dora's folder left the class: out/dora stayed, silently, and grades.csv dropped her
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "bea.py").write_text("import numpy as np,\n")      # fast: it does not import
    (tmp_path / "out" / "dora").mkdir(parents=True)
    (tmp_path / "out" / "dora" / "results.json").write_text("{}")
    out = io.StringIO()
    grade_class(str(tmp_path / "class"), str(tmp_path / "out"), kinds="layernorm", seed=SEED, workers=1,
                limits=Limits(wall=TIMEOUT), stream=out)
    assert "holds the results of 1 student(s) no longer in" in out.getvalue() and "(dora)" in out.getvalue()
