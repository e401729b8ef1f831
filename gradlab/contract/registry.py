"""`gradlab.register`: the one door through which student modules and
gradlab's own reference modules are made known (CONTRACT §1).

Registering only records; no check runs at import time. While gradlab loads a
file it opens a collector, so it knows exactly what that file registered.
"""
import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from gradlab.contract.errors import UsageError
from gradlab.contract.kinds import KINDS, get_kind


@dataclass(frozen=True)
class Registration:
    kind: str
    target: Callable          # build(cfg) for module kinds and optimizers; the function for function kinds
    param_map: Any = None     # None, {their_name: reference_name}, or load(module, reference_params)
    where: str = "?"          # "file.py:12", for messages

    @property
    def is_factory(self):
        return get_kind(self.kind).form != "function"


@dataclass
class Misnamed:
    """A registration, made while a file is imported, under a name that is no kind but close to one
    (register("layer_norm"), register("Adam")): kept aside, so that the file's other registrations still count
    and the kind it meant says why it is missing (a grade lost every kind of the file to one typo)."""
    kind: str           # the kind it likely means
    message: str


_collectors = []   # stack of lists; the innermost receives registrations


@contextlib.contextmanager
def collecting():
    """Collect every registration made inside the block (e.g. while importing a file)."""
    found = []
    _collectors.append(found)
    try:
        yield found
    finally:
        _collectors.remove(found)


def register(kind, *, param_map=None):
    """Register a module factory `build(cfg)` (module kinds, optimizers) or a
    function (function kinds) under `kind`.

        @gradlab.register("attention")
        def build(cfg): return MyAttention(cfg.d_model, cfg.num_heads)

        gradlab.register("cross_entropy")(my_cross_entropy)
    """
    try:
        spec = _validate_kind(kind)
    except ValueError:
        meant = _meant(kind)
        if meant is None or not _collectors:       # (interactive use, or nothing close: the error as it is)
            raise
        return _aside(kind, meant)
    if param_map is not None and not (isinstance(param_map, dict) or callable(param_map)):
        raise TypeError(f"gradlab.register({kind!r}, param_map=...): param_map must be a dict "
                        f"{{their_name: reference_name}} or a function load(module, reference_params), "
                        f"not {type(param_map).__name__}")
    if isinstance(param_map, dict):
        bad = [k for k, v in param_map.items() if not (isinstance(k, str) and isinstance(v, str))]
        if bad:
            raise TypeError(f"gradlab.register({kind!r}, param_map=...): keys and values must be strings; "
                            f"bad entry {bad[0]!r}")
        _check_reference_names(spec, param_map)
    elif param_map is not None:
        try:
            inspect.signature(param_map).bind(object(), {})
        except TypeError:
            raise TypeError(f"gradlab.register({kind!r}, param_map=...): a param_map function is called as "
                            f"load(module, reference_params); {getattr(param_map, '__name__', 'yours')} "
                            "does not take those two arguments") from None
        except ValueError:     # no signature to inspect (some builtins): trust it
            pass

    def decorate(target):
        if not callable(target):
            what = "a factory build(cfg)" if spec.form != "function" else "the function itself"
            raise TypeError(f"gradlab.register({kind!r}) decorates {what}, not {type(target).__name__}")
        reg = Registration(kind, target, param_map, _where(target))
        tags = list(getattr(target, "__gradlab__", ()))
        try:
            target.__gradlab__ = tags + [reg]   # lets gradlab.check(kind, impl=build) find the param_map
        except (AttributeError, TypeError):
            pass                                 # builtins and some callables take no attributes
        if _collectors:
            _collectors[-1].append(reg)
        else:
            _loose.append(reg)
        return target

    return decorate


# Registrations made outside any collector (a notebook cell, a user's own test file).
_loose = []


def loose_registrations():
    return list(_loose)


def _meant(kind):
    """The kind a name that is none likely means (case, separators, a typo), or None."""
    import difflib
    if not isinstance(kind, str):
        return None
    squashed = {k.replace("_", ""): k for k in KINDS}
    key = kind.lower().replace("_", "").replace("-", "").replace(" ", "")
    if key in squashed:
        return squashed[key]
    close = difflib.get_close_matches(kind.lower(), KINDS, n=1)
    return close[0] if close else None


def _aside(kind, meant):
    def decorate(target):
        where = _where(target)
        _collectors[-1].append(Misnamed(meant, f"gradlab.register({kind!r}) at {where}: {kind!r} is no kind; did you "
                                               f"mean {meant!r}? Register it as {meant!r}"))
        return target
    return decorate


def _validate_kind(kind):
    if not isinstance(kind, str):
        raise TypeError(f"gradlab.register(kind): kind must be a string such as 'attention', not {kind!r}")
    try:
        return get_kind(kind)
    except UsageError as e:
        raise ValueError(f"gradlab.register({kind!r}): {e}") from None


def _check_reference_names(spec, param_map):
    """Every value of a param_map dict must be one of the kind's reference
    names (CONTRACT §3); a typo would otherwise surface much later as a
    confusing "parameter not found" in some check."""
    import difflib
    import re
    from gradlab.contract.config import Config
    known = set(spec.param_shapes(Config()))
    if not known:
        raise ValueError(f"gradlab.register({spec.name!r}, param_map=...): {spec.name} has no parameters "
                         "to map; drop param_map")
    generic = {re.sub(r"\.\d+\.", ".{i}.", name) for name in known}   # blocks.0.x -> blocks.{i}.x
    for theirs, ref in param_map.items():
        if ref in known or re.sub(r"\.\d+\.", ".{i}.", ref) in generic:
            continue
        close = difflib.get_close_matches(ref, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"gradlab.register({spec.name!r}, param_map=...): {theirs!r} maps to {ref!r}, which is "
                         f"not a reference parameter of {spec.name}: {hint}they are {', '.join(sorted(generic))}")


def _where(target):
    try:
        file = inspect.getsourcefile(target) or "?"
        line = inspect.getsourcelines(target)[1]
        return f"{file.rsplit('/', 1)[-1]}:{line}"
    except (TypeError, OSError):
        return getattr(target, "__qualname__", repr(target))
