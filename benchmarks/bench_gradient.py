"""Benchmark of the `gradient` check (issue 3): what it costs and what it catches.

    python benchmarks/bench_gradient.py            # prints the tables, writes benchmarks/RESULTS.md
    python benchmarks/bench_gradient.py --quick    # fewer repeats, no detection rows for lm/block

Costs are in multiples of one forward+backward pass of the same module at the
same size (timed), next to the module calls counted. Sizes: every kind at
gradlab's default cfg, and the issue's attention (B=2, T=16, D=64, H=4).

- default check: `gradient` on the correct reference module, everything it does
  included (building, the analytical pass, the numerical passes);
- localisation: the same check on a module whose gradient is wrong in one
  element of its largest tensor (what a failing run costs: per-tensor
  directions, then bisection or the per-element map);
- naive loop: per-element central differences over the input and every
  parameter (2 forwards per element), timed (estimated from the element count
  when it would take more than a minute).

Detection: one element of one tensor multiplied by (1 + r). The element is a
typical one: the median magnitude among the tensor's nonzero gradient entries
(an entry whose true gradient is 0 cannot show any relative error). "caught":
the check fails naming that tensor; "named": its message names that element.

torch.autograd.gradcheck (fast and slow) is run on the attention only when
torch is installed (it is an optional extra, never required).
"""
import argparse
import functools
import os
import statistics
import sys
import time

import numpy as np

import gradlab
from gradlab.checks import gradient as gradient_check
from gradlab.execution.discovery import find_slots
from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import INPUT_GRAD, LOSS, get_kind
from gradlab.execution.loader import Implementation, reference
from gradlab.numerics.engine import elementwise_gradient
from gradlab.contract.registry import Registration
from gradlab.execution.runner import config_for, rng_for
from gradlab.execution.subject import Subject

KINDS = ["linear", "layernorm", "ffn", "attention", "embedding", "positional", "block", "lm", "cross_entropy"]
BIG = ("attention (B=2, T=16, D=64, H=4)", "attention",
       dict(batch_size=2, seq_len=16, d_model=64, num_heads=4, max_len=16))
RATES = [1e-2, 1e-3, 1e-4, 1e-5]
NAIVE_LIMIT_S = 60.0
HERE = os.path.dirname(os.path.abspath(__file__))


class Counter:
    forwards = 0
    backwards = 0

    @classmethod
    def reset(cls):
        cls.forwards = cls.backwards = 0


