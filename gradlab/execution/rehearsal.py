"""Rehearsal: the first pass of a gradient check, run ahead in the worker within
the request that builds the module, so that a passing check makes one request
instead of four (the build; the forward; the backward and what is read after
it; the two points of the directional check that decide a clean pass; the other
two, when they are needed, are a request of their own).

In the worker, `rehearse` runs gradlab's own check code (checks/gradient.py:
ModuleSetup and judge, the same functions gradlab runs) on a Rehearsal, a
Subject whose calls run right there, from a copy of gradlab's random
generator. The build's reply goes first; then, as each request gradlab will make
for the student's code is run, its reply is sent, with the request's signature:
what was called, with which arguments (fingerprints), which parameters held
which points. The rehearsal stops after the points, or at the first thing it
does not expect (a second build, a call that raised, anything else), and says so.

In gradlab's process, the check then runs exactly as without a rehearsal.
A request it is about to send is answered from the rehearsal instead only when
its signature is the recorded one, nothing else was sent since, and no
parameter mirror differs from what the worker holds (remote.Session.rehearsed);
otherwise the rest of the rehearsal is dropped and the requests are sent. So
a rehearsal never changes what gradlab computes, only how many round trips it
takes: the numbers are still the student's, judged in gradlab's process.

While it runs, the worker writes which call it is in (and since when) to a
progress file, so the time limit applies to each call (not to the whole
request) and a limit breached or a worker ended in the middle names the call
it happened in, as the single requests would.
"""
import mmap
import os
import sys
import time
import zlib

import numpy as np

from gradlab.contract.errors import GradlabError
from gradlab.contract.registry import Registration
from gradlab.execution.subject import Subject


ENABLED = True      # False: every request is sent (tests compare the two ways; benchmarks measure the difference)
MAX_CALLS = 12      # a rehearsal's request lasts at most this many time limits (the gradient check's makes 7 calls)
CALLS = ("build(cfg)", "forward", "backward", "finding parameters", "reading gradients")   # its progress words


def names_a_call(what):
    """Whether a progress file's words name a call a rehearsal makes (the student can write there too)."""
    return what in CALLS or (what.startswith("reading the gradient of '") and what.endswith("'") and len(what) < 120)


class _End(GradlabError):
    """The rehearsal stops here; what it sent stands. (A GradlabError: the guard around student code
    lets it through, so a second build, a float64 twin's, ends the rehearsal instead of being "an error".)"""


_WEIGHTS = np.random.default_rng(20261130).integers(0, 1 << 62, 1 << 16, dtype=np.uint64) * np.uint64(2) + \
    np.uint64(1)        # odd: every 64-bit word counts, each position with its own weight


def fingerprint(value):
    """A request's argument as its signature shows it: an array by shape, dtype and a checksum of its bits
    (the same bits give the same fingerprint; its 64-bit words times fixed odd weights, summed modulo
    2**64: a dot product of integers, 2-3x faster than a CRC, and any word changed, or moved, changes it);
    a plain scalar as itself; anything else None (no match)."""
    if type(value) is np.ndarray:
        raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        if raw.size % 8:
            return [list(value.shape), value.dtype.str, zlib.crc32(raw)]
        words, total = raw.view(np.uint64), 0
        for start in range(0, words.size, _WEIGHTS.size):     # (np.dot wraps modulo 2**64, no temporary)
            part = words[start:start + _WEIGHTS.size]
            total += int(np.dot(part, _WEIGHTS[:part.size]))
        return [list(value.shape), value.dtype.str, total % (1 << 64)]
    if value is None or type(value) in (bool, int, float, str):
        return ["v", value]
    return None


