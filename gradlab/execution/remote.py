"""gradlab's side of the worker process (gradlab.execution.worker): starting
it, calling into it, and the proxies the checks see instead of the student's
objects.

    impl = load_isolated("my_attention.py", Limits())   # a worker imports the file
    reg = impl.get("attention")      # reg.target: a RemoteFunction
    module = reg.target(cfg)         # a RemoteObject, named after the student's class
    out = module.forward(x)          # x travels by value, out comes back by value

Parameters are mirrored: Subject.slots() gives Slot-like objects whose .value
is an array in gradlab's process. Before every call, mirrors gradlab changed
(the numerics perturb them in place) are sent; after it, arrays the student's
code changed (an optimizer's step, a forward editing its input) come back and
are copied into gradlab's arrays in place. A dict entry the student's code
replaced (params[k] = new array) is replaced in gradlab's dict too, so the
checks see exactly what they would see in one process.

When the worker dies (exit, signal, a limit), the call raises StudentError
saying what happened; the next call starts a fresh worker.
"""
import atexit
import inspect
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
import weakref

import numpy as np

from gradlab.contract.config import Config
from gradlab.contract.errors import StudentError, UsageError, over_time
from gradlab.contract.registry import Registration
from gradlab.execution import harness
from gradlab.execution import limits as limits_mod
from gradlab.execution import zygote
from gradlab.execution import rehearsal
from gradlab.execution.rehearsal import ProgressFile, Recorded, ahead_signature, signature
from gradlab.execution.protocol import (NOT_PLAIN, SPIN, Channel, ChannelClosed, ChannelTimeout, Decoder, Encoder,
                                        ProtocolError, changed, plain_scalar, snapshot, widen_pipe)

_GRADLAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOT = os.path.dirname(_GRADLAB_DIR)     # the folder holding the gradlab package (a checkout or site-packages)
_live = weakref.WeakSet()                   # sessions with a worker, killed at exit whatever happens
REPEAT_SECONDS = 0.5                        # a repeat request starts no call after this (see Session.repeat)
STARTUP_SECONDS = 120                       # for the worker's interpreter and NumPy to start (a busy machine)
FORK_SECONDS = 30                           # for a forked worker to be ready (it takes ~10 ms), else spawn one
TOKENS = []                                 # the environment token of every worker this process started
STARTS = {"forked": 0, "spawned": 0, "reasons": []}   # workers started, and why not forked where forking was on


class _NotForked(Exception):
    """A worker could not be forked (zygote.fork_worker): spawn one instead."""


def _close_all():
    for session in list(_live):
        session.close()


atexit.register(_close_all)


def _stop(proc, token, tmp):
    if proc.poll() is None:
        limits_mod.sweep({proc.pid}, token)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    shutil.rmtree(tmp, ignore_errors=True)


def close_all():
    """Kill every worker this process started (the CLI's Ctrl-C path)."""
    _close_all()


# ---- the student's exceptions, as gradlab reports them ------------------------------------

class RemoteException(StudentError):
    """Student code raised in the worker. `info`: type, detail, where, trace, code."""

    def __init__(self, what, info, limits):
        self.info, self.limits = info, limits
        super().__init__(self.message_for(what), where=info.get("where"))

    def message_for(self, what):
        info = self.info
        where = info.get("where")
        at = f" at {where}" if where else ""
        kind = info.get("type", "Exception")
        if kind == "SystemExit":
            return (f"{what} called sys.exit({info.get('code', '')})" + at
                    + "; gradlab runs your code, so it must not exit: put script code under "
                      "`if __name__ == \"__main__\":`")
        if info.get("memory") and self.limits.memory_mb:
            return (f"{what} ran out of memory{at} ({kind}; the limit is {self.limits.memory_mb} MB of "
                    "address space, --max-memory)")
        if info.get("output") and self.limits.output_mb:
            return (f"{what} wrote more than {self.limits.output_mb:g} MB of output{at} (raise the limit with "
                    "--max-output)")
        detail = info.get("detail") or ""
        said = f": {detail}" if detail else ""
        return f"{what} raised {kind}{at}{said}" + harness.relative_path_hint(kind, detail)

    @property
    def traceback_text(self):
        return self.info.get("trace") or ""


class RemoteTraceback(Exception):
    """The traceback of an error in the worker, as text (shown by `gradlab check -v`)."""

    def __init__(self, text):
        super().__init__("in gradlab's worker")
        self.traceback_text = text if isinstance(text, str) else ""


# ---- proxies ------------------------------------------------------------------------------

class RemoteFunction:
    """A registered callable in the worker (a factory, a function kind, a param_map)."""

    def __init__(self, session, kind, role, what, signature=None, reference=False):
        self._session, self._kind, self._role, self._what = session, kind, role, what
        self._signature = signature
        self.reference = reference     # gradlab's own reference code, the worker says (checked as such)

    @property
    def __signature__(self):
        """The student's function's signature, as the worker read it; none readable (a
        builtin): ValueError, as inspect.signature says for the function itself."""
        if self._signature is None:
            raise ValueError(f"no signature found for {self._kind} in gradlab's worker")
        return self._signature

    def __call__(self, *args, **kwargs):
        handle = self._session.registration_handle(self._kind, self._role)
        return self._session.call(self._what, handle, None, args, kwargs)

    def __repr__(self):
        return f"<{self._kind} {self._role} in gradlab's worker>"


class RemoteObject:
    """An object the student's code built, living in the worker. Its class is
    named after the student's (so messages say 'MyAttention'); forward,
    backward and step are remote calls; other attributes are read remotely."""

    def __init__(self, session, generation, handle, callables):
        object.__setattr__(self, "_r", (session, generation, handle, frozenset(callables)))
        session.track(self, handle, generation)

    def __getattr__(self, name):
        session, generation, handle, callables = object.__getattribute__(self, "_r")
        if name in callables:
            return RemoteMethod(self, name)
        if name.startswith("__"):
            raise AttributeError(name)
        return session.getattr(self, name)

    def __setattr__(self, name, value):
        """A plain number (or str, bool, None) is set there (gradlab train sets the optimizer's lr each step);
        anything else cannot travel to the worker as an attribute."""
        if value is not None and type(value) not in (bool, int, float, str):
            raise TypeError("only plain numbers and strings can be set on objects in gradlab's worker")
        session, _, _, _ = object.__getattribute__(self, "_r")
        session.setattr(self, name, value)

    def __repr__(self):
        return f"<{type(self).__name__} in gradlab's worker>"


def reference_method_of(factory, obj):
    """What the worker said of an object `factory` built: the gradlab reference method it runs as its own
    (loader.reference_method, worked out where the object is), or None, as when the factory is gradlab's
    reference itself."""
    if getattr(factory, "reference", False) is True:
        return None
    return object.__getattribute__(obj, "__dict__").get("_reference_method")


def reference_children_of(factory, obj):
    """What the worker said of an object `factory` built: its child modules that run gradlab's reference
    methods as their own (loader.reference_children, worked out where the object is), as for
    reference_method_of."""
    if getattr(factory, "reference", False) is True:
        return []
    return object.__getattribute__(obj, "__dict__").get("_reference_children", [])


class CallableRemoteObject(RemoteObject):
    """A callable object (or function) the student's code returned: calling it calls it in the worker."""

    def __call__(self, *args, **kwargs):
        session, generation, handle, _ = object.__getattribute__(self, "_r")
        session.check_generation(generation, type(self).__name__)
        return session.call(f"{type(self).__name__}(...)", handle, None, args, kwargs)


class RemoteMethod:
    def __init__(self, obj, name):
        self._obj, self._name = obj, name

    def __call__(self, *args, **kwargs):
        session, generation, handle, _ = object.__getattribute__(self._obj, "_r")
        session.check_generation(generation, self._name)
        return session.call(self._name, handle, self._name, args, kwargs)


