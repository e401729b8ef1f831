"""The messages between gradlab and the worker process that runs the student's
code (gradlab.execution.worker).

A message is a JSON header plus raw array buffers, framed by length:

    8 bytes  total length N of what follows (little endian)
    4 bytes  length H of the header
    H bytes  the header: JSON, utf-8
    ...      the array buffers, end to end (their lengths are in the header)

Nothing is ever unpickled: a pickle from the worker (which runs untrusted
code) would be code execution in gradlab. What the parent accepts from the
worker is plain data only: None, bool, int, float, str, lists, tuples, dicts,
and NumPy arrays of an allow-listed numeric dtype, rebuilt with np.frombuffer
after their shape and size are validated. Everything else the student returns
travels as a reference (a handle) or as the name of its type.

Values are encoded as JSON trees with one-letter tags for what JSON lacks:
    {"a": i, "dtype": "<f8", "shape": [2, 3], "h": handle}   array (buffer i; h: shared-array handle, left out if none)
    {"s": i, "dtype": "<f4"}                                NumPy scalar (0-d array)
    {"t": [...]}                                            tuple
    {"d": [[key, value], ...]}                              dict (any keys)
    {"x": handle}                                           a shared array the other side already has
    {"r": handle, "type": "ClassName", "c": [methods]}      an object living in the worker
    {"o": "TypeName", "shape": [...]}                       something that cannot travel (an object array, ...)
    {"ma": <array>, "mask": <bool array>}                   a numpy.ma.MaskedArray (other ndarray subclasses
                                                            travel as their numbers, a plain array)
    {"cfg": {...}}                                          a gradlab Config (parent to worker only)
    {"rng": {...}}                                          a np.random.Generator's state (parent to worker;
                                                            its state after the call comes back)
"""
import fcntl
import json
import os
import select
import struct
import time

import numpy as np

# dtypes an array from the worker may have; anything else arrives as {"o": ...}
ALLOWED_DTYPES = frozenset(np.dtype(t).str for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))
_DTYPES = {t: np.dtype(t) for t in ALLOWED_DTYPES}
MAX_MESSAGE = 1 << 31          # bytes: a reply larger than this is a broken (or hostile) worker
MAX_DEPTH = 64                 # nesting of lists/dicts in a reply
MAX_TEXT = 2000                # characters kept of any string from the worker
PIPE_BYTES = 1 << 20           # pipe capacity asked for: a call's arrays go in one write, one read
READ = 1 << 16                 # bytes asked for by the first read of a message (most messages are smaller)
SPIN = 1e-3                    # seconds a read polls (yielding the core) before it sleeps: see Channel
IDLE_SPIN = 20e-3              # ... the worker's wait for gradlab's next request (see Channel)
JOIN = 1 << 16                 # messages up to this size are joined into one bytes object and written at once
_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode   # built once, not per message
_loads = json.JSONDecoder().decode
_PREFIX = struct.Struct("<QI")  # the total length, then the header's


def widen_pipe(fd):
    """Ask the kernel for a pipe buffer of PIPE_BYTES (Linux; the default is 64 KiB): a message
    of the attention's parameters (~130 KB) then crosses in one write instead of several
    write/wake/read turns of both processes. Where it is refused, the pipe works as it was."""
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (OSError, ValueError):
        pass


NOT_PLAIN = object()      # plain_scalar's answer for a value that does not travel as itself


def plain_scalar(value):
    """`value` as a plain scalar, the same on both sides of the pipe (None, a bool, a number, a string of at most
    100 characters; a NumPy number as its Python number), or NOT_PLAIN: a parameter's default travels so
    (epsilon=0.1), and gradlab takes nothing else the worker says for one."""
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = value.item()
    if value is None or type(value) in (bool, int, float) or (type(value) is str and len(value) <= 100):
        return value
    return NOT_PLAIN


class ProtocolError(Exception):
    """The worker sent something that is not a well-formed reply."""


class ChannelClosed(Exception):
    """The other end closed the pipe (the worker died, or closed its end)."""


class ChannelTimeout(Exception):
    """No complete message before the deadline."""


# ---- framing --------------------------------------------------------------------

