"""The Python API (CONTRACT §4): gradlab.check(kind, impl=..., checks=...,
seed=..., **overrides) -> result with .passed, .checks and .to_dict()."""
import json
from pathlib import Path

import numpy as np
import pytest

import gradlab
from gradlab.contract.errors import UsageError
from gradlab.execution.loader import reference
from gradlab.contract.records import KindResult, RunResult

EXAMPLES = Path(__file__).parent.parent / "examples"
CHECKS = ["smoke", "gradient"]


def assert_contract_shape(d, kind=None):
    """CONTRACT §4's --json object for one kind."""
    assert {"kind", "impl", "passed", "checks"} <= set(d)
    assert isinstance(d["passed"], bool) and isinstance(d["impl"], str)
    if kind:
        assert d["kind"] == kind
    assert d["checks"], "no checks recorded"
    for c in d["checks"]:
        assert {"name", "status", "message", "metrics"} <= set(c)
        assert c["status"] in ("pass", "fail", "error", "skip")
        assert isinstance(c["message"], str) and c["message"]
        assert isinstance(c["metrics"], dict)
    assert d["passed"] == all(c["status"] in ("pass", "skip") for c in d["checks"])


def strict_json(d):
    """JSON that any parser reads: no NaN/Infinity, no NumPy objects."""
    return json.loads(json.dumps(d, allow_nan=False))


def test_impl_none_is_the_reference():
    result = gradlab.check("layernorm", checks=CHECKS, seed=0)
    assert isinstance(result, KindResult)
    assert result.passed and result.impl == "reference"
    assert [c.name for c in result.checks] == CHECKS
    assert all(c.status == "pass" for c in result.checks)
    grad = result.checks[1]
    assert grad.name == "gradient" and grad.message
    assert grad.metrics["max_error"] <= grad.metrics["tolerance"]


def test_impl_as_path_and_as_module_name(monkeypatch):
    by_path = gradlab.check("ffn", impl=str(EXAMPLES / "student_modules.py"), checks=CHECKS, seed=0)
    assert by_path.passed, [c.message for c in by_path.checks]
    monkeypatch.syspath_prepend(str(EXAMPLES))
    by_name = gradlab.check("ffn", impl="student_modules", checks=CHECKS, seed=0)
    assert by_name.passed and by_name.impl == "student_modules"


def test_impl_as_a_function_defined_here():
    """No file at all: a notebook cell or a user's own test."""
    class Scale:
        def __init__(self, d):
            self.params = {"gamma": np.ones(d), "beta": np.zeros(d)}
            self.grads = {}

        def forward(self, x):
            self.x = x
            return x * self.params["gamma"] + self.params["beta"]

        def backward(self, g):
            self.grads["gamma"] = (g * self.x).sum((0, 1))
            self.grads["beta"] = g.sum((0, 1))
            return g * self.params["gamma"]

    @gradlab.register("layernorm")
    def build(cfg):
        return Scale(cfg.d_model)

    # Not a LayerNorm (no normalisation), but its own gradients are right:
    result = gradlab.check("layernorm", impl=build, checks=CHECKS, seed=0)
    assert result.passed, [c.message for c in result.checks]
    assert result.impl.endswith("build")

    def unregistered(cfg):           # a bare factory is taken as implementing the kind asked for
        return Scale(cfg.d_model)

    assert gradlab.check("layernorm", impl=unregistered, checks=CHECKS, seed=0).passed
    with pytest.raises(UsageError, match="registers no 'ffn' module"):
        gradlab.check("ffn", impl=build, checks=CHECKS, seed=0)


