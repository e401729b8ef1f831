"""`shapes`: a table of everything the user sees (input, output, every
parameter and its gradient, the input gradient, attn_weights), expected vs
actual. Unlike the other checks it calls the student's code raw (still through
harness.guarded), so a wrong output shape is one row of the table instead of
an error that hides every other row."""
import math

import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.execution.harness import describe
from gradlab.contract.kinds import (ANY_LENGTH, ATTN_WEIGHTS, CAUSAL, DIFFERENTIABLE, LOSS, PROBABILITIES, TIED_HEAD, TOKEN_IDS,
                                    core_shape, same_layout)
from gradlab.contract.records import table
from gradlab.contract.suite import Outcome, check
from gradlab.contract.numbers import counted
from gradlab.execution.weights import plural_match


def _shape(value):
    """The shape of a returned value, or a description when it is not an array."""
    if isinstance(value, np.ndarray):
        return tuple(value.shape)
    if np.isscalar(value) and not isinstance(value, (str, bytes)):
        return ()
    return describe(value)


class _Table:
    def __init__(self):
        self.rows = []

    def add(self, tensor, expected, actual, note=""):
        ok = isinstance(actual, tuple) and tuple(expected) == actual
        self.rows.append({"tensor": tensor, "expected": _text(expected), "actual": _text(actual),
                          "ok": ok, "note": note})
        return ok

    def info(self, tensor, actual, note, expected="-"):
        """A row that is shown but not judged (e.g. a parameter with no reference counterpart)."""
        self.rows.append({"tensor": tensor, "expected": _text(expected), "actual": _text(actual), "ok": True,
                          "note": note})

    def bad(self):
        return [r for r in self.rows if not r["ok"]]


def _text(shape):
    return str(tuple(shape)) if isinstance(shape, tuple) else str(shape)


@check("shapes", any_of={DIFFERENTIABLE, PROBABILITIES}, forms={"module", "function"}, order=5,
       summary="inputs, outputs, parameters, gradients (and attn_weights) have the expected shapes")
def shapes(subject, rng):
    kind = subject.kind
    rows = _Table()
    notes = []
    if kind.form == "function":
        _function_rows(subject, rng, rows)
    else:
        _module_rows(subject, rng, rows, notes)
    view = table(f"{kind.name}: shapes, expected vs actual", rows.rows)
    bad = rows.bad()
    metrics = {"rows": len(rows.rows), "mismatches": len(bad)}
    if bad:
        first = bad[0]
        others = [r["tensor"] for r in bad[1:]]
        more = (f"; also wrong: {', '.join(others[:3])}" + (f" and {len(others) - 3} more" if len(others) > 3 else "")
                if others else "")
        hint = f" ({first['note']})" if first["note"] else ""
        got = (f"has shape {first['actual']}" if first["actual"].startswith("(")
               else f"is {first['actual']}")
        raise CheckFailure(f"{kind.name}: {first['tensor']} {got}, expected {first['expected']}{hint}{more}",
                           metrics, {"views": [view]})
    tail = f"; {'; '.join(notes)}" if notes else ""
    return Outcome(f"{counted(len(rows.rows), 'shape')} as expected{tail}", metrics, {"views": [view]})


def _function_rows(subject, rng, rows):
    kind, cfg = subject.kind, subject.cfg
    x = rng.standard_normal(kind.input_shape(cfg)).astype(cfg.np_dtype)
    if kind.has(LOSS):
        targets = rng.integers(0, cfg.vocab_size, size=x.shape[:-1])
        rows.add("logits (input)", kind.input_shape(cfg), x.shape)
        rows.add("targets (input)", x.shape[:-1], targets.shape)
        got = subject.call(x, targets, what="cross_entropy(logits, targets)")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            rows.add("return value", "(loss, grad_logits)", describe(got),
                     "cross_entropy must return a pair (loss, grad_logits)")
            return
        loss, grad = got
        rows.add("loss", (), _shape(loss), "the mean loss is one number")
        rows.add("grad_logits", x.shape, _shape(grad), "one gradient entry per logit")
    else:
        rows.add("x (input)", kind.input_shape(cfg), x.shape)
        out = subject.call(x, what="softmax(x)")
        rows.add("softmax(x)", kind.output_shape(cfg), _shape(out), "same shape as its input")


