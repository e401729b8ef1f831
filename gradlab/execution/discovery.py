"""Finding a module's parameters and their gradients (CONTRACT §2).

In this order, the first that applies to an object:
1. `obj.params` with `obj.grads`: dicts name -> array, or lists aligned by
   position (`params = [W, b]`, `grads = [dW, db]`, the DLFS / CS231n style;
   named by a `names` / `param_names` list when there is one, else `params[i]`),
   or trees of them, the gradient at the same place of the grads tree (picoGPT);
2. `obj.parameters()` returning a dict, gradients in `obj.grads` or `obj.gradients()`;
3. attributes: an array `w` with its gradient in `dw`, `grad_w`, `w_grad`,
   `_dw`, `gradW`, `d_w` or `w_gradient` (or in a `grads` dict under the name `w`), or a
   Parameter-like object (an array in `.data` or `.value`, its gradient in
   `.grad` or `.gradient`), alone or in a list or dict, or an ndarray subclass
   carrying its own `.grad` / `.gradient`, or a list (dict) of arrays with its
   gradients in a list (dict) named as for one array (`W_q[h]`, `dW_q[h]`).
Parameter-like objects are also accepted as the values of `params` (way 1).
An attribute is whatever getattr returns: instance attributes, `__slots__`,
properties and other class-level descriptors count the same. Gradients may be
created lazily by the first backward (grads empty or None at build).
Child modules (attributes, lists, dicts of objects) are walked and named with dots.
An array reachable under two names (tied weights) is reported once, under the first.
"""
import functools
import types
from dataclasses import dataclass

import numpy as np

from gradlab.contract.errors import StudentError

# gradW, gradB: matched ignoring case; d_weights (nnfs-style layers), weights_gradient: both common in public code
GRAD_PATTERNS = ("d{}", "grad_{}", "{}_grad", "_d{}", "grad{}", "d_{}", "{}_gradient")
GRAD_FIELDS = ("grad", "gradient")           # where a Parameter-like object keeps its gradient
NAME_LISTS = ("names", "param_names")        # names for a params list, by position
VALUE_FIELDS = ("data", "value")             # where a Parameter-like object keeps its array
BUFFER_ATTRIBUTES = ("_buffers", "buffers")    # torch's (register_buffer): arrays that are no parameters
KEY_ATTRIBUTES = ("params", "grads")         # a property among these that raises is the student's error
MAX_DEPTH = 12                               # nesting walked (an lm: lm.blocks.0.attn is 3)
_SCALARS = (str, bytes, int, float, complex, bool, type(None), np.generic)
_NOT_MODULES = ("builtins", "numpy", "types", "functools", "collections")


@dataclass
class Slot:
    """One parameter: where its value lives and how to read its gradient."""
    name: str          # dotted name, as the student would recognise it
    value: np.ndarray  # the student's own array: gradlab writes into it, never rebinds it
    owner: object
    grad_source: tuple  # ("dict", getter, key) | ("list", getter, index) | ("attr", name) | ("param", obj) | ("none",)

    def grad(self):
        """The gradient as the student left it after backward (None if missing)."""
        kind = self.grad_source[0]
        if kind in ("dict", "list"):
            return _child(self.grad_source[1](), self.grad_source[2])
        if kind == "param":
            return getattr(self.grad_source[1], self.grad_source[2], None)
        if kind == "none":
            return None
        return getattr(self.owner, self.grad_source[1], None)

    def describe_grad(self):
        kind = self.grad_source[0]
        if kind in ("dict", "list"):
            return f"grads[{self.grad_source[2]!r}]"
        if kind == "param":
            return f"{self.name.rsplit('.', 1)[-1]}.{self.grad_source[2]}"
        if kind == "none":
            return "no gradient (the module has no backward)"
        return self.grad_source[1]


# ---- attributes, as getattr sees them ------------------------------------------

@functools.lru_cache(maxsize=1024)
def _class_attributes(cls):
    """Names of data descriptors a class defines (properties, __slots__ members,
    cached_property, custom descriptors), in MRO order: not methods."""
    names = []
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if name.startswith("__") or name in names:
                continue
            if isinstance(value, (classmethod, staticmethod)) or callable(value):
                continue
            if hasattr(type(value), "__get__"):
                names.append(name)
    return tuple(names)


