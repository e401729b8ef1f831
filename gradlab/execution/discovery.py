"""Finding a module's parameters and their gradients (CONTRACT §2).

In this order, the first that applies to an object:
1. `obj.params` / `obj.grads` dicts;
2. `obj.parameters()` returning a dict, gradients in `obj.grads` or `obj.gradients()`;
3. attribute pairs: an ndarray attribute `w` with its gradient in `dw`, `grad_w` or `w_grad`.
Child modules (attributes, lists, dicts of objects) are walked and named with dots.
An array reachable under two names (tied weights) is reported once, under the first.
"""
from dataclasses import dataclass

import numpy as np

GRAD_PATTERNS = ("d{}", "grad_{}", "{}_grad")
_SCALARS = (str, bytes, int, float, complex, bool, type(None), np.generic)


@dataclass
class Slot:
    """One parameter: where its value lives and how to read its gradient."""
    name: str          # dotted name, as the student would recognise it
    value: np.ndarray  # the student's own array: gradlab writes into it, never rebinds it
    owner: object
    grad_source: tuple  # ("dict", mapping_getter, key) or ("attr", attr_name)

    def grad(self):
        """The gradient as the student left it after backward (None if missing)."""
        kind = self.grad_source[0]
        if kind == "dict":
            mapping = self.grad_source[1]()
            return None if mapping is None else mapping.get(self.grad_source[2])
        return getattr(self.owner, self.grad_source[1], None)

    def describe_grad(self):
        if self.grad_source[0] == "dict":
            return f"grads[{self.grad_source[2]!r}]"
        return self.grad_source[1]


def arrays_at_build(obj):
    """Ids of every ndarray reachable from a freshly built module: attribute-pair
    parameters must be among them, so forward caches (self.x, self.dx) are not
    mistaken for a parameter and its gradient."""
    ids = set()
    for _, value in _walk_values(obj):
        if isinstance(value, np.ndarray):
            ids.add(id(value))
    return ids


def find_slots(obj, build_ids=None):
    """All parameter slots of `obj`, in a stable order."""
    slots, seen_arrays, seen_objects = [], set(), set()
    _collect(obj, "", slots, seen_arrays, seen_objects, build_ids)
    return slots


def _collect(obj, prefix, slots, seen_arrays, seen_objects, build_ids):
    if id(obj) in seen_objects:
        return
    seen_objects.add(id(obj))

    def add(name, arr, source):
        if isinstance(arr, np.ndarray) and id(arr) not in seen_arrays:
            seen_arrays.add(id(arr))
            slots.append(Slot(prefix + name, arr, obj, source))

    own = _own_dict(obj)
    params = own.get("params")
    if not (isinstance(params, dict) and params):
        # way 2 applies only when parameters() returns a dict; a PyTorch-style
        # list says nothing about names, so fall through to attribute pairs.
        method = getattr(obj, "parameters", None)
        got = method() if callable(method) and not isinstance(obj, type) else None
        params = got if isinstance(got, dict) and got else None
    if params is not None:
        for key, arr in params.items():
            add(str(key), arr, ("dict", lambda o=obj: _grads_mapping(o), key))
    else:
        for attr, arr in own.items():
            if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
                continue
            if build_ids is not None and id(arr) not in build_ids:
                continue
            for pattern in GRAD_PATTERNS:
                gname = pattern.format(attr)
                if isinstance(own.get(gname), np.ndarray):
                    add(attr, arr, ("attr", gname))
                    break
    for attr, child in own.items():
        for suffix, sub in _children(child):
            _collect(sub, f"{prefix}{attr}{suffix}.", slots, seen_arrays, seen_objects, build_ids)


def _grads_mapping(obj):
    grads = getattr(obj, "grads", None)
    if isinstance(grads, dict):
        return grads
    if callable(getattr(obj, "gradients", None)):
        got = obj.gradients()
        return got if isinstance(got, dict) else None
    return None


def _own_dict(obj):
    try:
        return dict(vars(obj))
    except TypeError:
        return {}


def _is_module_like(value):
    if isinstance(value, (_SCALARS, np.ndarray, type)) or callable(value) and not hasattr(value, "__dict__"):
        return False
    if type(value).__module__ in ("builtins", "numpy", "types", "functools"):
        return False
    return hasattr(value, "__dict__") and (hasattr(value, "forward") or hasattr(value, "params")
                                           or hasattr(value, "parameters") or _has_arrays(value))


def _has_arrays(value):
    return any(isinstance(v, np.ndarray) for v in vars(value).values())


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


def _walk_values(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for attr, value in _own_dict(obj).items():
        yield attr, value
        if isinstance(value, dict):
            yield from ((k, v) for k, v in value.items())
        for _, sub in _children(value):
            yield from _walk_values(sub, seen)
