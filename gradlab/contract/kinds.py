"""What each kind of module is (CONTRACT §3): how it is called, the shapes of
its reference parameters, and the capabilities checks are chosen by.

Checks never look at a kind's name: they ask for tags such as "causal" or
"token_ids". A new kind is one entry here plus a reference module in modules/.
"""
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


# Capability tags checks select on.
DIFFERENTIABLE = "differentiable"   # has backward(g) and parameter gradients (or returns a gradient)
INPUT_GRAD = "input_grad"           # backward(g) returns dL/dx
CAUSAL = "causal"                   # output at t depends on inputs <= t only
ATTN_WEIGHTS = "attn_weights"       # keeps attn_weights (B, H, T, T) after forward
TOKEN_IDS = "token_ids"             # input is integer token ids
PER_SAMPLE = "per_sample"           # samples of a batch do not interact
PROBABILITIES = "probabilities"     # output rows are probability distributions
OPTIMIZER = "optimizer"             # build(cfg).step(params, grads)
LOSS = "loss"                       # function returning (loss, grad)
TRAJECTORY = "trajectory"           # compared step by step with a reference over time
SUBMODULE = "submodule"             # can be swapped into the reference LM for the overfit check
POSITION_TABLE = "position_table"   # function (max_len, d_model) -> table (max_len, d_model)
INITIALIZER = "initializer"         # function (shape, scheme, rng) -> array of random initial weights
SCHEDULER = "scheduler"             # build(cfg) -> object whose call (or step()) advances one step, returns the lr
SMOOTHING = "smoothing"             # a loss with a label-smoothing epsilon
STOCHASTIC = "stochastic"           # forward(x, training): random while training, the identity otherwise
CHUNKED = "chunked"                 # function (Q, K, V, chunk_size, causal=False): attention by query chunks
KEY_PADDING = "key_padding"         # takes key_padding_mask (B, S), True where the key is padding
SEQ2SEQ = "seq2seq"                 # forward(src_ids, tgt_ids) -> logits: learns a copy task (the copy_task check)
MIXED_PRECISION = "mixed_precision" # float16 <-> float32 conversion and a loss-scaling step
ANY_LENGTH = "any_length"           # built for cfg.seq_len, takes any shorter T too (its table sliced [:T])
TIED_HEAD = "tied_head"             # the output projection is the token embedding (logits = h @ wte.T): no head of its own
LAST_AXIS = "last_axis"             # acts on x[..., D] over the last axis alone: any leading axes, (B, T, D) in a Transformer
HEADS = "heads"                     # attention inside: d_model split into num_heads heads of d_k (factors of them mean something)


@dataclass(frozen=True)
class Input:
    """One argument of forward, in the order forward takes it (gradlab passes
    every declared input positionally, so the student's parameter names do
    not matter). Checks read this declaration instead of assuming one x."""
    name: str
    shape: Callable                 # cfg -> shape
    role: str = "float"             # "float" (gets a gradient when the kind has INPUT_GRAD), "ids", "mask", "flag"
    causal: bool = True             # CAUSAL kinds: the output at t depends on this input's positions <= t only
    value: Any = None               # a flag's value in every check but those about it (training=False)

    @property
    def differentiable(self):
        return self.role == "float"

    def make(self, cfg, rng):
        """A value in cfg.dtype: random floats, random ids, a padding mask, or the flag's value."""
        if self.role == "flag":
            return self.value
        shape = self.shape(cfg)
        if self.role == "ids":
            return rng.integers(0, cfg.vocab_size, size=shape)
        if self.role == "mask":
            return padding_mask(shape, rng)
        return rng.standard_normal(shape).astype(cfg.np_dtype)


def same_layout(shape, reference):
    """True when a parameter of `shape` holds the numbers of a reference parameter of shape `reference` in the
    same order: the same shape, or the same once leading axes of length 1 are dropped (a (1, n) bias, as
    nnfs-style code keeps it, for the reference's (n,): it broadcasts alike, and loads by broadcasting)."""
    shape, reference = tuple(shape), tuple(reference)
    while shape[:1] == (1,) and len(shape) > len(reference):
        shape = shape[1:]
    return shape == reference


def core_shape(shape):
    """A parameter's shape without leading axes of length 1 (a (1, n) bias holds n numbers, as (n,) does)."""
    shape = tuple(shape)
    while shape[:1] == (1,) and len(shape) > 1:
        shape = shape[1:]
    return shape


