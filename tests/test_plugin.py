"""The pytest plugin and gradlab.testing, run in throwaway pytest sessions
(pytester): items and ids, what a failure shows, the precondition, collection
errors, and the report assembled on the xdist controller."""
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# A student's file with two kinds: a linear layer whose weight gradient is 1.5x
# too large, and a layernorm whose build raises with markup in its message.
STUDENT = '''
import numpy as np
import gradlab

class Linear:
    def __init__(self, cfg):
        rng = np.random.default_rng(0)
        self.params = {"weight": rng.standard_normal((cfg.d_model, cfg.d_ff)), "bias": np.zeros(cfg.d_ff)}
        self.grads = {}
    def forward(self, x):
        self.x = x
        return x @ self.params["weight"] + self.params["bias"]
    def backward(self, g):
        x2, g2 = self.x.reshape(-1, self.x.shape[-1]), g.reshape(-1, g.shape[-1])
        self.grads["weight"] = 1.5 * x2.T @ g2
        self.grads["bias"] = g2.sum(0)
        return g @ self.params["weight"].T

@gradlab.register("linear")
def build_linear(cfg):
    return Linear(cfg)

@gradlab.register("layernorm")
def build_layernorm(cfg):
    raise RuntimeError("<script>alert('owned')</script> not written yet")
'''


@pytest.fixture
def student(pytester):
    pytester.makepyfile(student=STUDENT)
    return "student.py"


def test_items_failures_and_precondition(pytester, student):
    result = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", student, "--gradlab-seed", "3", "-v")
    out = result.stdout.str()
    assert "gradlab: seed 3 (replay with --gradlab-seed 3)" in out
    # ids, in run order: kinds as in `gradlab list`, smoke first
    ids = re.findall(r"^(\w+::\w+) (PASSED|FAILED|SKIPPED)", out, re.M)
    assert ids[0] == ("linear::smoke", "PASSED")
    assert ("linear::gradient", "FAILED") in ids
    assert ("layernorm::smoke", "FAILED") in ids
    assert [s for i, s in ids if i.startswith("layernorm::") and i != "layernorm::smoke"] == \
        ["SKIPPED"] * (len([i for i, _ in ids if i.startswith("layernorm::")]) - 1)
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 2 and outcomes["passed"] >= 3 and outcomes["skipped"] >= 3
    # the check's message and the replay command, not a traceback through gradlab
    result.stdout.fnmatch_lines(["*linear: gradient of 'weight' is wrong*analytical*numerical*tolerance*",
                                 "replay: gradlab check linear --impl student.py --checks gradient --seed 3"])
    assert "Traceback" not in out and "runner.py" not in out and "pytest_plugin.py" not in out
    assert "not judged: the 'smoke' precondition failed" in pytester.runpytest(
        "-p", "no:xdist", "--gradlab-impl", student, "-rs", "-k", "layernorm").stdout.str()


def test_terminal_codes_in_the_students_text_are_shown_escaped(pytester):
    # a message that erases pytest's line and prints a PASS of its own, in a failure and in a skip reason
    pytester.makepyfile(codes=STUDENT.replace("<script>alert('owned')</script>", "\\x1b[2K\\x1b[32m PASSED\\x1b[0m"))
    out = pytester.runpytest("-p", "no:xdist", "--color=no", "--gradlab-impl", "codes.py", "-rs", "-k",
                             "layernorm").stdout.str()
    assert "\x1b" not in out
    assert out.count("\\x1b[2K\\x1b[32m PASSED\\x1b[0m") >= 2          # the failure, a skip's reason


def test_unloadable_impl_is_a_collection_error(pytester):
    result = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "missing.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting missing.py*", "gradlab: no such file: missing.py*"])
    assert "Traceback" not in result.stdout.str()


def test_xdist_workers_share_the_seed_and_the_controller_writes_one_report(pytester, student):
    from gradlab.testing import cases
    result = pytester.runpytest_subprocess("-n", "2", "--gradlab-impl", student, "--gradlab-report", "r.html")
    seed = re.search(r"gradlab: seed (\d+)", result.stdout.str()).group(1)
    html = (pytester.path / "r.html").read_text()
    result.stdout.fnmatch_lines(["gradlab: report of * checks written to r.html"])
    expected = cases(str(pytester.path / student))
    assert len(expected) > 8
    for case in expected:   # every (kind, check) travelled from a worker to the controller
        assert f"{case.kind}::{case.check}" in html
    assert re.findall(r"<dt>seed</dt><dd>([^<]*)</dd>", html) == [seed]   # every worker used the controller's seed
    assert "<script>" not in html and "&lt;script&gt;alert(" in html      # student text is escaped
    assert html.index('id="failures"') < html.index('id="summary"')


