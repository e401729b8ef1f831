"""`signature`: a loss function accepts every keyword argument of its CONTRACT §3
signature (cross_entropy's `ignore_index`, label_smoothing's `epsilon`). A function
that lacks one fails here, once, saying what the argument means; the other checks
still run without it (on targets with no padding; epsilon passed by position), so a
missing argument is one clear failure rather than errors everywhere. Where callers
rely on a default (label_smoothing's epsilon=0.1, chunked_attention's causal=False),
the function's own default must be it: the other checks always pass the argument."""
import inspect

from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.contract.kinds import CHUNKED, LOSS
from gradlab.execution.protocol import NOT_PLAIN, plain_scalar
from gradlab.execution.subject import accepts_keyword
from gradlab.contract.suite import Outcome, check


@check("signature", any_of={LOSS, CHUNKED}, forms={"function"}, order=2,
       summary="the function accepts every keyword argument of CONTRACT §3's signature (ignore_index, epsilon), "
               "with its defaults (epsilon=0.1, causal=False)")
def signature(subject, rng):
    kind = subject.kind
    keywords = kind.keyword_args()
    try:
        params = inspect.signature(subject.registration.target).parameters
    except (TypeError, ValueError):
        raise CheckSkipped(f"{kind.name}: the function has no signature Python can read (a builtin?), so which "
                           f"arguments it takes cannot be told; the other checks call it with them") from None
    missing = [name for name in keywords if not accepts_keyword(subject, name)]
    if missing:
        name = missing[0]
        raise CheckFailure(f"{kind.name}: your function takes no {name} argument; CONTRACT §3's signature is "
                           f"{kind.signature()}: {keywords[name]}",
                           {"missing": ",".join(missing)})
    # the function's own defaults, where they can be judged (no such argument: the checks that need it say so; no
    # default: a caller must pass it, as gradlab does; None: "use the default" (epsilon = 0.1 if epsilon is None),
    # or falsy as causal; one that is no plain value: not read here)
    defaults = {n: _plain(params[n].default) for n in kind.keyword_defaults() if n in params}
    defaults = {n: v for n, v in defaults.items() if v is not None}
    for name, want in kind.keyword_defaults().items():
        default = defaults.get(name, want)
        if default == want:
            continue
        raise CheckFailure(f"{kind.name}: {name} defaults to {default!r}; CONTRACT §3's signature is "
                           f"{kind.signature()}, and a caller that leaves {name} out relies on {name}={want!r} "
                           "(gradlab's other checks always pass it, so only this one sees the default)",
                           {"default": str(default)})
    shown = ", ".join(keywords) or "no keyword arguments"
    said = ", ".join(f"{n}={v!r}" for n, v in defaults.items())
    return Outcome(f"accepts {shown}" + (f", defaults {said}" if said else "") + ", as CONTRACT §3's "
                   "signature has it", {"keywords": len(keywords)})


def _plain(value):
    """A default as a plain value (a NumPy number as its Python number), or None where there is none to judge:
    no default, None itself, or something that is no number, bool or string."""
    value = plain_scalar(value)
    return None if value is NOT_PLAIN else value
