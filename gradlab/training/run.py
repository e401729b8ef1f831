"""The training run: the same batches, the same starting weights, two models
(the student's, gradlab's reference) trained side by side; loss, per-layer
gradient norms (gradient flow), final accuracy, and the attention maps of the
trained model on one sample.

What training can and cannot tell (measured, README "gradlab train"): a model
that does not learn, learns slowly, or whose gradients vanish or explode shows
here; a quiet gradient bug that still trains (a transposed square weight
gradient) mostly does not, which is what the `gradient` check is for.
"""
import copy
import time

import numpy as np

from gradlab.contract import options
from gradlab.contract.config import Config, make_config
from gradlab.contract.errors import CheckFailure, CheckSkipped, GradlabError, StudentError, UsageError
from gradlab.contract.kinds import SUBMODULE, get_kind
from gradlab.contract.records import ERROR, FAIL, PASS, SKIP, CheckRecord, KindResult, curve, heatmap, table
from gradlab.execution.harness import reading_grads_ahead
from gradlab.execution.loader import open_implementation, reference
from gradlab.execution.subject import Subject, call_cross_entropy, call_scalar
from gradlab.execution.weights import load_reference, named_params
from gradlab.training import task as tasks

# The default size: small enough for ~2 s on a 2-core machine, large enough that the reverse task takes
# ~150 steps to learn (so a part that learns slowly shows), with 2 layers and 2 heads to look at.
DEFAULTS = dict(batch_size=32, half=3, d_model=32, d_ff=64, num_heads=2, n_layers=2, vocab_size=11, lr=3e-3,
                max_norm=1.0, warmup_steps=20)
STEPS = 200
EVAL_BATCH = 256
SPEED = 0.5          # the bar: your loss at the end <= the reference's loss after SPEED * steps
VANISH = 1e-3        # a layer's gradient norm below this x the largest layer's (median over steps): vanishing
EXPLODE = 1e2        # a layer's gradient norm growing this x above its first value: exploding
OPTIMIZERS = ("adamw", "adam", "sgd")
# From the same weights on the same batches a correct model's loss follows the reference's up to rounding:
# measured over 10 seeds of the train check (benchmarks/train_separation.py), the largest relative gap at any
# step is 3.6e-15 in float64 and 3.1e-6 in float32. An LM with a transposed out_weight gradient, which learns
# the task fine, leaves it by 0.14 to 0.94. The gap allowed:
TRACK = 1e-2


MAX_STEPS = 100_000


def config(seed=0, **overrides):
    for name in ("seq_len", "max_len", "weight_decay"):
        if name in overrides:         # the task sets these: a value given would be ignored without a word
            raise UsageError(f"{name}={overrides[name]}: the task sets it, so it cannot be set here (" + (
                f"its sequences are {2 * DEFAULTS['half']} tokens: {DEFAULTS['half']} tokens and their reversal, or copy)"
                if name != "weight_decay" else "training runs without weight decay, the reference alike)"))
    base = dict(DEFAULTS)
    given = overrides.pop("half", base.pop("half"))     # not a cfg field: the task's sequence is 2 * half long
    try:
        half = int(given)
    except (TypeError, ValueError):
        half = 0
    if not 1 <= half <= 64:
        raise UsageError(f"half={given}: the task's half length must be an integer in [1, 64]")
    base.update(overrides)
    base.update(seq_len=2 * half, max_len=2 * half, seed=seed, weight_decay=0.0)
    return make_config(Config(), **base), half


