"""The precondition: the module builds and its calls return usable values.
When it fails the other checks are skipped, so their messages are not noise."""
import numpy as np

from gradlab.contract.errors import CheckFailure, CheckSkipped, StudentError
from gradlab.contract.kinds import CHUNKED, INITIALIZER, LAST_AXIS, LOSS, POSITION_TABLE, PROBABILITIES, TRAJECTORY
from gradlab.execution.calls import Scheduler, call_chunked, call_init, call_table
from gradlab.execution.subject import call_cross_entropy, call_scalar, call_softmax
from gradlab.contract.suite import Outcome, check


_LOOKED_FOR = ("gradlab looks for module.params and module.grads (dicts, or lists aligned by position), "
               "module.parameters(), attribute pairs such as weight/dweight, or Parameter objects holding "
               ".data and .grad (CONTRACT §2).")


def _expected(kind, expected):
    """Which parameters CONTRACT §3 gives the kind, in numbers and in cfg's fields."""
    words = kind.symbolic(type(kind).param_shapes) or {}
    shown = [f"{n} {s}" + (f" = {words[n]}" if n in words else "") for n, s in list(expected.items())[:4]]
    more = f" and {len(expected) - 4} more" if len(expected) > 4 else ""
    return (f"CONTRACT §3's {kind.name} ({kind.summary}) has {', '.join(shown)}{more}; a module of this kind holds "
            "them, and backward fills their gradients")


def _flat_only(subject, rng):
    """Whether a module that raised on gradlab's (B, T, D) input builds and runs forward and backward on a
    2-D one (B*T, D): written for a batch of rows only (np.dot(self.inputs.T, dvalues))."""
    cfg = subject.cfg
    try:
        module = subject.build()
        x = rng.standard_normal((cfg.batch_size * cfg.seq_len, cfg.d_model)).astype(cfg.np_dtype)
        out = subject.run("forward", module.forward, x)
        if not isinstance(out, np.ndarray) or out.ndim != 2:
            return False
        subject.run("backward", module.backward, np.ones_like(out))
    except (StudentError, CheckSkipped):
        return False
    return True


def _flat_hint(kind, cfg):
    B, T, D = cfg.batch_size, cfg.seq_len, cfg.d_model
    return (f"it runs on a 2-D input ({B * T}, {D}), so it handles rows (N, D) only; gradlab calls a {kind.name} "
            f"on (B, T, D) = ({B}, {T}, {D}), as CONTRACT §3 says (it acts on x[..., D]: in a Transformer every "
            "position of every sample); flatten the leading axes where backward sums over samples: "
            "x2 = x.reshape(-1, x.shape[-1]), g2 = g.reshape(-1, g.shape[-1]), dW = x2.T @ g2, db = g2.sum(0), "
            "and return dx with x's shape")


def _found(count):
    return f"{count} parameter{'' if count == 1 else 's'} found"


def shown_by(subject):
    """smoke's Outcome when the calls another check made on `subject` (and passed) showed what smoke asks of a
    module: it built, forward and backward ran and returned arrays of the right shape, the parameters were found
    (some, when the kind has any) and backward left a gradient for each of them. None otherwise (a function kind,
    a forward-only module, a check that called less): smoke then runs itself."""
    seen, kind = subject.seen, subject.kind
    if kind.form != "module" or subject.no_backward or not (seen.build and seen.forward and seen.backward):
        return None
    if seen.slots is None or (kind.param_shapes(subject.cfg) and not seen.slots) or not set(seen.slots) <= seen.grads:
        return None
    return _passed(len(seen.slots))


def _passed(parameters):
    return Outcome(f"builds; forward and backward run; {_found(parameters)}", {"parameters": parameters})


@check("smoke", order=0, shown_by=shown_by,
       summary="the module builds, and forward/backward (or the function) return arrays of the right shape")
def smoke(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    if kind.form == "module":
        try:
            module, slots = subject.fresh(rng, randomize=False)
        except StudentError as e:
            if kind.has(LAST_AXIS) and _flat_only(subject, rng):
                e.args = (f"{e}; {_flat_hint(kind, subject.cfg)}",)
            raise
        expected = kind.param_shapes(cfg)
        if expected and not slots:
            raise CheckFailure(f"{kind.name}: found no parameters{'' if subject.no_backward else ' with gradients'} "
                               f"({subject.explain_slots(module)}). {_LOOKED_FOR} "
                               f"{_expected(kind, expected)}")
        for slot in [] if subject.no_backward else slots:
            # only presence here: a gradient of the wrong shape is a row of the shapes table
            if subject.read_grad(slot) is None:
                raise StudentError(f"backward left no gradient for parameter {slot.name!r} (expected "
                                   f"{slot.describe_grad()} of shape {slot.value.shape}): "
                                   f"{subject.explain_slots(module)}")
        if subject.no_backward:
            return Outcome(f"builds; forward runs; {subject.no_backward}, so the checks that need gradients are "
                           f"skipped and the forward checks run; {_found(len(slots))} (the float arrays "
                           "it holds)", {"parameters": len(slots), "forward_only": True})
        return _passed(len(slots))
    if kind.form == "scheduler":
        Scheduler(subject, subject.build()).next()
        return Outcome("builds; one call returns a learning rate")
    if kind.form == "optimizer":
        optimizer = subject.build()
        params = {"w": rng.standard_normal((3, 4))}
        before = params["w"].copy()
        subject.step(optimizer, params, {"w": rng.standard_normal((3, 4))})
        if np.array_equal(before, params["w"]):
            raise CheckFailure(f"{kind.name}: step(params, grads) left params unchanged; it must update "
                               "the arrays in place (param -= ..., not param = param - ...)")
        return Outcome("builds; step updates parameters in place")
    if kind.has(PROBABILITIES):
        call_softmax(subject, rng.standard_normal(kind.input_shape(cfg)))
    elif kind.has(LOSS):
        logits = rng.standard_normal(kind.input_shape(cfg))
        targets = rng.integers(0, cfg.vocab_size, size=logits.shape[:-1])
        call_cross_entropy(subject, logits, targets)
    elif kind.has(POSITION_TABLE):
        call_table(subject, cfg.max_len, cfg.d_model)
    elif kind.has(INITIALIZER):
        call_init(subject, (3, 5), "xavier_uniform", rng)
    elif kind.has(CHUNKED):
        q = rng.standard_normal((cfg.batch_size, cfg.num_heads, cfg.seq_len, cfg.d_k))
        call_chunked(subject, q, q, q, 2)
    elif kind.has(TRAJECTORY) and kind.name == "schedule":
        call_scalar(subject, "schedule(1, d_model, warmup_steps)", 1, cfg.d_model, cfg.warmup_steps)
    else:
        call_scalar(subject, "clip_grad_norm(grads, max_norm)", [rng.standard_normal(3)], cfg.max_norm)
    return Outcome("runs and returns values of the right type and shape")
