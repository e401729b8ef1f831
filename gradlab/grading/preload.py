"""Imported once by the grader's forkserver, so that every student's job starts
from a fork with NumPy, gradlab, its checks and the notebook reader loaded."""
import numpy  # noqa: F401

import gradlab  # noqa: F401
import gradlab.execution.runner  # noqa: F401
import gradlab.grading.job  # noqa: F401
from gradlab.contract import suite
from gradlab.execution import loader

suite.all_checks()
loader.reference()
try:
    import nbformat  # noqa: F401
except ImportError:   # notebooks then fail with the import error, in the job
    pass
import scipy.special  # noqa: F401,E402  (a diagnosis of the ffn's reference check)
try:
    import gradlab.frontends.report  # noqa: F401  (jinja2; the report is rendered in the job)
    import gradlab.frontends.report.figures  # noqa: F401
except ImportError:
    pass
