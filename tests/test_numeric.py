"""The numerical engine on functions whose gradients are known exactly."""
import numpy as np
import pytest

from gradlab.numerics import engine as numeric
from gradlab.numerics.engine import Engine, Tensor, random_direction


def quadratic_problem(rng, n=(6, 5), dtype=np.float64, wrong=None):
    """f = sum(tanh(W) * C) + 0.5 |W|^2 with its exact gradient, optionally wrong at one element."""
    W = rng.standard_normal(n).astype(dtype)
    C = rng.standard_normal(n)

    def f():
        w = W.astype(np.float64)
        return float(np.sum(np.tanh(w) * C) + 0.5 * np.sum(w * w))

    w = W.astype(np.float64)
    grad = C * (1 - np.tanh(w) ** 2) + w
    if wrong is not None:
        index, factor = wrong
        grad[index] *= factor
    f_abs = float(np.sum(np.abs(np.tanh(w) * C)) + 0.5 * np.sum(w * w))
    return W, f, grad, f_abs


def engine_for(W, f, grad, f_abs, dtype=np.float64):
    eps = numeric.eps_of(dtype)
    return Engine(f, [Tensor("W", W, grad)], eps, eps, f_abs)


def test_random_direction_has_a_floor_and_zero_mean():
    d = random_direction(np.random.default_rng(0), (100_000,))
    assert np.abs(d).min() >= numeric.DIRECTION_FLOOR
    assert abs(d.mean()) < 0.02


@pytest.mark.parametrize("seed", range(5))
def test_correct_gradient_passes_with_a_tight_measured_tolerance(seed):
    rng = np.random.default_rng(seed)
    W, f, grad, f_abs = quadratic_problem(rng)
    e = engine_for(W, f, grad, f_abs)
    res = e.directional([random_direction(rng, W.shape)])
    assert res.ok, res
    assert res.relative_tolerance < 1e-8
    assert res.calls == 2      # a clean pass: f(+-h) alone


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", range(20))
def test_the_two_point_pass_decides_as_the_four_points_do(seed, dtype):
    """f(+-h) alone decides a clean pass only where the four points would pass too; everything else takes
    them all. Errors from none to well beyond the tolerance, at the engine's step and at a step so large
    that truncation dominates: the verdict is the four points' every time, and both ways are seen."""
    rng = np.random.default_rng(seed)
    quick = 0
    for r in (0.0, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-4):
        W, f, grad, f_abs = quadratic_problem(rng, dtype=dtype, wrong=((1, 2), 1 + r))
        e = engine_for(W, f, grad, f_abs, dtype)
        d = [random_direction(rng, W.shape)]
        for step in (None, 30 * e.step):
            got = e.directional(d, step=step, adapt=False)
            magnitude, count = e._allow_rounding(d)
            full = e._directional(d, step or e.step, magnitude, count)
            assert got.ok == full.ok, (r, step, got, full)
            if got.calls == 2:      # the two-point pass: never looser than the four points'
                assert got.tolerance <= full.tolerance
                quick += 1
            else:
                assert got == full
    assert 0 < quick < 14


@pytest.mark.parametrize("r", [1e-2, 1e-4])
def test_one_element_off_is_caught_and_bisection_names_it(r):
    rng = np.random.default_rng(1)
    W, f, grad, f_abs = quadratic_problem(rng, n=(40, 30), wrong=((17, 4), 1 + r))
    e = engine_for(W, f, grad, f_abs)
    d = random_direction(rng, W.shape)
    assert not e.directional([d]).ok
    found = e.bisect(0, d)
    assert found.elements[0].index == (17, 4)
    el = found.elements[0]
    assert el.analytical == pytest.approx(grad[17, 4])
    assert el.numerical == pytest.approx(grad[17, 4] / (1 + r), rel=1e-7)
    assert found.calls < 0.1 * 2 * W.size        # far fewer than the naive loop's 2 per element


def test_element_map_matches_the_exact_gradient_and_finds_the_element():
    rng = np.random.default_rng(2)
    W, f, grad, f_abs = quadratic_problem(rng, wrong=((3, 1), 1.01))
    e = engine_for(W, f, grad, f_abs)
    m = e.element_map(0)
    exact = grad.copy()
    exact[3, 1] /= 1.01
    assert np.allclose(m.numerical, exact, atol=1e-8)
    assert m.worst[0].index == (3, 1)
    assert m.calls == 2 * W.size


def test_arrays_are_restored_bit_for_bit():
    rng = np.random.default_rng(3)
    W, f, grad, f_abs = quadratic_problem(rng, wrong=((0, 0), 2.0))
    W[1, 1] = -0.0                              # even the sign of zero survives
    before = W.tobytes()
    e = engine_for(W, f, grad, f_abs)
    d = random_direction(rng, W.shape)
    e.directional([d])
    e.bisect(0, d)
    e.element_map(0)
    assert W.tobytes() == before


def test_restored_even_when_f_raises():
    W = np.arange(6.0).reshape(2, 3)
    before = W.tobytes()
    calls = {"n": 0}

    def f():
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("student code blew up")
        return float(W.sum())

    e = Engine(f, [Tensor("W", W, np.ones_like(W))], numeric.EPS["float64"], numeric.EPS["float64"], 15.0)
    with pytest.raises(RuntimeError):
        e.directional([np.ones_like(W)])
    assert W.tobytes() == before


