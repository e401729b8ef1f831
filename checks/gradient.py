"""`gradient`: the student's backward against finite differences of the
scalarised objective f = sum(forward(x) * g) (for a loss function: the loss it
returns), for the input and every parameter.

How (gradlab.numerics.engine does the arithmetic):
1. The analytical gradients are captured first, from one forward and backward.
2. One random direction d over all tensors at once: <analytical, d> against the
   derivative of f along d, with a tolerance from the measured numerical error.
   A clean pass costs 2 forwards beyond the analytical pass (f at +-h along d, judged
   against the tolerance's floor); anything else takes 2 more (at +-h/2), which
   measure the truncation and the noise. Forward's repeatability (the
   precondition of finite differences) is verified, with one more forward, only when
   the verdict would be anything but a clean pass: a forward that is not repeatable
   cannot pass this comparison, and the message then names that cause.
3. Only when that fails: one direction per tensor, to name the wrong ones; then,
   for the worst MAX_LOCALISED of them, the offending elements: the full
   per-element map when the tensor has at most FULL_MAP_MAX_ELEMENTS entries
   (also what the diagnosis needs), group testing (bisection) otherwise. To get
   the full map of larger tensors too, raise the constant before running, e.g.
   `gradlab.checks.gradient.FULL_MAP_MAX_ELEMENTS = 10**9`.
4. float32 modules: the numerical side runs on a float64 copy of the module
   (built with cfg.dtype="float64", parameters copied in by name) when the
   module can run in float64; otherwise in float32 with a looser, measured
   tolerance, and the message says so. With the float64 copy, the analytical
   side's rounding is measured too: the copy's own gradients at the same
   weights, input and g (one more backward) against the student's, element by
   element (gradlab.numerics.tolerance.twin_rounding). An ill-conditioned
   computation (LayerNorm over 2 close features) rounds far more than a few
   eps; a well-conditioned one far less, so the check gets sharper, not looser.
5. A kink (ReLU at 0, a tie in a max) where the disagreement is found draws a
   new input (up to MAX_RESAMPLES times) instead of failing; the result says so.
6. Loss functions: the gradient they return against the loss they return,
   also with ignore_index (some targets ignored).
7. The cause, when the check fails: for module kinds, a known-buggy backward
   (gradlab.diagnosis.backward_variants) that reproduces every tensor on the student's
   weights is named first; otherwise the patterns of gradlab.diagnosis.causes.

Every array is restored bit for bit after every perturbation. The check's
random stream comes from the runner (`--seed` replays it).
"""
import math

import numpy as np

from gradlab.diagnosis import backward_variants
from gradlab.diagnosis import causes as diagnosis
from gradlab.contract.errors import CannotJudge, CheckFailure, CheckSkipped, StudentError
from gradlab.contract.numbers import distinct
from gradlab.contract.kinds import ATTN_WEIGHTS, DIFFERENTIABLE, LOSS, SMOOTHING, TOKEN_IDS
from gradlab.execution.loader import reference as reference_impl
from gradlab.numerics.engine import EPS, Engine, Tensor, eps_of, point_value, random_direction
from gradlab.numerics.repeatable import require_repeatable
from gradlab.numerics.tolerance import (FLOAT32_CLEAR, FLOAT32_MARGIN, IDIOM_EPS, IDIOM_SPREAD, NOISE_CANNOT_JUDGE, TWIN_MATCH,
                                        TWIN_MATCH_FLOAT16,
                                        computed_eps, division_idiom, idiom_allowance, loss_row_bounds,
                                        smoothing_first_order, twin_rounding)
from gradlab.contract.records import heatmap, table
from gradlab.execution.subject import (IGNORE_INDEX, SMOOTHING_EPSILON, call_cross_entropy, copies, loss_inputs,
                                      loss_options, randomize_params, takes_ignore_index, with_ignored)
from gradlab.contract.suite import Outcome, check

FULL_MAP_MAX_ELEMENTS = 2048   # per-element map (2 forwards per element) up to this size; bisection above
MAX_LOCALISED = 3              # failing tensors whose elements are localised (the worst first)
MAX_RESAMPLES = 3              # new inputs drawn after a kink
HALF_INPUTS = 3                # float16: the majority verdict of this many inputs (see judge)


class Problem:
    """What one comparison needs: the tensors (arrays the numerics perturb, with
    the student's analytical gradients), the objective, and how to describe it."""

    def __init__(self, tensors, f, f_abs, eps_numeric, eps_analytical, numerics, context, label=""):
        self.tensors, self.f, self.f_abs = tensors, f, f_abs
        self.eps_numeric, self.eps_analytical = eps_numeric, eps_analytical
        self.numerics = numerics      # a phrase: where the numerical side was computed
        self.context = context        # for gradlab.diagnosis.causes
        self.label = label            # e.g. " with ignore_index=0"
        self.f0 = None                # f at the unperturbed point, when already known
        self.idiom = None             # (dirs, products) -> a sound idiom's allowance along dirs (Engine's idiom)
        self.strict = None            # dirs -> dirs along which no sound idiom can move f (loss kinds)
        self.element_idiom = None     # tensor index -> per-element allowance for the idiom (or None)
        self.eps_measured = None      # Engine's eps_measured (None: float64's)
        self.points = None            # Engine's points: f at several points in one batch (None: f() at each)


def _in_float64(inputs, wrt):
    """Copies of forward's inputs for the float64 side: the differentiable ones (positions wrt) in float64."""
    return tuple(a.astype(np.float64) if k in wrt else (a.copy() if isinstance(a, np.ndarray) else a)
                 for k, a in enumerate(inputs))


def _eps(*arrays):
    return max(eps_of(a.dtype) for a in arrays)


def _own_eps(gradient, eps_analytical):
    """The rounding unit of one analytical gradient when coarser than the module's (float32's, for a float64
    array of float32 numbers), else None."""
    eps = computed_eps([gradient])
    return eps if eps > eps_analytical else None


# ---- module kinds -------------------------------------------------------------

class FastNormals:
    """rng.standard_normal(shape) with Gaussian marginals at a fraction of the cost
    (random signs times magnitudes from a fixed Gaussian pool, see
    gradlab.numerics.engine.random_direction): drawing 20,000 fresh normals costs more
    than a forward pass of the attention the issue benchmarks."""

    def __init__(self, rng, prefetch=0):
        self.rng = rng
        self._block = random_direction(rng, (prefetch,), floor=0.0) if prefetch else np.zeros(0)
        self._used = 0

    def standard_normal(self, shape=()):
        n = math.prod(shape)
        if self._used + n <= self._block.size:     # one draw for many small arrays
            self._used += n
            return self._block[self._used - n:self._used].reshape(shape)
        return random_direction(self.rng, shape, floor=0.0)


def split_direction(rng, tensors):
    """One random direction over all tensors, drawn at once and cut into their shapes."""
    flat = random_direction(rng, (sum(t.array.size for t in tensors),))
    out, start = [], 0
    for t in tensors:
        out.append(flat[start:start + t.array.size].reshape(t.array.shape))
        start += t.array.size
    return out


