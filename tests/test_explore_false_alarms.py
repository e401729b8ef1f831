"""False alarms `--explore` found on gradlab's own reference modules, fixed by measuring what float32
does at the configuration instead of assuming a few eps (gradlab/numerics/tolerance.py):

- gradient: LayerNorm over D = 2 features in float32 rounds its analytical gradient to ~1e-4 of its size
  (1 / sigma amplifies the rounding of x - mean when the two features are close); the check now measures
  the analytical side's rounding against the float64 copy's gradients (twin_rounding).
- trajectory: Adam with beta2 = 0 divides m by |g|; float32's rounding of the resulting large steps is
  measured by running the reference in float32 on the same numbers.
- overfit: a reference run that itself diverges (float32 overflow) sets no bar: skipped, not failed.

Each fix keeps its sharpness: a real bug at the same tiny configuration is still caught."""
import numpy as np
import pytest

import gradlab
from gradlab.checks import gradient as gradient_check
from gradlab.contract.kinds import get_kind
from gradlab.execution.loader import reference
from gradlab.execution.plan import config_for, rng_for
from gradlab.execution.subject import Subject
from gradlab.numerics import tolerance as policy

TINY_BLOCK = dict(batch_size=1, seq_len=1, num_heads=1, d_model=2, d_ff=1, eps=1e-6)
TINY_LAYERNORM = dict(batch_size=1, seq_len=1, d_model=2, eps=1e-6)
TINY_LM = dict(batch_size=1, seq_len=1, num_heads=1, d_model=2, d_ff=1, vocab_size=2, max_len=1, n_layers=1)
EPS32 = float(np.finfo(np.float32).eps)


def gradient_record(kind, seed, impl=None, dtype="float32", **cfg):
    return gradlab.check(kind, impl=impl, checks=["gradient"], seed=seed, dtype=dtype, **cfg)["gradient"]


# ---- gradient: the analytical side's rounding, measured ------------------------------------------

@pytest.mark.parametrize("kind, cfg, seeds", [
    ("block", TINY_BLOCK, range(10)),         # seed 1: x and ln1.gamma failed, relative error 1e-4 at tolerance 3.2e-5
    ("layernorm", TINY_LAYERNORM, range(10)),
    ("lm", TINY_LM, range(1, 3)),             # a final LayerNorm over 2 features: pos_embedding's gradient cancels
    # the other two configurations --explore 30 shrank to on the references before the fix (seeds 1 and 2)
    ("block", dict(batch_size=1, seq_len=2, num_heads=1, d_model=2, d_ff=1), range(1, 2)),
    ("lm", dict(batch_size=1, num_heads=1, d_model=2, d_ff=1, vocab_size=2, max_len=7), range(2, 3)),
])
def test_references_pass_gradient_in_float32_where_layernorm_over_two_features_rounds_worst(kind, cfg, seeds):
    for seed in seeds:
        record = gradient_record(kind, seed, **cfg)
        assert record.status == "pass", (seed, record.message)


@pytest.mark.parametrize("kind, cfg, seeds", [
    ("ffn", dict(batch_size=1, seq_len=2, d_model=2, d_ff=2), [3, 5, 9]),
    ("attention", dict(batch_size=1, seq_len=2, num_heads=3, d_model=6), [4, 25]),
])
def test_the_float64_copys_gradient_is_measured_at_the_point_itself(kind, cfg, seeds):
    """The rounding of a float32 module's gradient is measured against its float64 copy's; the copy's last
    forward before that backward was at inputs moved by 2^-30 (the 'does it compute in float32?' probe), so its
    gradient was 1e-9 of itself off, and the references failed at these seeds (a probe, --explore)."""
    for seed in seeds:
        record = gradient_record(kind, seed, **cfg)
        assert record.status == "pass", (seed, record.message)


def _setup(kind, seed, dtype="float32", **cfg):
    subject = Subject(get_kind(kind), reference().get(kind), config_for(kind, seed, dtype=dtype, **cfg), "reference")
    rng = rng_for(seed, "gradient")
    setup = gradient_check.ModuleSetup(subject, rng)
    return setup, setup.problem(rng)


def test_the_cause_float32_rounds_the_tiny_blocks_input_gradient_far_beyond_a_few_eps():
    # the float32 gradient against the float64 copy's, at the same weights: 1e-4 of its size, ~1000 eps
    _, problem = _setup("block", 1, **TINY_BLOCK)
    x = next(t for t in problem.tensors if t.name == "x")
    assert x.rounding is not None
    relative = float(np.abs(x.rounding).max() / np.abs(x.analytical).max())
    assert 100 * EPS32 < relative < policy.TWIN_MATCH
    # at the default sizes the same measurement is a few eps: the check gets sharper there, not looser
    _, problem = _setup("block", 1)
    for t in problem.tensors:
        assert t.rounding is not None
        assert float(np.abs(t.rounding).max()) <= 64 * EPS32 * float(np.abs(t.analytical).max()), t.name


def test_a_float64_module_has_nothing_to_measure():
    _, problem = _setup("block", 1, dtype="float64", **TINY_BLOCK)
    assert all(t.rounding is None for t in problem.tensors)


