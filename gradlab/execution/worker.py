"""The worker: a separate process that imports the student's files and runs
their code for gradlab, which judges what comes back in its own process
(gradlab.execution.remote is the other side).

    python -m gradlab.execution.worker READ_FD WRITE_FD

It reads requests from READ_FD and answers on WRITE_FD (a pipe pair of its
own: the student's prints go to stdout/stderr, captured by gradlab, and cannot
corrupt the messages). One request at a time:

    init     load the submission (a file, a module name, or gradlab's reference)
    call     call a registered function, or a method of an object built here
    getattr  read an attribute of such an object
    slots    find an object's parameters (discovery runs here, on the real object)
    grads    read the gradients backward left for some parameters
    calls    several calls in one request, each with parameters held at given contents,
             and what gradlab reads next read ahead (a gradient check's forwards)

Arrays are shared by handle with the parent: each side keeps a copy of the
last synchronised contents and sends what changed, so an array gradlab
writes into (a perturbed parameter) and one the student's code writes into
(an input edited in place, a parameter updated by step) stay the same on
both sides, as when everything ran in one process.
"""
import errno
import faulthandler
import signal
import sys
import traceback
import tracemalloc
import warnings
from math import isfinite as _isfinite
from time import monotonic as _monotonic

# Bound before any student code runs: a file that patches these later does not reach them.
from gradlab.execution.protocol import IDLE_SPIN, NOT_PLAIN, Channel, ChannelClosed, Decoder, Encoder, changed, \
    plain_scalar, snapshot, type_name as _type_name
from gradlab.execution import limits as _limits
from gradlab.execution.harness import student_frame as _student_frame, student_traceback as _student_traceback
from gradlab.contract.errors import UsageError as _UsageError
from gradlab.execution.loader import is_reference_code as _is_reference_code, \
    reference_children as _reference_children, reference_method as _reference_method
from gradlab.numerics.engine import holding

import numpy as np
import random as _random

_ndarray = np.ndarray
_FACTORY_METHODS = ("forward", "backward", "step")