def _no_float64_copy(note):
    """What to do about a float16 module that has no float64 copy: float32 arithmetic inside is the student's to
    choose (CONTRACT §6), only judged in float32 and float64; parameters kept in float16 are not."""
    if "computes in float32" in note:
        return (": there is no float64 copy to compare with. Arithmetic of your own precision inside is fine "
                "(CONTRACT §6); its gradients are judged in --dtype float32 and float64, and in float16 only a module "
                "that follows cfg.dtype")
    return "; build it in cfg.dtype (float64 when cfg.dtype is 'float64')"


class ModuleSetup:
    """A randomised instance of the student's module, and (for a float32 module)
    a float64 copy holding the same parameters, for the numerical side."""

    def __init__(self, subject, rng):
        self.subject = subject
        self.twin = None
        self.note = None    # why the numerics could not move to float64
        # Parameters in params dicts or parameters() are visible right after build: randomise
        # them at once and save fresh()'s probing forward and backward. Attribute pairs (w, dw)
        # only show after a backward; problem() verifies the list and falls back to fresh().
        self.module = subject.build(rehearse=("gradient", rng))
        self.slots = subject.slots(self.module)
        self.calls = 0
        self.verified = False
        self.first = None       # (inputs, output) of the first forward, while its repeatability is not verified
        self.repeat_verified = False
        if self.slots:
            randomize_params(self.slots, FastNormals(rng, sum(sl.value.size for sl in self.slots)))
        else:
            self._fresh(rng)

    def _half_inside(self, inputs, out, own_eps):
        """The float16 inputs, when the module computes in float16 from them although its parameters are wider
        (float64 parameters that ignore cfg.dtype, under --dtype float16: a LayerNorm's mean and variance of a
        float16 x are float16): its output at their float64 copies differs by more than float32 rounding. It is
        then judged as a float16 module (against a float64 copy, at float16's tolerance); it failed, "a constant
        differs slightly (eps?)", by float16's rounding. One forward more, only for float16 inputs to a wider
        module; a module that casts x up first (float32 from a float16 x) matches and stays float32."""
        half = [a for a in inputs if isinstance(a, np.ndarray) and a.dtype == np.float16]
        if not half or own_eps >= EPS["float16"]:
            return []
        positions = [k for k, a in enumerate(inputs) if isinstance(a, np.ndarray) and a.dtype == np.float16]
        wide = self.subject.forward(self.module, *copies(_in_float64(inputs, positions)))
        self.calls += 1
        scale = max(float(np.abs(wide).max()), 1e-30)
        return half if float(np.abs(wide - out.astype(np.float64)).max()) > 8 * EPS["float32"] * scale else []

    def _fresh(self, rng):
        self.module, self.slots = self.subject.fresh(rng)
        self.first, self.repeat_verified = None, False    # a new module, new parameters: its own first output
        self.calls += 2      # fresh() runs one forward and one backward
        self.verified = True

    def problem(self, rng):
        s, kind = self.subject, self.subject.kind
        inputs = s.make_inputs(rng)
        # The student gets copies on every forward call: the inputs are reused afterwards (the point the
        # numerics perturb, the diagnosis' context), and a forward that edits x in place would otherwise move
        # that point between calls; input_mutation names the in-place edit.
        out = s.forward(self.module, *copies(inputs))
        if self.first is None and not self.repeat_verified:    # to verify repeatability when the verdict is not a clean pass
            self.first = (inputs, out.copy())      # (the student's own array, maybe: its backward may edit it)
        g = FastNormals(rng).standard_normal(out.shape).astype(out.dtype)   # the g backward sees...
        g64 = g.astype(np.float64)                               # ...is exactly the g in f
        # the precision the module computes in: its lowest among output, input and parameters
        # (float32 parameters make float32 intermediates, even if a float64 scalar promotes the output; a float32
        # x does too, before it meets a float64 parameter: a LayerNorm's mean and variance of x, with float64
        # gamma, np.ones(d)'s default)
        # (the inputs are gradlab's, in cfg.dtype: a module that computes in float32 from a float16 x is float32)
        own = [out] + [sl.value for sl in self.slots] + \
            [a for a in inputs if isinstance(a, np.ndarray) and a.dtype.kind == "f" and eps_of(a.dtype) < EPS["float16"]]
        own += self._half_inside(inputs, out, _eps(*own))
        declared, computed = _eps(*own), computed_eps([out])
        own_eps = max(declared, computed)
        if computed > declared:
            # float32 arithmetic returned as float64: a float64 output of float32 numbers. A float64 build of
            # it would compute in float32 too (no float64 copy to take finite differences of): judged as float32
            self.note = self.note or "it computes in float32 whatever cfg.dtype says (its float64 output is float32 numbers)"
        # what is read next: the parameters, their gradients and (when the numerics run on this module, not
        # on a float64 copy) the attention weights it keeps (through a worker: with the backward's reply)
        dxs = s.backward(self.module, g.copy(), next_grads=self.slots,
                         next_kept=own_eps <= EPS["float64"] or self.note is not None)
        self.calls += 2
        if not self.verified:
            after = [sl.name for sl in s.slots(self.module)]
            self.verified = True
            if after != [sl.name for sl in self.slots]:      # more parameters showed after backward
                self._fresh(rng)
                return self.problem(rng)
        grads = s.read_grads(self.slots)
        specs = kind.input_specs()
        wrt = [k for k, spec in enumerate(specs) if spec in kind.grad_inputs()]   # inputs with a gradient
        analytical = [(specs[k].name, inputs[k], d) for k, d in zip(wrt, dxs)] + \
                     [(sl.name, sl.value, grads[sl.name]) for sl in self.slots]
        context = {"cfg": s.cfg, "x": inputs[0], "g": g64, "inputs": inputs}
        low = self.low = np.dtype("float32") if computed > declared else min(own, key=lambda a: -eps_of(a.dtype)).dtype
        eps_an = max(own_eps, _eps(*[a for _, _, a in analytical]))
        if own_eps > EPS["float64"] and self.note is None:
            twin_inputs = _in_float64(inputs, wrt)
            if self.twin is None:
                self._make_twin(twin_inputs, out)
            elif not self._twin_matches(twin_inputs, out):
                self.twin = None
        num_inputs = inputs    # what the numerics perturb, when it is the module itself
        measured = {}
        if self.twin is not None:
            twin, twin_slots = self.twin
            twin_inputs = _in_float64(inputs, wrt)
            by_name = {sl.name: sl for sl in twin_slots}
            arrays = [twin_inputs[k] for k in wrt] + [by_name[sl.name].value for sl in self.slots]
            f = self._objective(twin, twin_inputs, g64)
            points = self._points(self._twin_subject, twin, twin_inputs, wrt, arrays[len(wrt):], g64)
            numerics, eps_num = f"a float64 copy of your {low} module", EPS["float64"]
            if low == np.float32:   # float16 keeps its own rounding policy (HALF_ROUNDING)
                measured = self._twin_rounding(analytical, g64, [specs[k].name for k in wrt])
        elif low == np.float16:
            # finite differences in float16 (3 significant digits) cannot judge a gradient: a 3x too large
            # weight gradient would pass. Judge only against a float64 copy, or say why not.
            raise CannotJudge(f"a float16 module's gradients are compared with finite differences of a float64 "
                              f"copy of it (finite differences in float16 cannot tell a 3x wrong gradient from a "
                              f"right one), and {self.note}{_no_float64_copy(self.note)}")
        else:
            arrays = [arr for _, arr, _ in analytical]
            if any(eps_of(inputs[k].dtype) > own_eps for k in wrt):
                # a float16 input given to a module that computes in float32/64: a step of 1e-6 rounds away in
                # float16 (nothing would be tested); perturb float64 copies, the module upcasts them anyway
                num_inputs = _in_float64(inputs, wrt)
                arrays = [num_inputs[k] for k in wrt] + arrays[len(wrt):]
            f = self._objective(self.module, num_inputs, g64)
            points = self._points(s, self.module, num_inputs, wrt, arrays[len(wrt):], g64)
            eps_num = own_eps
            numerics = "float64" if eps_num <= EPS["float64"] else \
                f"{low} (looser tolerance: {self.note or 'the module computes in float32'})"
        # read_grads returned copies; dx is the student's own array (a view of a cache, maybe): copy it
        names = {specs[k].name for k in wrt}
        # a gradient of float32 numbers in a float64 array: that backward computes it in float32 (forward may
        # be exact, a lookup or an addition, and show nothing), so its rounding is float32's
        tensors = [Tensor(name, arr, a.astype(np.float64, copy=name in names), measured.get(name),
                          eps=_own_eps(a, eps_an))
                   for (name, _, a), arr in zip(analytical, arrays)]
        terms = out.astype(np.float64, copy=False) * g64
        f_abs = float(np.sum(np.abs(terms)))
        problem = Problem(tensors, f, f_abs, eps_num, eps_an, numerics, context)
        problem.points = points
        # a softmax normalised by (sum + eps), eps <= IDIOM_EPS, after the max subtraction: its true gradient has
        # a term of eps / sum the usual backward leaves out (tolerance.idiom_allowance); the attention weights the
        # module (or its parts) kept show eps / sum (0 when none are kept, or their rows sum to 1 to rounding);
        # a float64 copy keeps its own
        holder = self.twin[0] if self.twin is not None else self.module
        shortfall = max([division_idiom(a) for a in self.subject.kept_attention(holder)], default=0.0)
        if shortfall:      # (none: the engine allows nothing for an idiom, as idiom_allowance(..., 0) would)
            problem.idiom = lambda dirs, products: idiom_allowance([p for p in products if p is not None], shortfall)
        # per element: on the tensor's largest entry (the term follows the attention's gradient, not the element's)
        problem.element_idiom = lambda i: (IDIOM_SPREAD * shortfall * float(np.abs(tensors[i].analytical).max(initial=0.0))
                                           if shortfall else None)
        if self.twin is None and num_inputs is inputs:
            problem.f0 = float(np.sum(terms))    # exactly what f() computes at the unperturbed point
        return problem

    def require_repeatable(self):
        """The precondition of finite differences: f is a function of its input (CannotJudge otherwise).
        Verified once per check, lazily: forward again at the first problem's input, against that first
        output. A forward that is not repeatable (dropout left on, a call counter) makes the joint directional
        check fail or look unsmooth, and judge() calls this before any verdict other than a clean pass, so the
        message names the cause; a clean pass saves the forward."""
        if self.first is None:
            return
        (inputs, out), self.first = self.first, None
        self.repeat_verified = True
        self.calls += 1
        again = self.subject.forward(self.module, *copies(inputs))
        require_repeatable("forward", out, again, "the gradient")

    def _twin_rounding(self, analytical, g64, input_names):
        """name -> the student's analytical rounding, measured (tolerance.twin_rounding) against the float64
        copy's gradients at the same weights, inputs and g; the copy's forward at these inputs has just run
        (_twin_matches). Only the tensors whose measurement is trusted; none when the copy's backward fails,
        and not a tensor whose float64 gradient is float32 numbers (that backward computes it in float32
        whatever the dtype: the copy has the student's rounding too, and the difference would measure 0)."""
        twin, twin_slots = self.twin
        self.calls += 1
        try:
            dxs64 = self._twin_subject.backward(twin, g64.copy())
            grads64 = self._twin_subject.read_grads(twin_slots)
        except (StudentError, CheckSkipped):
            return {}
        grads64.update(zip(input_names, dxs64))
        scale = max((float(np.max(np.abs(g), initial=0.0)) for g in grads64.values()), default=0.0)
        measured = {}
        for name, _, a in analytical:
            if name in grads64 and computed_eps([grads64[name]], full_mantissas=True) <= EPS["float64"]:
                r = twin_rounding(a, grads64[name], scale)
                if r is not None:
                    measured[name] = r
        return measured

    def _objective(self, module, inputs, g64):
        s = self.subject
        # see problem(): the student gets copies
        return lambda: float(np.sum(s.forward(module, *copies(inputs)).astype(np.float64, copy=False) * g64))

    @staticmethod
    def _points(subject, module, inputs, wrt, params, g64):
        """Problem.points for f = sum(forward(inputs) * g64) when the module runs in a worker: one forward
        per point, all in one request (subject.forwards). The points' inputs (positions wrt) are computed
        here and passed in; their parameters (params, in the tensors' order) are computed where the module
        is, from d and s, with the same function (engine.point_value), and held for that forward only. f is
        computed here, from the outputs. None in gradlab's own process: the engine's loop does the same
        there, one point at a time."""
        if not subject.batched:
            return None

        def evaluate(dirs, steps):
            originals = {k: inputs[k].astype(np.float64, copy=False) for k, d in zip(wrt, dirs) if d is not None}
            calls = []
            for s in steps:
                args = list(copies(inputs))
                for k, d in zip(wrt, dirs):
                    if d is not None:
                        args[k] = point_value(d, s, originals[k], inputs[k].dtype)
                calls.append((tuple(args), [(p, d, s) for p, d in zip(params, dirs[len(wrt):]) if d is not None]))
            outs = subject.forwards(module, calls, deferred=True)     # awaited when the engine needs the values
            return lambda: [float(np.sum(out.astype(np.float64, copy=False) * g64)) for out in outs()]
        return evaluate

    def _make_twin(self, inputs64, out):
        """Build the module with dtype=float64 and copy the parameters in by name
        (in place). Any trouble: keep the numerics in float32 and say why."""
        s = self.subject
        twin_subject = s.with_cfg(s.cfg.replace(dtype="float64"))
        try:
            twin = twin_subject.build()
            probe = twin_subject.forward(twin, *copies(inputs64))
            twin_subject.backward(twin, np.ones_like(probe))
            self.calls += 2
            twin_slots = twin_subject.slots(twin)
        except StudentError as e:
            self.note = f"building it with dtype='float64' failed: {e}"
            return
        by_name = {sl.name: sl for sl in twin_slots}
        for sl in self.slots:
            other = by_name.get(sl.name)
            if other is None or other.value.shape != sl.value.shape:
                self.note = f"its float64 build has no parameter {sl.name!r} of shape {sl.value.shape}"
                return
            if other.value.dtype != np.float64:
                self.note = f"built with dtype='float64' it still keeps {sl.name!r} in {other.value.dtype}"
                return
        for sl in self.slots:
            by_name[sl.name].value[...] = sl.value
        self.twin = (twin, twin_slots)
        self._twin_subject = twin_subject
        # the probe at moved inputs first: the copy's last forward must be at inputs64, whose cache the backward
        # measuring the rounding (_twin_rounding) reads; a copy whose cache sat 2^-30 off measured its gradient
        # there, 1e-9 of it off, and a correct float32 module failed by as much at tiny sizes
        if self._twin_computes_in_float32(inputs64) or not self._twin_matches(inputs64, out):
            self.twin = None

    def _twin_computes_in_float32(self, inputs64):
        """True (and said in the note) when the float64 build still computes in float32: at float inputs that
        are not float32 numbers, its output is all float32 numbers. Finite differences of it would be judged
        with float64's allowances; the module's own, judged as float32, resolve far more. (A module without a
        float input, an embedding's lookup of float32 weights, is not probed: it cannot tell.)"""
        floats = [isinstance(a, np.ndarray) and a.dtype == np.float64 for a in inputs64]
        if not any(floats):
            return False
        moved = tuple(a * (1 + 2.0 ** -30) if f else a for a, f in zip(inputs64, floats))
        self.calls += 1
        try:
            probe = self._twin_subject.forward(self.twin[0], *copies(moved))
        except StudentError:
            return False
        if computed_eps([probe]) > EPS["float64"]:
            self.note = "its build with dtype='float64' still computes in float32 (its output is float32 numbers)"
            return True
        return False

    def _twin_matches(self, inputs64, out):
        twin, _ = self.twin
        self.calls += 1
        try:
            out64 = self._twin_subject.forward(twin, *copies(inputs64))
        except StudentError as e:
            self.note = f"its float64 copy raised in forward: {e}"
            return False
        if out64.dtype != np.float64:
            self.note = f"built with dtype='float64' its forward still returns {out64.dtype}"
            return False
        diff = float(np.max(np.abs(out64 - out.astype(np.float64)), initial=0.0))
        scale = float(np.max(np.abs(out64), initial=0.0))
        match = TWIN_MATCH_FLOAT16 if self.low == np.float16 else TWIN_MATCH
        if diff > match * max(scale, 1e-30):
            self.note = (f"a float64 copy with the same parameters computes a different output "
                         f"(max difference {diff:.3g}): state outside the parameters?")
            return False
        return True


