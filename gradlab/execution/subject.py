"""The module under test, as checks see it: build it, call it, find its
parameters. Every call into student code goes through harness.guarded and
every value it returns is validated before a check looks at it.

The same Subject serves a module running in gradlab's own process and one
running in a worker process (gradlab.execution.remote): there the module is a
proxy, its parameters are mirrors, and discovery runs in the worker. Checks
use only the public methods below, never the student's objects directly."""
import contextlib
import inspect
import tracemalloc

import numpy as np

from gradlab.execution.discovery import arrays_at_build, explain, find_slots
from gradlab.execution.loader import is_reference_code, reference_children, reference_method, same_kind_children
from gradlab.execution.seeding import seeded
from gradlab.contract.errors import CheckSkipped, StudentError
from gradlab.execution.harness import as_float_array, describe, guarded, remote_module
from gradlab.contract.kinds import CAUSAL, SMOOTHING, same_layout
from gradlab.numerics.engine import holding


class Seen:
    """What a Subject's own calls have shown, each once it succeeded (its output validated): a build, a
    forward, a backward, the parameters found last (names), the parameters whose gradients were read."""

    def __init__(self):
        self.build = self.forward = self.backward = False
        self.slots = None
        self.grads = set()


class History:
    """What earlier checks of the same run saw of this registration (Plan.subject hands every Subject of a kind
    the same one): a backward that returned gradients once is no forward-only module's."""

    def __init__(self):
        self.backward_worked = False


