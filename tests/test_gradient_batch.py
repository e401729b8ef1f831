"""The gradient check's batches (issue 8). Through a worker, the points of a directional check,
forward with its repeat, and backward with what is read right after it each make one request; in gradlab's own process the same calls run one after the other. The student's code sees
the same calls, arguments and state either way, so the numbers, the verdicts and their words are
the same."""
import json
import textwrap
import time

import numpy as np
import pytest

import gradlab
from gradlab.contract import suite
from gradlab.contract.kinds import get_kind
from gradlab.execution import loader, rehearsal, worker
from gradlab.execution.limits import Limits
from gradlab.execution.protocol import Encoder
from gradlab.execution.runner import config_for, run_one
from gradlab.execution.subject import Subject
from gradlab.numerics.engine import EPS, Engine, Tensor, point_value, random_direction

BIG = dict(batch_size=2, seq_len=16, d_model=64, num_heads=4, max_len=16)


@pytest.fixture
def worker_impl():
    impl = loader.open_implementation(None, isolate=True, limits=Limits())
    yield impl
    impl.close()


def _subject(impl, **overrides):
    cfg = config_for("attention", 0, **overrides)
    return Subject(get_kind("attention"), impl.get("attention"), cfg, impl.name, impl.files)


def _built(impl):
    """(subject, a module it built, its parameters, inputs for it)."""
    subject = _subject(impl)
    module = subject.build()
    return subject, module, subject.slots(module), subject.make_inputs(np.random.default_rng(0))