class State:
    def __init__(self, dump_file):
        self.objects = {}        # handle -> object (registered callables, built modules, slots)
        self.arrays = {}         # handle -> [array, snapshot]   (shared with the parent)
        self.by_id = {}          # id(array) -> handle, for arrays this side shared
        self.build_ids = {}      # object handle -> ids of its arrays when built
        self.next_handle = -1    # this side's handles are negative, the parent's positive
        self.files = ()
        self.dump = dump_file
        self.factories = set()   # handles of registered factories
        self.rngs = []           # generators decoded for the current call (their states go back)
        self.err = {}            # NumPy's error handling in gradlab where it calls (the last one sent)
        self.chan = None         # the channel to gradlab (a rehearsal sends several messages for one request)
        self.replied = False     # the current request's reply was sent already (a rehearsal's build)

    # ---- handles -------------------------------------------------------------------
    def new_handle(self):
        h = self.next_handle
        self.next_handle -= 1
        return h

    def keep(self, obj):
        h = self.new_handle()
        self.objects[h] = obj
        return h

    def share(self, array):
        """The handle of a shared array (a new one if it is not shared yet)."""
        h = self.by_id.get(id(array))
        if h is not None and self.arrays.get(h, [None])[0] is array:
            return h, False
        h = self.new_handle()
        self.arrays[h] = [array, snapshot(array)]
        self.by_id[id(array)] = h
        return h, True

    def release(self, handles):
        for h in handles:
            self.objects.pop(h, None)
            self.build_ids.pop(h, None)
            entry = self.arrays.pop(h, None)
            if entry is not None and self.by_id.get(id(entry[0])) == h:
                del self.by_id[id(entry[0])]

    # ---- values ----------------------------------------------------------------------
    def encoder(self, new_arrays_shared=False, by_value=False):
        """by_value: every array as its contents now, even one gradlab shares (it may hold others later)."""
        tag = None if by_value else self._share_tag if new_arrays_shared else self._array_tag
        return Encoder(tag, self._object_tag)

    def _array_tag(self, array, enc):
        h = self.by_id.get(id(array))
        if h is not None and self.arrays.get(h, _NO_ENTRY)[0] is array:
            return {"x": h}
        return None

    def _share_tag(self, array, enc):
        h, new = self.share(array)
        return enc.array(array, h) if new else {"x": h}

    def _object_tag(self, obj, enc):
        if isinstance(obj, _ndarray):           # a subclass: judged by its numbers, as in one process
            if isinstance(obj, np.ma.MaskedArray):
                return {"ma": enc.encode(np.ma.getdata(obj).view(_ndarray)),
                        "mask": enc.encode(np.ma.getmaskarray(obj).view(_ndarray))}
            return enc.encode(obj.view(_ndarray))
        h = self.keep(obj)
        tag = {"r": h, "type": _type_name(obj), "c": _callables(obj)}
        ref = _reference_method(obj)        # gradlab refuses it unless gradlab's reference is what it checks
        if ref:
            tag["ref"] = ref
        return tag

    def decoder(self, header, payload):
        return Decoder(header, payload, self._object_hook, self._array_hook)

    def _object_hook(self, node):
        if "r" in node:
            return self.objects[node["r"]]
        if "x" in node:
            return self.arrays[node["x"]][0]
        if "cfg" in node:
            return _config(node["cfg"])
        if "rng" in node:
            rng = _generator(node["rng"])
            self.rngs.append(rng)
            return rng
        raise ValueError("unknown object tag")

    def _array_hook(self, handle, array):
        if handle is None:
            return array
        self.arrays[handle] = [array, snapshot(array)]
        self.by_id[id(array)] = handle
        return array

    # ---- requests ------------------------------------------------------------------------
    def handle(self, header, payload):
        """One request -> (reply, buffers). Keys that would be empty are left out both ways."""
        if "release" in header:
            self.release(header["release"])
        if "err" in header:      # NumPy's error handling where gradlab calls: sent when it changes
            self.err = _np_err(header["err"])
        if type(header.get("reseed")) is int:     # a check starts: the global generators, from its own seed
            _reseed(header["reseed"])
        dec = self.decoder(header, payload)
        for h, node in header.get("sync", ()):
            value = dec.array_view(node)        # copied below: no copy of its own
            entry = self.arrays.get(h)
            if entry is None:
                continue
            if entry[0].shape == value.shape and entry[0].dtype == value.dtype:
                entry[0][...] = value
            else:
                entry[0] = value.copy()
            entry[1] = snapshot(entry[0], entry[1])
        op = header.get("op")
        enc = self.encoder()
        try:
            if op == "call":
                reply = self.call(header, dec, enc)
                if type(header.get("ahead")) is dict:     # what gradlab reads next (remote.grads_with_backward)
                    reply["ahead"] = self.read_ahead(header["ahead"], header, enc)
            elif op == "repeat":
                reply = self.repeat(header, enc)
            elif op == "getattr":
                reply = self.getattr(header, enc)
            elif op == "setattr":
                reply = self.setattr(header)
            elif op == "slots":
                reply = self.slots(header, enc)
            elif op == "grads":
                reply = self.grads(header, enc)
            elif op == "explain":
                reply = self.explain(header)
            elif op == "kept_attention":
                try:        # only ever an allowance: if the student's code broke it (patched builtins), none
                    reply = {"value": self.kept(header["target"], header, enc)}
                except _StudentRaised:
                    reply = {"value": []}
            elif op == "calls":
                reply = self.calls(header, dec, enc)
            elif op == "ping":
                reply = {"value": None}
            else:
                reply = {"internal": f"unknown request {op!r}"}
        except _StudentRaised as e:
            reply = {"raised": e.info}
        if self.replied:         # sent already, and the messages after it (rehearsal.py)
            self.replied = False
            return None, []
        updates = self.updates(enc)
        if updates:
            reply["updates"] = updates
        return reply, enc.buffers

    def updates(self, enc):
        """The shared arrays the request changed (the student's code wrote into them), each whole."""
        out = []
        for h, array, snap in changed(self.arrays, _same):
            self.arrays[h][1] = snap
            out.append([h, enc.array(array)])
        return out

    def call(self, header, dec, enc):
        self.rngs = []
        target = self.objects[header["target"]]
        args = dec.decode(header.get("args", []))
        kwargs = dec.decode(header["kwargs"]) if "kwargs" in header else {}
        reply, value = self.invoke(header, target, header.get("method"), args, kwargs, enc)
        node = reply["value"]
        if header["target"] in self.factories and isinstance(node, dict) and "r" in node:
            with self.student(header):
                self.build_ids[node["r"]] = _arrays_at_build(value)
                held = [] if _is_reference_code(target) else _reference_children(value)   # gradlab's modules in it
            if held:
                node["held"] = [[path, method] for path, method in held[:20]]
            if isinstance(header.get("script"), dict) and self.chan is not None:
                reply["script"] = {"stream": True}    # the first pass of a check, rehearsed (rehearsal.py)
                _rehearse(self, header, node["r"], value,
                          lambda found=None: self.send_build(header, node["r"], reply, enc, found))
                self.replied = True
                return reply
            try:      # what slots() would find right now: saves gradlab a request after most builds
                reply["slots"] = self.describe_slots(node["r"], header, enc)
            except _StudentRaised:
                pass
        return reply

    def send_build(self, header, h, reply, enc, found=None):
        """A rehearsed build's reply, sent when the rehearsal is about to call the module (its parameters
        as the check set them: gradlab's own setting writes the same bits), before the rehearsal's entries.
        found: the parameters the rehearsal found (discovery, as describe_slots would run it), if it did."""
        try:
            reply["slots"] = self.describe_slots(h, header, enc, found=found)
        except _StudentRaised:
            pass
        self.send(reply, enc)

    def send(self, message, enc):
        """One message to gradlab, with the shared arrays changed since the last one (as a reply has them)."""
        updates = self.updates(enc)
        if updates:
            message["updates"] = updates
        self.chan.send(message, enc.buffers)

    def invoke(self, header, target, method, args, kwargs, enc):
        """target(*args, **kwargs), or target.method(...), as `call` runs it for a request -> (its reply,
        the value itself). A rehearsal (rehearsal.py) calls this with arguments of its own."""
        containers = _containers(args, kwargs)
        fn = target if method is None else None
        trace = header.get("trace") is True
        err = _np_err(header["err"]) if "err" in header else self.err     # a step of "calls" has its own
        with self.student(header), _np_warnings(err) as seen:
            if fn is None:
                fn = getattr(target, method)
            if trace:
                value, peak = _traced(fn, args, kwargs)
            else:
                value, peak = fn(*args, **kwargs), None
            node = enc.encode(value)        # may read the student's object (its callables): still guarded
        reply = {"value": node}
        if seen:
            reply["warnings"] = [[type(w.message).__name__, str(w.message)[:300]] for w in seen[:20]
                                 if isinstance(w.message, Warning)]
        if peak is not None:
            reply["peak"] = peak
        if containers:
            rebound = self.rebound(containers, enc)
            if rebound:
                reply["rebound"] = rebound
        if self.rngs:
            reply["rngs"] = [rng.bit_generator.state for rng in self.rngs]
        return reply, value

    def repeat(self, header, enc):
        """Calls a function or a method with no arguments up to header["n"] times in a row, as
        gradlab would one call at a time with nothing in between (a scheduler's next steps):
        the values in order. Stops after a value that is not a finite number (gradlab looks at
        it before it calls again), at a call that raises (its error comes back as "stopped"),
        at a call that ran past header["limit"] seconds ("overtime": one call at a time, gradlab
        would have stopped it there), and starts no call after header["budget"] seconds
        (gradlab's deadline for the request leaves every call its whole time limit)."""
        target = self.objects[header["target"]]
        method = header.get("method")
        n, budget, limit = int(header["n"]), float(header["budget"]), header.get("limit")
        values, warned = [], []
        reply = {"value": values}
        start = _monotonic()
        for _ in range(n):
            seen, raised, began = [], None, _monotonic()
            try:
                with self.student(header), _np_warnings(self.err) as seen:
                    value = target() if method is None else getattr(target, method)()
                    node = enc.encode(value)
            except _StudentRaised as e:
                raised = e.info
            if limit and _monotonic() - began > limit:
                reply["overtime"] = True
                break
            warned += [[type(w.message).__name__, str(w.message)[:300]] for w in seen[:20]
                       if isinstance(w.message, Warning)]
            if raised is not None:
                reply["stopped"] = raised
                break
            values.append(node)
            if not _plain_number(value) or _monotonic() - start > budget:
                break
        if warned:
            reply["warnings"] = warned[:20]
        return reply

    def calls(self, header, dec, enc):
        """Several calls in one request, in order, each run as `call` runs it (its value sent by
        value). A call's "writes" ([[handle, array], ...], or [[handle, d, s], ...] for the point
        contents + s * d that numerics.engine.point_value computes) are shared arrays that hold those
        contents while it runs: written before it, put back bit for bit after it, whatever it did. The first
        call that raises ends the request: "failed" says how, "value" has the replies before it.
        "ahead": what gradlab reads next, read right after the last call (read_ahead)."""
        done = []
        by_value = self.encoder(by_value=True)
        by_value.buffers = enc.buffers
        for i, step in enumerate(header.get("calls", [])):
            writes = [(self.arrays[h][0], dec.array_view(node), *step_size)
                      for h, node, *step_size in step.get("writes", ())]
            start = len(enc.buffers)
            try:
                with holding(writes):
                    done.append(self.call(step, dec, by_value))
            except _StudentRaised as e:
                e.info["index"] = i
                return {"value": done, "failed": e.info}
            _own_buffers(enc.buffers, start)
        reply = {"value": done}
        if isinstance(header.get("ahead"), dict):
            reply["ahead"] = self.read_ahead(header["ahead"], header, enc)
        return reply

    def read_ahead(self, ahead, header, enc, slots=None):
        """Read now what gradlab reads next with nothing run in between: the parameters of the
        object ahead["slots"], the gradients of the slots ahead["grads"] (or of `slots`, slot objects
        of a rehearsal), the attention weights the object ahead["kept"] keeps, in that order. Reading
        stops quietly at the first read that raises: gradlab then asks for that one itself, and sees
        the error there."""
        out = {}
        try:
            if "slots" in ahead:
                out["slots"] = self.describe_slots(ahead["slots"], header, enc)
            if "grads" in ahead or slots is not None:
                out["grads"] = self.grads({"slots": ahead.get("grads", ()), "asked": 0}, enc, slots)["value"]
            if "kept" in ahead:
                out["kept"] = self.kept(ahead["kept"], header, enc)
        except _StudentRaised:
            pass
        return out

    def kept(self, h, header, enc):
        """The attention weights object h keeps (numerics.tolerance.kept_attention, run on the real object)."""
        with self.student(header):
            return enc.encode(list(_kept_attention(self.objects[h])))

    def rebound(self, containers, enc):
        """Containers (dicts, lists) the call changed: an entry replaced (rebinding
        params[k] instead of updating it in place), added or removed. Sent whole;
        arrays the parent already knows travel as their handle, so it keeps its own."""
        shared = self.encoder(new_arrays_shared=True)
        shared.buffers = enc.buffers
        out = []
        for path, container, before in containers:
            if _same_entries(container, before):
                continue
            out.append([path, shared.encode(container)])
        return out

    def getattr(self, header, enc):
        target = self.objects[header["target"]]
        name = header["name"]
        with self.student(header):
            try:
                value = getattr(target, name)
            except AttributeError:
                return {"missing": True}
            if callable(value) and not isinstance(value, (_ndarray, type)):
                return {"callable": True}
            return {"value": enc.encode(value)}

    def setattr(self, header):
        """A plain value gradlab sets (the optimizer's lr in gradlab train)."""
        value = header.get("value")
        if value is not None and type(value) not in (bool, int, float, str):
            return {"internal": "setattr takes a plain value"}
        with self.student(header):
            setattr(self.objects[header["target"]], str(header["name"]), value)
        return {"value": None}

    def slots(self, header, enc):
        return {"value": self.describe_slots(header["target"], header, enc, bool(header.get("forward_only")))}

    def explain(self, header):
        h = header["target"]
        with self.student(header):
            return {"value": str(_explain(self.objects[h], self.build_ids.get(h)))[:2000]}

    def describe_slots(self, h, header, enc, forward_only=False, found=None):
        """The parameters of object h, found now (or `found` by the same discovery just before), each shared
        (its contents sent when newly shared)."""
        if found is None:
            with self.student(header):
                found = _find_slots(self.objects[h], self.build_ids.get(h), forward_only)
        out = []
        for slot in found:
            value = slot.value
            masked = isinstance(value, np.ma.MaskedArray)      # said to gradlab, which refuses it by name
            if type(value) is not _ndarray:
                value = value.view(_ndarray)      # a subclass: its data, in place
                slot.value = value
            if value.dtype.str not in _ALLOWED:
                raise _StudentRaised({"type": "TypeError", "detail": f"parameter {slot.name!r} has dtype "
                                      f"{value.dtype}; parameters must be numeric arrays", "where": None})
            ah, new = self.share(value)
            node = enc.array(value, ah) if new else {"x": ah}
            out.append({"name": slot.name, "slot": self.keep(slot), "value": node,
                        "grad": slot.describe_grad(), "readonly": not value.flags.writeable, "masked": masked})
        return out

    def grads(self, header, enc, slots=None):
        """The gradients of header["slots"] (or of `slots`, slot objects), in order. Only the first
        header["asked"] were asked for; the others are read ahead (gradlab reads a module's parameters
        one after another): reading stops quietly at the first of those that raises, which gradlab
        then asks for by itself."""
        out = []
        asked = header.get("asked")
        asked = asked if type(asked) is int else len(header["slots"])
        for i, slot in enumerate(slots if slots is not None else [self.objects[sh] for sh in header["slots"]]):
            try:
                with self.student(header):
                    out.append(enc.encode(slot.grad()))
            except _StudentRaised as e:
                if i >= asked:
                    break
                e.info["index"] = i
                raise
        return {"value": out}

    def student(self, header, loading=False):
        return _Guard(self, loading)