def test_function_kinds_accept_the_function_itself():
    def my_softmax(x, axis=-1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    assert gradlab.check("softmax", impl=my_softmax, checks=["smoke"], seed=0).passed
    ce = reference().get("cross_entropy").target
    assert gradlab.check("cross_entropy", impl=ce, checks=CHECKS, seed=0).passed


def test_to_dict_is_contract_shaped_and_strict_json():
    result = gradlab.check("attention", impl=str(EXAMPLES / "broken_attention.py"), checks=CHECKS, seed=0)
    assert not result.passed
    d = strict_json(result.to_dict())
    assert_contract_shape(d, "attention")
    assert d["seed"] == 0 and d["config"]["d_model"] == result.config["d_model"]
    failed = [c for c in d["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["gradient"] and "'out_weight'" in failed[0]["message"]
    assert KindResult.from_dict(d).to_dict() == d          # the report reads back what --json wrote


def test_check_all_shape_and_every_registered_kind():
    result = gradlab.check("all", impl=str(EXAMPLES / "student_modules.py"), checks=CHECKS, seed=0)
    assert isinstance(result, RunResult)
    d = strict_json(result.to_dict())
    assert set(d) >= {"results", "passed"} and d["passed"] is True
    kinds = [r["kind"] for r in d["results"]]
    assert sorted(kinds) == sorted(["linear", "layernorm", "ffn", "embedding", "softmax", "cross_entropy", "adam"])
    for r in d["results"]:
        assert_contract_shape(r)
    assert len(result.checks) == sum(len(r["checks"]) for r in d["results"])


def test_several_kinds_give_every_kind_s_result():
    # "linear,softmax" gave linear's result alone: softmax's records (and a failure there) were dropped
    result = gradlab.check("linear,softmax", checks="smoke", seed=0)
    assert isinstance(result, RunResult) and [r.kind for r in result.results] == ["linear", "softmax"]
    assert isinstance(gradlab.check("linear", checks="smoke", seed=0), KindResult)


def test_overrides_and_checks_as_a_string():
    result = gradlab.check("attention", checks="gradient", seed=1, d_model=8, seq_len=3)
    assert [c.name for c in result.checks] == ["smoke", "gradient"]   # the precondition's record always comes first
    assert result.config["d_model"] == 8 and result.passed


def test_seed_replays_and_is_fresh_by_default():
    a = gradlab.check("linear", checks=CHECKS, seed=4)
    b = gradlab.check("linear", checks=CHECKS, seed=4)
    assert a.checks[1].metrics == b.checks[1].metrics
    assert isinstance(gradlab.check("softmax", checks=["smoke"]).seed, int)


@pytest.mark.parametrize("call, words", [
    (lambda: gradlab.check("atention"), "unknown kind 'atention': did you mean 'attention'"),
    (lambda: gradlab.check("attention", checks=["gradiant"]), "unknown check 'gradiant': did you mean 'gradient'"),
    (lambda: gradlab.check("attention", dmodel=8), "unknown config field 'dmodel'; did you mean 'd_model'"),
    (lambda: gradlab.check("attention", impl="/no/such/file.py"), "no such file: /no/such/file.py"),
    # the options' rules said the command line's words from Python too: "--seed -1 ...; e.g. --seed 5"
    (lambda: gradlab.check("linear", seed=-1), r"^seed=-1: must be an integer .*; e\.g\. seed=5$"),
    (lambda: gradlab.check("linear", timeout=-1), r"^timeout=-1: .*; e\.g\. timeout=20 \(seconds\), or timeout=0 "),
    (lambda: gradlab.check("linear", d_model=-3), r"^d_model=-3: .*; e\.g\. d_model=12$"),
], ids=["kind", "check", "field", "file", "seed", "timeout", "cfg field"])
def test_usage_errors(call, words):
    with pytest.raises(UsageError, match=words):
        call()


def test_student_attention_example_passes():
    """Split W_q/W_k/W_v with attribute-style gradients and a -1e9 mask: correct, so no alarm.
    Its b_k gradient is exactly zero (softmax is shift-invariant), the false-alarm trap."""
    result = gradlab.check("attention", impl=str(EXAMPLES / "student_attention.py"), checks=CHECKS, seed=0)
    assert result.passed, [c.message for c in result.checks]
    assert result["smoke"].metrics["parameters"] == 8


@pytest.mark.parametrize("kind, impl", [
    ("attention", "student_attention.py"),
    ("all", "student_modules.py"),
])
def test_examples_pass_every_check(kind, impl):
    """README runs the examples without --checks: every check, not only the gradient."""
    result = gradlab.check(kind, impl=str(EXAMPLES / impl), seed=0)
    assert result.passed, [f"{c.name}: {c.message}" for c in result.checks if not c.ok]


def test_broken_example_fails_only_the_gradient():
    result = gradlab.check("attention", impl=str(EXAMPLES / "broken_attention.py"), seed=0)
    assert [c.name for c in result.checks if not c.ok] == ["gradient"]
    assert "'out_weight'" in result["gradient"].message


def test_a_run_that_judged_nothing_is_not_a_pass(capsys):
    """float16 for an optimizer skips every check: it was reported as passed (exit 0, "passed": true). A check
    asked for that does not apply to a kind is not counted: smoke and gradient on a softmax still pass."""
    from gradlab.frontends.cli import main
    result = gradlab.check("adam", checks=None, seed=0, dtype="float16", eps=1e-5)
    assert result.nothing_judged and not result.passed and result.to_dict()["passed"] is False
    assert main(["check", "adam", "--dtype", "float16", "--set", "eps=1e-5", "--seed", "0"]) == 1
    assert "nothing was judged" in capsys.readouterr().out
    softmax = gradlab.check("softmax", checks=["smoke", "gradient"], seed=0)
    assert softmax.passed and not softmax.nothing_judged
    assert gradlab.check("softmax", checks=["smoke"], seed=0).passed


def test_a_precondition_that_failed_is_what_is_said_not_nothing_judged():
    # smoke erred and the rest was skipped: the module fails on smoke's words; "nothing was judged" would
    # send the student looking for a configuration problem
    from gradlab.contract.records import ERROR, SKIP, CheckRecord, KindResult
    result = KindResult("layernorm", "x.py", 0, {}, [CheckRecord("smoke", ERROR, "forward ran past 1 s"),
                                                     CheckRecord("gradient", SKIP, "not judged: ...")])
    assert not result.nothing_judged and not result.passed