def attributes(obj):
    """{name: value} of what getattr gives for the instance's attributes and its
    class's descriptors. A descriptor that raises is left out (a property reading a
    cache that forward has not filled yet), except params/grads: reading those is
    what CONTRACT §2 promises, so their error is the student's, in one line."""
    try:
        out = dict(vars(obj))
    except TypeError:
        out = {}
    if isinstance(obj, type):
        return out
    for name in _class_attributes(type(obj)):
        if name in out:
            continue
        try:
            out[name] = getattr(obj, name)
        except AttributeError:
            continue                     # an unset __slots__ member, or a property with nothing to return yet
        except Exception as e:
            if name in KEY_ATTRIBUTES:
                from gradlab.execution.harness import student_frame
                where = student_frame(e)
                raise StudentError(f"reading {type(obj).__name__}.{name} raised {type(e).__name__}"
                                   + (f" at {where}" if where else "") + (f": {e}" if str(e) else "")) from e
    return out


def _grad_field(value):
    """'grad' or 'gradient': where a Parameter-like object keeps its gradient (None until backward is fine)."""
    slots = getattr(type(value), "__slots__", ())
    return next((f for f in GRAD_FIELDS if hasattr(value, f) or f in slots), None)


def _param_field(value):
    """'data' or 'value' when `value` is a Parameter-like object (an array there and a
    `grad` / `gradient` attribute, possibly None until backward), else None."""
    if isinstance(value, (_SCALARS, np.ndarray, type, list, tuple, dict)):
        return None
    if _grad_field(value) is None:
        return None
    for field in VALUE_FIELDS:
        try:
            arr = getattr(value, field, None)
        except Exception:
            continue
        if isinstance(arr, np.ndarray) and arr.dtype.kind == "f":
            return field
    return None


# ---- the search ------------------------------------------------------------------

def arrays_at_build(obj):
    """id -> array of every ndarray reachable from a freshly built module (the arrays
    are kept alive, so no later array can reuse an id). Attribute-pair parameters must
    be among them, so forward caches (self.x, self.dx) are not mistaken for a
    parameter and its gradient."""
    found = {}
    for value in _walk_values(obj):
        if isinstance(value, np.ndarray):
            found[id(value)] = value
    return found


def find_slots(obj, build_ids=None, forward_only=False):
    """All parameter slots of `obj`, in a stable order. With `forward_only` (a module
    without a backward) the float arrays it held when built count as parameters
    (they can have no gradient partner); that needs `build_ids`."""
    search = _Search(build_ids, forward_only)
    search.collect(obj, "", 0)
    return _without_storage(search.slots)


def _without_storage(slots):
    """A flat vector whose slices are the parameters (W1 = flat[:n].reshape(...), the layout of code written for
    an optimizer over one vector) is their storage, not a parameter of its own: left out when smaller parameters
    found beside it are views into its memory. (Two names for one array of the same size, a tied weight and its
    transpose, are both kept.)"""
    if all(slot.value.base is None for slot in slots):
        return slots                    # (the usual case: every parameter owns its memory; find_slots runs often)
    roots = {}
    for slot in slots:
        root = slot.value
        while isinstance(root.base, np.ndarray):
            root = root.base
        roots.setdefault(id(root), []).append(slot)
    storage = {id(s) for group in roots.values() if len(group) > 1
               for s in group if any(o.value.size < s.value.size and _overlap(o.value, s.value) for o in group)}
    return [s for s in slots if id(s) not in storage] if storage else slots


def _overlap(a, b):
    if not np.may_share_memory(a, b):          # bounds apart: the usual case, and cheap
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except RuntimeError:                       # numpy.exceptions.TooHardError: a layout too tangled to solve
        return True