_ALLOWED = None


_np_seed, _py_seed = np.random.seed, _random.seed     # bound before any student code runs


def _own_buffers(buffers, start):
    """The arrays a call of a batch returned, copied: the encoder keeps the array itself (no copy), and a module
    that returns a buffer of its own (np.copyto(self.buf, y); return self.buf) wrote every call's numbers into
    the one array before the reply went out."""
    for i in range(start, len(buffers)):
        if isinstance(buffers[i], _ndarray):
            buffers[i] = buffers[i].copy()


def _reseed(value):
    """The global generators (np.random's, random's) from a check's own seed (plan.global_seed)."""
    _np_seed(value % 2**32)
    _py_seed(value)


def _same(array):
    return array


def _rehearse(state, header, handle, module, send_build):
    from gradlab.execution.rehearsal import rehearse
    rehearse(state, header, handle, module, send_build)


_NUMBERS = frozenset((int, float, np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                      np.uint8, np.uint16, np.uint32, np.uint64))


def _plain_number(value):
    """A finite int or float (Python's or NumPy's own scalar type): a value gradlab takes as it is."""
    if type(value) not in _NUMBERS:
        return False
    try:
        return _isfinite(value)
    except (OverflowError, TypeError, ValueError):
        return False
_NO_ENTRY = (None,)


