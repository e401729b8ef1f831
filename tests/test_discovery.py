"""Parameter discovery (CONTRACT §2): the three ways, in order; nested
modules with dotted names; tied arrays once; forward caches are not parameters."""
import numpy as np
import pytest

import gradlab
from gradlab.execution.discovery import arrays_at_build, find_slots
from gradlab.execution.loader import load, reference
from gradlab.execution.runner import config_for
from gradlab.execution.subject import Subject


def discover(module, x=np.ones((2, 3))):
    """What gradlab does: note the arrays at build, run forward/backward, find slots."""
    at_build = arrays_at_build(module)
    if hasattr(module, "forward"):
        module.backward(np.ones_like(module.forward(x)))
    return {s.name: s for s in find_slots(module, at_build)}


class ParamsDicts:                      # way 1
    def __init__(self):
        self.params = {"w": np.ones(3), "b": np.zeros(3)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x * self.params["w"] + self.params["b"]

    def backward(self, g):
        self.grads["w"] = (g * self.x).sum(0)
        self.grads["b"] = g.sum(0)
        return g * self.params["w"]


class ParametersMethod:                 # way 2, gradients()
    def __init__(self):
        self._p = {"scale": np.ones(3)}
        self._g = {}

    def parameters(self):
        return self._p

    def gradients(self):
        return self._g

    def forward(self, x):
        self.x = x
        return x * self._p["scale"]

    def backward(self, g):
        self._g["scale"] = (g * self.x).sum(0)
        return g * self._p["scale"]


class ParametersMethodGradsDict:       # way 2, gradients in a grads dict
    def __init__(self):
        self._p = {"scale": np.ones(3)}
        self.grads = {}

    def parameters(self):
        return self._p

    def forward(self, x):
        self.x = x
        return x * self._p["scale"]

    def backward(self, g):
        self.grads["scale"] = (g * self.x).sum(0)
        return g * self._p["scale"]


class AttributePairs:                   # way 3, all three spellings
    def __init__(self):
        self.a = np.ones(3)
        self.b = np.ones(3)
        self.c = np.ones(3)

    def forward(self, x):
        self.x = x                      # a cache, not a parameter
        return x * self.a * self.b * self.c

    def backward(self, g):
        self.da = (g * self.x * self.b * self.c).sum(0)
        self.grad_b = (g * self.x * self.a * self.c).sum(0)
        self.c_grad = (g * self.x * self.a * self.b).sum(0)
        self.dx = g * self.a * self.b * self.c          # the input gradient, also not a parameter
        return self.dx


def test_way_1_params_and_grads_dicts():
    slots = discover(ParamsDicts())
    assert list(slots) == ["w", "b"]
    np.testing.assert_array_equal(slots["w"].grad(), [2, 2, 2])
    assert slots["w"].describe_grad() == "grads['w']"


@pytest.mark.parametrize("cls", [ParametersMethod, ParametersMethodGradsDict])
def test_way_2_parameters_method(cls):
    m = cls()
    slots = discover(m)
    assert list(slots) == ["scale"]
    assert slots["scale"].value is m._p["scale"]          # the student's own array, never a copy
    np.testing.assert_array_equal(slots["scale"].grad(), [2, 2, 2])


def test_way_3_attribute_pairs_without_caches():
    slots = discover(AttributePairs())
    assert sorted(slots) == ["a", "b", "c"]                # not x (self.dx exists), not dx
    assert [slots[n].describe_grad() for n in "abc"] == ["da", "grad_b", "c_grad"]


def test_without_build_time_arrays_a_cache_would_look_like_a_parameter():
    """Why discovery notes the arrays a module has when built: x/dx is a pair too."""
    m = AttributePairs()
    m.backward(np.ones_like(m.forward(np.ones((2, 3)))))
    assert "x" in {s.name for s in find_slots(m)}
    fresh = AttributePairs()
    ids = arrays_at_build(fresh)
    fresh.backward(np.ones_like(fresh.forward(np.ones((2, 3)))))
    assert "x" not in {s.name for s in find_slots(fresh, ids)}


def test_parameters_returning_a_list_falls_through_to_attribute_pairs():
    class TorchHabit(AttributePairs):
        def parameters(self):
            return [self.a, self.b, self.c]

    assert sorted(discover(TorchHabit())) == ["a", "b", "c"]


def test_params_dict_comes_before_attribute_pairs():
    m = ParamsDicts()
    m.extra = np.ones(3)
    m.dextra = np.ones(3)
    assert list(discover(m)) == ["w", "b"]


def test_integer_arrays_are_not_parameters():
    class WithIds(AttributePairs):
        def __init__(self):
            super().__init__()
            self.ids = np.arange(3)
            self.dids = np.arange(3)

    assert "ids" not in discover(WithIds())


class Block:
    def __init__(self):
        self.ln = ParamsDicts()
        self.attn = AttributePairs()
        self.layers = [ParametersMethod(), ParametersMethod()]
        self.heads = {"first": ParamsDicts()}

    def forward(self, x):
        for m in (self.ln, self.attn, *self.layers, self.heads["first"]):
            x = m.forward(x)
        return x

    def backward(self, g):
        for m in reversed((self.ln, self.attn, *self.layers, self.heads["first"])):
            g = m.backward(g)
        return g


def test_nested_modules_get_dotted_names_including_lists_and_dicts():
    names = list(discover(Block()))
    assert names == ["ln.w", "ln.b", "attn.a", "attn.b", "attn.c", "layers.0.scale", "layers.1.scale",
                     "heads.first.w", "heads.first.b"]


def test_tied_arrays_are_reported_once_under_the_first_name():
    class Tied:
        def __init__(self):
            self.params = {"token_embedding": np.ones((4, 3))}
            self.grads = {}
            self.head = AttributePairs()
            self.head.a = self.params["token_embedding"][0]      # a view is another array object
            self.out = ParamsDicts()
            self.out.params["w"] = self.params["token_embedding"]  # the same array, tied

    slots = find_slots(Tied())
    names = [s.name for s in slots]
    assert names.count("token_embedding") == 1 and "out.w" not in names


def test_reference_lm_names_blocks_with_list_indices_and_ties_once():
    cfg = config_for("lm", seed=0)
    lm = reference().get("lm").target(cfg)
    ids = np.zeros((cfg.batch_size, cfg.seq_len), dtype=int)
    slots = discover(lm, ids)
    expected = gradlab.KINDS["lm"].param_shapes(cfg)
    assert sorted(slots) == sorted(expected)             # blocks.0.attn.qkv_weight, ..., ln_f.beta
    assert "blocks.1.attn.qkv_weight" in slots
    assert {n: s.value.shape for n, s in slots.items()} == expected


def test_student_files_expose_parameters_every_way(zoo, run):
    """End to end: a student's block loaded from its file, as the checks see it."""
    result = run("block", zoo("found_block.py"), ["smoke", "gradient"])
    assert result.passed, [c.message for c in result.checks]
    assert result["smoke"].metrics["parameters"] == 12
    loaded = load(zoo("found_block.py"))
    cfg = config_for("block", seed=0)
    subject = Subject(gradlab.KINDS["block"], loaded.get("block"), cfg, loaded.name, loaded.files)
    _, slots = subject.fresh(np.random.default_rng(0))
    assert [s.name for s in slots] == ["ln1.gamma", "ln1.beta",                     # attribute pairs
                                       "attn.qkv_weight", "attn.qkv_bias", "attn.out_weight", "attn.out_bias",
                                       "ln2.gamma", "ln2.beta",
                                       "ffn.w1", "ffn.b1", "ffn.w2", "ffn.b2"]       # parameters()/gradients()


@pytest.mark.parametrize("kind, cfg", [("layernorm", {}), ("ffn", {}), ("ffn", {"activation": "relu"}),
                                       ("attention", {})], ids=["layernorm", "ffn", "ffn-relu", "attention"])
def test_student_parts_pass(zoo, run, kind, cfg):
    result = run(kind, zoo("found_parts.py"), ["smoke", "gradient"], **cfg)
    assert result.passed, [c.message for c in result.checks]


def test_parameters_list_plus_attribute_grads_passes(zoo, run):
    result = run("linear", zoo("found_linear_list_parameters.py"), ["smoke", "gradient"])
    assert result.passed, [c.message for c in result.checks]
    assert result["smoke"].metrics["parameters"] == 2


def test_a_bug_in_a_nested_child_is_named_with_its_dotted_name(zoo, run):
    result = run("block", zoo("found_block_scaled_ffn.py"), ["smoke", "gradient"])
    assert result["gradient"].status == "fail"
    assert "'ffn.w2'" in result["gradient"].message


def test_no_discoverable_parameters_fails_smoke_with_the_three_ways(run):
    class Hidden:
        def __init__(self):
            self.weights = {"g": np.ones(12)}           # neither params, parameters() nor pairs

        def forward(self, x):
            return x * self.weights["g"]

        def backward(self, g):
            return g * self.weights["g"]

    result = run("layernorm", lambda cfg: Hidden(), ["smoke", "gradient"])
    smoke = result["smoke"]
    assert smoke.status == "fail" and not result.passed
    assert "found no parameters" in smoke.message and "module.params" in smoke.message
    assert "module.parameters()" in smoke.message and "weight/dweight" in smoke.message
    assert result["gradient"].status == "skip"
