"""`signature`: a loss function accepts every keyword argument of its CONTRACT §3
signature (cross_entropy's `ignore_index`, label_smoothing's `epsilon`). A function
that lacks one fails here, once, saying what the argument means; the other checks
still run without it (on targets with no padding; epsilon passed by position), so a
missing argument is one clear failure rather than errors everywhere."""
import inspect

from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.contract.kinds import LOSS
from gradlab.execution.subject import accepts_keyword
from gradlab.contract.suite import Outcome, check


@check("signature", needs={LOSS}, forms={"function"}, order=2,
       summary="the loss function accepts every keyword argument of CONTRACT §3's signature (ignore_index, epsilon)")
def signature(subject, rng):
    kind = subject.kind
    keywords = kind.keyword_args()
    try:
        inspect.signature(subject.registration.target)
    except (TypeError, ValueError):
        raise CheckSkipped(f"{kind.name}: the function has no signature Python can read (a builtin?), so which "
                           f"arguments it takes cannot be told; the other checks call it with them") from None
    missing = [name for name in keywords if not accepts_keyword(subject, name)]
    if missing:
        name = missing[0]
        raise CheckFailure(f"{kind.name}: your function takes no {name} argument; CONTRACT §3's signature is "
                           f"{kind.signature()}: {keywords[name]}",
                           {"missing": ",".join(missing)})
    shown = ", ".join(keywords) or "no keyword arguments"
    return Outcome(f"accepts {shown}, as CONTRACT §3's signature has it", {"keywords": len(keywords)})
