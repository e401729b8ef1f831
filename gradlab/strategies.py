"""Hypothesis strategies for gradlab's configurations and inputs, for your own
tests (and behind `gradlab check KIND --explore N`).

    from hypothesis import given, settings
    import gradlab
    from gradlab.strategies import configs

    @settings(max_examples=20, deadline=None)
    @given(cfg=configs("attention"))
    def test_my_attention_at_any_size(cfg):
        result = gradlab.check("attention", impl="my_attention.py", seed=0, **cfg)
        assert result.passed, [c.message for c in result.checks if not c.ok]

`configs(kind)` draws the cfg fields a kind uses, as a dict of overrides
(`gradlab.check(kind, **cfg)`, or `--set field=value` on the command line). The
sizes are small and reach the edges where bugs hide: a batch of 1, one token
(T = 1) and a full positional table (T = max_len), one head (H = 1) and heads of
width 1 (d_k = 1), D = 1, a two-token vocabulary, float32 next to float64.
Hypothesis shrinks a failing configuration towards the smallest of them.
`inputs(kind, cfg)` draws the input a kind's forward takes at that cfg.
"""
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradlab.contract.config import make_config
from gradlab.contract.errors import UsageError
from gradlab.contract.kinds import TOKEN_IDS, get_kind

__all__ = ["configs", "inputs", "FIELDS_BY_KIND"]

# The cfg fields each kind's checks read (its sizes and, for optimizers, its
# hyperparameters): only these are drawn, so a printed configuration is short.
_MODEL = ("batch_size", "seq_len", "d_model")
FIELDS_BY_KIND = {
    "linear": _MODEL + ("d_ff",),
    "layernorm": _MODEL + ("eps",),
    "ffn": _MODEL + ("d_ff",),
    "attention": _MODEL + ("num_heads",),
    "embedding": _MODEL + ("vocab_size",),
    "positional": _MODEL + ("max_len",),
    "block": _MODEL + ("num_heads", "d_ff", "eps"),
    "lm": _MODEL + ("num_heads", "d_ff", "vocab_size", "max_len", "n_layers", "eps"),
    "softmax": ("batch_size", "seq_len", "vocab_size"),
    "cross_entropy": ("batch_size", "seq_len", "vocab_size"),
    "sgd": ("lr", "momentum", "weight_decay"),
    "adam": ("lr", "beta1", "beta2", "eps", "weight_decay"),
    "adamw": ("lr", "beta1", "beta2", "eps", "weight_decay"),
    "schedule": ("d_model", "warmup_steps"),
    "clip_grad_norm": ("max_norm",),
    "sinusoidal": ("max_len", "d_model"),
    "warmup": ("d_model", "warmup_steps"),
    "label_smoothing": ("batch_size", "seq_len", "vocab_size"),
    "chunked_attention": _MODEL + ("num_heads",),
    "dropout": _MODEL + ("dropout",),
    "encoder_layer": _MODEL + ("num_heads", "d_ff", "eps"),
    "cross_attention": _MODEL + ("num_heads", "max_len"),
    "decoder_layer": _MODEL + ("num_heads", "d_ff", "eps", "max_len"),
    "seq2seq": _MODEL + ("num_heads", "d_ff", "vocab_size", "max_len", "n_layers", "eps"),
    "mixed_precision": ("lr", "loss_scale", "loss_scaling", "growth_interval"),
}

# Hyperparameters are drawn from values people use; the first of each list is
# where Hypothesis shrinks to (the kind's default where it has one).
_CHOICES = {
    "lr": (1e-2, 1e-3, 0.1, 1.0),
    "beta1": (0.9, 0.0, 0.5, 0.99),
    "beta2": (0.999, 0.9, 0.0, 0.5),
    "momentum": (0.9, 0.0, 0.5, 0.99),
    "weight_decay": (0.0, 0.01, 0.1),
    "max_norm": (1.0, 0.1, 10.0, 1e-3),
    "warmup_steps": (4, 1, 2, 100),
    "dropout": (0.1, 0.0, 0.5, 0.3),
    "loss_scale": (1024.0, 1.0, 3.0, 65504.0),
    "loss_scaling": ("dynamic", "static"),
    "growth_interval": (4, 1, 2, 10),
}
_EPS = {"adam": (1e-8, 1e-6, 1e-3), "adamw": (1e-8, 1e-6, 1e-3)}
_EPS_DEFAULT = (1e-5, 1e-6, 1e-3)


