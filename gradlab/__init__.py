"""gradlab: verify hand-written NumPy neural-network modules.

    import gradlab

    @gradlab.register("attention")
    def build(cfg): ...

    result = gradlab.check("attention", impl="my_attention.py")
"""
from .config import Config
from .errors import CheckFailure, GradlabError, StudentError, UsageError
from .kinds import KINDS
from .registry import register

__version__ = "0.1.0"
__all__ = ["register", "check", "Config", "KINDS", "GradlabError", "UsageError", "StudentError", "CheckFailure"]


def check(kind, impl=None, checks=None, seed=None, **overrides):
    """Run checks on one kind (or "all") and return a result with .passed,
    .checks and .to_dict(). `impl` is a file path, a module name, the
    registered factory/function itself, or None for gradlab's reference."""
    from .runner import check as _check
    return _check(kind, impl=impl, checks=checks, seed=seed, **overrides)
