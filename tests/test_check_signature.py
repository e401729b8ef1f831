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


LS_EPSILON_0 = '''
import numpy as np
import gradlab


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.0):       # the default is no smoothing at all
    V = logits.shape[-1]
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    q = np.full(logits.shape, epsilon / V)
    np.put_along_axis(q, targets[..., None], 1 - epsilon + epsilon / V, axis=-1)
    return -(q * logp).sum() / targets.size, (np.exp(logp) - q) / targets.size
'''

CHUNKED_CAUSAL = '''
import numpy as np
import gradlab


@gradlab.register("chunked_attention")
def chunked(Q, K, V, chunk_size, causal=True):          # causal unless told otherwise
    T, d_k = Q.shape[2], Q.shape[3]
    out = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for i in range(0, T, chunk_size):
        s = Q[:, :, i:i + chunk_size] @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)
        if causal:
            s = np.where(np.arange(T)[None, :] > np.arange(i, i + s.shape[2])[:, None], -np.inf, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        out[:, :, i:i + chunk_size] = (e / e.sum(-1, keepdims=True)) @ V
    return out
'''


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize("kind, source, words", [
    ("label_smoothing", LS_EPSILON_0, "epsilon defaults to 0.0; CONTRACT §3's signature is "
                                      "label_smoothing(logits, targets, epsilon=0.1)"),
    ("chunked_attention", CHUNKED_CAUSAL, "causal defaults to True; CONTRACT §3's signature is "
                                          "chunked_attention(Q, K, V, chunk_size, causal=False)"),
], ids=["epsilon=0.0", "causal=True"])
def test_a_default_callers_rely_on_is_the_contract_s(tmp_path, isolate, kind, source, words):
    # both passed every check: gradlab always passes the argument, so the default was never used
    path = tmp_path / "defaults.py"
    path.write_text(source)
    result = gradlab.check(kind, impl=str(path), seed=1, isolate=isolate)
    assert [c.name for c in result.checks if c.status != "pass"] == ["signature"], result.checks
    assert words in result["signature"].message


@pytest.mark.parametrize("default, status, words", [
    ("None", "pass", "accepts epsilon, as CONTRACT"),                       # "epsilon = 0.1 if epsilon is None"
    ("np.float64(0.0)", "fail", "epsilon defaults to 0.0"),
    ("np.float64(0.1)", "pass", "defaults epsilon=0.1"),
])
def test_a_default_is_judged_as_the_value_it_is(tmp_path, default, status, words):
    # None failed ("defaults to None"), np.float64(0.0) passed, and a pass claimed the contract's default
    path = tmp_path / "ls.py"
    path.write_text(LS_EPSILON_0.replace("epsilon=0.0", f"epsilon={default}").replace(
        "    V = logits.shape[-1]", "    epsilon = 0.1 if epsilon is None else epsilon\n    V = logits.shape[-1]"))
    record = gradlab.check("label_smoothing", impl=str(path), seed=1, checks=["signature"])["signature"]
    assert record.status == status and words in record.message, record.message
