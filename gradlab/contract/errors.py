"""The three ways a gradlab run can go wrong, kept apart so each front end can
answer them differently (exit 2, exit 1, or a failed record)."""


class GradlabError(Exception):
    """Base class for every error gradlab raises on purpose."""


class UsageError(GradlabError):
    """The run cannot start: bad option, missing file, import error in the
    student's file, no registration for a kind. The CLI prints the message as
    one line and exits 2."""


class StudentError(GradlabError):
    """The student's code raised, hung, or returned something unusable while a
    check was running. The check is recorded as 'error' (exit 1)."""

    def __init__(self, message, *, where=None):
        super().__init__(message)
        self.where = where  # "my_attention.py:42", the student's frame


def over_time(error):
    """`error` (a StudentError), marked as a call that ran past its time limit: the run plan does not make the
    same calls again only to wait for the limit a second time (plan.Plan.precondition)."""
    error.over_time = True
    return error


class CheckFailure(GradlabError):
    """A check found a wrong number. `metrics` are the key numbers (JSON
    scalars); `details` are JSON-able tables and matrices for the report."""

    def __init__(self, message, metrics=None, details=None):
        super().__init__(message)
        self.metrics = metrics or {}
        self.details = details or {}


class CheckSkipped(GradlabError):
    """A check cannot say anything about this module (e.g. names that cannot be
    mapped to the reference); the message says what would make it run."""


class CannotJudge(StudentError):
    """A check's precondition does not hold (forward not repeatable, finite differences
    drowned in noise, a probe that could not run), so it can say nothing either way. Recorded
    as 'error' like any StudentError, never as a pass; the message starts "cannot judge: "."""

    def __init__(self, reason, *, where=None):
        super().__init__(f"cannot judge: {reason}", where=where)
