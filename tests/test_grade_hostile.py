"""`gradlab grade` with students who patch gradlab at import to fake passes.

The student's files run in a worker process; the checks run, and every verdict
is computed, in a gradlab process that never imports them, so the patches change
nothing there: the bugs these students hide are still found."""
import os
import pathlib

from gradlab.grading.job import Limits
from gradlab.grading.run import grade_class

HOSTILE = pathlib.Path(__file__).parent / "zoo" / "hostile"

# Everything a check could be faked with, patched at import; the module itself
# returns zeros and gradients of zeros.
PATCH_EVERYTHING = '''
import sys
import numpy as np
import gradlab
from gradlab.contract import records
from gradlab.execution import plan, runner

records.FAIL = records.ERROR = records.PASS
runner.run_one = plan.run_one = lambda spec, subject, seed: records.CheckRecord(spec.name, records.PASS, "fine")
plan.Plan.run_check = lambda self, kind, spec: records.CheckRecord(getattr(spec, "name", spec), records.PASS, "fine")
for name, module in list(sys.modules.items()):
    if name.startswith(("gradlab.checks", "gradlab.numerics")):
        for attr in dir(module):
            if attr.startswith(("check", "compare", "run")) and callable(getattr(module, attr)):
                setattr(module, attr, lambda *a, **k: None)


class Zeros:
    def __init__(self, d):
        self.params = {"gamma": np.ones(d), "beta": np.zeros(d)}
        self.grads = {}

    def forward(self, x):
        return np.zeros_like(x)

    def backward(self, g):
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}
        return np.zeros_like(g)


@gradlab.register("layernorm")
def build(cfg):
    return Zeros(cfg.d_model)
'''


def test_a_student_who_patches_gradlab_at_import_gets_no_pass_for_the_bug(tmp_path):
    subs = tmp_path / "class"
    mallory = subs / "mallory"                 # the zoo's patch_gradlab.py: a wrong gamma gradient, runner patched
    mallory.mkdir(parents=True)
    for name in ("patch_gradlab.py", "_layernorm.py"):
        (mallory / name).write_text((HOSTILE / name).read_text())
    (subs / "trudy.py").write_text(PATCH_EVERYTHING)   # zeros everywhere, every check function patched
    results = grade_class(str(subs), str(tmp_path / "out"), kinds="layernorm", seed=3, workers=2,
                          limits=Limits(wall=60), stream=open(os.devnull, "w"))
    status = {s: {t["name"].split("::")[1]: t["status"] for t in r["tests"]} for s, r in results.items()}
    assert status["mallory"]["gradient"] == "failed", status["mallory"]
    assert "gamma" in next(t["output"] for t in results["mallory"]["tests"] if t["name"] == "layernorm::gradient")
    assert status["trudy"]["reference"] == "failed" and status["trudy"]["gradient"] == "failed", status["trudy"]
    for student, r in results.items():
        assert r["score"] < r["tests"][0]["max_score"] * len(r["tests"]), student
        assert all("fine" != t["output"].split("\n")[0] for t in r["tests"]), student


def test_a_student_who_kills_the_judging_process_gets_no_pass(tmp_path):
    """The worker's parent is the judging job: killing it loses that student's
    grading (every check an error), not the class, and never gives a pass."""
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "oscar.py").write_text("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                                   + (HOSTILE / "ok_layernorm.py").read_text())
    (subs / "peggy").mkdir()
    for name in ("ok_layernorm.py", "_layernorm.py"):
        (subs / "peggy" / name).write_text((HOSTILE / name).read_text())
    results = grade_class(str(subs), str(tmp_path / "out"), kinds="layernorm", seed=3, workers=2,
                          limits=Limits(wall=60), stream=open(os.devnull, "w"))
    assert results["oscar"]["score"] == 0
    # every test is there (an empty list would pass the line below) and failed, saying why
    assert [t["name"] for t in results["oscar"]["tests"]] == [t["name"] for t in results["peggy"]["tests"]]
    assert all(t["status"] == "failed" and "not graded: the process running it was killed" in t["output"]
               for t in results["oscar"]["tests"]), results["oscar"]["tests"][0]
    assert results["peggy"]["score"] == results["peggy"]["tests"][0]["max_score"] * len(results["peggy"]["tests"])


def test_a_submission_that_overwrites_another_students_results_is_undone(tmp_path, capsys):
    """A student's code runs as the teacher's user and can write into OUT: zed, graded after amy, forged amy's
    Gradescope file at import ({"score": 0}). Every file a run wrote is verified at its end and written again
    from the results, with a warning."""
    import json
    subs, out = tmp_path / "class", tmp_path / "out"
    subs.mkdir()
    good = (HOSTILE / "_layernorm.py").read_text() + ("\nimport gradlab\n\n\n@gradlab.register('layernorm')\n"
                                                       "def build(cfg):\n    return LayerNorm(cfg.d_model, cfg.eps)\n")
    (subs / "amy.py").write_text(good)
    forged = out / "amy" / "results.json"
    (subs / "zed.py").write_text(f"import pathlib\npathlib.Path({str(forged)!r}).write_text('{{\"score\": 0}}')\n"
                                 + good)
    graded = grade_class(str(subs), str(out), kinds="layernorm", seed=0, workers=1, limits=Limits(wall=60))
    assert graded["amy"]["score"] == graded["zed"]["score"] > 0
    assert json.loads(forged.read_text())["score"] == graded["amy"]["score"]
    assert "changed during grading and were written again" in capsys.readouterr().out
