"""Workers forked from the judging process (gradlab.execution.zygote) are set up
as spawned ones are; a fork that fails or a child that does not come up falls
back to a spawn; hostile students graded through forked workers leave nothing
running and get the same verdicts; the same seed gives the same scores with 1
or 2 judging jobs at a time.

Forking is only done from a single-threaded process (a grading job), so the
comparisons run in a Python process of their own, not in pytest's."""
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from gradlab.execution import zygote
from gradlab.execution.limits import Limits
from gradlab.grading.job import Limits as GradeLimits
from gradlab.grading.run import grade_class

ZOO = pathlib.Path(__file__).parent / "zoo"
HOSTILE = ZOO / "hostile"

PROBE = '''
OUT = "OUT_PATH"
import json, os, resource, signal, sys, tempfile, threading, ctypes
import numpy as np
import gradlab

def _fds():
    return sorted(int(n) for n in os.listdir("/proc/self/fd"))[:-1]   # the last: listdir's own

def _handler(name):
    handler = signal.getsignal(getattr(signal, name))
    return getattr(handler, "__qualname__", repr(handler))

def _status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return line.split()[1]

libc = ctypes.CDLL(None)
sig = ctypes.c_int(0)
libc.prctl(2, ctypes.byref(sig), 0, 0, 0)                  # PR_GET_PDEATHSIG
main = sys.modules["__main__"]
seen = {
    "env": dict(os.environ),
    "proc_environ": open("/proc/self/environ", "rb").read().decode(errors="replace").split("\\0"),
    "cwd": os.getcwd(), "tempdir": tempfile.gettempdir(), "home": os.path.expanduser("~"),
    "limits": {n: resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CORE")},
    "fds": len(_fds()), "stdin": os.readlink("/proc/self/fd/0"),
    "own_session": os.getsid(0) == os.getpid(), "own_group": os.getpgid(0) == os.getpid(),
    "ppid": os.getppid(), "pdeathsig": sig.value, "threads": _status("Threads"),
    "argv0": os.path.basename(sys.argv[0]), "main": os.path.basename(getattr(main, "__file__", "")),
    "main_name": main.__name__, "reference_loaded": "gradlab.modules" in sys.modules,
    "signals": {n: _handler(n) for n in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE", "SIGHUP", "SIGALRM")},
    "random": float(np.random.random()), "errstate": np.geterr(), "dont_write_bytecode": sys.dont_write_bytecode,
    "sys_path0": sys.path[0] == os.getcwd(),
}
print("printed by the probe")
with open(OUT, "w") as fh:
    json.dump(seen, fh)

@gradlab.register("layernorm")
def build(cfg):
    return None
'''

# Runs in a single-threaded Python process: opens the probe forked and spawned.
DRIVER = '''
import json, os, sys
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from gradlab.execution import loader, remote, zygote
from gradlab.execution.limits import Limits
folder, mode = sys.argv[1], sys.argv[2]
limits = Limits(workers=os.cpu_count())
if mode == "fail_in_child":
    zygote.become_worker = lambda *a: os._exit(9)
if mode == "fork_fails":
    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")
    os.fork = no_fork
for name in ("forked", "forked_again", "spawned"):
    zygote.ENABLED = name != "spawned"
    src = open(os.path.join(folder, "probe.py")).read().replace("OUT_PATH", os.path.join(folder, name + ".json"))
    path = os.path.join(folder, name + "_probe.py")
    open(path, "w").write(src)
    impl = loader.open_implementation(path, isolate=True, limits=limits)
    impl.session._drain_output()
    impl.close()
print(json.dumps({"starts": remote.STARTS, "pid": os.getpid()}))
'''


def _drive(tmp_path, mode="ok"):
    (tmp_path / "probe.py").write_text(PROBE)
    env = {**os.environ, "GRADLAB_TEST_SECRET": "hunter2", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path), mode], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    seen = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in ("forked", "forked_again", "spawned")}
    return info, seen


