"""Fixtures shared by the tests. Student-style modules (correct variants and
deliberately broken ones) live in tests/zoo/ and are loaded exactly as a
student's file is: by path, through gradlab's loader."""
from pathlib import Path

import pytest

import gradlab

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