def src_len(cfg):
    """The encoder memory's length: different from seq_len, so a swapped axis cannot pass unseen; seq_len + 2,
    or the first of seq_len - 1 and seq_len + 1 that is within cfg.max_len (a seq2seq's positional table has
    max_len rows: a correct model holding its table for max_len failed at seq_len = max_len - 1)."""
    T = cfg.seq_len
    fits = [S for S in (T + 2, T - 1, T + 1) if 1 <= S <= cfg.max_len]
    return fits[0] if fits else T          # (max_len = T = 1: only T fits)


def padding_mask(shape, rng):
    """(B, S) bool, True where padded: each sample keeps at least half its keys, sample 0 always has padding (so
    padding is exercised) and, in a batch of several, the last none (so a mask applied wrong shows as the padded
    samples alone differing), while no sample is padded entirely. The other samples are padded at the end;
    sample 0's padded keys sit just before its last key, which is real: a module that turns the mask into
    lengths (keys j >= S - n_padded masked) masks the wrong keys there, and its first key stays real (a causal
    mask in a cross-attention is then the reference check's to name)."""
    B, S = shape
    keep = rng.integers((S + 1) // 2, S + 1, size=B)
    keep[0] = min(keep[0], S - 1) if S > 1 else S
    if B > 1:
        keep[-1] = S
    mask = np.arange(S)[None, :] >= keep[:, None]
    mask[0] = np.roll(mask[0], -1)
    return mask


@dataclass(frozen=True)
class KindSpec:
    name: str
    form: str                       # "module" | "function" | "optimizer"
    summary: str
    tags: frozenset = frozenset()
    cfg_defaults: dict = field(default_factory=dict)
    inputs: tuple = ()              # Input declarations; empty: one input, x (or ids for token kinds)

    def has(self, tag):
        return tag in self.tags

    # --- inputs (module kinds) -------------------------------------------
    @property
    def in_float16(self):
        """Whether --dtype float16 checks it (module kinds, and mixed precision's float16 compute); function and
        optimizer kinds are skipped in float16 with the reason (suite._float16_gate)."""
        return self.form == "module" or self.has(MIXED_PRECISION)

    def input_specs(self):
        """forward's arguments, in order."""
        if self.inputs:
            return self.inputs
        return (Input("ids", self.input_shape, "ids") if self.has(TOKEN_IDS) else Input("x", self.input_shape),)

    def grad_inputs(self):
        """The inputs backward returns a gradient for, in order (none without INPUT_GRAD)."""
        return tuple(i for i in self.input_specs() if i.differentiable) if self.has(INPUT_GRAD) else ()

    def make_inputs(self, cfg, rng):
        """A tuple of forward's arguments (for one-input kinds exactly make_input's draw)."""
        return tuple(i.make(cfg, rng) for i in self.input_specs())

    # --- shapes, as functions of cfg -------------------------------------
    def param_shapes(self, cfg):
        """Reference parameter names -> shapes (CONTRACT §3)."""
        return _PARAM_SHAPES.get(self.name, lambda c: {})(cfg)

    def input_shape(self, cfg):
        B, T, D = cfg.batch_size, cfg.seq_len, cfg.d_model
        logits = (B, T, cfg.vocab_size)
        return {"linear": (B, T, D), "embedding": (B, T), "lm": (B, T),
                "softmax": logits, "cross_entropy": logits, "label_smoothing": logits}.get(self.name, (B, T, D))

    def output_shape(self, cfg):
        B, T, D = cfg.batch_size, cfg.seq_len, cfg.d_model
        return {"linear": (B, T, linear_d_out(cfg)), "lm": (B, T, cfg.vocab_size), "seq2seq": (B, T, cfg.vocab_size),
                "softmax": (B, T, cfg.vocab_size), "cross_entropy": (), "label_smoothing": ()}.get(self.name, (B, T, D))

    @property
    def module_size_names(self):
        return tuple(_MODULE_SIZES.get(self.name, ()))

    def module_sizes(self, cfg, out):
        """The sizes CONTRACT §3 leaves to the module, read off its forward output
        (e.g. {"d_out": 7} for a linear), or {} when `out` cannot tell."""
        axes = _MODULE_SIZES.get(self.name, {})
        if not axes or not isinstance(out, np.ndarray) or out.ndim < max(-a for a in axes.values()):
            return {}     # the shape is wrong in other ways too: the checks will say so
        return {name: int(out.shape[axis]) for name, axis in axes.items() if out.shape[axis] >= 1}

    def symbolic(self, shape_of):
        """A shape in cfg's field names, for messages: symbolic(KindSpec.output_shape)
        -> "(batch_size, seq_len, d_model)"; shape_of may return a dict of shapes.
        None when the shape needs numbers (an lm's blocks are counted by n_layers)."""
        try:
            got = shape_of(self, _SymbolicConfig())
        except (TypeError, ValueError):
            return None
        if isinstance(got, dict):
            return {k: _text(v) for k, v in got.items()}
        return _text(got)

    def keyword_args(self):
        """The keyword arguments of a function kind's signature (CONTRACT §3):
        name -> what it means, for a message when a function takes none."""
        return _SIGNATURES.get(self.name, ("", {}))[1]

    def keyword_defaults(self):
        """name -> the default CONTRACT §3's signature gives it, where callers rely on it."""
        return _DEFAULTS.get(self.name, {})

    def signature(self):
        """A function kind's call as CONTRACT §3 writes it, e.g. "softmax(x, axis=-1)"."""
        return _SIGNATURES.get(self.name, ("", {}))[0]

    def make_input(self, cfg, rng):
        """forward's first input, in cfg.dtype (ids for token kinds)."""
        return self.input_specs()[0].make(cfg, rng)


def linear_d_out(cfg):
    """A linear's output width: its own choice (CONTRACT §3), read from the module
    under test and kept in cfg.extra; d_ff when nothing was read (gradlab's reference)."""
    return cfg.get("d_out", cfg.d_ff)


# Loss kinds' signatures (CONTRACT §3), with what each keyword argument means and how the other checks
# go on without it. (softmax's `axis` is judged by `reference`, which calls it along every axis.)
_SIGNATURES = {
    "cross_entropy": ("cross_entropy(logits, targets, ignore_index=None)",
                      {"ignore_index": "targets equal to ignore_index (padding) add nothing to the loss and get a "
                                       "zero gradient, and the mean is over the other targets. The other checks "
                                       "ran without it"}),
    "label_smoothing": ("label_smoothing(logits, targets, epsilon=0.1)",
                        {"epsilon": "the smoothing weight, passed by name as a caller does "
                                    "(label_smoothing(logits, targets, epsilon=0.2)): the target distribution is "
                                    "(1 - epsilon) * one_hot + epsilon / V. The other checks passed it by position"}),
    "chunked_attention": ("chunked_attention(Q, K, V, chunk_size, causal=False)", {}),
}

# The defaults CONTRACT §3's signatures give, where a caller relies on them (label_smoothing(logits, targets) is
# smoothed by 0.1; chunked_attention(Q, K, V, c) is not causal): a function whose default differs passes every
# call gradlab makes (it always passes them) and misleads every caller that leaves them out
_DEFAULTS = {"label_smoothing": {"epsilon": 0.1}, "chunked_attention": {"causal": False}}

# Sizes CONTRACT §3 leaves to the module: name -> the axis (counted from the end) of the forward
# output that shows it.
_MODULE_SIZES = {"linear": {"d_out": -1}}


class _Symbol(str):
    """A cfg field's name standing in for its value, so a shape function written
    once in numbers also prints in words: 3 * d_model."""

    def __mul__(self, other):
        return _Symbol(f"{self}*{other}")

    def __rmul__(self, other):
        return _Symbol(f"{other}*{self}")


class _SymbolicConfig:
    extra = {}

    def __getattr__(self, name):
        return _Symbol(name)

    def get(self, name, default=None):
        return _Symbol(name)


def _text(shape):
    return "(" + ", ".join(str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def _block_shapes(cfg, prefix=""):
    D = cfg.d_model
    shapes = {}
    for ln in ("ln1", "ln2"):
        shapes.update({f"{prefix}{ln}.gamma": (D,), f"{prefix}{ln}.beta": (D,)})
    shapes.update({f"{prefix}attn.{k}": v for k, v in _PARAM_SHAPES["attention"](cfg).items()})
    shapes.update({f"{prefix}ffn.{k}": v for k, v in _PARAM_SHAPES["ffn"](cfg).items()})
    return shapes


def _lm_shapes(cfg):
    shapes = {"token_embedding": (cfg.vocab_size, cfg.d_model), "pos_embedding": (cfg.max_len, cfg.d_model)}
    for i in range(cfg.n_layers):
        shapes.update(_block_shapes(cfg, f"blocks.{i}."))
    shapes.update({"ln_f.gamma": (cfg.d_model,), "ln_f.beta": (cfg.d_model,)})
    return shapes


def _encoder_layer_shapes(cfg):
    D, F = cfg.d_model, cfg.d_ff
    shapes = {name: (D, D) for name in ("W_Q", "W_K", "W_V", "W_O")}
    shapes.update({"W1": (D, F), "b1": (F,), "W2": (F, D), "b2": (D,)})
    shapes.update({name: (D,) for name in ("gamma1", "beta1", "gamma2", "beta2")})
    return shapes


def _cross_attention_shapes(cfg, prefix=""):
    D = cfg.d_model
    return {f"{prefix}q_weight": (D, D), f"{prefix}q_bias": (D,), f"{prefix}kv_weight": (D, 2 * D),
            f"{prefix}kv_bias": (2 * D,), f"{prefix}out_weight": (D, D), f"{prefix}out_bias": (D,)}


def _decoder_layer_shapes(cfg):
    D = cfg.d_model
    shapes = {f"self_attn.{k}": v for k, v in _PARAM_SHAPES["attention"](cfg).items()}
    shapes.update(_cross_attention_shapes(cfg, "cross_attn."))
    shapes.update({f"ffn.{k}": v for k, v in _PARAM_SHAPES["ffn"](cfg).items()})
    for ln in ("ln1", "ln2", "ln3"):
        shapes.update({f"{ln}.gamma": (D,), f"{ln}.beta": (D,)})
    return shapes


def _seq2seq_shapes(cfg):
    V, D = cfg.vocab_size, cfg.d_model
    shapes = {"src_embedding": (V, D), "tgt_embedding": (V, D), "out_weight": (D, V), "out_bias": (V,)}
    for i in range(cfg.n_layers):
        shapes.update({f"encoder.{i}.{k}": v for k, v in _encoder_layer_shapes(cfg).items()})
    for i in range(cfg.n_layers):
        shapes.update({f"decoder.{i}.{k}": v for k, v in _decoder_layer_shapes(cfg).items()})
    return shapes


_PARAM_SHAPES = {
    "linear": lambda c: {"weight": (c.d_model, linear_d_out(c)), "bias": (linear_d_out(c),)},
    "layernorm": lambda c: {"gamma": (c.d_model,), "beta": (c.d_model,)},
    "ffn": lambda c: {"w1": (c.d_model, c.d_ff), "b1": (c.d_ff,), "w2": (c.d_ff, c.d_model), "b2": (c.d_model,)},
    "attention": lambda c: {"qkv_weight": (c.d_model, 3 * c.d_model), "qkv_bias": (3 * c.d_model,),
                            "out_weight": (c.d_model, c.d_model), "out_bias": (c.d_model,)},
    "embedding": lambda c: {"weight": (c.vocab_size, c.d_model)},
    "positional": lambda c: {"weight": (c.max_len, c.d_model)},
    "block": _block_shapes,
    "lm": _lm_shapes,
    "encoder_layer": _encoder_layer_shapes,
    "cross_attention": _cross_attention_shapes,
    "decoder_layer": _decoder_layer_shapes,
    "seq2seq": _seq2seq_shapes,
}

_X = Input("x", lambda c: (c.batch_size, c.seq_len, c.d_model))
_MEMORY = Input("memory", lambda c: (c.batch_size, src_len(c), c.d_model), causal=False)
_KEY_PADDING_MASK = Input("key_padding_mask", lambda c: (c.batch_size, src_len(c)), "mask", causal=False)

_MODULE = frozenset({DIFFERENTIABLE, PER_SAMPLE})
_OPTIMIZER_DEFAULTS = {"eps": 1e-8}

KINDS = {spec.name: spec for spec in [
    KindSpec("linear", "module", "x @ weight + bias over the last axis", _MODULE | {INPUT_GRAD, LAST_AXIS}),
    KindSpec("layernorm", "module", "LayerNorm over the last axis (gamma, beta, eps)",
             _MODULE | {INPUT_GRAD, SUBMODULE, LAST_AXIS}),
    KindSpec("ffn", "module", "position-wise x @ w1 + b1 -> GELU -> @ w2 + b2",
             _MODULE | {INPUT_GRAD, SUBMODULE, LAST_AXIS}),
    KindSpec("attention", "module", "causal multi-head self-attention, fused qkv, keeps attn_weights",
             _MODULE | {INPUT_GRAD, CAUSAL, ATTN_WEIGHTS, SUBMODULE, HEADS}),
    KindSpec("embedding", "module", "token embedding lookup; gradients accumulate with np.add.at",
             _MODULE | {TOKEN_IDS, SUBMODULE}),
    KindSpec("positional", "module", "learned positional embedding: x + weight[:T]",
             _MODULE | {INPUT_GRAD, SUBMODULE, ANY_LENGTH}),
    KindSpec("block", "module", "Pre-LN block: x + attn(ln1(x)), then x + ffn(ln2(x))",
             _MODULE | {INPUT_GRAD, CAUSAL, SUBMODULE, HEADS}),
    KindSpec("lm", "module", "decoder-only LM with tied output projection: ids -> logits",
             _MODULE | {TOKEN_IDS, CAUSAL, TIED_HEAD, HEADS}),
    KindSpec("softmax", "function", "softmax(x, axis=-1), numerically stable", frozenset({PER_SAMPLE, PROBABILITIES})),
    KindSpec("cross_entropy", "function", "(logits, targets, ignore_index=None) -> (mean loss, grad_logits)",
             frozenset({DIFFERENTIABLE, LOSS})),
    KindSpec("sgd", "optimizer", "SGD with momentum (PyTorch semantics)", frozenset({OPTIMIZER, TRAJECTORY}),
             {"lr": 0.1, "weight_decay": 0.0}),
    KindSpec("adam", "optimizer", "Adam: bias correction, eps outside the sqrt, t counts steps",
             frozenset({OPTIMIZER, TRAJECTORY}), {**_OPTIMIZER_DEFAULTS, "weight_decay": 0.0}),
    KindSpec("adamw", "optimizer", "AdamW: decoupled decay theta *= 1 - lr*wd before the Adam update",
             frozenset({OPTIMIZER, TRAJECTORY}), _OPTIMIZER_DEFAULTS),
    KindSpec("schedule", "function", "warmup (Noam) schedule (step, d_model, warmup_steps) -> lr",
             frozenset({TRAJECTORY})),
    KindSpec("clip_grad_norm", "function", "(grads list, max_norm) -> total norm; scales in place",
             frozenset({TRAJECTORY})),
    # --- article 000's modules ------------------------------------------------
    KindSpec("sinusoidal", "function", "sinusoidal positional encoding (max_len, d_model) -> table",
             frozenset({POSITION_TABLE})),
    KindSpec("init", "function", "weight initialisers (shape, scheme, rng): xavier/he, uniform/normal",
             frozenset({INITIALIZER})),
    KindSpec("warmup", "scheduler", "stateful warmup (Noam) scheduler: each call advances one step, returns lr",
             frozenset({TRAJECTORY, SCHEDULER})),
    KindSpec("label_smoothing", "function", "(logits, targets, epsilon=0.1) -> (mean smoothed loss, grad_logits)",
             frozenset({DIFFERENTIABLE, LOSS, SMOOTHING})),
    KindSpec("chunked_attention", "function", "(Q, K, V, chunk_size, causal=False) -> out, by query chunks",
             frozenset({CHUNKED, HEADS})),
    KindSpec("dropout", "module", "inverted dropout: forward(x, training) keeps its mask, scales by 1/(1-p)",
             _MODULE | {INPUT_GRAD, STOCHASTIC}, inputs=(_X, Input("training", lambda c: (), "flag", value=False))),
    KindSpec("encoder_layer", "module", "Post-LN encoder layer: LN(x + attn(x)), LN(h + relu-ffn(h)), no mask",
             _MODULE | {INPUT_GRAD, HEADS}),
    KindSpec("cross_attention", "module", "queries from x over encoder memory, key_padding_mask: (dx, dmemory)",
             _MODULE | {INPUT_GRAD, KEY_PADDING, HEADS}, inputs=(_X, _MEMORY, _KEY_PADDING_MASK)),
    KindSpec("decoder_layer", "module", "Post-LN decoder layer: masked self-attn, cross-attn, relu FFN",
             _MODULE | {INPUT_GRAD, CAUSAL, KEY_PADDING, HEADS}, inputs=(_X, _MEMORY, _KEY_PADDING_MASK)),
    KindSpec("seq2seq", "module", "encoder-decoder: (src_ids, tgt_ids) -> logits; encoder, decoder stacks",
             _MODULE | {CAUSAL, SEQ2SEQ, HEADS},
             inputs=(Input("src_ids", lambda c: (c.batch_size, src_len(c)), "ids", causal=False),
                     Input("tgt_ids", lambda c: (c.batch_size, c.seq_len), "ids"))),
    KindSpec("mixed_precision", "optimizer",
             "float32 master weights, float16 compute: to_half/to_full_precision, loss scaling (static, dynamic)",
             frozenset({MIXED_PRECISION}), {"lr": 1.0}),
]}


def get_kind(name):
    from gradlab.contract.errors import UsageError
    import difflib
    try:
        return KINDS[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), KINDS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(f"unknown kind {name!r}: {hint}kinds are {', '.join(KINDS)}") from None
