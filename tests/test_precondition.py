"""The smoke precondition, shown by the first check's own calls (gradlab/execution/plan.py): a one-check
run builds the module once, not twice, and the precondition still fails where it must."""
import json
import textwrap

import pytest

import gradlab
from gradlab.contract import suite
from gradlab.execution.plan import Plan, run_one

LAYERNORM = """
    import numpy as np
    import gradlab

    BUILDS = {builds!r}


    class LayerNorm:
        def __init__(self, d, eps):
            with open(BUILDS, "a") as f:
                f.write("built\\n")
            self.eps = eps
            {params}

        def forward(self, x):
            g, b = {gamma_beta}
            self.mu = x.mean(-1, keepdims=True)
            self.var = x.var(-1, keepdims=True)
            self.xhat = (x - self.mu) / np.sqrt(self.var + self.eps)
            return g * self.xhat + b

        def backward(self, dy):
            g, b = {gamma_beta}
            n = dy.shape[-1]
            dxhat = dy * g
            {grads}
            inv = 1 / np.sqrt(self.var + self.eps)
            return inv / n * (n * dxhat - dxhat.sum(-1, keepdims=True)
                              - self.xhat * (dxhat * self.xhat).sum(-1, keepdims=True))


    @gradlab.register("layernorm")
    def build(cfg):
        return LayerNorm(cfg.d_model, cfg.eps)
"""

FOUND = dict(  # gamma and beta where gradlab looks (CONTRACT §2)
    params='self.params = {"gamma": np.ones(d), "beta": np.zeros(d)}; self.grads = {}',
    gamma_beta='self.params["gamma"], self.params["beta"]',
    grads='self.grads = {"gamma": (dy * self.xhat).reshape(-1, n).sum(0), "beta": dy.reshape(-1, n).sum(0)}')
HIDDEN = dict(  # gamma and beta in a tuple: no parameter is found, and the gradient check judges x alone
    params='self._state = (np.ones(d), np.zeros(d))',
    gamma_beta='self._state',
    grads='pass')
WRONG_DGAMMA = dict(FOUND, grads=FOUND["grads"].replace("(dy * self.xhat)", "dy"))


def _file(tmp_path, style):
    builds = tmp_path / "builds.txt"
    path = tmp_path / "my_layernorm.py"
    path.write_text(textwrap.dedent(LAYERNORM.format(builds=str(builds), **style)))
    return path, builds


def _builds(builds):
    return builds.read_text().count("built") if builds.exists() else 0


@pytest.mark.parametrize("isolate", [False, True])
def test_a_passing_first_check_shows_the_precondition_and_the_module_is_built_once(tmp_path, isolate):
    path, builds = _file(tmp_path, FOUND)
    result = gradlab.check("layernorm", impl=str(path), checks="gradient", seed=3, isolate=isolate)
    smoke, gradient = result.checks
    assert gradient.status == "pass", gradient.message
    assert smoke.status == "pass" and smoke.message == ("builds; forward and backward run; 2 parameters found "
                                                        "(shown by the 'gradient' check's own calls)")
    assert smoke.metrics == {"parameters": 2}
    assert _builds(builds) == 1         # the gradient check's module only: smoke built none of its own


def test_the_first_of_several_checks_shows_it_and_every_record_keeps_its_order(tmp_path):
    path, builds = _file(tmp_path, FOUND)
    seen = []
    plan = Plan(str(path), kinds="layernorm", checks=["determinism", "gradient"], seed=3, isolate=False)
    result = plan.run_kind("layernorm", on_record=lambda _, record: seen.append(record.name))
    assert seen == [c.name for c in result.checks] == ["smoke", "gradient", "determinism"]
    assert all(c.status == "pass" for c in result.checks), result.checks
    assert result.checks[0].message.endswith("(shown by the 'gradient' check's own calls)")


def test_parameters_that_are_not_found_still_fail_the_precondition(tmp_path):
    path, _ = _file(tmp_path, HIDDEN)
    # the gradient check alone passes (it judges x, the only tensor it finds)...
    alone = run_one(suite.resolve(["gradient"])[0], Plan(str(path), isolate=False).subject("layernorm"), 3)
    assert alone.status == "pass", alone.message
    # ...but its calls did not show the parameters CONTRACT §3 gives a LayerNorm: smoke runs, and fails
    result = gradlab.check("layernorm", impl=str(path), checks="gradient", seed=3, isolate=False)
    smoke, gradient = result.checks
    assert smoke.status == "fail" and "found no parameters" in smoke.message, smoke.message
    assert gradient.status == "skip" and gradient.message.startswith(
        "not judged: the 'smoke' precondition failed (layernorm: found no parameters"), gradient.message


def test_a_first_check_that_fails_keeps_its_record_when_the_precondition_then_passes(tmp_path):
    path, builds = _file(tmp_path, WRONG_DGAMMA)
    result = gradlab.check("layernorm", impl=str(path), checks="gradient", seed=3, isolate=False)
    smoke, gradient = result.checks
    assert gradient.status == "fail" and "gamma" in gradient.message, gradient.message
    assert smoke.status == "pass" and smoke.message == "builds; forward and backward run; 2 parameters found"
    assert _builds(builds) == 2        # the gradient check's, then smoke's own


def _init_stats(seed, isolate, checks=None):
    from pathlib import Path
    path = Path(__file__).parent / "zoo" / "art_init_ok_global.py"     # article 000's np.random.randn
    result = gradlab.check("init", impl=str(path), checks=checks, seed=seed, isolate=isolate)
    (record,) = [c for c in result.checks if c.name == "init_stats"]
    return record.status, json.dumps(record.details, sort_keys=True, default=str)    # each draw's statistics


def test_code_that_draws_from_the_global_generators_sees_the_same_numbers_in_every_run_of_a_seed():
    # each check seeds np.random's and random's generators with its own seed where the code runs: a run,
    # the same run again, the check replayed alone and the other mode all see the same draws
    first = _init_stats(7, True)
    assert first == _init_stats(7, True) == _init_stats(7, True, checks="init_stats") == _init_stats(7, False)
    assert first[1] != _init_stats(8, True)[1]       # and another seed, other draws


def test_a_check_in_gradlabs_own_process_puts_the_global_generators_back():
    import random
    import numpy as np
    np.random.seed(123)
    random.seed(123)
    expected = np.random.rand(), random.random()
    np.random.seed(123)
    random.seed(123)
    _init_stats(7, False)
    assert (np.random.rand(), random.random()) == expected