def train(impl=None, steps=STEPS, seed=0, task="reverse", progress=None, isolate=None, limits=None, **overrides):
    """Train the student's model and the reference side by side. Returns a
    KindResult ("train") with one record whose views are the report's figures.
    `progress(step, steps, loss)` is called after every step. A file runs in a
    worker process (`isolate`, `limits`: as for gradlab.check); the training
    loop, the reference and the verdict stay in this process."""
    if task not in tasks.TASKS:
        raise UsageError(f"task={task!r}: use {' or '.join(tasks.TASKS)}")
    if not 10 <= int(steps) <= MAX_STEPS:
        raise UsageError(f"steps={steps}: train at least 10 steps and at most {MAX_STEPS:,} (the toy tasks are "
                         "learned in a few hundred)")
    cfg, half = config(seed, **overrides)
    options.check_sizes("lm", cfg, ["train"], set(overrides))     # the sizes, before anything is built
    loaded = open_implementation(impl, isolate, limits)
    start = time.perf_counter()
    try:
        parts = _student_parts(loaded, cfg)
        if not parts:
            raise CheckSkipped(f"{loaded.name} registers nothing training uses (an lm, a part of one such as "
                               "attention or ffn, an optimizer, schedule, clip_grad_norm or cross_entropy)")
        record = run_training(parts, cfg, half, int(steps), task, progress, loaded.name == "reference")
    except CheckFailure as f:
        record = CheckRecord("train", FAIL, str(f), f.metrics, f.details)
    except CheckSkipped as s:
        record = CheckRecord("train", SKIP, str(s))
    except StudentError as e:
        record = CheckRecord("train", ERROR, f"train: {e}")
    finally:
        if hasattr(loaded, "close"):
            loaded.close()     # the worker is stopped before the result is shown
    record.seconds = time.perf_counter() - start
    return KindResult("train", loaded.name, seed, {**cfg.to_dict(), "steps": steps, "task": task}, [record])


# ---- the two models ---------------------------------------------------------------

class Run:
    """One side of the comparison: a model, its parameter slots, its update rule."""

    def __init__(self, label, model, slots, forward, backward, attention):
        self.label, self.model, self.slots = label, model, slots
        self.forward, self.backward, self.attention = forward, backward, attention
        self.losses, self.norms = [], {}
        self.predict = forward
        self.student_slots = [s.slot for s in slots if getattr(s, "subject", None) is not None]   # the student's


def run_training(parts, cfg, half, steps, task, progress=None, is_reference=False):
    """parts: {kind: Subject} of the student's registrations. Returns the CheckRecord;
    raises CheckFailure (below the bar), CheckSkipped, StudentError."""
    R = reference()
    ref_lm = R.get("lm").target(cfg)
    ours, theirs, setting = _models(cfg, ref_lm, parts)
    if is_reference:
        setting = "gradlab's reference LM (against itself)"
    rng = np.random.default_rng([cfg.seed, 7])
    fns = Functions(cfg, {} if is_reference else parts)
    for k in range(steps):
        ids, targets = tasks.batch(rng, task, cfg.batch_size, half, cfg.vocab_size)
        lr_scale = fns.lr_scale(k + 1)
        for run, theirs_side in ((ours, False), (theirs, True)):
            _step(run, fns, ids, targets, lr_scale, student=theirs_side)
        if progress:
            progress(k + 1, steps, theirs.losses[-1])
        if not np.isfinite(theirs.losses[-1]):
            break
    eval_ids, eval_targets = tasks.batch(np.random.default_rng([cfg.seed, 99]), task, EVAL_BATCH, half,
                                         cfg.vocab_size)
    acc_ours, acc_theirs = _accuracy(ours, eval_ids, eval_targets), _accuracy(theirs, eval_ids, eval_targets)
    return _judge(setting, task, steps, cfg, ours, theirs, acc_ours, acc_theirs, eval_ids[:1], fns.notes)


USED = ("lm", "attention", "ffn", "layernorm", "block", "embedding", "positional") + OPTIMIZERS + (
    "schedule", "clip_grad_norm", "cross_entropy")


def _student_parts(loaded, cfg):
    """{kind: Subject} for every kind the file registers that training uses."""
    return {name: Subject(get_kind(name), loaded.get(name), cfg, loaded.name, loaded.files)
            for name in loaded.registrations if name in USED}


