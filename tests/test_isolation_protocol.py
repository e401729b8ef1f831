"""The messages between gradlab and its worker: what gradlab accepts from the
worker is plain data, validated, never unpickled."""
import json

import numpy as np
import pytest

from gradlab.execution.protocol import Decoder, Encoder, ProtocolError, same_bytes


def roundtrip(value, object_hook=None):
    enc = Encoder()
    node = enc.encode(value)
    header = {"b": [memoryview(b).nbytes for b in enc.buffers]}
    payload = memoryview(b"".join(bytes(memoryview(b)) for b in enc.buffers))
    node = json.loads(json.dumps(node))
    return Decoder(header, payload, object_hook or (lambda tag: tag)).decode(node)


def test_plain_values_and_arrays_come_back_equal():
    value = {"a": [1, 2.5, None, True, "x"], 3: (np.arange(6, dtype=np.float32).reshape(2, 3),),
             "s": np.float32(1.5), "e": np.zeros((0, 4))}
    got = roundtrip(value)
    assert got["a"] == [1, 2.5, None, True, "x"]
    assert isinstance(got[3], tuple) and got[3][0].dtype == np.float32 and got[3][0].shape == (2, 3)
    assert np.array_equal(got[3][0], value[3][0]) and got[3][0].flags.writeable
    assert got["s"] == np.float32(1.5) and got["s"].dtype == np.float32
    assert got["e"].shape == (0, 4)


def test_what_cannot_travel_is_only_named():
    class Module:
        pass
    got = roundtrip([Module(), np.array(["a"], dtype=object)])
    assert got[0] == {"o": "Module"}
    assert got[1]["o"] == "ndarray" and got[1]["shape"] == [1]


def test_a_masked_array_is_rebuilt_from_its_data_and_mask():
    node = {"ma": {"a": 0, "dtype": "<f8", "shape": [2], "h": None},
            "mask": {"a": 1, "dtype": "|b1", "shape": [2], "h": None}}
    got = decode(node, [16, 2], np.array([1.0, 2.0]).tobytes() + np.array([False, True]).tobytes())
    assert isinstance(got, np.ma.MaskedArray) and got.mask.tolist() == [False, True]
    with pytest.raises(ProtocolError, match="masked"):
        decode({**node, "mask": {"a": 1, "dtype": "|b1", "shape": [1], "h": None}}, [16, 1],
               np.array([1.0, 2.0]).tobytes() + b"\0")


def decode(node, lengths, payload):
    return Decoder({"b": lengths}, memoryview(payload), lambda tag: tag).decode(node)


@pytest.mark.parametrize("node, lengths, payload, words", [
    ({"a": 0, "dtype": "|O", "shape": [1]}, [8], b"\0" * 8, "dtype"),
    ({"a": 0, "dtype": "<f8", "shape": [2]}, [8], b"\0" * 8, "size does not match"),
    ({"a": 0, "dtype": "<f8", "shape": [-1]}, [8], b"\0" * 8, "shape"),
    ({"a": 3, "dtype": "<f8", "shape": [1]}, [8], b"\0" * 8, "buffer index"),
    ({"a": 0, "dtype": "<f8", "shape": [1]}, [8], b"\0" * 4, "add up"),
    ({"zz": 1}, [], b"", "unknown tag"),
    ({"d": [[[1], 2]]}, [], b"", "unhashable"),
])
def test_a_malformed_reply_is_refused(node, lengths, payload, words):
    with pytest.raises(ProtocolError, match=words):
        decode(node, lengths, payload)


def test_nesting_is_bounded():
    node = []
    for _ in range(200):
        node = [node]
    with pytest.raises(ProtocolError, match="deep"):
        decode(node, [], b"")


def test_same_bytes_sees_any_change_and_nan_equals_nan():
    a = np.array([1.0, np.nan, -0.0])
    assert same_bytes(a, a.copy())
    b = a.copy()
    b[2] = 0.0
    assert not same_bytes(a, b)
    assert not same_bytes(a, a.astype(np.float32))



@pytest.mark.parametrize("node, words", [
    ({"x": 3}, "not an array"),
    ({"a": 0, "dtype": "|O", "shape": [2]}, "dtype"),
    ({"a": 0, "dtype": "<f8", "shape": [3]}, "does not match"),
    ({"a": 1, "dtype": "<f8", "shape": [2]}, "buffer index"),
])
def test_an_update_is_read_without_a_copy_but_validated_like_any_array(node, words):
    payload = memoryview(np.array([1.0, 2.0]).tobytes())
    dec = Decoder({"b": [16]}, payload, None)
    view = dec.array_view({"a": 0, "dtype": "<f8", "shape": [2]})
    assert view.tolist() == [1.0, 2.0] and not view.flags.owndata and not view.flags.writeable
    with pytest.raises(ProtocolError, match=words):
        dec.array_view(node)


