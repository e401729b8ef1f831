"""Calling conventions of article 000's function and scheduler kinds (CONTRACT §3).
Every call goes through harness.guarded and every value is validated before a
check looks at it, as in subject.py."""
import inspect

import numpy as np

from gradlab.contract.errors import StudentError
from gradlab.execution.harness import as_float_array, describe


def call_table(subject, max_len, d_model):
    """sinusoidal(max_len, d_model) -> a float table (max_len, d_model)."""
    what = f"{subject.kind.name}({max_len}, {d_model})"
    return as_float_array(subject.call(max_len, d_model, what=what), what, (max_len, d_model))


def call_init(subject, shape, scheme, rng):
    """init(shape, scheme, rng) -> a float array of `shape`."""
    what = f"{subject.kind.name}({shape}, {scheme!r}, rng)"
    # a keyword-only rng (`def init(shape, scheme, *, rng)`) is given by name
    got = subject.call(shape, scheme, rng, what=what) if accepts(subject.registration.target, 3) else \
        subject.call(shape, scheme, what=what, rng=rng)
    return as_float_array(got, what, tuple(shape))


def call_chunked(subject, Q, K, V, chunk_size, causal=None, copies=True, by_name=False, finite=True):
    """chunked_attention(Q, K, V, chunk_size[, causal]) -> a float array shaped like Q (V's last axis).
    copies=False: the function gets the caller's own arrays (input_mutation watches them); by_name: causal
    passed as causal=... (a keyword-only argument, causal_argument); finite=False: NaN and inf are returned,
    for the caller to judge."""
    args = tuple(a.copy() if copies else a for a in (Q, K, V)) + (chunk_size,)
    kwargs = {} if causal is None else {"causal": causal} if by_name else {}
    args += () if causal is None or by_name else (causal,)
    what = f"{subject.kind.name}(Q, K, V, chunk_size={chunk_size}" + ("" if causal is None else f", causal={causal}") + ")"
    out = subject.call(*args, what=what, **kwargs)
    T = Q.shape[-2]
    got_T = getattr(out, "shape", (None, None))[-2] if getattr(out, "ndim", 0) >= 2 else None
    hint = (f": the last, shorter chunk (T = {T} in chunks of {chunk_size}) is dropped; loop over "
            f"range(0, T, chunk_size) and slice [start:start + chunk_size], which is shorter at the end"
            if got_T == (T // chunk_size) * chunk_size and got_T != T else "")
    return as_float_array(out, what, Q.shape[:-1] + V.shape[-1:], hint, finite=finite)


def causal_argument(fn):
    """How chunked_attention takes its causal flag: "position" (a fifth positional argument), "name" (only as
    causal=..., keyword-only), or None (no such argument). A function whose signature cannot be read is
    given it by position."""
    if accepts(fn, 5):
        return "position"
    try:
        inspect.signature(fn).bind(*range(4), causal=True)
    except TypeError:
        return None
    except ValueError:
        return "position"
    return "name"


def accepts(fn, n_args):
    """False only when fn certainly cannot take n_args positional arguments."""
    try:
        inspect.signature(fn).bind(*range(n_args))
    except TypeError:
        return False
    except ValueError:
        pass
    return True


STEP_ARGUMENT = ("the warmup kind's scheduler counts its own steps, so each call takes no argument (article 000's "
                 "__call__(self)); a function of the step, lr(step) (TensorFlow's CustomSchedule), is the schedule "
                 "kind: register it with gradlab.register('schedule') as schedule(step, d_model, warmup_steps)")


class Scheduler:
    """A stateful scheduler as checks see it: next() advances one step and returns that step's lr.
    The object is called (article 000's __call__), or its step() is; a step() that returns None is
    read through get_last_lr()[0], get_lr(), rate() (NoamOpt's) or a `lr` attribute."""

    def __init__(self, subject, obj):
        self.subject, self.obj, self.steps = subject, obj, 0
        self.advance = obj if callable(obj) else obj.step
        self.how = "scheduler()" if callable(obj) else "scheduler.step()"

    def next(self):
        self.steps += 1
        what = f"{self.how} (call {self.steps})"
        return self._value(what, self._run(what, self.advance))

    def _run(self, what, fn, *args):
        """subject.run, with a hint for a scheduler whose call takes the step (TensorFlow's CustomSchedule)."""
        try:
            return self.subject.run(what, fn, *args)
        except StudentError as e:
            if "required positional argument" in str(e):
                e.args = (f"{e}; {STEP_ARGUMENT}",)
            raise

    def take(self, count):
        """[next() for _ in range(count)]: the same calls, in order. Through a worker they are
        made in a row in one request (remote.calls_ahead) instead of count requests; a value
        that is not a plain number, and an error, are then handled here as next() handles them."""
        from gradlab.execution.remote import calls_ahead
        out = []
        while len(out) < count:
            batch = calls_ahead(self.advance, count - len(out)) if self.subject.remote else None
            if batch is None or not (batch[0] or batch[1]):
                out.append(self.next())
                continue
            values, error = batch
            for got in values:
                self.steps += 1
                out.append(self._value(f"{self.how} (call {self.steps})", got))
            if error is not None:
                self.steps += 1
                self._run(f"{self.how} (call {self.steps})", _raise, error)
        return out

    def _value(self, what, got):
        """The lr of one call's return value (read from the scheduler when it returned None)."""
        if got is None:
            got = self._read(what)
        try:
            value = float(np.asarray(got).reshape(()))
        except (TypeError, ValueError):
            raise StudentError(f"{what} returned {describe(got)}; it must return the learning rate, one number") \
                from None
        if not np.isfinite(value):
            raise StudentError(f"{what} returned {value}")
        return value

    def _read(self, what):
        """The lr after a step() that returned None."""
        obj = self.obj
        for name in ("get_last_lr", "get_lr"):
            method = getattr(obj, name, None)
            if callable(method):
                got = self.subject.run(f"{name}()", method)
                return got[0] if isinstance(got, (list, tuple)) and got else got
        for name in ("lr", "learning_rate", "rate", "_rate"):      # _rate: the Annotated Transformer's NoamOpt
            if isinstance(getattr(obj, name, None), (int, float, np.floating)):
                return getattr(obj, name)
        if callable(getattr(obj, "rate", None)):                 # its rate(step=None), when no _rate is kept
            return self.subject.run("rate()", obj.rate)
        raise StudentError(f"{what} returned None and the scheduler has no get_last_lr(), get_lr(), rate() or lr "
                           "attribute; return the learning rate from the call")


def _raise(error):
    raise error
