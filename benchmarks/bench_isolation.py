"""What running the student's code in a worker process costs (issue 8).

    python benchmarks/bench_isolation.py            # prints the table, writes benchmarks/RESULTS_ISOLATION.md
    python benchmarks/bench_isolation.py --repeats 3

Rows:
- the `gradient` check on the causal attention B=2, T=16, D=64, H=4 (gradlab's
  reference), in gradlab's process and through a worker that is already running
  (a grader opens one worker per submission and runs every check through it);
  as multiples of one in-process forward+backward of that attention, with the
  number of requests one check makes into the worker;
- one forward call of the small default linear, in-process and through a worker
  (the fixed cost of a call: gradlab's code encoding, syncing and decoding on both
  sides, two messages through a pipe and two process wake-ups), and the CPU that
  call takes in gradlab's process and in the worker (which the load hardly moves);
- a bare round trip through a pipe between two processes: the floor under any call
  into a worker on this machine at this load;
- starting a worker (Python, NumPy, gradlab, importing the submission);
- `gradlab check all` on the references, end to end, in-process and with --isolate,
  and how many requests (round trips) the worker answers in it: kind after kind with
  one worker, and in one lane per core (gradlab/execution/lanes.py: a forked copy of
  gradlab's process per lane, each with a worker of its own, kinds handed out
  heaviest first); each as `gradlab.check` runs it (spawned workers) and as the
  command line runs it (forked workers where zygote.refusal finds nothing against
  it: one thread, one BLAS thread, which the command line sets for itself; otherwise
  spawned, and the row says so).

The worker rows run as `gradlab check` and `gradlab.check` (from the main thread) run
it: one worker at a time, so gradlab polls for a reply for up to 1 ms before it sleeps,
and the worker for gradlab's next request for up to 20 ms (Limits.spin; protocol.Channel,
IDLE_SPIN). Lanes poll only with two cores per lane to spare; grading and pytest -n run
several workers at once and do not poll.

Medians of --repeats runs (at least GRADIENT_ROUNDS rounds for the gradient check). BLAS
threads are whatever the environment says for the in-process side and 1 in the worker
(OPENBLAS_NUM_THREADS etc.); the load
average of the machine is printed with the numbers, since a busy machine makes
every context switch slow.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import gradlab
from gradlab.contract import suite
from gradlab.contract.kinds import get_kind
from gradlab.execution import loader
from gradlab.execution.limits import Limits
from gradlab.execution.runner import config_for, run_one
from gradlab.execution.subject import Subject

HERE = os.path.dirname(os.path.abspath(__file__))
BIG = dict(batch_size=2, seq_len=16, d_model=64, num_heads=4, max_len=16)
GRADIENT_ROUNDS = 501     # at least: one round takes ~10 ms; on an unsteady host 151 rounds gave ratios of
                          # 1.36-1.68 for the same code, 501 rounds 1.33-1.48 (21 moved it by 0.2 on a quiet one)


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gradient_seconds(impls, repeats):
    """Median seconds of the gradient check for each implementation, and the median of the
    per-round ratios (the runs alternate, so a change of load hits both sides alike)."""
    spec = get_kind("attention")
    cfg = config_for("attention", 0, **BIG)
    check = suite.resolve(["gradient"])[0]
    subjects = [Subject(spec, impl.get("attention"), cfg, impl.name, impl.files) for impl in impls]
    requests = None
    for impl, subject in zip(impls, subjects):
        record = run_one(check, subject, 0)
        assert record.status == "pass", record.message
        if hasattr(impl, "session"):     # how many requests one check makes into the worker
            before = impl.session.requests
            run_one(check, subject, 0)
            requests = impl.session.requests - before
    times = [[] for _ in subjects]
    for _ in range(repeats):
        for subject, out in zip(subjects, times):
            start = time.perf_counter()
            run_one(check, subject, 0)
            out.append(time.perf_counter() - start)
    ratios = [b / a for a, b in zip(*times)] if len(times) == 2 else []
    return [statistics.median(t) for t in times], (statistics.median(ratios) if ratios else None), requests


def fwd_bwd_seconds(repeats):
    cfg = config_for("attention", 0, **BIG)
    module = loader.reference().get("attention").target(cfg)
    x = np.random.default_rng(0).standard_normal((2, 16, 64))
    out = module.forward(x)
    g = np.ones_like(out)

    def once():
        for _ in range(20):
            module.forward(x)
            module.backward(g)
    return median_time(once, repeats) / 20


def call_seconds(impl, repeats):
    cfg = config_for("linear", 0)
    module = impl.get("linear").target(cfg)
    x = np.random.default_rng(0).standard_normal((2, 5, 12))
    module.forward(x)

    def once():
        for _ in range(50):
            module.forward(x)
    return median_time(once, repeats) / 50


def call_cpu_seconds(impl, calls=5000):
    """CPU per forward call of the small linear through a worker: (gradlab's process, the worker),
    the worker's read from /proc (Linux; None elsewhere). Unlike the wall time of a call it hardly
    moves with the machine's load: it is gradlab's own code on each side of a call."""
    cfg = config_for("linear", 0)
    module = impl.get("linear").target(cfg)
    x = np.random.default_rng(0).standard_normal((2, 5, 12))
    module.forward(x)
    stat = f"/proc/{impl.session.proc.pid}/stat"

    def worker_cpu():
        try:
            with open(stat) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    there, here = worker_cpu(), time.process_time()
    for _ in range(calls):
        module.forward(x)
    here = (time.process_time() - here) / calls
    after = worker_cpu()
    return here, None if there is None or after is None else (after - there) / calls


def check_all_requests():
    """How many requests `gradlab check all` sends to its worker (each a round trip)."""
    from gradlab.execution import remote
    count, request = [0], remote.Session.request

    def counted(self, *args, **kwargs):
        count[0] += 1
        return request(self, *args, **kwargs)
    remote.Session.request = counted
    try:
        gradlab.check("all", seed=0, isolate=True, workers=1)      # (in lanes, the lanes' processes send them)
    finally:
        remote.Session.request = request
    return count[0]


def pipe_round_trip_seconds(repeats):
    """One byte there and back between two processes: the floor of any call into a worker."""
    import subprocess
    to_child, from_parent = os.pipe()[::-1]
    from_child, to_parent = os.pipe()
    code = f"import os\nwhile True:\n    d = os.read({from_parent}, 1)\n    if not d: break\n    os.write({to_parent}, d)\n"
    child = subprocess.Popen([sys.executable, "-c", code], pass_fds=(from_parent, to_parent))
    os.close(from_parent)
    os.close(to_parent)

    def once():
        for _ in range(200):
            os.write(to_child, b"x")
            os.read(from_child, 1)
    try:
        return median_time(once, repeats) / 200
    finally:
        os.close(to_child)
        child.wait()
        os.close(from_child)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    r = args.repeats
    load = os.getloadavg()[0]
    rows = []

    fb = fwd_bwd_seconds(r)
    start = time.perf_counter()
    worker = loader.open_implementation(None, isolate=True, limits=Limits(spin=True))   # as gradlab check has it
    started = time.perf_counter() - start
    try:
        rounds = max(r, GRADIENT_ROUNDS)
        (here, there), ratio, requests = gradient_seconds([loader.reference(), worker], rounds)
        call_there = call_seconds(worker, r)
        cpu_parent, cpu_worker = call_cpu_seconds(worker)
    finally:
        worker.close()
    call_here = call_seconds(loader.reference(), r)
    floor = pipe_round_trip_seconds(r)
    lanes = os.cpu_count() or 1
    all_here = median_time(lambda: gradlab.check("all", seed=0, isolate=False), max(1, r // 2))
    all_there = median_time(lambda: gradlab.check("all", seed=0, isolate=True, workers=1), max(1, r // 2))
    all_lanes = median_time(lambda: gradlab.check("all", seed=0, isolate=True), max(1, r // 2))
    from gradlab.execution import remote
    forked_before = remote.STARTS["forked"]
    cli = Limits(fork=True, spin=True)          # as `gradlab check` has it (cli.run_limits)
    all_cli_one = median_time(lambda: gradlab.check("all", seed=0, isolate=True, limits=cli, workers=1),
                              max(1, r // 2))
    cli_start = "forked" if remote.STARTS["forked"] > forked_before else "spawned: " + (
        remote.STARTS["reasons"][-1] if remote.STARTS["reasons"] else "?")
    all_cli = median_time(lambda: gradlab.check("all", seed=0, isolate=True, limits=cli), max(1, r // 2))
    all_requests = check_all_requests()

    rows.append(("gradient check, attention B=2 T=16 D=64 H=4", f"{here * 1e3:.1f} ms ({here / fb:.1f}x fwd+bwd)",
                 f"{there * 1e3:.1f} ms ({there / fb:.1f}x fwd+bwd; {requests} requests)", f"{ratio:.2f}x"))
    rows.append(("one forward call, linear (default cfg)", f"{call_here * 1e6:.0f} us", f"{call_there * 1e6:.0f} us",
                 f"{call_there / call_here:.0f}x"))
    rows.append(("the same call's CPU: gradlab's process + the worker's (gradlab's own code on both sides)", "-",
                 f"{cpu_parent * 1e6:.0f} + " + ("?" if cpu_worker is None else f"{cpu_worker * 1e6:.0f}") + " us",
                 "-"))
    rows.append(("a bare pipe round trip between two processes (the floor of any call)", "-",
                 f"{floor * 1e6:.0f} us", "-"))
    rows.append(("starting a worker (Python + NumPy + gradlab + the submission)", "-", f"{started:.2f} s", "-"))
    rows.append(("`gradlab check all` on the references, end to end: one worker, kind after kind (spawned)",
                 f"{all_here:.2f} s", f"{all_there:.2f} s ({all_requests:,} requests)", f"{all_there / all_here:.2f}x"))
    rows.append((f"the same in {lanes} lanes, as `gradlab.check` runs it (each lane's worker spawned)",
                 f"{all_here:.2f} s", f"{all_lanes:.2f} s", f"{all_lanes / all_here:.2f}x"))
    rows.append((f"as `gradlab check all --isolate --workers 1` runs it (its worker {cli_start})", f"{all_here:.2f} s",
                 f"{all_cli_one:.2f} s", f"{all_cli_one / all_here:.2f}x"))
    rows.append((f"as `gradlab check all --isolate` runs it: {lanes} lanes, each worker {cli_start}",
                 f"{all_here:.2f} s", f"{all_cli:.2f} s", f"{all_cli / all_here:.2f}x"))

    header = ("| measurement | in gradlab's process | through a worker | ratio |\n|---|---:|---:|---:|")
    table = header + "\n" + "\n".join(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows)
    conditions = (f"Medians of {r} runs ({rounds} for the gradient check, whose ratio is the median of per-round "
                  f"ratios, the two sides alternating); one in-process forward+backward of the attention: "
                  f"{fb * 1e3:.3f} ms. "
                  f"Load average while measuring: {load:.1f} on {os.cpu_count()} cores. "
                  f"OPENBLAS_NUM_THREADS in gradlab's process: {os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; "
                  f"in the worker: 1. numpy {np.__version__}, Python {sys.version.split()[0]}.")
    print(table)
    print(conditions)
    if not args.no_write:
        with open(os.path.join(HERE, "RESULTS_ISOLATION.md"), "w") as fh:
            fh.write("# What the worker process costs\n\nWritten by `python benchmarks/bench_isolation.py`.\n\n"
                     f"{table}\n\n{conditions}\n")


if __name__ == "__main__":
    main()
