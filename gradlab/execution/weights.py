"""Copying gradlab's reference weights into a student's module, so that the
two can be compared on equal terms (the `reference` check) or trained from
the same start (the `overfit` check).

The student's parameters are written in place (never rebound: the student's
code keeps its own arrays). Names are matched through the registration's
`param_map` (CONTRACT §1): None, a dict {their_name: reference_name}, or a
function load(module, reference_params) that copies the weights itself.
"""
import numpy as np

from gradlab.execution.discovery import find_slots
from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.contract.kinds import core_shape, same_layout
from gradlab.execution.subject import randomize_params


def reference_module(kind, cfg):
    """A fresh instance of gradlab's reference module for `kind` (a KindSpec)."""
    from gradlab.execution.loader import reference
    return reference().get(kind.name).target(cfg)


def named_params(module):
    """{dotted name: live array} of a module whose parameters discovery finds
    (gradlab's reference modules: params dicts, children joined with dots)."""
    return {slot.name: slot.value for slot in find_slots(module)}


def random_reference(kind, cfg, rng, dtype=None):
    """A reference module with random parameter values (no bug hides behind
    gamma = 1 or bias = 0) that are exactly representable in cfg's dtype, so
    the same numbers can be given to a float32 student. `dtype` is the dtype
    the reference itself computes in (default cfg's)."""
    module = reference_module(kind, cfg if dtype is None else cfg.replace(dtype=dtype))
    slots = find_slots(module)
    randomize_params(slots, rng)
    for slot in slots:
        slot.value[...] = slot.value.astype(cfg.np_dtype)
    return module


def resolve_names(kind_name, theirs, reference, param_map=None, guessed=None):
    """Match the student's parameter names to reference names.

    theirs, reference: {name: shape}. param_map: None or a dict. Returns
    {their_name: reference_name} covering every name on both sides, or raises
    CheckSkipped with a message that shows how to write a param_map. guessed: a
    list that gets the names matched by their shapes alone (no name said it)."""
    theirs = {k: tuple(v) for k, v in theirs.items()}
    reference = {k: tuple(v) for k, v in reference.items()}
    if isinstance(param_map, dict):
        sound = {k: v for k, v in param_map.items() if k in theirs and v in reference}   # (pre-fills a template)
        unknown = [k for k in param_map if k not in theirs]
        if unknown and not _covers(sound, theirs, reference):
            # (a map that covers every parameter both ways may name more: one written for more layers than built)
            raise CheckSkipped(f"{kind_name}: param_map names {unknown[0]!r}, which is not one of the module's "
                               f"parameters ({_names(theirs)})\n" + _template(kind_name, theirs, reference, sound))
        wrong = [v for k, v in param_map.items() if k in theirs and v not in reference]
        if wrong:
            raise CheckSkipped(f"{kind_name}: param_map maps to {wrong[0]!r}, which is not a reference name "
                               f"(reference names: {_names(reference)})\n"
                               + _template(kind_name, theirs, reference, sound))
        param_map = {k: v for k, v in param_map.items() if k in theirs}
        mapping = {name: param_map.get(name, name) for name in theirs}
        unmapped = [n for n, r in mapping.items() if r not in reference]
        if unmapped:
            raise CheckSkipped(f"{kind_name}: param_map does not say which reference parameter "
                               f"{unmapped[0]!r} is\n" + _template(kind_name, theirs, reference, mapping))
        return _complete(kind_name, mapping, theirs, reference)

    mapping = {name: name for name in theirs if name in reference}
    mapping.update(_suffix_match({n: s for n, s in theirs.items() if n not in mapping},
                                 {n: s for n, s in reference.items() if n not in mapping.values()}))
    mapping.update(plural_match({n: s for n, s in theirs.items() if n not in mapping},
                                 {n: s for n, s in reference.items() if n not in mapping.values()}))
    mapping.update(_case_match({n: s for n, s in theirs.items() if n not in mapping},
                               {n: s for n, s in reference.items() if n not in mapping.values()}))
    left = {n: s for n, s in theirs.items() if n not in mapping}
    left_ref = {n: s for n, s in reference.items() if n not in mapping.values()}
    if left:
        by_shape = _unique_shape_match(left, left_ref)
        if by_shape is not None and guessed is not None:
            guessed.extend(by_shape)
        if by_shape is None:
            raise CheckSkipped(
                f"{kind_name}: cannot tell which of your parameters is which reference parameter "
                f"(yours: {_names(left)}; reference: {_names(left_ref)}), so the reference weights cannot be "
                "copied in; tell gradlab with param_map\n" + _template(kind_name, theirs, reference, mapping))
        mapping.update(by_shape)
    return _complete(kind_name, mapping, theirs, reference)