# ---- loss functions -------------------------------------------------------------

def _loss_eps(loss, grad):
    """The precision a loss function's results were computed in, as far as they show it: a float32 loss, or a
    float64 gradient of float32 numbers, is float32 arithmetic (0 when they show nothing coarser than float64)."""
    loss = np.asarray(loss)
    return max(eps_of(loss.dtype) if loss.dtype.kind == "f" else 0.0,
               computed_eps([np.asarray(grad)], full_mantissas=True))


class LossSetup:
    """cross_entropy-style functions: grad_logits against the loss they return."""

    def __init__(self, subject, ignore_index=None):
        self.subject, self.ignore_index = subject, ignore_index
        self.note = None
        self.calls = 0
        self.repeated = False

    def require_repeatable(self):
        """Verified eagerly in problem() (a loss call is cheap)."""

    def problem(self, rng):
        s, cfg = self.subject, self.subject.cfg
        logits, targets = loss_inputs(s, rng)
        label = ""
        if self.ignore_index is not None:
            targets = with_ignored(targets, rng)
            label = f" with ignore_index={self.ignore_index} ({int((targets == self.ignore_index).sum())} of " \
                    f"{targets.size} targets ignored)"
        # The student always gets copies: a loss that edits logits (or targets) in place would
        # otherwise move the point the numerics perturb; input_mutation names that bug.
        loss, grad = call_cross_entropy(s, logits.copy(), targets.copy(), self.ignore_index)
        self.calls += 1
        if not self.repeated:
            again = call_cross_entropy(s, logits.copy(), targets.copy(), self.ignore_index)[0]
            require_repeatable("the loss", np.float64(loss), np.float64(again), "its gradient")
            self.repeated = True
            self.calls += 1
        arr, eps_num, numerics, measured = logits, _eps(logits, grad), None, None
        # float32 arithmetic returned as float64 (a float32 loss, a gradient of float32 numbers cast back): the loss
        # the finite differences read rounds like float32, whatever the logits are; no float64 call escapes it
        inside = _loss_eps(loss, grad)
        if inside > eps_num:
            eps_num = inside
            self.note = "it computes in float32 whatever the logits' dtype (its loss or its gradient is float32 numbers)"
        elif eps_num > EPS["float64"]:
            logits64 = logits.astype(np.float64)
            loss64, grad64 = call_cross_entropy(s, logits64.copy(), targets.copy(), self.ignore_index)
            self.calls += 1
            if grad64.dtype != np.float64:
                self.note = f"called with float64 logits it still returns {grad64.dtype}"
            elif _loss_eps(loss64, grad64) > EPS["float64"]:
                self.note = "called with float64 logits it still computes in float32 (a float32 loss or gradient)"
            elif abs(loss64 - loss) > TWIN_MATCH * (abs(loss64) + 1):
                self.note = f"with float64 logits it returns a different loss ({loss64:.6g} vs {loss:.6g})"
            else:
                arr, eps_num, numerics = logits64, EPS["float64"], f"float64 (your {logits.dtype} function, " \
                                                                   f"called with float64 logits)"
                if _eps(logits, grad) == EPS["float32"]:   # as for modules (float16 keeps HALF_ROUNDING)
                    measured = twin_rounding(grad, grad64, float(np.max(np.abs(grad64), initial=0.0)))
        if numerics is None:
            numerics = "float64" if eps_num <= EPS["float64"] else \
                f"{logits.dtype} (looser tolerance: {self.note or 'the function computes in float32'})"
        ignore = self.ignore_index

        def f():
            return call_cross_entropy(s, arr.copy(), targets.copy(), ignore)[0]

        rows = np.abs(logits.astype(np.float64)).max(axis=-1)
        f_abs = abs(loss) + 2 * float(rows.mean()) + np.log(logits.shape[-1])
        context = {"cfg": cfg, "x": logits, "g": None, "targets": targets, "ignore_index": ignore, "loss": loss}
        tensors = [Tensor("logits", arr, grad.astype(np.float64), measured)]
        # grad was computed from `logits`: a float32 computation stays float32-accurate even when a
        # division by an int64 count promotes the returned array to float64
        eps_an = max(_eps(logits, grad), inside)
        problem = Problem(tensors, f, f_abs, eps_num, eps_an, numerics, context, label)
        if s.kind.has(SMOOTHING):
            problem.idiom, problem.strict, problem.element_idiom = _smoothing_idiom(logits, targets)
            return problem
        problem.idiom, problem.strict, row_bound = _loss_idiom(logits, targets, ignore, tensors[0].analytical)
        a = tensors[0].analytical
        problem.element_idiom = lambda i: (np.abs(a).reshape(-1, a.shape[-1]) * row_bound[:, None]).reshape(a.shape)
        return problem


