"""`copy_task`: an encoder-decoder learns to copy. The student's seq2seq and
gradlab's reference, from the same weights, are trained with the same Adam on
one tiny batch: target = the first T source tokens, decoder input = the target
shifted right behind a start token (teacher forcing), at n_layers = 1. As in `overfit`, the
reference sets the bar: within STEPS steps the student's lowest loss must reach
the reference's loss after STEPS * SPEED steps (learn at least half as fast)."""
import numpy as np

from gradlab.contract.config import Config
from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.contract.kinds import SEQ2SEQ
from gradlab.contract.records import curve, table
from gradlab.contract.suite import Outcome, check
from gradlab.execution.discovery import find_slots
from gradlab.execution.harness import reading_grads_ahead
from gradlab.execution.loader import reference as reference_impl
from gradlab.execution.weights import load_reference, named_params, reference_module

STEPS = 30
LR = 0.02
SPEED = 0.5
BOS = 0               # the start token; the sequences to copy use ids 1..V-1


def copy_batch(cfg, rng):
    """(src_ids (B, S), tgt_in (B, T), targets (B, T)) of the copy task."""
    B, T = cfg.batch_size, cfg.seq_len
    S = min(T + 2, cfg.max_len)      # at least T (a copy), within the positional table's max_len rows
    src = rng.integers(1, cfg.vocab_size, size=(B, S))
    targets = src[:, :T].copy()
    tgt_in = np.concatenate([np.full((B, 1), BOS), targets[:, :-1]], axis=1)
    return src, tgt_in, targets


def _train(forward, backward, params, read_grads, batch, dtype, slots=(), module=None):
    """Loss before each of STEPS Adam steps and after the last. slots: the student's module's, whose
    gradients read_grads() reads right after backward (through a worker: in its request)."""
    ce = reference_impl().get("cross_entropy").target
    adam = reference_impl().get("adam").target
    src, tgt_in, targets = batch
    optimizer = adam(Config(lr=LR, weight_decay=0.0))
    losses = []
    for step in range(STEPS + 1):
        logits = forward(src.copy(), tgt_in.copy())
        loss, grad = ce(logits.astype(np.float64), targets)
        losses.append(float(loss))
        if step == STEPS or not np.isfinite(loss):
            break
        with reading_grads_ahead(slots, module):
            backward(grad.astype(dtype))
        optimizer.step(params, read_grads())
    return losses


@check("copy_task", needs={SEQ2SEQ}, order=60,
       summary="an encoder-decoder learns a tiny copy task at least half as fast as the reference")
def copy_task(subject, rng):
    if subject.cfg.dtype == "float16":
        raise CheckSkipped(f"{subject.kind.name}: training entirely in float16 diverges for gradlab's reference too "
                           "(Adam's eps=1e-8 underflows to 0 in float16); the mixed_precision kind checks training "
                           "with float16 compute")
    # one encoder and one decoder layer: the copy is learned as well and costs half (the stacking of
    # layers is the gradient check's business, at cfg's n_layers)
    subject = subject.with_cfg(subject.cfg.replace(n_layers=1))
    kind, cfg = subject.kind, subject.cfg
    batch = copy_batch(cfg, rng)
    ref = reference_module(kind, cfg)
    ref_params = named_params(ref)
    module, slots = subject.fresh(rng, randomize=False)
    how = load_reference(subject, module, slots, {n: v.copy() for n, v in ref_params.items()})
    dtype = cfg.np_dtype
    ref_slots = find_slots(ref)

    def ref_grads():
        return {slot.name: slot.grad() for slot in ref_slots}

    want = _train(ref.forward, ref.backward, ref_params, ref_grads, batch, dtype)
    got = _train(lambda s, t: subject.forward(module, s, t), lambda g: subject.backward(module, g),
                 {s.name: s.value for s in slots}, lambda: subject.read_grads(slots), batch, dtype, slots, module)
    bar = want[int(STEPS * SPEED)]
    views = [curve("copy task: loss per step", {"yours": got, "reference": want}, xlabel="step",
                   ylabel="cross-entropy"),
             table("copy task", [{"run": "yours", "first": got[0], "lowest": min(got), "last": got[-1]},
                                 {"run": "reference", "first": want[0], "lowest": min(want), "last": want[-1]}])]
    metrics = {"steps": STEPS, "loss_first": got[0], "loss_lowest": min(got), "reference_lowest": min(want),
               "bar": bar, "weights": how}
    if not want[-1] < 0.5 * want[0]:
        raise CheckSkipped(f"{kind.name}: cannot judge: gradlab's reference did not learn the copy task at these "
                           f"sizes ({want[0]:.3g} -> {want[-1]:.3g} in {STEPS} steps)")
    if not min(got) <= bar:
        raise CheckFailure(
            f"{kind.name}: the copy task is not learned: the loss went {got[0]:.4g} -> {got[-1]:.4g} (lowest "
            f"{min(got):.4g}) in {STEPS} Adam steps, while the reference went {want[0]:.4g} -> {want[-1]:.4g} and "
            f"reached {bar:.4g} in {int(STEPS * SPEED)}; the weights started equal ({how}). The gradient and "
            "backward checks say whether a gradient is wrong; a gradient that is right but never reaches a "
            "parameter (a decoder that ignores memory, an encoder whose dmemory is dropped) shows only here",
            metrics, {"views": views})
    return Outcome(f"the copy task is learned: loss {got[0]:.3g} -> {got[-1]:.3g} in {STEPS} Adam steps (the "
                   f"reference: {want[0]:.3g} -> {want[-1]:.3g})", metrics, {"views": views})