def signature(op, steps, ahead, index_of, err):
    """What identifies a request: op "call" (one call) or "calls"; steps [(handle, method, args, kwargs,
    writes)], writes [(array, contents)] or [(array, d, s)] with each array named by its position among the
    module's parameters (index_of(id) -> position); ahead (a batch's read-ahead) {"slots": handle,
    "grads": [positions], "kept": handle} or None; err: NumPy's error handling. None: not comparable."""
    out, seen = [], {}          # the same direction is held at every point: fingerprinted once

    def fp(value):
        if id(value) not in seen:
            seen[id(value)] = (value, fingerprint(value))
        return seen[id(value)][1]

    for handle, method, args, kwargs, writes in steps:
        if kwargs:
            return None
        fps = [fingerprint(a) for a in args]
        held = []
        for array, *contents in writes:
            where = index_of(id(array))
            if where is None:
                return None
            held.append([where, fp(contents[0])] + [float(c) for c in contents[1:]])
        out.append([handle, method, fps, held])
    if any(None in step[2] or any(None in w for w in step[3]) for step in out):
        return None
    return {"op": op, "steps": out, "ahead": ahead, "err": err}


def ahead_signature(ahead, positions):
    """A batch's read-ahead as its signature shows it: the object whose parameters and attention weights are
    read (handles), and the gradients read, by the parameters' positions."""
    out = {"slots": ahead.get("slots"), "grads": list(positions)}
    if "kept" in ahead:
        out["kept"] = ahead["kept"]
    return out


# ---- the worker's side ----------------------------------------------------------------------