def _models(cfg, ref_lm, parts):
    """(reference Run, student Run, a phrase saying what is trained)."""
    from gradlab.checks.overfit import TinyLM, _reference_slots, _swap_in   # the overfit check's model
    if "lm" in parts:
        subject = parts["lm"]
        module, slots = subject.fresh(np.random.default_rng(cfg.seed), randomize=False)
        how = load_reference(subject, module, slots, named_params(ref_lm))
        student_slots = [_Slot(subject, s) for s in subject.slots(module)]
        theirs = Run("yours", module, student_slots, lambda ids: subject.forward(module, ids),
                     lambda g: subject.backward(module, g), lambda: _find_attention(module, subject))
        # any batch size (evaluation, the attention sample): forward guarded, its output checked by _accuracy
        theirs.predict = lambda ids: subject.run("forward (evaluation)", module.forward, ids)
        ours = _reference_run(ref_lm, _reference_slots(ref_lm))
        return ours, theirs, f"your lm (weights copied {how})"
    swapped = [k for k in parts if parts[k].kind.has(SUBMODULE)]
    tiny = TinyLM(cfg, ref_lm)
    model = copy.deepcopy(tiny)
    if not swapped:
        slots = _reference_slots(model)
        setting = "gradlab's reference LM"
    else:
        slots, where = [], []
        for k in swapped:
            got, at = _swap_in(parts[k], model, np.random.default_rng(cfg.seed))
            # a later swap may replace the slots of a part swapped in earlier (a block holds attention)
            slots = [s for s in slots if not any(s.name == g.name for g in got)] + got
            where.append(f"your {k} at {at}")
        slots = list({s.name: s for s in slots}.values())
        setting = "gradlab's reference LM with " + "; ".join(where)
    part = next(iter(parts.values()))     # guards the calls (in a worker or here) of a model holding parts
    theirs = Run("yours", model, slots, lambda ids: part.run("forward (training)", model.forward, ids),
                 lambda g: part.run("backward (training)", model.backward, g),
                 lambda: _find_attention(model, part))
    return _reference_run(tiny, _reference_slots(tiny)), theirs, setting


def _reference_run(model, slots):
    return Run("reference", model, slots, model.forward, model.backward, lambda: _find_attention(model))


class _Slot:
    def __init__(self, subject, slot):
        self.subject, self.slot, self.name, self.value = subject, slot, slot.name, slot.value

    def read(self):
        return self.subject.read_grads([self.slot])[self.slot.name]


# ---- optimizer, schedule, clipping, loss: the student's where registered ---------------

class Functions:
    def __init__(self, cfg, parts):
        R = reference()
        self.cfg, self.notes = cfg, []
        self.ce_ref = R.get("cross_entropy").target
        self.clip_ref = R.get("clip_grad_norm").target
        self.schedule_ref = R.get("schedule").target
        self.ce = parts.get("cross_entropy")
        self.clip = parts.get("clip_grad_norm")
        self.schedule = parts.get("schedule")
        kind = next((k for k in OPTIMIZERS if k in parts), None)
        opt_cfg = cfg.replace(weight_decay=0.0)
        self.opt_kind = kind or "adam"
        self.opt_ours = R.get(self.opt_kind).target(opt_cfg)
        self.opt_subject = parts.get(kind) if kind else None
        if self.opt_subject is not None:
            self.opt_subject = self.opt_subject.with_cfg(opt_cfg)
        self.opt_theirs = self.opt_subject.build() if self.opt_subject else R.get(self.opt_kind).target(opt_cfg)
        self.peak = self.schedule_ref(cfg.warmup_steps, cfg.d_model, cfg.warmup_steps)
        used = [k for k in (kind, "schedule", "clip_grad_norm", "cross_entropy") if k and k in parts]
        if used:
            self.notes.append("your " + ", ".join(used) + " in the training loop")
        # where the student's optimizer keeps its learning rate; none that can be set: no schedule in either run
        # (the student's at a constant lr beside a scheduled reference parted from it, and blamed their code)
        self.lr_field = next((f for f in LR_FIELDS if hasattr(self.opt_theirs, f)), None)
        self.constant = self.lr_field is None
        if self.constant:
            self.notes.append(f"no warmup schedule in either run: your {kind} keeps its learning rate in no attribute "
                              f"gradlab can set ({' or '.join(LR_FIELDS)}), so both train at the constant lr {cfg.lr:g}")

    def lr_scale(self, step):
        """The warmup schedule, normalised to peak at 1: (reference's, yours); 1 for both at a constant lr."""
        if self.constant:
            return 1.0, 1.0
        ours = self.schedule_ref(step, self.cfg.d_model, self.cfg.warmup_steps) / self.peak
        if self.schedule is None:
            return ours, ours
        theirs = call_scalar(self.schedule, f"schedule({step}, d_model, warmup_steps)", step, self.cfg.d_model,
                             self.cfg.warmup_steps) / self.peak
        return ours, theirs


