"""Backward variants (gradlab/backward_variants.py): when the gradient check fails,
a known-buggy backward that reproduces every one of the student's gradients on
the student's weights is named in the message; one that does not, or a correct
module, gets nothing extra."""
import numpy as np
import pytest

from gradlab.diagnosis import backward_variants
from gradlab.checks.gradient import ModuleSetup
from gradlab.execution.discovery import find_slots
from gradlab.contract.kinds import get_kind
from gradlab.execution.loader import load, reference
from gradlab.execution.runner import config_for
from gradlab.execution.subject import Subject
from gradlab.execution.weights import random_reference

# file, kind, cfg overrides, key words of the named cause
BROKEN = [
    ("red_mod_attention_no_softmax_jacobian.py", "attention", {}, ["`- sum(dA * A)`", "and the 1/sqrt(d_k)"]),
    ("grad_bad_attention_softmax_term.py", "attention", {}, ["`- sum(dA * A)`", "softmax Jacobian"]),
    ("grad_bad_attention_no_scale.py", "attention", {}, ["leaves out the 1/sqrt(d_k) scale"]),
    ("red_mod_attention_scale_dk_bwd.py", "attention", {}, ["scale twice", "1/d_k"]),
    ("bwdvar_attention_dk_no_transpose.py", "attention", {}, ["dK as dscores @ q", "dscores^T @ q"]),
    ("bwdvar_attention_dv_no_transpose.py", "attention", {}, ["dV as A @ dctx", "A^T @ dctx"]),
    # W_q, W_k, W_v attributes and a param_map function: the weights go back into the reference through
    # numbered entries (each student entry says which reference entry it was copied from)
    ("bwdvar_attention_heads_loop_no_jacobian.py", "attention", {}, ["`- sum(dA * A)`", "softmax Jacobian"]),
    ("red_mod_ffn_exact_gelu_grad.py", "ffn", {}, ["exact GELU", "tanh approximation"]),
    ("bwdvar_ffn_relu_grad.py", "ffn", {}, ["ReLU derivative (h > 0)", "forward computes GELU"]),
    ("bwdvar_ffn_at_output.py", "ffn", {}, ["at the activation's output", "pre-activation h"]),
    ("bwdvar_ffn_tanh_constant.py", "ffn", {}, ["as a constant", "t depends on h"]),
    ("bwdvar_ffn_gelu_second_term_doubled.py", "ffn", {}, ["drops the 0.5 of GELU's second term", "product rule"]),
    ("bwdvar_ffn_gelu_grad_relu_fwd.py", "ffn", {"activation": "relu"}, ["GELU's derivative", "(h > 0)"]),
    # it said "a constant factor of 2 (or num_heads, B (batch size) ...)": an FFN has no heads
    ("bwdvar_ffn_gelu_no_leading_half.py", "ffn", {}, ["drops the leading 0.5 of GELU's derivative",
                                                       "w2 and b2 right"]),
    ("red_mod_block_no_residual_bwd.py", "block", {}, ["residual (skip) path of the attention sub-layer"]),
    ("bwdvar_block_no_ffn_residual.py", "block", {}, ["residual (skip) path of the FFN sub-layer"]),
    ("bwdvar_block_no_residuals.py", "block", {}, ["skip) paths of both sub-layers"]),
    ("bwdvar_block_attn_gets_upstream.py", "block", {}, ["upstream gradient grad_out instead of dh"]),
    ("bwdvar_linear_torch_dx_transposed.py", "linear", {}, ["input gradient with the weight the wrong way round"]),
    # layers made of layers: every LayerNorm (or attention) inside with the mistake
    ("bwdvar_block_ln_no_gamma.py", "block", {}, ["leaves gamma out of LayerNorm's backward"]),
    ("bwdvar_block_attn_no_jacobian.py", "block", {}, ["`- sum(dA * A)`", "in the attention's backward"]),
    ("bwdvar_lm_ln_no_variance.py", "lm", {}, ["variance term of LayerNorm's backward"]),
    ("bwdvar_encoder_ln_no_variance.py", "encoder_layer", {}, ["variance term of LayerNorm's backward"]),
    ("bwdvar_decoder_ln_no_mean.py", "decoder_layer", {}, ["mean term of LayerNorm's backward"]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, kind, cfg, words", BROKEN, ids=[row[0][:-3] for row in BROKEN])
def test_the_buggy_backward_is_named(run, zoo, name, kind, cfg, words, dtype):
    record = run(kind, zoo(name), ["gradient"], dtype=dtype, **cfg)["gradient"]
    assert record.status == "fail", record.message
    assert "match a backward that" in record.message, record.message
    for w in words:
        assert w in record.message, (w, record.message)


def test_a_wrong_forward_with_a_matching_backward_names_no_backward_variant(run, zoo):
    """Forward scales by 1/d_k, backward by 1/sqrt(d_k): no backward of the reference reproduces
    that (the reference's forward differs), so the pattern diagnosis speaks, not a variant."""
    record = run("attention", zoo("red_mod_attention_scale_dk_fwd.py"), ["gradient"])["gradient"]
    assert record.status == "fail" and "match a backward" not in record.message, record.message
    assert "sqrt(d_k)" in record.message


def _subject(impl, kind, **cfg):
    loaded = load(impl) if impl else reference()
    return Subject(get_kind(kind), loaded.get(kind), config_for(kind, 0, **cfg), loaded.name, loaded.files)


CORRECT = [(None, "attention", "gelu"), (None, "ffn", "gelu"), (None, "ffn", "relu"), (None, "block", "gelu"),
           (None, "block", "relu"), ("red_mod_attention_ok_einsum.py", "attention", "gelu"),
           ("grad_ok_attention_mask_1e9.py", "attention", "gelu"), ("red_mod_ffn_ok_activation.py", "ffn", "gelu"),
           ("red_mod_ffn_ok_activation.py", "ffn", "relu"), ("red_mod_block_ok_nested.py", "block", "gelu"),
           ("grad_ok_ffn_relu.py", "ffn", "relu"), (None, "lm", "gelu"), ("bwdvar_linear_torch_ok.py", "linear", "gelu"), (None, "encoder_layer", "relu"),
           (None, "decoder_layer", "relu"), (None, "seq2seq", "relu"), ("bwdvar_encoder_ok_cs231n.py", "encoder_layer", "relu"),
           ("art_decoder_ok.py", "decoder_layer", "relu"), ("red_mod_lm_ok_tied.py", "lm", "gelu")]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, kind, activation", CORRECT, ids=[f"{k}-{n or 'reference'}-{a}" for n, k, a in CORRECT])
def test_correct_modules_match_no_variant(zoo, name, kind, activation, dtype):
    """Asked directly (the check never asks on a pass): the correct backward matches first."""
    subject = _subject(zoo(name) if name else None, kind, dtype=dtype, activation=activation)
    rng = np.random.default_rng(1)
    problem = ModuleSetup(subject, rng).problem(rng)
    assert backward_variants.explain(subject, problem.tensors, problem.context, problem.eps_analytical) is None
    tol = backward_variants.match_tolerance(problem.eps_analytical)
    right, variants = backward_variants.compare(subject, problem.tensors, problem.context, tol=tol)
    # errors in multiples of the tolerance: the correct backward reproduces the student's gradients...
    assert right <= 0.1
    assert variants and min(err for err, _ in variants) > 1    # ...and no variant does


@pytest.mark.parametrize("kind", sorted(backward_variants.VARIANTS))
def test_the_variants_are_built_on_the_current_reference_backward(kind):
    """With the mistake switched off, the variants' code is the reference backward (a change to
    modules/*.py that is not carried over here would make every variant silently wrong)."""
    cfg = config_for(kind, 0)
    rng = np.random.default_rng(0)
    ref = random_reference(get_kind(kind), cfg, rng)
    inputs = get_kind(kind).make_inputs(cfg, rng)
    g = rng.standard_normal(ref.forward(*inputs).shape)
    right = {"x": ref.backward(g), **{s.name: s.grad().copy() for s in find_slots(ref)}}
    v = backward_variants
    inside = [v._swapped(), v._attention_inside()]       # every LayerNorm / attention inside, nothing switched
    fixed = {"linear": [], "attention": [v._attn()], "ffn": [v._ffn(lambda r: v._gelu_tanh_grad(r.h))],
             "block": [v._block()] + inside, "lm": inside, "encoder_layer": inside[:1],
             "decoder_layer": inside, "seq2seq": inside}[kind]
    for run in fixed:
        got = {"x": run(ref, g), **{s.name: s.grad() for s in find_slots(ref)}}
        for name, want in right.items():
            if want is None:                # lm, seq2seq: no input gradient
                assert got[name] is None
                continue
            for a, b in zip(*(w if isinstance(w, tuple) else (w,) for w in (got[name], want))):   # (dx, dmemory)
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)
    assert not any("backward" in vars(layer) for layer in v._layers(ref))      # every patch undone


def test_a_variant_of_a_layer_the_module_does_not_have_does_not_apply():
    """The encoder layer has no causal self-attention object: that variant is ABSENT, not a match."""
    cfg = config_for("encoder_layer", 0)
    ref = random_reference(get_kind("encoder_layer"), cfg, np.random.default_rng(0))
    ref.forward(get_kind("encoder_layer").make_input(cfg, np.random.default_rng(1)))
    assert backward_variants._attention_inside(jacobian=False)(ref, np.ones((2, 8, 16))) is backward_variants.ABSENT
