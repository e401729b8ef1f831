"""`backward`: repeatable, zero in -> zero out, linear in grad_out."""
import pytest

import gradlab

from gradlab.contract.kinds import DIFFERENTIABLE, KINDS

MODULE_KINDS = [k for k, s in KINDS.items() if DIFFERENTIABLE in s.tags and s.form == "module"]


def backward_record(run, kind, impl=None, seed=0, **cfg):
    return run(kind, impl, ["backward"], seed=seed, **cfg)["backward"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", MODULE_KINDS)
def test_reference_modules_pass(run, kind, dtype):
    for seed in range(5):
        record = backward_record(run, kind, seed=seed, dtype=dtype)
        assert record.status == "pass", record.message


def test_does_not_apply_to_functions_and_optimizers(run):
    # (asked for alone it judges nothing: a usage error, test_options; beside smoke it is skipped)
    for kind in ("cross_entropy", "adam"):
        assert run(kind, None, ["smoke", "backward"], seed=0)["backward"].status == "skip"
    with pytest.raises(gradlab.UsageError, match="--checks backward: does not apply to adam"):
        backward_record(run, "adam")


@pytest.mark.parametrize("kind, name", [
    ("linear", "backward_ok_linear_attributes.py"), ("attention", "grad_ok_attention_einsum.py"),
    ("attention", "grad_ok_attention_mask_1e9.py"), ("ffn", "grad_ok_ffn_relu.py"),
    ("linear", "backward_ok_linear_frees_cache.py"),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_correct_variants_pass(run, zoo, kind, name, dtype):
    record = backward_record(run, kind, zoo(name), dtype=dtype)
    assert record.status == "pass", record.message


def test_a_backward_that_frees_its_cache_gets_a_forward_before_each_call(run, zoo, all_pass):
    result = run("linear", zoo("backward_ok_linear_frees_cache.py"))
    all_pass(result)
    assert "a forward on the same input ran before each backward" in result["backward"].message


@pytest.mark.parametrize("kind, name, prop, words", [
    ("linear", "backward_bad_linear_accumulate.py", "repeatable",
     ["calling backward twice", "the gradient of 'weight'", "+=", "instead of setting it", "index"]),
    ("ffn", "backward_bad_ffn_stale_cache.py", "repeatable",
     ["calling backward twice", "'x'", "cached", "in-place"]),
    ("linear", "backward_bad_linear_weight_decay.py", "zero",
     ["backward(zeros)", "the gradient of 'weight'", "nonzero", "weight decay"]),
    ("linear", "backward_bad_linear_clip.py", "linear",
     ["not linear in grad_out", "clipping", "index"]),
    # it said "backward adds something that does not depend on grad_out (weight decay, a regulariser ...)"
    ("embedding", "backward_bad_embedding_zeroes_touched_rows_only.py", "zero",
     ["backward(zeros)", "is of an id this call's batch does not hold", "dW[ids] = 0",
      "dW = np.zeros_like(W); np.add.at(dW, ids, grad_out)"]),
])
def test_broken_backward_names_the_property_and_tensor(run, zoo, kind, name, prop, words):
    record = backward_record(run, kind, zoo(name))
    assert record.status == "fail", record.message
    assert record.metrics["property"] == prop
    assert record.message.startswith(f"{kind}: ")
    for word in words:
        assert word in record.message, (word, record.message)


def test_accumulating_backward_is_also_reported_by_the_zero_property(run, zoo):
    record = backward_record(run, "linear", zoo("backward_bad_linear_accumulate.py"))
    assert "zero (weight)" in record.message and "zero" in record.metrics["failed_properties"]
    rows = {r["tensor"]: r for r in record.details["views"][0]["rows"]}
    assert rows["weight"] == {"tensor": "weight", "repeatable": False, "zero": False, "linear": None}


@pytest.mark.parametrize("seed", range(6))
def test_true_zero_gradient_is_not_a_false_alarm(seed):
    """Split Q/K/V: b_k's gradient is 0 in theory (softmax ignores a shift), rounding noise in practice.
    The allowance is relative to the module's gradient scale, not to that noise's own scale."""
    from pathlib import Path
    impl = Path(__file__).parent.parent / "examples" / "student_attention.py"
    result = gradlab.check("attention", impl=str(impl), checks=["backward"], seed=seed)
    assert result["backward"].status == "pass", result["backward"].message


def test_a_backward_that_updates_the_weights_is_named_as_such(run, zoo):
    # the gradient check can only call it a forward that is not repeatable; this check says what it is
    record = run("linear", zoo("backward_bad_linear_updates_weights.py"), ["backward"])["backward"]
    assert record.status == "fail", record.message
    assert "backward changed the parameter 'W' itself" in record.message
    assert "W -= lr * dW" in record.message and record.metrics["parameter"] == "W"


def test_rows_kept_from_an_earlier_batch_are_named_by_repeated_ids(run, zoo):
    # it said "also for ids that occur only once ... see the gradient check", which passes for this module
    record = run("embedding", zoo("backward_bad_embedding_zeroes_touched_rows_only.py"), ["repeated_ids"])
    record = record["repeated_ids"]
    assert record.status == "fail"
    assert "is not in the batch, while the rows of the ids in it are right" in record.message
    assert "see the gradient check" not in record.message
