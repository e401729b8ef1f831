"""Running the student's code: every call into it goes through `guarded`, which
turns an exception, a hang or a bad return value into a StudentError with one
line that says what happened and where in the student's file.

This layer only runs code and validates what comes back; judging the numbers
is the checks' job.
"""
import contextlib
import io
import os
import re
import signal
import sys
import threading
import traceback

import numpy as np

from gradlab.contract.errors import GradlabError, StudentError, over_time

DEFAULT_TIMEOUT = 20.0   # seconds for one call into student code
_GRADLAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the gradlab package


class _Timeout(BaseException):
    """Raised inside a hung student call; BaseException so `except Exception`
    in student code cannot swallow it."""


_armed = False      # True only while a guarded call runs under a time limit
_installed = False  # our SIGALRM handler is in place (checked once per run, not per call)


# the per-call limit's flag differs by front end: `gradlab check --timeout`, `gradlab grade --call-timeout`,
# pytest's --gradlab-timeout
OVERTIME_HINT = ("; an endless loop? If it is just slow, raise the limit for one call (gradlab check or train "
                 "--timeout, gradlab grade --call-timeout, pytest --gradlab-timeout)")

def _on_alarm(signum, frame):
    if _armed:
        raise _Timeout()


def ignore_signal(signum, frame):
    """A handler that does nothing, for a signal that comes while gradlab stops for an earlier one (the command
    line, a lane). Not SIG_IGN: a signal already pending when SIG_IGN is set makes Python print "OSError: Signal
    15 ignored due to race condition" with a traceback, as `timeout`'s second SIGTERM did."""


def install_alarm_handler():
    """Put gradlab's SIGALRM handler in place (it does nothing unless a guarded
    call is running). Called at the start of every run; installing it around
    every call into student code cost more than a small module's forward."""
    global _installed
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGALRM) is not _on_alarm:
            signal.signal(signal.SIGALRM, _on_alarm)
        _installed = True


_timeout = DEFAULT_TIMEOUT
_MAIN_THREAD = threading.main_thread()


def set_timeout(seconds):
    global _timeout
    _timeout = seconds


def get_timeout():
    return _timeout


class _CountingSink(io.TextIOBase):
    """Where student print()s go when the CLI runs quietly: counted, not shown
    (a debug print in forward would otherwise bury the one line per check)."""
    lines = 0

    def writable(self):
        return True

    def write(self, text):
        _CountingSink.lines += text.count("\n")
        return len(text)


_sink = None   # a _CountingSink while quiet, else None (student output goes where it normally does)
_forward = None   # in a lane (gradlab.execution.lanes): where output not swallowed goes instead of stdout


def set_quiet(quiet):
    """Swallow (and count) what student code prints to stdout."""
    global _sink
    _sink = _CountingSink() if quiet else None
    _CountingSink.lines = 0


def printed_lines():
    """Lines student code printed while quiet."""
    return _CountingSink.lines


def count_printed(lines):
    """Lines a lane's student code printed while quiet, added to this process's count."""
    _CountingSink.lines += lines


def forward_output(send):
    """In a lane: student output that is shown goes to send(text) (the coordinator shows it in order)."""
    global _forward
    _forward = send


def student_output(text):
    """What student code printed in a worker process: counted while quiet, else
    shown, as a print() in gradlab's own process would be."""
    if _sink is not None:
        _sink.write(text)
    elif _forward is not None:
        _forward(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def guarded(what, fn, *args, files=(), error=StudentError, alarm=True, **kwargs):
    """Call student code `fn(*args, **kwargs)`; any failure becomes `error`
    with a one-line message naming `what` and the student's line. A call that
    runs longer than the timeout is interrupted (main thread only: elsewhere,
    and inside one long C routine, it cannot be). Written without context
    managers: it wraps every forward, and small modules' forwards take microseconds.
    alarm=False: `fn` calls into a worker process, which has limits of its own."""
    global _armed
    alarm = alarm and bool(_timeout) and threading.current_thread() is _MAIN_THREAD
    if alarm:
        if not _installed:
            install_alarm_handler()
        outer, _armed = _armed, True
        signal.setitimer(signal.ITIMER_REAL, _timeout)
    try:
        if _sink is None:
            return fn(*args, **kwargs)
        with contextlib.redirect_stdout(_sink):
            return fn(*args, **kwargs)
    except _Timeout as e:
        where = student_frame(e, files)
        raise over_time(error(f"{what} ran past {_timeout:g} s" + (f", last seen at {where}" if where else "")
                              + OVERTIME_HINT)) from None
    except StudentError as e:
        if hasattr(e, "message_for"):       # raised by the student's code in the worker: say it as here
            message = e.message_for(what)
            if error is StudentError:
                raise StudentError(message, where=e.where) from e
            raise error(message) from e
        raise
    except GradlabError:
        raise
    except SyntaxError:
        raise
    except SystemExit as e:
        where = student_frame(e, files)
        message = f"{what} called sys.exit({'' if e.code is None else repr(e.code)})" \
            + (f" at {where}" if where else "") \
            + "; gradlab runs your code, so it must not exit: put script code under `if __name__ == \"__main__\":`"
        raise error(message, **({"where": where} if error is StudentError else {})) from e
    except Exception as e:
        where = student_frame(e, files)
        detail = str(e).strip().split("\n")[0] if str(e).strip() else ""
        message = f"{what} raised {type(e).__name__}" + (f" at {where}" if where else "") \
            + (f": {detail}" if detail else "") + relative_path_hint(type(e).__name__, detail)
        if error is StudentError:
            raise StudentError(message, where=where) from e
        raise error(message) from e
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _armed = outer


RELATIVE_MISSING = re.compile(r"No such file or directory: '(?![/~])([^']+)'")


def relative_path_hint(kind, detail):
    """Advice for a file not found by a relative path: a worker's current folder is a temporary one of its
    own, not the code's (where `python my.py`, run there, found it)."""
    missing = RELATIVE_MISSING.search(detail) if kind == "FileNotFoundError" else None
    if missing is None:
        return ""
    return (f"; a relative path is read from the current folder, not your file's: name a file beside your code as "
            f"os.path.join(os.path.dirname(__file__), {missing.group(1)!r})")


def student_frame(exc, files=()):
    """'file.py:LINE' of the innermost frame outside gradlab and NumPy
    (preferring the student's own files when known)."""
    return innermost_student_frame([(fr.filename, fr.lineno) for fr in traceback.extract_tb(exc.__traceback__)],
                                   files)


def innermost_student_frame(frames, files=(), gradlab_dir=_GRADLAB_DIR):
    """'file.py:LINE' of the innermost of `frames` ((filename, line) pairs, outermost first) that is in
    `files`, or when no files are known, outside gradlab and NumPy; None when there is none."""
    wanted = {os.path.abspath(f) for f in files if f}
    for filename, line in reversed(frames):
        path = os.path.abspath(filename)
        if (wanted and path in wanted) or (not wanted and not path.startswith(gradlab_dir) and "/numpy/" not in path
                                           and not filename.startswith("<")):   # generated: <frozen ...>, <string>
            return f"{os.path.basename(filename)}:{line}"
    return None


def student_traceback(exc):
    """The traceback of an exception raised in student code, without gradlab's
    own frames (a string, JSON-able), or "" when there is none."""
    if getattr(exc, "traceback_text", None):      # from the worker process, already filtered there
        return exc.traceback_text
    if exc is None or exc.__traceback__ is None:
        return ""
    frames = [fr for fr in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(fr.filename).startswith(_GRADLAB_DIR) and "<frozen" not in fr.filename]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines).rstrip()