def typical_index(a):
    """The index of the median-magnitude entry among the nonzero ones."""
    mag = np.abs(a).reshape(-1)
    nonzero = np.flatnonzero(mag > 1e-8 * max(float(mag.max(initial=0.0)), 1e-300))
    if nonzero.size == 0:
        return None
    k = nonzero[np.argsort(mag[nonzero])[nonzero.size // 2]]
    return tuple(int(i) for i in np.unravel_index(k, a.shape))


def planted_at(record, a):
    """The element the planted bug scales: chosen once, from the first gradient seen (later calls
    reuse it without sorting their gradient again)."""
    if "index" not in record:
        record["index"] = typical_index(a)
    return record["index"]


def instrumented(kind, tensor=None, r=0.0, record=None):
    """A build(cfg) (or function) around gradlab's reference that counts calls and,
    if `tensor` is given, multiplies one typical element of its gradient by (1 + r)."""
    spec = get_kind(kind)
    target = reference().get(kind).target
    record = record if record is not None else {}

    # functools.wraps: the wrapper is gradlab's reference, counted (a submission that returned the reference's
    # module from a factory of its own would be refused: Subject._refuse_reference)
    if spec.has(LOSS):
        @functools.wraps(target)
        def loss_fn(logits, targets, ignore_index=None):
            Counter.forwards += 1
            loss, grad = target(logits, targets, ignore_index=ignore_index)
            if tensor is not None:
                index = planted_at(record, grad)        # the same element in every call
                if index is not None:
                    grad[index] *= 1 + r
            return loss, grad
        return loss_fn

    @functools.wraps(target)
    def build(cfg):
        module = target(cfg)
        forward, backward = module.forward, module.backward

        def counted_forward(x):
            Counter.forwards += 1
            return forward(x)

        def counted_backward(g):
            Counter.backwards += 1
            dx = backward(g)
            # the element is chosen once, at the first backward of the check: the planted bug is in the code,
            # so every instance (a float32 module's float64 copy too) has it at the same element
            if tensor == "x":
                dx[planted_at(record, dx)] *= 1 + r
            elif tensor is not None:
                slot = next(s for s in find_slots(module) if s.name == tensor)
                grad = slot.grad()
                index = planted_at(record, grad)
                if index is not None:
                    grad[index] *= 1 + r
            return dx
        module.forward, module.backward = counted_forward, counted_backward
        return module
    return build


def subject_for(kind, target, **overrides):
    cfg = config_for(kind, 0, **overrides)
    impl = Implementation("bench", {kind: Registration(kind, target)})
    return Subject(get_kind(kind), impl.get(kind), cfg, impl.name)


def run_check(kind, target, seed, **overrides):
    """(outcome-or-failure, seconds, forwards, backwards)."""
    subject = subject_for(kind, target, **overrides)
    Counter.reset()
    start = time.perf_counter()
    try:
        result = gradient_check.gradient(subject, rng_for(seed, "gradient"))
    except CheckFailure as failure:
        result = failure
    return result, time.perf_counter() - start, Counter.forwards, Counter.backwards


def part_seconds(kind, repeats, **overrides):
    """Median times of (build, forward, backward) of the reference module (build, call, 0 for a function)."""
    subject = subject_for(kind, reference().get(kind).target, **overrides)
    rng = np.random.default_rng(0)
    if subject.kind.has(LOSS):
        return 0.0, fb_seconds(kind, repeats, **overrides), 0.0
    target = reference().get(kind).target
    module, _ = subject.fresh(rng)
    x = subject.make_input(rng)
    g = rng.standard_normal(subject.kind.output_shape(subject.cfg))
    times = {"build": [], "forward": [], "backward": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        target(subject.cfg)
        t1 = time.perf_counter()
        module.forward(x)
        t2 = time.perf_counter()
        module.backward(g)
        t3 = time.perf_counter()
        times["build"].append(t1 - t0)
        times["forward"].append(t2 - t1)
        times["backward"].append(t3 - t2)
    return tuple(statistics.median(times[k]) for k in ("build", "forward", "backward"))


def fb_seconds(kind, repeats, **overrides):
    """Median time of one forward + backward (one loss call for a loss function)."""
    subject = subject_for(kind, reference().get(kind).target, **overrides)
    rng = np.random.default_rng(0)
    times = []
    if subject.kind.has(LOSS):
        logits = rng.standard_normal(subject.kind.input_shape(subject.cfg))
        targets = rng.integers(0, subject.cfg.vocab_size, size=logits.shape[:-1])
        for _ in range(repeats):
            t = time.perf_counter()
            subject.call(logits, targets)
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    module, _ = subject.fresh(rng)
    x = subject.make_input(rng)
    g = rng.standard_normal(subject.kind.output_shape(subject.cfg))
    for _ in range(repeats):
        t = time.perf_counter()
        module.forward(x)
        module.backward(g)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def tensors_of(kind, **overrides):
    """[(name, size)] the check differentiates, in its order."""
    subject = subject_for(kind, reference().get(kind).target, **overrides)
    spec, cfg = subject.kind, subject.cfg
    if spec.has(LOSS):
        return [("logits", int(np.prod(spec.input_shape(cfg))))]
    module, slots = subject.fresh(np.random.default_rng(0))
    out = [("x", int(np.prod(spec.input_shape(cfg))))] if spec.has(INPUT_GRAD) else []
    return out + [(s.name, s.value.size) for s in slots]


def naive_seconds(kind, fb, **overrides):
    """(seconds, measured?) of the per-element loop over every tensor."""
    subject = subject_for(kind, reference().get(kind).target, **overrides)
    spec = subject.kind
    rng = np.random.default_rng(0)
    n = sum(size for _, size in tensors_of(kind, **overrides))
    if spec.has(LOSS):
        logits = rng.standard_normal(spec.input_shape(subject.cfg))
        targets = rng.integers(0, subject.cfg.vocab_size, size=logits.shape[:-1])
        arrays, f = [logits], (lambda: subject.call(logits, targets)[0])
    else:
        module, slots = subject.fresh(rng)
        x = subject.make_input(rng)
        g = rng.standard_normal(spec.output_shape(subject.cfg))
        arrays = ([x] if spec.has(INPUT_GRAD) else []) + [s.value for s in slots]
        f = lambda: float(np.sum(module.forward(x) * g))   # noqa: E731
    t = time.perf_counter()
    f()
    one = time.perf_counter() - t
    if 2 * n * one > NAIVE_LIMIT_S:
        return 2 * n * one + fb, False
    start = time.perf_counter()
    for a in arrays:
        elementwise_gradient(f, a)
    return time.perf_counter() - start + fb, True


def cost_rows(cases, repeats):
    rows = []
    for label, kind, overrides in cases:
        fb = fb_seconds(kind, 21 if repeats > 1 else 5, **overrides)
        tensors = tensors_of(kind, **overrides)
        n = sum(size for _, size in tensors)
        largest = max(tensors, key=lambda t: t[1])[0]
        good = [run_check(kind, instrumented(kind), seed, **overrides) for seed in range(repeats)]
        bad, named = [], 0
        for seed in range(repeats):
            record = {}
            bad.append(run_check(kind, instrumented(kind, largest, 1e-4, record), seed, **overrides))
            failure = bad[-1][0]
            named += isinstance(failure, CheckFailure) and failure.metrics.get("worst_tensor") == largest and \
                failure.metrics.get("worst_index") == str(record.get("index"))
        named = named == repeats
        build, fwd, bwd = part_seconds(kind, 21 if repeats > 1 else 5, **overrides)
        module_only = build + good[0][2] * fwd + good[0][3] * bwd
        t_good = statistics.median(g[1] for g in good)
        t_bad = statistics.median(b[1] for b in bad)
        naive, measured = naive_seconds(kind, fb, **overrides)
        rows.append({
            "module": label, "elements": n, "fb_ms": fb * 1e3,
            "check_calls": f"{good[0][2]} fwd + {good[0][3]} bwd", "check_x": t_good / fb,
            "module_x": module_only / fb,
            "largest": largest, "loc_calls": f"{bad[0][2]} fwd + {bad[0][3]} bwd", "loc_x": t_bad / fb,
            "loc_named": named, "naive_calls": f"{2 * n} fwd", "naive_x": naive / fb,
            "naive_measured": measured, "loc_pct": 100 * t_bad / naive,
        })
        print(f"  {label}: check {t_good / fb:.1f}x, localisation {t_bad / fb:.1f}x "
              f"({'named' if named else 'NOT named'}), naive {naive / fb:.0f}x", flush=True)
    return rows


def detection_rows(cases, seeds=1):
    rows = []
    for label, kind, overrides in cases:
        for name, size in tensors_of(kind, **overrides):
            row = {"module": label, "tensor": name, "size": size}
            for r in RATES:
                caught = named = 0
                for seed in range(seeds):
                    record = {}
                    result, *_ = run_check(kind, instrumented(kind, name, r, record), seed + 1, **overrides)
                    if isinstance(result, CheckFailure):
                        wrong = result.metrics.get("wrong_tensors", "").split(",")
                        caught += name in wrong
                        named += (result.metrics.get("worst_tensor") == name and
                                  result.metrics.get("worst_index") == str(record.get("index")))
                row[r] = (caught, named, seeds)
            rows.append(row)
            print(f"  {label} {name}: " + " ".join(f"{r:.0e}:{row[r][0]}/{row[r][1]}" for r in RATES), flush=True)
    return rows


def false_alarm_rows(seeds):
    rows = []
    for dtype in ("float64", "float32"):
        for kind in KINDS:
            fails = sum(gradlab.check(kind, None, ["gradient"], seed=s, dtype=dtype)["gradient"].status != "pass"
                        for s in range(seeds))
            rows.append({"kind": kind, "dtype": dtype, "false_alarms": fails, "seeds": seeds})
    return rows


# ---- torch.autograd.gradcheck, when torch is installed ---------------------------

def torch_rows():
    try:
        import torch
    except ImportError:
        print("note: torch is not installed, so the torch.autograd.gradcheck columns are skipped "
              "(pip install torch to fill them in)")
        return None
    label, kind, overrides = BIG
    rows = []
    for fast in (True, False):
        for name_r in [(None, 0.0), ("qkv_weight", 1e-2), ("qkv_weight", 1e-4)]:
            subject = subject_for(kind, instrumented(kind, *name_r), **overrides)
            module, slots = subject.fresh(np.random.default_rng(0))
            x0 = subject.make_input(np.random.default_rng(1))

            class NumpyModule(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, *params):
                    for s, p in zip(slots, params):
                        s.value[...] = p.detach().numpy()
                    return torch.from_numpy(module.forward(x.detach().numpy()).copy())

                @staticmethod
                def backward(ctx, g):
                    dx = module.backward(g.numpy())
                    return (torch.from_numpy(dx.copy()),
                            *[torch.from_numpy(np.asarray(s.grad()).copy()) for s in slots])

            inputs = [torch.tensor(x0, requires_grad=True)] + [torch.tensor(s.value.copy(), requires_grad=True)
                                                              for s in slots]
            Counter.reset()
            start = time.perf_counter()
            try:
                ok = torch.autograd.gradcheck(NumpyModule.apply, inputs, fast_mode=fast, raise_exception=False)
            except Exception:   # noqa: BLE001 - gradcheck's own failures
                ok = False
            rows.append({"mode": "fast" if fast else "slow", "bug": f"{name_r[0]} x (1 + {name_r[1]:g})"
                         if name_r[0] else "none", "passed": ok, "seconds": time.perf_counter() - start,
                         "forwards": Counter.forwards})
    return rows


# ---- output ---------------------------------------------------------------------------

def markdown(cost, detection, alarms, torch_result, note):
    out = ["# Benchmarks of the `gradient` check", "",
           f"Written by `python benchmarks/bench_gradient.py` ({note}). Costs are multiples of one "
           "forward+backward pass of the same module at the same size (timed: medians; module calls "
           "counted alongside). numpy " + np.__version__ + ", Python " + sys.version.split()[0] + ".", "",
           "## Cost", "",
           "| module | elements | 1 fwd+bwd | default check | of which build + module calls "
           "| localisation (1 bad element in the largest tensor) | naive per-element loop | localisation / naive |",
           "|---|---:|---:|---|---:|---|---|---:|"]
    for r in cost:
        out.append(f"| {r['module']} | {r['elements']} | {r['fb_ms']:.3f} ms | **{r['check_x']:.1f}x** "
                   f"({r['check_calls']}) | {r['module_x']:.1f}x | {r['loc_x']:.1f}x ({r['loc_calls']}; `{r['largest']}`, "
                   f"{'element named' if r['loc_named'] else 'element NOT named'}) | {r['naive_x']:.0f}x "
                   f"({r['naive_calls']}{'' if r['naive_measured'] else ', estimated'}) | {r['loc_pct']:.2f}% |")
    big = cost[-1]
    out += ["", "Reading the cost table:", "",
            f"- The default check spends {cost[0]['check_calls'].split(' + ')[0]} and 1 backward of the module "
            "(the analytical pass, the centre value reused from it, then the central difference at step h along "
            "one random direction over all tensors, judged against the tolerance's floor; the two points at h/2, "
            "which measure the truncation and the noise, and forward's repeatability are only taken when the "
            "verdict is not a clean pass): the 'build + module calls' column. The rest "
            "is fixed Python work per check (building the direction, writing and restoring the perturbed "
            "arrays, gradlab's guard around every call into student code with its timeout timer, validating "
            "every returned array) -- about 1 ms, which dominates for modules whose forward+backward takes "
            "microseconds (linear, embedding, positional), and is a few multiples for the "
            f"larger attention ({big['check_x']:.1f}x in all, {big['module_x']:.1f}x of it build and module calls).",
            "- Localisation is what a failing run costs in all: one direction per tensor to name the wrong ones, "
            "then the full per-element map for tensors of at most "
            f"{gradient_check.FULL_MAP_MAX_ELEMENTS} elements (2 forwards per element, what the diagnosis needs) "
            "and bisection (group testing on halves, about 8 forwards per halving) above that. For small modules "
            "the per-element map makes it comparable to the naive loop; for the large attention the bad element "
            f"in `{big['largest']}` is found by bisection at {big['loc_pct']:.2f}% of the naive loop's time."]
    out += ["", "## Detection: one element multiplied by (1 + r)", "",
            "Each cell: caught (the check fails naming the tensor) / named (the message names the element), "
            "out of the seeds run. The element is the median-magnitude nonzero entry of the tensor's gradient.",
            "", "| module | tensor | size | " + " | ".join(f"r = {r:.0e}" for r in RATES) + " |",
            "|---|---|---:|" + "---|" * len(RATES)]
    for r in detection:
        cells = []
        for rate in RATES:
            c, n, s = r[rate]
            cells.append(f"{'caught' if c == s else f'caught {c}/{s}'}, {'named' if n == s else f'named {n}/{s}'}"
                         if c else ("missed" if s == 1 else f"missed {s}/{s}"))
        out.append(f"| {r['module']} | `{r['tensor']}` | {r['size']} | " + " | ".join(cells) + " |")
    out += ["", "float32 modules are checked against float64 numerics of a float64 copy of the module, and their "
            "analytical rounding is measured against that copy's gradients; measured with the detection rows run "
            "with dtype=float32 (one seed), 1e-3 is caught in 60 of 61 tensors and 1e-4 in 57 of 61 (the check's "
            "message states its resolution on every run)."]
    out += ["", "## False alarms on the reference modules", "",
            "| kind | float64 | float32 |", "|---|---|---|"]
    by = {(a["kind"], a["dtype"]): a for a in alarms}
    for kind in KINDS:
        a64, a32 = by[(kind, "float64")], by[(kind, "float32")]
        out.append(f"| {kind} | {a64['false_alarms']} of {a64['seeds']} seeds | {a32['false_alarms']} of "
                   f"{a32['seeds']} seeds |")
    if torch_result is not None:      # (else the table last measured stays: see kept_tail)
        out += ["", TORCH, "", "| mode | planted bug | gradcheck passed | seconds | module forwards |",
                "|---|---|---|---:|---:|"]
        out += [f"| {r['mode']} | {r['bug']} | {r['passed']} | {r['seconds']:.2f} | {r['forwards']} |"
                for r in torch_result]
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats; detection on the small kinds only")
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else 5
    cases = [(k, k, {}) for k in KINDS] + [BIG]
    print("cost (multiples of one forward+backward):", flush=True)
    cost = cost_rows(cases, repeats)
    print("detection (caught/named):", flush=True)
    detection = detection_rows([c for c in cases if not args.quick or c[1] not in ("block", "lm")])
    print("false alarms:", flush=True)
    alarms = false_alarm_rows(5 if args.quick else 20)
    torch_result = torch_rows()
    note = "quick run" if args.quick else f"{repeats} timed repeats per cost cell, 1 seed per detection cell"
    text = markdown(cost, detection, alarms, torch_result, note)
    print(text)
    with open(args.out, "w" if not os.path.exists(args.out) else "r+") as fh:
        kept = kept_tail(fh.read() if fh.mode == "r+" else "", torch_result is not None)
        fh.seek(0)
        fh.write(text + kept)
        fh.truncate()


TORCH = "## torch.autograd.gradcheck"


def kept_tail(previous, torch_measured):
    """What of the results file this run does not write: the sections from the torch table on (after it,
    the grading history, kept by hand), but not a torch table this run measures anew, nor one that says it
    was not run."""
    if TORCH not in previous:
        return ""
    sections = previous[previous.index(TORCH):].split("\n## ")
    sections = [sections[0]] + ["## " + x for x in sections[1:]]
    kept = [x for x in sections if not x.startswith(TORCH) or not (torch_measured or "Not run:" in x)]
    return "".join("\n" + x.rstrip("\n") + "\n" for x in kept)

if __name__ == "__main__":
    main()
