"""How checks declare themselves and which of them apply to a kind.

A check is a plain function `fn(subject, rng)` in checks/, decorated with
`@check(name, needs=..., summary=...)`. It returns an Outcome when it passes,
raises CheckFailure when it finds a wrong number, CheckSkipped when it cannot
judge, and lets StudentError through when the student's code misbehaves.
Which checks run for a kind is decided by the kind's tags, never its name.
"""
import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

from gradlab.contract.errors import CheckSkipped, UsageError


@dataclass
class Outcome:
    """What a passing check reports."""
    message: str
    metrics: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CheckSpec:
    name: str
    fn: Callable
    summary: str
    needs: frozenset = frozenset()     # every tag the kind must have
    any_of: frozenset = frozenset()    # at least one of these tags (if given)
    forms: frozenset = frozenset()     # kind forms it applies to (empty: any)
    order: int = 50                    # smaller runs first; the precondition is 0
    shown_by: Callable = None          # the precondition's: (a Subject whose calls another check made, and which
                                       # passed) -> its Outcome when those calls showed what it asks, else None

    def applies(self, kind):
        return (self.needs <= kind.tags
                and (not self.any_of or bool(self.any_of & kind.tags))
                and (not self.forms or kind.form in self.forms))


CHECKS = {}


def check(name, *, summary, needs=(), any_of=(), forms=(), order=50, shown_by=None):
    """Declare a check. Names are unique: a second check with the same name is
    an error at import, not a silent override. (The same module imported again, after something dropped it
    from sys.modules, as pytester's in-process runs do, declares it anew: the newer one is kept.)"""
    def decorate(fn):
        if name in CHECKS and CHECKS[name].fn.__module__ != fn.__module__:
            raise ValueError(f"check {name!r} is declared twice: {CHECKS[name].fn.__module__} and {fn.__module__}")
        CHECKS[name] = CheckSpec(name, _float16_gate(fn), summary, frozenset(needs), frozenset(any_of),
                                 frozenset(forms), order, shown_by)
        _ordered.clear()     # worked out again on next use
        return fn
    return decorate


def _float16_gate(fn):
    """--dtype float16 is for module kinds (README: float16): a function or optimizer
    kind asked for in float16 is skipped with the reason, never judged by tolerances
    made for float32."""
    @functools.wraps(fn)
    def run(subject, rng):
        if subject.cfg.dtype == "float16" and not subject.kind.in_float16:
            form = subject.kind.form
            raise CheckSkipped(f"{subject.kind.name}: --dtype float16 applies to module kinds; {subject.kind.name} is "
                               f"{'an' if form[0] in 'aeiou' else 'a'} {form} and "
                               "is checked in float32 or float64 (mixed precision training: the mixed_precision kind)")
        return fn(subject, rng)
    return run


_loaded = False
_ordered = {}     # None -> every check in run order; id(kind) -> (kind, those that apply to it); cleared by @check


def all_checks():
    """Every declared check, importing checks/ on first use, in run order."""
    global _loaded
    if not _loaded:
        from gradlab import checks as package
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
        _loaded = True
    if None not in _ordered:
        _ordered[None] = tuple(sorted(CHECKS.values(), key=lambda c: (c.order, c.name)))
    return list(_ordered[None])


def applicable(kind):
    """The checks that apply to `kind` (a KindSpec), in run order."""
    known = _ordered.get(id(kind))
    if known is None or known[0] is not kind:
        known = _ordered[id(kind)] = (kind, tuple(c for c in all_checks() if c.applies(kind)))
    return list(known[1])


def resolve(names):
    """Validate names given with --checks; returns them in run order."""
    known = {c.name: c for c in all_checks()}
    unknown = [n for n in names if n not in known]
    if unknown:
        import difflib
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(f"unknown check {unknown[0]!r}: {hint}checks are {', '.join(known)}")
    return [c for c in all_checks() if c.name in set(names)]