def _module_rows(subject, rng, rows, notes):
    kind, cfg = subject.kind, subject.cfg
    module = subject.build()
    # token ids below the vocabulary's last: a table gradient sized by the ids it saw (np.bincount(ids) without
    # minlength, np.zeros((ids.max() + 1, D))) comes out short here, whatever the batch would have drawn
    inputs = tuple(rng.integers(0, cfg.vocab_size - 1, size=value.shape) if spec.role == "ids" and cfg.vocab_size > 1
                   else value for spec, value in zip(kind.input_specs(), subject.make_inputs(rng)))
    for spec, value in zip(kind.input_specs(), inputs):
        if spec.role != "flag":
            rows.add(f"{spec.name} (input)", spec.shape(cfg), value.shape)
    out = subject.run("forward", module.forward, *inputs)
    out_ok = rows.add("forward output", kind.output_shape(cfg), _shape(out), f"expected{subject.shape_hint()}")
    if kind.has(ATTN_WEIGHTS):
        B, T, H = cfg.batch_size, cfg.seq_len, cfg.num_heads
        weights = subject.attribute(module, "attn_weights")
        rows.add("attn_weights", (B, H, T, T), _shape(weights) if weights is not None else "missing",
                 "keep the softmax output as self.attn_weights, (B, H, T, T)")
    g_shape = tuple(out.shape) if isinstance(out, np.ndarray) else kind.output_shape(cfg)
    g = np.ones(g_shape, dtype=cfg.np_dtype)
    dx = None
    try:
        if not subject.no_backward:
            dx = subject.run("backward", module.backward, g)
            subject.history.backward_worked = True
    except StudentError as e:
        if not subject.not_implemented(e):
            if out_ok:
                raise
            # the output was already the wrong shape: backward was bound to fail; show the table
            rows.add("backward", "runs", f"raised: {e}", "fix the forward output first")
            return
    slots = subject.slots(module)
    if subject.no_backward:
        rows.info("backward", "not run", subject.no_backward)
        notes.append(f"{subject.no_backward}: no gradient shapes to compare")
        _param_rows(subject, module, slots, rows, notes)
        return
    wanted = kind.grad_inputs()
    if len(wanted) == 1:
        rows.add("backward output (dL/dx)", kind.input_shape(cfg), _shape(dx), "same shape as forward's input x")
    elif wanted:
        got = tuple(dx) if isinstance(dx, (tuple, list)) and len(dx) == len(wanted) else [None] * len(wanted)
        names = ", ".join(f"d{spec.name}" for spec in wanted)
        for spec, d in zip(wanted, got):
            rows.add(f"backward output d{spec.name}", spec.shape(cfg), _shape(d) if d is not None else describe(dx),
                     f"backward returns ({names}); d{spec.name} has the shape of forward's {spec.name}")
    _param_rows(subject, module, slots, rows, notes)
    _shorter_rows(subject, module, rng, rows)


def _shorter_rows(subject, module, rng, rows):
    """A causal module built for cfg.seq_len takes any length up to cfg.max_len (an LM generating, the last batch
    of an epoch, the longest sequence its positions allow), and so does a positional table (x + weight[:T]):
    forward at T - 1 and at T = max_len returns that many positions. A causal mask, buffer or table slice sized
    by cfg.seq_len and not by the input's T breaks there. (Kinds of several inputs too: a decoder layer's mask.)"""
    kind, cfg = subject.kind, subject.cfg
    if not (kind.has(CAUSAL) or kind.has(ANY_LENGTH)):
        return
    # (max_len for causal kinds: a positional table's own T = max_len failing is an offset, weight[1:T+1], which the
    # reference check names)
    longest = [cfg.max_len] if cfg.max_len > cfg.seq_len and kind.has(CAUSAL) else []
    lengths = ([cfg.seq_len - 1] if cfg.seq_len >= 2 else []) + longest
    hint = (f"a module built for seq_len = {cfg.seq_len} must take every length up to max_len = {cfg.max_len}: a "
            "causal mask or buffer sized by cfg.seq_len? build it for cfg.max_len and slice it to the input's T "
            "(mask[:T, :T])" if kind.has(CAUSAL) else
            f"a module built for seq_len = {cfg.seq_len} must take shorter inputs too: slice the table to the "
            "input's own T (weight[:x.shape[1]]), not to cfg.seq_len")
    for T in lengths:
        other = cfg.replace(seq_len=T)
        what = f"forward output at T = {T}"
        try:
            out = subject.run("forward", module.forward, *kind.make_inputs(other, rng))
        except StudentError as e:
            rows.add(what, kind.output_shape(other), f"raised: {e}", hint)
            return
        rows.add(what, kind.output_shape(other), _shape(out), hint)