def _loss_idiom(logits, targets, ignore, analytical):
    """A sound eps inside the log (log(p + eps), clip(p, eps, 1), eps <= IDIOM_EPS) scales the derivative
    of row r's loss by p_r / (p_r + eps): each row of grad_logits may be off by the fraction
    bound_r = eps / p_r, as a whole. Two consequences, one per returned function:
    - idiom(dirs, products): along any direction, that is at most sum_r bound_r |<a_r, d_r>|;
    - strict(dirs): d with each counted row made orthogonal to the student's own row a_r, along which
      a whole-row scale moves nothing: there no allowance is needed, and one element off by a
      relative 1e-4 is caught as sharply as without any idiom. Each row also gets a constant c_r
      added (c_r taken from d itself): the loss does not move when a row of logits is shifted (softmax
      is shift-invariant, eps or not), a correct row sums to 0 so the product stays 0, and the target
      entry, which dominates a_r and would vanish from the projection, keeps a full-sized component."""
    V = logits.shape[-1]
    bound, keep = loss_row_bounds(logits, targets, ignore)
    a = analytical.reshape(-1, V)
    norms = (a * a).sum(axis=1)
    project = keep & (norms > 0)

    def idiom(dirs, products=None):
        d = dirs[0]
        return 0.0 if d is None else float(np.sum(bound * np.abs((a * d.reshape(-1, V)).sum(axis=1))))

    def strict(dirs):
        d = dirs[0].reshape(-1, V)
        along = np.where(project, (a * d).sum(axis=1) / np.where(project, norms, 1.0), 0.0)
        shift = np.where(project, d[:, 0], 0.0)
        return [(d - along[:, None] * a + shift[:, None]).reshape(dirs[0].shape)]

    return idiom, strict, bound