class _StudentRaised(Exception):
    def __init__(self, info):
        super().__init__(info.get("type"))
        self.info = info


class _Guard:
    """Runs a piece of student code and turns whatever it raises into a reply.
    (A call that runs too long is gradlab's to notice: it asks for a traceback
    with SIGUSR1, which faulthandler answers, and kills the worker.)"""

    def __init__(self, state, loading=False):
        self.state, self.loading = state, loading

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None:
            return False
        if isinstance(exc, _StudentRaised) or (self.loading and isinstance(exc, _UsageError)):
            return False
        raise _StudentRaised(_describe(exc, self.state.files)) from None


def _describe(exc, files):
    try:
        text = str(exc).strip()
    except BaseException:          # a __str__ that raises
        text = ""
    info = {"type": _type_name(exc), "detail": text.split("\n")[0][:500] if text else "",
            "where": _student_frame(exc, files), "trace": _student_traceback(exc)[-20000:]}
    if isinstance(exc, SystemExit):
        code = exc.code
        info["code"] = "" if code is None else repr(code)[:100]
    if isinstance(exc, MemoryError):
        info["memory"] = True
    if isinstance(exc, NotImplementedError):
        info["not_implemented"] = True     # a forward-only module's backward
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        info["output"] = True          # print() past the output limit (Python ignores SIGXFSZ)
    if isinstance(exc, (MemoryError, KeyboardInterrupt, SystemExit)) or info.get("output"):
        info["fatal"] = True           # a fresh worker for what follows
    return info