class _Search:
    def __init__(self, build_ids, forward_only):
        self.build_ids, self.forward_only = build_ids, forward_only and build_ids is not None
        self.slots, self.seen_arrays, self.seen_objects = [], set(), set()

    def add(self, owner, name, arr, source):
        if isinstance(arr, np.ndarray) and arr.dtype.kind == "f" and id(arr) not in self.seen_arrays:
            self.seen_arrays.add(id(arr))
            self.slots.append(Slot(name, arr, owner, source))

    def collect(self, obj, prefix, depth):
        if id(obj) in self.seen_objects or depth > MAX_DEPTH:
            return
        self.seen_objects.add(id(obj))
        attrs = attributes(obj)
        if not (self._params(obj, attrs, prefix) or self._parameters_method(obj, prefix)):
            self._attribute_parameters(obj, attrs, prefix)
        for attr, child in attrs.items():
            for suffix, sub in _children(child):
                self.collect(sub, f"{prefix}{attr}{suffix}.", depth + 1)

    def _entry(self, obj, name, value, source, depth=0):
        field = _param_field(value)
        if field:
            self.add(obj, name, getattr(value, field), ("param", value, _grad_field(value)))
        elif isinstance(value, (dict, list, tuple)) and source is not None and depth < MAX_DEPTH:
            # a tree of parameters (params["blocks"][0]["attn"]["w"], picoGPT's layout): the gradients are in
            # the same place of the grads tree
            parent, key = source[1], source[2]
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                self._entry(obj, f"{name}.{k}", v, ("dict" if isinstance(value, dict) else "list",
                                                   lambda parent=parent, key=key: _child(parent(), key), k), depth + 1)
        else:
            self.add(obj, name, value, source)

    def _at_build(self, arr):
        return self.build_ids is None or id(arr) in self.build_ids

    def _params(self, obj, attrs, prefix):
        """Way 1: params dict, or params list aligned with grads. True when it applies."""
        params = attrs.get("params")
        if isinstance(params, (dict, list, tuple)) and "params" not in _instance_dict(obj):
            _same_arrays_twice(obj, params)
        if isinstance(params, dict) and _holds_parameters(params.values()):
            for key, value in params.items():
                self._entry(obj, prefix + str(key), value, ("dict", lambda o=obj: _grads_mapping(o), key))
            return True
        if isinstance(params, (list, tuple)) and _holds_parameters(params):
            names = _position_names(attrs, len(params), obj)
            for i, value in enumerate(params):
                self._entry(obj, prefix + names[i], value, ("list", lambda o=obj: _grads_sequence(o), i))
            return True
        return False

    def _parameters_method(self, obj, prefix):
        """Way 2: parameters() returning a dict (a PyTorch-style list says nothing about
        names, so it falls through to the attributes)."""
        method = getattr(obj, "parameters", None)
        if not callable(method) or isinstance(obj, type):
            return False
        got = method()
        if not (isinstance(got, dict) and _holds_parameters(got.values())):
            return False
        for key, value in got.items():
            self._entry(obj, prefix + str(key), value, ("dict", lambda o=obj: _grads_mapping(o), key))
        return True

    def _attribute_parameters(self, obj, attrs, prefix):
        """Way 3: attribute pairs (w, dw) and Parameter-like attributes."""
        for attr, value in attrs.items():
            if _param_field(value):
                if self._at_build(_param_array(value)):       # not a Tensor-like cache made by forward
                    self._entry(obj, prefix + attr, value, None)
                continue
            if isinstance(value, (list, tuple, dict)) and value and attr not in KEY_ATTRIBUTES:
                items = list(value.items() if isinstance(value, dict) else enumerate(value))
                for key, item in items:
                    if _param_field(item) and self._at_build(_param_array(item)):
                        self._entry(obj, f"{prefix}{attr}.{key}", item, None)
                    elif _carries_grad(item) and attr not in BUFFER_ATTRIBUTES and self._at_build(item):
                        # (a torch-like _parameters dict's; a _buffers dict holds no parameters: a causal mask)
                        self.add(obj, f"{prefix}{attr}.{key}", item, ("param", item, _grad_field(item)))
                # arrays kept per head (W_q[h], its gradient in dW_q[h]): a container of the same kind beside it
                gname = _partner(attr, attrs, dict if isinstance(value, dict) else (list, tuple))
                if gname and all(isinstance(v, np.ndarray) and v.dtype.kind == "f" and self._at_build(v)
                                 for _, v in items):
                    kind = "dict" if isinstance(value, dict) else "list"
                    for key, item in items:
                        self.add(obj, f"{prefix}{attr}.{key}", item,
                                 (kind, lambda o=obj, g=gname: getattr(o, g, None), key))
                continue
            if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
                continue
            if not self._at_build(value):
                continue
            if _carries_grad(value):     # an ndarray subclass carrying its own gradient (a tiny autograd's Tensor)
                self.add(obj, prefix + attr, value, ("param", value, _grad_field(value)))
                continue
            gname = _partner(attr, attrs)
            if gname:
                self.add(obj, prefix + attr, value, ("attr", gname))
            elif isinstance(attrs.get("grads"), dict) and isinstance(attrs["grads"].get(attr), np.ndarray):
                self.add(obj, prefix + attr, value, ("dict", lambda o=obj: _grads_mapping(o), attr))
            elif self.forward_only and not _is_gradient_name(attr, attrs) and not _buffer_like(attr, value):
                self.add(obj, prefix + attr, value, ("none",))


