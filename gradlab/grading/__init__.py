"""Grading a class: `gradlab grade`, the rubric, Gradescope's results.json,
notebooks, and the per-student job run in a process of its own (locally or on
a Dask cluster)."""
