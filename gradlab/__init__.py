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

# gradlab's command line (`python -m gradlab`, which imports this package with sys.argv[0] == "-m", or the
# `gradlab` script) does small-array numerics and runs the student's code in worker processes: BLAS on one
# thread here, unless the user's environment says otherwise. Set before NumPy loads OpenBLAS, which starts its
# thread pool as it loads: the process then runs one thread, so it can fork its workers (execution/zygote.py)
# and the lanes that check several kinds at once (execution/lanes.py).
import sys as _sys  # noqa: E402
_COMMAND_LINE = _sys.argv[:1] == ["-m"] or _os.path.basename(_sys.argv[0] if _sys.argv else "") == "gradlab"
if _COMMAND_LINE:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        _os.environ.setdefault(_var, "1")


def _interrupted_while_starting(signum, frame):
    """Ctrl-C before the command line's main() runs (NumPy and gradlab still loading; nothing started yet):
    its one line and exit status, not a traceback of the import. main() puts Python's own handler back."""
    try:
        _os.write(2, b"gradlab: interrupted\n")
    finally:
        _os._exit(130)


_argv = list(getattr(_sys, "orig_argv", ()))
if _COMMAND_LINE and ("-m" not in _argv or _argv[_argv.index("-m") + 1:][:1] == ["gradlab"]):   # (not a worker)
    import signal as _signal  # noqa: E402
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:     # (not where Ctrl-C is ignored)
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)

from gradlab.contract.config import Config  # noqa: E402
from gradlab.contract.errors import CheckFailure, GradlabError, StudentError, UsageError
from gradlab.contract.kinds import KINDS
from gradlab.contract.registry import register

__version__ = "0.1.0"
__all__ = ["register", "check", "Config", "KINDS", "GradlabError", "UsageError", "StudentError", "CheckFailure"]


def check(kind, impl=None, checks=None, seed=None, isolate=None, **overrides):
    """Run checks on one kind (several: "attention,ffn"; or "all") and return a result with .passed,
    .checks (.results for several kinds) and .to_dict(). `impl` is a file path, a module name, the
    registered factory/function itself, or None for gradlab's reference.

    isolate: run the student's code in a worker process, judged from gradlab's
    own (None, the default: yes for a file or a module name; a factory passed as
    a Python object runs in this process). Also: timeout=SECONDS per call,
    limits=gradlab.execution.limits.Limits(...) for the worker, workers=N kinds
    checked at a time through workers of their own (default: one per core from
    the main thread of a single-threaded process; README "How fast")."""
    from gradlab.contract.errors import UsageError
    from gradlab.execution.runner import check as _check
    try:
        return _check(kind, impl=impl, checks=checks, seed=seed, isolate=isolate, **overrides)
    except UsageError as e:
        raise UsageError(_as_python(str(e))) from None


def _as_python(message):
    """A UsageError's words as a Python caller writes them: the options' rules are written once, in the
    command line's words ("--seed -1: ...; e.g. --seed 5", "e.g. --set d_model=12"); from gradlab.check
    they read "seed=-1", "seed=5", "d_model=12"."""
    import re
    message = re.sub(r"--set (\w+=)", r"\1", message)
    return re.sub(r"--(seed|timeout|workers) (-?[\w.+-]+|'[^']*')", r"\1=\2", message)


def __getattr__(name):
    # gradlab.strategies imports Hypothesis: only when asked for
    if name == "strategies":
        import importlib
        return importlib.import_module("gradlab.strategies")
    raise AttributeError(f"module 'gradlab' has no attribute {name!r}")