LR_FIELDS = ("lr", "learning_rate", "eta", "step_size")   # where an optimizer keeps its learning rate


def _step(run, fns, ids, targets, lr_scale, student):
    logits = run.forward(ids)
    if student and fns.ce is not None:
        loss, grad = call_cross_entropy(fns.ce, logits.astype(np.float64), targets, tasks.IGNORE)
    else:
        loss, grad = fns.ce_ref(logits.astype(np.float64), targets, ignore_index=tasks.IGNORE)
    run.losses.append(float(loss))
    if not np.isfinite(loss):
        return
    with reading_grads_ahead(run.student_slots, run.model):     # read next: through a worker, in backward's request
        run.backward(np.asarray(grad).astype(logits.dtype))
    grads = {s.name: np.array(s.read(), dtype=np.float64) for s in run.slots}
    for group, norm in _layer_norms(grads).items():
        run.norms.setdefault(group, []).append(norm)
    glist = [grads[s.name] for s in run.slots]
    if student and fns.clip is not None:
        call_scalar(fns.clip, "clip_grad_norm(grads, max_norm)", glist, fns.cfg.max_norm)
    else:
        fns.clip_ref(glist, fns.cfg.max_norm)
    params = {s.name: s.value for s in run.slots}
    scale = lr_scale[1] if student else lr_scale[0]
    if student and fns.opt_subject is not None:
        if fns.lr_field is not None:
            setattr(fns.opt_theirs, fns.lr_field, fns.cfg.lr * scale)
        fns.opt_subject.step(fns.opt_theirs, params, grads)
    else:
        opt = fns.opt_theirs if student else fns.opt_ours
        opt.lr = fns.cfg.lr * scale          # gradlab's own optimizer
        opt.step(params, grads)


def _in_order(theirs, ours):
    """The student's per-layer series in the reference's order (then any of their own), so that the two
    gradient-flow plots give each layer the same place and colour."""
    return {**{k: theirs[k] for k in ours if k in theirs}, **{k: v for k, v in theirs.items() if k not in ours}}


def _layer_norms(grads):
    """{layer: L2 norm of all its gradients}: blocks.i.<part> (attn, ffn, ln1, ...), embeddings, ln_f, head."""
    out = {}
    for name, g in grads.items():
        parts = name.split(".")
        group = ".".join(parts[:3]) if parts[0] == "blocks" and len(parts) > 3 else parts[0]
        out[group] = out.get(group, 0.0) + float(np.sum(g * g))
    return {k: float(np.sqrt(v)) for k, v in out.items()}


def _accuracy(run, ids, targets):
    logits = np.asarray(run.predict(ids))
    if logits.shape != targets.shape + (logits.shape[-1],):
        raise StudentError(f"forward of a batch of {len(ids)} returned shape {logits.shape}; expected "
                           f"{targets.shape + ('vocab_size',)}")
    scored = targets != tasks.IGNORE
    right = (np.argmax(logits, axis=-1) == targets) & scored
    whole = np.all(right | ~scored, axis=1)
    return {"tokens": float(right.sum() / scored.sum()), "sequences": float(whole.mean())}