class Rehearsal(Subject):
    """A Subject in the worker that takes the paths of a worker's module (calls in batches, gradients read
    ahead) but runs them right here, recording each as the reply to the request gradlab will make."""

    def __init__(self, state, header, handle, module, kind, cfg, send_build):
        super().__init__(kind, Registration(kind.name, _no_build, None, "rehearsal"), cfg, files=state.files)
        self.batched = True
        self._sizes_read = True     # the cfg gradlab built with, sizes included
        self.state, self.header, self.handle = state, header, handle
        self.w = _worker(state)
        self.err = header["script"].get("err")      # gradlab's NumPy error handling: part of each signature
        self._prebuilt = module
        self._build_ids[id(module)] = state.build_ids.get(handle)
        self.index = {}           # id(parameter array) -> its position among the module's parameters
        self.found = None         # the parameters found after the build
        self._send_build = send_build   # sends the build's reply: once, before the first recorded call
        self._progress = _Progress(header["script"].get("progress"))
        self.ended = False        # the last message sent said "end"

    # ---- what runs unrecorded: gradlab reading the module -------------------------------------
    def build(self, rehearse=None):
        if self._prebuilt is None:         # a second module (a float64 twin, fresh()): not rehearsed
            raise _End()
        module, self._prebuilt = self._prebuilt, None
        return module

    def slots(self, module):
        found = super().slots(module)
        if not self.index:
            self.index = {id(slot.value): i for i, slot in enumerate(found)}
            self.found = found        # the build's reply describes these (no second discovery)
        return found

    def read_grads(self, slots):
        """The gradients as they are: gradlab validates and copies the ones it reads with the backward's
        answer; here they only need to exist for what leads to the points (a bad one ends the rehearsal),
        so all of them are read in one guarded call."""
        return self.run("reading gradients", lambda: {slot.name: slot.grad() for slot in slots})

    def kept_attention(self, module):
        """Only gradlab's allowance (after the points) uses the attention weights, and it reads them with
        the backward's answer: not worked out here."""
        return []

    def run(self, what, fn, *args, **kwargs):
        """Student code that is no request of its own (discovery, reading gradients): guarded; if it
        raises, the rehearsal ends (gradlab meets the error itself, in its own request)."""
        if getattr(fn, "__self__", None) is self:      # a recorded batch: guarded call by call, inside
            return fn(*args, **kwargs)
        self._progress.write(what)
        try:
            with self.state.student(self.header):
                return fn(*args, **kwargs)
        except self.w._StudentRaised:
            raise _End() from None

    # ---- what is recorded: the requests gradlab makes -----------------------------------------
    def flush(self):
        """Send the build's reply now, if it is not sent yet."""
        if self._send_build is not None:
            send, self._send_build = self._send_build, None
            plain = self.found is not None and all(type(slot.value) is np.ndarray for slot in self.found)
            send(self.found if plain else None)     # (describe_slots makes a subclass a view: not of ours)

    def forward(self, module, *inputs, **kwargs):
        self.flush()
        args = self.complete(inputs)
        sig = self._signature("call", [(self.handle, "forward", args, kwargs, ())], None)
        enc = self.state.encoder()
        try:
            reply, value = self._call("forward", module, "forward", args, kwargs, enc)
        except self.w._StudentRaised as e:
            self._record(sig, {"raised": e.info}, enc)
        self._record(sig, reply, enc)
        return self._forward_output(value)

    def forwards(self, module, calls, deferred=False):
        """At once, deferred or not: the points are where the rehearsal ends, before the engine's other work."""
        return super().forwards(module, calls)

    def _forward_batch(self, module, calls):
        self.flush()
        enc, by_value = self._encoders()
        sig = self._signature("calls", [(self.handle, "forward", args, {}, writes) for args, writes in calls], None)
        done, failed = [], None
        for args, writes in calls:
            try:
                with self.w.holding(writes):     # (the worker's own, bound before any student code ran)
                    reply, value = self._call("forward", module, "forward", args, {}, by_value)
            except self.w._StudentRaised as e:
                e.info["index"] = len(done)
                failed = e.info
                break
            done.append(reply)
        self._record(sig, {"value": done, **({"failed": failed} if failed else {})}, enc, last=True)
        raise _End()     # the points of the first directional check: where the rehearsal ends

    def _backward_ahead(self, module, grad_out, slots, kept):
        self.flush()
        enc, by_value = self._encoders()
        read = {"slots": self.handle, **({"kept": self.handle} if kept else {})}
        sig = self._signature("calls", [(self.handle, "backward", (grad_out,), {}, ())],
                              ahead_signature(read, [self.index.get(id(slot.value)) for slot in slots]))
        try:
            reply, value = self._call("backward", module, "backward", (grad_out,), {}, by_value)
        except self.w._StudentRaised as e:
            e.info["index"] = 0
            self._record(sig, {"value": [], "failed": e.info}, enc)
        self._record(sig, {"value": [reply], "ahead": self.state.read_ahead(read, self.header, enc, slots)}, enc)
        return value

    def _call(self, what, module, method, args, kwargs, enc):
        self._progress.write(what)
        self.state.rngs = []
        return self.state.invoke(self.header, module, method, args, kwargs, enc)

    def _encoders(self):
        """(an encoder for one message, one that sends arrays by value into the same buffers), as the
        worker's "calls" request encodes its reply."""
        enc, by_value = self.state.encoder(), self.state.encoder(by_value=True)
        by_value.buffers = enc.buffers
        return enc, by_value

    def _signature(self, op, steps, ahead):
        """The request's signature, taken before its calls run (they may edit their arguments in place)."""
        return signature(op, steps, ahead, self.index.get, self.err)

    def _record(self, sig, reply, enc, last=False):
        """Send the reply of the request gradlab will make for these calls, its buffers in enc (each call
        has run: sent even when the signature cannot be compared, for the arrays it changed). The last
        one says it is ("end"): gradlab then knows the rehearsal is over without one more message."""
        last = last or sig is None or "failed" in reply or "raised" in reply
        self.state.send({"entry": {"sig": sig, "reply": reply}, **({"end": True} if last else {})}, enc)
        self.ended = last
        if last:
            raise _End()


def _worker(state):
    """The worker's module, as it runs (as __main__: importing gradlab.execution.worker would give another
    copy, whose exception classes the worker's own code does not raise)."""
    return sys.modules[type(state).__module__]


def _no_build(cfg):
    raise _End()


