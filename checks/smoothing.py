"""`smoothing`: a label-smoothed cross-entropy against gradlab's reference at
several epsilons: epsilon = 0 must be exactly cross_entropy, and epsilon = 0.1,
0.3 the smoothed target y = (1 - epsilon) * one_hot + epsilon / V, averaged
over the positions. A loss that differs is compared with the usual slips (a sum
instead of the mean, as in article 000's label_smoothing_loss; epsilon / (V - 1)
off the target; epsilon ignored) and the one that matches is named."""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import SMOOTHING
from gradlab.contract.records import table
from gradlab.contract.suite import Outcome, check
from gradlab.execution.loader import reference as reference_impl
from gradlab.execution.subject import call_smoothing, loss_inputs, validate_loss
from gradlab.numerics.tolerance import smoothing_bounds, tolerance

EPSILONS = (0.0, 0.1, 0.3)


def _smoothed(logits, targets, eps, off_target=None, mean=True, on_target=None):
    """(loss, grad) of smoothed cross-entropy; off_target: the mass each other class gets (default eps / V);
    on_target: the target's (default 1 - eps, plus eps / V with the default off_target)."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V).astype(np.float64)
    t = targets.reshape(-1)
    N = len(t)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    y = np.full_like(logp, eps / V if off_target is None else off_target)
    y[np.arange(N), t] = on_target if on_target is not None else 1 - eps + (eps / V if off_target is None else 0.0)
    div = N if mean else 1
    return -(y * logp).sum() / div, ((np.exp(logp) - y) / div).reshape(logits.shape)


def _variants(logits, targets, eps):
    V, N = logits.shape[-1], targets.size
    return [
        ("the loss is summed over the positions, not averaged (article 000's label_smoothing_loss returns "
         f"np.sum): divide the loss and grad_logits by the number of positions ({N})",
         _smoothed(logits, targets, eps, mean=False)),
        ("the other classes get epsilon / (V - 1) and the target 1 - epsilon; the contract (and PyTorch) give "
         "every class epsilon / V, so the target gets 1 - epsilon + epsilon / V",
         _smoothed(logits, targets, eps, off_target=eps / (V - 1) if V > 1 else 0.0)),
        ("epsilon is ignored: this is plain cross-entropy; mix the one-hot target with the uniform "
         "distribution, y = (1 - epsilon) * one_hot + epsilon / V", _smoothed(logits, targets, 0.0)),
        ("the uniform part is missing: y = (1 - epsilon) * one_hot; add epsilon / V to every class",
         _smoothed(logits, targets, eps, off_target=0.0)),
        ("the uniform part sums -log p over the V classes (epsilon to every class): it is their mean, "
         "epsilon / V to each", _smoothed(logits, targets, eps, off_target=eps, on_target=1.0)),
        ("the loss is the KL divergence KL(y || p) = cross-entropy - entropy(y), which has the same gradient: the "
         "contract's loss is the cross-entropy -sum(y * log p) averaged over the positions (the entropy of y, a "
         "constant, is missing)", _kl(logits, targets, eps)),
    ] + [(f"the epsilon argument is not used: the loss is the reference's at epsilon = {other} (an epsilon fixed "
          "inside the function, or a default that wins over the argument?)", _smoothed(logits, targets, other))
         for other in sorted({0.1, *EPSILONS} - {0.0, eps})]


def _kl(logits, targets, eps):
    """(loss, grad) of KL(y || softmax(logits)), averaged over the positions: the cross-entropy minus y's entropy."""
    loss, grad = _smoothed(logits, targets, eps)
    V = logits.shape[-1]
    y = np.full((targets.size, V), eps / V)
    y[np.arange(targets.size), targets.reshape(-1)] += 1 - eps
    entropy = -float(np.sum(np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0))) / targets.size
    return loss - entropy, grad


def _close(got, want, tol, allow):
    """|got - want| within tol (a Tol) of want's largest entry, plus `allow` (an eps inside the log: a number,
    or an array shaped like want)."""
    scale = float(np.abs(want).max())
    return bool(np.all(np.abs(np.asarray(got, np.float64) - want) <= tol.allowed(scale) + allow))


@check("smoothing", needs={SMOOTHING}, order=25,
       summary="label smoothing: epsilon = 0 is cross_entropy; the smoothed loss is averaged; names sum vs mean")
def smoothing(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    logits, targets = loss_inputs(subject, rng)
    cross_entropy = reference_impl().get("cross_entropy").target
    rows = []
    for eps in EPSILONS:
        what = f"{kind.name}(logits, targets, epsilon={eps})"
        loss, grad = validate_loss(subject, call_smoothing(subject, logits.copy(), targets.copy(), eps), what, logits)
        # the forward row of gradlab.numerics.tolerance, plus what an eps inside the log may move
        # (np.log(p + 1e-7) is no bug: tolerance.smoothing_bounds)
        tol = tolerance("forward", cfg.np_dtype, grad)
        loss_allow, grad_allow = smoothing_bounds(logits, targets, eps)
        # epsilon = 0 is judged against gradlab's cross_entropy itself
        want_loss, want_grad = cross_entropy(logits.astype(np.float64), targets) if eps == 0.0 else \
            _smoothed(logits, targets, eps)
        ok_loss, ok_grad = _close(loss, want_loss, tol, loss_allow), _close(grad, want_grad, tol, grad_allow)
        rows.append({"epsilon": eps, "loss": loss, "reference": want_loss, "grad_logits ok": ok_grad,
                     "ok": ok_loss and ok_grad})
        if ok_loss and ok_grad:
            continue
        view = table(f"{kind.name}: loss per epsilon", rows)
        # a slip that coincides with the reference here (epsilon / (V - 1) at epsilon = 0) explains nothing
        slips = [(hint, vl, vg) for hint, (vl, vg) in _variants(logits, targets, eps)
                 if not (_close(vl, want_loss, tol, loss_allow) and _close(vg, want_grad, tol, grad_allow))]
        named = [hint for hint, vl, vg in slips
                 if _close(loss, vl, tol, loss_allow) and (ok_grad or _close(grad, vg, tol, grad_allow))]
        named = named or [hint for hint, vl, vg in slips if _close(loss, vl, tol, loss_allow)]
        if not ok_loss:
            head = f"{what}: loss {loss:.8g}, reference {want_loss:.8g}"
            if eps == 0.0:
                head += " (with epsilon = 0 it must equal cross_entropy)"
        else:
            k = int(np.argmax(np.abs(grad.astype(np.float64) - want_grad)))
            index = tuple(int(i) for i in np.unravel_index(k, grad.shape))
            head = (f"{what}: the loss is right but grad_logits differs at (batch, time, class) {index}: "
                    f"{float(grad.flat[k]):.6g}, reference {float(want_grad.flat[k]):.6g} (it is "
                    "(softmax - y) / N)")
        raise CheckFailure(f"{kind.name}: {head}" + (f"; likely cause: {named[0]}" if named else ""),
                           {"epsilon": eps, "loss": loss, "reference": want_loss}, {"views": [view]})
    return Outcome(f"epsilon = {', '.join(str(e) for e in EPSILONS)}: loss and grad_logits match the reference "
                   "(epsilon = 0 equals cross_entropy)", {"epsilons": len(EPSILONS)},
                   {"views": [table(f"{kind.name}: loss per epsilon", rows)]})
