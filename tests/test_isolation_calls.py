"""The cost of a call into the worker: what the faster paths must keep exactly as
before. Mirrors stay in step both ways (whatever side writes, small arrays and
large, in place or through a view); a scheduler's calls made in a row in one
request give what one call at a time gives, error for error, in the same order;
a malformed message is refused in one line."""
import os
import textwrap

import numpy as np
import pytest

import gradlab
from gradlab.contract.kinds import get_kind
from gradlab.execution import loader, rehearsal
from gradlab.execution.limits import Limits
from gradlab.execution.protocol import Channel, ChannelClosed, ProtocolError, SMALL
from gradlab.execution.runner import config_for
from gradlab.execution.subject import Subject

# ---- mirrors ----------------------------------------------------------------------------

MIRRORS = '''
import numpy as np
import gradlab


class Probe:
    """forward: x @ W + b, and it edits what it is told to edit in place."""

    def __init__(self, d, big):
        self.params = {"W": np.eye(d), "b": np.zeros(d), "big": np.zeros(big)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.x = None

    def forward(self, x, edit="none"):
        self.x = x                         # kept: gradlab's later in-place edits must reach it
        if edit == "input":
            x[0] *= 2.0
        if edit == "input_view":
            x[..., ::2] += 1.0
        if edit == "params":
            self.params["W"][0, 0] += 1.0
            self.params["big"][-1] = 7.0
        return x @ self.params["W"] + self.params["b"] + self.params["big"][-1]

    def kept_sum(self):
        return float(self.x.sum())

    def log_zero(self):
        return np.log(np.zeros(1))


@gradlab.register("linear")
def build(cfg):
    return Probe(cfg.d_model, %d)
''' % (SMALL // 8 + 10)          # "big" is compared as a large array, the others as small ones


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    path = tmp_path_factory.mktemp("mirrors") / "probe.py"
    path.write_text(MIRRORS)
    impls = [loader.load(str(path)), loader.open_implementation(str(path), isolate=True, limits=Limits())]
    yield impls
    impls[1].close()


def _both(probe, steps):
    """Run steps(module, slots, x) with the module in gradlab's process and in a worker: both results."""
    cfg = config_for("linear", 0)
    out = []
    for impl in probe:
        subject = Subject(get_kind("linear"), impl.get("linear"), cfg, impl.name, impl.files)
        module = subject.build()
        slots = {s.name: s for s in subject.slots(module)}
        x = np.arange(cfg.batch_size * cfg.seq_len * cfg.d_model, dtype=float).reshape(
            cfg.batch_size, cfg.seq_len, cfg.d_model) / 10
        out.append(steps(module, slots, x))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert np.array_equal(np.asarray(u), np.asarray(v)), (u, v)


def test_gradlabs_in_place_edits_of_a_mirror_reach_the_worker(probe):
    def steps(module, slots, x):
        first = module.forward(x)
        slots["W"].value[1, 2] += 0.5            # a check perturbing a parameter in place
        slots["big"].value[-1] = 3.0              # a large one
        slots["b"].value[::2] = -1.0              # through a strided view
        second = module.forward(x)
        slots["W"].value[1, 2] -= 0.5             # and back: the original bits again
        slots["big"].value[-1] = 0.0
        slots["b"].value[...] = 0.0
        return first, second, module.forward(x)
    here, there = _both(probe, steps)
    _same(here, there)
    assert not np.array_equal(there[0], there[1]) and np.array_equal(there[0], there[2])


def test_the_students_in_place_edits_come_back(probe):
    def steps(module, slots, x):
        module.forward(x, "input")                      # the input, edited in place
        after_input = x.copy()
        module.forward(x, "input_view")                 # through a strided view
        module.forward(x, "params")                     # the parameters, small and large
        return after_input, x, slots["W"].value, slots["big"].value
    here, there = _both(probe, steps)
    _same(here, there)
    assert there[3][-1] == 7.0


def test_an_input_the_student_kept_sees_gradlabs_later_edits(probe):
    def steps(module, slots, x):
        module.forward(x)
        x[...] = 1.0                                    # gradlab writes into the array the module kept
        return [module.kept_sum()]
    here, there = _both(probe, steps)
    _same(here, there)
    cfg = config_for("linear", 0)
    assert there[0] == cfg.batch_size * cfg.seq_len * cfg.d_model


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_numpys_error_handling_where_gradlab_calls_is_the_workers_call_by_call(probe):
    """np.errstate around a call reaches the worker, and leaving it does too (it is sent only when
    it changes: both directions, several times)."""
    def steps(module, slots, x):
        seen = []
        for mode in ("raise", "ignore", "raise", "warn", "raise"):
            with np.errstate(divide=mode):
                try:
                    seen.append(("value", float(module.log_zero()[0])))
                except Exception as e:          # FloatingPointError here, a RemoteException there
                    seen.append(("raised", "divide by zero" in str(e)))
        seen.append(("after", float(module.log_zero()[0])))
        return seen
    here, there = _both(probe, steps)
    assert here == there
    assert here[0] == ("raised", True) and here[1] == ("value", float("-inf"))


# ---- a scheduler's calls, in a row ----------------------------------------------------------------

SCHEDULER = '''
import math
import sys
import gradlab


def noam(step, d_model, warmup_steps):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


class Scheduler:
    def __init__(self, d_model, warmup_steps):
        self.d_model, self.warmup_steps = d_model, warmup_steps
        self.n = 0
        self.reads = 0

    def step(self):
        self.n += 1
        {body}
        return noam(self.n + self.reads, self.d_model, self.warmup_steps)

    def get_last_lr(self):
        self.reads += 1
        return [noam(self.n, self.d_model, self.warmup_steps)]


@gradlab.register("warmup")
def build(cfg):
    return Scheduler(cfg.d_model, cfg.warmup_steps)
'''

STEPS = {
    "correct": "pass",
    # None every 7th call: gradlab reads get_last_lr(), which shifts every later value: only the same
    # calls in the same order give the same numbers
    "none_then_read": "if self.n % 7 == 0:\n            return None",
    "raises": "if self.n == 50:\n            raise ValueError('step 50 is not allowed')",
    "nan": "if self.n == 30:\n            return math.nan",
    "text": "if self.n == 20:\n            return 'fast'",
    "exits": "if self.n == 25:\n            sys.exit(3)",
    "array": "if self.n == 33:\n            return [0.1, 0.2]",
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_schedulers_calls_in_a_row_give_what_one_call_at_a_time_gives(name, tmp_path):
    path = tmp_path / f"sched_{name}.py"
    path.write_text(SCHEDULER.replace("{body}", STEPS[name]))
    here = gradlab.check("warmup", impl=str(path), checks="trajectory", seed=0, isolate=False)
    there = gradlab.check("warmup", impl=str(path), checks="trajectory", seed=0, isolate=True)
    a, b = here.checks[-1], there.checks[-1]
    assert (a.status, a.message) == (b.status, b.message)
    assert a.metrics == b.metrics
    assert (a.status == "pass") == (name == "correct"), a.message


def test_a_schedulers_steps_cost_a_few_requests_not_one_each():
    impl = loader.open_implementation(None, isolate=True, limits=Limits())
    try:
        subject = Subject(get_kind("warmup"), impl.get("warmup"), config_for("warmup", 0), impl.name, impl.files)
        from gradlab.execution.calls import Scheduler
        scheduler = Scheduler(subject, subject.build())
        before = impl.session.requests
        values = scheduler.take(300)
        assert impl.session.requests - before <= 3
        assert values == [scheduler_value(subject, k) for k in range(1, 301)]
    finally:
        impl.close()


def scheduler_value(subject, step):
    cfg = subject.cfg
    return cfg.d_model ** -0.5 * min(step ** -0.5, step * cfg.warmup_steps ** -1.5)


SLOW = '''
import time
import gradlab


class Slow:
    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        time.sleep({pause})
        if self.n == {hang}:
            while True:
                pass
        if self.n == {late}:
            time.sleep(1.1)
        return 0.01
'''


@pytest.mark.parametrize("pause, hang, late, words", [
    (0.0, 40, 0, "ran past 1 s"),            # one endless call among many: its own time limit stops it
    (0.0, 0, 1, "ran past 1 s"),             # the first call of a row, 1.1 s: past the limit, as alone
    (0.0, 0, 60, "ran past 1 s"),            # and one in the middle
    (0.012, 0, 0, None),                     # 100 calls of 12 ms: each within its limit, the row is not one call
])
def test_every_call_in_a_row_keeps_its_own_time_limit(pause, hang, late, words, tmp_path):
    path = tmp_path / "slow.py"
    path.write_text(SLOW.format(pause=pause, hang=hang, late=late) + "\n\n@gradlab.register('warmup')\ndef build(cfg):\n"
                    "    return Slow()\n")
    impl = loader.open_implementation(str(path), isolate=True, limits=Limits(timeout=1, wall=60))
    try:
        subject = Subject(get_kind("warmup"), impl.get("warmup"), config_for("warmup", 0), impl.name, impl.files)
        from gradlab.execution.calls import Scheduler
        scheduler = Scheduler(subject, subject.build())
        if words is None:
            assert scheduler.take(100) == [0.01] * 100
            return
        with pytest.raises(gradlab.StudentError) as e:
            scheduler.take(100)
        assert words in str(e.value) and "\n" not in str(e.value)
    finally:
        impl.close()


# ---- messages -------------------------------------------------------------------------------

def _pipe_pair():
    r1, w1 = os.pipe()
    return Channel(r1, w1, blocking=True)


@pytest.mark.parametrize("size", [0, 100, 1 << 17])
def test_messages_of_every_size_cross_whole_and_two_at_once(size):
    chan = _pipe_pair()
    try:
        arrays = [np.arange(size // 8, dtype=np.float64), np.ones((3, 2), dtype=np.float32)[:, 0].copy(), b"",
                  np.asarray(np.float32(2.5))]       # a 0-d array: a NumPy scalar's buffer
        if size > 1 << 16:
            os.set_blocking(chan.wfd, False)
            chan._wpoll = __import__("select").poll()
            chan._wpoll.register(chan.wfd, __import__("select").POLLOUT)
            import threading
            t = threading.Thread(target=chan.send, args=({"n": 1}, arrays))
            t.start()
            header, payload = chan.recv()
            t.join()
        else:
            chan.send({"n": 1}, arrays)
            chan.send({"n": 2}, [])          # a second message behind the first: kept for the next recv
            header, payload = chan.recv()
            assert chan.recv()[0] == {"n": 2, "b": []}
        assert header["n"] == 1 and header["b"] == [size // 8 * 8, 12, 0, 4]
        assert bytes(payload) == arrays[0].tobytes() + arrays[1].tobytes() + arrays[3].tobytes()
    finally:
        chan.close()


@pytest.mark.parametrize("data, words", [
    (b"\xff" * 64, "a message of"),
    ((10).to_bytes(8, "little") + (50).to_bytes(4, "little") + b"xxxxxx", "longer than its message"),
    ((8).to_bytes(8, "little") + (4).to_bytes(4, "little") + b"{,}]", "not JSON"),
    ((8).to_bytes(8, "little") + (4).to_bytes(4, "little") + b"[1]\n", "not a JSON object"),
    ((6).to_bytes(8, "little") + (2).to_bytes(4, "little") + b"\xc3\x28", "not JSON"),
])
def test_a_forged_or_malformed_message_is_refused_in_one_line(data, words):
    chan = _pipe_pair()
    try:
        os.write(chan.wfd, data)
        with pytest.raises(ProtocolError, match=words) as e:
            chan.recv()
        assert "\n" not in str(e.value)
    finally:
        chan.close()


def test_a_message_cut_short_is_a_closed_channel():
    chan = _pipe_pair()
    os.write(chan.wfd, (100).to_bytes(8, "little") + b"abc")
    os.close(chan.wfd)
    try:
        with pytest.raises(ChannelClosed):
            chan.recv()
    finally:
        os.close(chan.rfd)


def test_a_forged_reply_through_a_worker_is_one_error_line(tmp_path):
    path = tmp_path / "forge.py"
    path.write_text(textwrap.dedent('''
        import os, sys
        import numpy as np
        import gradlab

        class Forges:
            def forward(self, x):
                head = b'{"value": {"a": 0, "dtype": "<f8", "shape": [1000]}, "b": [8]}'
                body = len(head).to_bytes(4, "little") + head + bytes(8)
                os.write(int(sys.argv[2]), len(body).to_bytes(8, "little") + body)
                return x

            def backward(self, g):
                return g

        @gradlab.register("layernorm")
        def build(cfg):
            return Forges()
    '''))
    result = gradlab.check("layernorm", impl=str(path), checks="smoke", seed=0, isolate=True)
    bad = [c for c in result.checks if c.status != "pass"]
    assert bad and bad[0].status == "error" and "\n" not in bad[0].message
    assert "malformed reply" in bad[0].message, bad[0].message


FORGES_IN_BACKWARD = """
    import os, sys
    import numpy as np
    import gradlab

    class Forges:
        def __init__(self, cfg):
            self.params = {{"w": np.random.default_rng(0).standard_normal((cfg.d_model, cfg.d_model))}}
            self.grads = {{}}

        def forward(self, x):
            self.x = x
            return x @ self.params["w"]

        def backward(self, g):
            if not np.all(g == 1) and {when}:      # the gradient check's backward (smoke's is at g = 1)
                head = {head!r}
                body = len(head).to_bytes(4, "little") + head + bytes({extra})
                os.write(int(sys.argv[2]), len(body).to_bytes(8, "little") + body)
            self.grads["w"] = self.x.reshape(-1, self.x.shape[-1]).T @ g.reshape(-1, g.shape[-1])
            return g @ self.params["w"].T


    @gradlab.register("ffn")
    def build(cfg):
        return Forges(cfg)
"""


@pytest.mark.parametrize("rehearsed", [True, False])
def test_a_forged_reply_to_a_batch_is_a_malformed_reply_not_the_students_exception(tmp_path, monkeypatch, rehearsed):
    monkeypatch.setattr(rehearsal, "ENABLED", rehearsed)
    path = tmp_path / "forge_batch.py"      # a reply to a batch of one call, with an array too large for it
    path.write_text(textwrap.dedent(FORGES_IN_BACKWARD.format(
        when="True", head=b'{"value": [{"value": {"a": 0, "dtype": "<f8", "shape": [1000]}}], "b": [8]}', extra=8)))
    result = gradlab.check("ffn", impl=str(path), checks="gradient", seed=0, isolate=True)
    (gradient,) = [c for c in result.checks if c.name == "gradient"]
    assert gradient.status == "error" and "\n" not in gradient.message
    # (rehearsed: the forged message comes where the rehearsal's answer for the backward should)
    said = "(a message that is no answer" if rehearsed else "(an array whose size"
    assert f"backward: the worker sent a malformed reply {said}" in gradient.message, gradient.message


def test_a_forged_reply_of_the_wrong_shape_ends_the_worker_so_the_next_check_is_not_out_of_step(tmp_path):
    marker = tmp_path / "forged"
    path = tmp_path / "forge_once.py"       # once: a reply with no value for the batch's call
    path.write_text(textwrap.dedent(FORGES_IN_BACKWARD.format(
        when=f"not os.path.exists({str(marker)!r}) and not open({str(marker)!r}, 'w').close()",
        head=b'{"value": [], "b": []}', extra=0)))
    result = gradlab.check("ffn", impl=str(path), checks="gradient,determinism", seed=0, isolate=True)
    gradient, determinism = [c for c in result.checks if c.name in ("gradient", "determinism")]
    assert marker.exists()
    assert gradient.status == "error" and gradient.message.startswith("ffn: backward: the worker sent a malformed "
                                                                      "reply"), gradient.message
    assert determinism.status == "pass", determinism.message       # a fresh worker, not the stale reply
