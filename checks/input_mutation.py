"""`input_mutation`: forward, backward and an optimizer's step leave the
caller's arrays as they were. `x -= x.mean()` in forward, `grad_out[h < 0] = 0`
in backward or `g += wd * p` in step silently corrupt the caller's data (the
residual stream of a block, the gradient another branch still needs).
clip_grad_norm is exempt: scaling the gradients in place is its contract."""
import numpy as np

from gradlab.contract.config import OTHER_DECAY
from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import CHUNKED, DIFFERENTIABLE, OPTIMIZER, PROBABILITIES
from gradlab.execution.calls import accepts, call_chunked
from gradlab.execution.subject import IGNORE_INDEX, call_cross_entropy, call_softmax, takes_ignore_index, with_ignored
from gradlab.contract.suite import Outcome, check
from gradlab.contract.numbers import counted


class _Watch:
    """Copies of the caller's arrays, to see whether a call changed them."""

    def __init__(self, kind_name):
        self.kind_name = kind_name
        self.kept = []    # (argument description, live array, copy)

    def keep(self, what, array):
        self.kept.append((what, array, array.copy()))
        return array

    def verify(self, call, hint):
        for what, live, copy in self.kept:
            if live.shape != copy.shape or live.dtype != copy.dtype:
                raise CheckFailure(f"{self.kind_name}: {call} changed the shape or dtype of the caller's {what} "
                                   f"in place (was {copy.shape} {copy.dtype}, now {live.shape} {live.dtype}). "
                                   f"{hint}")
            same = live == copy
            if live.dtype.kind == "f":
                same |= np.isnan(live) & np.isnan(copy)
            changed = ~same
            if changed.any():
                index = tuple(int(i) for i in np.argwhere(changed)[0])
                raise CheckFailure(
                    f"{self.kind_name}: {call} changed the caller's {what} in place: first at index {index}: "
                    f"was {copy[index]:.6g}, now {live[index]:.6g} ({int(changed.sum())} of {changed.size} entries "
                    f"changed). {hint}", {"changed_entries": int(changed.sum()), "argument": what, "call": call})
        return len(self.kept)


_FORWARD_HINT = ("Work on a new array: x = x - mean (not x -= mean), out = x + w (not x += w), "
                 "or x = x.copy() first; keep what backward needs without writing into it")
_BACKWARD_HINT = ("Build new arrays instead of editing grad_out (dh = grad_out * mask, not grad_out[mask] = 0; "
                  "g = g * s, not g *= s), and never write into the cached forward input")


@check("input_mutation", any_of={DIFFERENTIABLE, PROBABILITIES, OPTIMIZER, CHUNKED}, order=7,
       summary="forward, backward and step leave the caller's input arrays unchanged")