def _same_but_paths(a, b):
    """Environments equal but for the worker's own folder and token."""
    def norm(env):
        tmp, token = env["HOME"], env["GRADLAB_WORKER"]
        return {k: v.replace(tmp, "TMP").replace(token, "TOKEN") for k, v in env.items()}
    return norm(a) == norm(b)


def test_a_forked_worker_is_set_up_as_a_spawned_one(tmp_path):
    info, seen = _drive(tmp_path)
    assert info["starts"]["forked"] == 2 and info["starts"]["spawned"] == 1, info
    forked, spawned = seen["forked"], seen["spawned"]
    assert _same_but_paths(forked["env"], spawned["env"])
    assert "GRADLAB_TEST_SECRET" not in forked["env"]
    for s in (forked, spawned):
        # the teacher's environment is not readable in /proc either; the token is there (for the sweep)
        assert not any("hunter2" in e for e in s["proc_environ"]), s["proc_environ"]
        assert f"GRADLAB_WORKER={s['env']['GRADLAB_WORKER']}" in s["proc_environ"]
        assert s["cwd"] == s["env"]["HOME"] == s["tempdir"] == s["home"] == s["env"]["TMPDIR"]
        assert os.path.basename(s["cwd"]).startswith("gradlab-worker-")
        assert s["ppid"] == info["pid"]
    assert forked["cwd"] != seen["forked_again"]["cwd"]
    for key in ("limits", "fds", "stdin", "own_session", "own_group", "pdeathsig", "threads", "argv0", "main",
                "main_name", "reference_loaded", "signals", "errstate", "dont_write_bytecode", "sys_path0"):
        assert forked[key] == spawned[key], (key, forked[key], spawned[key])
    assert forked["limits"]["RLIMIT_AS"][0] == Limits().memory_mb << 20 and forked["pdeathsig"] == 9
    assert forked["threads"] == "1" and forked["main"] == "worker.py" and forked["main_name"] == "__main__"
    assert forked["own_session"] and not forked["reference_loaded"]
    assert forked["random"] != seen["forked_again"]["random"]       # fresh global random state each time


@pytest.mark.parametrize("mode, words", [("fail_in_child", "the forked worker did not start"),
                                         ("fork_fails", "the fork failed")])
def test_a_fork_that_fails_falls_back_to_a_spawn(tmp_path, mode, words):
    info, seen = _drive(tmp_path, mode)
    assert info["starts"]["forked"] == 0 and info["starts"]["spawned"] == 3, info
    assert any(words in r for r in info["starts"]["reasons"]), info
    assert _same_but_paths(seen["forked"]["env"], seen["spawned"]["env"])


def test_refusals_say_why_a_worker_is_spawned(tmp_path, monkeypatch):
    assert "off" in zygote.refusal(None, Limits(workers=os.cpu_count()))
    monkeypatch.setattr(zygote, "ENABLED", True)
    monkeypatch.setattr(zygote, "_threads", lambda: 3)
    assert zygote.refusal(None, Limits()) == "this process runs 3 threads"
    monkeypatch.setattr(zygote, "_threads", lambda: 1)
    if (os.cpu_count() or 1) > 1:
        assert "BLAS threads" in zygote.refusal(None, Limits(workers=1))
    lim = Limits(workers=os.cpu_count())
    (tmp_path / "mine.py").write_text("")
    (tmp_path / "random.npy").write_text("")     # a data file beside the code (grade copies them) is not imported
    assert zygote.refusal(tmp_path / "mine.py", lim) is None
    (tmp_path / "numpy.py").write_text("")       # a fresh worker would import this file for `import numpy`
    assert "'numpy.py'" in zygote.refusal(tmp_path / "mine.py", lim)
    assert "not a file" in zygote.refusal("some.module", lim)


DAEMON = (HOSTILE / "fork_daemon.py").read_text()