def _param_rows(subject, module, slots, rows, notes):
    kind, cfg = subject.kind, subject.cfg
    expected = kind.param_shapes(cfg)
    param_map = subject.registration.param_map
    mapping = param_map if isinstance(param_map, dict) else {}
    named = {s.name for s in slots} | set(mapping.values())
    # nnfs-style plurals (weights, biases): matched as the reference check matches them
    mapping = {**plural_match({s.name: s.value.shape for s in slots if s.name not in expected and s.name not in mapping},
                              {n: e for n, e in expected.items() if n not in named}), **mapping}
    matched = set()
    unmatched = []
    for slot in slots:
        ref = slot.name if slot.name in expected else mapping.get(slot.name)
        shape = tuple(slot.value.shape)
        if ref in expected:
            matched.add(ref)
            label = f"parameter {slot.name!r}" + (f" (reference {ref!r})" if ref != slot.name else "")
            if shape != tuple(expected[ref]) and same_layout(shape, expected[ref]):
                rows.info(label, shape, "the same numbers, with leading axes of length 1: accepted", expected[ref])
            elif shape != tuple(expected[ref]) and callable(param_map) and \
                    sorted(shape) == sorted(tuple(expected[ref])) and len(shape) > 1:
                # PyTorch's (d_out, d_in) for x @ W.T: a layout of its own, which the param_map function declares
                rows.info(label, shape, "the reference's numbers in a layout of your own (transposed), loaded by "
                          "your param_map function: accepted", expected[ref])
            elif shape != tuple(expected[ref]) and callable(param_map) and \
                    math.prod(shape) > math.prod(tuple(expected[ref])):
                # a layout of its own that holds more (the bias trick: [W; b] as one (d_in + 1, d_out) "weight"):
                # the param_map function loads it; the count row below sees that nothing goes missing
                rows.info(label, shape, "a layout of your own holding more than the reference's numbers (the bias "
                          "folded in?), loaded by your param_map function: accepted", expected[ref])
            else:
                rows.add(label, expected[ref], shape, _in_words(kind, ref))
        elif kind.has(TIED_HEAD) and _untied_head(slot, cfg, expected, slots, mapping):
            unmatched.append(slot)
            rows.add(f"parameter {slot.name!r}", "none: the head is the token embedding", shape,
                     f"an output head of its own: CONTRACT §3's {kind.name} ties it to the token embedding (logits = "
                     "h @ W_emb.T, one array whose gradient sums the lookup's and the head's): use the embedding "
                     "itself, not a copy")
        else:
            unmatched.append(slot)
            rows.info(f"parameter {slot.name!r}", shape, "no reference parameter of this name")
        if subject.no_backward:
            continue
        grad = subject.read_grad(slot)
        got = _shape(grad) if grad is not None else "missing"
        if isinstance(got, tuple) and got != shape and same_layout(shape, got):
            rows.info(f"gradient of {slot.name!r} ({slot.describe_grad()})", got, "the parameter's numbers without "
                      "its leading axes of length 1 (p -= lr * g broadcasts): accepted", shape)
            continue
        hint = f"a gradient has the shape of its parameter {slot.name!r} {shape}"
        leading = {cfg.batch_size: "the batch (axis 0)", cfg.seq_len: "time (axis 1)"}
        if isinstance(got, tuple) and len(got) == len(shape) + 1 and got[1:] == shape and got[0] in leading:
            # e.g. a bias gradient summed over time only: (B, D) instead of (D,)
            hint += f"; it has an extra leading axis of {got[0]}: sum over {leading[got[0]]} as well"
        elif isinstance(got, tuple) and core_shape(shape) and len(got) > len(core_shape(shape)) and \
                got[-len(core_shape(shape)):] == core_shape(shape) and got != shape:
            # e.g. summed over axis 0 only with keepdims, (1, T, D), or not at all, (B, T, D)
            hint += (f"; it keeps the leading axes {got[:-len(core_shape(shape))]}: sum over every axis but the "
                     f"parameter's (batch and time), e.g. g.reshape(-1, {shape[-1]}).sum(axis=0)")
        elif isinstance(got, tuple) and len(got) == len(shape) == 2 and got[1:] == shape[1:] and \
                got[0] < shape[0] == cfg.vocab_size and kind.has(TOKEN_IDS):
            # a table's gradient with a row per id seen: here the ids stop below the vocabulary's last
            hint += (f"; it has a row per id up to the largest in this batch ({got[0] - 1}), not one per id of "
                     f"the vocabulary ({shape[0]}): np.bincount(ids, minlength={shape[0]}), or np.add.at into "
                     "np.zeros_like(weight)")
        rows.add(f"gradient of {slot.name!r} ({slot.describe_grad()})", shape, got, hint)
    missing = [name for name in expected if name not in matched]
    if missing and (unmatched or callable(param_map)):
        _count_row(subject, slots, expected, rows)
    if callable(param_map) and missing:
        _load_rows(subject, {n: expected[n] for n in missing}, rows, notes)
        return
    if not missing:
        if unmatched:
            notes.append(f"extra parameters not in the reference: {', '.join(s.name for s in unmatched)}")
        return
    wanted = ", ".join(f"{n} {expected[n]}" for n in missing)
    if not unmatched:
        # every parameter of the student's module has a reference name, yet some reference ones are absent
        # why: an array shared under two names, or arrays whose gradient is under no name gradlab knows
        why = [part for part in subject.explain_slots(module).split("; ")
               if " is the same object as " in part or " have no gradient attribute " in part]
        for name in missing:
            rows.add(f"parameter {name!r}", expected[name], "not found",
                     f"CONTRACT §3 lists {name!r} for {kind.name}; gradlab found only "
                     f"{', '.join(s.name for s in slots) or 'no parameters'}" + "".join(f"; {w}" for w in why))
        return
    theirs = ", ".join(f"{s.name} {tuple(s.value.shape)}" for s in unmatched)
    notes.append(f"expected parameters not found by name: {wanted}; yours without a reference name: {theirs}; "
                 "register with param_map={'your_name': 'reference_name', ...} to compare their shapes")


