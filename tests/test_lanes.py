"""Several kinds at once (gradlab/execution/lanes.py): the records, the output and the exit status of a run
in lanes are those of the same run kind after kind; a lane the student's code kills costs only its kind.

Lanes fork gradlab's process, which must then run one thread: pytest's (xdist's) does not, so every run here
is a process of its own with OPENBLAS_NUM_THREADS=1, as gradlab's command line sets it for itself."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradlab_test_support import descendants, state

import gradlab
from gradlab.contract.errors import UsageError

HOSTILE = Path(__file__).parent / "zoo" / "hostile"
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
FAST_KINDS = "linear,softmax,cross_entropy,sgd,schedule"


def cli(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "gradlab", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=ENV)


def without_seconds(path):
    result = json.loads(Path(path).read_text())
    for kind in result["results"]:
        for check in kind["checks"]:
            check.pop("seconds")
    return result


LANES_USED = """
import json, sys
import gradlab
from gradlab.execution import lanes
used = []
run = lanes.run
lanes.run = lambda plan, on_record, n: used.append(n) or run(plan, on_record, n)
result = gradlab.check(sys.argv[1], impl=sys.argv[2] or None, seed=3, isolate=True, workers=int(sys.argv[3]))
print(json.dumps({"used": used, "passed": result.passed,
                  "records": [[r.kind, c.name, c.status, c.message] for r in result.results for c in r.checks]}))
"""


def lanes_used(kinds, impl, workers):
    run = subprocess.run([sys.executable, "-c", LANES_USED, kinds, impl, str(workers)], capture_output=True,
                         text=True, env=ENV, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_gradlab_check_runs_kinds_in_lanes_and_gives_the_same_records():
    two, one = lanes_used(FAST_KINDS, "", 2), lanes_used(FAST_KINDS, "", 1)
    assert two["used"] == [2] and one["used"] == []
    assert two["records"] == one["records"] and two["passed"]
    assert [r[0] for r in two["records"]][0] == "linear"       # the plan's order, not the order they ran in


def test_the_command_line_shows_and_writes_the_same_in_lanes(tmp_path):
    runs = {}
    for n in (1, 2):
        run = cli("check", FAST_KINDS, "--isolate", "--seed", "4", "--workers", str(n), "--json",
                  str(tmp_path / f"{n}.json"))
        assert run.returncode == 0, run.stdout + run.stderr
        runs[n] = run.stdout
    assert runs[1] == runs[2]
    assert without_seconds(tmp_path / "1.json") == without_seconds(tmp_path / "2.json")


def test_what_the_code_prints_is_shown_with_its_kind_as_kind_after_kind():
    # -v: the softmax's prints among its own records; the layernorm's endless forward ends at its time limit
    impl = str(HOSTILE / "loop_in_one_kind.py")
    runs = [cli("check", "all", "--impl", impl, "--seed", "0", "--timeout", "1", "-v", "--workers", n)
            for n in ("1", "2")]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[0].stdout == runs[1].stdout
    assert runs[1].stdout.count("softmax of") >= 5 and "ran past 1 s" in runs[1].stdout
    quiet = cli("check", "all", "--impl", impl, "--seed", "0", "--timeout", "1", "--workers", "2")
    assert "softmax of" not in quiet.stdout
    assert f"(your code printed {runs[1].stdout.count('softmax of')} lines" in quiet.stdout


IMPORT_PRINTS = """
import numpy as np
import gradlab

print("imported")


@gradlab.register("softmax")
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    total = float(np.sqrt(sum(float((g * g).sum()) for g in grads)))
    if total > max_norm:
        for g in grads:
            g *= max_norm / (total + 1e-6)
    return total