_classes = {}


def _remote_class(name, base=RemoteObject):
    key = (name, base)
    if key not in _classes:
        _classes[key] = type(name, (base,), {"__module__": "gradlab.worker"})
    return _classes[key]


class Opaque:
    """A value that cannot travel (an object array, an ndarray subclass): only its
    type is known, so messages can name it."""

    def __repr__(self):
        return f"<{type(self).__name__}>"


class RemoteSlot:
    """A parameter of a module in the worker: `value` is gradlab's mirror of it."""

    def __init__(self, session, generation, handle, name, value, grad_text):
        self.name, self.value, self._grad_text = name, value, grad_text
        self._r = (session, generation, handle)
        self.owner = None
        session.track(self, handle, generation)

    def grad(self):
        session, generation, handle = self._r
        what = f"reading the gradient of {self.name!r}"
        session.check_generation(generation, what)
        return session.grads([self], what)[0]

    def describe_grad(self):
        return self._grad_text


def slots_of(module, forward_only=False):
    """The parameter slots of a RemoteObject (discovery runs in the worker)."""
    session, generation, handle, _ = object.__getattribute__(module, "_r")
    session.check_generation(generation, "finding parameters")
    return session.slots(module, handle, generation, forward_only)


def kept_attention_of(module):
    """numerics.tolerance.kept_attention, run in the worker on the real object: the attn_weights arrays."""
    session, generation, handle, _ = object.__getattribute__(module, "_r")
    session.check_generation(generation, "reading attn_weights")
    stamp, ahead = session.kept_ahead
    session.kept_ahead = (-1, None)
    if stamp == session.requests and ahead is not None and ahead[0] == handle:     # read with the backward
        return ahead[1]
    reply = session.request({"op": "kept_attention", "target": handle}, [], "reading attn_weights")
    try:
        value = session._decode(reply, reply.get("value"))
    except ProtocolError as e:
        raise session._malformed("reading attn_weights", e) from None
    return [a for a in value if isinstance(a, np.ndarray)] if isinstance(value, list) else []


def forward_calls(module, calls, ahead=None):
    """module.forward(*args) once per (args, writes) in `calls`, in order, in one request; writes:
    (mirror, contents) pairs, a mirror being a parameter's value (a slot's), which holds those
    contents during that call only. -> [the value of each call], ending with the RemoteException of
    the first call that raised, if one did. ahead: see Session.calls."""
    session, generation, handle, _ = object.__getattribute__(module, "_r")
    session.check_generation(generation, "forward")
    return session.calls("forward", [(handle, "forward", args, {}, writes) for args, writes in calls], ahead)


def backward_reading_ahead(module, grad_out, slots=(), kept=False):
    """module.backward(grad_out), with what a gradient check reads next read in the same request: the
    module's parameters found again, the gradients of `slots`, and (kept) its attention weights.
    Each read ahead is used once, and only if no request runs before it (Session.slots, .grads,
    kept_attention_of). -> backward's value (a RemoteException raised as it is)."""
    session, generation, handle, _ = object.__getattribute__(module, "_r")
    session.check_generation(generation, "backward")
    for slot in slots:
        session.check_generation(slot._r[1], "backward")
    ahead = {"slots": handle, "grads": [slot._r[2] for slot in slots]}
    if kept:
        ahead["kept"] = handle
    (value,) = session.calls("backward", [(handle, "backward", (grad_out,), {}, ())], ahead, module, slots)
    if isinstance(value, RemoteException):
        raise value
    return value


def build_rehearsing(fn, cfg, kind, check, rng):
    """fn(cfg), a factory in the worker, with the check's first pass rehearsed there in the same request
    (execution/rehearsal.py): what the check asks next is then answered from the rehearsal when it asks
    exactly what was rehearsed. rng: the check's generator, as it is now (not moved here)."""
    if not isinstance(fn, RemoteFunction) or fn._session.trace_memory is not None or not rehearsal.ENABLED:
        return fn(cfg)
    session = fn._session
    handle = session.registration_handle(fn._kind, fn._role)
    script = {"check": check, "kind": kind, "rng": rng.bit_generator.state, "err": _np_err()}
    return session.call(fn._what, handle, None, (cfg,), {}, script=script)


class grads_with_backward:
    """`with grads_with_backward(slots): model.backward(g)`, then read the gradients of
    `slots` (the student's parameters, of one worker): a training loop's step, which
    reads every gradient right after the model's backward. Inside the block, a backward
    call into the worker also reads those gradients right after it, in the same request
    (the worker's read_ahead), so the read costs no round trip of its own. The read
    ahead is used as Session.grads uses one: once, and only if no request ran after the
    backward that read it (the student's code runs only in requests, so it is what a
    read now would see). A model holding several of the student's objects calls several
    backwards, and only the last may read: the first block reads nothing ahead and notes
    whose backward came last; a later block with the same slots reads ahead after that
    object's backward only (the gradients are read once a step, as without the worker).
    `module`: the one object whose backward the block calls (a module's own check), read
    ahead after from the first block on. Outside a worker (slots that are not RemoteSlots)
    it does nothing."""

    def __init__(self, slots, module=None):
        remote = [s for s in slots if isinstance(s, RemoteSlot)]
        one = remote and len(remote) == len(slots) and all(s._r[:2] == remote[0]._r[:2] for s in remote)
        self.session = remote[0]._r[0] if one else None     # one worker's parameters, or nothing to do
        self.slots = remote      # held: the worker keeps them while the block may read them
        self.handles = [s._r[2] for s in remote]
        self.generation = remote[0]._r[1] if remote else None
        self.on = None
        if isinstance(module, RemoteObject):
            session, generation, handle, _ = object.__getattribute__(module, "_r")
            if session is self.session and generation == self.generation:
                self.on = handle

    def __enter__(self):
        session = self.session
        if session is not None and self.generation == session.generation:
            hint = session.backward_ahead
            if hint is None or hint["generation"] != self.generation or hint["grads"] != self.handles or \
                    (self.on is not None and hint["on"] != self.on):    # (a new worker reuses handle numbers)
                hint = session.backward_ahead = {"grads": self.handles, "on": self.on, "generation": self.generation}
            hint.update(last=None, active=True)
        return self

    def __exit__(self, *exc):
        hint = self.session.backward_ahead if self.session is not None else None
        if hint is not None and hint["grads"] == self.handles:
            if exc[0] is None and hint["last"] is not None:
                hint["on"] = hint["last"]        # whose backward came last: read ahead only there next time
            hint.update(last=None, active=False)
        return False


def explain_slots(module):
    """What discovery looked at in a RemoteObject, in words (discovery.explain, run in the worker)."""
    session, generation, handle, _ = object.__getattribute__(module, "_r")
    session.check_generation(generation, "finding parameters")
    reply = session.request({"op": "explain", "target": handle}, [], "finding parameters")
    value = reply.get("value")
    return value if isinstance(value, str) else ""


def calls_ahead(fn, n):
    """Up to n values of fn() called n times in a row in the worker, in one request: (values,
    error), as Session.repeat; None when fn is no remote callable (call it yourself) or when
    calls are being measured one by one (Subject.peak_memory)."""
    if isinstance(fn, RemoteMethod):
        obj, method, what = fn._obj, fn._name, fn._name
    elif isinstance(fn, CallableRemoteObject):
        obj, method, what = fn, None, f"{type(fn).__name__}(...)"
    else:
        return None
    session, generation, handle, _ = object.__getattribute__(obj, "_r")
    if session.trace_memory is not None or n < 2:
        return None
    session.check_generation(generation, what)
    return session.repeat(what, handle, method, n)


