"""`causality`: perturbing position t changes no output before t."""
import pytest

from gradlab.contract.kinds import CAUSAL, KINDS

CAUSAL_KINDS = [k for k, spec in KINDS.items() if spec.has(CAUSAL)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", CAUSAL_KINDS)
def test_reference_is_causal(run, kind, dtype):
    record = run(kind, None, ["causality"], dtype=dtype)["causality"]
    assert record.status == "pass", record.message
    view = record.details["views"][0]
    assert view["type"] == "heatmap" and len(view["data"]) == 5   # T x T, default seq_len


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["causality_ok_attention.py",            # -1e9 mask, einsum, attribute grads
                                  "causality_ok_attention_neginf.py",     # additive -inf mask
                                  "shapes_ok_attention_split_qkv.py"])    # separate Q, K, V
def test_correct_attention_variants_pass(run, zoo, name, dtype):
    record = run("attention", zoo(name), ["causality"], dtype=dtype)["causality"]
    assert record.status == "pass", record.message


def test_tiny_position_wise_lm_passes(run, zoo):
    assert run("lm", zoo("repeated_ids_ok_tiny_lm.py"), ["causality"])["causality"].status == "pass"


@pytest.mark.parametrize("kind, name, words", [
    ("attention", "causality_bad_attention_no_mask.py",
     ["attention", "perturbing position 1 changed the output at position 0", "sees the future", "10 of 10",
      "-inf (or -1e9)"]),
    ("attention", "causality_bad_attention_mask_off_by_one.py",
     ["perturbing position 1 changed the output at position 0", "4 of 10"]),
    ("attention", "causality_bad_attention_merge_reshape.py",
     ["position 0 sees the future", "attn_weights are causal", "reshape but no transpose"]),
    ("lm", "causality_bad_tiny_lm_mean_over_time.py",
     ["lm", "perturbing position 1 changed the output at position 0", "mean over the time axis"]),
])
def test_leaks_are_caught(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["causality"])["causality"]
    assert record.status == "fail"
    for word in words:
        assert word in record.message
    assert record.metrics["leaking_pairs"] > 0
    matrix = record.details["views"][0]["data"]
    assert matrix[0][1] > 0                        # output 0 moved when input 1 was perturbed


def test_tolerance_stays_tight_in_float32(run, zoo):
    record = run("attention", zoo("causality_bad_attention_mask_off_by_one.py"), ["causality"], dtype="float32")
    assert record["causality"].status == "fail"


def test_too_short_sequence_is_skipped(run):
    record = run("attention", None, ["causality"], seq_len=1)["causality"]
    assert record.status == "skip" and "seq_len" in record.message