def _untied_head(head, cfg, expected, slots, mapping):
    """A parameter of the head's shape, (d_model, V) or (V, d_model), beside a token embedding that has its
    reference name, and not a view of it: an output head of its own, where the kind ties it to the embedding."""
    names = {slot.name: slot.name if slot.name in expected else mapping.get(slot.name) for slot in slots}
    table = [n for n, s in expected.items() if tuple(s) == (cfg.vocab_size, cfg.d_model)]
    tables = [slot.value for slot in slots if names[slot.name] in table]
    return (tuple(head.value.shape) in ((cfg.d_model, cfg.vocab_size), (cfg.vocab_size, cfg.d_model))
            and bool(table) and all(n in names.values() for n in table)
            and not any(np.shares_memory(head.value, t) for t in tables))


def _count_row(subject, slots, expected, rows):
    """Reference parameters not matched by name (a param_map function, or names of the student's own): the
    parameters gradlab found must hold at least as many numbers as CONTRACT §3's. Fewer means some are
    where gradlab does not look, and their gradients would never be checked."""
    needed = sum(int(np.prod(shape)) for shape in expected.values())
    found = sum(slot.value.size for slot in slots)
    if found >= needed:
        return
    rows.add("the parameters found (all together)", f"{needed:,} numbers", f"{found:,} numbers",
             f"gradlab found {', '.join(s.name for s in slots) or 'none'}; CONTRACT §3's {subject.kind.name} holds "
             f"{needed:,} numbers, so some of yours are where gradlab does not look (CONTRACT §2) and their "
             "gradients would go unchecked")


def _in_words(kind, ref):
    """"(d_model, 3*d_model) from cfg": which cfg fields a reference shape comes from."""
    words = (kind.symbolic(type(kind).param_shapes) or {}).get(ref)
    if not words:
        return ""
    own = "; d_out is your module's own width, read from its forward output" if "d_out" in words else ""
    return f"{words} from cfg{own}"


def _load_rows(subject, missing, rows, notes):
    """A callable param_map: hand it reference-shaped arrays and see that it takes them."""
    cfg = subject.cfg
    expected = subject.kind.param_shapes(cfg)
    rng = np.random.default_rng(0)
    reference = {n: rng.standard_normal(s).astype(cfg.np_dtype) for n, s in expected.items()}
    module = subject.build()
    try:
        subject.load_params(module, reference)
    except StudentError as e:
        rows.add("param_map(module, reference_params)", "accepts the reference shapes", f"raised: {e}",
                 "your param_map could not load arrays of the reference shapes")
        return
    for name, shape in missing.items():
        rows.info(f"reference {name!r}", shape, "loaded through your param_map")
    notes.append(f"{len(missing)} reference parameter{'s' if len(missing) != 1 else ''} with no parameter of yours "
                 f"of that name ({', '.join(missing)}) {'are' if len(missing) != 1 else 'is'} loaded through your "
                 "param_map, which took arrays of the reference shapes")