def _student(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


# ---- the engine: a batch of points gives exactly the loop's numbers ---------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("factor", [1.0, 3.0])         # a right gradient, and one 3x too large
def test_a_batch_of_points_gives_the_numbers_of_the_loop(dtype, factor):
    rng = np.random.default_rng(7)
    W = rng.standard_normal((6, 5)).astype(dtype)
    b = rng.standard_normal(6)
    x, g = rng.standard_normal(5), rng.standard_normal(6)

    def f_at(Wv, bv):
        return float(np.sum(np.tanh(Wv.astype(np.float64) @ x + bv) * g))

    h = (1 - np.tanh(W.astype(np.float64) @ x + b) ** 2) * g
    grads = [factor * np.outer(h, x), h]
    asked = []

    def points(dirs, steps):       # what a worker does: f at each point, gradlab's arrays untouched
        asked.append(len(steps))
        return [f_at(*(a if d is None else point_value(d, s, a.astype(np.float64), a.dtype)
                       for a, d in zip((W, b), dirs))) for s in steps]

    W0, b0 = W.copy(), b.copy()
    dirs = [random_direction(np.random.default_rng(3), W.shape), random_direction(np.random.default_rng(4), b.shape)]
    eps = EPS[dtype]
    results = []
    for batch in (None, points):
        engine = Engine(lambda: f_at(W, b), [Tensor("W", W, grads[0]), Tensor("b", b, grads[1])], eps, eps,
                        float(np.abs(h).sum()), points=batch)
        results.append((engine.directional(dirs), engine.directional(engine.tensor_dirs(dirs, {1})), engine.calls))
        assert W.tobytes() == W0.tobytes() and b.tobytes() == b0.tobytes()      # restored bit for bit
    assert results[0] == results[1]
    assert results[0][0].ok == (factor == 1.0)
    # f(+-h) first; f(+-h/2) only for a comparison that is not a clean pass at the floor tolerance (the wrong
    # gradient's joint one)
    # (float32 numerics: a floor tolerance too coarse for TARGET_RESOLUTION takes all four points)
    assert all(n == 2 for n in asked) and (len(asked) == 2) == (factor == 1.0 and dtype == "float64")


# ---- through a worker: the same records, fewer requests ------------------------------------------

def _gradient_record(impl, kind="attention", seed=0, **overrides):
    cfg = config_for(kind, seed, **overrides)
    subject = Subject(get_kind(kind), impl.get(kind), cfg, impl.name, impl.files)
    record = run_one(suite.resolve(["gradient"])[0], subject, seed)
    return record.status, record.message, json.dumps(record.metrics, sort_keys=True, default=str)


@pytest.mark.parametrize("name,kind", [("grad_ok_attention.py", "attention"),
                                       ("grad_bad_attention_softmax_term.py", "attention"),
                                       ("grad_bad_layernorm_no_gamma.py", "layernorm")])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_worker_gives_the_records_of_gradlabs_own_process(zoo, name, kind, dtype):
    here = loader.open_implementation(zoo(name), isolate=False)
    there = loader.open_implementation(zoo(name), isolate=True, limits=Limits())
    try:
        for seed in (0, 1):
            assert _gradient_record(here, kind, seed, dtype=dtype) == _gradient_record(there, kind, seed, dtype=dtype)
    finally:
        there.close()


def test_the_gradient_check_on_the_attention_makes_four_requests_or_one_rehearsed(worker_impl, monkeypatch):
    subject = _subject(worker_impl, **BIG)
    check = suite.resolve(["gradient"])[0]
    assert run_one(check, subject, 0).status == "pass"
    counts, records = [], []
    for enabled in (False, True):
        monkeypatch.setattr(rehearsal, "ENABLED", enabled)
        before = worker_impl.session.requests
        records.append(run_one(check, subject, 0))
        counts.append(worker_impl.session.requests - before)
    # sent one by one: build; forward; backward with the parameters, gradients and attention weights read
    # ahead; the two points of the directional check. Rehearsed: the build, whose reply is followed by the
    # rehearsal's answers to the other three
    assert counts == [4, 1]
    assert [r.status for r in records] == ["pass", "pass"] and records[0].message == records[1].message
    assert records[0].metrics == records[1].metrics
    # the rehearsal's last answer said it was the last: nothing of it is left to read before the next request
    assert worker_impl.session._recorded is None


# ---- Subject.forwards: parameters held for one call, then restored exactly ------------------------

def test_forwards_beyond_the_batch_size_go_in_several_requests_in_order(worker_impl, monkeypatch):
    from gradlab.execution import subject as subject_module
    outs, requests = [], []
    for impl in (loader.reference(), worker_impl):
        subject, module, slots, x = _built(impl)
        calls = [((x[0] + k,), [(slots[0].value, slots[0].value + 0.01 * k)]) for k in range(5)]
        size = x[0].nbytes + slots[0].value.nbytes
        monkeypatch.setattr(subject_module, "BATCH_BYTES", 2 * size)      # two calls a request
        before = getattr(getattr(impl, "session", None), "requests", 0)
        outs.append(subject.forwards(module, calls))
        requests.append(getattr(getattr(impl, "session", None), "requests", 0) - before)
    assert requests == [0, 3]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*outs)) and len(outs[1]) == 5


def test_forwards_hold_parameters_for_one_call_and_restore_them_on_both_sides(worker_impl):
    outs, mirrors = [], []
    for impl in (loader.reference(), worker_impl):
        subject, module, slots, x = _built(impl)
        before = subject.forward(module, *x)
        originals = [sl.value.copy() for sl in slots]
        moved = [(sl.value, sl.value + 0.01 * (k + 1)) for k, sl in enumerate(slots)]
        along = [(sl.value, np.full(sl.value.shape, 0.5), 1e-3) for sl in slots]   # own + s * d, computed there
        got = subject.forwards(module, [(x, moved), (x, ()), (x, moved[:1]), (x, along)])
        assert all(sl.value.tobytes() == o.tobytes() for sl, o in zip(slots, originals))
        assert subject.forward(module, *x).tobytes() == before.tobytes()     # restored where the module runs
        assert got[1].tobytes() == before.tobytes() and not np.array_equal(got[0], before)
        by_hand = subject.forwards(module, [(x, [(a, point_value(d, h, a.astype(np.float64), a.dtype))
                                                 for a, d, h in along])])[0]
        assert by_hand.tobytes() == got[3].tobytes()
        outs.append(got)
        mirrors.append(originals)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*outs))


# ---- what the student's code does mid-batch: the same words as one call at a time -----------------