def _buffer_like(attr, value):
    """A float array a module without a backward holds that is no parameter: a causal mask (0/1 in a triangle, or
    -1e9 / -inf where it blocks), running statistics (running_mean, running_var) or a cache allocated ahead
    (cache_k, k_cache, kv_cache: zeros at build, filled by forward). Counted as parameters, they were overwritten
    with random numbers (a mask that then leaked the future, gradlab's doing), or named in a param_map no one
    could fill."""
    low = attr.lower()
    if low.startswith("running_") or ("cache" in low and not value.any()):
        return True
    if value.ndim < 2 or value.shape[-1] != value.shape[-2] or value.size == 0:
        return False
    with np.errstate(invalid="ignore"):
        blocking = np.isneginf(value) | (value <= -1e4)
        ones = (value == 0) | (value == 1)
    if blocking.any():
        return bool(np.all(blocking | (value == 0)))
    if ones.all() and value.any():
        square = value.reshape(-1, *value.shape[-2:])
        # (a triangle with ones off the diagonal: np.eye, a weight started at the identity, is no mask)
        return bool(all((np.array_equal(m, np.triu(m)) or np.array_equal(m, np.tril(m)))
                        and (np.triu(m, 1).any() or np.tril(m, -1).any()) for m in square))
    return False


def _carries_grad(value):
    """An ndarray subclass of floats carrying its own gradient (.grad / .gradient, None until backward)."""
    return isinstance(value, np.ndarray) and type(value) is not np.ndarray and value.dtype.kind == "f" \
        and _grad_field(value) is not None


def _partner(attr, attrs, holds=np.ndarray):
    """The name of the attribute holding `attr`'s gradient (dw for w, ...), or None: an array for an array,
    a list (or dict) for a list (or dict) of arrays. Exact names first; then ignoring case, when that picks
    one attribute (gradB for b)."""
    for pattern in GRAD_PATTERNS:
        if isinstance(attrs.get(pattern.format(attr)), holds):
            return pattern.format(attr)
    lower = {}
    for name, value in attrs.items():
        if isinstance(value, holds):
            lower.setdefault(name.lower(), []).append(name)
    for pattern in GRAD_PATTERNS:
        found = lower.get(pattern.format(attr).lower(), [])
        if len(found) == 1 and found[0] != attr:
            return found[0]
    return None


def _instance_dict(obj):
    try:
        return vars(obj)
    except TypeError:
        return {}


def _same_arrays_twice(obj, params):
    """A params property must hand out the module's own arrays: gradlab writes
    parameter values in place, so a copy would make every perturbation vanish."""
    again = getattr(obj, "params")
    first = params.values() if isinstance(params, dict) else params
    second = again.values() if isinstance(again, dict) else again
    if [id(_param_array(v)) for v in first] != [id(_param_array(v)) for v in second]:
        raise StudentError(f"{type(obj).__name__}.params returns new arrays each time it is read (copies?); "
                           "gradlab writes parameter values in place, so it must return the module's own arrays "
                           "(return self.W, not self.W.copy())")


def _param_array(value):
    field = _param_field(value)
    return getattr(value, field) if field else value


def _is_gradient_name(attr, attrs):
    """dw next to w: a gradient buffer made at build, not a parameter."""
    lowered = {name.lower() for name, v in attrs.items() if isinstance(v, np.ndarray)}
    for pattern in GRAD_PATTERNS:
        head, tail = pattern.split("{}")
        low = attr.lower()
        if low.startswith(head) and low.endswith(tail) and len(attr) > len(head) + len(tail):
            base = attr[len(head):len(attr) - len(tail)]
            if isinstance(attrs.get(base), np.ndarray) or base.lower() in lowered:
                return True
    return False


def _holds_parameters(values, depth=0):
    """Some value is an array or a Parameter object, or (a tree) holds one."""
    for v in values:
        if isinstance(v, np.ndarray) or _param_field(v):
            return True
        if isinstance(v, (dict, list, tuple)) and depth < MAX_DEPTH and \
                _holds_parameters(v.values() if isinstance(v, dict) else v, depth + 1):
            return True
    return False


def _child(container, key):
    """container[key] for a dict (by key) or a list (by position), else None: where a gradient tree keeps
    the gradient of the parameter at the same place."""
    if isinstance(container, dict):
        got = container.get(key)
        if got is not None or key in container:
            return got
        named = _gradient_key(container, key)      # grads["dW"] for params["W"], as attributes pair (dw for w)
        return container.get(named) if named is not None else None
    if isinstance(container, (list, tuple)) and isinstance(key, int) and key < len(container):
        return container[key]
    return None


