"""`softmax_rows`: attention weights and softmax outputs are probability rows."""
import pytest


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["attention", "softmax"])
def test_reference_rows(run, kind, dtype):
    record = run(kind, None, ["softmax_rows"], dtype=dtype)["softmax_rows"]
    assert record.status == "pass", record.message


def test_attention_view_is_one_head_with_the_mask(run):
    view = run("attention", None, ["softmax_rows"])["softmax_rows"].details["views"][0]
    assert view["type"] == "heatmap" and view["mask_upper"] is True
    assert len(view["data"]) == 5 and abs(sum(view["data"][2]) - 1) < 1e-12


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["causality_ok_attention.py", "causality_ok_attention_neginf.py",
                                  "shapes_ok_attention_split_qkv.py"])
def test_correct_attention_variants_pass(run, zoo, name, dtype):
    record = run("attention", zoo(name), ["softmax_rows"], dtype=dtype)["softmax_rows"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_correct_softmax_variant_passes(run, zoo, dtype):
    assert run("softmax", zoo("finite_ok_functions.py"), ["softmax_rows"], dtype=dtype)["softmax_rows"].ok


@pytest.mark.parametrize("kind, name, words", [
    ("attention", "causality_bad_attention_no_mask.py",
     ["attention", "attn_weights[batch 0, head 0, row 0]", "future position 1", "causal mask"]),
    ("attention", "softmax_rows_bad_attention_axis.py",
     ["attn_weights[batch", "sums to", "not 1", "columns sum to 1", "axis -2", "axis=-1"]),
    ("attention", "softmax_rows_bad_attention_mask_after.py",
     ["sums to", "not 1", "mask applied after the softmax"]),
    ("attention", "softmax_rows_bad_attention_mask_fill_small.py",
     ["future position 1", "small", "but not 0", "finite value too close", "-inf (or -1e9)"]),
    ("attention", "softmax_rows_bad_attention_keeps_scores.py",
     ["is negative", "row 0], column", "scores (before the softmax)"]),
    ("attention", "softmax_rows_bad_attention_no_attn_weights.py",
     ["no attn_weights after forward", "self.attn_weights", "(2, 2, 5, 5)"]),
    ("attention", "shapes_bad_attention_flat_weights.py", ["attn_weights is an array of shape (4, 5, 5)"]),
    ("softmax", "batch_independence_bad_softmax_over_batch.py", ["softmax", "row [0, 0]", "sums to", "not 1"]),
])
def test_broken_rows_are_caught(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["softmax_rows"])["softmax_rows"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message


def test_failure_view_shows_the_offending_head(run, zoo):
    record = run("attention", zoo("softmax_rows_bad_attention_axis.py"), ["softmax_rows"])["softmax_rows"]
    assert record.details["views"][0]["title"].startswith("attention: attn_weights[0, 0]")
