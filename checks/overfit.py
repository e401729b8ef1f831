"""`overfit`: can a tiny batch be learned? The student's part is trained
inside gradlab's reference tiny language model (or the student's own LM, or
the reference LM with the student's optimizer) for a fixed number of steps,
from the same weights as a run with gradlab's reference parts only. The
reference run sets the bar: the student's loss must fall as the reference's
does. No magic constant: the thresholds are fractions of the reference's
own loss drop.
"""
import copy

import numpy as np

from gradlab.execution.discovery import find_slots
from gradlab.contract.errors import CheckFailure, CheckSkipped, StudentError
from gradlab.contract.kinds import OPTIMIZER, SUBMODULE, TOKEN_IDS
from gradlab.execution.harness import reading_grads_ahead
from gradlab.execution.loader import reference as reference_impl
from gradlab.contract.records import curve, table
from gradlab.contract.suite import Outcome, check
from gradlab.execution.weights import load_reference, named_params
from gradlab.contract.numbers import distinct
from gradlab.numerics.tolerance import EPS, computed_eps, tolerance

STEPS = 30
LR = 0.02            # Adam's step size for the module runs (optimizer kinds use their own cfg)
# The bar: learn at least half as fast as the reference. Within STEPS steps the
# student's lowest loss must be at most the reference's loss after STEPS * SPEED
# steps (read off the reference's own curve). The lowest, not the last: SGD with
# momentum oscillates on some seeds, and the reference must pass its own bar.
# Correct implementations follow the reference's curve almost exactly; this
# leaves room for rounding and chaos.
SPEED = 0.5
# Chaos: the reference run again from weights moved by one rounding unit parts from its own curve by more
# than this fraction of the loss (a stable run moves by ~1e-6; at d_model = 2 in float32 one parted by 1e-2
# within 13 steps, and reached its bar or not as the rounding fell)
CHAOS = 1e-3

# Where a kind sits in the tiny LM (dotted paths; {i} runs over the blocks).
# A table of positions, as kinds.py is a table of shapes.
PLACES = {
    "attention": ["blocks.{i}.attn"],
    "ffn": ["blocks.{i}.ffn"],
    "layernorm": ["blocks.{i}.ln1", "blocks.{i}.ln2", "ln_f"],
    "block": ["blocks.{i}"],
    "embedding": ["emb"],
    "positional": ["pos"],
}


@check("overfit", any_of={SUBMODULE, OPTIMIZER, TOKEN_IDS}, forms={"module", "optimizer"}, order=60,
       summary="a tiny batch is learned: the loss falls as the reference's does")