def _find_attention(model, subject=None, depth=0, seen=None):
    """[(path, attn_weights (B, H, T, T))] of every attention inside `model`; the
    parts living in a worker are asked there (subject.kept_attention)."""
    from gradlab.execution.remote import RemoteObject
    if isinstance(model, RemoteObject):
        found = [a for a in subject.kept_attention(model) if isinstance(a, np.ndarray) and a.ndim == 4]
        return [("" if len(found) == 1 else f"attention {i}", a) for i, a in enumerate(found)]
    seen = set() if seen is None else seen
    if id(model) in seen or depth > 4:
        return []
    seen.add(id(model))
    out = []
    a = getattr(model, "attn_weights", None)
    if isinstance(a, np.ndarray) and a.ndim == 4:
        out.append(("", a))
    children = list(vars(model).items()) if hasattr(model, "__dict__") else []
    for name, child in children:
        items = list(enumerate(child)) if isinstance(child, (list, tuple)) else [(None, child)]
        for i, c in items:
            if hasattr(c, "__dict__") and not isinstance(c, np.ndarray):
                for path, w in _find_attention(c, subject, depth + 1, seen):
                    label = name if i is None else f"{name}.{i}"
                    out.append((f"{label}.{path}".rstrip("."), w))
    return out


# ---- judging and showing ----------------------------------------------------------------

def _tail(losses, k):
    return float(np.mean(losses[-k:]))