def _covers(mapping, theirs, reference):
    """Every parameter of the module maps to a reference name and every reference name is mapped to."""
    return set(mapping) == set(theirs) and set(mapping.values()) == set(reference)


def _suffix_match(theirs, reference):
    """{their name: reference name} where their name is the reference's under a prefix of their own
    ("layers.ln1.gamma" for "ln1.gamma": children kept in a dict or a container attribute) (_unique_pairs)."""
    return _unique_pairs(theirs, reference, lambda n, r: n.endswith("." + r))


def _case_match(theirs, reference):
    """{their name: reference name} for names that differ in case alone ("W1" for "w1", CONTRACT §2's own
    example of attribute pairs) (_unique_pairs)."""
    return _unique_pairs(theirs, reference, lambda n, r: n.lower() == r.lower())


def plural_match(theirs, reference):
    """{their name: reference name} where their name is the reference's in the plural ("weights", "biases":
    nnfs-style Layer_Dense), under a prefix of their own or not (_unique_pairs)."""
    return _unique_pairs(theirs, reference,
                         lambda n, r: any(n == r + end or n.endswith("." + r + end) for end in ("s", "es")))


def _unique_pairs(theirs, reference, names_pair):
    """{their name: reference name} for the names that pair (names_pair(theirs, ref)), of the same layout, where
    nothing else of either side pairs with either of the two."""
    pairs = [(n, r) for n, shape in theirs.items() for r, ref_shape in reference.items()
             if names_pair(n, r) and same_layout(shape, ref_shape)]
    return {n: r for n, r in pairs
            if sum(1 for m, q in pairs if m == n) == 1 and sum(1 for m, q in pairs if q == r) == 1}


def _complete(kind_name, mapping, theirs, reference):
    targets = list(mapping.values())
    twice = sorted({t for t in targets if targets.count(t) > 1})
    if twice:
        who = [n for n, r in mapping.items() if r == twice[0]]
        raise CheckSkipped(f"{kind_name}: {', '.join(repr(w) for w in who)} all map to reference {twice[0]!r}; "
                           "each reference parameter must be matched once\n"
                           + _template(kind_name, theirs, reference, mapping))
    missing = [r for r in reference if r not in targets]
    if missing:
        raise CheckSkipped(
            f"{kind_name}: no parameter of yours matches reference {missing[0]!r} "
            f"(shape {reference[missing[0]]}), so the reference weights cannot all be copied in"
            + ("; if one reference tensor is split across several of yours (separate Q, K, V), "
               "register a param_map function (below)" if len(theirs) > len(reference) else
               "; the reference has it (CONTRACT §3): does your module leave it out?")
            + "\n" + _template(kind_name, theirs, reference, mapping))
    return mapping


def _unique_shape_match(left, left_ref):
    """{their: ref} when every shape on both sides is unique and they pair up (leading axes of length 1
    aside: a (1, n) bias is the reference's (n,), kinds.same_layout)."""
    left = {n: core_shape(s) for n, s in left.items()}
    left_ref = {n: core_shape(s) for n, s in left_ref.items()}
    shapes, ref_shapes = list(left.values()), list(left_ref.values())
    if len(set(shapes)) != len(shapes) or len(set(ref_shapes)) != len(ref_shapes):
        return None
    by_shape = {s: n for n, s in left_ref.items()}
    if set(shapes) - set(by_shape):
        return None
    return {n: by_shape[s] for n, s in left.items()}


def _names(shapes):
    return ", ".join(f"{n} {s}" for n, s in shapes.items()) or "none"


# Only to pre-fill the suggested param_map (never to match silently).
_SYNONYMS = {"gamma": ("weight", "scale", "gain", "g", "w", "alpha"), "beta": ("bias", "shift", "b")}


