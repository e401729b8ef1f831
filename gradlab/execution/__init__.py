"""Running a module under test: loading it, calling it (guarded), finding its parameters, the run."""