# ---- validating what student code returns ---------------------------------

def describe(value):
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


def as_float_array(value, what, shape, hint="", finite=True):
    """Check that student code returned a float ndarray of `shape` with finite
    values (any values with finite=False: a check that looks at them itself);
    raise StudentError saying exactly what is wrong otherwise."""
    if value is None:
        raise StudentError(f"{what} returned None; it must return an array of shape {shape} (a missing `return`?)")
    if isinstance(value, tuple):
        raise StudentError(f"{what} returned a tuple of {len(value)} items; return only the array of shape {shape} "
                           "(keep caches on self, and unpack tuples before passing a gradient on)")
    if not isinstance(value, np.ndarray):
        if np.isscalar(value) and shape == ():
            value = np.asarray(value)
        else:
            raise StudentError(f"{what} returned {describe(value)}; it must return a NumPy array of shape {shape}")
    value = plain_array(value, what)
    if value.dtype.kind not in "f":
        raise StudentError(f"{what} returned an array of dtype {value.dtype}; it must be floating point "
                           "(an integer array truncates everything: check the dtype of your parameters)")
    if tuple(value.shape) != tuple(shape):
        raise StudentError(f"{what} returned shape {tuple(value.shape)}; expected {tuple(shape)}{hint}")
    if not finite or np.isfinite(value).all():       # the common case in one pass (no negated copy)
        return value
    bad = ~np.isfinite(value)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        word = "NaN" if np.isnan(value[index]) else "inf"
        raise StudentError(f"{what} returned {word} at index {index} ({int(bad.sum())} non-finite values) "
                           "on ordinary inputs")
    return value


def plain_array(value, what):
    """An ndarray subclass as a plain ndarray: one that behaves like an array
    (it only adds attributes) is judged by its numbers. A masked array with
    masked entries is named: a masked entry has no number to judge, and its
    arithmetic differs from an array's (so it would fail later for no clear reason)."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, np.ma.MaskedArray):
        masked = np.ma.getmaskarray(value)
        if masked.any():
            index = tuple(int(i) for i in np.argwhere(masked)[0])
            raise StudentError(
                f"{what} returned a numpy.ma.MaskedArray with {int(masked.sum())} masked entries (the first at index "
                f"{index}); return a plain ndarray: a masked entry has no value to check (use np.ma.filled(out, "
                "value) if a value such as 0 is meant, or np.where for a mask)")
        return np.ma.getdata(value)
    return np.asarray(value)   # a view of the same numbers as a plain ndarray


def reading_grads_ahead(slots, module=None):
    """`with reading_grads_ahead(slots): ...backward...`, the gradients of `slots` read right
    after the block, with nothing run in between: through a worker, the block's last backward
    call reads them in its own request (remote.grads_with_backward; module: the one object
    whose backward the block calls, if so). Nothing in gradlab's own process, where the
    remote module need not even be imported."""
    remote = remote_module()
    return remote.grads_with_backward(slots, module) if remote is not None and slots else contextlib.nullcontext()


def remote_module():
    """gradlab.execution.remote when something has imported it, else None: no worker, proxy or
    RemoteException exists before it is, and code run in this process need not import it (~50 ms)."""
    return sys.modules.get("gradlab.execution.remote")
