"""Training loops through a worker read the gradients with the model's last backward
(remote.grads_with_backward): no request of their own, and the same numbers as in one
process, whatever the student's gradients do (shared between instances, changed by a read)."""
import collections

import pytest

import gradlab
from gradlab.execution import remote

LAYERNORM = '''
import numpy as np
import gradlab

class LayerNorm:
    {shared}

    def __init__(self, d, eps):
        self.eps = eps
        self.params = {{"gamma": np.ones(d), "beta": np.zeros(d)}}
        {own}

    def forward(self, x):
        mu = x.mean(-1, keepdims=True)
        self.inv = 1 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.inv
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, g):
        D = g.shape[-1]
        self._grads["gamma"] = (g * self.xhat).reshape(-1, D).sum(0)
        self._grads["beta"] = g.reshape(-1, D).sum(0)
        d = g * self.params["gamma"]
        return self.inv * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))

    @property
    def grads(self):
        {read}
        return self._grads

@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
'''

STYLES = {
    # every instance has its own gradients
    "own": dict(shared="", own="self._grads = {}", read="pass"),
    # one gradient dict for all five LayerNorms of the model: after the model's backward it holds
    # the last instance's, and only a read after the last backward sees what one process sees
    "shared between instances": dict(shared="_grads = {}", own="", read="pass"),
    # a read halves what is stored: the number of reads (and when they happen) changes training
    "halved by every read": dict(shared="", own="self._grads = {}",
                                 read="self._grads = {k: v / 2 for k, v in self._grads.items()}; "
                                      "return {k: 2 * v for k, v in self._grads.items()}"),
}


def _requests_by_op(fn):
    counts, request = collections.Counter(), remote.Session.request

    def counted(self, header, *args, **kwargs):
        counts[header.get("op")] += 1
        return request(self, header, *args, **kwargs)
    remote.Session.request = counted
    try:
        return fn(), counts
    finally:
        remote.Session.request = request


@pytest.mark.parametrize("style", STYLES)
def test_overfit_through_a_worker_reads_gradients_with_the_last_backward_and_sees_what_one_process_sees(
        tmp_path, style):
    path = tmp_path / "my_layernorm.py"
    path.write_text(LAYERNORM.format(**STYLES[style]))
    here = gradlab.check("layernorm", impl=str(path), checks=["overfit"], seed=3, isolate=False)
    there, ops = _requests_by_op(lambda: gradlab.check("layernorm", impl=str(path), checks=["overfit"], seed=3,
                                                       isolate=True))
    a, b = here.checks[-1], there.checks[-1]
    assert a.name == b.name == "overfit"
    assert (a.status, a.message, a.metrics) == (b.status, b.message, b.metrics)
    if style == "own":
        assert a.status == "pass", a.message
    # of overfit's 30 steps (5 LayerNorms each) only the first reads them by a request of its own, the others
    # with the step's last backward; the smoke precondition reads them once more when overfit's own calls
    # did not show it (overfit did not pass: plan.Plan.precondition)
    assert ops["grads"] == (1 if a.status == "pass" else 2), ops


@pytest.mark.parametrize("check", ["backward", "determinism"])
@pytest.mark.parametrize("style", STYLES)
def test_a_modules_own_checks_read_gradients_with_its_backward_and_see_what_one_process_sees(tmp_path, check, style):
    path = tmp_path / "my_layernorm.py"
    path.write_text(LAYERNORM.format(**STYLES[style]))
    here = gradlab.check("layernorm", impl=str(path), checks=[check], seed=1, isolate=False)
    there, ops = _requests_by_op(lambda: gradlab.check("layernorm", impl=str(path), checks=[check], seed=1,
                                                       isolate=True))
    a, b = here.checks[-1], there.checks[-1]
    assert a.name == b.name == check
    assert (a.status, a.message, a.metrics) == (b.status, b.message, b.metrics)
    assert ops["grads"] == (0 if a.status == "pass" else 1), ops     # the smoke precondition's read only, when
                                                                      # the check's own calls did not show it


def test_the_train_check_reads_the_lms_gradients_with_its_backward():
    result, ops = _requests_by_op(lambda: gradlab.check("lm", checks=["train"], seed=0, isolate=True))
    assert result.checks[-1].name == "train" and result.checks[-1].status == "pass", result.checks[-1].message
    assert ops["grads"] == 1, ops     # the smoke precondition's read (train calls at sizes of its own, which do
                                      # not show it); 60 steps read with their backward


def test_a_read_ahead_is_not_used_after_another_request(tmp_path):
    """The stamp: gradients read with a backward, then any request (here a forward), then the read:
    a fresh read, which sees what that forward did."""
    path = tmp_path / "my_layernorm.py"
    path.write_text(LAYERNORM.format(**STYLES["halved by every read"]))
    from gradlab.contract.kinds import get_kind
    from gradlab.execution import loader
    from gradlab.execution.limits import Limits
    from gradlab.execution.runner import config_for
    from gradlab.execution.subject import Subject
    import numpy as np
    cfg = config_for("layernorm", 0)
    impl = loader.open_implementation(str(path), isolate=True, limits=Limits())
    try:
        subject = Subject(get_kind("layernorm"), impl.get("layernorm"), cfg, impl.name, impl.files)
        module = subject.build()
        slots = subject.slots(module)
        x = np.random.default_rng(0).standard_normal((2, 3, cfg.d_model))
        seen = []
        for extra in (False, True, True, False):
            with remote.grads_with_backward(slots):
                module.backward(np.ones_like(module.forward(x)))
            before = impl.session.requests
            if extra:
                module.forward(x)      # a request: what was read ahead is stale
                before = impl.session.requests
            seen.append((subject.read_grads(slots)["beta"].copy(), impl.session.requests - before))
        # the first block learns whose backward is last (a request to read), the others read ahead
        assert [n for _, n in seen] == [1, 1, 1, 0]
        # each slot's read halves what is stored: after the extra forward the worker reads them a second
        # time (4 reads: a quarter); read with the backward, once, as in the first block
        assert np.allclose(seen[1][0], seen[0][0] / 4) and np.allclose(seen[2][0], seen[0][0] / 4)
        assert np.allclose(seen[3][0], seen[0][0])
    finally:
        impl.close()
