"""Benchmark of the whole check suite (issue 4): what `gradlab check all` costs
on the reference modules, per check, as multiples of one forward+backward.

    python benchmarks/bench_suite.py          # prints the tables, writes benchmarks/SUITE.md

The command's wall time is measured as a user sees it (a fresh process,
imports included); the per-check times in-process, median of several runs.
Ratios are to one forward+backward of the same reference module at the same
(default) size; function kinds and optimizers have no such pass, so their
rows give milliseconds only.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import gradlab
from gradlab.contract.kinds import KINDS
from gradlab.execution.loader import reference
from gradlab.execution.runner import config_for

HERE = os.path.dirname(os.path.abspath(__file__))


def forward_backward_seconds(kind, repeats=200):
    spec = KINDS[kind]
    if spec.form != "module":
        return None
    cfg = config_for(kind, 0)
    module = reference().get(kind).target(cfg)
    inputs = spec.make_inputs(cfg, np.random.default_rng(0))     # every declared input (x, memory, ...)
    out = module.forward(*inputs)
    g = np.ones_like(out)
    start = time.perf_counter()
    for _ in range(repeats):
        module.forward(*inputs)
        module.backward(g)
    return (time.perf_counter() - start) / repeats


def per_check_seconds(kind, runs):
    """{check: median seconds} over `runs` runs with different seeds."""
    times = {}
    for seed in range(runs):
        result = gradlab.check(kind, seed=seed)
        assert result.passed, f"{kind} failed at seed {seed}: {[c.message for c in result.checks if not c.ok]}"
        for record in result.checks:
            times.setdefault(record.name, []).append(record.seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def command_seconds(runs):
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gradlab", "check", "all"], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls), min(walls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="seeds per kind (default 5)")
    parser.add_argument("--out", default=os.path.join(HERE, "SUITE.md"))
    args = parser.parse_args()

    median_wall, best_wall = command_seconds(args.runs)
    rows, checks = [], []
    for kind in KINDS:
        times = per_check_seconds(kind, args.runs)
        checks += [c for c in times if c not in checks]
        rows.append((kind, forward_backward_seconds(kind), times))

    def cell(seconds, fb):
        return f"{seconds * 1e3:.2f} ms" if fb is None else f"{seconds / fb:.0f}x"

    lines = ["# Benchmark of the check suite", "",
             f"Written by `python benchmarks/bench_suite.py` ({args.runs} seeds per kind; medians). "
             f"numpy {np.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} cores.", "",
             f"`gradlab check all` on the reference modules, as a user runs it (fresh process, imports "
             f"included): **{median_wall:.2f} s** (median of {args.runs}; best {best_wall:.2f} s).", "",
             "Per check: multiples of one forward+backward of the module (milliseconds for function kinds "
             "and optimizers, which have no such pass); '-' where the check does not apply.", "",
             "| kind | 1 fwd+bwd | all checks | " + " | ".join(checks) + " |",
             "|---|---:|---:|" + "---:|" * len(checks)]
    for kind, fb, times in rows:
        total = sum(times.values())
        lines.append(f"| {kind} | {'-' if fb is None else f'{fb * 1e3:.3f} ms'} | {cell(total, fb)} | "
                     + " | ".join(cell(times[c], fb) if c in times else "-" for c in checks) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
