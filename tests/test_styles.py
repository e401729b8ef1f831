"""The "styles" zoo (tests/zoo/styles/): correct modules written the way different
kinds of public NumPy code are written (property-exposed dicts, DLFS lists,
Parameter objects with .data/.grad or .value/.gradient, ndarray subclasses carrying .grad, __slots__, CS231n functions
wrapped in a class, a linear 7 wide or d_model wide, float32-only libraries, an
epsilon inside the log, callable objects, forward-only modules), each registered
with the thinnest wrapper CONTRACT allows. Every correct one passes every check
that applies, over 20 seeds in float64 and float32; each has a broken twin (a
subclass overriding only the buggy method) that fails with the right words."""
from pathlib import Path

import numpy as np
import pytest

import gradlab
from gradlab.contract import suite

STYLES = Path(__file__).parent / "zoo" / "styles"
GRADIENT_BASED = {"gradient", "backward", "repeated_ids", "overfit"}

CORRECT = [
    ("style_property_dicts.py", "layernorm"),
    ("style_dlfs_lists.py", "linear"),
    ("style_dlfs_lists.py", "ffn"),
    ("style_parameter_objects.py", "attention"),
    ("style_slots.py", "embedding"),
    ("style_cs231n_functional.py", "linear"),
    ("style_float32_param_value.py", "ffn"),
    ("style_float32_param_value.py", "softmax"),
    ("style_log_eps_loss.py", "cross_entropy"),
    ("style_callable_object.py", "softmax"),
    ("style_callable_object.py", "adam"),
    ("style_forward_only.py", "attention"),
    ("style_forward_only.py", "layernorm"),
    # a float -1e9 mask buffer and running statistics were counted as parameters and overwritten with random
    # numbers: the mask then leaked the future (causality, softmax_rows) and reference could not match its names
    ("style_forward_only_float_mask.py", "attention"),
    ("style_grads_by_name.py", "layernorm"),
    ("style_default_float64_params.py", "layernorm"),
    ("style_float32_inside.py", "ffn"),
    ("style_nnfs_row_bias.py", "ffn"),
    ("style_ndarray_subclass.py", "layernorm"),
    ("style_float32_backward.py", "embedding"),
    ("style_float32_backward.py", "positional"),
    ("style_head_lists.py", "attention"),
    ("style_params_tree.py", "ffn"),
    ("style_namespace_children.py", "ffn"),
    ("style_torch_module_internals.py", "ffn"),
    ("style_grads_d_keys.py", "ffn"),
]
FORWARD_ONLY = {("style_forward_only.py", "attention"): "raised NotImplementedError",
                ("style_forward_only_float_mask.py", "attention"): "raised NotImplementedError",
                ("style_forward_only.py", "layernorm"): "has no backward() method"}