FLAKY = """
    import numpy as np
    import gradlab


    class Flaky:
        def __init__(self, cfg):
            rng = np.random.default_rng(0)
            self.params = {{"w": rng.standard_normal((cfg.d_model, cfg.d_model))}}
            self.grads = {{"w": np.zeros((cfg.d_model, cfg.d_model))}}
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls == {when}:
                {what}
            self.x = x
            return x @ self.params["w"]

        def backward(self, g):
            self.grads["w"] = self.x.reshape(-1, self.x.shape[-1]).T @ g.reshape(-1, g.shape[-1])
            return g @ self.params["w"].T


    @gradlab.register("ffn")
    def build(cfg):
        return Flaky(cfg)
"""


def _gradient_message(path, isolate, **limits):
    result = gradlab.check("ffn", impl=path, checks="gradient", seed=0, isolate=isolate, **limits)
    (record,) = [c for c in result.checks if c.name == "gradient"]
    return record.status, record.message


@pytest.mark.parametrize("when", [2, 3])      # the first and the second of the two points
def test_a_forward_that_raises_mid_batch_says_so_in_the_same_words(tmp_path, when):
    path = _student(tmp_path, "flaky", FLAKY.format(when=when, what='raise RuntimeError(f"call {self.calls}")'))
    here, there = _gradient_message(path, False), _gradient_message(path, True)
    assert here == there
    assert here[0] == "error" and "forward raised RuntimeError at flaky.py:" in here[1] and f"call {when}" in here[1]


def test_a_forward_that_exits_mid_batch_says_so_as_a_single_call_does(tmp_path):
    first = _student(tmp_path, "exits_first", FLAKY.format(when=1, what="import os; os._exit(3)"))
    later = _student(tmp_path, "exits_later", FLAKY.format(when=3, what="import os; os._exit(3)"))
    status, message = _gradient_message(later, True)
    alone = gradlab.check("ffn", impl=first, checks="smoke", seed=0, isolate=True).checks[0]   # its first call
    assert status == alone.status == "error" and message == alone.message
    assert "forward ended the worker process" in message and "exit status 3" in message


def test_a_keyboard_interrupt_mid_batch_ends_that_worker_and_the_next_check_gets_a_fresh_one(tmp_path):
    path = _student(tmp_path, "interrupts", FLAKY.format(when=3, what="raise KeyboardInterrupt"))
    # the gradient check runs ahead of smoke, fails, and smoke then runs (one forward: it never reaches call 3)
    result = gradlab.check("ffn", impl=path, checks="gradient,smoke", seed=0, isolate=True)
    records = {c.name: c for c in result.checks}
    gradient, smoke = records["gradient"], records["smoke"]
    assert gradient.status == "error" and "forward raised KeyboardInterrupt at interrupts.py:" in gradient.message
    assert smoke.status == "pass" and "shown by" not in smoke.message, smoke.message


def test_a_forward_that_hangs_mid_batch_is_stopped_with_where(tmp_path):
    path = _student(tmp_path, "hangs", FLAKY.format(when=3, what="while True: pass"))
    status, message = _gradient_message(path, True, timeout=0.3)
    # a batch of n calls has n times the time limit of one
    assert status == "error" and "forward ran past" in message and "last seen at hangs.py:" in message


@pytest.fixture(params=["forward", "backward", "points"])
def answer_not_used(request, monkeypatch):
    """gradlab's signature of the forward (or the backward, or the points': the rehearsal's last answer,
    which says it is the last) request differs from the rehearsal's, so it does not use that answer: it
    drops the rest of the rehearsal and sends its own requests."""
    from gradlab.execution import remote
    real = remote.signature
    method, calls = ("forward", 2) if request.param == "points" else (request.param, 1)

    def differs(op, steps, *rest):
        sig = real(op, steps, *rest)
        return None if steps and steps[0][1] == method and len(steps) == calls else sig
    monkeypatch.setattr(remote, "signature", differs)
    return request.param