def test_a_call_past_its_limit_gives_the_same_records_whichever_check_a_worker_runs_first(pytester):
    # the layernorm loops in forward: run ahead of smoke, whichever layernorm check an xdist worker took first
    # kept an error of its own (2 failed under -n 2, by scheduling; 1 without -n)
    hostile = Path(__file__).parent / "zoo" / "hostile"
    for name in ("loop_in_one_kind.py", "_layernorm.py"):
        (pytester.path / name).write_text((hostile / name).read_text())
    args = ["--gradlab-impl", "loop_in_one_kind.py", "--gradlab-seed", "1", "--gradlab-timeout", "1"]
    alone = pytester.runpytest_subprocess("-p", "no:xdist", *args).parseoutcomes()
    assert alone["failed"] == 1 and alone["skipped"] >= 8, alone
    assert pytester.runpytest_subprocess("-n", "2", *args).parseoutcomes() == alone


def test_parametrize_with_checks_in_a_users_test_file(pytester, student):
    pytester.makepyfile(test_mine='''
        from gradlab.testing import parametrize_with_checks

        @parametrize_with_checks("student.py", kinds="linear", checks=["smoke", "gradient"])
        def test_mine(kind, check):
            check()
    ''')
    result = pytester.runpytest("-p", "no:xdist", "-v", "test_mine.py")
    result.stdout.fnmatch_lines(["*test_mine[[]linear-smoke[]] PASSED*", "*test_mine[[]linear-gradient[]] FAILED*",
                                 "*linear: gradient of 'weight' is wrong*"])
    assert "Traceback" not in result.stdout.str()


FORWARD_ONLY = '''
import numpy as np
import gradlab

class Linear:
    def __init__(self, cfg):
        self.params = {"weight": np.random.default_rng(0).standard_normal((cfg.d_model, cfg.d_ff)),
                       "bias": np.zeros(cfg.d_ff)}
    def forward(self, x):
        return x @ self.params["weight"] + self.params["bias"]
    def backward(self, g):
        raise NotImplementedError("next week")

@gradlab.register("linear")
def build(cfg):
    return Linear(cfg)
'''


def test_a_kind_whose_every_check_that_ran_was_skipped_has_not_passed(pytester):
    # a forward-only module run with -k gradient: one skipped item, nothing judged; `gradlab check` exits 1
    # for it, and so does pytest, with a line saying why
    pytester.makepyfile(forward_only=FORWARD_ONLY)
    result = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "forward_only.py", "-k", "gradient")
    assert result.parseoutcomes()["skipped"] == 1 and "passed" not in result.parseoutcomes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gradlab: nothing was judged for linear (forward_only.py): every check that ran "
                                 "was skipped (1 skipped), so it has not passed; exit status 1"])
    # the forward checks judge it: skips beside them are no failure
    whole = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "forward_only.py")
    assert whole.ret == pytest.ExitCode.OK and whole.parseoutcomes()["skipped"] >= 1
    assert "nothing was judged" not in whole.stdout.str()


LOOPS = '''
import numpy as np
import gradlab

class Linear:
    def __init__(self, cfg):
        self.params = {"weight": np.ones((cfg.d_model, cfg.d_ff)), "bias": np.zeros(cfg.d_ff)}
        self.grads = {}
    def forward(self, x):
        while True:
            pass
    def backward(self, g):
        return g

@gradlab.register("linear")
def build(cfg):
    return Linear(cfg)
'''


def test_the_workers_limits_have_flags(pytester):
    pytester.makepyfile(loops=LOOPS)
    result = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "loops.py", "-k", "smoke",
                                "--gradlab-timeout", "0.5", "--gradlab-wall-time", "30")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*forward ran past 0.5 s, last seen at loops.py:*pytest --gradlab-timeout)"])
    for flag, value, words in [("--gradlab-timeout", "-1", "--gradlab-timeout -1"),
                               ("--gradlab-max-memory", "10", "is less than NumPy alone needs"),
                               ("--gradlab-wall-time", "nan", "must be a number >= 0"),
                               # it made the folders, where --json-like paths are refused (CONTRACT §4)
                               ("--gradlab-report", "no/such/r.html", "the folder")]:
        bad = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "loops.py", flag, value)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
        assert "gradlab: " in bad.stderr.str() and words in bad.stderr.str(), bad.stderr.str()


def test_a_misspelled_kind_is_one_line_per_item_not_a_traceback(pytester):
    # every layernorm item raised the loader's UsageError: ~900 lines of pytest and gradlab internals each
    pytester.makepyfile(typo=STUDENT.replace('register("layernorm")', 'register("layer_norm")'))
    result = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "typo.py", "--gradlab-seed", "3", "-k",
                                "layernorm")
    out = result.stdout.str()
    assert result.ret == 1 and "Traceback" not in out and "UsageError" not in out
    assert "layernorm: not checked: gradlab.register('layer_norm') at typo.py:" in out
    result.assert_outcomes(failed=1, skipped=9)