def _template(kind_name, theirs, reference, mapping=None):
    """How to write the param_map, for this student's actual names."""
    mapping = dict(mapping or {})
    guesses = {}
    for name, shape in theirs.items():
        if mapping.get(name) in reference:
            guesses[name] = mapping[name]
            continue
        same = [r for r, s in reference.items() if s == shape]
        leaf = name.rsplit(".", 1)[-1].lower()
        named = [r for r in same if leaf in _SYNONYMS.get(r.rsplit(".", 1)[-1], ())]
        guesses[name] = same[0] if len(same) == 1 else named[0] if len(named) == 1 else "?"
    taken = [r for r in guesses.values() if r != "?"]
    guesses = {n: r if taken.count(r) == 1 or mapping.get(n) == r else "?" for n, r in guesses.items()}
    entries = ", ".join(f'"{n}": "{r}"' for n, r in guesses.items())
    lines = [f'  write: @gradlab.register("{kind_name}", param_map={{{entries}}})',
             "  (keys: your parameter names as gradlab finds them; values: reference names; "
             f"reference parameters: {_names(reference)})"]
    if "?" in guesses.values() or len(theirs) != len(reference):
        lines.append("  or, when one reference tensor is split across several of yours (separate Q, K, V) or "
                     "stored transposed, a function that copies in place:")
        lines.append("      def load(module, ref):   # ref: reference name -> array")
        if kind_name == "attention":
            lines.append("          D = ref[\"out_weight\"].shape[0]")
            lines.append("          module.W_q[...] = ref[\"qkv_weight\"][:, :D]; "
                         "module.W_k[...] = ref[\"qkv_weight\"][:, D:2*D]  # ...")
        else:
            first = next(iter(reference), "weight")
            lines.append(f"          module.my_weight[...] = ref[\"{first}\"]  # ...")
        lines.append(f'      @gradlab.register("{kind_name}", param_map=load)')
    return "\n".join(lines)


def load_reference(subject, module, slots, ref_params):
    """Copy `ref_params` ({reference name: array}) into the student's `module`
    in place, through the registration's param_map. `slots` are the student's
    parameter slots (Subject.slots). Returns a short description of how the
    names were matched. Raises CheckSkipped (names cannot be matched) or
    CheckFailure (a matched parameter has the wrong shape)."""
    kind, cfg = subject.kind, subject.cfg
    param_map = subject.registration.param_map
    dtype = cfg.np_dtype
    if callable(param_map) and not isinstance(param_map, dict):
        copies = {name: np.array(value, dtype=dtype) for name, value in ref_params.items()}
        subject.load_params(module, copies)
        return "through the param_map function"
    theirs = {slot.name: slot.value.shape for slot in slots}
    reference = {name: value.shape for name, value in ref_params.items()}
    guessed = []
    mapping = resolve_names(kind.name, theirs, reference, param_map, guessed)
    by_name = {slot.name: slot for slot in slots}
    for their, ref in mapping.items():
        mine, want = tuple(theirs[their]), tuple(reference[ref])
        if not same_layout(mine, want):
            hint = ""
            if len(want) == 2 and mine == want[::-1]:
                hint = (f"; it looks transposed: you store it as (d_out, d_in) = {mine} and compute x @ W.T, "
                        f"the reference stores (d_in, d_out) = {want} and computes x @ W. Store it the "
                        "reference way, or register a param_map function that copies ref[...].T in place")
            raise CheckFailure(f"{kind.name}: parameter {their!r} has shape {mine}, but the reference parameter "
                               f"{ref!r} it corresponds to has shape {want}{hint}",
                               {"parameter": their, "shape": list(mine), "expected": list(want)})
    for their, ref in mapping.items():
        by_name[their].value[...] = ref_params[ref]
    if all(t == r for t, r in mapping.items()):
        return "by name"
    pairs = ", ".join(f"{t} <- {r}" for t, r in mapping.items() if t != r)
    return f"{BY_SHAPE} ({pairs})" if guessed else "matched as " + pairs


# how load_reference describes weights some of which only their shapes matched (no name said which is which)
BY_SHAPE = "matched by their shapes alone"