def _callables(obj):
    out = ["__call__"] if callable(obj) and not isinstance(obj, type) else []
    for name in _FACTORY_METHODS:
        try:
            if callable(getattr(obj, name, None)):
                out.append(name)
        except Exception:
            pass
    return out


def _containers(args, kwargs):
    """(path, container, shallow copy) of every dict and list among the arguments, two levels deep."""
    out = []

    def walk(value, path, depth):
        if type(value) is dict:
            out.append((path, value, dict(value)))
            items = value.items()
        elif type(value) is list:
            out.append((path, value, list(value)))
            items = enumerate(value)
        else:
            return
        if depth < 2:
            for key, item in items:
                if isinstance(key, (str, int)):
                    walk(item, path + [key], depth + 1)

    for i, a in enumerate(args):
        walk(a, [i], 0)
    for k, v in kwargs.items():
        walk(v, [k], 0)
    return out


def _same_entries(container, before):
    if type(container) is dict:
        return container.keys() == before.keys() and all(container[k] is before[k] for k in before)
    return len(container) == len(before) and all(a is b for a, b in zip(container, before))


def _np_err(err):
    """NumPy's error handling as gradlab sent it (np.geterr() there), only its known entries."""
    if not isinstance(err, dict):
        return {}
    return {k: v for k, v in err.items() if k in ("divide", "over", "under", "invalid")
            and v in ("ignore", "warn", "raise", "call", "print", "log")}


