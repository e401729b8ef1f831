"""`finite`: valid large-magnitude inputs give finite outputs and gradients."""
import pytest

from gradlab.contract.kinds import DIFFERENTIABLE, KINDS, PROBABILITIES

KINDS_CHECKED = [k for k, s in KINDS.items() if s.tags & {DIFFERENTIABLE, PROBABILITIES}
                 and s.form in ("module", "function")]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", KINDS_CHECKED)
def test_reference_is_finite(run, kind, dtype):
    record = run(kind, None, ["finite"], dtype=dtype)["finite"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name", [
    ("attention", "causality_ok_attention.py"), ("attention", "causality_ok_attention_neginf.py"),
    ("attention", "shapes_ok_attention_split_qkv.py"), ("layernorm", "shapes_ok_layernorm_renamed.py"),
    ("softmax", "finite_ok_functions.py"), ("cross_entropy", "finite_ok_functions.py"),
    ("embedding", "repeated_ids_ok_embedding_onehot.py"), ("lm", "repeated_ids_ok_tiny_lm.py"),
])
def test_correct_variants_pass(run, zoo, kind, name, dtype):
    record = run(kind, zoo(name), ["finite"], dtype=dtype)["finite"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name, words", [
    ("softmax", "finite_bad_functions_naive.py",
     ["softmax", "softmax(x) is NaN", "logits around 1000", "subtract the row maximum"]),
    ("cross_entropy", "finite_bad_functions_naive.py",
     ["cross_entropy", "the loss is", "logits around 1000", "log-sum-exp"]),
    ("cross_entropy", "finite_bad_cross_entropy_log_of_softmax.py",
     ["the loss is inf", "underflowed to 0"]),
    ("attention", "finite_bad_attention_naive_softmax.py",
     ["attention", "forward's output is NaN", "input x scaled by 1000", "attention's softmax",
      "subtract the row maximum"]),
    # a maximum over the whole array: the NaN is an underflow (0/0), not an overflow
    ("softmax", "finite_bad_softmax_global_max.py",
     ["softmax(x) is NaN", "0/0", "underflowed to 0", "each row's own", "x.max(axis=-1, keepdims=True)"]),
    ("attention", "finite_bad_attention_global_max.py",
     ["forward's output is NaN", "0/0", "underflowed to 0", "not the row's own", "underflow encountered in exp"]),
    ("attention", "finite_bad_attention_max_before_mask.py",
     ["forward's output is NaN", "0/0", "taken before the mask", "fill the masked scores with -inf first"]),
])
def test_overflow_is_caught(run, zoo, kind, name, words, dtype):
    record = run(kind, zoo(name), ["finite"], dtype=dtype)["finite"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message
    assert record.metrics["non_finite"] > 0


def test_naive_softmax_passes_ordinary_checks(run, zoo):
    # the bug only shows at large magnitudes: the ordinary row check is satisfied
    assert run("softmax", zoo("finite_bad_functions_naive.py"), ["softmax_rows"])["softmax_rows"].ok


def test_a_layernorm_whose_variance_cancels_at_a_large_mean_fails_in_float32(run, zoo):
    """mean(x**2) - mean(x)**2: exact enough in float64, NaN in float32 once the row's mean is 3000 (a probe)."""
    assert run("layernorm", zoo("finite_bad_layernorm_naive_variance.py"), ["finite"])["finite"].status == "pass"
    record = run("layernorm", zoo("finite_bad_layernorm_naive_variance.py"), ["finite"], dtype="float32")["finite"]
    assert record.status == "fail", record.message
    assert "forward(x + 3000) differs from forward(x)" in record.message and "cancellation" in record.message
