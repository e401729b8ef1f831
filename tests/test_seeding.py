"""gradlab.execution.seeding: the global generators seeded for a block of the student's code in gradlab's
own process, and put back bit for bit after it (the fast path reads and writes np.random's state as raw
bytes; these tests compare with get_state, which reads it the slow, public way)."""
import random

import numpy as np
import pytest

from gradlab.execution import seeding
from gradlab.execution.seeding import seeded

BLOCKS = {   # what the student's code does with the global generators inside the block
    "nothing": lambda: None,
    "an odd number of normals (leaves one cached)": lambda: np.random.randn(1),
    "normals and uniforms of both": lambda: (np.random.randn(3), np.random.rand(7), random.random(), random.gauss(0, 1)),
    "reseeds them": lambda: (np.random.seed(1), random.seed(1)),
}


def _state():
    legacy = np.random.get_state(legacy=False)
    return (legacy["state"]["key"].tobytes(), legacy["state"]["pos"], legacy["has_gauss"], legacy["gauss"],
            random.getstate())


@pytest.fixture(params=["raw bytes", "get_state"])
def path(request, monkeypatch):
    """Both ways of saving: the fast one, and the one used when the raw layout does not check out."""
    if request.param == "get_state":     # (monkeypatch puts both back after the test)
        monkeypatch.setattr(seeding, "_read_view", lambda generator: None)
        monkeypatch.setattr(seeding, "_cached", (None, None))
    return request.param


@pytest.mark.parametrize("normals_before", [0, 1, 2, 3])     # odd: the caller has a normal cached
@pytest.mark.parametrize("block", BLOCKS, ids=list(BLOCKS))
def test_the_callers_states_are_put_back_bit_for_bit(path, normals_before, block):
    np.random.seed(3)
    random.seed(3)
    np.random.randn(normals_before)
    if normals_before % 2:
        random.gauss(0, 1)      # and a Python normal cached too
    before = _state()
    with seeded(77):
        BLOCKS[block]()
    assert _state() == before


def test_the_block_sees_the_seeded_generators_whatever_the_caller_had_cached(path):
    np.random.seed(5)
    expected = np.random.randn(3), np.random.rand(), random.seed(77) or random.random()
    for normals_before in (0, 1):
        np.random.randn(normals_before)
        with seeded(5):
            random.seed(77)
            seen = np.random.randn(3), np.random.rand(), random.random()
        assert [np.array_equal(a, b) for a, b in zip(seen, expected)] == [True] * 3


def test_the_callers_draws_after_the_block_are_the_ones_without_it(path):
    np.random.seed(9)
    np.random.randn(1)          # a normal cached
    expected = np.random.randn(4)
    np.random.seed(9)
    np.random.randn(1)
    with seeded(1):
        np.random.randn(5)
    assert np.array_equal(np.random.randn(4), expected)


def test_the_fast_path_is_taken_on_this_numpy():
    # if NumPy's MT19937 layout ever changes, the check in _read_view falls back to get_state: this says so
    assert seeding._state_view(np.random.mtrand._rand._bit_generator) is not None