def test_hostile_students_graded_through_forked_workers(tmp_path):
    subs = tmp_path / "class"
    pids = tmp_path / "pids.txt"
    for student, files in {
        "daemon": {"m.py": DAEMON.replace('os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids.txt")',
                                          repr(str(pids)))},
        "exits": {"m.py": (HOSTILE / "os_exit_in_backward.py").read_text()},
        "signals": {"m.py": (HOSTILE / "signal_self.py").read_text()},
        "ok": {"m.py": (HOSTILE / "ok_layernorm.py").read_text()},
    }.items():
        (subs / student).mkdir(parents=True)
        for name, text in files.items():
            (subs / student / name).write_text(text)
        (subs / student / "_layernorm.py").write_text((HOSTILE / "_layernorm.py").read_text())
    out = tmp_path / "out"
    results = grade_class(str(subs), str(out), kinds="layernorm", seed=3, workers=2, limits=GradeLimits(wall=60),
                          stream=open(os.devnull, "w"))
    status = {s: {t["name"].split("::")[1]: t["status"] for t in r["tests"]} for s, r in results.items()}
    assert set(status["ok"].values()) == {"passed"} and set(status["daemon"].values()) == {"passed"}, status
    assert status["exits"]["gradient"] == "failed" and status["signals"]["smoke"] == "failed", status
    output = {s: {t["name"].split("::")[1]: t["output"] for t in r["tests"]} for s, r in results.items()}
    assert "ended the worker process" in output["exits"]["gradient"], output["exits"]
    assert "SIGTERM" in output["signals"]["smoke"], output["signals"]
    assert not any("Traceback" in o for r in output.values() for o in r.values()), output
    for student in results:
        starts = json.loads((out / student / "gradlab.json").read_text())["worker_starts"]
        assert starts["forked"] >= 1 and starts["spawned"] == 0, (student, starts)
    daemons = [int(p) for p in pids.read_text().split()]
    assert daemons
    end = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{p}") for p in daemons) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(os.path.exists(f"/proc/{p}") for p in daemons), "a student's daemon outlived its worker"


def test_same_seed_same_scores_with_one_or_two_jobs_at_a_time(tmp_path):
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "good.py").write_text((ZOO.parent.parent / "examples" / "student_modules.py").read_text())
    (subs / "bad.py").write_text((ZOO / "grad_bad_layernorm_no_gamma.py").read_text())
    runs = []
    for workers in (1, 2):
        results = grade_class(str(subs), str(tmp_path / f"out{workers}"), kinds="layernorm", seed=11,
                              workers=workers, stream=open(os.devnull, "w"))
        runs.append({s: [(t["name"], t["score"], t["status"], t["output"]) for t in r["tests"]]
                     for s, r in results.items()})
    assert runs[0] == runs[1]
    assert any(status == "failed" for _, _, status, _ in runs[0]["bad"])


STARTS_PLUGIN = '''
import json, os
def pytest_sessionfinish(session):
    from gradlab.execution import remote
    with open(os.environ["GRADLAB_TEST_STARTS"], "w") as fh:
        json.dump(remote.STARTS, fh)
'''


def test_the_hostile_zoo_through_forked_workers(tmp_path):
    """tests/test_isolation.py's hostile tables, unchanged, in a single-threaded pytest whose workers
    are all forked (GRADLAB_FORK_WORKERS=1): the same one-line verdicts, nothing left running.
    (The tests that share tests/zoo/hostile/pids.txt stay in the outer run.)"""
    (tmp_path / "starts_plugin.py").write_text(STARTS_PLUGIN)
    root = pathlib.Path(__file__).parent.parent
    env = {**os.environ, "GRADLAB_FORK_WORKERS": "1", "OPENBLAS_NUM_THREADS": "1",
           "GRADLAB_TEST_STARTS": str(tmp_path / "starts.json"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "-p", "starts_plugin", "tests/test_isolation.py", "-k",
                           "hostile_behaviour or deep_recursion or patching or dies_is_replaced or unusable_file"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "deselected" in done.stdout
    starts = json.loads((tmp_path / "starts.json").read_text())
    assert starts["forked"] >= 20 and starts["spawned"] == 0, starts
