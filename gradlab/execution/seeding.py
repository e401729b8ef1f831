"""The global generators (np.random's and random's) seeded for a block of the student's code in
gradlab's own process, and put back exactly after it (Subject.global_seeds).

np.random.get_state and set_state copy the Mersenne Twister's 624 words one at a time: ~45 us
each, more than a small module's forward, and every check paid both. Here the generator's state
is saved and put back as its raw bytes, through the bit generator's ctypes interface (2,500 bytes,
about a microsecond; the layout is checked against get_state once per generator, else
get_state/set_state are used). The raw bytes miss one thing: the legacy Gaussian cache
(np.random.randn draws normals in pairs and keeps the second). It is read by drawing one normal:
a cached one comes back without touching the bytes, and is then put back with set_state (the one
way to set it); with nothing cached the draw moves the bytes, which are put back anyway."""
import ctypes
import random

import numpy as np

_KEY_BYTES = 624 * 4        # MT19937's C state: uint32 key[624], then int pos
_STATE_BYTES = _KEY_BYTES + 4


_cached = (None, None)       # (the generator, its state's view) worked out last


def _state_view(generator):
    """A uint8 view of an MT19937's C state, or None when the generator is of another kind or its
    bytes do not read as get_state says they should (worked out once per generator)."""
    global _cached
    if _cached[0] is not generator:
        _cached = generator, _read_view(generator)
    return _cached[1]


def _read_view(generator):
    """_state_view's work: the view, checked against the generator's public state."""
    try:
        raw = (ctypes.c_uint8 * _STATE_BYTES).from_address(generator.ctypes.state_address)
        view = np.frombuffer(raw, dtype=np.uint8)
        state = generator.state["state"]
        if (np.array_equal(view[:_KEY_BYTES].view(np.uint32), state["key"])
                and int(view[_KEY_BYTES:].view(np.int32)[0]) == int(state["pos"])):
            return view
    except Exception:       # no ctypes interface, another bit generator: the slow, exact path
        pass
    return None


def _save_legacy():
    """np.random's global state: (raw bytes, cached normal or None), or (None, get_state())."""
    legacy = np.random.mtrand._rand
    view = _state_view(legacy._bit_generator)
    if view is None:
        return None, legacy.get_state()
    raw = view.tobytes()
    drawn = legacy.standard_normal()
    return raw, (drawn if view.tobytes() == raw else None)     # unmoved bytes: the normal was the cached one


def _restore_legacy(saved):
    legacy = np.random.mtrand._rand
    raw, rest = saved
    view = _state_view(legacy._bit_generator)
    if raw is None:
        legacy.set_state(rest)
    elif view is None or rest is not None:     # a new generator, or a cached normal: only set_state sets it
        legacy.set_state(_as_state(raw, rest))
    else:
        legacy.seed(0)          # empties the Gaussian cache; the bytes below replace the rest
        view[...] = np.frombuffer(raw, dtype=np.uint8)


def _as_state(raw, cached):
    """get_state()'s tuple for raw bytes and a cached normal (None: none)."""
    words = np.frombuffer(raw, dtype=np.uint8)
    return ("MT19937", words[:_KEY_BYTES].view(np.uint32), int(words[_KEY_BYTES:].view(np.int32)[0]),
            int(cached is not None), 0.0 if cached is None else cached)


class seeded:
    """`with seeded(value):` np.random's and random's global generators seeded with value for the
    block, and their states put back after it, bit for bit (the Gaussian caches included)."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self._saved = _save_legacy(), random.getstate()
        np.random.seed(self.value)
        random.seed(self.value)
        return self

    def __exit__(self, *exc):
        _restore_legacy(self._saved[0])
        random.setstate(self._saved[1])
        return False
