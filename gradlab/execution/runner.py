"""`gradlab.check`: run the plan of one kind (or "all" the kinds `impl`
registers) and return what each check found. The CLI, the pytest plugin,
the grader and the report are thin layers over the same Plan."""
import contextlib
import dataclasses
import threading

from gradlab.contract.records import RunResult
from gradlab.contract import options
from gradlab.execution import harness, lanes
from gradlab.execution.limits import Limits
from gradlab.execution.plan import PRECONDITION, Plan, config_for, new_seed, rng_for, run_one

# the run's vocabulary, long imported from here by tests and benchmarks
__all__ = ["check", "run", "time_limit", "worker_limits", "PRECONDITION", "Plan", "config_for", "new_seed",
           "rng_for", "run_one"]


def check(kind, impl=None, checks=None, seed=None, timeout=None, on_record=None, isolate=None, limits=None,
          workers=None, **overrides):
    """Check one kind, several ("attention,ffn"), or "all" the kinds `impl` registers. Returns a KindResult
    (a RunResult for "all" or several kinds). Raises UsageError when the run cannot start.
    isolate: run the student's code in a worker process (None: yes for a file or a
    module name); limits: the worker's Limits (`timeout` overrides its timeout); workers: kinds run at once
    through workers of their own (None: one per core from the main thread, else 1; see lanes.py)."""
    main = threading.current_thread() is threading.main_thread()
    if limits is None and main:
        limits = Limits(spin=True)     # one run at a time (a thread pool of checks does not poll: Limits.spins)
    if workers is None and not main:
        workers = 1                    # (a thread pool of checks: each run in its own thread, one lane each)
    workers = options.check_workers(workers)
    with time_limit(timeout):   # importing the student's file is under the limit too
        plan = Plan(impl, kinds=kind, checks=checks, seed=seed, overrides=overrides, isolate=isolate,
                    limits=worker_limits(limits), workers=workers)
        try:
            result = run(plan, on_record)
        finally:
            plan.close()        # stops the worker, and whatever it left running
    return result if kind == "all" or len(result.results) != 1 else result.results[0]


def worker_limits(limits=None):
    """The worker's limits, with the time per call currently in force (inside time_limit)."""
    return dataclasses.replace(limits or Limits(), timeout=harness.get_timeout())


def run(plan, on_record=None):
    """Every planned kind of `plan`, in order: a RunResult. Through workers, several kinds at once where
    plan.workers allows (gradlab/execution/lanes.py); the records are the same either way."""
    n = lanes.lanes_for(plan, plan.workers)
    if n > 1:
        return lanes.run(plan, on_record, n)
    return RunResult([plan.run_kind(k, on_record) for k in plan.kind_list])


@contextlib.contextmanager
def time_limit(timeout):
    """The limit for one call into student code while the block runs (None: the default)."""
    timeout = options.check_timeout(timeout)
    previous_timeout = harness.get_timeout()
    harness.install_alarm_handler()   # once per run: something may have replaced it since the last
    if timeout is not None:
        harness.set_timeout(timeout)
    try:
        yield
    finally:
        harness.set_timeout(previous_timeout)   # a timeout given to one run must not stick to the next