def _smoothing_idiom(logits, targets):
    """_loss_idiom for label smoothing, whose eps inside the log touches every class
    (tolerance.smoothing_first_order): the error it makes in the usual gradient is eps x w (+ a second-order
    rest), the same eps in every row. idiom(dirs): IDIOM_EPS |<w, d>| + <rest, |d|>; strict(dirs): each
    row of d made orthogonal to w's row, plus a constant per row (the loss is shift-invariant, and
    w's rows, like a correct gradient's, sum to 0), where only the rest is allowed; the per-element
    allowance IDIOM_EPS |w| + rest."""
    w, rest = smoothing_first_order(logits, targets, SMOOTHING_EPSILON)
    V = logits.shape[-1]
    rows = w.reshape(-1, V)
    norms = (rows * rows).sum(axis=1)

    def idiom(dirs, products=None):
        d = dirs[0]
        return 0.0 if d is None else IDIOM_EPS * abs(float(np.vdot(w, d))) + float(np.vdot(rest, np.abs(d)))

    def strict(dirs):
        d = dirs[0].reshape(-1, V)
        along = np.where(norms > 0, (rows * d).sum(axis=1) / np.where(norms > 0, norms, 1.0), 0.0)
        return [(d - along[:, None] * rows + d[:, :1]).reshape(dirs[0].shape)]

    return idiom, strict, lambda i: IDIOM_EPS * np.abs(w) + rest


def _encoder_side_only(names, wrong, zero=()):
    """A seq2seq whose wrong gradients are all on the encoder's side (their names say enc or src) while the
    decoder's (dec, tgt) are right: what reaches the encoder, dmemory, is wrong, unless encoder tensors with a
    gradient (not in `zero`: a key bias's is 0 whatever dmemory is, up to rounding) are right too. A sentence,
    or None."""
    def side(name):
        low = name.lower()
        return "encoder" if ("enc" in low or "src" in low) else "decoder" if ("dec" in low or "tgt" in low) else None
    decoder = [n for n in names if side(n) == "decoder"]
    if not wrong or not decoder or any(side(n) != "encoder" for n in wrong):
        return None
    right = [n for n in names if side(n) == "encoder" and n not in wrong and n not in zero]
    if right:
        # every encoder tensor's gradient passes through dmemory: with some of them right, dmemory is right, and the
        # encoder's own backward goes wrong below those
        shown = ", ".join(repr(n) for n in right[:3]) + (" ..." if len(right) > 3 else "")
        return (f"Only the encoder's side is wrong ({len(wrong)} tensor{'s' if len(wrong) != 1 else ''}), the "
                f"decoder's {len(decoder)} are right, and so are {len(right)} of the encoder's ({shown}): what "
                "reaches the encoder (dmemory) is right, since every encoder gradient passes through it, and the "
                "encoder's own backward goes wrong below the right ones (a layer's backward, or the order the "
                "layers run backward in: last layer first)")
    return (f"Only the encoder's side is wrong ({len(wrong)} tensor{'s' if len(wrong) != 1 else ''}), the decoder's "
            f"{len(decoder)} are right: the gradient backward sends into the encoder, dmemory, is wrong (with "
            "several decoder layers it is the sum of every layer's cross-attention dmemory: dmemory += each "
            "layer's, not =), or the encoder's backward runs its layers in the wrong order (the last layer first)")


def _smoothed_loss_words(loss, c, logits, targets):
    """What a label-smoothed loss that is off (its gradient right) computes instead: the smoothing check's
    known slip whose loss it is, or what the loss must be. A sentence."""
    from gradlab.checks.smoothing import _variants
    for hint, (value, _) in _variants(logits, targets, SMOOTHING_EPSILON):
        if abs(loss - value) <= diagnosis.MATCH * max(abs(value), 1e-30):
            return f"{c:.4g} x the reference: {hint}"
    return (f"{c:.4g} x the reference: the smoothed loss is (1 - epsilon) * -log p[target] + epsilon * the mean "
            "over the V classes of -log p, averaged over the targets")