def is_remote(obj):
    return isinstance(obj, (RemoteObject, RemoteFunction))


# ---- the session: one submission, its worker(s) over time -------------------------------------

class Session:
    """Runs one submission in a worker. A worker that dies is replaced on the
    next call (a fresh import of the submission); objects from the old one
    then say so."""

    def __init__(self, impl, limits):
        self.impl = impl
        self.limits = limits
        self.generation = 0
        self.proc = None
        self.dead = None             # why the current worker is gone (None: alive or never started)
        self.final = None            # a reason that stops every later call (the wall-time limit)
        self.info = None             # what init said: name, files, registrations
        self.handles = {}            # (kind, role) -> handle in the current worker
        self.wall_deadline = None
        self.output_pos = 0
        self.arrays = {}             # handle -> [weakref to gradlab's array, snapshot, id]
        self.by_id = {}              # id(array) -> handle
        self.released = []
        self.next_handle = 1
        self.tokens = {}             # pid -> environment token of that worker
        self._rngs = []              # np.random.Generators passed to the current call
        self.trace_memory = None     # {"peak": bytes} while Subject.peak_memory measures calls
        self.requests = 0            # requests answered so far (slots found at a build stay valid until the next)
        self._grads_ahead = (-1, {})  # (requests then, slot handle -> gradient read ahead): see grad_of
        self.kept_ahead = (-1, None)  # (requests then, (object handle, its attention weights)): see calls
        self._err_sent = None        # (generation, np.geterr()) last sent to that worker
        self.reseed = None           # a check's seed for the worker's global generators, sent with the next request
        self.backward_ahead = None   # gradients a backward call reads ahead (see grads_with_backward)
        self._decoding = (None, None)  # (reply, its Decoder)
        self._recorded = None        # a rehearsal's entries not used yet (rehearsal.Recorded): see rehearsed()
        self.progress = None         # the current worker's progress file (rehearsal.ProgressFile)
        self.tmp, self.output = None, None   # the current worker's folder, and its output file read here
        self.files = ()
        self._dump_from = 0          # where the last dump _ask_where asked for starts in last_seen.txt

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self):
        """Start a worker and load the submission in it; returns what init said.
        Raises UsageError when the submission cannot be loaded."""
        limits_mod.become_subreaper()
        self.generation += 1
        self.arrays, self.by_id, self.released = {}, {}, []
        why = zygote.refusal(self.impl, self.limits)
        if why is None:
            try:
                self._launch(forked=True)
                STARTS["forked"] += 1
            except _NotForked as e:
                why = str(e)
        if why is not None:
            self._launch(forked=False)
            STARTS["spawned"] += 1
            if zygote.ENABLED or getattr(self.limits, "fork", False):
                STARTS["reasons"].append(why)
        self.dead = None
        _live.add(self)
        if self.wall_deadline is None and self.limits.wall:
            self.wall_deadline = time.monotonic() + self.limits.wall
        impl = self.impl
        header = {"op": "init", "impl": None if impl is None else os.fspath(impl), "sys_path": [os.path.abspath(p) for p in sys.path],
                  "memory_mb": self.limits.memory_mb, "output_mb": self.limits.output_mb,
                  "dump": os.path.join(self.tmp, "last_seen.txt"), "spin": self.limits.spins()}
        what = f"importing {impl}" if impl is not None else "importing gradlab's reference modules"
        try:
            reply = self._exchange(header, [], what, UsageError)
        except StudentError as e:     # died or hung while importing: the file is unusable
            raise UsageError(str(e)) from None
        if "usage" in reply:
            self.close()
            raise UsageError(str(reply["usage"])) from RemoteTraceback(reply.get("trace"))
        if "raised" in reply:
            self.close()
            info = reply["raised"] if isinstance(reply["raised"], dict) else {}
            raise UsageError(RemoteException(what, info, self.limits).message_for(what)) \
                from RemoteTraceback(info.get("trace"))
        info = self._decode(reply, reply.get("value"))
        self.info = _validate_info(info)
        self.files = tuple(self.info["files"])
        self.handles = {}
        for reg in self.info["registrations"]:
            self.handles[(reg["kind"], "target")] = reg["target"]
            pm = reg["param_map"]
            if isinstance(pm, dict) and "fn" in pm:
                self.handles[(reg["kind"], "param_map")] = pm["fn"]
        return self.info

    def _launch(self, forked):
        """A worker process, up and ready for init: forked from this process
        (zygote.fork_worker; _NotForked when that fails) or spawned (UsageError
        when it does not start)."""
        self._drop_folder()         # a worker before this one (ended): its folder goes now, not with the session
        self.tmp = tempfile.mkdtemp(prefix="gradlab-worker-")
        to_child, from_parent = os.pipe()[::-1]
        from_child, to_parent = os.pipe()
        for fd in (to_child, to_parent):
            widen_pipe(fd)
        token = secrets.token_hex(8)
        out_path = os.path.join(self.tmp, "output.txt")
        env = worker_env(self.tmp, token, self.limits)
        with open(out_path, "wb") as out:
            try:
                if forked:
                    try:
                        self.proc = zygote.fork_worker(from_parent, to_parent, out.fileno(), self.tmp, env, token)
                    except OSError as e:
                        for fd in (from_child, to_child):
                            os.close(fd)
                        self._drop_folder()
                        raise _NotForked(f"the fork failed ({e})") from None
                else:
                    self.proc = subprocess.Popen(
                        [sys.executable, "-m", "gradlab.execution.worker", str(from_parent), str(to_parent)],
                        pass_fds=(from_parent, to_parent), cwd=self.tmp, env=env,
                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            finally:
                os.close(from_parent)
                os.close(to_parent)
        self.tokens[self.proc.pid] = token
        TOKENS.append(token)
        # a session dropped without close() (or still open at exit) does not leave its worker running
        weakref.finalize(self, _stop, self.proc, token, self.tmp)
        self.output = open(out_path, "rb")
        self.output_pos = 0
        self.progress = ProgressFile(os.path.join(self.tmp, "progress.txt"))
        self.chan = Channel(from_child, to_child, blocking=False, spin=SPIN if self.limits.spins() else 0.0)
        try:     # Python and NumPy starting up is not the student's time
            ready, _ = self.chan.recv(time.monotonic() + (FORK_SECONDS if forked else STARTUP_SECONDS))
            if ready.get("ready") != 1:
                raise ProtocolError("no ready message")
        except (ChannelTimeout, ChannelClosed, ProtocolError) as e:
            self._kill()
            try:
                with open(out_path, errors="replace") as fh:
                    said = [line for line in fh.read().splitlines() if line.strip()][-1:]
            except OSError:
                said = []
            self._drop_folder()
            if forked:
                raise _NotForked(f"the forked worker did not start ({type(e).__name__}"
                                 + (f": {said[0][:300]}" if said else "") + ")") from None
            raise UsageError(f"gradlab's worker process did not start ({type(e).__name__}"
                             + (f": {said[0][:300]}" if said else "") + f"); it runs {sys.executable} -m "
                             "gradlab.execution.worker, which must be able to import gradlab and NumPy") from None

    def close(self):
        if self.proc is not None:
            self._kill()
        self._drop_folder()
        _live.discard(self)
        if not any(s.proc is not None for s in _live):
            limits_mod.set_subreaper(False)

    def _drop_folder(self):
        """The ended worker's temporary folder and the files gradlab kept open in it."""
        for kept in (self.output, self.progress):
            if kept is not None:
                kept.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp, self.output, self.progress = None, None, None

    def _ensure(self, what):
        if self.final:
            raise StudentError(f"cannot judge: {self.final}")
        if self.proc is None:
            try:
                self.start()
            except UsageError as e:
                raise StudentError(f"cannot judge: a fresh worker could not load the submission again: {e}") from None

    def check_generation(self, generation, what):
        if self.final:
            raise StudentError(f"cannot judge: {self.final}")
        if generation != self.generation or self.proc is None:
            raise StudentError(f"cannot judge {what}: the worker process that held this object ended earlier"
                               + (f" ({self.dead})" if self.dead else ""))

    def registration_handle(self, kind, role):
        self._ensure(f"{kind}")
        return self.handles[(kind, role)]

    # ---- shared arrays ----------------------------------------------------------------------
    def track(self, proxy, handle, generation):
        weakref.finalize(proxy, self._release, handle, generation)

    def _release(self, handle, generation):
        if generation == self.generation:
            self.released.append(handle)

    def _share(self, array, handle):
        gen = self.generation
        entry = [weakref.ref(array, lambda _r, h=handle: self._array_died(h, gen)), snapshot(array), id(array)]
        self.arrays[handle] = entry
        self.by_id[id(array)] = handle

    def _array_died(self, handle, generation):
        # Called by the garbage collector, possibly while gradlab iterates self.arrays:
        # only note it here; _collect() removes the entry at a safe point.
        if generation == self.generation:
            self.released.append(handle)

    def _collect(self):
        """Forget the arrays gradlab no longer holds; returns the handles the worker may release."""
        released, self.released = self.released, []
        for h in released:
            entry = self.arrays.get(h)
            if entry is not None and entry[0]() is None:
                del self.arrays[h]
                if self.by_id.get(entry[2]) == h:
                    del self.by_id[entry[2]]
        return released

    def _encoder(self):
        return Encoder(self._array_tag, self._object_tag)

    def _array_tag(self, array, enc):
        h = self.by_id.get(id(array))
        if h is not None:
            entry = self.arrays.get(h)
            if entry is not None and entry[0]() is array:
                return {"x": h}
        h = self.next_handle
        self.next_handle += 1
        self._share(array, h)
        return enc.array(array, h)

    def _object_tag(self, obj, enc):
        if isinstance(obj, RemoteObject):
            session, generation, handle, _ = object.__getattribute__(obj, "_r")
            if session is not self or generation != self.generation:
                raise StudentError("cannot judge: an object from an earlier worker process was passed on")
            return {"r": handle}
        if isinstance(obj, Config):
            return {"cfg": obj.to_dict()}
        if isinstance(obj, np.random.Generator):     # sent as its state; what the call draws comes back
            self._rngs.append(obj)
            return {"rng": obj.bit_generator.state}
        raise TypeError(f"gradlab cannot send a {type(obj).__name__} to its worker")

    def _sync_out(self, enc):
        """The shared arrays gradlab changed since they were last in step with the worker's
        (a check perturbing a parameter in place, a new input written into an old array)."""
        changes = []
        for h, array, snap in changed(self.arrays, _deref):
            self.arrays[h][1] = snap
            changes.append([h, enc.array(array)])
        return changes

    def _decode(self, reply, node):
        return self._decoder(reply).decode(node)

    def _decoder(self, reply):
        """The Decoder of `reply` (whose buffers are in the last payload received): one per reply,
        however many parts are read."""
        if self._decoding[0] is not reply:
            self._decoding = (reply, Decoder(reply, self._payload, self._object_hook, self._array_hook))
        return self._decoding[1]

    def _object_hook(self, tag):
        if "x" in tag:
            entry = self.arrays.get(tag["x"]) if type(tag["x"]) is int else None
            if entry is None:
                raise ProtocolError("a reference to an array gradlab does not have")
            return entry[0]()
        if "r" in tag:
            if type(tag["r"]) is not int or type(tag.get("c", [])) is not list:
                raise ProtocolError("a bad object reference")
            methods = [c for c in tag.get("c", []) if isinstance(c, str)]
            cls = _remote_class(_name(tag.get("type")), CallableRemoteObject if "__call__" in methods
                                else RemoteObject)
            obj = cls(self, self.generation, tag["r"], methods)
            if isinstance(tag.get("ref"), str):
                object.__setattr__(obj, "_reference_method", tag["ref"][:300])
            if isinstance(tag.get("held"), list):
                object.__setattr__(obj, "_reference_children", [
                    (pair[0][:200], pair[1][:300]) for pair in tag["held"][:20]
                    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)])
            return obj
        if "o" in tag:
            if tag.get("o") == "ndarray":      # an array of a dtype that does not travel (object, str)
                shape = tag.get("shape")
                if type(shape) is not list or len(shape) > 32 or not all(type(n) is int and n >= 0
                                                                         for n in shape):
                    raise ProtocolError("a bad array shape")
                return np.broadcast_to(np.empty((), dtype=object), shape)
            return _remote_class(_name(tag.get("o")), Opaque)()
        raise ProtocolError("an unexpected tag")

    def _array_hook(self, handle, array):
        if handle is None:
            return array
        entry = self.arrays.get(handle)
        if entry is not None and entry[0]() is not None:
            return entry[0]()         # a mirror gradlab already has: keep using it
        self._share(array, handle)
        return array

    def _apply_updates(self, reply):
        updates = reply.get("updates", [])
        if type(updates) is not list:
            raise ProtocolError("bad updates")
        if not updates:
            return
        dec = self._decoder(reply)
        for item in updates:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not int:
                raise ProtocolError("a bad update")
            value = dec.array_view(item[1])     # copied below: no copy of its own
            entry = self.arrays.get(item[0])
            if entry is None:
                continue
            array = entry[0]()
            if array is None:
                continue
            if array.shape == value.shape and array.dtype == value.dtype:
                array[...] = value
            else:
                try:
                    array[...] = value
                except (ValueError, TypeError):
                    pass
            entry[1] = snapshot(array, entry[1])

    # ---- requests ---------------------------------------------------------------------------
    def _seconds(self, calls=1):
        """The time a request making `calls` calls may take (each call has the time limit), within the wall time."""
        t = self.limits.timeout * calls if self.limits.timeout else None
        if self.wall_deadline is not None:
            left = max(0.01, self.wall_deadline - time.monotonic())
            t = left if t is None else min(t, left)
        return t

    def _exchange(self, header, buffers, what, error=StudentError, spare=0.0, calls=1):
        """Send one request and wait for its reply, within the limits. Any way the
        worker can fail becomes `error` (StudentError) saying what happened.
        spare: seconds added to the time limit of a request that makes several calls
        (see repeat); the last call it starts still has the whole limit. calls: how many
        calls the request makes (a batch, see calls): each has the whole limit.
        header None: send nothing, wait for the next message of a rehearsal (rehearsed())."""
        seconds = self._seconds(calls)
        wall_bound = self.wall_deadline is not None and (not self.limits.timeout or seconds < self.limits.timeout)
        deadline = None if seconds is None else time.monotonic() + seconds
        if spare and not wall_bound and deadline is not None:
            deadline += spare
            if self.wall_deadline is not None:
                deadline = min(deadline, self.wall_deadline)
        if header is None:
            progress = self._recorded.progress
        else:
            progress = self.progress if "script" in header else None
        if progress is not None and deadline is not None and not wall_bound:     # each rehearsed call has the limit
            seen = [progress.read(), deadline - seconds + rehearsal.MAX_CALLS * seconds]
            self.chan.extend = lambda: self._call_deadline(progress, seen)
        try:
            if header is not None:
                self.chan.send(header, buffers, deadline)
            reply, self._payload = self.chan.recv(deadline)
        except ChannelTimeout:
            what = self._progress_what(progress, what)
            where = self._ask_where()
            starting = wall_bound and where is not None and self._still_starting(header)
            self._kill()
            at = f", last seen at {where}" if where else ""
            if starting:
                self.final = (f"the run's wall-time limit of {self.limits.wall:g} s is too small to start the worker: "
                              f"it ran out before {what} began; raise it with --wall-time (a few seconds at least)")
                raise error(self.final) from None
            if wall_bound:
                self.final = (f"the submission ran past its wall-time limit of {self.limits.wall:g} s "
                              f"(in {what}{at}; raise it with --wall-time)")
                raise error(self.final) from None
            self.dead, message = _overtime(what, seconds, at)
            raise over_time(error(message)) from None
        except ChannelClosed:
            what = self._progress_what(progress, what)
            code = self._kill()
            where = self._last_seen()
            self.dead = f"{what} {limits_mod.describe_end(code, self.limits.output_mb)}"
            raise error(self.dead + (f", last seen at {where}" if where else "")) from None
        except ProtocolError as e:
            raise self._malformed(what, e, error) from None
        except BaseException:
            self._kill()        # Ctrl-C, or anything else half-way through a message
            self.dead = f"{what} was interrupted"
            raise
        finally:
            if self.chan is not None:
                self.chan.extend = None
            self._drain_output()
        if self._output_full():
            # the file the worker prints to reached the output limit: what it printed past it is lost (one large
            # write is cut short without an error), and every print from now on fails; said as the limit it is
            what = self._progress_what(progress, what)
            self._kill()
            self.dead = f"{what} {limits_mod.describe_end(-signal.SIGXFSZ, self.limits.output_mb)}"
            raise error(self.dead)
        if "internal" in reply:
            # gradlab's own code in the worker failed: there, next to the student's code, most
            # likely because that code patched something (builtins, NumPy, gradlab)
            self._kill()
            text = str(reply["internal"]).strip().splitlines()
            self.dead = (f"cannot judge {what}: gradlab's code in the worker process failed ("
                         f"{(text[-1] if text else 'no detail')[:300]}); does your code patch builtins, "
                         "NumPy or gradlab?")
            raise error(self.dead)
        try:
            self._apply_updates(reply)
        except ProtocolError as e:
            self._kill()
            self.dead = f"{what}: the worker sent a malformed reply ({e})"
            raise error(self.dead) from None
        return reply

    def _call_deadline(self, progress, seen):
        """When a rehearsal's current call must end (time.monotonic()): the time limit from its start, as
        a request of its own would have it, if a call started since the deadline was last set (seen[0]);
        never later than seen[1], MAX_CALLS limits after the request (the student's code can write the
        progress file too: it cannot stretch a request further than a batch of that many calls).
        None: the deadline stands."""
        now = progress.read()
        if now is None or (seen[0] is not None and now[0] <= seen[0][0]):
            return None
        seen[0] = now
        later = min(now[1] + self.limits.timeout, seen[1])
        if self.wall_deadline is not None:
            later = min(later, self.wall_deadline)
        return later if later > time.monotonic() else None

    @staticmethod
    def _progress_what(progress, what):
        """The call a rehearsal was in (its progress file, if it names one of the calls a rehearsal makes),
        else `what`: the request's own words."""
        seen = progress.read() if progress is not None else None
        return seen[2] if seen is not None and rehearsal.names_a_call(seen[2]) else what

    def _kill(self):
        self._recorded = None
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        limits_mod.sweep({proc.pid}, self.tokens.pop(proc.pid, None))
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.chan.close()
        return code

    def _ask_where(self):
        """Before killing a worker that ran too long: where is it? (faulthandler
        in the worker dumps every thread's stack on SIGUSR1.)"""
        path = os.path.join(self.tmp, "last_seen.txt")
        try:
            before = self._dump_from = os.path.getsize(path)
            os.kill(self.proc.pid, signal.SIGUSR1)
        except (OSError, AttributeError):
            return None
        end = time.monotonic() + 0.5
        size = before
        while time.monotonic() < end:
            time.sleep(0.01)
            now = os.path.getsize(path) if os.path.exists(path) else 0
            if now > before and now == size:
                break            # written, and no longer growing
            size = now
        return self._last_seen(before)

    def _last_seen(self, start=0, files=None):
        """The student's line where the worker's traceback dump (from byte `start` on) shows it, if any
        (files: the student's files to look for; default, those the worker said it loaded)."""
        try:
            with open(os.path.join(self.tmp, "last_seen.txt"), errors="replace") as fh:
                fh.seek(start)
                text = fh.read(200000)
        except OSError:
            return None
        return limits_mod.last_seen(text, self.files if files is None else files, _GRADLAB_DIR)

    def _still_starting(self, header):
        """Whether a worker stopped while importing the file had not reached it: the dump _ask_where took
        shows no frame of the file (the worker was in gradlab's own set-up), so the time limit is too small
        for any file, not the file's doing. (A module name, not a file: cannot tell, so no.)"""
        impl = header.get("impl") if header is not None and header.get("op") == "init" else None
        if not impl or not os.path.isfile(impl):
            return False
        return self._last_seen(self._dump_from, files=(impl,)) is None

    def _output_full(self):
        """Whether the worker's output file has reached the output limit (--max-output), as _drain_output,
        which runs after every exchange, last found its size."""
        return bool(self.limits.output_mb) and self.output_pos >= int(self.limits.output_mb * (1 << 20))

    def _drain_output(self):
        from gradlab.execution import harness
        try:
            size = os.fstat(self.output.fileno()).st_size
            if size > self.output_pos:
                self.output.seek(self.output_pos)
                data = self.output.read(size - self.output_pos)
                self.output_pos = size
                harness.student_output(data.decode(errors="replace"))
        except (OSError, ValueError):
            pass

    def request(self, header, buffers, what, spare=0.0, calls=1):
        if self._recorded is not None:       # a rehearsal still sending: read it to its end first
            self._drain(what)
        self._ensure(what)
        if self.proc is None:
            raise StudentError(f"cannot judge: {self.dead}")
        enc = self._encoder()
        enc.buffers = list(buffers)
        if self.released:
            header["release"] = self._collect()
        sync = self._sync_out(enc)
        if sync:
            header["sync"] = sync
        if self.reseed is not None:
            header["reseed"], self.reseed = self.reseed, None
        if "err" in header:      # NumPy's error handling: the worker keeps the last one sent
            if self._err_sent == (self.generation, header["err"]):
                del header["err"]
            else:
                self._err_sent = (self.generation, header["err"])
        reply = self._exchange(header, enc.buffers, what, spare=spare, calls=calls)
        self.requests += 1
        self._raise_raised(what, reply)
        return reply

    def _raise_raised(self, what, reply):
        """The RemoteException of a call that raised in the worker (a request's reply or a rehearsed one)."""
        if "raised" in reply:
            info = reply["raised"]
            if not isinstance(info, dict):
                raise self._refused(what)
            raise self._failed(what, info)

    def call(self, what, handle, method, args, kwargs, script=None):
        """One call in the worker. script: a check's first pass to rehearse with this build (see
        build_rehearsing)."""
        self._rngs = []
        ahead = self._ahead_of(handle, method)    # (noted even when a rehearsal answers: the call ran)
        reply = self.rehearsed(what, "call", [(handle, method, args, kwargs, ())]) \
            if self._recorded is not None else None
        if reply is not None:
            ahead = None
            self._raise_raised(what, reply)
        else:
            enc = Encoder(self._array_tag, self._object_tag)
            args_node = [enc.encode(a) for a in args]
            kwargs_node = enc.encode(dict(kwargs))
            header = {"op": "call", "target": handle, "method": method, "args": args_node, "err": _np_err()}
            if kwargs_node != _NO_KWARGS:
                header["kwargs"] = kwargs_node
            if self.trace_memory is not None:
                header["trace"] = True
            if ahead is not None:
                header["ahead"] = {"grads": ahead}
            if script is not None:
                header["script"] = dict(script, progress=self.progress.path)
            reply = self.request(header, enc.buffers, what)
        self._warn(reply)
        if self.trace_memory is not None and type(reply.get("peak")) is int:
            self.trace_memory["peak"] = max(self.trace_memory["peak"], reply["peak"])
        try:
            if script is not None and reply.get("script") == {"stream": True}:   # the rehearsal's messages follow
                self._recorded = Recorded(self.requests, self.progress)
            value = self._decode(reply, reply.get("value"))
            if isinstance(value, RemoteObject) and type(reply.get("slots")) is list:
                found = self._slot_list(reply, reply["slots"])
                object.__setattr__(value, "_slots", (self.requests, found))
                if self._recorded is not None:
                    self._recorded.slots(found)
            self._rebind(reply, args, kwargs)
            self._advance(reply)
            if ahead is not None and type(reply.get("ahead")) is dict:
                self._keep_grads(reply, reply["ahead"], ahead)
        except ProtocolError as e:
            raise self._malformed(what, e) from None
        return value

    def _ahead_of(self, handle, method):
        """The slot handles whose gradients this call reads ahead (grads_with_backward), or None."""
        hint = self.backward_ahead
        if hint is None or not hint["active"] or method != "backward":
            return None
        hint["last"] = handle
        return hint["grads"] if hint["on"] == handle else None

    def calls(self, what, steps, ahead=None, module=None, slots=()):
        """Several calls in one request (the worker runs them in order, each as `call` would):
        steps = [(handle, method, args, kwargs, writes)], writes = [(mirror, contents)] or [(mirror, d, s)]:
        a shared array of gradlab's that holds `contents` (or its contents + s * d, numerics.engine's
        point_value computed in the worker) there during that call only (gradlab's own is not touched).
        Arguments go by value (what the calls do to them is not sent back); values come back by value. -> [value of each call], ending with the RemoteException
        of the first call that raised, if one did (the calls after it did not run). A batch of n calls
        has n times the time limit of one. ahead: {"slots": h, "grads": [h], "kept": h} read right
        after the last call (the worker's read_ahead), kept for `module` and `slots` below."""
        reply, rngs = None, [[] for _ in steps]
        if self._recorded is not None:
            positions = [self._recorded.index.get(id(slot.value)) for slot in slots]
            reply = self.rehearsed(what, "calls", steps,
                                   None if ahead is None else ahead_signature(ahead, positions))
        if reply is None:
            header, buffers, rngs = self._calls_request(steps, ahead)
            reply = self.request(header, buffers, what, calls=max(1, len(steps)))
        done, failed = reply.get("value"), reply.get("failed")
        if type(done) is not list or len(done) > len(steps) or (failed is None) != (len(done) == len(steps)) \
                or not (failed is None or isinstance(failed, dict)):
            raise self._refused(what)
        try:
            values = self._values_of(what, steps, done, rngs, reply)
            if failed is None and isinstance(reply.get("ahead"), dict):
                self._keep_ahead(reply, reply["ahead"], module, slots)
        except ProtocolError as e:        # as call() says it: the worker is ended, not the student blamed
            raise self._malformed(what, e) from None
        if failed is not None:
            values.append(self._failed(what, failed))
        return values

    def _calls_request(self, steps, ahead):
        """(header, buffers, the random generators each call was given) of a "calls" request."""
        enc = self._encoder()
        plain = Encoder()             # arguments by value: what the calls do to them is not sent back
        plain.buffers = enc.buffers
        nodes, rngs, along = [], [], {}
        for handle, method, args, kwargs, writes in steps:
            self._rngs = []
            node = {"target": handle, "method": method, "args": [plain.encode(a) for a in args],
                    "kwargs": plain.encode(dict(kwargs)), "err": _np_err(), "writes": []}
            for mirror, *contents in writes:
                if len(contents) == 1:
                    node["writes"].append([self.handle_of(mirror), enc.array(contents[0])])
                    continue
                d, s = contents               # computed in the worker (engine.point_value): d travels once
                if id(d) not in along:
                    along[id(d)] = (d, enc.array(d))
                node["writes"].append([self.handle_of(mirror), along[id(d)][1], float(s)])
            if self.trace_memory is not None:
                node["trace"] = True
            nodes.append(node)
            rngs.append(self._rngs)
        header = {"op": "calls", "calls": nodes}
        if ahead is not None:
            header["ahead"] = ahead
        return header, enc.buffers, rngs

    def _values_of(self, what, steps, done, rngs, reply):
        """The value of each call of a batch that ran, with what it did to its arguments' dicts and
        lists and to its random generators applied (ProtocolError: a part that does not decode)."""
        values = []
        for (_, _, args, kwargs, _), sub, rng in zip(steps, done, rngs):
            if type(sub) is not dict:
                raise self._refused(what)
            sub = dict(sub, b=reply.get("b"))       # its buffers are the reply's
            self._warn(sub)
            if self.trace_memory is not None and type(sub.get("peak")) is int:
                self.trace_memory["peak"] = max(self.trace_memory["peak"], sub["peak"])
            values.append(self._decode(sub, sub.get("value")))
            self._rebind(sub, args, kwargs)
            self._rngs = rng
            self._advance(sub)
        return values

    def _failed(self, what, info):
        """The RemoteException of a call that raised in the worker (the worker ended first when
        that is fatal: KeyboardInterrupt, SystemExit, MemoryError); request() raises it for a single call."""
        info = {k: (v[:20000] if isinstance(v, str) else v) for k, v in info.items()}
        if info.get("fatal"):
            self._kill()
            self.dead = f"{what} raised {info.get('type')}"
        return RemoteException(what, info, self.limits)

    def _keep_ahead(self, reply, ahead, module, slots):
        """What the worker read ahead after a batch of calls, kept for the next reads (stamped:
        used only if no request runs before them)."""
        _, generation, handle, _ = object.__getattribute__(module, "_r")
        if type(ahead.get("slots")) is list:
            object.__setattr__(module, "_slots", (self.requests, self._slot_list(reply, ahead["slots"])))
        self._keep_grads(reply, ahead, [slot._r[2] for slot in slots])
        if "kept" in ahead:
            kept = self._decode(reply, ahead["kept"])
            arrays = [a for a in kept if isinstance(a, np.ndarray)] if isinstance(kept, list) else []
            self.kept_ahead = (self.requests, (handle, arrays))

    def _keep_grads(self, reply, ahead, handles):
        """The gradients of the slots `handles` read ahead with a reply, kept for Session.grads."""
        grads = self._decode(reply, ahead.get("grads"))
        if type(grads) is list and len(grads) <= len(handles):
            self._grads_ahead = (self.requests, dict(zip(handles, grads)))

    def rehearsed(self, what, op, steps, ahead=None):
        """The reply a rehearsal sent for this request (op "call" or "calls", steps and ahead as
        rehearsal.signature takes them), if it rehearsed exactly this request next and nothing happened
        since that it did not see: no other request, no mirror gradlab changed. Otherwise None: the rest
        of the rehearsal is read and dropped (its calls ran: what they changed is mirrored), and gradlab
        sends its requests, which the student's code meets in the same order."""
        recorded = self._recorded
        if recorded.stamp != self.requests or self.trace_memory is not None or changed(self.arrays, _deref):
            self._drain(what)
            return None
        sig = signature(op, steps, ahead, recorded.index.get, _np_err())    # (while the worker may still be busy)
        message = self._next_rehearsed(what)
        if message is None:
            return None
        if message["entry"].get("sig") != sig:
            self._absorb(what, message)
            self._drain(what, recorded)
            return None
        # the last forward gradlab took from the rehearsal: called again if the rest is dropped (see _drain)
        recorded.last = (what, steps[0]) if op == "call" and steps[0][1] == "forward" else None
        return dict(message["entry"]["reply"], b=message.get("b"))

    def _next_rehearsed(self, what):
        """The rehearsal's next message (its updates applied), or None after its last. Anything else in
        the pipe (the student's code writing into it) is a malformed reply: the worker is ended."""
        message = self._exchange(None, (), what)
        if message.get("end") is True:       # the last message: alone, or with the last entry
            self._recorded = None
            if "entry" not in message:
                return None
        entry = message.get("entry")
        if not (isinstance(entry, dict) and isinstance(entry.get("reply"), dict)):
            raise self._malformed(what, ProtocolError("a message that is no answer of gradlab's rehearsal"))
        return message

    def _drain(self, what, recorded=None):
        """Read the rest of a rehearsal (its calls ran: the arrays they changed come back). Its calls
        after the answers gradlab used ran too: when the last answer used was a forward, that forward is
        called again, so the module holds what gradlab's next call expects (a backward uses the input of
        the forward before it, not of the rehearsal's last point). recorded: the rehearsal, when its
        last message was read already."""
        recorded = recorded or self._recorded
        while self._recorded is not None:
            message = self._next_rehearsed(what)
            if message is not None:
                self._absorb(what, message)
        if recorded is not None and recorded.last is not None:
            (said, (handle, method, args, kwargs, _)), recorded.last = recorded.last, None
            self.call(said, handle, method, args, kwargs)

    def _absorb(self, what, message):
        """A rehearsal's answer gradlab does not use: the parameters it shared (found after a backward) are
        taken as mirrors all the same, then let go (the worker is told with the next request), so that
        both sides agree on which arrays they share."""
        ahead = message["entry"]["reply"].get("ahead")
        if isinstance(ahead, dict) and type(ahead.get("slots")) is list:
            try:
                self._slot_list(dict(message["entry"]["reply"], b=message.get("b")), ahead["slots"])
            except ProtocolError as e:
                raise self._malformed(what, e) from None

    def handle_of(self, array):
        """The handle of one of gradlab's arrays shared with the worker (a parameter's mirror)."""
        h = self.by_id.get(id(array))
        if h is None or h not in self.arrays or self.arrays[h][0]() is not array:
            raise ValueError("an array that is not shared with the worker")
        return h

    def _refused(self, what):
        """A reply of the wrong shape (a list too long, a part missing): ended as _malformed ends it."""
        self._kill()
        self.dead = f"{what}: the worker sent a malformed reply"
        return StudentError(self.dead)

    def _malformed(self, what, e, error=StudentError):
        """A reply whose parts do not decode (the student's code wrote into gradlab's pipe?): the
        worker is ended, since what it sends next may answer an earlier request."""
        self._kill()
        self.dead = f"{what}: the worker sent a malformed reply ({e}); does your code write to gradlab's pipe?"
        return error(self.dead)

    def repeat(self, what, handle, method, n):
        """Up to n values of handle() (or handle.method()), no arguments, called in a row in one
        request (worker.State.repeat): (values, error). The worker stops after a value that is
        not a finite number, so that gradlab sees it (and may read the object) before the next
        call, as with one call at a time; error: the RemoteException of the call after the
        values, which raised (a fatal one has ended the worker, as a single call's does)."""
        self._rngs = []
        budget = min(REPEAT_SECONDS, self.limits.timeout / 4) if self.limits.timeout else REPEAT_SECONDS
        header = {"op": "repeat", "target": handle, "method": method, "n": int(n), "budget": budget,
                  "limit": self.limits.timeout or None, "err": _np_err()}
        reply = self.request(header, [], what, spare=budget)
        self._warn(reply)
        try:
            values = self._decode(reply, reply.get("value"))
        except ProtocolError as e:
            raise self._malformed(what, e) from None
        stopped = reply.get("stopped")
        if type(values) is not list or len(values) > n or (stopped is not None and type(stopped) is not dict):
            raise self._refused(what)
        if reply.get("overtime") is True:     # a call that one request would have stopped at the limit
            self._kill()
            self.dead, message = _overtime(what, self.limits.timeout, "")
            return values, StudentError(message)
        if stopped is None:
            return values, None
        return values, self._failed(what, stopped)

    def _warn(self, reply):
        """NumPy's warnings from the call (overflow encountered in exp, ...), raised here as there."""
        seen = reply.get("warnings")
        if not seen:
            return
        for item in seen[:20] if type(seen) is list else ():
            if type(item) is list and len(item) == 2 and all(isinstance(t, str) for t in item):
                category = RuntimeWarning if item[0] == "RuntimeWarning" else UserWarning
                warnings.warn(item[1][:300], category, stacklevel=3)

    def _advance(self, reply):
        """The random generators passed to the call, moved on as far as the student's code drew from them."""
        states = reply.get("rngs") or []
        if not states and not self._rngs:
            return
        if type(states) is not list or len(states) != len(self._rngs):
            raise ProtocolError("bad generator states")
        for rng, state in zip(self._rngs, states):
            if not (isinstance(state, dict) and state.get("bit_generator") == rng.bit_generator.state.get(
                    "bit_generator")):
                raise ProtocolError("a bad generator state")
            try:
                rng.bit_generator.state = state
            except (TypeError, ValueError, KeyError, OverflowError):
                raise ProtocolError("a bad generator state") from None

    def _rebind(self, reply, args, kwargs):
        """Apply what the call did to the dicts and lists it was given."""
        changes = reply.get("rebound") or []
        if not changes:
            return
        if type(changes) is not list:
            raise ProtocolError("bad rebound list")
        for item in sorted(changes, key=lambda c: len(c[0]) if type(c) is list and type(c[0]) is list else 0):
            if type(item) is not list or len(item) != 2 or type(item[0]) is not list or not item[0]:
                raise ProtocolError("a bad rebound entry")
            path, node = item
            try:
                target = args[path[0]] if type(path[0]) is int else kwargs[path[0]]
                for key in path[1:]:
                    target = target[key]
            except (KeyError, IndexError, TypeError):
                continue
            new = self._decode(reply, node)
            if type(target) is dict and type(new) is dict:
                target.clear()
                target.update(new)
            elif type(target) is list and type(new) is list:
                target[:] = new

    def getattr(self, obj, name):
        session, generation, handle, _ = object.__getattribute__(obj, "_r")
        self.check_generation(generation, f"reading {name}")
        reply = self.request({"op": "getattr", "target": handle, "name": name}, [], f"reading {name}")
        if reply.get("missing"):
            raise AttributeError(name)
        if reply.get("callable"):
            return RemoteMethod(obj, name)
        try:
            return self._decode(reply, reply.get("value"))
        except ProtocolError as e:
            raise self._malformed(f"reading {name}", e) from None

    def setattr(self, obj, name, value):
        session, generation, handle, _ = object.__getattribute__(obj, "_r")
        self.check_generation(generation, f"setting {name}")
        self.request({"op": "setattr", "target": handle, "name": str(name), "value": value}, [], f"setting {name}")

    def slots(self, module, handle, generation, forward_only=False):
        cached = module.__dict__.pop("_slots", None)
        if cached is not None and cached[0] == self.requests and not forward_only:   # found at build, nothing ran since
            return cached[1]
        reply = self.request({"op": "slots", "target": handle, "forward_only": bool(forward_only)}, [],
                             "finding parameters")
        try:
            return self._slot_list(reply, reply.get("value"))
        except ProtocolError as e:
            raise self._malformed("finding parameters", e) from None

    def _slot_list(self, reply, found):
        if type(found) is not list:
            raise self._refused("finding parameters")
        out = []
        for item in found:
            if type(item) is not dict or type(item.get("slot")) is not int:
                raise self._refused("finding parameters")
            value = self._decode(reply, item.get("value"))
            if not isinstance(value, np.ndarray):
                raise self._refused("finding parameters")
            if item.get("readonly") is True:     # as the student's own array is: Subject names it
                value = value.view()
                value.flags.writeable = False
            if item.get("masked") is True:
                value = value.view(np.ma.MaskedArray)
            out.append(RemoteSlot(self, self.generation, item["slot"], str(item.get("name"))[:200], value,
                                  str(item.get("grad"))[:200]))
        siblings = [weakref.ref(slot) for slot in out]
        for slot in out:
            slot._siblings = siblings
        return out

    def grads(self, slots, what="reading gradients"):
        """The gradients of `slots`, in order. Checks often read a module's gradients one
        parameter after another with nothing run in between, so a read also fetches the
        gradients of the other parameters found with these (one request, not one per
        parameter); one read ahead is used only if no request has run since (the student's
        code runs only in requests, so it is what a read now would see), and only once."""
        handles = []
        for slot in slots:
            session, generation, handle = slot._r
            self.check_generation(generation, what)
            handles.append(handle)
        stamp, ahead = self._grads_ahead
        if stamp == self.requests and len(set(handles)) == len(handles) > 0 and all(h in ahead for h in handles):
            return [ahead.pop(h) for h in handles]
        asked = set(handles)
        others = []
        for slot in slots:
            for ref in getattr(slot, "_siblings", ()):
                s = ref()
                if s is not None and s._r[1] == self.generation and s._r[2] not in asked:
                    asked.add(s._r[2])
                    others.append(s._r[2])
        try:
            reply = self.request({"op": "grads", "slots": handles + others, "asked": len(handles)}, [], what)
        except RemoteException as e:     # name the parameter whose gradient could not be read
            i = e.info.get("index")
            if type(i) is int and 0 <= i < len(slots):
                raise RemoteException(f"reading the gradient of {slots[i].name!r}", e.info, self.limits) from None
            raise
        try:
            values = self._decode(reply, reply.get("value"))
        except ProtocolError as e:
            raise self._malformed(what, e) from None
        if type(values) is not list or not len(slots) <= len(values) <= len(slots) + len(others):
            raise self._refused(what)
        self._grads_ahead = (self.requests, dict(zip(others, values[len(slots):])))
        return values[:len(slots)]