def _judge(setting, task, steps, cfg, ours, theirs, acc_ours, acc_theirs, sample, notes):
    n = len(ours.losses)
    k = max(1, n // 10)
    bar_step = int(SPEED * n)
    bar = float(np.mean(ours.losses[max(0, bar_step - k // 2):bar_step + k - k // 2]))
    final, ref_final = _tail(theirs.losses, k), _tail(ours.losses, k)
    warnings = _flow_warnings(theirs.norms, ours.norms)
    views = [curve(f"training loss ({task} task)", {"reference": ours.losses, "yours": theirs.losses},
                   ylabel="cross-entropy"),
             curve("gradient flow: your gradient norm per layer", _in_order(theirs.norms, ours.norms),
                   ylabel="L2 norm of the gradients"),
             curve("gradient flow: the reference's gradient norm per layer", ours.norms,
                   ylabel="L2 norm of the gradients"),
             table("final accuracy on 256 new sequences", [
                 {"model": "yours", "tokens right": f"{acc_theirs['tokens']:.0%}",
                  "sequences right": f"{acc_theirs['sequences']:.0%}", "final loss": final},
                 {"model": "reference", "tokens right": f"{acc_ours['tokens']:.0%}",
                  "sequences right": f"{acc_ours['sequences']:.0%}", "final loss": ref_final}])]
    views += _attention_views(theirs, sample, cfg)
    if warnings:
        views.insert(1, table("gradient flow warnings", [{"warning": w} for w in warnings]))
    metrics = {"steps": n, "final_loss": final, "reference_final_loss": ref_final, "limit": bar,
               "limit_step": bar_step, "accuracy": acc_theirs["tokens"], "reference_accuracy": acc_ours["tokens"]}
    summary = (f"{setting}, {n} steps of the {task} task: loss {theirs.losses[0]:.3g} -> {final:.3g}, "
               f"{acc_theirs['tokens']:.0%} of tokens right (reference {ours.losses[0]:.3g} -> {ref_final:.3g}, "
               f"{acc_ours['tokens']:.0%})")
    extra = "".join(f"; {w}" for w in warnings) + "".join(f"; {note}" for note in notes)
    details = {"views": views}
    m = min(len(theirs.losses), len(ours.losses))
    gap = np.abs(np.array(theirs.losses[:m]) - np.array(ours.losses[:m])) / np.maximum(np.array(ours.losses[:m]),
                                                                                         1e-12)
    metrics["curve_gap"] = float(np.nanmax(gap)) if m else 0.0
    if not np.isfinite(ours.losses).all() or not ref_final < 0.9 * ours.losses[0]:
        # the bar comes from the reference's own run: one that diverged or did not learn sets none
        raise CheckSkipped(f"train: the reference run did not learn the {task} task at these settings either "
                           f"(loss {ours.losses[0]:.3g} -> {ref_final:.3g} in {n} steps), so there is nothing to "
                           "compare yours with: lower lr, or train more steps")
    if not np.isfinite(theirs.losses).all():
        raise CheckFailure(f"train: {summary}: the loss became {theirs.losses[-1]} at step {n}{extra}", metrics,
                           details)
    if final > bar:
        raise CheckFailure(f"train: {summary}: it learns less than half as fast as the reference (needed: a loss "
                           f"of at most {bar:.3g} at the end, the reference's after {bar_step} steps){extra}",
                           metrics, details)
    if metrics["curve_gap"] > TRACK:
        first = int(np.argmax(gap > TRACK))
        raise CheckFailure(
            f"train: {summary}: it learns, but its loss left the reference's (by up to {metrics['curve_gap']:.1%}, "
            f"first beyond {TRACK:.0%} at step {first}); from the same weights on the same batches a correct "
            f"model follows the reference's curve up to rounding (1e-6 measured in float32), so an update "
            f"differs quietly: a gradient (the gradient check says which) or the optimizer{extra}",
            metrics, details)
    return CheckRecord("train", PASS, f"{summary}; bar: the reference's loss after {bar_step} steps, {bar:.3g}{extra}",
                       metrics, details)


def _flow_warnings(norms, ref_norms):
    """Vanishing or exploding gradients, in words, for the student's run."""
    out = []
    med = {g: float(np.median(v)) for g, v in norms.items() if v}
    top = max(med.values(), default=0.0)
    for g, v in norms.items():
        if not v:
            continue
        if not np.isfinite(v).all():
            out.append(f"exploding gradients: {g}'s gradient norm became {v[int(np.argmin(np.isfinite(v)))]} "
                       f"at step {int(np.argmin(np.isfinite(v))) + 1}")
        elif top > 0 and med[g] < VANISH * top:
            ref = float(np.median(ref_norms.get(g, [np.nan])))
            size = "no gradient at all" if med[g] == 0 else f"a gradient {med[g] / top:.1g} of the largest layer's"
            out.append(f"vanishing gradients: {g} gets {size} (median over steps: yours {med[g]:.2g}, the "
                       f"reference's {ref:.2g}): does every backward between it and the loss pass dL/dx on "
                       "(a residual, a missing term, a zero returned)?")
        elif v[0] > 0 and max(v) > EXPLODE * v[0] and max(v) > EXPLODE * float(
                np.median(ref_norms.get(g, v))):
            out.append(f"exploding gradients: {g}'s gradient norm grew from {v[0]:.2g} to {max(v):.2g} "
                       f"(the reference's stayed near {float(np.median(ref_norms.get(g, v))):.2g})")
    return out


def _attention_views(run, sample, cfg):
    try:
        run.predict(sample)
        found = run.attention()
    except GradlabError:
        return []
    words = tasks.tokens(sample[0], cfg.vocab_size)
    views = []
    for i, (path, a) in enumerate(found):
        for h in range(a.shape[1]):
            views.append(heatmap(f"attention weights of the trained model, {path or 'attention'} head {h} "
                                 f"(rows: queries, columns: keys)", np.asarray(a[0, h], dtype=float).tolist(),
                                 xlabel="key token", ylabel="query token", mask_upper=True,
                                 xticklabels=words, yticklabels=words))
    return views