class Subject:
    def __init__(self, kind, registration, cfg, impl_name="reference", files=(), history=None):
        self.kind = kind                  # KindSpec
        self.registration = registration  # Registration
        self._cfg = cfg
        self._sizes_read = all(name in cfg.extra for name in kind.module_size_names)
        self.impl_name = impl_name
        self.files = files
        self._build_ids = {}   # id(module) -> the arrays it had when built
        self.no_backward = None   # why the module has no usable backward (a forward-only module), once known
        self._output_shape = (None, None)   # (cfg, the kind's output shape for it)
        self._flags = {}          # number of inputs given -> the declared values of the flags after them
        remote = remote_module()
        self.remote = remote is not None and remote.is_remote(registration.target)   # code runs in a worker
        self.batched = self.remote    # calls go in batches (forwards, backward reading ahead): a worker's module,
                                      # or a rehearsal of one (execution/rehearsal.py)
        self.seen = Seen()            # what this Subject's calls have shown (the precondition may be read from it)
        self.history = history or History()     # what the run's earlier checks saw

    def with_cfg(self, cfg):
        """The same implementation under another cfg (a check's own sizes or settings): a new Subject, which
        reads the module's sizes again when cfg leaves them open."""
        return Subject(self.kind, self.registration, cfg, self.impl_name, self.files, self.history)

    @property
    def cfg(self):
        """cfg, with the sizes CONTRACT §3 leaves to the module (a linear's d_out) read
        from the module itself on first use, so every check and the reference agree with it."""
        if not self._sizes_read:
            self._sizes_read = True
            self._cfg = self._read_sizes(self._cfg)
        return self._cfg

    def _read_sizes(self, cfg):
        """One build and forward; if the module cannot run, the defaults stay and the
        checks report why (smoke first)."""
        try:
            module = self.run("build(cfg)", self.registration.target, cfg)
            out = self.run("forward", module.forward, self.kind.make_input(cfg, np.random.default_rng(0)))
        except (StudentError, AttributeError):
            return cfg
        sizes = self.kind.module_sizes(cfg, out)
        return cfg.replace(extra={**cfg.extra, **sizes}) if sizes else cfg

    # ---- module kinds ------------------------------------------------------
    def build(self, rehearse=None):
        """A fresh instance from the student's factory. rehearse: (check name, its random generator)
        when the check's first pass may be rehearsed in the worker with the build (execution/rehearsal.py;
        a module in gradlab's own process ignores it)."""
        if rehearse is not None and self.remote and self.kind.form == "module" and self.cfg.dtype == "float64":
            from gradlab.execution.remote import build_rehearsing
            module = self.run("build(cfg)", build_rehearsing, self.registration.target, self.cfg, self.kind.name,
                              *rehearse)
        else:
            module = self.run("build(cfg)", self.registration.target, self.cfg)
        if module is None:
            raise StudentError("build(cfg) returned None; it must return the module object")
        self._refuse_reference(module)
        if self.kind.form == "module":
            if not callable(getattr(module, "forward", None)):
                raise StudentError(f"build(cfg) returned {type(module).__name__}, which has no forward() method")
            if not callable(getattr(module, "backward", None)) and self.no_backward is None:
                self.no_backward = f"{type(module).__name__} has no backward() method"
        elif self.kind.form == "scheduler":
            if not (callable(module) or callable(getattr(module, "step", None))):
                raise StudentError(f"build(cfg) returned {type(module).__name__}, which is neither callable "
                                   "(scheduler() -> lr) nor has a step() method")
        elif not callable(getattr(module, "step", None)):
            raise StudentError(f"build(cfg) returned {type(module).__name__}, which has no step(params, grads) method")
        if not self.remote:       # in a worker, the worker notes them itself
            self._build_ids[id(module)] = arrays_at_build(module)
            while len(self._build_ids) > 16:     # it keeps the arrays alive: only the recent modules' are needed
                self._build_ids.pop(next(iter(self._build_ids)))
        self.seen.build = True
        return module

    def _refuse_reference(self, built):
        """A factory of the submission's own that returns gradlab's reference module (or a subclass of it that
        overrides nothing it is judged on), or a module of its own holding gradlab's reference of the same kind
        as a child, is refused as a registration of the reference itself is (CONTRACT §4); gradlab's own
        reference, checked as such, is not."""
        if self.remote:
            from gradlab.execution.remote import reference_children_of, reference_method_of
            ref = reference_method_of(self.registration.target, built)
            held = reference_children_of(self.registration.target, built)
        else:
            own = not is_reference_code(self.registration.target)
            ref = reference_method(built) if own else None
            held = reference_children(built) if own else []
        if ref:
            raise StudentError(f"build(cfg) returned an object that runs gradlab's own reference implementation "
                               f"({ref}) as its own, not code of its own; gradlab checks the code you wrote: "
                               f"build your module from your own class")
        same = same_kind_children(self.kind.name, held)
        if same:
            path, method = same[0]
            raise StudentError(f"build(cfg) returned a module that holds gradlab's own reference {self.kind.name} "
                               f"as its child {path!r} ({method}), not code of its own; gradlab checks the code "
                               f"you wrote: write the {self.kind.name} yourself (gradlab's reference modules of "
                               f"other kinds may be borrowed as parts, such as its LayerNorm in your block)")

    def forward(self, module, *inputs, **kwargs):
        """forward(*inputs): the kind's declared inputs, in order (CONTRACT §3). Flags left out
        (training) get their declared value, so a deterministic check may pass x alone."""
        return self._forward_output(self.run("forward", module.forward, *self.complete(inputs), **kwargs))

    def forwards(self, module, calls, deferred=False):
        """forward(*inputs) once per (inputs, writes) of `calls`, in order -> the validated outputs
        (deferred: a function returning them; through a worker the calls are then made, or their
        rehearsed answers read, when it is called).
        writes: (array, contents) or (array, d, s), each array a parameter of the module (a slot's
        value, as slots() gives it): it holds `contents` (or its own contents + s * d, as
        numerics.engine.point_value computes it) during that call only, and its own contents, bit for
        bit, after it. The student's code sees the same calls, arguments and state either way; through
        a worker they make one request per BATCH_BYTES of arguments and contents, and what forward does
        to its inputs is not sent back."""
        if not self.batched:
            outs = [self._forward_holding(module, inputs, writes) for inputs, writes in calls]
            return (lambda: outs) if deferred else outs
        if deferred:
            return lambda: self.forwards(module, calls)
        outs = []
        for part in _batches(calls):
            values = self.run("forward", self._forward_batch, module, [(self.complete(inputs), writes)
                                                                       for inputs, writes in part])
            for value in values:          # validated in order, as one call after the other would be
                if isinstance(value, StudentError):
                    self.run("forward", _reraise, value)      # said as the call itself would say it
                outs.append(self._forward_output(value))
        return outs

    def _forward_batch(self, module, calls):
        from gradlab.execution.remote import forward_calls
        return forward_calls(module, calls)

    def _backward_ahead(self, module, grad_out, slots, kept):
        from gradlab.execution.remote import backward_reading_ahead
        return backward_reading_ahead(module, grad_out, slots, kept)

    def _forward_holding(self, module, inputs, writes):
        with holding(writes):
            return self.forward(module, *inputs)

    def _forward_output(self, out):
        shape = self.output_shape()
        # the hint only matters for a wrong shape; spelling it out costs more than a small forward
        hint = "" if type(out) is np.ndarray and out.shape == shape else self.shape_hint()
        try:
            checked = as_float_array(out, "forward", shape, hint)
        except StudentError as e:
            raise StudentError(f"{e}{_first_position_nan(self.kind, out)}", where=e.where) from e.__cause__
        self.seen.forward = True
        # each call's numbers, kept: a module that writes its output into a buffer of its own and returns it
        # (np.copyto(self.buf, y); return self.buf) changed every earlier output gradlab held, and a correct one
        # failed batch_independence ("samples must not interact"). Through a worker the reply is a new array
        # already (the worker copies what a batch's calls return: worker._own_buffers)
        return checked.copy() if checked is out and not self.remote else checked

    def output_shape(self):
        """The kind's output shape for cfg (a tuple), worked out once per cfg."""
        cfg = self.cfg
        if self._output_shape[0] is not cfg:
            self._output_shape = (cfg, tuple(self.kind.output_shape(cfg)))
        return self._output_shape[1]

    def complete(self, inputs):
        """inputs followed by the declared values of the trailing flags not given."""
        flags = self._flags.get(len(inputs))
        if flags is None:       # worked out once per number of inputs: it wraps every forward
            rest = self.kind.input_specs()[len(inputs):]
            flags = self._flags[len(inputs)] = tuple(spec.value for spec in rest) \
                if rest and all(spec.role == "flag" for spec in rest) else ()
        return tuple(inputs) + flags

    def backward(self, module, grad_out, next_grads=None, next_kept=False):
        """-> a tuple with one validated gradient per input the kind differentiates (CONTRACT §3):
        (dx,) for most kinds, (dx, dmemory) for cross-attention, () for token kinds (whose
        return value is ignored). A module without a usable backward (none, or one raising
        NotImplementedError) raises CheckSkipped: the check that needs gradients cannot
        judge, and says why.
        next_grads: slots whose gradients the caller reads next, with nothing run in between
        (after finding the module's parameters again, and before reading the attention weights
        it keeps when next_kept): through a worker they come back with the backward's reply."""
        if self.no_backward:
            raise CheckSkipped(self.skip_reason())
        try:
            if self.batched and next_grads is not None:
                got = self.run("backward", self._backward_ahead, module, grad_out, next_grads, next_kept)
            else:
                got = self.run("backward", module.backward, grad_out)
        except StudentError as e:
            if not self.not_implemented(e):
                raise
            raise CheckSkipped(self.skip_reason()) from None
        wanted = self.kind.grad_inputs()
        self.history.backward_worked = True
        if not wanted:
            self.seen.backward = True
            return ()
        if len(wanted) == 1:
            shape = tuple(wanted[0].shape(self.cfg))
            hint = ""
            if not (type(got) is np.ndarray and got.shape == shape):   # the words only matter for a wrong shape
                words = self.kind.symbolic(type(self.kind).input_shape)
                hint = (f" = {words} from cfg" if words else "") + " (the gradient with respect to forward's input x)"
            got = (as_float_array(got, "backward", shape, hint),)
        else:
            names = ", ".join(f"d{spec.name}" for spec in wanted)
            if not isinstance(got, (tuple, list)) or len(got) != len(wanted):
                raise StudentError(f"backward returned {describe(got)}; it must return a tuple ({names}), one "
                                   "gradient per input of forward")
            got = tuple(as_float_array(g, f"backward's d{spec.name}", spec.shape(self.cfg),
                                       f" (the shape of forward's {spec.name})") for g, spec in zip(got, wanted))
        self.seen.backward = True
        return got

    def not_implemented(self, error):
        """True (and the module noted as forward-only) when a StudentError from
        backward is its NotImplementedError (raised here, or in the worker process).
        False for one whose backward returned earlier in the run (History): no
        forward-only module's, so an error of this call, and its message says why."""
        cause, remote = error.__cause__, remote_module()
        if not (isinstance(cause, NotImplementedError) or remote is not None
                and isinstance(cause, remote.RemoteException) and cause.info.get("not_implemented")):
            return False
        if self.history.backward_worked:      # then it is no forward-only module: an error of this call
            error.args = (f"{error.args[0]}; it returned gradients earlier in this run, so this is no forward-only "
                          "module's backward (one raises it every time)",) + error.args[1:]
            return False
        self.no_backward = "backward() raised NotImplementedError" + (f" at {error.where}" if error.where else "")
        return True

    def skip_reason(self):
        return (f"{self.kind.name}: {self.no_backward}: a forward-only module; this check needs gradients, so it "
                "cannot judge it (the forward checks can)")

    def slots(self, module):
        """Parameter slots, found after a backward (attribute-pair gradients exist only then).
        For a forward-only module: the float arrays it held when built."""
        if self.remote:
            from gradlab.execution.remote import slots_of
            slots = self.run("finding parameters", slots_of, module, self.no_backward is not None)
        else:
            slots = self.run("finding parameters", find_slots, module, self._build_ids.get(id(module)),
                             self.no_backward is not None)
        for slot in slots:
            usable_parameter(slot)   # read-only, float16, integer or masked: named, not met as a crash
        self.seen.slots = [slot.name for slot in slots]
        return slots

    def explain_slots(self, module):
        """What discovery looked at and found, for a message when it found nothing."""
        if self.remote:
            from gradlab.execution.remote import explain_slots
            return self.run("finding parameters", explain_slots, module)
        return self.run("finding parameters", explain, module, self._build_ids.get(id(module)))

    def read_grad(self, slot):
        """The gradient backward left for one parameter, as it is (None when missing; not validated)."""
        grad = self.run(f"reading the gradient of {slot.name!r}", slot.grad)
        if grad is not None:
            self.seen.grads.add(slot.name)
        return grad

    def read_grads(self, slots):
        """name -> copy of the gradient backward left for each parameter."""
        return {slot.name: g for slot, g in zip(slots, self.grads_of(slots))}

    def grads_of(self, slots):
        """[copy of the gradient backward left for each parameter], validated, in
        the order of `slots` (which may come from several modules)."""
        raw = None
        if self.remote and slots:       # one request for all of them
            try:
                raw = self.run("reading gradients", slots[0]._r[0].grads, slots)
            except StudentError as e:   # named after the parameter whose gradient raised, as read one by one
                i = getattr(e.__cause__, "info", {}).get("index")
                if type(i) is not int or not 0 <= i < len(slots):
                    raise
                raise StudentError(e.__cause__.message_for(f"reading the gradient of {slots[i].name!r}"),
                                   where=e.where) from e.__cause__
        out = []
        for i, slot in enumerate(slots):
            g = raw[i] if raw is not None else self.read_grad(slot)
            if g is None:
                raise StudentError(f"backward left no gradient for parameter {slot.name!r} "
                                   f"(expected {slot.describe_grad()} of shape {slot.value.shape})")
            out.append(as_float_array(in_parameter_shape(g, slot.value), f"the gradient of {slot.name!r} "
                                      f"({slot.describe_grad()})", slot.value.shape).copy())
        self.seen.grads.update(slot.name for slot in slots)
        return out

    def make_input(self, rng):
        return self.kind.make_input(self.cfg, rng)

    def make_inputs(self, rng):
        """forward's arguments as a tuple, as the kind declares them; the first is make_input's draw."""
        rest = self.kind.input_specs()[1:]
        return (self.make_input(rng),) + tuple(spec.make(self.cfg, rng) for spec in rest)

    def fresh(self, rng, randomize=True):
        """Build, run one forward/backward to find the parameters, and (by default)
        give them random values so that no bug hides behind gamma=1 or bias=0.
        A forward-only module skips the backward. Returns (module, slots)."""
        module = self.build()
        out = self.forward(module, *self.make_inputs(rng))
        try:
            self.backward(module, np.ones_like(out), next_grads=())   # (through a worker: slots read with it)
        except CheckSkipped:
            pass        # forward-only: its parameters are the arrays it holds
        slots = self.slots(module)
        if randomize:
            randomize_params(slots, rng)
        return module, slots

    # ---- function kinds and optimizers --------------------------------------
    def call(self, *args, what=None, **kwargs):
        name = what or f"{self.kind.name}(...)"
        return self.run(name, self.registration.target, *args, **kwargs)

    def step(self, optimizer, params, grads):
        names = list(params)
        out = self.run("step(params, grads)", optimizer.step, params, grads)
        _kept_keys(names, params)
        return out

    def load_params(self, module, reference_params):
        """Call the registration's param_map function: load(module, reference_params)."""
        return self.run("param_map(module, reference_params)", self.registration.param_map, module,
                        reference_params)

    def method(self, obj, name, *args):
        """obj.name(*args), guarded: for kinds whose objects have more methods than
        forward/backward/step (mixed_precision's to_half_precision). StudentError if absent."""
        fn = getattr(obj, name, None)
        if not callable(fn):
            raise StudentError(f"{type(obj).__name__} has no {name}() method")
        return self.run(f"{name}(...)", fn, *args)

    def attribute(self, obj, name):
        """obj.name, or None when it has none (e.g. attn_weights, mixed_precision's loss_scale);
        guarded: a property of the student's that raises is the module's error."""
        return self.run(f"reading {name}", getattr, obj, name, None)

    @contextlib.contextmanager
    def global_seeds(self, value):
        """The global generators (np.random's, random's) seeded with `value` where the student's code runs,
        for the block: code that draws from them (article 000's np.random.randn) sees the same numbers whenever
        the check runs, alone or in a full run. In a worker the seed goes with the block's first request; in
        gradlab's own process the generators' states are put back after the block."""
        if self.remote:
            session = self.registration.target._session
            session.reseed = value
            try:
                yield
            finally:
                session.reseed = None
            return
        with seeded(value):         # (plan.global_seed: in [0, 2**32))
            yield

    @contextlib.contextmanager
    def peak_memory(self):
        """{"peak": bytes}: the peak that the block's calls into the student's code allocate
        (tracemalloc, which sees NumPy's arrays), measured where the code runs."""
        box = {"peak": 0}
        if self.remote:
            session = self.registration.target._session
            session.trace_memory = box
            try:
                yield box
            finally:
                session.trace_memory = None
            return
        tracing = tracemalloc.is_tracing()      # someone else's tracing (python -X tracemalloc) is left running
        if not tracing:
            tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            yield box
            box["peak"] = tracemalloc.get_traced_memory()[1] - before
        finally:
            if not tracing:
                tracemalloc.stop()

    def kept_attention(self, module):
        """Every attn_weights array the module keeps, on itself or on its parts
        (gradlab.numerics.tolerance.kept_attention; in the worker when the module is there)."""
        if self.remote:
            from gradlab.execution.remote import kept_attention_of
            return self.run("reading attn_weights", kept_attention_of, module)
        from gradlab.numerics.tolerance import kept_attention
        return kept_attention(module)

    # ---- helpers -------------------------------------------------------------
    def run(self, what, fn, *args, **kwargs):
        """Call student code (or code that calls it, such as a model holding the
        student's parts) under the guard: failures become one-line StudentErrors."""
        return guarded(what, fn, *args, files=self.files, alarm=not self.remote, **kwargs)

    def shape_hint(self):
        """" = (batch_size, seq_len, d_model)": the cfg fields the expected output shape comes from."""
        words = self.kind.symbolic(type(self.kind).output_shape)
        if not words:
            return ""
        tail = ""
        for name in self.kind.module_size_names:
            value = self.cfg.extra.get(name)
            tail += (f", {name} = {value} as your module chose" if value is not None else
                     f", {name} = {self.kind.output_shape(self.cfg)[-1]} by default (your module's own could "
                     "not be read from its forward output)")
        return f" = {words} from cfg{tail}"