def test_an_answer_of_the_rehearsal_not_used_still_shares_what_it_found(zoo, answer_not_used):
    # the nested block's LayerNorm parameters show only after a backward: the rehearsal's answer for the
    # backward shares them. When gradlab does not use that answer (its request differs), it takes the
    # parameters all the same, so its next requests and the worker agree on what is shared.
    path = zoo("red_mod_block_ok_nested.py")
    here = gradlab.check("block", impl=path, checks="gradient", seed=0, isolate=False)
    there = gradlab.check("block", impl=path, checks="gradient", seed=0, isolate=True)
    (a,), (b,) = ([c for c in r.checks if c.name == "gradient"] for r in (here, there))
    assert a.status == b.status == "pass" and a.message == b.message, (a.message, b.message)


def test_after_an_answer_not_used_the_module_is_as_gradlab_left_it(tmp_path, answer_not_used):
    # the rehearsal ran on (backward, the points) past the request gradlab then sent itself: the module's
    # caches hold the last point's input, so gradlab's backward would use the wrong x. gradlab calls the
    # forward it took from the rehearsal again first, and the records are those of gradlab's own process
    path = _student(tmp_path, "plain", FLAKY.format(when=-1, what="pass"))
    here, there = _gradient_message(path, False), _gradient_message(path, True)
    assert here == there and here[0] == "pass", (here, there)


def test_a_float32_module_in_a_float64_run_ends_the_rehearsal_at_its_float64_copy(tmp_path):
    # the numerics move to a float64 copy built by a second build(cfg): the rehearsal stops there (it
    # does not judge a float32 computation gradlab will not make), and gradlab sends the rest
    path = _student(tmp_path, "single", FLAKY.format(when=-1, what="pass").replace(
        '.standard_normal((cfg.d_model, cfg.d_model))}}', '.standard_normal((cfg.d_model, cfg.d_model)).astype(cfg.dtype '
        '== "float64" and np.float32 or cfg.dtype)}}'))
    here, there = _gradient_message(path, False), _gradient_message(path, True)
    assert here == there and here[0] == "pass", (here, there)


def test_a_rehearsed_call_that_hangs_is_named_and_stopped_at_its_own_time_limit(tmp_path):
    # the rehearsal runs build, forward, backward and the points in one request: a hang in backward is
    # said as the backward's, stopped one limit after the backward started (not several)
    # (the gradient check's backward, at a random g: smoke's, at g = 1, must pass for its error to show)
    path = _student(tmp_path, "hangs_back", FLAKY.format(when=-1, what="pass").replace(
        "    def backward(self, g):\n", "    def backward(self, g):\n            if not np.all(g == 1):\n"
        "                while True: pass\n"))
    start = time.monotonic()
    status, message = _gradient_message(path, True, timeout=0.5)
    assert status == "error" and message.startswith("ffn: backward ran past 0.5 s"), message
    assert "last seen at hangs_back.py:" in message
    assert time.monotonic() - start < 6


def test_a_forward_that_rewrites_the_progress_file_cannot_stretch_its_time_limit(tmp_path):
    # the worker's progress file (which call runs, since when) lies in its folder, where the student's
    # code may write: forging ever newer calls stretches a rehearsal to MAX_CALLS limits, no further
    path = _student(tmp_path, "forges_progress", FLAKY.format(when=2, what="""import glob, time, os
                n = 10 ** 6
                while True:
                    for f in glob.glob(os.path.join(os.environ.get("TMPDIR", "."), "progress.txt")):
                        with open(f, "r+b") as fh:
                            n += 1
                            fh.write(f"{n} {time.monotonic():.6f} backward\\n".encode() + bytes(1))
                    time.sleep(0.01)"""))
    start = time.monotonic()
    status, message = _gradient_message(path, True, timeout=0.2)
    took = time.monotonic() - start
    assert status == "error" and "ran past" in message, message
    assert took < rehearsal.MAX_CALLS * 0.2 + 3, took


def test_each_forward_of_a_batch_has_the_whole_time_limit(tmp_path):
    # 0.2 s per forward, the limit 0.3 s: a batch of two points takes 0.4 s, within 2 x 0.3 s
    path = _student(tmp_path, "slowish", FLAKY.format(when=-1, what="pass").replace(
        "self.calls += 1", "self.calls += 1; __import__('time').sleep(0.2)"))
    status, message = _gradient_message(path, True, timeout=0.3)
    assert status == "pass", message


