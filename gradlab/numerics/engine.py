"""The numerical engine: finite differences of a scalar objective f() with
respect to arrays that are perturbed in place and always restored exactly.

f() evaluates the scalarised objective (e.g. sum(forward(x) * g)) from the
*current* contents of the arrays; the engine only ever writes into them and
puts back a bit-identical copy of the original after every evaluation.

Three tools, from cheap to thorough:

- `Engine.directional(dirs)`: the derivative of f along one random direction
  d (zero-mean Gaussian, each component at least DIRECTION_FLOOR in size, so
  every element counts) against <analytical, d>. Central differences at
  steps h and h/2. Their difference measures the truncation error, a fourth
  difference of the five points (with f at the centre) measures the rounding
  noise of f; the tolerance is SAFETY times that measured error, plus the
  rounding allowed to the analytical side by its dtype. No fixed rtol: the
  check is as sharp as the arithmetic allows. A clean pass needs only the
  two evaluations at +-h: when they agree within the tolerance's floor (no
  truncation, the least noise), the four would agree too (_two_point).
- `Engine.bisect(i)`: group testing inside tensor i: directional checks on
  halves of the failing range, descending into the halves that fail, down to
  single elements (about 8 log2(n) evaluations for one bad element).
- `Engine.element_map(i)`: the full per-element central-difference map
  (2 evaluations per element): the naive loop, kept for small tensors and for
  diagnosis, which needs the whole map.

A kink (ReLU at 0, a tie in a max) makes f non-smooth along d; the five
points tell: for smooth f the second difference at step h is 4x the one at
h/2, at a kink it is 2x (or less). `Directional.kinky` says so, and the caller
resamples its input rather than report a false failure.
"""
import contextlib
import math
from dataclasses import dataclass, field

import numpy as np

from gradlab.numerics import tolerance as _tolerance
from gradlab.numerics.tolerance import (ANALYTICAL_ROUNDING, ELEMENT_ROUNDING, EPS, HALF_ROUNDING, ROUNDING_ONLY,
                                        SAFETY)

eps_of = _tolerance.eps_of     # EPS and eps_of are the table's own, here too for the checks that read them here

DIRECTION_FLOOR = 0.5        # |d_i| >= this: no element hides behind a near-zero component
# SAFETY, ANALYTICAL_ROUNDING, ELEMENT_ROUNDING, HALF_ROUNDING: gradlab.numerics.tolerance (the one table)
STEP = {"float64": 3e-6, "float32": 3e-3}          # first directional step, by numerics dtype
ELEMENT_STEP = {"float64": 1e-6, "float32": 3e-3}  # per-element step (relative to max(1, |value|))
TARGET_RESOLUTION = 1e-5     # shrink the step once if one typical element's error of this size would hide
KINK_FRACTION = 0.1          # a kink explains a failure when its jump is >= this fraction of it
KINK_NOISE = 20.0            # ... and clearly above the noise
NOISE_CAP = 100.0            # f's measured rounding noise is trusted up to this x eps * sum|terms|
MAX_GROUPS = 4               # bisection follows at most this many failing groups per level
UNSTABLE_FRACTION = 0.1      # a first step whose error bound is this fraction of the derivative's size


_POOL_BITS = 16
_POOL_SIZE = 1 << _POOL_BITS
_pool = None


