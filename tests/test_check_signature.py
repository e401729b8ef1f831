"""`signature`: a function without a keyword argument of its CONTRACT §3 signature
fails once, saying what the argument means; the other checks run without it."""
import numpy as np
import pytest

import gradlab


def softmax_no_axis(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def softmax_dim(x, dim=-1):                      # torch's name for the argument
    return softmax_no_axis(x)


def softmax_kwargs(x, **kwargs):
    return softmax_no_axis(x)


@pytest.mark.parametrize("fn, ok", [(softmax_no_axis, False), (softmax_dim, False), (softmax_kwargs, True)],
                         ids=["no-axis", "dim", "kwargs"])
def test_softmax_axis(run, fn, ok):
    result = run("softmax", fn)
    record = result["signature"]
    assert record.status == ("pass" if ok else "fail"), record.message
    if not ok:
        assert "takes no axis argument" in record.message and "softmax(x, axis=-1)" in record.message
        assert [c.name for c in result.checks if c.status != "pass"] == ["signature"]   # one failure only


def test_a_callable_without_a_signature_is_skipped_not_passed():
    from gradlab.contract.suite import all_checks
    from gradlab.execution.loader import registration_for
    from gradlab.execution.runner import config_for, run_one
    from gradlab.execution.subject import Subject
    _, registration = registration_for(max, "softmax")      # a builtin: no signature Python can read
    spec = next(c for c in all_checks() if c.name == "signature")
    record = run_one(spec, Subject(gradlab.KINDS["softmax"], registration, config_for("softmax")), 0)
    assert record.status == "skip" and "cannot be told" in record.message
