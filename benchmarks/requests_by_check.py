"""Where `gradlab check all` through a worker spends its requests (round trips).

    OPENBLAS_NUM_THREADS=1 python benchmarks/requests_by_check.py          # the table
    python benchmarks/requests_by_check.py --ops                          # and by request op

Wraps remote.Session.request and plan.run_one to count, per (kind, check), the
requests sent to the worker and the check's wall time, and prints them with the
time per request: a check whose requests cost much more than the rest is doing
something else per request (large arrays, many shared arrays, discovery).
Also the same run in-process, so the worker's share of each check is visible.
"""
import argparse
import collections
import os
import time

import gradlab
from gradlab.execution import plan, remote


def measure(isolate):
    rows = collections.defaultdict(lambda: [0, 0.0])       # (kind, check) -> [requests, seconds]
    ops = collections.Counter()
    current = [None]
    request, run_one = remote.Session.request, plan.run_one

    def counted_request(self, header, *args, **kwargs):
        rows[current[0]][0] += 1
        ops[header.get("op")] += 1
        return request(self, header, *args, **kwargs)

    def timed_run_one(check_spec, subject, seed):
        current[0] = (subject.kind.name, check_spec.name)
        start = time.perf_counter()
        try:
            return run_one(check_spec, subject, seed)
        finally:
            rows[current[0]][1] += time.perf_counter() - start
            current[0] = None

    remote.Session.request, plan.run_one = counted_request, timed_run_one
    start = time.perf_counter()
    try:
        gradlab.check("all", seed=0, isolate=isolate)
    finally:
        remote.Session.request, plan.run_one = request, run_one
    return dict(rows), ops, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", action="store_true", help="also count requests by op")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    here, _, total_here = measure(False)
    there, ops, total_there = measure(True)
    print(f"check all: {total_here:.2f} s in-process, {total_there:.2f} s through a worker, "
          f"{sum(r[0] for r in there.values()):,} requests; load {os.getloadavg()[0]:.1f}")
    print(f"{'kind':<16}{'check':<22}{'requests':>9}{'in-proc ms':>11}{'worker ms':>10}{'extra us/req':>13}")
    keys = sorted(there, key=lambda k: there[k][1] - here.get(k, [0, 0.0])[1], reverse=True)
    for key in keys[:args.top]:
        n, t = there[key]
        t0 = here.get(key, [0, 0.0])[1]
        kind, check = key if key is not None else ("-", "(outside checks)")
        per = (t - t0) / n * 1e6 if n else 0.0
        print(f"{kind:<16}{check:<22}{n:>9}{t0 * 1e3:>11.1f}{t * 1e3:>10.1f}{per:>13.0f}")
    if args.ops:
        print("requests by op:", dict(ops.most_common()))


if __name__ == "__main__":
    main()