def input_mutation(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    watch = _Watch(kind.name)
    if kind.form == "optimizer":
        return _optimizer(subject, rng, watch)
    if kind.has(CHUNKED):
        shape = (cfg.batch_size, cfg.num_heads, cfg.seq_len, cfg.d_k)
        q, k, v = (watch.keep(name, rng.standard_normal(shape).astype(cfg.np_dtype)) for name in ("Q", "K", "V"))
        for causal in (None, True) if accepts(subject.registration.target, 5) else (None,):
            call_chunked(subject, q, k, v, 2, causal, copies=False)
            n = watch.verify(f"{kind.name}(Q, K, V, chunk_size=2{'' if causal is None else ', causal=True'})",
                             "Scale a copy (q = Q / np.sqrt(d_k), not Q /= ...), and write each chunk's result "
                             "into a new output array, not into Q or V")
        return Outcome(f"{counted(n, 'input array')} unchanged" + (" (causal and not)" if causal else ""), {"arrays": n})
    if kind.form == "function":
        x = watch.keep("logits" if not kind.has(PROBABILITIES) else "x",
                       (3 * rng.standard_normal(kind.input_shape(cfg))).astype(cfg.np_dtype))
        if kind.has(PROBABILITIES):
            call_softmax(subject, x)
            n = watch.verify("softmax(x)", "Compute exp(x - x.max(...)) into a new array, not x -= x.max(...)")
        else:
            targets = watch.keep("targets", rng.integers(0, cfg.vocab_size, size=x.shape[:-1]))
            call_cross_entropy(subject, x, targets)
            n = watch.verify(f"{kind.name}(logits, targets)",
                             "Shift a copy (z = logits - logits.max(...)), and build grad_logits as a new array "
                             "(e.g. from softmax(z)), not by editing logits")
            if not takes_ignore_index(subject):      # none in the contract, or the signature check says so
                return Outcome(f"{counted(n, 'input array')} unchanged" + (" (without padding: your function takes no "
                               "ignore_index)" if "ignore_index" in kind.keyword_args() else ""), {"arrays": n})
            # with padding: `targets[targets == ignore_index] = 0` is the usual in-place edit; the padding id
            # here is the last token (not 0), so that edit changes the caller's array
            pad = cfg.vocab_size - 1
            padded = with_ignored(rng.integers(0, pad, size=targets.shape), rng)
            padded = watch.keep("targets (with padding)", np.where(padded == IGNORE_INDEX, pad, padded))
            call_cross_entropy(subject, x, padded, pad)
            n = watch.verify(f"cross_entropy(logits, targets, ignore_index={pad})",
                             "Mask a copy of the targets (t = np.where(targets == ignore_index, 0, targets)), "
                             "not targets[targets == ignore_index] = 0; and shift a copy of logits")
        return Outcome(f"{counted(n, 'input array')} unchanged", {"arrays": n})
    module, _ = subject.fresh(rng)
    inputs = subject.make_inputs(rng)
    for spec, value in zip(kind.input_specs(), inputs):
        if isinstance(value, np.ndarray):
            watch.keep(f"{spec.name} (forward's input)", value)
    subject.forward(module, *inputs)
    n = watch.verify("forward(x)" if len(inputs) == 1 else
                     f"forward({', '.join(s.name for s in kind.input_specs())})", _FORWARD_HINT)
    if subject.no_backward:
        return Outcome(f"forward leaves the caller's {n} array{'s' if n != 1 else ''} unchanged ({subject.no_backward}: "
                       "backward not checked)", {"arrays": n})
    g = watch.keep("grad_out (backward's input)", rng.standard_normal(kind.output_shape(cfg)).astype(cfg.np_dtype))
    subject.backward(module, g)
    n = watch.verify("backward(grad_out)", _BACKWARD_HINT)
    return Outcome(f"forward and backward leave the caller's {counted(n, 'array')} unchanged", {"arrays": n})


def _optimizer(subject, rng, watch):
    """Two steps: neither may change the grads it was given, and step 2 may not
    change step 1's grads (an optimizer keeping the caller's array as its buffer). With the cfg's
    weight_decay, then with weight decay on when the cfg's is 0 (g += wd * p edits the caller's
    gradient only when there is a decay to add)."""
    decays = [subject.cfg.weight_decay] + ([OTHER_DECAY] if subject.cfg.weight_decay == 0 else [])
    for decay in decays:
        optimizer = subject.with_cfg(subject.cfg.replace(weight_decay=decay)).build()
        params = {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)}
        for step in (1, 2):
            grads = {k: watch.keep(f"grads[{k!r}] (given to step {step})",
                                   rng.standard_normal(v.shape)) for k, v in params.items()}
            subject.step(optimizer, params, grads)
            watch.verify(f"step {step} (step(params, grads)) with weight_decay={decay:g}",
                         "step must only update params; compute with new arrays (g = g + wd * p, not g += wd * p), "
                         "and copy a gradient before keeping it as a buffer (self.m[k] = g.copy())")
    return Outcome(f"two steps leave the caller's gradient arrays unchanged (weight_decay "
                   f"{' and '.join(f'{d:g}' for d in decays)})", {"arrays": len(watch.kept)})