def test_float32_arrays_use_the_effective_perturbation():
    """float32 rounds W + h d; the engine compares against the step actually taken."""
    rng = np.random.default_rng(4)
    W, f, grad, f_abs = quadratic_problem(rng, dtype=np.float32)
    e = Engine(f, [Tensor("W", W, grad)], numeric.EPS["float32"], numeric.EPS["float32"], f_abs)
    for _ in range(5):
        assert e.directional([random_direction(rng, W.shape)]).ok


def test_kink_at_zero_is_recognised_not_reported_as_a_wrong_gradient():
    """f = sum(relu(v) * c) with some v exactly 0: relu'(0) := 0 disagrees with
    the central difference (which averages both sides), and the engine says kink."""
    rng = np.random.default_rng(5)
    v = rng.standard_normal(20)
    v[::4] = 0.0
    c = rng.uniform(0.5, 1.5, 20)

    def f():
        return float(np.sum(np.maximum(v, 0) * c))

    grad = c * (v > 0)
    e = Engine(f, [Tensor("v", v, grad)], numeric.EPS["float64"], numeric.EPS["float64"], float(np.abs(v * c).sum()))
    res = e.directional([random_direction(rng, v.shape)])
    assert not res.ok and res.kinky


def test_the_element_map_tells_a_kink_from_a_wrong_element_where_f_curves():
    """Element by element, one-sided slopes that differ mean a kink only when the difference stays at half
    the step: a strongly curved f's differ by h f'' too, and there a small error must still be wrong."""
    rng = np.random.default_rng(8)
    v = rng.standard_normal(12)
    v[:4] = 0.0                                   # on the ReLU's kink
    c = rng.uniform(0.5, 1.5, 12)

    def f():
        return float(np.sum(np.maximum(v, 0) * c) + 50 * np.sum(v * v))

    grad = c * (v > 0) + 100 * v
    grad[7] *= 1 + 1e-7                           # off by a little, where f curves: h f'' is 10x the error
    f_abs = float(np.sum(np.maximum(v, 0) * c) + 50 * np.sum(v * v))
    e = Engine(f, [Tensor("v", v, grad)], numeric.EPS["float64"], numeric.EPS["float64"], f_abs)
    m = e.element_map(0)
    off = np.abs(grad - m.numerical) > m.allowed
    assert off[:4].all() and m.kinks[:4].all()    # the kinks: off, and explained
    assert off[7] and not m.kinks[7]              # the wrong element: off, and not a kink
    assert not m.kinks[8:].any() and not m.kinks[4:7].any()


def test_a_small_tensor_is_judged_at_its_own_scale_and_rounding_residue_at_the_modules():
    """float32: a tensor 1e-3 of the module's size, off by 1e-2 of itself, fails; a tensor that is only
    rounding residue (a few eps of the module's largest entry: 0 in theory) passes whatever its entries."""
    rng = np.random.default_rng(9)
    big, small, residue = rng.standard_normal(50), rng.standard_normal(6), rng.standard_normal(6)
    c_big, c_small = rng.standard_normal(50), 1e-3 * rng.standard_normal(6)

    def f():
        return float(big @ c_big + small @ c_small)       # residue does not move f: its true gradient is 0

    eps = numeric.EPS["float32"]
    for off, noise, ok in ((0.0, 2 * eps, True), (1e-2, 2 * eps, False)):
        grads = [c_big.copy(), c_small * (1 + off), noise * float(np.abs(c_big).max()) * rng.standard_normal(6)]
        e = Engine(f, [Tensor("big", big, grads[0]), Tensor("small", small, grads[1]),
                       Tensor("residue", residue, grads[2])], numeric.EPS["float64"], eps,
                   float(np.abs(big * c_big).sum() + np.abs(small * c_small).sum()))
        res = [e.directional(e.tensor_dirs([random_direction(rng, a.shape) for a in (big, small, residue)], {i}))
               for i in range(3)]
        assert res[2].ok and res[0].ok
        assert res[1].ok == ok, (off, res[1])


def test_tie_in_a_max_is_a_kink():
    a = np.array([1.0, 1.0, -2.0])                # a tie between the first two

    def f():
        return float(np.max(a))

    e = Engine(f, [Tensor("a", a, np.array([1.0, 0.0, 0.0]))], numeric.EPS["float64"], numeric.EPS["float64"], 1.0)
    res = e.directional([np.array([1.0, -1.0, 0.5])])
    assert res.kinky


def test_smooth_wrong_gradient_is_not_mistaken_for_a_kink():
    rng = np.random.default_rng(6)
    W, f, grad, f_abs = quadratic_problem(rng, wrong=((2, 2), 1.5))
    e = engine_for(W, f, grad, f_abs)
    res = e.directional([random_direction(rng, W.shape)])
    assert not res.ok and not res.kinky


def test_naive_loop_is_the_plain_central_difference():
    rng = np.random.default_rng(7)
    W, f, grad, _ = quadratic_problem(rng)
    assert np.allclose(numeric.elementwise_gradient(f, W), grad, atol=1e-8)
