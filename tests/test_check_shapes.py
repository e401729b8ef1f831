"""`shapes`: a table of what the user sees, expected vs actual."""
import numpy as np
import pytest

from gradlab.execution import runner
from gradlab.contract import suite
from gradlab.contract.kinds import DIFFERENTIABLE, KINDS, PROBABILITIES
from gradlab.execution.loader import registration_for
from gradlab.execution.subject import Subject

SHAPED = [k for k, spec in KINDS.items()
          if spec.form in ("module", "function") and spec.tags & {DIFFERENTIABLE, PROBABILITIES}]


def rows(record):
    view = record.details["views"][0]
    assert view["type"] == "table"
    return {r["tensor"]: r for r in view["rows"]}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", SHAPED)
def test_reference_shapes(run, kind, dtype):
    record = run(kind, None, ["shapes"], dtype=dtype)["shapes"]
    assert record.status == "pass", record.message
    assert all(r["ok"] for r in record.details["views"][0]["rows"])


def test_attention_table_lists_everything(run):
    table = rows(run("attention", None, ["shapes"])["shapes"])
    assert table["attn_weights"]["expected"] == "(2, 2, 5, 5)"
    assert table["forward output"]["actual"] == "(2, 5, 12)"
    assert table["backward output (dL/dx)"]["ok"]
    assert table["parameter 'qkv_weight'"]["expected"] == "(12, 36)"
    assert "gradient of 'qkv_weight' (grads['qkv_weight'])" in table


def test_attribute_style_gradients_are_named(run, zoo):
    record = run("attention", zoo("causality_ok_attention.py"), ["shapes"])["shapes"]
    assert record.status == "pass", record.message
    assert "gradient of 'out_weight' (dout_weight)" in rows(record)


def test_split_qkv_with_param_map_function_passes(run, zoo):
    record = run("attention", zoo("shapes_ok_attention_split_qkv.py"), ["shapes"])["shapes"]
    assert record.status == "pass", record.message
    assert "loaded through your param_map" in record.message and "qkv_weight" in record.message
    # (it said "4 reference parameters are loaded through your param_map": the others are loaded by it too)
    assert "with no parameter of yours of that name" in record.message


