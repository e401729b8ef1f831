"""`overfit`: the student's part trained inside gradlab's tiny LM (or its own LM,
or its optimizer on the reference LM) must learn a tiny batch as the reference does."""
import pytest

from gradlab.contract import suite
from gradlab.checks import overfit as ovf
from gradlab.contract.kinds import KINDS

OVERFIT = [c for c in suite.all_checks() if c.name == "overfit"][0]
APPLIES = [k for k, spec in KINDS.items() if OVERFIT.applies(spec)]


def test_applies_to_submodules_the_lm_and_optimizers():
    assert set(APPLIES) == {"layernorm", "ffn", "attention", "embedding", "positional", "block", "lm",
                            "sgd", "adam", "adamw"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", APPLIES)
def test_reference_passes_and_keeps_both_curves(run, kind, dtype):
    record = run(kind, None, ["overfit"], dtype=dtype)["overfit"]
    assert record.status == "pass", record.message
    curve = [v for v in record.details["views"] if v["type"] == "curve"][0]
    assert set(curve["series"]) == {"reference", "yours"}
    assert len(curve["series"]["yours"]) == ovf.STEPS + 1
    m = record.metrics
    # the bar is derived from the reference run, not a constant
    reference = curve["series"]["reference"]
    assert m["limit"] == reference[m["limit_step"]] and m["limit_step"] == ovf.STEPS // 2


@pytest.mark.parametrize("kind, name, words", [
    ("layernorm", "overfit_layernorm_nodx.py", ["layernorm", "ln_f", "the loss went", "your backward", "dL/dx"]),
    ("adam", "overfit_adam_return.py", ["your adam", "less than half as fast", "parameters left without an update"]),
    ("lm", "overfit_lm_order.py", ["your lm", "reference's loss after 15 steps"]),
    ("sgd", "overfit_sgd_ascent.py", ["the loss went up", "the wrong sign"]),
    ("adam", "overfit_adam_swapped_corrections.py", ["the loss went up", "steps too large", "trajectory check"]),
])
def test_broken_fail(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["overfit"])["overfit"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message, (word, record.message)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name", [
    ("attention", "ref_attention_split.py"),      # param_map function, attribute grads, einsum, -1e9
    ("attention", "ref_attention_renamed.py"),
    ("layernorm", "ref_layernorm_mapped.py"),
    ("ffn", "ref_good_parts.py"), ("block", "ref_good_parts.py"),
    ("lm", "overfit_lm_good.py"),
    ("adam", "traj_adam_by_id.py"), ("adamw", "traj_optim_good.py"), ("sgd", "traj_optim_good.py"),
])
def test_correct_variants_pass(run, zoo, kind, name, dtype):
    record = run(kind, zoo(name), ["overfit"], dtype=dtype)["overfit"]
    assert record.status == "pass", record.message
    # same start as the reference: weights were copied in
    assert record.details["views"][0]["series"]["yours"][0] == pytest.approx(
        record.details["views"][0]["series"]["reference"][0], rel=1e-4)


def test_unmappable_names_skip(run, zoo):
    record = run("attention", zoo("ref_attention_split_nomap.py"), ["overfit"])["overfit"]
    assert record.status == "skip" and "param_map" in record.message


def test_forward_bug_is_pointed_at_from_the_first_loss(run, zoo):
    # a forward that differs from the reference shows in the first loss already
    record = run("layernorm", zoo("ref_layernorm_batch.py"), ["overfit"])["overfit"]
    series = record.details["views"][0]["series"]
    assert series["yours"][0] != pytest.approx(series["reference"][0], rel=1e-6)


def test_a_chaotic_setting_cannot_judge_a_correct_part(run, zoo):
    # a tiny LM at d_model = 2 in float32: the reference's loss falls to its bar, then climbs; a correct
    # attention (the same maths, other rounding) parts from it and missed the bar. The reference run again from
    # weights moved by float32's rounding misses it too: the bar says nothing here, and the check says so
    result = run("attention", zoo("grad_ok_attention.py"), checks=["overfit"], seed=21, dtype="float32",
                 seq_len=4, d_model=2)
    record = result["overfit"]
    assert record.status == "skip", record.message
    assert "cannot judge at these settings: training the tiny batch is chaotic here" in record.message
    assert not result.passed


def test_a_reference_curve_that_parts_under_one_rounding_unit_cannot_judge(run, zoo):
    # d_model = 2 in float32 again: the reference moved by one rounding unit happened to reach its bar (0.096
    # apart from its own curve, though), while this correct FFN, whose curve follows the reference's to 3e-7 for
    # 12 steps, missed it: a curve that parts under one rounding unit is chaos, whether or not it reaches the bar
    record = run("ffn", zoo("explore_ok_ffn_layers.py"), checks=["overfit"], seed=8, dtype="float32", seq_len=6,
                 d_model=2, d_ff=8)["overfit"]
    assert record.status == "skip", record.message
    assert "chaotic here" in record.message and "parted from the first by up to" in record.message
