"""Imported once by the grader's forkserver, so that every student's job starts
from a fork with NumPy, gradlab, its checks and the notebook reader loaded."""
import numpy  # noqa: F401

import gradlab  # noqa: F401
import gradlab.execution.runner  # noqa: F401
import gradlab.grading.job  # noqa: F401
from gradlab.contract import suite
from gradlab.execution import loader

suite.all_checks()
from gradlab.execution import zygote  # noqa: E402  (each job forks its workers: the worker's code loaded once)
zygote._prepare()
loader.reference()
try:
    import nbformat  # noqa: F401
except ImportError:   # notebooks then fail with the import error, in the job
    pass
import scipy.special  # noqa: F401,E402  (a diagnosis of the ffn's reference check)
try:
    import gradlab.frontends.report  # noqa: F401  (jinja2; the report is rendered in the job)
    from gradlab.frontends.report import figures
except ImportError:
    figures = None
if figures is not None:
    # A first figure in a process loads fonts and fills matplotlib's caches (~0.3 s of CPU):
    # drawn once here, every job forked from this process starts with them warm.
    try:
        figures.heatmap_png({"data": [[0.0, 1.0], [2.0, 3.0]], "tolerance": 1.0, "xlabel": "j", "ylabel": "i",
                             "mask_upper": True})
        figures.heatmap_png({"data": [[0.5, 1e-5, 2.0]] * 20, "xlabel": "j", "ylabel": "i"})
        figures.curve_png({"series": {"loss": [3.0, 2.0, 1.0], "reference": [3.0, 1.5, 0.5]}, "ylabel": "loss"})
    except Exception:   # a figure that cannot be drawn fails in the job, where it is reported
        pass

# Everything above lives as long as the forkserver: out of the collector's sight, a job's first full
# collection does not walk (and copy, page by page) the ~100 MB it inherits: 0.1 ms instead of ~110 ms.
import gc  # noqa: E402

gc.collect()
gc.freeze()