# twin file, kind, the check that must fail, words its message must contain
BROKEN = [
    ("style_property_dicts_bad.py", "layernorm", "gradient", ["input gradient 'x'", "mean"]),
    ("style_dlfs_lists_bad.py", "linear", "gradient", ["'params[0]'", "transpose"]),
    ("style_parameter_objects_bad.py", "attention", "gradient", ["'qkv_bias'", "- sum(dA * A)"]),
    ("style_slots_bad.py", "embedding", "gradient", ["'weight'", "more than once", "np.add.at"]),
    ("style_slots_bad.py", "embedding", "repeated_ids", ["times in the batch", "upstream gradients", "np.add.at"]),
    ("style_cs231n_functional_bad.py", "linear", "gradient", ["'b'", "mean over the 10 tokens instead of the sum"]),
    ("style_float32_param_value_bad.py", "ffn", "gradient", ["'b1'", "ReLU derivative"]),
    ("style_log_eps_loss_bad.py", "cross_entropy", "gradient", ["grad_logits", "10 x the reference", "divide"]),
    ("style_callable_object_bad.py", "softmax", "finite", ["NaN", "subtract the row maximum"]),
    ("style_callable_object_bad.py", "adam", "trajectory", ["after step 1", "eps is inside the square root"]),
    ("style_forward_only_bad.py", "attention", "softmax_rows", ["future position 1", "off by one"]),
    ("style_forward_only_bad.py", "attention", "causality", ["sees the future"]),
    ("style_forward_only_float_mask_bad.py", "attention", "causality", ["sees the future"]),
    ("style_grads_by_name_bad.py", "layernorm", "reference", ["unbiased variance", "ddof=1"]),
    ("style_default_float64_params_bad.py", "layernorm", "gradient", ["input gradient 'x'", "the variance"]),
    ("style_float32_inside_bad.py", "ffn", "gradient", ["is wrong", "a mean where a sum belongs", "computes in float32"]),
    ("style_nnfs_row_bias_bad.py", "ffn", "gradient", ["'dense2.biases'", "a mean where a sum belongs"]),
    ("style_ndarray_subclass_bad.py", "layernorm", "gradient", ["input gradient 'x'", "the mean term"]),
    ("style_float32_backward_bad.py", "embedding", "repeated_ids", ["times in the batch", "overwrite instead of np.add.at"]),
    ("style_float32_backward_bad.py", "positional", "gradient", ["'weight'", "0.5 x the right one"]),
    # parameters gradlab did not find would be skipped silently: each twin's bug is in one of them
    ("style_head_lists_bad.py", "attention", "gradient", ["'W_k.", "is wrong"]),
    ("style_params_tree_bad.py", "ffn", "gradient", ["'c_fc.", "is wrong"]),
    ("style_grads_d_keys_bad.py", "ffn", "gradient", ["'b1'", "is wrong"]),
    ("style_torch_module_internals_bad.py", "ffn", "gradient", ["'_modules.fc", ".bias'", "mean over the 10 tokens"]),
    # both biases are means: the worse one is named first, by seed, each with its own right sentence
    ("style_namespace_children_bad.py", "ffn", "gradient",
     ["'down.b'", "'up.b'", ("'down.b' is the mean over the 10 tokens", "a mean where a sum belongs")]),
]


def _path(name):
    return str(STYLES / name)


def _ids(rows):
    return [f"{r[0][6:-3]}-{r[1]}" + (f"-{r[2]}" if len(r) > 3 else "") for r in rows]


@pytest.mark.parametrize("name, kind", CORRECT, ids=_ids(CORRECT))
def test_correct_style_passes_every_check(name, kind):
    result = gradlab.check(kind, impl=_path(name), seed=0)
    bad = [(c.name, c.status, c.message) for c in result.checks if c.status in ("fail", "error")]
    assert result.passed, bad
    skipped = {c.name: c.message for c in result.checks if c.status == "skip"}
    if (name, kind) in FORWARD_ONLY:
        # every forward check ran and passed; exactly the gradient-based ones are skipped, with the reason
        assert set(skipped) == GRADIENT_BASED & {c.name for c in suite.applicable(gradlab.KINDS[kind])}, skipped
        assert all(FORWARD_ONLY[(name, kind)] in m and "forward-only" in m for m in skipped.values()), skipped
        assert "forward runs" in result["smoke"].message
    else:
        assert not skipped, skipped


def _cheap_checks(kind):
    """Every applicable check but overfit (seed-insensitive and the costly one: the table test runs it)."""
    return [c.name for c in suite.applicable(gradlab.KINDS[kind]) if c.name != "overfit"]


@pytest.mark.parametrize("name, kind", CORRECT, ids=_ids(CORRECT))
def test_no_false_alarm_over_20_seeds_in_both_dtypes(name, kind):
    """Measured: about 5 s of CPU for the whole table (14 modules x 40 runs, overfit left out)."""
    alarms = []
    for dtype in ("float64", "float32"):
        for seed in range(20):
            result = gradlab.check(kind, impl=_path(name), checks=_cheap_checks(kind), seed=seed, dtype=dtype)
            alarms += [(dtype, seed, c.name, c.message) for c in result.checks if c.status in ("fail", "error")]
    assert not alarms, alarms[:3]