_NO_KWARGS = {"d": []}


def _overtime(what, seconds, at):
    """(why the worker is gone, the error's words) for a call that ran past its time limit."""
    dead = f"{what} ran past {seconds:g} s{at}"
    return dead, dead + harness.OVERTIME_HINT


def _deref(ref):
    return ref()


try:      # NumPy 2 keeps its error handling (np.errstate, np.seterr) in a context variable
    from numpy._core.umath import _extobj_contextvar as _NP_ERR_STATE
except ImportError:
    _NP_ERR_STATE = None
_np_err_seen = (None, None)     # (that variable's value, np.geterr() then): one tuple, swapped whole


def _np_err():
    """np.geterr() where gradlab calls into the worker (sent with every call). It costs ~4 us, so
    it is read again only when NumPy's error state changed (a new object in that variable)."""
    global _np_err_seen
    if _NP_ERR_STATE is None:
        return np.geterr()
    state = _NP_ERR_STATE.get()
    seen = _np_err_seen
    if seen[0] is not state:
        seen = _np_err_seen = (state, np.geterr())
    return seen[1]


def _name(text):
    return text if isinstance(text, str) and text.isidentifier() and len(text) < 100 else "object"


def _validate_info(info):
    if not isinstance(info, dict) or not isinstance(info.get("registrations"), list):
        raise UsageError("gradlab's worker sent a malformed reply while loading the submission")
    files = info.get("files")
    info["files"] = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    for reg in info["registrations"]:
        if not (isinstance(reg, dict) and isinstance(reg.get("kind"), str) and type(reg.get("target")) is int):
            raise UsageError("gradlab's worker sent a malformed reply while loading the submission")
    return info