def overfit(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    if cfg.dtype == "float16":
        raise CheckSkipped(f"{kind.name}: training entirely in float16 diverges for gradlab's reference too (Adam's "
                           "eps=1e-8 and squared gradients underflow to 0 in float16); training with float16 "
                           "compute is what the mixed_precision kind checks: float32 master weights, loss scaling")
    B, T, V = cfg.batch_size, cfg.seq_len, cfg.vocab_size
    ids = rng.integers(0, V, size=(B, T))
    targets = rng.integers(0, V, size=(B, T))
    ref_lm = reference_impl().get("lm").target(cfg)
    if kind.form == "optimizer":
        # the student's optimizer on the reference LM, against the reference optimizer of the same kind
        model = copy.deepcopy(ref_lm)
        setting = f"the reference LM trained by your {kind.name}"
        theirs = _train(subject, model, _reference_slots(model), subject.build(), ids, targets, student_opt=True)
        ours = _reference_curve((kind.name, cfg, ids.tobytes(), targets.tobytes()), lambda: _train(
            None, ref_lm, _reference_slots(ref_lm), reference_impl().get(kind.name).target(cfg), ids, targets))
        again = _moved(lambda: reference_impl().get("lm").target(cfg),
                       lambda: reference_impl().get(kind.name).target(cfg), ids, targets, cfg)
    elif kind.has(SUBMODULE):
        tiny = TinyLM(cfg, ref_lm)
        model = copy.deepcopy(tiny)
        slots, where = _swap_in(subject, model, rng)
        _needs_backward(subject)
        setting = f"the reference tiny LM (Adam) with your {kind.name} at {where}"
        theirs = _train(subject, model, slots, _adam(cfg), ids, targets)
        ours = _reference_curve(("tiny", cfg, ids.tobytes(), targets.tobytes()), lambda: _train(
            None, tiny, _reference_slots(tiny), _adam(cfg), ids, targets))
        try:
            return _judge(kind, setting, theirs, ours, cfg.np_dtype, _moved_tiny(cfg, ids, targets))
        except CheckFailure:
            if cfg.dtype != "float64" or not _computes_in_float32(subject):
                raise
        # a part that computes in float32 whatever cfg.dtype says is judged as float32 (CONTRACT §6): against
        # the reference tiny LM in float32, whose rounding loses what it loses (LayerNorm over 2 features)
        cfg32 = cfg.replace(dtype="float32")
        tiny32 = TinyLM(cfg32, reference_impl().get("lm").target(cfg32))
        ours32 = _reference_curve(("tiny", cfg32, ids.tobytes(), targets.tobytes()), lambda: _train(
            None, tiny32, _reference_slots(tiny32), _adam(cfg32), ids, targets))
        return _judge(kind, setting + " (your part computes in float32: the bar is the reference's in float32)",
                      theirs, ours32, np.dtype("float32"), _moved_tiny(cfg32, ids, targets))
    else:
        # a token-ids kind that is no submodule is a whole language model: ids -> logits
        module, slots = subject.fresh(rng, randomize=False)
        _needs_backward(subject)
        load_reference(subject, module, slots, named_params(ref_lm))
        setting = f"your {kind.name} (Adam)"
        theirs = _train(subject, module, _student_slots(subject, module, ""), _adam(cfg), ids, targets)
        ours = _reference_curve(("lm", cfg, ids.tobytes(), targets.tobytes()), lambda: _train(
            None, ref_lm, _reference_slots(ref_lm), _adam(cfg), ids, targets))
        again = _moved(lambda: reference_impl().get("lm").target(cfg), lambda: _adam(cfg), ids, targets, cfg)
    return _judge(kind, setting, theirs, ours, cfg.np_dtype, again)


def _moved(build, optimizer, ids, targets, cfg):
    """() -> the reference's run again, from its weights each moved by one rounding unit of cfg's dtype
    (signs at random). Where training the tiny batch is chaotic (a tiny LM at d_model = 2 in float32: the
    loss falls, then climbs), this run parts from the first one as a correct part's run does, and the bar
    read off the first says nothing (_judge). Only run when a part misses the bar."""
    def run():
        model = build()
        rng = np.random.default_rng(20261201)
        eps = np.finfo(cfg.np_dtype).eps
        for slot in find_slots(model):
            slot.value[...] = slot.value * (1 + eps * rng.choice((-1.0, 1.0), slot.value.shape))
        return _train(None, model, _reference_slots(model), optimizer(), ids, targets)
    return run


def _moved_tiny(cfg, ids, targets):
    return _moved(lambda: TinyLM(cfg, reference_impl().get("lm").target(cfg)), lambda: _adam(cfg), ids, targets, cfg)


def _computes_in_float32(subject):
    """Whether the student's part returns float32 numbers from float64 inputs (float32 arithmetic inside)."""
    try:
        module, _ = subject.fresh(np.random.default_rng(0), randomize=False)
        out = subject.forward(module, *subject.make_inputs(np.random.default_rng(1)))
    except StudentError:
        return False
    return out.dtype == np.float32 or computed_eps([out]) > EPS["float64"]


_curves = {}


def _reference_curve(key, train):
    """The reference run is deterministic and the same for every submodule kind
    checked with the same cfg and batch (check all): train it once."""
    if key not in _curves:
        if len(_curves) >= 16:
            _curves.pop(next(iter(_curves)))
        _curves[key] = train()
    return list(_curves[key])


def _adam(cfg):
    return reference_impl().get("adam").target(cfg.replace(lr=LR, weight_decay=0.0))


def _judge(kind, setting, theirs, ours, dtype="float64", again=None):
    bar_step = int(round(SPEED * (len(ours) - 1)))
    limit = ours[bar_step]
    drop = ours[0] - ours[-1]
    series = {"reference": ours, "yours": theirs}
    rows = [{"step": k, "reference": ours[k], "yours": theirs[k] if k < len(theirs) else None}
            for k in sorted(set(range(0, len(ours), 5)) | {len(ours) - 1})]
    details = {"views": [curve(f"training loss: {setting}", series, ylabel="cross-entropy"),
                         table("loss", rows)]}
    if not np.isfinite(ours).all():
        # the bar comes from the reference's own run: one that diverged sets none (Adam with beta2 = 0 and
        # lr = 0.1 overflows the float32 LM; the same settings train in float64)
        raise CheckSkipped(f"{kind.name}: the reference run diverged on the tiny batch too (loss {ours[0]:.4g} -> "
                           f"{ours[-1]} at step {len(ours) - 1}); nothing to compare with at these settings")
    if drop <= 0:
        raise CheckSkipped(f"{kind.name}: the reference run did not learn the tiny batch either "
                           f"(loss {ours[0]:.4g} -> {ours[-1]:.4g}); nothing to compare with at these sizes")
    metrics = {"steps": len(ours) - 1, "final_loss": theirs[-1], "lowest_loss": min(theirs),
               "reference_final_loss": ours[-1],
               "limit": limit, "limit_step": bar_step, "reference_drop": drop}
    first, ref_first = distinct(theirs[0], ours[0])
    start = ("" if abs(theirs[0] - ours[0]) <= tolerance("forward", dtype).allowed(max(1.0, abs(ours[0]))) else
             f"; your first loss {first} already differs from the reference's {ref_first} from the same "
             "weights, so the forward differs (see the reference check)")
    if not np.isfinite(theirs).all():
        k = int(np.argmin(np.isfinite(theirs)))
        raise CheckFailure(f"{kind.name}: training {setting}: the loss became {theirs[k]} at step {k} "
                           f"(the reference went {ours[0]:.4g} -> {ours[-1]:.4g})" + start, metrics, details)
    if min(theirs) > limit and again is not None:
        moved = again()
        # chaotic: one rounding unit moved the reference's own curve by a visible amount (or off its bar)
        finite = bool(np.isfinite(moved).all())
        gap = float(np.max(np.abs(np.subtract(moved, ours)))) if finite else float("inf")
        if gap > CHAOS * max(1.0, float(np.max(np.abs(ours)))) or not (finite and min(moved) <= limit):
            lowest = f"{min(moved):.4g}" if finite else "a loss that diverged"
            raise CheckSkipped(
                f"{kind.name}: cannot judge at these settings: training the tiny batch is chaotic here (the "
                f"reference's loss {ours[0]:.4g} -> {min(ours):.4g} -> {ours[-1]:.4g}; run again from its weights "
                f"moved by {np.dtype(dtype).name}'s rounding, its curve parted from the first by up to {gap:.2g} and "
                f"reached {lowest}, against its bar of {limit:.4g}), so missing that bar (yours reached "
                f"{min(theirs):.4g}) says nothing about your {kind.name}; the default sizes train stably")
    if min(theirs) > limit:
        rose = theirs[-1] > theirs[0]
        why = "the loss went up" if rose else "it learns less than half as fast"
        look = (("look at step(params, grads): the size and the sign of each update (steps too large, from a bias "
                 "correction or the lr applied wrongly, or the wrong sign make the loss climb)" if rose else
                 "look at step(params, grads): steps too small, or parameters left without an update")
                + "; the trajectory check compares the steps with the reference's one by one"
                if kind.form == "optimizer" else
                "the update is gradlab's Adam, so look at your backward: what it passes on (dL/dx) and the "
                "parameter gradients it fills (the gradient check compares them one by one)")
        raise CheckFailure(
            f"{kind.name}: training {setting} for {len(ours) - 1} steps on a tiny batch: the loss went "
            f"{theirs[0]:.4g} -> {theirs[-1]:.4g}, the reference's {ours[0]:.4g} -> {ours[-1]:.4g} ({why}; needed: "
            f"a loss of at most {limit:.4g} at some step, the reference's loss after {bar_step} steps); {look}" + start, metrics, details)
    return Outcome(f"{setting}: loss {theirs[0]:.4g} -> {theirs[-1]:.4g} in {len(ours) - 1} steps "
                   f"(reference {ours[0]:.4g} -> {ours[-1]:.4g}; bar: the reference's {limit:.4g} after {bar_step} "
                   "steps)", metrics, details)


# ---- the model ---------------------------------------------------------------------

class TinyLM:
    """ids (B, T) -> logits (B, T, V): emb -> pos -> blocks -> ln_f -> @ head.T.

    gradlab's reference parts, each an object with forward/backward that a
    student's module can replace (CONTRACT §3 conventions). Unlike the
    reference LM the output projection `head` is not tied to the embedding, so
    a student's embedding can be swapped in whatever its parameter is called."""

    def __init__(self, cfg, ref_lm):
        R = reference_impl()
        self.emb = R.get("embedding").target(cfg)
        self.pos = R.get("positional").target(cfg)
        self.blocks = ref_lm.blocks
        self.ln_f = ref_lm.ln_f
        self.params = {"head": ref_lm.params["token_embedding"].copy()}     # (V, D)
        self.grads = {}

    def forward(self, ids):
        x = self.pos.forward(self.emb.forward(ids))
        for block in self.blocks:
            x = block.forward(x)
        self.h = self.ln_f.forward(x)                                       # (B, T, D)
        return self.h @ self.params["head"].T                               # (B, T, V)

    def backward(self, grad_logits):
        V, D = self.params["head"].shape
        self.grads["head"] = grad_logits.reshape(-1, V).T @ self.h.reshape(-1, D)
        dx = self.ln_f.backward(grad_logits @ self.params["head"])
        for block in reversed(self.blocks):
            dx = block.backward(dx)
        self.emb.backward(self.pos.backward(dx))


def _paths(kind_name, model):
    out = []
    for pattern in PLACES[kind_name]:
        if "{i}" in pattern:
            out += [pattern.format(i=i) for i in range(len(model.blocks))]
        else:
            out.append(pattern)
    return out


def _locate(model, path):
    parts = path.split(".")
    obj = model
    for part in parts[:-1]:
        obj = obj[int(part)] if isinstance(obj, list) else getattr(obj, part)
    return obj, parts[-1]


def _set(model, path, value):
    parent, last = _locate(model, path)
    if isinstance(parent, list):
        parent[int(last)] = value
    else:
        setattr(parent, last, value)


def _get(model, path):
    parent, last = _locate(model, path)
    return parent[int(last)] if isinstance(parent, list) else getattr(parent, last)


def _swap_in(subject, model, rng):
    """Replace every place of the subject's kind in `model` by a student instance
    holding the reference part's weights. Returns (slots for training, where)."""
    paths = _paths(subject.kind.name, model)
    keep = [s for s in find_slots(model) if not any(s.name.startswith(p + ".") for p in paths)]
    slots = [_RefSlot(s) for s in keep]
    for path in paths:
        part = _get(model, path)
        module, student = subject.fresh(rng, randomize=False)
        load_reference(subject, module, student, named_params(part))
        _set(model, path, module)
        slots += _student_slots(subject, module, path + ".")
    where = ", ".join(paths) if len(paths) <= 3 else f"{paths[0]} ... {paths[-1]} ({len(paths)} places)"
    return slots, where


class _RefSlot:
    def __init__(self, slot):
        self.name, self.value, self.slot = slot.name, slot.value, slot

    def read(self):
        return self.slot.grad()


class _StudentSlot:
    def __init__(self, subject, slot, prefix):
        self.subject, self.slot = subject, slot
        self.name, self.value = prefix + slot.name, slot.value

    def read(self):
        return self.subject.read_grads([self.slot])[self.slot.name]


def _reference_slots(model):
    return [_RefSlot(s) for s in find_slots(model)]


def _student_slots(subject, module, prefix):
    return [_StudentSlot(subject, s, prefix) for s in subject.slots(module)]


def _needs_backward(subject):
    """A forward-only module cannot be trained: skip, saying why (fresh() has found out)."""
    if subject.no_backward:
        raise CheckSkipped(subject.skip_reason())


def _train(subject, model, slots, optimizer, ids, targets, student_opt=False):
    """Loss before each of STEPS Adam steps and after the last: STEPS + 1 values."""
    ce = reference_impl().get("cross_entropy").target
    what = "" if subject is None else f" (training with your {subject.kind.name})"
    losses = []
    params = {s.name: s.value for s in slots}
    theirs = [s.slot for s in slots if isinstance(s, _StudentSlot)]
    for step in range(STEPS + 1):
        logits = _call(subject, f"forward{what}", model.forward, ids)
        loss, grad = ce(logits.astype(np.float64), targets)
        losses.append(float(loss))
        if step == STEPS or not np.isfinite(loss):
            break
        with reading_grads_ahead(theirs):      # read next: through a worker, in the last backward's request
            _call(subject, f"backward{what}", model.backward, grad.astype(logits.dtype))
        grads = _read(subject, slots)
        if student_opt:
            subject.step(optimizer, params, grads)
        else:
            optimizer.step(params, grads)
    return losses


def _read(subject, slots):
    """name -> gradient of every slot; the student's all at once (one request when they run in a worker)."""
    grads = {s.name: s.read() for s in slots if not isinstance(s, _StudentSlot)}
    theirs = [s for s in slots if isinstance(s, _StudentSlot)]
    if theirs:
        grads.update(zip([s.name for s in theirs], subject.grads_of([s.slot for s in theirs])))
    return grads


def _call(subject, what, fn, arg):
    """Student code runs inside the model's forward/backward: guard the whole call."""
    if subject is None:
        return fn(arg)
    return subject.run(what, fn, arg)