def loss_diagnosis(kind, grad, context):
    """When grad_logits disagrees with the loss, one of the two is wrong: gradlab's
    reference on the same logits says which, and how. A sentence, or None."""
    logits, targets, ignore = context["x"], context["targets"], context["ignore_index"]
    ref_loss, ref_grad = reference_impl().get(kind.name).target(logits.astype(np.float64), targets,
                                                                *loss_options(kind, ignore))
    loss = float(context["loss"])
    grad_ok = diagnosis._close(grad, ref_grad)
    loss_ok = abs(loss - ref_loss) <= diagnosis.MATCH * max(abs(ref_loss), 1e-30)
    keep = np.ones(targets.shape, bool) if ignore is None else targets != ignore
    n, N = int(keep.sum()), targets.size
    if grad_ok and not loss_ok:
        c = loss / ref_loss if ref_loss else float("nan")
        if ignore is not None and abs(c - n / N) <= diagnosis.MATCH * n / N:
            why = ("ignored positions are counted in the mean: divide by the number of targets that are not "
                   "ignore_index")
        elif kind.has(SMOOTHING):
            why = _smoothed_loss_words(loss, c, logits, targets)
        else:
            label = diagnosis.name_factor(c, context["cfg"], kind)
            why = f"{c:.4g} x the reference" + (f", a factor of {label}" if label else "") + \
                  ": the loss must be the mean of -log p[target] over the targets (not ignored), averaged once"
        return (f"the returned grad_logits matches gradlab's reference; it is the loss that is off: {loss:.8g}, "
                f"reference {ref_loss:.8g}, {why}")
    if not loss_ok or grad_ok:
        return None
    # the loss is right, grad_logits is not
    if ignore is not None and not keep.all():
        ignored_rows = np.abs(grad[~keep]).max()
        if ignored_rows > diagnosis.MATCH * float(np.abs(ref_grad).max()) and \
                diagnosis._close(grad[keep], ref_grad[keep]):
            return ("the loss is right, but the rows of grad_logits at ignored positions (target == ignore_index) "
                    "are not zero: ignored positions add nothing to the loss, so multiply their rows by 0")
    ww = float(np.sum(ref_grad * ref_grad))
    c = float(np.sum(grad * ref_grad)) / ww if ww else 0.0
    if ww and diagnosis._close(grad, c * ref_grad):
        if abs(c * n - 1) <= diagnosis.MATCH:
            return (f"the loss is right, but grad_logits is 1/{n} of the reference's: it is divided by the number "
                    f"of targets ({n}) twice; (softmax - one_hot) / N once is the gradient of the mean")
        if abs(c - n) <= diagnosis.MATCH * n:
            return (f"the loss is right, but grad_logits is {n} x the reference's: divide (softmax - one_hot) by "
                    f"the number of targets ({n}), as the mean loss does")
        label = diagnosis.name_factor(c, context["cfg"], kind)
        return (f"the loss is right, but grad_logits is {c:.4g} x the reference's" +
                (f" (a factor of {label})" if label else "") + ": the gradient of the mean is (softmax - one_hot) / N")
    return None


# ---- describing where an element is ------------------------------------------------

def where(kind, cfg, name, shape, index):
    """Words for an index: batch/position/feature for inputs, Q/K/V, head and dim
    for the contract's attention parameters, token id or position for tables."""
    D, dk = cfg.d_model, cfg.d_k
    heads = kind.has(ATTN_WEIGHTS)
    leaf = name.rsplit(".", 1)[-1]
    attention_param = heads or "attn" in name.split(".")

    def head_dim(j):
        return f"head {j // dk}, dim {j % dk}"

    if name == "x" and len(shape) == 3:
        b, t, j = index
        return f"batch {b}, position {t}, feature {j}" + (f" = {head_dim(j)}" if heads else "")
    if name == "logits" and len(shape) == 3:
        b, t, v = index
        return f"batch {b}, position {t}, class {v}"
    if attention_param and leaf == "qkv_weight" and shape == (D, 3 * D):
        r, c = index
        return f"input feature {r}, column {c} = {'QKV'[c // D]} {head_dim(c % D)}"
    if attention_param and leaf == "qkv_bias" and shape == (3 * D,):
        (c,) = index
        return f"{'QKV'[c // D]} {head_dim(c % D)}"
    if attention_param and leaf == "out_weight" and shape == (D, D):
        r, c = index
        return f"row {r} = context {head_dim(r)}; output feature {c}"
    if len(shape) == 2 and shape[1] == D and shape[0] in (cfg.vocab_size, cfg.max_len):
        i, j = index
        what = "token id" if shape[0] == cfg.vocab_size and (kind.has(TOKEN_IDS) or shape[0] != cfg.max_len) \
            else "position"
        return f"{what} {i}, feature {j}"
    return ""


def _index_text(kind, cfg, name, shape, index):
    words = where(kind, cfg, name, shape, index)
    return f"{tuple(index)}" + (f" ({words})" if words else "")


def _tensor_words(name):
    if name == "x":
        return "input gradient 'x' (what backward returns)"
    if name == "memory":
        return "input gradient 'memory' (the dmemory backward returns)"
    if name == "logits":
        return "grad_logits (the gradient it returns)"
    return f"gradient of {name!r}"


def _tensors(n):
    return f"{n} tensor" + ("s" if n != 1 else "")


# ---- the check ----------------------------------------------------------------------

@check("gradient", needs={DIFFERENTIABLE}, order=10,
       summary="analytical gradients (input and every parameter) match numerical ones on sum(out * g)")
def gradient(subject, rng):
    if subject.kind.has(LOSS):
        # without an ignore_index argument: unpadded targets only (the signature check fails, once)
        setups = [LossSetup(subject)] + ([LossSetup(subject, IGNORE_INDEX)] if takes_ignore_index(subject) else [])
    else:
        setups = [ModuleSetup(subject, rng)]
    passes = [judge(subject, setup, rng) for setup in setups]
    metrics = dict(passes[0]["metrics"])
    if len(passes) > 1:   # the worst of the runs, with every run's calls counted
        worst = max(passes, key=lambda p: p["metrics"]["max_error"] / max(p["metrics"]["tolerance"], 1e-300))
        metrics.update({k: worst["metrics"][k] for k in ("max_error", "tolerance", "resolution")})
        metrics["module_calls"] = sum(p["metrics"]["module_calls"] for p in passes)
        metrics["kink_resamples"] = sum(p["metrics"]["kink_resamples"] for p in passes)
    message = passes[0]["message"] + "".join(f"; agrees too{p['label']}" for p in passes[1:])
    views = [v for p in passes for v in p["views"]]
    return Outcome(message, metrics, {"views": views})


def _cannot_judge_kinks(problem, resamples, what):
    """CannotJudge: the disagreement is all where f is not differentiable. Along the direction, a kink shows
    as a jump in slope (Directional.kinky); it can cancel there (jumps of both signs), never at one element
    (Engine.element_map's kinks, bisection down to single elements): a correct ReLU on inputs at exactly 0
    would otherwise be called wrong."""
    tried = "the input tried" if resamples == 0 else f"any of the {resamples + 1} inputs tried"
    raise CannotJudge(
        f"the objective{problem.label} is not smooth at {tried} ({what}), so finite differences "
        "cannot judge the gradient: does forward round, cast to int, or use a step function?")