def test_a_forward_that_depends_on_its_call_count_is_not_repeatable_either_way(tmp_path):
    path = _student(tmp_path, "counting", FLAKY.format(when=-1, what="pass").replace(
        'return x @ self.params["w"]', 'return x @ self.params["w"] + 1e-3 * self.calls'))
    here, there = _gradient_message(path, False), _gradient_message(path, True)
    assert here == there
    assert here[0] == "error" and "forward is not repeatable" in here[1]


def test_a_forward_that_edits_a_parameter_in_place_gives_the_same_record_either_way(tmp_path):
    # "u" does not reach the output, and every forward adds 1 to it in place: gradlab perturbs it
    # too, and what the forward did comes back from the worker as it does from one call
    path = _student(tmp_path, "drifts", FLAKY.format(when=-1, what="pass").replace(
        'self.x = x', 'self.x = x\n            self.params["u"] += 1.0').replace(
        'self.calls = 0', 'self.calls = 0\n            self.params["u"] = np.zeros(3)\n'
        '            self.grads["u"] = np.zeros(3)'))
    here = _gradient_message(path, False)
    assert here == _gradient_message(path, True) and here[0] == "pass", here


BAD_GRADS = FLAKY.format(when=-1, what="pass").replace("    import gradlab\n", """    import gradlab


    class Grads(dict):
        def get(self, key, default=None):
            if getattr(self, "armed", False):
                raise LookupError(f"no gradient of {key} today")
            return dict.get(self, key, default)
""").replace('self.grads = {"w": np.zeros((cfg.d_model, cfg.d_model))}',
             'self.grads = Grads(w=np.zeros((cfg.d_model, cfg.d_model)))').replace(
    '            return g @ self.params["w"].T',
    '            self.grads.armed = not np.all(g == 1)     # the gradient check\'s backward, not smoke\'s\n'
    '            return g @ self.params["w"].T')


def test_a_gradient_that_cannot_be_read_after_backward_says_so_in_the_same_words(tmp_path):
    # through a worker it is read ahead with the backward; that read stops quietly, and gradlab's
    # own read then meets the error, as in one process
    path = _student(tmp_path, "bad_grads", BAD_GRADS)
    here = _gradient_message(path, False)
    assert here == _gradient_message(path, True)
    assert here[0] == "error" and "LookupError" in here[1] and "no gradient of w today" in here[1], here


# ---- the worker's side: a batch stops at the first call that raises, reads ahead quietly -------------

class _Module:
    def __init__(self):
        self.w = np.arange(3.0)
        self.seen = []

    def forward(self, x):
        self.seen.append(self.w.copy())
        if x == "boom":
            raise ValueError("boom")
        return self.w * x

    def backward(self, g):
        return g


def test_the_worker_batch_stops_at_the_first_call_that_raises_and_restores_what_it_wrote():
    state = worker.State(None)
    module = _Module()
    target = state.keep(module)
    h, _ = state.share(module.w)
    enc = Encoder()
    calls = [{"target": target, "method": "forward", "args": [2.0], "writes": [[h, enc.array(np.full(3, 9.0))]]},
             {"target": target, "method": "forward", "args": ["boom"], "writes": [[h, enc.array(np.full(3, 5.0))]]},
             {"target": target, "method": "forward", "args": [1.0]}]
    payload = b"".join(bytes(b) for b in enc.buffers)
    reply, _ = state.handle({"op": "calls", "calls": calls, "b": [len(bytes(b)) for b in enc.buffers]}, payload)
    assert reply["failed"]["index"] == 1 and reply["failed"]["type"] == "ValueError"
    assert len(reply["value"]) == 1                        # the call before it; none after it ran
    assert [list(w) for w in module.seen] == [[9.0] * 3, [5.0] * 3]
    assert module.w.tolist() == [0.0, 1.0, 2.0] and not reply.get("updates")     # restored, bit for bit