"""


def test_what_the_file_prints_as_it_is_imported_is_shown_once(tmp_path):
    # each lane imports the file again in a worker of its own; with -v that showed nothing extra, but the first
    # version sent it with no kind, and the run ended in a traceback
    impl = tmp_path / "prints.py"
    impl.write_text(IMPORT_PRINTS)
    runs = [cli("check", "all", "--impl", str(impl), "--seed", "0", "-v", "--workers", n) for n in ("1", "2")]
    assert runs[0].returncode == runs[1].returncode == 0, runs[1].stderr
    assert runs[0].stdout == runs[1].stdout and runs[1].stdout.count("imported") == 1


@pytest.mark.parametrize("kinds, workers", [("softmax", "1"), ("all", "1"), ("all", "2")])
def test_what_the_file_prints_as_it_is_imported_is_counted_once_when_quiet(tmp_path, kinds, workers):
    # a worker forked from the command line inherited its quiet counter, and counted the import's print there,
    # in the worker's memory: the run said nothing of it
    impl = tmp_path / "prints.py"
    impl.write_text(IMPORT_PRINTS)
    run = cli("check", kinds, "--impl", str(impl), "--seed", "0", "--workers", workers)
    assert run.returncode == 0, run.stderr
    assert "imported" not in run.stdout
    assert "(your code printed 1 line while it was checked; -v shows it)" in run.stdout


def test_a_lane_killed_by_the_code_errs_its_kind_only(tmp_path):
    # the cross-entropy kills the process judging it (its worker's parent): with lanes, a lane of gradlab's;
    # its checks not yet judged are errors, never passes, and the softmax is judged as ever
    out = tmp_path / "r.json"
    run = cli("check", "all", "--impl", str(HOSTILE / "kills_its_judge.py"), "--seed", "0", "--workers", "2",
              "--json", str(out))
    assert run.returncode == 1, run.stdout + run.stderr
    result = {r["kind"]: r for r in json.loads(out.read_text())["results"]}
    assert result["softmax"]["passed"]
    ce = result["cross_entropy"]["checks"]
    assert [c["name"] for c in ce] == [s.name for s in gradlab.execution.plan.Plan(kinds="cross_entropy")
                                       .checks_for("cross_entropy")]
    lost = [c for c in ce if c["status"] == "error"]
    assert lost and all("ended (killed by signal 9) before the kind was done; not judged" in c["message"]
                        for c in lost)


@pytest.mark.parametrize("group", [True, False], ids=["terminal", "kill-pid"])
def test_ctrl_c_stops_every_lane_and_its_worker(group):
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", "check", "all", "--impl",
                             str(HOSTILE / "loop_in_one_kind.py"), "--timeout", "60", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            start_new_session=True)
    time.sleep(3)                              # the lanes and their workers run; one is in the endless forward
    tree = descendants(proc.pid)
    assert len(tree) >= 3, tree                # two lanes, at least one worker
    if group:
        os.killpg(proc.pid, signal.SIGINT)     # as a terminal's Ctrl-C: to the whole foreground group
    else:
        os.kill(proc.pid, signal.SIGINT)       # to gradlab's own process alone: it stops the lanes
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and err.strip() == "gradlab: interrupted"
    time.sleep(0.2)
    assert not [pid for pid in tree if os.path.exists(f"/proc/{pid}") and state(pid) != "Z"]


FORKS_SLEEPERS = """
import os
import time

import numpy as np

import gradlab
from _layernorm import LayerNorm

PIDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids.txt")


def sleeper():
    pid = os.fork()
    if pid == 0:
        time.sleep(3600)
        os._exit(0)
    with open(PIDS, "a") as fh:
        fh.write(f"{pid}\\n")


class Forks(LayerNorm):
    def forward(self, x):
        sleeper()
        time.sleep(0.05)
        return super().forward(x)


@gradlab.register("layernorm")
def build(cfg):
    return Forks(cfg.d_model, cfg.eps)


@gradlab.register("softmax")
def softmax(x, axis=-1):
    sleeper()
    time.sleep(0.05)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""


def test_ctrl_c_leaves_none_of_what_the_code_started_running(tmp_path):
    # the terminal's SIGINT reaches the lanes, and the coordinator sends them one more: the second cut a lane's
    # stop of its worker short, and the sleepers the code had forked lived on (an hour)
    (tmp_path / "_layernorm.py").write_text((HOSTILE / "_layernorm.py").read_text())
    impl = tmp_path / "forks.py"
    impl.write_text(FORKS_SLEEPERS)
    for delay in (0.1, 0.7):          # after the code's first fork (~0.9 s from the start on an idle machine)
        (tmp_path / "pids.txt").write_text("")
        proc = subprocess.Popen([sys.executable, "-m", "gradlab", "check", "all", "--impl", str(impl), "--workers",
                                 "2", "--timeout", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=ENV, start_new_session=True)
        # (a fixed 1 s from the start found nothing forked yet on a loaded machine)
        deadline = time.monotonic() + 30
        while not (tmp_path / "pids.txt").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
        time.sleep(0.3)
        pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
        assert pids, "the code forked nothing before Ctrl-C"
        alive = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and state(pid) != "Z"]
        for pid in alive:              # (a failing run leaves no sleeper behind the test either)
            os.kill(pid, signal.SIGKILL)
        assert not alive, (delay, proc.returncode, alive)


def test_workers_must_be_a_whole_number_of_one_or_more():
    for value in ("0", "-1"):
        run = cli("check", "all", "--workers", value)
        assert run.returncode == 2 and run.stderr.count("\n") == 1
        assert f"--workers {value}: checks no kind at a time; give 1 or more" in run.stderr
    with pytest.raises(UsageError, match="checks no kind at a time"):
        gradlab.check("all", workers=0)
    with pytest.raises(UsageError, match="must be a whole number"):
        gradlab.check("all", workers=1.5)
    import numpy as np
    for whole in (1.0, np.int64(1)):        # from Python, whole numbers of any type (one lane: quick here)
        assert gradlab.check("softmax,clip_grad_norm", workers=whole, checks="smoke", seed=0).passed