class _np_warnings:
    """NumPy's floating-point error handling as gradlab has it where the call is made
    (np.errstate there), and the warnings the call raises, recorded to be shown there."""

    def __init__(self, err):
        self.err = err

    def __enter__(self):
        self.state = np.errstate(**self.err)
        self.state.__enter__()
        self.catcher = warnings.catch_warnings(record=True)
        seen = self.catcher.__enter__()
        warnings.simplefilter("always")
        return seen

    def __exit__(self, *exc):
        self.catcher.__exit__(*exc)
        self.state.__exit__(*exc)
        return False


def _traced(fn, args, kwargs):
    """fn(*args, **kwargs) and the peak bytes it allocated (tracemalloc, here where it runs)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        value = fn(*args, **kwargs)
        return value, tracemalloc.get_traced_memory()[1] - before
    finally:
        if not tracing:
            tracemalloc.stop()


def _generator(state, own=False):
    """A np.random.Generator in the state gradlab's had (only NumPy's own bit generators).
    own: for gradlab's own code here (a rehearsal), which holds it only while it runs: its bit
    generator is made once per worker and given each state (a new one draws entropy from the
    system, ~0.1 ms in a check). One sent to the student's code is always new (code may keep it)."""
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"):
        raise ValueError(f"unknown bit generator {name!r}")
    bits = _own_bits.get(name) if own else None
    if bits is None:
        bits = getattr(np.random, name)()
        if own:
            _own_bits[name] = bits
    bits.state = state
    return np.random.Generator(bits)


_own_bits = {}      # bit generator name -> the one _generator(own=True) reuses


def _config(fields):
    """The cfg gradlab sent, as a Config. Not validated again (gradlab did, before
    any student code ran) and built without running Config's checks, which a
    file that patched builtins could break."""
    key = repr(sorted(fields.items()))
    cfg = _configs.get(key)
    if cfg is None:
        cfg = object.__new__(_Config)
        for f in _CONFIG_FIELDS:
            object.__setattr__(cfg, f, fields.get(f))
        object.__setattr__(cfg, "extra", {k: v for k, v in fields.items() if k not in _CONFIG_FIELDS})
        _configs[key] = cfg
    return cfg


_configs = {}


