"""Gradients read one parameter at a time through a worker: the first read fetches the
module's other gradients too (one request), used only while nothing has run since."""
import numpy as np
import pytest

from gradlab.execution import loader, worker
from gradlab.execution.limits import Limits
from gradlab.execution.protocol import Encoder
from gradlab.execution.runner import config_for
from gradlab.execution.subject import Subject
from gradlab.contract.kinds import get_kind


def test_reading_gradients_one_by_one_costs_one_request_and_never_goes_stale():
    cfg = config_for("attention", 0)
    here, there = loader.reference(), loader.open_implementation(None, isolate=True, limits=Limits())
    try:
        got = []
        for impl in (here, there):
            subject = Subject(get_kind("attention"), impl.get("attention"), cfg, impl.name, impl.files)
            module = subject.build()
            slots = subject.slots(module)
            x = np.random.default_rng(0).standard_normal((cfg.batch_size, cfg.seq_len, cfg.d_model))
            rounds = []
            for scale in (1.0, 3.0):        # a second backward: what was read ahead before is stale
                out = module.forward(x)
                module.backward(np.full_like(out, scale))
                before = getattr(getattr(impl, "session", None), "requests", 0)
                rounds.append([np.array(subject.read_grad(s), copy=True) for s in slots])
                if impl is there:
                    assert len(slots) > 1 and impl.session.requests - before == 1
            got.append(rounds)
        for a, b in zip(got[0], got[1]):
            assert all(np.array_equal(g, h) for g, h in zip(a, b))
        assert all(np.allclose(3 * g, h) for g, h in zip(got[1][0], got[1][1]))
    finally:
        there.close()


class _Slot:
    def __init__(self, value):
        self.value = value

    def grad(self):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@pytest.mark.parametrize("asked", [1, 2])
def test_a_gradient_read_ahead_that_raises_stops_the_reading_quietly(asked):
    state = worker.State(None)
    handles = [state.keep(_Slot(np.ones(2))), state.keep(_Slot(np.zeros(3))), state.keep(_Slot(KeyError("dW"))),
               state.keep(_Slot(np.ones(4)))]
    reply = state.grads({"slots": handles, "asked": asked, "t": None}, Encoder())
    assert len(reply["value"]) == 2          # stopped at the third, read ahead: no error


def test_a_gradient_asked_for_that_raises_is_the_students_error():
    state = worker.State(None)
    handles = [state.keep(_Slot(np.ones(2))), state.keep(_Slot(KeyError("dW"))), state.keep(_Slot(np.ones(4)))]
    with pytest.raises(worker._StudentRaised) as e:
        state.grads({"slots": handles, "asked": 2, "t": None}, Encoder())
    assert e.value.info["index"] == 1 and e.value.info["type"] == "KeyError"
