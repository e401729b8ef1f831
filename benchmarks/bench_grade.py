"""Grading a class: 100 submissions x 6 kinds with `gradlab grade`, next to the
obvious alternative, one `gradlab check KIND --impl FILE` process per
(student, kind) run 2 at a time (what `xargs -P 2` does).

    python benchmarks/bench_grade.py [--students 100] [--sample 10] [--workers 2] [--write FILE]

The class is generated from the zoo: every third student correct, the others
with one bug in one kind (rotating over the six kinds). Both sides run with
OPENBLAS_NUM_THREADS=1 and the same seed. The per-(student, kind) processes are
run for the first --sample students only and reported per submission (600
processes would take minutes on this shared machine). The same --sample students
are also graded with the workers spawned (`python -m gradlab.execution.worker`,
GRADLAB_FORK_WORKERS=0) and forked from the judging job (the default), alternating,
for the ratio. How each student's workers started (forked / spawned) is read from
its gradlab.json. --write FILE writes the printed report there too
(benchmarks/RESULTS_GRADE.md).
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


def grade(folder, out, workers, env):
    return run([sys.executable, "-m", "gradlab", "grade", str(folder), "--kinds", ",".join(KINDS),
                "--out", str(out), "--seed", "0", "--workers", str(workers)], env)


def job_cpu(out, students):
    """CPU seconds of the students' judging jobs (and their workers), and their worker starts."""
    cpu, forked, spawned = 0.0, 0, 0
    for student in students:
        record = json.loads((out / student / "gradlab.json").read_text())
        cpu += record["cpu_seconds"]
        starts = record.get("worker_starts") or {}
        forked += starts.get("forked", 0)
        spawned += starts.get("spawned", 0)
    return cpu, forked, spawned


def children_cpu():
    """CPU seconds of this process's finished children (and the descendants they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--sample", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", help="also write the report into this file")
    args = ap.parse_args()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-grade-"))
    load_before = os.getloadavg()[0]
    sampled = min(args.sample, args.students)
    try:
        truth = make_class(tmp / "class", args.students)
        cpu_before = children_cpu()
        wall, done = grade(tmp / "class", tmp / "out", args.workers, env)
        if done.returncode != 0:
            sys.exit(f"gradlab grade failed: {done.stderr}")
        grader_cpu = children_cpu() - cpu_before   # the grade command (the jobs' CPU is counted in each job)
        load_after = os.getloadavg()[0]
        wrong = []
        cpu, forked, spawned = job_cpu(tmp / "out", truth)
        for student, bug in truth.items():
            results = json.loads((tmp / "out" / student / "results.json").read_text())
            failed = {t["name"].split("::")[0] for t in results["tests"] if t["status"] == "failed"}
            if failed != ({bug} if bug else set()):
                wrong.append((student, bug, sorted(failed)))
        again, _ = grade(tmp / "class", tmp / "out", args.workers, env)

        # the sample, graded with spawned and with forked workers, alternating (same load for both)
        sample = tmp / "sample"
        sample.mkdir()
        for i in range(sampled):
            shutil.copytree(tmp / "class" / f"s{i:03d}", sample / f"s{i:03d}")
        modes = {"spawned": [], "forked": []}
        for rnd in range(2):
            for mode, flag in (("spawned", "0"), ("forked", "1")):
                out = tmp / f"sample-{mode}-{rnd}"
                t, d = grade(sample, out, args.workers, {**env, "GRADLAB_FORK_WORKERS": flag})
                if d.returncode != 0:
                    sys.exit(f"gradlab grade failed: {d.stderr}")
                modes[mode].append((t, *job_cpu(out, [f"s{i:03d}" for i in range(sampled)])))

        jobs = []
        for i in range(sampled):
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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    import numpy
    lines = []
    say = lines.append
    say(f"gradlab grade, {args.students} submissions x {len(KINDS)} kinds, --workers {args.workers}, "
        f"{os.cpu_count()} cores, OPENBLAS_NUM_THREADS=1, numpy {numpy.__version__}, "
        f"Python {sys.version.split()[0]}; load average {load_before:.1f} before, {load_after:.1f} after the class")
    say("")
    total_cpu = cpu + grader_cpu
    say("| how | submissions | wall time | per submission | CPU per submission |")
    say("|---|---:|---:|---:|---:|")
    say(f"| `gradlab grade` (a judging job per student, a worker per file forked from it, {args.workers} at a "
        f"time, reports included) | {args.students} | {wall:.1f} s | {wall / args.students:.3f} s | "
        f"{total_cpu / args.students:.3f} s (jobs and their workers {cpu / args.students:.3f} s + grader "
        f"{grader_cpu / args.students:.3f} s) |")
    say(f"| the same command again (every student resumed, nothing graded) | {args.students} | {again:.1f} s | "
        f"{again / args.students:.3f} s | |")
    for mode in ("spawned", "forked"):
        for t, c, f, s in modes[mode]:
            say(f"| `gradlab grade`, the first {sampled} students, workers {mode} "
                f"({(f + s) / sampled:.1f} per student) | {sampled} | {t:.1f} s | {t / sampled:.3f} s | "
                f"{c / sampled:.3f} s (jobs and their workers) |")
    say(f"| one `gradlab check KIND --impl FILE` process per (student, kind), {args.workers} at a time | "
        f"{sampled} | {per_process:.1f} s | {per_process / sampled:.3f} s | {per_process_cpu / sampled:.3f} s |")
    say("")
    say(f"worker starts in the class: {forked} forked, {spawned} spawned ({(forked + spawned) / args.students:.2f} "
        "per student: one per file of the submission, plus one after each worker a student's code ended)")
    spawned_cpu = sum(c for _, c, _, _ in modes["spawned"]) / len(modes["spawned"]) / sampled
    forked_cpu = sum(c for _, c, _, _ in modes["forked"]) / len(modes["forked"]) / sampled
    say(f"on the sample, CPU per student: spawned workers {spawned_cpu:.3f} s, forked {forked_cpu:.3f} s "
        f"(ratio {spawned_cpu / forked_cpu:.2f})")
    say("")
    say(f"on an idle machine with {args.workers} cores the class would take about "
        f"{total_cpu / args.workers:.0f} s (its CPU time / cores; wall time above includes the machine's load)")
    say("")
    say(f"verdicts: {args.students - len(wrong)} of {args.students} students failed exactly the kind with "
        f"their bug (and correct students nothing)" + (f"; differing: {wrong[:5]}" if wrong else ""))
    text = "\n".join(lines)
    print(text)
    if args.write:
        pathlib.Path(args.write).write_text(f"# Grading a class (`benchmarks/bench_grade.py`)\n\n{text}\n")


if __name__ == "__main__":
    main()