# layouts of their own, accepted with their row's note: each passes every check
OWN_LAYOUTS = [
    # weight (d_out, d_in), not square, loaded transposed by its param_map function: a layout of its own, declared;
    # without a param_map it fails shapes (shapes_bad_linear_transposed_weight.py, below)
    ("linear", "shapes_ok_linear_torch_layout.py", "parameter 'weight'",
     "a layout of your own (transposed), loaded by your param_map function"),
    # weight (d_in + 1, d_out) with the bias as its last row: named like the reference's weight, shaped its own
    # way, holding more numbers; its param_map function loads both reference parameters into it
    ("linear", "shapes_ok_linear_bias_trick.py", "parameter 'weight'",
     "a layout of your own holding more than the reference's numbers"),
    # (1, D) gamma and beta whose gradients are (D,), as gradlab's own LayerNorm shapes them: p -= lr * g broadcasts
    ("layernorm", "shapes_ok_layernorm_row_params_flat_grads.py", "gradient of 'gamma' (dgamma)",
     "without its leading axes of length 1"),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name, row, note", OWN_LAYOUTS, ids=[t[1][10:-3] for t in OWN_LAYOUTS])
def test_a_layout_of_its_own_passes_every_check(run, zoo, all_pass, dtype, kind, name, row, note):
    result = run(kind, zoo(name), dtype=dtype)
    all_pass(result)
    assert note in rows(result["shapes"])[row]["note"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_renamed_params_with_param_map_dict_pass(run, zoo, dtype):
    record = run("layernorm", zoo("shapes_ok_layernorm_renamed.py"), ["shapes"], dtype=dtype)["shapes"]
    assert record.status == "pass", record.message
    assert "parameter 'scale' (reference 'gamma')" in rows(record)


@pytest.mark.parametrize("kind, name, words", [
    ("attention", "shapes_bad_attention_grad_transposed.py",
     ["attention", "gradient of 'qkv_weight'", "dqkv_weight", "(36, 12)", "(12, 36)"]),
    ("attention", "shapes_bad_attention_flat_weights.py", ["attn_weights", "(4, 5, 5)", "(2, 2, 5, 5)"]),
    ("attention", "softmax_rows_bad_attention_no_attn_weights.py", ["attn_weights is missing", "self.attn_weights"]),
    ("linear", "shapes_bad_linear_transposed_weight.py", ["linear", "parameter 'W'", "'weight'", "(20, 12)",
                                                          "(12, 20)"]),
    ("linear", "shapes_bad_linear_no_bias.py", ["parameter 'bias'", "not found", "(20,)", "found only weight"]),
    ("lm", "repeated_ids_ok_tiny_lm.py", ["'blocks.0.ln1.gamma'", "not found", "more"]),
    ("lm", "shapes_bad_lm_untied_head.py", ["parameter 'lm_head'", "ties it to the token embedding", "not a copy"]),
    ("linear", "shapes_bad_linear_bias_grad_axis0.py", ["gradient of 'biases'", "(1, 5, 7)",
                                                         "it keeps the leading axes (1, 5)", "reshape(-1, 7).sum(axis=0)"]),
    ("attention", "shapes_bad_attention_mask_fixed_T.py", ["forward output at T = 4", "raised",
                                                           "build it for cfg.max_len and slice it"]),
    # sliced, but built for cfg.seq_len: only T = max_len shows it; a decoder layer (several inputs) was not probed
    ("attention", "shapes_bad_attention_mask_for_seq_len.py", ["forward output at T = 8", "raised",
                                                               "every length up to max_len = 8"]),
    ("decoder_layer", "art_decoder_mask_for_seq_len.py", ["forward output at T = 4", "raised",
                                                          "build it for cfg.max_len and slice it"]),
    ("block", "shapes_bad_block_shared_layernorm.py", ["'ln2.gamma' is not found", "ln2 is the same object as ln1",
                                                       "build a second one"]),
    # (its ids stop below the vocabulary's last: caught whatever the batch would have drawn)
    ("embedding", "shapes_bad_embedding_bincount_no_minlength.py",
     ["gradient of 'weight'", "a row per id up to the largest in this batch", "np.bincount(ids, minlength=11)"]),
    # an array whose gradient is under a name gradlab does not know: said with the names looked for
    ("layernorm", "shapes_bad_layernorm_beta_grad_unknown_name.py",
     ["'beta' is not found", "array attributes beta (12,) have no gradient attribute after backward",
      "looked for dbeta, grad_beta, beta_grad"]),
    # a param_map function: no name is missing, the count of numbers shows what discovery could not find
    ("attention", "shapes_bad_attention_hidden_head_grads.py",
     ["the parameters found (all together) is 156 numbers, expected 624 numbers", "W_o, b_o",
      "would go unchecked"]),
])
def test_mismatches_are_caught(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["shapes"])["shapes"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message
    assert record.metrics["mismatches"] >= 1


def test_unmatched_names_are_reported_not_failed(run, zoo, tmp_path):
    # the split Q/K/V module without its param_map: nothing to compare against, and the message says so
    source = open(zoo("shapes_ok_attention_split_qkv.py")).read().replace(
        '@gradlab.register("attention", param_map=load)', '@gradlab.register("attention")')
    path = tmp_path / "split_no_map.py"
    path.write_text(source)
    record = run("attention", str(path), ["shapes"])["shapes"]
    assert record.status == "pass", record.message
    assert "expected parameters not found by name: qkv_weight (12, 36)" in record.message
    assert "param_map=" in record.message


def test_every_row_is_reported_when_backward_returns_the_wrong_shape(zoo):
    # the smoke precondition stops this module in a full run; called directly, shapes shows the whole table
    loaded, registration = registration_for(zoo("shapes_bad_ffn_returns_hidden_grad.py"), "ffn")
    subject = Subject(KINDS["ffn"], registration, runner.config_for("ffn", 0), loaded.name, loaded.files)
    record = runner.run_one(suite.CHECKS["shapes"], subject, 0)
    assert record.status == "fail"
    assert "backward output (dL/dx) has shape (2, 5, 20), expected (2, 5, 12)" in record.message
    table = rows(record)
    assert table["parameter 'w1'"]["ok"] and table["gradient of 'w1' (dw1)"]["ok"]


def test_cross_entropy_rows(run):
    table = rows(run("cross_entropy", None, ["shapes"])["shapes"])
    assert table["loss"]["actual"] == "()" and table["grad_logits"]["actual"] == str((2, 5, 11))
    assert np.all([r["ok"] for r in table.values()])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_correct_twin_of_the_einsum_attention_bugs_passes(run, zoo, all_pass, dtype):
    for seed in (1, 2):
        all_pass(run("attention", zoo("einsum_attention_ok.py"), seed=seed, dtype=dtype), seed)
