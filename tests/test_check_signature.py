"""`signature`: a loss without a keyword argument of its CONTRACT §3 signature
fails once, saying what the argument means; the other checks run without it
(tests/test_seed_articles.py runs the article's cross_entropy_with_grad)."""
import numpy as np
import pytest

import gradlab


def _ce(logits, targets):
    V = logits.shape[-1]
    z = logits.reshape(-1, V) - logits.max(-1, keepdims=True).reshape(-1, 1)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    p = np.exp(logp)
    t = targets.reshape(-1)
    loss = -logp[np.arange(t.size), t].mean()
    p[np.arange(t.size), t] -= 1
    return loss, (p / t.size).reshape(logits.shape)


def ce_positional_only(logits, targets):
    return _ce(logits, targets)


def ce_torch_name(logits, targets, ignore_idx=None):      # a near miss of the contract's name
    return _ce(logits, targets)


def ce_kwargs(logits, targets, **kwargs):                 # takes ignore_index, and ignores it
    return _ce(logits, targets)


@pytest.mark.parametrize("fn", [ce_positional_only, ce_torch_name], ids=["none", "near-miss"])
def test_a_missing_ignore_index_is_one_failure(run, fn):
    result = run("cross_entropy", fn)
    record = result["signature"]
    assert record.status == "fail", record.message
    assert "takes no ignore_index argument" in record.message
    assert "cross_entropy(logits, targets, ignore_index=None)" in record.message
    assert [c.name for c in result.checks if c.status != "pass"] == ["signature"]      # one failure only


def test_kwargs_accept_it_and_the_padded_checks_run(run):
    result = run("cross_entropy", ce_kwargs, ["signature", "reference"])
    assert result["signature"].status == "pass"
    reference = result["reference"]       # it ignores ignore_index: indexing with the padding id raises there
    assert reference.status == "error", reference.message
    assert "with ignore_index=-100" in reference.message and "raised IndexError" in reference.message


def test_a_callable_without_a_signature_is_skipped_not_passed():
    from gradlab.contract.suite import all_checks
    from gradlab.execution.loader import registration_for
    from gradlab.execution.runner import config_for, run_one
    from gradlab.execution.subject import Subject
    _, registration = registration_for(max, "cross_entropy")   # a builtin: no signature Python can read
    spec = next(c for c in all_checks() if c.name == "signature")
    record = run_one(spec, Subject(gradlab.KINDS["cross_entropy"], registration, config_for("cross_entropy")), 0)
    assert record.status == "skip" and "cannot be told" in record.message


def ls_named_smoothing(logits, targets, smoothing=0.1):    # works by position; a caller's epsilon=0.2 raises
    V = logits.shape[-1]
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    q = np.full(logits.shape, smoothing / V)
    np.put_along_axis(q, targets[..., None], 1 - smoothing + smoothing / V, axis=-1)
    return -(q * logp).sum() / targets.size, (np.exp(logp) - q) / targets.size


def test_label_smoothing_without_epsilon_by_name_is_one_failure(run):
    result = run("label_smoothing", ls_named_smoothing)
    record = result["signature"]
    assert record.status == "fail", record.message
    assert "takes no epsilon argument" in record.message
    assert "label_smoothing(logits, targets, epsilon=0.1)" in record.message
    assert "passed it by position" in record.message
    assert [c.name for c in result.checks if c.status != "pass"] == ["signature"]      # one failure only
