"""Grading a class: 100 submissions x 6 kinds with `gradlab grade`, next to the
obvious alternative, one `gradlab check KIND --impl FILE` process per
(student, kind) run 2 at a time (what `xargs -P 2` does).

    python benchmarks/bench_grade.py [--students 100] [--sample 10] [--workers 2]

The class is generated from the zoo: every third student correct, the others
with one bug in one kind (rotating over the six kinds). Both sides run with
OPENBLAS_NUM_THREADS=1 and the same seed. The per-(student, kind) processes are
run for the first --sample students only and reported per submission (600
processes would take minutes on this shared machine). Appends nothing: copy the
printed table into benchmarks/RESULTS.md.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
ZOO, EXAMPLES = ROOT / "tests" / "zoo", ROOT / "examples"
KINDS = ["layernorm", "ffn", "linear", "embedding", "attention", "adam"]
# kind -> (the zoo file with one bug, the siblings it imports)
BUGS = {
    "layernorm": ("grad_bad_layernorm_no_gamma.py", []),
    "ffn": ("grad_bad_ffn_bias_first_token.py", []),
    "linear": ("grad_bad_linear_bias_mean.py", []),
    "embedding": ("grad_bad_embedding_assign.py", []),
    "attention": ("grad_bad_attention_transposed_out_weight.py", []),
    "adam": ("traj_adam_no_bias.py", ["traj_parts.py"]),
}


def unregister(text, kind):
    """The file without its registration of `kind` (the buggy file registers it instead)."""
    return text.replace(f'@gradlab.register("{kind}")\n', "")


def make_class(folder, n):
    modules = (EXAMPLES / "student_modules.py").read_text()
    attention = (ZOO / "grad_ok_attention.py").read_text()
    truth = {}
    for i in range(n):
        student = folder / f"s{i:03d}"
        student.mkdir(parents=True)
        bug = None if i % 3 == 0 else KINDS[i % len(KINDS)]
        files = {"modules.py": modules, "grad_ok_attention.py": attention}
        if bug == "attention":
            files["grad_ok_attention.py"] = attention.replace('@gradlab.register("attention")\n', "")
        elif bug:
            files["modules.py"] = unregister(modules, bug)
        if bug:
            name, siblings = BUGS[bug]
            files["bug_" + name] = (ZOO / name).read_text()
            for s in siblings:
                files[s] = (ZOO / s).read_text()
        for name, text in files.items():
            (student / name).write_text(text)
        truth[student.name] = bug
    return truth


def run(cmd, env):
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def children_cpu():
    """CPU seconds of this process's finished children (and the descendants they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--sample", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-grade-"))
    try:
        truth = make_class(tmp / "class", args.students)
        cpu_before = children_cpu()
        wall, done = run([sys.executable, "-m", "gradlab", "grade", str(tmp / "class"), "--kinds", ",".join(KINDS),
                          "--out", str(tmp / "out"), "--seed", "0", "--workers", str(args.workers)], env)
        if done.returncode != 0:
            sys.exit(f"gradlab grade failed: {done.stderr}")
        grader_cpu = children_cpu() - cpu_before   # the grade command (the jobs' CPU is counted in each job)
        wrong, cpu = [], 0.0
        for student, bug in truth.items():
            cpu += json.loads((tmp / "out" / student / "gradlab.json").read_text())["cpu_seconds"]
            results = json.loads((tmp / "out" / student / "results.json").read_text())
            failed = {t["name"].split("::")[0] for t in results["tests"] if t["status"] == "failed"}
            if failed != ({bug} if bug else set()):
                wrong.append((student, bug, sorted(failed)))
        again, _ = run([sys.executable, "-m", "gradlab", "grade", str(tmp / "class"), "--kinds", ",".join(KINDS),
                        "--out", str(tmp / "out"), "--seed", "0", "--workers", str(args.workers)], env)

        jobs = []
        for i in range(min(args.sample, args.students)):
            student = tmp / "class" / f"s{i:03d}"
            bug = truth[student.name]
            for kind in KINDS:
                if kind == bug:
                    impl = student / ("bug_" + BUGS[kind][0])
                else:
                    impl = student / ("grad_ok_attention.py" if kind == "attention" else "modules.py")
                jobs.append([sys.executable, "-m", "gradlab", "check", kind, "--impl", str(impl), "--seed", "0"])
        start, cpu_before = time.perf_counter(), children_cpu()
        with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(lambda cmd: run(cmd, env), jobs))
        per_process = time.perf_counter() - start
        per_process_cpu = children_cpu() - cpu_before
        sampled = min(args.sample, args.students)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    import numpy
    print(f"gradlab grade, {args.students} submissions x {len(KINDS)} kinds, --workers {args.workers}, "
          f"{os.cpu_count()} cores, OPENBLAS_NUM_THREADS=1, numpy {numpy.__version__}, "
          f"Python {sys.version.split()[0]}")
    print()
    total_cpu = cpu + grader_cpu
    print("| how | submissions | wall time | per submission | CPU per submission |")
    print("|---|---:|---:|---:|---:|")
    print(f"| `gradlab grade` (a judging job per student, a worker per file, {args.workers} at a time, reports included) | "
          f"{args.students} | {wall:.1f} s | {wall / args.students:.3f} s | {total_cpu / args.students:.3f} s "
          f"(jobs {cpu / args.students:.3f} s + grader {grader_cpu / args.students:.3f} s) |")
    print(f"| the same command again (every student resumed, nothing graded) | {args.students} | {again:.1f} s | "
          f"{again / args.students:.3f} s | |")
    print(f"| one `gradlab check KIND --impl FILE` process per (student, kind), {args.workers} at a time | "
          f"{sampled} | {per_process:.1f} s | {per_process / sampled:.3f} s | {per_process_cpu / sampled:.3f} s |")
    print()
    print(f"on an idle machine with {args.workers} cores the class would take about "
          f"{total_cpu / args.workers:.0f} s (its CPU time / cores; wall time above includes the machine's load, "
          f"load average {os.getloadavg()[0]:.1f} at the end)")
    print()
    print(f"verdicts: {args.students - len(wrong)} of {args.students} students failed exactly the kind with "
          f"their bug (and correct students nothing)" + (f"; differing: {wrong[:5]}" if wrong else ""))


if __name__ == "__main__":
    main()