def _load(header, state):
    """The submission's registrations: {kind: {...}} for the parent."""
    from gradlab.execution import loader
    sys.path[:] = [p for p in header.get("sys_path", []) if isinstance(p, str)] + \
        [p for p in sys.path if p not in header.get("sys_path", [])]
    impl = header.get("impl")
    with state.student(header, loading=True):
        loaded = loader.load(impl)
    state.files = loaded.files
    regs = []
    for kind, reg in loaded.registrations.items():
        h = state.keep(reg.target)
        if reg.is_factory:
            state.factories.add(h)
        param_map = reg.param_map
        if callable(param_map) and not isinstance(param_map, dict):
            param_map = {"fn": state.keep(param_map), "signature": _signature(param_map)}
        elif isinstance(param_map, dict):
            param_map = {"dict": {str(k): str(v) for k, v in param_map.items()}}
        regs.append({"kind": kind, "target": h, "where": str(reg.where), "param_map": param_map,
                     "signature": _signature(reg.target), "reference": loader.is_reference_code(reg.target)})
    return {"name": str(loaded.name), "files": [str(f) for f in loaded.files], "registrations": regs,
            "refused": {str(k): str(v) for k, v in getattr(loaded, "refused", {}).items()},
            "refused_own": [str(k) for k in getattr(loaded, "refused_own", ())]}


def _signature(fn):
    """[[name, kind, has_default, default], ...] of fn's parameters, or None when unknown; the default itself
    only when it is a plain value (None, a bool, a number, a short string: the signature check reads
    epsilon=0.1), else None."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [[p.name, int(p.kind), p.default is not inspect.Parameter.empty, _default(p.default)]
            for p in sig.parameters.values()]


def _default(value):
    plain = plain_scalar(value)
    return None if plain is NOT_PLAIN else {"v": plain}


def main():
    global _ALLOWED, _find_slots, _arrays_at_build, _explain, _kept_attention
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])
    from gradlab.execution.discovery import arrays_at_build, explain, find_slots
    from gradlab.execution.protocol import ALLOWED_DTYPES
    from gradlab.numerics.tolerance import kept_attention
    from gradlab.contract.config import FIELDS, Config
    global _Config, _CONFIG_FIELDS
    _Config, _CONFIG_FIELDS = Config, tuple(FIELDS)
    _find_slots, _arrays_at_build, _explain, _ALLOWED = find_slots, arrays_at_build, explain, ALLOWED_DTYPES
    _kept_attention = kept_attention
    from gradlab.execution import harness, loader
    loader.ISOLATE_BY_DEFAULT = False       # a gradlab.check inside the student's file runs here, not in a worker of its own
    # no alarm of the worker's own around the import (loader.load guards it): the time limits are gradlab's, which
    # asks for a traceback and kills the worker. An alarm here fired at 20 s whatever --timeout said, and in a
    # forked worker (its handler reset to the default) ended the worker "with signal SIGALRM"
    harness.set_timeout(0)
    chan = Channel(read_fd, write_fd, blocking=False)    # (no deadline: it waits as long as it takes)
    chan.send({"ready": 1, "b": []})        # started: the time limits count from here
    header, payload = chan.recv()
    chan.spin = IDLE_SPIN if header.get("spin") is True else 0.0     # gradlab's Limits.spins()
    _limits.apply_in_worker(header.get("memory_mb"), header.get("output_mb"))
    dump = open(header.get("dump", "last_seen.txt"), "w")
    faulthandler.enable(file=dump)          # a crash (SIGSEGV, ...) leaves a traceback
    faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)   # and so does gradlab's "where are you?"
    state = State(dump)
    state.chan = chan
    try:
        reply = {"value": Encoder().encode(_load(header, state))}
    except _StudentRaised as e:
        reply = {"raised": e.info}
    except Exception as e:
        if isinstance(e, _UsageError):
            reply = {"usage": str(e), "trace": _student_traceback(e.__cause__)[-20000:] if e.__cause__ else ""}
        else:
            reply = {"internal": "".join(traceback.format_exception(e))}
    chan.send({**reply, "b": []})
    while True:
        try:
            header, payload = chan.recv()
        except ChannelClosed:
            return
        try:
            reply, buffers = state.handle(header, payload)
        except Exception as e:             # a bug here, or a request naming something released
            state.replied = False
            reply, buffers = {"internal": "".join(traceback.format_exception(e))[-5000:]}, []
        if reply is not None:
            chan.send(reply, buffers)


_find_slots = _arrays_at_build = _explain = _kept_attention = _Config = _CONFIG_FIELDS = None

if __name__ == "__main__":
    main()