class _Progress:
    """The progress file: "<calls started> <time.monotonic() at the last start> <what>", written in place
    through a shared mapping of its first bytes (no system call per call; gradlab reads the file). The
    count runs on over the worker's rehearsals: gradlab extends a deadline only when it has grown."""

    SIZE = 256
    _maps = {}          # path -> [mmap, calls started], kept for the worker's life (one open, not one per rehearsal)

    def __init__(self, path):
        self.entry = self._maps.get(path) if isinstance(path, str) else None
        if self.entry is None and isinstance(path, str):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    os.ftruncate(fd, self.SIZE)
                    self.entry = self._maps[path] = [mmap.mmap(fd, self.SIZE), 0]
                finally:
                    os.close(fd)
            except (OSError, ValueError):
                self.entry = None

    def write(self, what):
        if self.entry is None:
            return
        self.entry[1] += 1
        line = f"{self.entry[1]} {time.monotonic():.6f} {what}\n".encode()[:self.SIZE - 1]
        self.entry[0][:len(line) + 1] = line + b"\0"

    def close(self):
        self.write("")      # between rehearsals: no call in progress


def rehearse(state, header, handle, module, send_build):
    """Run the check's first pass on the module just built (object `handle`), header["script"]:
    {"check": "gradient", "kind": name, "rng": the generator's state, "err": NumPy's error handling,
    "progress": a file}. Sends the build's reply (send_build), one message per recorded request
    ({"entry": {"sig", "reply"}}, the last with "end": true), or {"end": true} after the build's reply
    when nothing was recorded."""
    from gradlab.contract.kinds import get_kind
    script = header["script"]
    rehearsal = None
    try:
        rehearsal = Rehearsal(state, header, handle, module, get_kind(script["kind"]), header_cfg(state, header),
                              send_build)
        rng = _worker(state)._generator(script["rng"], own=True)
        if script.get("check") == "gradient":
            from gradlab.checks.gradient import ModuleSetup, judge
            judge(rehearsal, ModuleSetup(rehearsal, rng), rng)
    except Exception:     # _End, or anything else: what was sent stands, gradlab sends the rest itself
        pass
    finally:
        if rehearsal is not None:
            rehearsal._progress.close()
            rehearsal.flush()
        else:
            send_build()
        if rehearsal is None or not rehearsal.ended:
            state.send({"end": True}, state.encoder())


def header_cfg(state, header):
    """The cfg the build was called with (the request's first argument)."""
    args = header.get("args") or []
    node = args[0] if args else None
    if not (isinstance(node, dict) and isinstance(node.get("cfg"), dict)):
        raise _End()
    return _worker(state)._config(node["cfg"])


# ---- gradlab's side --------------------------------------------------------------------------

class Recorded:
    """A rehearsal whose messages gradlab's process has not all read yet (remote.Session.rehearsed)."""

    def __init__(self, stamp, progress):
        self.stamp = stamp                  # Session.requests when the build's reply came
        self.progress = progress            # the worker's progress file (a ProgressFile)
        self.index = {}                     # id(parameter mirror) -> its position among the module's
        self.last = None                    # (what, step) of the last forward answered from the rehearsal

    def slots(self, found):
        self.index = {id(slot.value): i for i, slot in enumerate(found)}


class ProgressFile:
    """gradlab's side of a worker's progress file, kept open: a look is one pread, not an open, a read
    and a close (a rehearsal's request looks once per message). Opened when first looked at (the
    worker creates the file); closed with the worker's session. A file the student's code truncated
    or replaced reads as no progress, which only shortens the deadlines it could have extended."""

    def __init__(self, path):
        self.path, self._fd = path, None

    def read(self):
        """(calls started, when the last started (time.monotonic), what), or None."""
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            count, start, what = os.pread(self._fd, _Progress.SIZE, 0).split(b"\0", 1)[0].decode().split(" ", 2)
            return int(count), float(start), what.strip()[:100]
        except (OSError, ValueError):
            return None

    def close(self):
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