@st.composite
def configs(draw, kind, *, max_batch=3, max_seq=6, max_heads=3, max_head_width=4, max_d_ff=9, max_vocab=9,
            max_layers=2, dtypes=("float64", "float32"), **fixed):
    """A strategy of cfg overrides (a dict) for `kind`, always valid: d_model a
    multiple of num_heads, seq_len <= max_len. Sizes shrink towards 1 (vocab_size
    towards 2, max_len towards seq_len); `fixed` fields are kept as given
    (configs("attention", d_model=12) draws num_heads among 12's divisors)."""
    spec = get_kind(kind)
    wanted = FIELDS_BY_KIND.get(kind, _MODEL)
    cfg = {}

    def pick(name, strategy):   # once per field: d_model drawn as num_heads * d_k is not drawn again
        if name not in cfg and (name in wanted or name in fixed):
            cfg[name] = fixed[name] if name in fixed else draw(strategy)

    pick("batch_size", st.integers(1, max_batch))
    pick("seq_len", st.integers(1, max_seq))
    if "num_heads" in wanted:
        if "d_model" in fixed:
            divisors = [h for h in range(1, max_heads + 1) if fixed["d_model"] % h == 0]
            pick("num_heads", st.sampled_from(divisors or [1]))
        else:
            pick("num_heads", st.integers(1, max_heads))
            pick("d_model", st.integers(1, max_head_width).map(lambda d_k: cfg["num_heads"] * d_k))  # d_k = 1 too
    pick("d_model", st.integers(1, max_heads * max_head_width))
    pick("d_ff", st.integers(1, max_d_ff))
    pick("vocab_size", st.integers(2, max_vocab))
    if "seq_len" in cfg:   # max_len == seq_len (a full positional table) is where Hypothesis shrinks to
        pick("max_len", st.integers(0, 3).map(lambda extra: cfg["seq_len"] + extra))
    else:                  # a table of its own length (sinusoidal): long ones too, where float32 angles round
        pick("max_len", st.integers(1, 512))
    pick("n_layers", st.integers(1, max_layers))
    for name, choices in _CHOICES.items():
        pick(name, st.sampled_from(choices))
    pick("eps", st.sampled_from(_EPS.get(kind, _EPS_DEFAULT)))
    if spec.form != "optimizer" and kind not in ("schedule", "clip_grad_norm") and dtypes:
        cfg["dtype"] = fixed.get("dtype") or draw(st.sampled_from(tuple(dtypes)))
    cfg.update(fixed)
    try:
        make_config(**cfg)    # the same rules as the command line
    except UsageError:
        from hypothesis import reject
        reject()
    return cfg


def inputs(kind, cfg=None, *, scale=3.0):
    """A strategy of forward inputs for `kind` at `cfg` (a Config or a dict of
    overrides): token ids in [0, vocab_size) for embedding and lm, finite floats
    in [-scale, scale] of cfg.dtype otherwise; for cross_entropy a pair
    (logits, targets)."""
    spec = get_kind(kind)
    cfg = make_config(**(cfg or {})) if isinstance(cfg, dict) or cfg is None else cfg
    shape = spec.input_shape(cfg)
    if spec.has(TOKEN_IDS):
        return hnp.arrays("int64", shape, elements=st.integers(0, cfg.vocab_size - 1))
    width = 32 if cfg.dtype == "float32" else 64
    floats = hnp.arrays(cfg.dtype, shape, elements=st.floats(-scale, scale, width=width,
                                                                  allow_subnormal=False))
    if kind == "cross_entropy":
        return st.tuples(floats, hnp.arrays("int64", shape[:-1], elements=st.integers(0, cfg.vocab_size - 1)))
    return floats