def judge(subject, setup, rng):
    """Compare one setup's gradients; returns {"message", "metrics", "views"} on a
    pass, raises CheckFailure naming the tensor, element and numbers otherwise."""
    kind, cfg = subject.kind, subject.cfg
    resamples, calls, half_votes, first_look = 0, 0, [], None
    kink_at = []
    while True:
        problem = setup.problem(rng)
        engine = Engine(problem.f, problem.tensors, problem.eps_numeric, problem.eps_analytical, problem.f_abs,
                        f0=problem.f0, idiom=problem.idiom, eps_measured=problem.eps_measured, points=problem.points)
        dirs = split_direction(rng, problem.tensors)
        if problem.strict is not None:
            # first where no sound idiom can move f (sharp), then anywhere (with the idiom's allowance)
            sharp = problem.strict(dirs)
            joint = engine.directional(sharp)
            if joint.ok:
                joint = engine.directional(dirs)
            else:
                dirs = sharp
        else:
            joint = engine.directional(dirs)
        half = problem.eps_analytical >= EPS["float16"]
        if half or not joint.ok or joint.kinky or joint.unstable or joint.magnitude == 0 \
                or joint.relative_tolerance > NOISE_CANNOT_JUDGE:
            setup.require_repeatable()     # anything but a clean pass: is f a function of its input at all?
        if (joint.kinky or joint.unstable) and resamples < MAX_RESAMPLES:
            kink_at.append(f"slope jump {joint.kink:.3g}")
            resamples += 1
            calls += engine.calls
            continue
        passed, each = joint.ok, []
        if passed and (half or problem.eps_numeric > EPS["float64"]):
            # float16, or finite differences in float32 (no float64 copy): the joint direction dilutes one tensor's
            # error among the others' rounding (a 3x weight gradient beside a large input gradient passed; one
            # element of a bias 1.5x); every tensor is judged on its own as well
            each = [engine.directional(engine.tensor_dirs(dirs, {i})) for i in range(len(problem.tensors))]
            passed = all(r.ok or r.kinky for r in each)
        if not half and problem.eps_numeric > EPS["float64"]:
            # float32's noise, measured once, may fall short: a near miss is judged again at a new input, which
            # must agree clearly; otherwise the first input's disagreement is the verdict
            worst = max((abs(r.residual) / max(r.tolerance, 1e-300) for r in [joint] + each if not r.kinky),
                        default=0.0)
            if first_look is None and not passed and worst <= FLOAT32_MARGIN:
                first_look = (problem, engine, dirs, joint)
                calls += engine.calls
                continue
            if first_look is not None and not (passed and worst <= FLOAT32_CLEAR):
                calls += engine.calls
                (problem, engine, dirs, joint), passed = first_look, False
        if half:
            # float16: the verdict of the majority of HALF_INPUTS inputs. A ReLU input within float16's rounding
            # of 0 takes another branch than in the float64 copy, and that unit's whole gradient differs (rare,
            # input by input); a bug fails at almost every input, yet one random direction may miss it (rare too)
            half_votes.append(passed)
            if max(half_votes.count(True), half_votes.count(False)) <= HALF_INPUTS // 2:
                calls += engine.calls
                continue
        break
    names = [t.name for t in problem.tensors]
    metrics = {"max_error": joint.error, "tolerance": joint.relative_tolerance, "resolution": joint.resolution,
               "step": joint.step, "numerics": problem.numerics, "kink_resamples": resamples,
               "tensors": len(names), "replay_seed": cfg.seed}
    kink_note = (f"; drew a new input {resamples} time(s) after a kink (a point where f is not differentiable, "
                 f"e.g. ReLU at exactly 0 or a tie in a max) made finite differences meaningless there"
                 if resamples else "")
    float_note = "" if problem.numerics == "float64" else f"; numerical side in {problem.numerics}"
    if len(half_votes) > 1:
        float_note += (f" (float16: {'wrong' if not passed else 'right'} at {half_votes.count(passed)} of "
                       f"{len(half_votes)} inputs)")
    if joint.ok and joint.magnitude == 0:
        raise CannotJudge(
            f"every gradient{problem.label} is exactly 0 along a random direction, and so is the numerical "
            "derivative: the output does not move with the input or the parameters here, so there is nothing to "
            "compare. Does forward use its input and its parameters?")
    if joint.unstable and not joint.kinky:
        raise CannotJudge(
            f"finite differences of the objective{problem.label} contradict themselves: at two step sizes they "
            f"give {joint.numerical:.6g} and a value outside each other's error bounds, at each of the "
            f"{resamples + 1} inputs tried, so the objective is not smooth at the scale of the step. Does forward "
            "compute in a coarser precision than it returns (float16 inside), or round its output?")
    if joint.relative_tolerance > NOISE_CANNOT_JUDGE:
        raise CannotJudge(
            f"finite differences of the objective{problem.label} are drowned in noise: they allow an error of "
            f"{joint.relative_tolerance:.2g} of the gradient's size (numerical side in {problem.numerics}), "
            f"more than the {NOISE_CANNOT_JUDGE:g} within which a verdict means something. Is the output rounded "
            "or computed in a precision too coarse for finite differences (float16)?")
    if passed:
        metrics["module_calls"] = calls + engine.calls + setup.calls
        rows = [{"tensor": n, "shape": list(t.array.shape), "error": None, "tolerance": None, "ok": True,
                 "checked": "in the joint direction"} for n, t in zip(names, problem.tensors)]
        rows.insert(0, {"tensor": "all (one joint random direction)", "shape": [joint.count],
                        "error": joint.error, "tolerance": joint.relative_tolerance, "ok": True,
                        "checked": f"step {joint.step:.1e}"})
        what = ("grad_logits agrees with the loss" if kind.has(LOSS) else
                f"{_tensors(len(names))} agree{'s' if len(names) == 1 else ''} with finite differences")
        return {"message": f"{what}{problem.label} along a random direction (error {joint.error:.1e} of the "
                           f"gradient's size, tolerance {joint.relative_tolerance:.1e}: catches a relative error of "
                           f"{joint.resolution:.0e} in one element){float_note}{kink_note}",
                "metrics": metrics, "label": problem.label,
                "views": [table(f"gradient{problem.label}: directional check", rows)]}
    # ---- failure: which tensors, which elements --------------------------------
    per = [engine.directional(engine.tensor_dirs(dirs, {i})) for i in range(len(names))]
    # the most wrong first: the error relative to the tensor's gradient size (the larger side's)
    bad = sorted((i for i, r in enumerate(per) if not r.ok and not r.kinky), key=lambda i: -per[i].wrongness[0])
    if not bad:
        if joint.kinky:
            _cannot_judge_kinks(problem, resamples, f"a kink along the test direction, slope jump {joint.kink:.3g}")
        # The joint disagreement is not confirmed by any tensor on its own: within the noise. Pass, noted.
        metrics.update({"module_calls": calls + engine.calls + setup.calls, "unconfirmed_joint_ratio":
                        abs(joint.residual) / joint.tolerance})
        return {"message": f"{_tensors(len(names))}{problem.label} agree with finite differences (a slight "
                           f"joint disagreement, {abs(joint.residual) / joint.tolerance:.2g}x the tolerance, is "
                           f"not confirmed by any tensor on its own){float_note}{kink_note}",
                "metrics": metrics, "label": problem.label, "views": []}
    rows, views, located, kinked = [], [], {}, {}
    for i in bad:
        if len(located) - len(kinked) >= MAX_LOCALISED:
            break
        t = problem.tensors[i]
        if t.array.size <= FULL_MAP_MAX_ELEMENTS:
            emap = engine.element_map(i, allowance=problem.element_idiom and problem.element_idiom(i))
            located[i] = ("map", emap.worst, emap)
            err = np.abs(t.analytical - emap.numerical)
            offending = err > emap.allowed
            if offending.any() and not (offending & ~emap.kinks).any():
                kinked[i] = int(offending.sum())      # every element off sits on a kink (see _cannot_judge_kinks)
            shape2 = (int(np.prod(t.array.shape[:-1])), t.array.shape[-1]) if t.array.ndim else (1, 1)
            # drawn against what each element is allowed: rounding-level differences show as equal
            allowed = emap.allowed if emap.allowed is not None else emap.tolerance
            if np.ndim(allowed) and np.ptp(allowed) == 0:     # the same for every element: one number
                allowed = float(np.ravel(allowed)[0])
            title = f"|analytical - numerical| of {t.name}{problem.label}"
            if np.ndim(allowed):        # an idiom allowance per element: show the ratio, 1 = allowed
                err, allowed, title = err / np.maximum(allowed, 1e-300), 1.0, title + " / each element's tolerance"
            views.append(heatmap(title, err.reshape(shape2).tolist(),
                                 xlabel=f"last axis ({t.array.shape[-1] if t.array.ndim else 1})",
                                 ylabel="other axes, flattened", tolerance=float(allowed)))
        else:
            found = engine.bisect(i, dirs[i])
            located[i] = ("bisection", found.elements, found)
            if not found.elements and found.kinks:
                kinked[i] = found.kinks
    bad = [i for i in bad if i not in kinked]
    if not bad:
        _cannot_judge_kinks(problem, resamples, "kinks at " + ", ".join(
            f"{n} element{'s' if n != 1 else ''} of {names[i]!r}" for i, n in kinked.items()) +
            ", where the slopes on either side differ; the other elements agree")
    for i, (n, t, r) in enumerate(zip(names, problem.tensors, per)):
        rows.append({"tensor": n, "shape": list(t.array.shape), "error": r.wrongness[0],
                     "tolerance": r.wrongness[1], "ok": r.ok or r.kinky or i in kinked,
                     "checked": "own random direction" + (" (kink)" if r.kinky or i in kinked else "")})
    for i, (how, elements, _) in located.items():
        t = problem.tensors[i]
        if elements:
            views.append(table(f"worst elements of {t.name}{problem.label} ({how})",
                               [{"index": list(e.index), "where": where(kind, cfg, t.name, t.array.shape, e.index),
                                 "analytical": e.analytical, "numerical": e.numerical,
                                 "difference": abs(e.analytical - e.numerical)}
                                for e in elements[:8]]))
    views.insert(0, table(f"gradient{problem.label}: one random direction per tensor", rows))
    first = bad[0]
    t, r = problem.tensors[first], per[first]
    how, elements, info = located[first]
    # One tolerance on the card: the one the verdict used (this tensor's directional check, relative to
    # the gradient's size). Elements are judged against an absolute per-element noise level, which the
    # heatmap shows as "equal" and the message does not repeat as a second tolerance.
    error, tolerance = r.wrongness
    verdict = f"along the check's random direction, error {error:.2g} of the gradient's size, tolerance {tolerance:.1e}"
    if how == "map":
        # the directional measure understates a gradient wrong everywhere (10x reads as 0.005): with the full
        # map, the whole tensor's relative error first
        a, n = np.asarray(t.analytical, np.float64), np.asarray(info.numerical, np.float64)
        verdict = (f"over the tensor |analytical - numerical| = {np.linalg.norm(a - n) / max(np.linalg.norm(n), 1e-300):.2g} "
                   f"x |numerical|; {verdict}")
    if elements:
        e = elements[0]
        ta, tn = distinct(e.analytical, e.numerical)
        detail = (f"worst at index {_index_text(kind, cfg, t.name, t.array.shape, e.index)}: analytical "
                  f"{ta}, numerical {tn} ({verdict})")
        offending = [e for e in elements if e.error > e.tolerance]   # e.tolerance includes any idiom allowance
        if how == "map" and len(offending) > 1:
            n_bad = int(np.sum(np.abs(t.analytical - info.numerical) > info.allowed))
            detail += f"; {n_bad} of {t.array.size} elements are off"
        elif how == "bisection" and info.widespread:
            detail += f"; the error is spread over many elements (at least {info.groups_failed} groups fail)"
    else:
        ta, tn = distinct(r.analytical, r.numerical)
        detail = (f"along a random direction: analytical {ta}, numerical {tn} "
                  f"({verdict}); no single element stands out, the error is spread thinly")
    others = [names[i] for i in bad[1:]]
    also = f"; also wrong: {', '.join(repr(o) for o in others)}" if others else ""
    hint = ""
    if kind.has(LOSS):
        sentence = loss_diagnosis(kind, t.analytical, problem.context)
        if sentence:
            hint = f". {sentence[0].upper()}{sentence[1:]}"
    if kind.form == "module" and not hint:
        # a known-buggy backward that reproduces every tensor exactly is the strongest evidence: first
        sentence = backward_variants.explain(subject, problem.tensors, problem.context, problem.eps_analytical)
        if sentence:
            hint = f". {sentence[0].upper()}{sentence[1:]}"
    # the patterns of a full map: the worst tensor's first, then the others' (each sentence names its tensor: an
    # input gradient wrong in no simple way can sit beside a bias gradient wrong by exactly sqrt(d_k))
    for i in bad:
        if hint:
            break
        if located.get(i, ("",))[0] == "map":
            sentence = diagnosis.diagnose(kind, names[i], problem.tensors[i].analytical, located[i][2].numerical,
                                          problem.context)
            if sentence:
                hint = f". {sentence[0].upper()}{sentence[1:]}"
    if not hint and kind.name == "seq2seq":
        sentence = _encoder_side_only(names, [names[i] for i in bad],
                                      [n for n, r in zip(names, per) if r.magnitude == 0 or r.numerical == 0
                                       or r.relative_tolerance > NOISE_CANNOT_JUDGE])     # (bk: 0 up to noise)
        if sentence:
            hint = f". {sentence}"
    metrics.update({"max_error": error, "tolerance": tolerance, "worst_tensor": t.name,
                    "module_calls": calls + engine.calls + setup.calls,
                    "wrong_tensors": ",".join(names[i] for i in bad)})
    if elements:
        metrics.update({"worst_index": str(tuple(elements[0].index)), "analytical": elements[0].analytical,
                        "numerical": elements[0].numerical})
    raise CheckFailure(
        f"{kind.name}: {_tensor_words(t.name)}{problem.label} is wrong: {detail}{also}{hint}"
        f"{float_note}{kink_note}",
        metrics, {"views": views})