def _kept_keys(names, params):
    """A step that removed a parameter from the caller's dict (params.pop, params.clear) is the student's error:
    the checks read every parameter after the step, and the training loop that calls it would too."""
    removed = [n for n in names if n not in params]
    if removed:
        shown = ", ".join(repr(n) for n in removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
        raise StudentError(f"step(params, grads) removed {shown} from params: update the arrays in place and "
                           "keep the dict's keys")


def _reraise(error):
    raise error


BATCH_BYTES = 8 << 20    # the arguments and held contents of the forwards sent in one request, at most


def _batches(calls):
    """`calls` (Subject.forwards') cut into consecutive runs of at most BATCH_BYTES each (a run has at
    least one call). A point's direction (a (array, d, s) write) travels once per request: not counted."""
    run, size = [], 0
    for inputs, writes in calls:
        nbytes = sum(a.nbytes for a in inputs if isinstance(a, np.ndarray)) + \
            sum(w[1].nbytes for w in writes if len(w) == 2)
        if run and size + nbytes > BATCH_BYTES:
            yield run
            run, size = [], 0
        run.append((inputs, writes))
        size += nbytes
    if run:
        yield run


def usable_parameter(slot):
    """gradlab perturbs parameters in place, as an optimizer updates them: a
    read-only parameter is named in one line, not met as a crash."""
    p = slot.value
    if not p.flags.writeable:
        raise StudentError(f"parameter {slot.name!r} is read-only ({slot.name}.flags.writeable is False); gradlab "
                           "changes parameters in place, as an optimizer's step does: leave them writeable")
    if p.dtype.kind != "f":
        raise StudentError(f"parameter {slot.name!r} has dtype {p.dtype}; parameters must be floating point "
                           "(an integer array cannot take a gradient step)")
    if type(p) is not np.ndarray and isinstance(p, np.ma.MaskedArray):    # np.ma is imported on first use: 40 ms
        raise StudentError(f"parameter {slot.name!r} is a numpy.ma.MaskedArray; parameters must be plain "
                           "ndarrays (masked arithmetic skips masked entries, so no gradient of them can be checked)")


def copies(inputs):
    """Fresh copies of forward's arguments (flags and other non-arrays as they are)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in inputs)


def in_parameter_shape(grad, value):
    """A gradient in its parameter's shape: one that holds the same numbers without the parameter's leading
    axes of length 1 (a (D,) gradient for a (1, D) bias, the reference's own shape: p -= lr * g broadcasts) is
    read as the parameter's shape; anything else as it is, for the caller to judge."""
    if isinstance(grad, np.ndarray) and grad.shape != value.shape and same_layout(value.shape, grad.shape):
        return grad.reshape(value.shape)
    return grad


def randomize_params(slots, rng):
    """Give every parameter random values of a sensible scale, in place.
    Constant initialisations (zeros, ones) are where bugs hide: dx = g without
    gamma passes when gamma == 1."""
    for slot in slots:
        p = slot.value
        fan_in = p.shape[0] if p.ndim >= 2 else None
        scale = 1.0 / np.sqrt(fan_in) if fan_in else 0.5
        p[...] = rng.standard_normal(p.shape) * scale


# ---- calling conventions of the function kinds (CONTRACT §3) ---------------

def call_softmax(subject, x):
    out = subject.call(x, what="softmax(x)")
    return as_float_array(out, "softmax(x)", x.shape)


IGNORE_INDEX = 0   # the padding id the checks ignore: inside the vocabulary, as in most course code


def loss_inputs(subject, rng):
    """(logits (B, T, V) in cfg.dtype, int targets avoiding IGNORE_INDEX) for a loss kind."""
    cfg = subject.cfg
    logits = (2 * rng.standard_normal(subject.kind.input_shape(cfg))).astype(cfg.np_dtype)
    return logits, rng.integers(IGNORE_INDEX + 1, cfg.vocab_size, size=logits.shape[:-1])


def with_ignored(targets, rng):
    """A copy of targets with about a third (at least one, never all) set to
    IGNORE_INDEX, so both the ignored and the counted paths are exercised."""
    padded = targets.copy()
    flat = padded.reshape(-1)
    count = min(max(1, flat.size // 3), flat.size - 1)
    flat[rng.choice(flat.size, size=count, replace=False)] = IGNORE_INDEX
    return padded


SMOOTHING_EPSILON = 0.1   # the label-smoothing epsilon the loss checks pass (the smoothing check tries others)
# (article 000's label smoothing guards its log, np.log(p + 1e-10), on every class: what such an eps may move
# is bounded by gradlab.numerics.tolerance.smoothing_bounds)


def loss_options(kind, ignore_index=None):
    """The arguments a loss kind takes after (logits, targets), positionally: (epsilon,) for label
    smoothing; for cross_entropy (ignore_index,) when one is given."""
    if kind.has(SMOOTHING):
        return (SMOOTHING_EPSILON,)
    return () if ignore_index is None else (ignore_index,)


def call_cross_entropy(subject, logits, targets, ignore_index=None):
    """-> (loss as float, grad_logits), validated. Label smoothing gets epsilon (SMOOTHING_EPSILON)."""
    if subject.kind.has(SMOOTHING):
        got = call_smoothing(subject, logits, targets, SMOOTHING_EPSILON)
        return validate_loss(subject, got, f"{subject.kind.name}(logits, targets, epsilon)", logits)
    kwargs = {} if ignore_index is None else {"ignore_index": ignore_index}
    what = "cross_entropy(logits, targets" + (", ignore_index=...)" if kwargs else ")")
    if kwargs and not _accepts(subject.registration.target, logits, targets, **kwargs):
        raise StudentError(f"{what}: your function takes no ignore_index argument; CONTRACT §3's signature is "
                           "cross_entropy(logits, targets, ignore_index=None): targets equal to ignore_index "
                           "(padding) add nothing to the loss and get a zero gradient")
    got = subject.call(logits, targets, what=what, **kwargs)
    return validate_loss(subject, got, what, logits)


def call_smoothing(subject, logits, targets, epsilon):
    """label_smoothing(logits, targets, epsilon), unvalidated: epsilon by position, or by name where the function
    takes no third positional argument (`*, epsilon=0.1`: CONTRACT §3 asks for the argument by that name)."""
    what = f"{subject.kind.name}(logits, targets, epsilon={epsilon})"
    if _accepts(subject.registration.target, logits, targets, epsilon):
        return subject.call(logits, targets, epsilon, what=what)
    return subject.call(logits, targets, what=what, epsilon=epsilon)


def validate_loss(subject, got, what, logits):
    """A loss function's return value -> (loss as float, grad_logits), or StudentError."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise StudentError(f"{what} returned {describe(got)}; it must return (loss, grad_logits)")
    loss, grad = got
    loss = as_float_array(np.asarray(loss, dtype=float) if np.isscalar(loss) or np.ndim(loss) == 0 else loss,
                          f"{what}'s loss", ())
    flat = " (the shape of logits: reshape the flattened (B*T, V) gradient back to (B, T, V))" \
        if np.ndim(grad) == 2 and np.size(grad) == logits.size else " (the shape of logits)"
    return float(loss), as_float_array(grad, f"{what}'s grad_logits", logits.shape, flat)


def accepts_keyword(subject, name):
    """False when the registered function certainly takes no argument `name`
    (its signature says so); True when it does or when there is no signature to read."""
    try:
        inspect.signature(subject.registration.target).bind_partial(**{name: None})
    except TypeError:
        return False
    except ValueError:      # no signature to read (a builtin): let the call decide
        pass
    return True


def takes_ignore_index(subject):
    """The loss checks run with padding only when CONTRACT §3 gives the kind an ignore_index (cross_entropy,
    not label_smoothing) and the student's function takes one (else the signature check says so, once)."""
    return "ignore_index" in subject.kind.keyword_args() and accepts_keyword(subject, "ignore_index")


def _accepts(fn, *args, **kwargs):
    """False only when fn's signature certainly cannot take these arguments."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:      # no signature to read (a builtin): let the call decide
        pass
    return True


def call_scalar(subject, what, *args):
    """For schedule and clip_grad_norm: the result must be one finite number."""
    got = subject.call(*args, what=what)
    try:
        value = float(np.asarray(got).reshape(()))
    except (TypeError, ValueError):
        raise StudentError(f"{what} returned {describe(got)}; it must return one number") from None
    if not np.isfinite(value):
        raise StudentError(f"{what} returned {value}")
    return value


def _first_position_nan(kind, out):
    """Why a causal kind's forward returns NaN at position 0 of every sample and nowhere else: "" otherwise."""
    if not kind.has(CAUSAL) or type(out) is not np.ndarray or out.ndim < 2 or out.shape[1] < 2 \
            or out.dtype.kind != "f":
        return ""
    bad = ~np.isfinite(out).reshape(out.shape[0], out.shape[1], -1)
    if not (bad[:, 0].all() and not bad[:, 1:].any()):
        return ""
    return ("; only at position 0 of every sample: the first query may attend to itself alone, and a causal mask "
            "that hides the diagonal too (np.triu(ones, k=0), or j >= i) leaves it no key at all, so its softmax over "
            "scores that are all -inf is NaN. Mask only the keys after the query, j > i (np.triu(ones, k=1))")
