"""`determinism` and NaN: the same NaN at the same places twice is repeatable (the NaN
is another check's finding, e.g. trajectory's); NaN in one run and a number in the
other is a difference, and named as one."""
import numpy as np

from gradlab.numerics.repeatable import difference
from gradlab.numerics.tolerance import Tol


def test_equal_nan_patterns_are_equal_and_unequal_ones_differ():
    a = np.array([[1.0, np.nan], [np.inf, -2.0]])
    assert difference(a, a.copy(), Tol(1e-12)) is None
    b = a.copy()
    b[0, 1] = 3.0                                   # NaN in one run, a number in the other
    index, first, second, _ = difference(a, b, Tol(1e-12))
    assert index == (0, 1) and np.isnan(first) and second == 3.0
    c = a.copy()
    c[1, 0] = -np.inf                               # +inf then -inf
    assert difference(a, c, Tol(1e-12))[0] == (1, 0)
    d = a.copy()
    d[1, 1] = -2.5                                  # an ordinary difference beside the NaN
    assert difference(a, d, Tol(1e-12))[0] == (1, 1)


def test_an_optimizer_giving_nan_at_the_same_places_twice_is_deterministic(run, zoo):
    """Adam bias-correcting with t = 0 gives NaN weights, the same in both runs: determinism used to
    report 'nan vs nan' as a difference and blame randomness or shared state."""
    record = run("adam", zoo("red_fn_bad_adam_t_after.py"), ["determinism"])["determinism"]
    assert record.status == "pass", record.message


def test_nan_in_one_run_only_is_a_difference(run, tmp_path):
    path = tmp_path / "nan_on_every_other_instance.py"
    path.write_text('''
import numpy as np
import gradlab

class SGD:
    built = 0                    # class level: every instance shares the count

    def __init__(self, lr):
        self.lr, self.number = lr, SGD.built
        SGD.built += 1

    def step(self, params, grads):
        scale = np.sqrt(1.0 - 2 * (self.number % 2))     # every other instance: sqrt(-1) = NaN
        for name in params:
            params[name] -= self.lr * scale * grads[name]

@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr)
''')
    record = run("sgd", str(path), ["determinism"])["determinism"]
    assert record.status == "fail", record.message
    assert "nan" in record.message and "share state between instances" in record.message, record.message