class Channel:
    """A pair of pipe file descriptors carrying framed messages. The parent's
    side is non-blocking and every read and write takes a deadline (a worker
    that stops reading, or stops half-way through a message, cannot hang
    gradlab); the worker's side waits as long as it takes (blocking=True, or
    non-blocking with no deadline where it polls first).

    spin: a read on the non-blocking side polls for up to this many seconds,
    yielding the core to any other runnable process between polls, before it
    sleeps until the message comes. Most replies come within a millisecond, and
    waking a sleeping process is slow on a virtual machine: measured here, the
    gradient check of the attention through a worker took 6-15% less time (and
    no more with the other core busy, thanks to the yield). A read that waits
    longer costs at most `spin` seconds of CPU more than sleeping would.
    The worker polls longer (IDLE_SPIN): between two of gradlab's requests, gradlab
    judges, often for a few milliseconds, and a worker that slept meanwhile answers
    the next request late. Measured here, the attention's gradient check run in turn
    with an in-process one (benchmarks/bench_isolation.py): the request reached a
    sleeping worker 0.23 ms after it was sent, a polling one 0.16 ms; the worker's
    check took 1.56-1.59x the in-process time with 20 ms, 1.63-1.71x with 1 ms (3
    runs each, in turn). Only where gradlab polls too: one worker, a core to spare."""

    def __init__(self, read_fd, write_fd, blocking=True, spin=0.0):
        self.rfd, self.wfd = read_fd, write_fd
        self.blocking = blocking
        self.spin = spin
        self.deadline = None         # time.monotonic() by which the current exchange must be done (parent)
        self.extend = None           # () -> a later deadline, or None: asked when the deadline passes (parent)
        self._extra = b""
        if not blocking:
            os.set_blocking(read_fd, False)
            os.set_blocking(write_fd, False)
            self._rpoll = select.poll()
            self._rpoll.register(read_fd, select.POLLIN)
            self._wpoll = select.poll()
            self._wpoll.register(write_fd, select.POLLOUT)

    def close(self):
        for fd in (self.rfd, self.wfd):
            try:
                os.close(fd)
            except OSError:
                pass

    def send(self, header, buffers=(), deadline=None):
        """One message: the header (its "b" set here to the buffers' lengths) and the buffers,
        in one write when the pipe takes it all (small messages are joined first: one
        syscall, not a writev of many pieces)."""
        self.deadline = deadline
        lengths = header["b"] = [b.nbytes if type(b) is np.ndarray else memoryview(b).nbytes for b in buffers]
        head = _dumps(header).encode()
        total = 4 + len(head) + sum(lengths)
        prefix = _PREFIX.pack(total, len(head)) + head
        if total <= JOIN:
            data = b"".join([prefix, *buffers]) if buffers else prefix
            try:
                n = os.write(self.wfd, data)
            except BlockingIOError:
                n = 0
            except (BrokenPipeError, ConnectionResetError):
                raise ChannelClosed() from None
            if n == len(data):
                return
            parts = [memoryview(data)[n:]]
        else:
            parts = [memoryview(prefix)] + [v for v in (memoryview(b).cast("B") for b in buffers) if v.nbytes]
        while parts:
            try:
                n = os.writev(self.wfd, parts[:64]) if len(parts) > 1 else os.write(self.wfd, parts[0])
            except BlockingIOError:
                self._wait(self._wpoll, self.deadline)      # the pipe is full: wait until the other side reads
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise ChannelClosed() from None
            while n:
                if n >= parts[0].nbytes:
                    n -= parts[0].nbytes
                    parts.pop(0)
                else:
                    parts[0] = parts[0][n:]
                    n = 0

    def recv(self, deadline=None, limit=MAX_MESSAGE):
        """-> (header dict, payload memoryview): buffers are read from the payload.
        Usually one read: the parent waits until the reply is there, then takes it whole."""
        self.deadline = deadline
        data = self._extra
        while len(data) < 8:
            data = data + self._read_some()
        total = int.from_bytes(data[:8], "little")
        if total < 4 or total > limit:
            raise ProtocolError(f"a message of {total} bytes")
        end = 8 + total
        if len(data) >= end:
            body, self._extra = memoryview(data)[8:end], data[end:]
        else:
            body, self._extra = memoryview(self._read_rest(data[8:], total)), b""
        hlen = int.from_bytes(body[:4], "little")
        if hlen > total - 4:
            raise ProtocolError("a header longer than its message")
        try:
            header = _loads(str(body[4:4 + hlen], "utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise ProtocolError("a header that is not JSON") from None
        if not isinstance(header, dict):
            raise ProtocolError("a header that is not a JSON object")
        return header, body[4 + hlen:]

    def _read_some(self):
        """What the pipe holds now (at least one byte; the parent waits for it until its deadline)."""
        while True:
            if not self.blocking:
                self._wait(self._rpoll, self.deadline)
            try:
                chunk = os.read(self.rfd, READ)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ChannelClosed()
            return chunk

    def _read_rest(self, start, n):
        """A body of n bytes whose first bytes are `start`: read into one buffer, no copies of pieces."""
        buf = bytearray(n)
        got = len(start)
        buf[:got] = start
        view = memoryview(buf)
        while got < n:
            if not self.blocking:
                self._wait(self._rpoll, self.deadline)
            try:
                k = os.readv(self.rfd, [view[got:]])
            except BlockingIOError:
                continue
            except ConnectionResetError:
                k = 0
            if k == 0:
                raise ChannelClosed()
            got += k
        return buf

    def _wait(self, poller, deadline):
        if self.spin and poller is self._rpoll:
            end = time.monotonic() + self.spin
            if deadline is not None:
                end = min(end, deadline)
            while True:
                if poller.poll(0):
                    return
                if time.monotonic() >= end:
                    break
                os.sched_yield()
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = poller.poll(None if timeout is None else int(timeout * 1000) + 1)
            if events:
                return
            if deadline is not None and time.monotonic() >= deadline:
                later = self.extend() if self.extend is not None else None
                if later is None:
                    raise ChannelTimeout()
                deadline = self.deadline = later


# ---- values -----------------------------------------------------------------------

class Encoder:
    """Builds the JSON tree of a value and the list of buffers it refers to.
    `array_tag(array, encoder)` may return a shared-array handle (or None);
    `object_tag(obj)` returns the tag dict for an object that cannot travel by value."""

    def __init__(self, array_tag=None, object_tag=None):
        self.buffers = []
        self.array_tag = array_tag
        self.object_tag = object_tag

    def buffer(self, array):
        """The array's bytes as buffer i (the array itself when it is contiguous: no copy)."""
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self.buffers.append(array if array.size else b"")
        return len(self.buffers) - 1

    def array(self, array, handle=None):
        node = {"a": self.buffer(array), "dtype": array.dtype.str, "shape": list(array.shape)}
        if handle is not None:
            node["h"] = handle
        return node

    def encode(self, value, depth=0):
        t = type(value)
        if value is None or t in (bool, int, str):
            return value
        if t is float:
            return value
        if depth > MAX_DEPTH:
            return self._object(value)
        if t is np.ndarray:
            if value.dtype.str not in ALLOWED_DTYPES:
                return {"o": "ndarray", "dtype": str(value.dtype), "shape": list(value.shape)}
            if self.array_tag is not None:
                tag = self.array_tag(value, self)
                if tag is not None:
                    return tag
            return self.array(value)
        if isinstance(value, np.generic) and t.__module__ == "numpy" and np.dtype(t).str in ALLOWED_DTYPES:
            return {"s": self.buffer(np.asarray(value)), "dtype": np.dtype(t).str}
        if t is list:
            return [self.encode(v, depth + 1) for v in value]
        if t is tuple:
            return {"t": [self.encode(v, depth + 1) for v in value]}
        if t is dict:
            return {"d": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()]}
        return self._object(value)

    def _object(self, value):
        if self.object_tag is not None:
            return self.object_tag(value, self)
        return {"o": type_name(value)}


def type_name(value):
    try:
        name = type(value).__name__
    except Exception:       # a hostile metaclass
        return "object"
    return name if isinstance(name, str) and name.isidentifier() else "object"


class Decoder:
    """Rebuilds a value from its JSON tree and payload, trusting nothing:
    `array_hook(handle, array)` sees every array that names a shared handle;
    `object_hook(tag)` turns {"r": ...} and {"o": ...} tags into objects."""

    def __init__(self, header, payload, object_hook, array_hook=None):
        lengths = header.get("b", [])
        if type(lengths) is not list:
            raise ProtocolError("bad buffer lengths")
        self.buffers, start = [], 0
        for n in lengths:
            if type(n) is not int or n < 0:
                raise ProtocolError("bad buffer lengths")
            self.buffers.append(payload[start:start + n])
            start += n
        if start != len(payload):
            raise ProtocolError("buffer lengths that do not add up")
        self.object_hook = object_hook
        self.array_hook = array_hook

    def decode(self, node, depth=0):
        if depth > MAX_DEPTH:
            raise ProtocolError("nesting too deep")
        t = type(node)
        if node is None or t in (bool, int, float):
            return node
        if t is str:
            return node[:MAX_TEXT]
        if t is list:
            return [self.decode(v, depth + 1) for v in node]
        if t is not dict:
            raise ProtocolError(f"an unknown value of JSON type {t.__name__}")
        if "a" in node:
            array = self._array(node, node.get("shape"))
            handle = node.get("h")
            if handle is not None and type(handle) is not int:
                raise ProtocolError("a bad array handle")
            if self.array_hook is not None:
                return self.array_hook(handle, array)
            return array
        if "s" in node:
            return self._array({"a": node["s"], "dtype": node.get("dtype")}, [])[()]
        if "ma" in node:          # a masked array: its data and its mask, rebuilt here from plain arrays
            data, mask = self.decode(node["ma"], depth + 1), self.decode(node.get("mask"), depth + 1)
            if not (type(data) is np.ndarray and type(mask) is np.ndarray and mask.dtype == bool
                    and mask.shape == data.shape):
                raise ProtocolError("a bad masked array")
            return np.ma.MaskedArray(data, mask=mask)
        if "t" in node and type(node["t"]) is list:
            return tuple(self.decode(v, depth + 1) for v in node["t"])
        if "d" in node and type(node["d"]) is list:
            out = {}
            for pair in node["d"]:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("a bad dict entry")
                key = self.decode(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise ProtocolError("an unhashable dict key") from None
                out[key] = self.decode(pair[1], depth + 1)
            return out
        if "r" in node or "o" in node or "x" in node or "cfg" in node or "rng" in node:
            return self.object_hook(node)
        raise ProtocolError("an unknown tag")

    def array_view(self, node):
        """A plain array node ({"a": ...}) as a read-only view of the payload, validated as
        decode() validates it but not copied: for contents copied at once into an array
        gradlab (or the worker) already has. Anything else: ProtocolError."""
        if type(node) is not dict or "a" not in node:
            raise ProtocolError("an update that is not an array")
        return self._array(node, node.get("shape"), copy=False)

    def _array(self, node, shape, copy=True):
        index, dtype = node.get("a"), node.get("dtype")
        if type(index) is not int or not 0 <= index < len(self.buffers):
            raise ProtocolError("a bad buffer index")
        dt = _DTYPES.get(dtype) if type(dtype) is str else None
        if dt is None:
            raise ProtocolError(f"an array of dtype {str(dtype)[:20]!r}")
        if type(shape) is not list or len(shape) > 32:
            raise ProtocolError("a bad array shape")
        count = 1
        for n in shape:
            if type(n) is not int or n < 0:
                raise ProtocolError("a bad array shape")
            count *= n
        buf = self.buffers[index]
        if count * dt.itemsize != len(buf):
            raise ProtocolError("an array whose size does not match its shape")
        view = np.frombuffer(buf, dtype=dt, count=count).reshape(shape)
        # a copy that owns its memory: the payload buffer is not kept alive by every array
        return view.copy() if copy else view


def same_bytes(a, b):
    """True when two arrays of the same shape and dtype hold the same bits
    (NaN equals NaN; -0.0 differs from 0.0): has a call changed an array?
    Runs on every shared array before and after every call into the worker:
    bytes compare fastest up to tens of kilobytes, integer views above."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.nbytes <= SMALL:
        return a.tobytes() == b.tobytes()
    return bool((_bits(a) == _bits(b)).all())


SMALL = 1 << 16


def snapshot(a, old=None):
    """What a shared array holds now, kept to see later whether it changed (see refresh):
    the bytes of a small array (one tobytes per comparison later, not two), a copy of a
    large one (compared as integers, no allocation; `old`'s memory reused when it fits)."""
    if a.nbytes <= SMALL:
        return (a.shape, a.dtype, a.tobytes())
    if type(old) is np.ndarray and old.shape == a.shape and old.dtype == a.dtype:
        old[...] = a
        return old
    return np.array(a, copy=True)


def refresh(a, snap):
    """None when `a` holds exactly the bits `snap` recorded (NaN equals NaN; -0.0 differs
    from 0.0); otherwise the snapshot of what it holds now (`snap` reused when it can be)."""
    if type(snap) is tuple:      # the common case (small arrays): also inlined in changed()
        if a.nbytes <= SMALL:
            now = a.tobytes()
            if now == snap[2] and a.shape == snap[0] and a.dtype == snap[1]:
                return None
            return (a.shape, a.dtype, now)
        return snapshot(a)
    if same_bytes(a, snap):
        return None
    return snapshot(a, snap)


def changed(entries, array_of):
    """[(key, array, new snapshot)] for the entries {key: [ref, snapshot, ...]} whose array
    changed since its snapshot (array_of(ref) -> the array, or None: gone). Runs over every
    shared array on both sides of every request, so the small-array case is written out here."""
    out = []
    for key, entry in entries.items():
        a = array_of(entry[0])
        if a is None:
            continue
        snap = entry[1]
        if type(snap) is tuple and a.nbytes <= SMALL:
            now = a.tobytes()
            if now == snap[2] and a.shape == snap[0] and a.dtype == snap[1]:
                continue
            out.append((key, a, (a.shape, a.dtype, now)))
        else:
            snap = refresh(a, snap)
            if snap is not None:
                out.append((key, a, snap))
    return out


_INT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(a):
    a = np.ascontiguousarray(a).reshape(-1)
    return a.view(_INT_OF_SIZE.get(a.dtype.itemsize, np.uint8))
