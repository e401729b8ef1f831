"""`batch_independence`: changing one sample changes no other sample's output."""
import pytest

from gradlab.contract.kinds import KINDS, PER_SAMPLE

PER_SAMPLE_KINDS = [k for k, s in KINDS.items() if s.has(PER_SAMPLE)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", PER_SAMPLE_KINDS)
def test_reference_samples_are_independent(run, kind, dtype):
    record = run(kind, None, ["batch_independence"], dtype=dtype)["batch_independence"]
    assert record.status == "pass", record.message
    assert record.details["views"][0]["type"] == "heatmap"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name", [
    ("attention", "causality_ok_attention.py"), ("attention", "shapes_ok_attention_split_qkv.py"),
    ("layernorm", "shapes_ok_layernorm_renamed.py"), ("embedding", "repeated_ids_ok_embedding_onehot.py"),
    ("lm", "repeated_ids_ok_tiny_lm.py"), ("softmax", "finite_ok_functions.py"),
])
def test_correct_variants_pass(run, zoo, kind, name, dtype):
    record = run(kind, zoo(name), ["batch_independence"], dtype=dtype)["batch_independence"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("kind, name, words", [
    ("layernorm", "batch_independence_bad_layernorm_over_batch.py",
     ["layernorm", "changing sample 0 of the batch changed forward's output for sample 1",
      "LayerNorm statistics over the batch"]),
    ("softmax", "batch_independence_bad_softmax_over_batch.py",
     ["softmax", "changing sample 0", "softmax(x)'s output for sample 1", "axis 0"]),
])
def test_interacting_samples_are_caught(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["batch_independence"])["batch_independence"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message
    matrix = record.details["views"][0]["data"]
    assert matrix[1][0] > 0


def test_batch_norm_style_layernorm_passes_the_gradient_check(run, zoo):
    # why this check exists: forward and backward agree, so only the structure gives it away
    result = run("layernorm", zoo("batch_independence_bad_layernorm_over_batch.py"),
                 ["gradient", "batch_independence"])
    assert result["gradient"].status == "pass"
    assert result["batch_independence"].status == "fail"


def test_single_sample_batch_is_skipped(run):
    record = run("layernorm", None, ["batch_independence"], batch_size=1)["batch_independence"]
    assert record.status == "skip" and "batch_size" in record.message
