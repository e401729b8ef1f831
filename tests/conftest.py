"""Fixtures shared by the tests. Student-style modules (correct variants and
deliberately broken ones) live in tests/zoo/ and are loaded exactly as a
student's file is: by path, through gradlab's loader."""
from pathlib import Path

import os

import pytest

import gradlab
from gradlab.execution import loader

# gradlab runs a file's code in a worker process by default. Most tests here are
# about what the checks find, which is the same in both modes (the isolation
# tests, tests/test_isolation*.py, ask for workers explicitly), and starting a
# worker per gradlab.check call would multiply the suite's time: they run
# in-process unless GRADLAB_TEST_ISOLATE=1 (run that way before a release, and
# whenever the worker changes).
loader.ISOLATE_BY_DEFAULT = os.environ.get("GRADLAB_TEST_ISOLATE") == "1"

ZOO = Path(__file__).parent / "zoo"


@pytest.fixture
def zoo():
    """zoo("grad_transposed.py") -> the path of that zoo file, as a string."""
    def path(name):
        p = ZOO / name
        assert p.exists(), f"no zoo file {p}"
        return str(p)
    return path


@pytest.fixture
def run():
    """run(kind, impl, checks, seed=0, **cfg) -> KindResult, with a fixed seed."""
    def _run(kind, impl=None, checks=None, seed=0, **overrides):
        return gradlab.check(kind, impl=impl, checks=checks, seed=seed, **overrides)
    return _run


@pytest.fixture
def all_pass():
    """all_pass(result, *context): every check ran and passed. result.passed is not enough for a
    correct module: it counts a skipped check, one that judged nothing, as ok."""
    def check(result, *context):
        assert result.checks and all(c.status == "pass" for c in result.checks), \
            (*context, [(c.name, c.status, c.message) for c in result.checks if c.status != "pass"])
    return check


@pytest.fixture
def first_failure(all_pass):
    """first_failure(name, result, first, words): a red-team table row's assertion. first=None: the
    module is correct and passes every check (all_pass); else the first failing (or erroring) check
    is `first` and its message holds every one of `words`."""
    def check(name, result, first, words):
        bad = [c for c in result.checks if c.status in ("fail", "error")]
        if first is None:
            all_pass(result, name)
            return
        assert not result.passed and bad, f"{name}: a broken module passed every check"
        assert bad[0].name == first, (bad[0].name, bad[0].message)
        for w in words:
            assert w in bad[0].message, (w, bad[0].message)
    return check