def _gradient_key(grads, key):
    """The one key of `grads` naming `key`'s gradient as attribute pairs do (GRAD_PATTERNS: dW, grad_W, W_grad,
    _dW, gradW, d_W, W_gradient; ignoring case when exact names find none), or None (none, or more than one)."""
    if not isinstance(key, str):
        return None
    found = [p.format(key) for p in GRAD_PATTERNS if p.format(key) in grads]
    if not found:
        lower = {str(k).lower(): k for k in grads}
        found = list({lower[p.format(key).lower()] for p in GRAD_PATTERNS if p.format(key).lower() in lower})
    return found[0] if len(found) == 1 else None


def _position_names(attrs, n, obj=None):
    """The names of a params list's n entries: a `names` / `param_names` list of the instance, or of its class
    (CS231n-style code keeps one on the class), else params[i]."""
    for key in NAME_LISTS:
        names = attrs.get(key)
        if names is None and obj is not None:
            try:
                names = getattr(type(obj), key, None)
            except Exception:
                names = None
        if isinstance(names, (list, tuple)) and len(names) == n and all(isinstance(s, str) for s in names) \
                and len(set(names)) == n:
            return list(names)
    return [f"params[{i}]" for i in range(n)]


def _grads_mapping(obj):
    grads = getattr(obj, "grads", None)
    if isinstance(grads, dict):
        return grads
    if callable(getattr(obj, "gradients", None)):
        got = obj.gradients()
        return got if isinstance(got, dict) else None
    return None


def _grads_sequence(obj):
    grads = getattr(obj, "grads", None)
    if isinstance(grads, (list, tuple)):
        return grads
    if callable(getattr(obj, "gradients", None)):
        got = obj.gradients()
        return got if isinstance(got, (list, tuple)) else None
    return None


def _is_module_like(value, depth=0):
    """A child module: an object (of any class: with forward, or __call__ and a back() of its own, or neither)
    that holds arrays, Parameter objects or child modules of its own; not a function, a method, a parameter
    or a value."""
    if isinstance(value, (_SCALARS, np.ndarray, type, list, tuple, dict)) or _param_field(value):
        return False
    # functions, methods, partials and ufuncs are builtins', functools' or numpy's: not modules
    # (a SimpleNamespace is a plain bag of attributes: a module built by a factory)
    if type(value).__module__.split(".")[0] in _NOT_MODULES and not isinstance(value, types.SimpleNamespace):
        return False
    if any(hasattr(value, name) for name in ("forward", "backward", "params", "parameters")):
        return True
    try:
        held = list(attributes(value).values())
    except StudentError:
        return True
    # (PyTorch-minded children: __call__ instead of forward, Parameter objects instead of arrays; and what they
    # hold may sit in lists or dicts: the Annotated Transformer's self.linears = [Linear x 4])
    held += [item for v in held if isinstance(v, (list, tuple)) for item in v[:64]] + \
        [item for v in held if isinstance(v, dict) for item in list(v.values())[:64]]
    return any(isinstance(v, np.ndarray) or _param_field(v) for v in held) or \
        (depth < 2 and any(_is_module_like(v, depth + 1) for v in held if not isinstance(v, (list, tuple, dict))))


def _children(value):
    """(name suffix, object) for a child module, a list/tuple of them, or a dict of them."""
    if _is_module_like(value):
        yield "", value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if _is_module_like(item):
                yield f".{i}", item
    elif isinstance(value, dict):
        for key, item in value.items():
            if _is_module_like(item):
                yield f".{key}", item


def _walk_values(obj, seen=None, depth=0):
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > MAX_DEPTH:
        return
    seen.add(id(obj))
    for value in attributes(obj).values():
        yield value
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        for item in items:
            yield item
            field = _param_field(item)
            if field:
                yield getattr(item, field)
        field = _param_field(value)
        if field:
            yield getattr(value, field)
        for _, sub in _children(value):
            yield from _walk_values(sub, seen, depth + 1)


# ---- what was there, when nothing was found --------------------------------------

def _what(value):
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"an array {value.shape}"
    if isinstance(value, (list, tuple, dict)):
        items = list(value.values()) if isinstance(value, dict) else list(value)
        arrays = sum(isinstance(v, np.ndarray) for v in items)
        kind = type(value).__name__
        if not items:
            return f"an empty {kind}"
        if arrays == len(items):
            return f"a {kind} of {len(items)} arrays"
        return f"a {kind} of {len(items)} items ({arrays} arrays)"
    return f"a {type(value).__name__}"