def worker_env(tmp, token, limits):
    """A clean environment for the worker: no secrets of the user's shell, HOME in
    the worker's temporary folder, and BLAS threads so N workers use N cores."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "TMPDIR": tmp,
           "PYTHONPATH": os.pathsep.join([_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                     if p]),
           "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "GRADLAB_WORKER": token}
    for key, value in os.environ.items():
        if key in ("LANG", "LANGUAGE", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "VIRTUAL_ENV") or \
                key.startswith("LC_"):
            env[key] = value
    threads = str(limits.blas_threads())
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = threads
    return env


# ---- what the loader hands the runner ----------------------------------------------------------

class RemoteImplementation:
    """Like loader.Implementation, for a submission running in a worker."""

    def __init__(self, impl, limits, shown_as=None):
        self.session = Session(impl, limits)
        info = self.session.start()
        shown = impl if shown_as is None else shown_as
        self.name = "reference" if shown is None else os.fspath(shown)
        self.files = tuple(info["files"])
        self.refused = {str(k): str(v) for k, v in (info.get("refused") or {}).items()} \
            if isinstance(info.get("refused"), dict) else {}
        if impl is not None and shown_as is not None:      # the file as the user named it, not its absolute path
            self.refused = {k: v.replace(os.fspath(impl), os.fspath(shown_as)) for k, v in self.refused.items()}
        own = info.get("refused_own")
        self.refused_own = tuple(k for k in own if k in self.refused) if isinstance(own, list) else ()
        self.registrations = {}
        for reg in info["registrations"]:
            kind = reg["kind"]
            target = RemoteFunction(self.session, kind, "target",
                                    "build(cfg)" if _is_factory(kind) else f"{kind}(...)", _signature(reg),
                                    reference=reg.get("reference") is True)
            pm = reg.get("param_map")
            if isinstance(pm, dict) and "fn" in pm:
                param_map = RemoteFunction(self.session, kind, "param_map", "param_map(module, reference_params)",
                                           _signature(pm))
            elif isinstance(pm, dict) and isinstance(pm.get("dict"), dict):
                param_map = {str(k): str(v) for k, v in pm["dict"].items()}
            else:
                param_map = None
            self.registrations[kind] = Registration(kind, target, param_map, str(reg.get("where", "?"))[:200])

    def get(self, kind):
        from gradlab.execution.loader import Implementation     # (loader imports this module)
        return Implementation.get(self, kind)                   # the same lookup and message

    def close(self):
        self.session.close()


def _is_factory(kind):
    from gradlab.contract.kinds import KINDS
    spec = KINDS.get(kind)
    return spec is not None and spec.form != "function"


def _signature(reg):
    params = reg.get("signature")
    if not isinstance(params, list):
        return None
    try:
        out = []
        for name, kind, has_default, *seen in params:
            if not (isinstance(name, str) and name.isidentifier()) or kind not in range(5):
                return None
            out.append(inspect.Parameter(name, inspect._ParameterKind(kind),
                                         default=_default(seen) if has_default else inspect.Parameter.empty))
        return inspect.Signature(out)
    except (TypeError, ValueError):
        return None


class UnseenDefault:
    """A default the worker did not send (not a plain value): there is one, gradlab does not know it."""

    def __repr__(self):
        return "<a default gradlab does not see>"


def _default(seen):
    """A parameter's default as the worker sent it: a plain value (checked here, the worker is not trusted),
    or UnseenDefault."""
    value = plain_scalar(seen[0].get("v", NOT_PLAIN)) if seen and isinstance(seen[0], dict) else NOT_PLAIN
    return UnseenDefault() if value is NOT_PLAIN else value