def random_direction(rng, shape, floor=DIRECTION_FLOOR):
    """Zero-mean, with a magnitude floor: sign * (floor + |z|), z Gaussian.

    Shifted, not clamped: max(|z|, floor) would give a third of the components
    exactly the same size, and two equal components of the same sign hide an
    error that swaps them (a transposed 2 x 2 gradient passed 1 run in ~14).

    Drawn as an independent random sign per component (one random bit each)
    times a Gaussian magnitude read from a fixed pool of 65,536 draws at a
    random offset (floor=0 gives plain standard normals). The signs carry the randomness that matters (no bug can
    line up with them); fresh normals for every run would cost more than the
    module calls of a small check."""
    global _pool
    if _pool is None:
        magnitudes = np.abs(np.random.default_rng(20240611).standard_normal(_POOL_SIZE))
        _pool = np.concatenate([magnitudes, magnitudes])
    n = math.prod(shape)
    if n > _POOL_SIZE:
        reps = -(-n // _POOL_SIZE)
        return np.concatenate([random_direction(rng, (_POOL_SIZE,), floor) for _ in range(reps)])[:n].reshape(shape)
    # the generator's raw 64-bit words: the first's top 16 bits pick the offset, the rest are the signs
    # (Generator.integers and .bytes cost ~25 us a call in a check, more than this whole function otherwise)
    words = rng.bit_generator.random_raw(1 + (n + 63) // 64).astype("<u8", copy=False)
    offset = int(words[0] >> np.uint64(64 - _POOL_BITS))
    d = _pool[offset:offset + n] + floor
    signs = np.unpackbits(words[1:].view(np.uint8), count=n).astype(np.uint64)
    signs <<= np.uint64(63)
    d.view(np.uint64)[...] ^= signs                 # flip the sign bit where the random bit is 1
    return d.reshape(shape)


def point_value(d, s, original64, dtype):
    """original + s * d as a directional check's point holds it: computed in float64 from the original's
    float64 copy, then rounded to the array's dtype. A worker computes a point with this function too, so
    both sides hold the same bits."""
    moved = d * s
    moved += original64
    return moved if dtype == np.float64 else moved.astype(dtype)


class holding:
    """`with holding(writes): call()`: arrays holding given contents during one call, writes =
    [(array, contents)] or [(array, d, s)] for the point original + s * d (point_value's bits). Each
    is put back bit for bit after the call, whatever it did. Subject.forwards' points in gradlab's own
    process and the worker's batches of calls (it binds this before any student code runs) both hold
    parameters through it."""

    def __init__(self, writes):
        self.writes, self.saved = writes, []

    def __enter__(self):
        try:
            for array, value, *step_size in self.writes:
                before = array.copy()
                if step_size:
                    if not isinstance(step_size[0], float) or value.dtype != np.float64:
                        raise ValueError("a bad point")
                    if type(array) is np.ndarray and array.dtype == np.float64 and value.shape == array.shape:
                        self.saved.append((array, before))
                        np.multiply(value, step_size[0], out=array)     # point_value's bits, in place
                        array += before
                        continue
                    value = point_value(value, step_size[0], before.astype(np.float64, copy=False), array.dtype)
                if value.shape != array.shape or value.dtype != array.dtype:
                    raise ValueError("contents that do not fit their array")
                self.saved.append((array, before))
                array[...] = value
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for array, before in reversed(self.saved):
            array[...] = before
        return False


@dataclass
class Tensor:
    """One thing we differentiate with respect to."""
    name: str                 # "x" for the input, else the dotted parameter name
    array: np.ndarray         # the live array (the student's own, or its float64 twin's)
    analytical: np.ndarray    # the student's gradient (float64 copy), captured before any perturbation
    rounding: np.ndarray = None   # its own error, measured per element (signed; tolerance.twin_rounding): the
                                  # allowance is then float64's eps-based one plus this error along the direction
                                  # (None: eps_analytical's eps-based allowance)
    eps: float = None             # its analytical side's rounding unit when coarser than eps_analytical (a float64
                                  # gradient of float32 numbers: a backward that computes this one in float32)


@dataclass
class Directional:
    """One directional comparison: residual = numerical - analytical along d."""
    analytical: float         # <a, d>
    numerical: float          # Richardson-extrapolated central difference along d
    residual: float           # numerical - analytical
    tolerance: float
    truncation: float         # |D(h) - D(h/2)|: the measured truncation error
    noise: float              # rounding noise of f / h
    kink: float               # |S(h) - 4 S(h/2)| / h: 0 for smooth f, the slope jump at a kink
    magnitude: float          # sum |a_i d_i|: the scale errors are relative to
    count: int                # elements the direction touches
    step: float
    calls: int
    noise_ratio: float = 0.0  # measured rounding of f / its floor eps * sum|terms|
    raw_noise: float = 0.0    # the measured noise of the derivative along d, uncapped (2 x f's noise / h)
    unstable: bool = False    # a second, smaller step contradicted the first beyond both error bounds

    @property
    def ok(self):
        return abs(self.residual) <= self.tolerance

    @property
    def kinky(self):
        """f is not smooth along d here, and that explains the disagreement."""
        return (not self.ok and self.kink > KINK_FRACTION * abs(self.residual)
                and self.kink > KINK_NOISE * self.noise)

    @property
    def error(self):
        """The residual relative to sum |a_i d_i|."""
        return abs(self.residual) / max(self.magnitude, 1e-300)

    @property
    def relative_tolerance(self):
        return self.tolerance / max(self.magnitude, 1e-300)

    @property
    def wrongness(self):
        """(error, tolerance) relative to the larger of the two sides' sizes, for messages: a tensor whose
        analytical gradient is ~0 where the numerical one is not is wrong by 1 of its size, not by 1e11
        of its (zero) analytical size."""
        scale = max(self.magnitude, abs(self.numerical), 1e-300)
        return abs(self.residual) / scale, self.tolerance / scale

    @property
    def resolution(self):
        """The smallest relative error in one typical element this test would catch."""
        return self.tolerance / max(self.magnitude / max(self.count, 1), 1e-300)


@dataclass
class Element:
    """One offending element: where, and both values."""
    index: tuple
    analytical: float
    numerical: float
    tolerance: float

    @property
    def error(self):
        return abs(self.analytical - self.numerical)


@dataclass
class ElementMap:
    numerical: np.ndarray     # full per-element map, float64
    tolerance: float          # per element (absolute)
    calls: int
    worst: list = field(default_factory=list)   # [Element], worst first
    allowed: object = None    # per element: tolerance + any idiom allowance (array of the tensor's shape)
    kinks: object = None      # per element (bool): f has a kink within the element's steps, which explains
                              # its disagreement (the one-sided slopes differ by at least KINK_FRACTION of it)


@dataclass
class Bisection:
    elements: list            # [Element] found, worst first
    groups_failed: int        # the most failing groups seen at one level
    groups_tested: int
    widespread: bool          # more groups failed at some level than were followed
    calls: int
    kinks: int = 0            # single elements that disagree only as a kink explains (not in `elements`)


class Engine:
    """Directional checks, bisection and per-element maps over `tensors`, with
    f() evaluated from the arrays' current contents.

    f0: f() at the unperturbed arrays, if the caller already has it (computed exactly as f() would);
    eps_numeric: the rounding unit of f's arithmetic (the dtype the numerics run in);
    eps_analytical: that of the analytical gradients (the student's dtype);
    eps_measured: for tensors whose rounding was measured (Tensor.rounding), the unit of what the measurement
    leaves out: the float64 copy's own rounding (default), or a sound idiom's floor the copy shares;
    f_abs: the size of the terms summed into f (e.g. sum |out * g|), for a floor on f's noise;
    idiom: (dirs, products) -> an extra allowance along dirs for what a sound numerical idiom in f may change,
    products being analytical * d per tensor (None where d is None), as the engine computed them (the
    gradient check passes gradlab.numerics.tolerance's; default none: the engine itself is exact maths);
    points: (dirs, steps) -> [f at original + s * d for each s in steps], in order, each tensor holding
    point_value(d, s, its original) there (its own contents where d is None) and its original contents again
    after each: what f() would give with those contents written in (default: exactly that). A directional
    check asks for its points two at a time (+-h, then +-h/2 only when needed), so a caller whose module runs
    in another process makes one request of each pair (and may have point_value computed there, from d and
    s: the same bits).
    """

    def __init__(self, f, tensors, eps_numeric, eps_analytical, f_abs, step=None, element_step=None, f0=None,
                 idiom=None, eps_measured=None, points=None):
        self._f = f
        self._points = points
        self._idiom = idiom      # None: no allowance (and the products it takes are not formed)
        self.tensors = tensors
        self.eps_numeric = eps_numeric
        self.eps_analytical = eps_analytical
        self.eps_measured = eps_measured or EPS["float64"]
        self.f_abs = float(f_abs)
        numerics = "float64" if eps_numeric <= EPS["float64"] else "float32"
        self.step = step or STEP[numerics]
        self.element_step = element_step or ELEMENT_STEP[numerics]
        self.calls = 0
        self.noise_f = eps_numeric * self.f_abs   # rounding noise of f: a floor, raised by every measurement
        self._kept = None                          # the arrays' original contents, copied on first use
        self._scratch, self._steps = None, [None] * len(tensors)      # see _step_buffer
        self._largests = [None] * len(tensors)
        # f at the unperturbed point; a caller that just ran forward there may pass it in (one call saved)
        self.f0 = self.evaluate() if f0 is None else float(f0)

    def _kept_originals(self):
        """(the arrays' contents when the engine was made, the same in float64): copied when first
        needed (nothing writes into them before; a worker rehearsing the check's first pass never needs them)."""
        if self._kept is None:
            originals = [t.array.copy() for t in self.tensors]
            self._kept = (originals, [o if o.dtype == np.float64 else o.astype(np.float64) for o in originals])
        return self._kept

    @property
    def _originals(self):
        return self._kept_originals()[0]

    @property
    def _originals64(self):
        return self._kept_originals()[1]

    # ---- evaluating f at perturbed points, restoring exactly ---------------
    def evaluate(self):
        self.calls += 1
        return float(self._f())

    def _evaluations(self, dirs, steps):
        """[(f, <a, the step actually taken>)] at original + s * d for each s in steps, in order."""
        return self._start(dirs, steps)()

    def _start(self, dirs, steps):
        """Start evaluating f at original + s * d for each s in steps; -> collect(), which returns
        [(f, <a, the step actually taken>)] in order. In this process the points are evaluated at once;
        with `points` (a module in a worker), what the worker may compute meanwhile is awaited only by
        collect() (points may return a callable for the values), and the steps' dot products are
        worked out in between."""
        if self._points is None:
            out = self._at(dirs, steps)
            return lambda: out
        self.calls += len(steps)
        pending = self._points(dirs, steps)
        dots = [self._dot(dirs, s) for s in steps]

        def collect():
            values = [float(v) for v in (pending() if callable(pending) else pending)]
            if len(values) != len(steps):
                raise ValueError(f"{len(steps)} points evaluated as {len(values)} values")
            return list(zip(values, dots))
        return collect

    def _at(self, dirs, steps):
        """[(f, <a, the step actually taken>)] at original + s * d (cast to the arrays' dtypes) for each
        s in steps, one point at a time (no more memory than one point's): point_value's bits, written in
        place, f(). Every point overwrites every array it touches, so they are restored once, exactly,
        after the last (and when the student's code raises)."""
        touched = [i for i, d in enumerate(dirs) if d is not None]
        originals = self._originals     # copied before the first write
        out = []
        try:
            for s in steps:
                dot = self._write_point(dirs, s)
                out.append((self.evaluate(), dot))
            return out
        finally:
            for i in touched:
                self.tensors[i].array[...] = originals[i]

    def _write_point(self, dirs, s):
        """Write original + s * d into the arrays (point_value's bits); -> <a, the step actually taken>,
        computed as _dot computes it."""
        dot = 0.0
        for i, d in enumerate(dirs):
            if d is None:
                continue
            t, o64 = self.tensors[i], self._originals64[i]
            if type(t.array) is np.ndarray and t.array.dtype == np.float64:   # in place: no copy, no allocation
                np.multiply(d, s, out=t.array)
                t.array += o64
                step = np.subtract(t.array, o64, out=self._step_buffer(i))   # the step actually taken
            else:
                step = d * s
                step += o64
                t.array[...] = step                   # rounds to the array's dtype
                step[...] = t.array                   # the value actually written
                step -= o64                           # the step actually taken
            dot += float(np.vdot(t.analytical, step))
        return dot

    def _step_buffer(self, i):
        """A float64 array of tensor i's shape for the steps taken: views of one buffer, as large as
        the largest tensor (one allocation per engine)."""
        view = self._steps[i]
        if view is None:
            if self._scratch is None:
                self._scratch = np.empty(max(t.array.size for t in self.tensors), dtype=np.float64)
            view = self._steps[i] = self._scratch[:self.tensors[i].array.size].reshape(self.tensors[i].array.shape)
        return view

    def _dot(self, dirs, s):
        """<a, the step actually taken> to original + s * d (point_value's bits): what _write_point
        computes, without writing (the points are evaluated elsewhere)."""
        dot = 0.0
        for i, d in enumerate(dirs):
            if d is None:
                continue
            t, o64 = self.tensors[i], self._originals64[i]
            if t.array.dtype == np.float64:         # point_value's arithmetic, in place
                step = np.multiply(d, s, out=self._step_buffer(i))
                step += o64
                step -= o64
            else:
                step = point_value(d, s, o64, t.array.dtype) - o64
            dot += float(np.vdot(t.analytical, step))
        return dot

    def _largest(self, i):
        """max |analytical| of tensor i (0 for an empty one), worked out once."""
        return self._magnitudes(i)[1]

    def _magnitudes(self, i):
        """(|analytical| of tensor i, its largest entry), worked out once: every directional check
        (a bisection makes dozens) weighs |d| by it."""
        if self._largests[i] is None:
            size = np.abs(self.tensors[i].analytical)
            self._largests[i] = (size, float(size.max(initial=0.0)))
        return self._largests[i]

    # ---- one directional comparison ----------------------------------------
    def directional(self, dirs, step=None, adapt=True):
        """Compare <a, d> with the derivative of f along d. dirs: one array (or
        None) per tensor. A clean pass is judged from f(+-h) alone (_two_point); anything else takes
        f(+-h/2) too. The step is shrunk once when truncation dominates and the test would miss an error
        of TARGET_RESOLUTION in one element."""
        h = step or self.step
        calls = self.calls
        # the student's calls first: what follows does not need their values, so a module in a worker works
        # on them meanwhile (and a rehearsal of this check there, execution/rehearsal.py, ends at them)
        collect = self._start(dirs, (h, -h))
        magnitude, count = self._allow_rounding(dirs)
        outer = collect()
        quick = self._two_point(h, magnitude, count, outer, calls)
        if quick.ok and (not adapt or quick.resolution <= TARGET_RESOLUTION):
            return quick
        result = self._directional(dirs, h, magnitude, count, outer + self._evaluations(dirs, (h / 2, -h / 2)),
                                   calls)
        if adapt and result.resolution > TARGET_RESOLUTION and result.truncation > 4 * result.noise:
            factor = min(0.5, max(1 / 64, (result.noise / result.truncation) ** (1 / 3)))
            again = self._directional(dirs, h * factor, magnitude, count)
            again.calls += result.calls
            # for a smooth f the smaller step's estimate lies within the first's error bound, and the first's
            # bound is small beside the derivative; when either fails and the smaller step then disagrees, f is
            # not smooth at the scale of the step (a kink crossed, or quantised: float16 inside, a rounding)
            first = result
            if again.tolerance < first.tolerance:
                result = again
            else:
                result.calls = again.calls
            result.unstable = not result.ok and (
                abs(again.numerical - first.numerical) > first.tolerance + again.tolerance
                or first.tolerance > UNSTABLE_FRACTION * max(magnitude, 1e-300))
        return result

    def _allow_rounding(self, dirs):
        """Work out the rounding the analytical side is allowed along dirs (self._rounding);
        -> (sum |a_i d_i|, the number of elements the direction touches)."""
        magnitude, rounding, count = 0.0, 0.0, 0
        measured, measured_spread = 0.0, 0.0     # tensors whose rounding was measured (Tensor.rounding)
        half = self.eps_analytical >= EPS["float16"]
        # a tensor's rounding is relative to its own largest entry, unless that entry is itself within rounding of
        # the module's largest (a key bias: its gradient is 0 in theory, the rounding of the key gradients it is
        # summed from in practice); in float16, always relative to the module's largest
        module_max = max(self._largest(i) for i in range(len(self.tensors)))
        products = [None] * len(dirs)    # analytical * d, formed only for an idiom and float16
        for i, (t, d) in enumerate(zip(self.tensors, dirs)):
            if d is None:
                continue
            size, largest = self._magnitudes(i)
            part = float(np.vdot(size, np.abs(d)))        # sum |a_i d_i|
            norm = math.sqrt(float(np.vdot(d, d)))
            magnitude += part
            # each element may be off by a few eps of the tensor's largest entry (sums that cancel):
            # those errors add up like a random walk, hence the norm of d. In float16 the worst case
            # (every element's own rounding aligned with d, `part`) is 1e-2 of the whole gradient and would
            # let a 3x gradient pass: there the elements' own rounding adds up like a random walk too.
            # (and 1 eps of the largest entry, not 4: 4 x float16's eps of it is 13% of a typical entry)
            count += int(np.count_nonzero(d))
            if self._idiom is not None or half:
                products[i] = t.analytical * d
            if t.rounding is not None:
                # measured: the analytical side's error along d is exactly <rounding, d>; eps_measured's on top
                measured += float(np.vdot(t.rounding, d))
                measured_spread += part + 4 * largest * norm
                continue
            own = float(np.sqrt((products[i] ** 2).sum())) if half else part
            cancel = 1 if half else 4
            if largest <= ROUNDING_ONLY * self.eps_analytical * module_max:
                # rounding residue: at the module's scale and precision (its few bits may read as float32 numbers)
                rounding += own + cancel * module_max * norm
                continue
            coarser = t.eps / self.eps_analytical if t.eps else 1.0     # (t.eps is only set when coarser)
            rounding += coarser * (own + cancel * (module_max if half else largest) * norm)
        self._rounding = ((HALF_ROUNDING if half else ANALYTICAL_ROUNDING) * self.eps_analytical * rounding
                          + ANALYTICAL_ROUNDING * self.eps_measured * measured_spread + abs(measured)
                          + (self._idiom(dirs, products) if self._idiom is not None else 0.0))
        return magnitude, count

    def _two_point(self, h, magnitude, count, points, calls):
        """The comparison from f(+-h) alone, judged against the tolerance's floor: SAFETY x the rounding
        floor of f's central difference (2 eps * sum|terms| / h) plus the analytical side's rounding.

        Sound as a clean pass: the four-point tolerance (_directional) is never below this one (its
        noise is at least the floor, its truncation at least 0), and Richardson's residual differs from
        this one by at most 4/3 of the measured truncation, which that tolerance covers SAFETY times. So
        whatever passes here passes there; what does not pass here takes the other two points. (The
        truncation and the noise are not measured here: 0 and the floor.)"""
        (fp, ap), (fm, am) = points
        numerical, analytical = (fp - fm) / (2 * h), (ap - am) / (2 * h)
        noise = 2 * self.eps_numeric * self.f_abs / h
        return Directional(analytical, numerical, numerical - analytical, SAFETY * noise + self._rounding, 0.0,
                           noise, 0.0, magnitude, count, h, self.calls - calls)

    def _directional(self, dirs, h, magnitude, count, points=None, calls=None):
        """One directional comparison at step h, from f at +-h and +-h/2; points: those four evaluations,
        when already made (with self.calls at `calls` before them)."""
        if points is None:
            calls = self.calls
            points = self._evaluations(dirs, (h, -h, h / 2, -h / 2))
        (fp, ap), (fm, am), (fp2, ap2), (fm2, am2) = points
        n1, a1 = (fp - fm) / (2 * h), (ap - am) / (2 * h)
        n2, a2 = (fp2 - fm2) / h, (ap2 - am2) / h
        r1, r2 = n1 - a1, n2 - a2
        residual = (4 * r2 - r1) / 3                      # Richardson: the h^2 error cancels
        truncation = abs(r1 - r2)
        # Second differences: S(h) = h^2 f'' for smooth f, h * (slope jump) at a kink.
        s1 = fp + fm - 2 * self.f0
        s2 = fp2 + fm2 - 2 * self.f0
        # Their combination S(h) - 4 S(h/2) is the fourth difference of the five points:
        # (h/2)^4 f'''' (negligible at these steps) plus rounding noise -- or, at a kink,
        # the slope jump times h. Read as noise it measures f's rounding, but never more
        # than NOISE_CAP x the floor eps * sum|terms|: beyond that it is a kink, not noise.
        fourth = s1 - 4 * s2
        floor = self.eps_numeric * self.f_abs
        measured = abs(fourth) / np.sqrt(70.0)
        noise_f = max(floor, min(measured, NOISE_CAP * floor))
        self.noise_f = max(self.noise_f, noise_f)
        noise = 2 * noise_f / h                           # rounding of the Richardson combination
        tolerance = SAFETY * (truncation + noise) + self._rounding
        kink = abs(fourth) / h
        numerical = (4 * n2 - n1) / 3
        return Directional(a2, numerical, residual, tolerance, truncation, noise, kink, magnitude, count, h,
                           self.calls - calls, measured / max(floor, 1e-300), 2 * measured / h)

    def tensor_dirs(self, full, which):
        """The joint direction `full` restricted to the tensors in `which`."""
        return [d if i in which else None for i, d in enumerate(full)]

    # ---- localisation ---------------------------------------------------------
    def bisect(self, i, d, max_groups=MAX_GROUPS):
        """Group testing inside tensor i along d (its part of the direction):
        test both halves of every failing flat range, keep the failing ones
        (at most max_groups per level, the worst first), down to single elements."""
        calls = self.calls
        t = self.tensors[i]
        n = t.array.size
        flat_d = d.reshape(-1)
        frontier = [(0, n)]
        found, most_failed, tested, widespread, kinks = [], 0, 0, False, 0
        while frontier:
            failing = []
            for lo, hi in frontier:
                if hi - lo == 1:
                    found.append((lo, None))
                    continue
                mid = (lo + hi) // 2
                for a, b in ((lo, mid), (mid, hi)):
                    res = self.directional(self._range_dirs(i, flat_d, a, b), adapt=False)
                    tested += 1
                    if not res.ok and not res.kinky:
                        failing.append((abs(res.residual) / res.tolerance, a, b, res))
                    elif res.kinky and b - a == 1:
                        kinks += 1
            most_failed = max(most_failed, len(failing))
            if len(failing) > max_groups:
                widespread = True
            failing.sort(key=lambda item: -item[0])
            frontier = []
            for _, a, b, res in failing[:max_groups]:
                if b - a == 1:
                    found.append((a, res))
                else:
                    frontier.append((a, b))
        elements = []
        for k, res in found:
            if res is None:
                continue
            index = tuple(int(j) for j in np.unravel_index(k, t.array.shape))
            dk = flat_d[k]
            a = float(t.analytical[index])
            elements.append(Element(index, a, a + res.residual / dk, res.tolerance / abs(dk)))
        elements.sort(key=lambda e: -e.error / max(e.tolerance, 1e-300))
        return Bisection(elements, most_failed, tested, widespread, self.calls - calls, kinks)

    def _range_dirs(self, i, flat_d, lo, hi):
        part = np.zeros(flat_d.size)
        part[lo:hi] = flat_d[lo:hi]
        dirs = [None] * len(self.tensors)
        dirs[i] = part.reshape(self.tensors[i].array.shape)
        return dirs

    def element_map(self, i, top=5, allowance=None):
        """The full per-element central-difference map of tensor i (the naive loop). allowance: an
        array (tensor i's shape) added to each element's tolerance for what a sound idiom may change;
        the worst elements are those furthest beyond tolerance + allowance."""
        calls = self.calls
        t = self.tensors[i]
        num = np.zeros(t.array.shape, dtype=np.float64)
        bend = np.zeros(t.array.shape, dtype=np.float64)
        for index in np.ndindex(t.array.shape):
            num[index], bend[index] = self._element_slopes(i, index, 1.0)
        scale = max(float(np.max(np.abs(t.analytical), initial=0.0)), float(np.max(np.abs(num), initial=0.0)))
        # rounding of f over the step, the analytical side's own rounding, and a
        # truncation allowance (h^2 relative: 1e-12 at float64's step, 1e-5 at float32's)
        eps_an = self.eps_analytical if t.rounding is None else self.eps_measured
        eps_an = max(eps_an, t.eps or 0.0)
        tolerance = (SAFETY * self.noise_f / self.element_step + ELEMENT_ROUNDING * eps_an * scale
                     + SAFETY * self.element_step ** 2 * scale)
        err = np.abs(t.analytical - num)
        allowed = tolerance + (0.0 if allowance is None else np.asarray(allowance, dtype=np.float64))
        if t.rounding is not None:
            allowed = allowed + np.abs(t.rounding)      # measured per element (Tensor.rounding)
        allowed = np.broadcast_to(allowed, err.shape)
        kinks = np.zeros(t.array.shape, dtype=bool)
        for index in zip(*np.nonzero((err > allowed) & (np.abs(bend) > KINK_FRACTION * err))):
            kinks[index] = self._element_kink(i, index, bend[index], err[index])
        order = np.argsort(err - allowed, axis=None)[::-1][:top]
        worst = [Element(tuple(int(j) for j in np.unravel_index(k, t.array.shape)), float(t.analytical.flat[k]),
                         float(num.flat[k]), float(allowed.flat[k]))
                 for k in order if err.flat[k] > 0]
        return ElementMap(num, tolerance, self.calls - calls, worst, allowed, kinks)

    def _element_slopes(self, i, index, fraction):
        """(the central difference of f in element `index` of tensor i, its right slope minus its left
        slope), at fraction x the element step (the steps actually taken: the array's dtype rounds them).
        The slopes differ by a kink's jump (ReLU at exactly 0, a tie in a max), by ~h f'' for a smooth f."""
        arr, original = self.tensors[i].array, self._originals[i][index]
        original64 = float(self._originals64[i][index])
        h = fraction * self.element_step * max(1.0, abs(original64))
        up, down = arr.dtype.type(original64 + h), arr.dtype.type(original64 - h)
        with perturbed_to(arr, index, up, original):
            plus = self.evaluate()
        with perturbed_to(arr, index, down, original):
            minus = self.evaluate()
        central = (plus - minus) / (float(up) - float(down))
        right, left = float(up) - original64, original64 - float(down)
        if right <= 0 or left <= 0:      # no step on one side: no kink can be seen
            return central, 0.0
        return central, (plus - self.f0) / right - (self.f0 - minus) / left

    def _element_kink(self, i, index, bend, err):
        """Whether a kink within the element's steps explains its disagreement err. The slopes' difference at
        half the step: a smooth f's halves with the step, a kink's jump stays; bend(h) - 2 bend(h/2) is the
        jump, as Directional.kink is along a direction, but with no other element's jump to cancel it. The
        jump must explain the disagreement (KINK_FRACTION of it) and stand clear of the slopes' rounding."""
        _, half = self._element_slopes(i, index, 0.5)
        step = self.element_step * max(1.0, abs(float(self._originals64[i][index])))
        jump = abs(bend - 2 * half)
        return bool(jump > KINK_FRACTION * err and jump > KINK_NOISE * 10 * self.noise_f / step)


@contextlib.contextmanager
def perturbed_to(array, index, value, original):
    """array[index] = value for the duration of the block; then the original, bit for bit."""
    array[index] = value
    try:
        yield
    finally:
        array[index] = original


@contextlib.contextmanager
def perturbed(array, index, delta):
    """array[index] += delta for the duration of the block, restored exactly."""
    old = array[index].copy()
    array[index] = old + delta
    try:
        yield
    finally:
        array[index] = old


def step_size(array, index, rel=1e-6):
    """Central-difference step: relative to the value, never below `rel`."""
    return rel * max(1.0, float(abs(array[index])))


def central_difference(f, array, index, h):
    with perturbed(array, index, h):
        plus = f()
    with perturbed(array, index, -h):
        minus = f()
    return (plus - minus) / (2 * h)


def elementwise_gradient(f, array, rel=1e-6):
    """The naive loop, one pair of evaluations per element (2 * size calls):
    the baseline the benchmarks compare against."""
    grad = np.zeros(array.shape, dtype=np.float64)
    for index in np.ndindex(array.shape):
        grad[index] = central_difference(f, array, index, step_size(array, index, rel))
    return grad