@pytest.mark.parametrize("name, kind, check, words", BROKEN, ids=_ids(BROKEN))
def test_broken_twin_fails_with_the_right_words(name, kind, check, words):
    result = gradlab.check(kind, impl=_path(name), seed=0)
    assert not result.passed
    record = result[check]
    assert record.status == "fail", (record.status, record.message)
    for w in words:         # a tuple: any one of its wordings
        assert any(alt in record.message for alt in (w if isinstance(w, tuple) else (w,))), (w, record.message)


def test_float64_parameters_under_float32_judged_in_float32():
    """np.ones(d) parameters stay float64 under --dtype float32, while a LayerNorm's mean and variance come
    from the float32 x: the gradient is judged at the precision the module computed in (its float32 input's),
    not the float64 of its output and parameters (that failed the correct module, README's example among
    them); the missing variance term is still named."""
    for name in ("style_default_float64_params.py", "../../../examples/student_modules.py"):
        result = gradlab.check("layernorm", impl=_path(name), checks=["gradient"], seed=0, dtype="float32")
        assert result.passed, result["gradient"].message
    bad = gradlab.check("layernorm", impl=_path("style_default_float64_params_bad.py"), checks=["gradient"], seed=0,
                        dtype="float32")["gradient"]
    assert bad.status == "fail" and "the variance" in bad.message, bad.message


def test_a_row_bias_is_the_reference_bias():
    """nnfs keeps a bias as a (1, n) row: the same numbers as the reference's (n,), shown as such by
    `shapes` and loaded by broadcasting (it failed shapes, reference and overfit); a (2, n) one is not."""
    result = gradlab.check("ffn", impl=_path("style_nnfs_row_bias.py"), checks=["shapes", "reference"], seed=0)
    assert result.passed, [(c.name, c.message) for c in result.checks]
    rows = {r["tensor"]: r for r in result["shapes"].details["views"][0]["rows"]}
    row = rows["parameter 'dense1.biases' (reference 'b1')"]
    assert (row["expected"], row["actual"], row["ok"]) == ("(20,)", "(1, 20)", True) and "accepted" in row["note"]
    from gradlab.contract.kinds import same_layout
    assert same_layout((1, 20), (20,)) and same_layout((1, 1, 20), (20,)) and same_layout((20,), (20,))
    assert not same_layout((2, 20), (20,)) and not same_layout((20, 1), (20,)) and not same_layout((1, 20), (1, 20, 1))


def test_one_wrong_element_of_a_module_computing_in_float32_is_found(monkeypatch):
    """A module that computes in float32 whatever cfg.dtype says has no float64 copy to take finite
    differences of; judged as float32 (its float64 output is float32 numbers) instead of float64, whose
    rounding noise passed one bias element 1.5x too large ("catches a relative error of 4e+00"). The bias is
    also judged along its own direction (as in float16): jointly, 12 of ~500 entries were diluted."""
    monkeypatch.syspath_prepend(str(STYLES))
    from style_float32_inside import FFN

    class OneElement(FFN):
        def backward(self, dy):
            dx = super().backward(dy)
            b2 = self.grads["b2"]
            b2[np.argmax(np.abs(b2))] *= 1.5        # its largest element: a typical one can be below the resolution
            return dx

    for dtype in ("float64", "float32"):     # in float32, its "float64 copy" computes in float32 too: not used
        for seed in range(5):
            record = gradlab.check("ffn", impl=lambda cfg: OneElement(cfg.d_model, cfg.d_ff, cfg.np_dtype,
                                                                      np.random.default_rng(cfg.seed)),
                                   checks=["gradient"], seed=seed, dtype=dtype)["gradient"]
            assert record.status == "fail" and "'b2'" in record.message and "computes in float32" in record.message, \
                (dtype, seed, record.message)


def test_every_style_has_a_broken_twin():
    correct = {p.name for p in STYLES.glob("style_*.py") if not p.name.endswith("_bad.py")}
    twins = {p.name[:-len("_bad.py")] + ".py" for p in STYLES.glob("style_*_bad.py")}
    assert correct == twins
    assert correct == {name for name, _ in CORRECT}
    kinds = {kind for _, kind in CORRECT}
    assert {"linear", "layernorm", "ffn", "attention", "embedding", "cross_entropy", "softmax", "adam"} <= kinds