def child_modules(obj, prefix="", first=None, depth=0):
    """(path, child, earlier) for every child module of obj, depth first ("attn", "layers.0", "blocks.1.ln1"):
    earlier is None, or the path under which the same object was reached first (self.ln2 = self.ln1), in
    which case it is not walked again."""
    first = {} if first is None else first
    if depth > MAX_DEPTH:
        return
    try:
        attrs = attributes(obj)
    except StudentError:
        return
    for name, value in attrs.items():
        for suffix, child in _children(value):
            path = f"{prefix}{name}{suffix}"
            if id(child) in first:
                yield path, child, first[id(child)]
                continue
            first[id(child)] = path
            yield path, child, None
            yield from child_modules(child, path + ".", first, depth + 1)


def shared_children(obj):
    """["ln2 is the same object as ln1 ..."]: child modules reached under two names (self.ln2 = self.ln1), whose
    parameters discovery finds once, under the first name."""
    return [f"{path} is the same object as {earlier}: one {type(child).__name__} used twice, with one set of "
            "parameters and one forward cache, which the second use overwrites, so build a second one"
            for path, child, earlier in child_modules(obj) if earlier is not None]


def _keys_apart(params, grads):
    """How the keys of a params dict and a grads dict differ, when they do (grads["dgamma"] for
    params["gamma"], a common habit): "" otherwise."""
    if not (isinstance(params, dict) and isinstance(grads, dict)) or not grads:
        return ""
    missing = [str(k) for k in params if k not in grads and _gradient_key(grads, k) is None]
    taken = {_gradient_key(grads, k) for k in params}
    extra = [str(k) for k in grads if k not in params and k not in taken]
    if not missing or not extra:
        return ""
    shown = ", ".join(repr(k) for k in extra[:4]) + (" ..." if len(extra) > 4 else "")
    where = ", ".join(repr(k) for k in missing[:4]) + (" ..." if len(missing) > 4 else "")
    return (f" (grads has the keys {shown} where params has {where}: a gradient goes under its parameter's "
            f"key, grads[{missing[0]!r}] (or grads['d{missing[0]}']))")


def explain(obj, build_ids=None):
    """One sentence: what discovery looked at on `obj` and what was there, e.g.
    "params is a list of 2 arrays but grads is missing"."""
    try:
        attrs = attributes(obj)
    except StudentError as e:
        return str(e)
    seen = []
    if "params" in attrs:
        part = f"params is {_what(attrs['params'])}"
        part += f", grads is {_what(attrs['grads'])}" if "grads" in attrs else " but grads is missing"
        seen.append(part + _keys_apart(attrs["params"], attrs.get("grads")))
    elif "grads" in attrs:
        seen.append(f"grads is {_what(attrs['grads'])} but there is no params")
    method = getattr(obj, "parameters", None)
    if callable(method) and not isinstance(obj, type):
        try:
            got = method()
            seen.append(f"parameters() returned {_what(got)}" + ("" if isinstance(got, dict) else
                                                                   " (a dict name -> array is needed)"))
        except Exception as e:
            seen.append(f"parameters() raised {type(e).__name__}")
    arrays = {k: v for k, v in attrs.items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"
              and k not in KEY_ATTRIBUTES}
    lonely = [k for k in arrays if not _partner(k, attrs) and not _is_gradient_name(k, attrs)]
    if build_ids is not None:
        lonely = [k for k in lonely if id(arrays[k]) in build_ids]
    if lonely:
        first = lonely[0]
        shown = ", ".join(f"{k} {arrays[k].shape}" for k in lonely[:4]) + (" ..." if len(lonely) > 4 else "")
        seen.append(f"array attributes {shown} have no gradient attribute after backward "
                    f"(looked for {', '.join(p.format(first) for p in GRAD_PATTERNS)}, grads[{first!r}], "
                    "or a .grad on a Parameter object)")
    children = [k for k, v in attrs.items() if any(True for _ in _children(v))]
    if children:
        seen.append(f"child modules walked: {', '.join(children[:6])}")
    seen += shared_children(obj)
    if not seen:
        names = ", ".join(sorted(attrs)[:8]) or "none"
        seen.append(f"{type(obj).__name__} has no params, no parameters() and no float array attributes "
                    f"(its attributes: {names})")
    return "; ".join(seen)