def test_twin_rounding_is_trusted_only_as_rounding():
    a64 = np.array([1.0, -2.0, 0.5])
    a32 = (a64 + np.array([1e-6, 0.0, -1e-6])).astype(np.float32)
    r = policy.twin_rounding(a32, a64, 2.0)
    assert np.allclose(r, a32.astype(np.float64) - a64)            # signed: the exact error along any direction
    # more than TWIN_MATCH of the largest gradient: state kept between calls or a dtype-dependent path
    assert policy.twin_rounding(a64 + 0.01, a64, 2.0) is None
    # relative to the largest gradient of all tensors, not a tensor whose own gradient cancels to ~0
    assert policy.twin_rounding(np.array([1.01e-4]), np.array([1e-4]), 1.0) is not None
    # a float64 copy that returns float32 gradients rounds like float32 itself: nothing measured
    assert policy.twin_rounding(a32, a64.astype(np.float32), 2.0) is None
    assert policy.twin_rounding(a32, np.array([1.0, np.nan, 0.5]), 2.0) is None


@pytest.mark.parametrize("kind", ["layernorm", "block"])
def test_a_missing_layernorm_term_is_caught_at_the_same_tiny_size_in_float32(zoo, kind):
    cfg = TINY_LAYERNORM if kind == "layernorm" else TINY_BLOCK
    for seed in range(5):
        record = gradient_record(kind, seed, impl=zoo("explorefix_bad_layernorm_missing_term.py"), **cfg)
        assert record.status == "fail", (seed, record.message)
        assert "input gradient 'x'" in record.message


def test_a_gamma_gradient_off_by_a_tenth_of_a_percent_is_caught_at_the_same_tiny_size_in_float32(zoo):
    # 1e-3 is at this size's resolution (the pass message says ~9e-4 in one element): caught unless the random
    # direction puts little weight on that element (59 of 60 seeds measured)
    missed = []
    for seed in range(10):
        record = gradient_record("block", seed, impl=zoo("explorefix_bad_block_gamma_scaled.py"), **TINY_BLOCK)
        if not (record.status == "fail" and "'ln1.gamma'" in record.message):
            missed.append((seed, record.status, record.message))
    assert len(missed) <= 1, missed


# ---- trajectory: the float32 rounding of this trajectory, measured on the reference ---------------

@pytest.mark.parametrize("kind, cfg", [("adam", dict(beta2=0.0)), ("adam", dict(beta1=0.5, beta2=0.0)),
                                       ("adamw", dict(beta2=0.0)), ("adam", {})])
def test_reference_adams_pass_trajectory_in_float32_with_beta2_zero(kind, cfg):
    for seed in (1, 2):
        record = gradlab.check(kind, checks=["trajectory"], seed=seed, dtype="float32", **cfg)["trajectory"]
        assert record.status == "pass", (seed, record.message)


@pytest.mark.parametrize("name, kind, words", [
    # with beta2 = 0, v's correction 1 - beta2**t is 1: "no bias correction" reproduces it just as well
    ("red_fn_bad_adam_m_uncorrected.py", "adam", "divide m by (1 - beta1**t)"),
    ("red_fn_bad_adamw_decay_after_update.py", "adamw", "decayed after"),
])
def test_optimizer_bugs_are_still_caught_in_float32_with_beta2_zero(zoo, name, kind, words):
    for seed in (1, 2):
        record = gradlab.check(kind, impl=zoo(name), checks=["trajectory"], seed=seed, dtype="float32",
                               beta2=0.0)["trajectory"]
        assert record.status == "fail", (seed, record.message)
        assert words in record.message


def test_the_trajectory_tolerance_in_float64_is_the_tables():
    record = gradlab.check("adam", checks=["trajectory"], seed=1, beta2=0.0)["trajectory"]
    assert record.status == "pass"
    assert "tolerance 1e-10)" in record.message and "rounds to" not in record.message


# ---- overfit: a diverging reference sets no bar -------------------------------------------------

def test_overfit_is_skipped_when_the_reference_run_diverges_too():
    record = gradlab.check("adam", checks=["overfit"], seed=2, dtype="float32", beta1=0.5, beta2=0.0)["overfit"]
    # beta2 = 0 in float32: the reference's own run blows up or climbs, by seed; either way the check says so
    assert record.status == "skip", record.message
    assert ("the reference run diverged on the tiny batch too" in record.message
            or "the reference run did not learn the tiny batch either" in record.message), record.message


def test_a_part_computing_in_float32_is_held_to_the_float32_reference_in_overfit(zoo):
    """At d_model = 2 a float32 LayerNorm inside the float64 tiny LM learns as the float32 reference does, not as
    the float64 one (its input gradient is lost to rounding): judged against the float32 curve (a probe, --explore)."""
    record = gradlab.check("layernorm", impl=zoo("overfit_ok_layernorm_float32_inside.py"), checks=["overfit"],
                           seed=539107709, seq_len=4, d_model=2, eps=1e-6)["overfit"]
    assert record.status == "pass" and "the bar is the reference's in float32" in record.message, record.message
