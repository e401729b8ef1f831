"""gradlab: verify hand-written NumPy neural-network modules.

    import gradlab

    @gradlab.register("attention")
    def build(cfg): ...

    result = gradlab.check("attention", impl="my_attention.py")
"""
import os as _os

# An installed gradlab holds gradlab.modules and gradlab.checks (pyproject maps the
# repository's top-level modules/ and checks/ into the package). Imported straight
# from a source checkout (`python -m pytest` or `python -m gradlab` in the repository,
# which put the checkout first on sys.path), they sit beside this folder instead:
# let the package find them there, so the checkout behaves like the installed package.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (not _os.path.isdir(_os.path.join(__path__[0], "modules"))
        and _os.path.isfile(_os.path.join(_checkout, "modules", "__init__.py"))
        and _os.path.isfile(_os.path.join(_checkout, "checks", "__init__.py"))):
    __path__.append(_checkout)

from gradlab.contract.config import Config  # noqa: E402
from gradlab.contract.errors import CheckFailure, GradlabError, StudentError, UsageError
from gradlab.contract.kinds import KINDS
from gradlab.contract.registry import register

__version__ = "0.1.0"
__all__ = ["register", "check", "Config", "KINDS", "GradlabError", "UsageError", "StudentError", "CheckFailure"]


def check(kind, impl=None, checks=None, seed=None, isolate=None, **overrides):
    """Run checks on one kind (or "all") and return a result with .passed,
    .checks and .to_dict(). `impl` is a file path, a module name, the
    registered factory/function itself, or None for gradlab's reference.

    isolate: run the student's code in a worker process, judged from gradlab's
    own (None, the default: yes for a file or a module name; a factory passed as
    a Python object runs in this process). Also: timeout=SECONDS per call,
    limits=gradlab.execution.limits.Limits(...) for the worker."""
    from gradlab.execution.runner import check as _check
    return _check(kind, impl=impl, checks=checks, seed=seed, isolate=isolate, **overrides)


def __getattr__(name):
    # gradlab.strategies imports Hypothesis: only when asked for
    if name == "strategies":
        import importlib
        return importlib.import_module("gradlab.strategies")
    raise AttributeError(f"module 'gradlab' has no attribute {name!r}")