def test_the_pipes_are_widened_where_the_kernel_allows():
    import fcntl
    import os
    from gradlab.execution.protocol import PIPE_BYTES, widen_pipe
    get, set_ = getattr(fcntl, "F_GETPIPE_SZ", 1032), getattr(fcntl, "F_SETPIPE_SZ", 1031)
    r, w = os.pipe()
    r2, w2 = os.pipe()
    try:
        before = fcntl.fcntl(w, get)
        try:                                               # does this kernel (and user) allow it?
            fcntl.fcntl(w2, set_, PIPE_BYTES)
            allowed = True
        except OSError:
            allowed = False
        widen_pipe(w)
        assert fcntl.fcntl(w, get) == (PIPE_BYTES if allowed else before)   # widened, or left as it was
        widen_pipe(-1)                                     # a bad descriptor: no error, nothing done
    finally:
        for fd in (r, w, r2, w2):
            os.close(fd)


@pytest.mark.parametrize("n", [4, 20000])          # bytes kept (small) or a copy (large)
def test_a_snapshot_sees_any_change_of_bits_or_shape(n):
    from gradlab.execution.protocol import refresh, snapshot
    a = np.full(n, np.nan)
    snap = snapshot(a)
    assert refresh(a, snap) is None                 # NaN equals NaN: unchanged
    for change in (lambda: a.__setitem__(1, 0.0), lambda: a.__setitem__(1, -0.0),
                   lambda: a.__setitem__(n - 1, 1e-300)):
        change()
        new = refresh(a, snap)
        assert new is not None and refresh(a, new) is None
        snap = new
    a.shape = (2, n // 2)                           # same bytes, another shape
    assert refresh(a, snap) is not None
    b = np.zeros(3 * n)                              # grown past the small size, or shrunk below it
    assert refresh(b, snapshot(np.zeros(n))) is not None and refresh(b[:1], snapshot(b)) is not None


def test_a_spinning_read_still_keeps_its_deadline_and_gets_a_message_that_comes_while_it_polls():
    import os
    import threading
    import time
    from gradlab.execution.protocol import Channel, ChannelTimeout
    r, w = os.pipe()
    r2, w2 = os.pipe()       # (the reader's own writing end, unused)
    reader, writer = Channel(r, w2, blocking=False, spin=5.0), Channel(r2, w, blocking=True)
    try:
        start = time.monotonic()
        with pytest.raises(ChannelTimeout):          # spinning never outlasts the deadline
            reader.recv(time.monotonic() + 0.05)
        assert time.monotonic() - start < 1.0
        later = threading.Timer(0.02, lambda: writer.send({"hello": 1}))   # sent while the read polls
        later.start()
        header, _ = reader.recv(time.monotonic() + 4.0)
        later.join()
        assert header["hello"] == 1
    finally:
        for fd in (r, w, r2, w2):
            os.close(fd)


def test_only_one_worker_at_a_time_polls_the_grader_and_thread_pools_do_not(monkeypatch):
    import os
    import threading
    from gradlab.execution import loader, runner
    from gradlab.execution.limits import Limits
    from gradlab.execution.protocol import SPIN
    from gradlab.frontends import cli
    from gradlab.grading.job import Limits as GradingLimits
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    args = cli.build_parser().parse_args(["check", "linear", "--isolate"])
    assert cli.run_limits(args).spins()                          # gradlab check: one worker at a time
    assert not GradingLimits().for_worker(1e18).spins()           # a grading job: several at once
    assert not Limits().spins()                                   # the default (pytest -n, Plan users)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert not Limits(spin=True).spins()                          # no core to spare
    monkeypatch.undo()
    seen = []

    class Stop(Exception):
        pass

    def planned(*args, limits=None, **kwargs):     # what gradlab.check gives its plan, then no run
        seen.append(limits)
        raise Stop()

    def check_linear():
        try:
            runner.check("linear")
        except Stop:
            pass
    monkeypatch.setattr(runner, "Plan", planned)
    check_linear()                                               # from the main thread
    pool = threading.Thread(target=check_linear)
    pool.start()
    pool.join()
    assert [limits.spin for limits in seen] == [True, False]     # gradlab.check: from the main thread only
    impl = loader.open_implementation(None, isolate=True, limits=Limits(spin=True))
    try:
        assert impl.session.chan.spin == SPIN and impl.get("linear") is not None
    finally:
        impl.close()


def test_a_rehearsals_generator_reuses_its_bit_generator_and_one_for_the_students_code_is_new():
    from gradlab.execution import worker
    state = np.random.default_rng(5).bit_generator.state
    first = worker._generator(state, own=True)
    drawn = first.standard_normal(4)
    again = worker._generator(state, own=True)
    assert again.bit_generator is first.bit_generator and (again.standard_normal(4) == drawn).all()
    students = [worker._generator(state) for _ in range(2)]      # the student's code may keep one
    assert students[0].bit_generator is not students[1].bit_generator
    assert all(s.bit_generator is not first.bit_generator for s in students)
    assert (students[0].standard_normal(4) == drawn).all()
