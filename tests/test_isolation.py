"""The student's code runs in a worker process; gradlab judges it in its own.
Each hostile submission in tests/zoo/hostile/ does one bad thing. Whatever it
does: the right verdict with one clear line, gradlab alive, nothing left
running, and the next submission in the same process unaffected."""
import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gradlab
from gradlab.execution import limits as limits_mod
from gradlab.execution import remote
from gradlab.execution.limits import Limits

HOSTILE = Path(__file__).parent / "zoo" / "hostile"
LIMITS = Limits(timeout=1, wall=60, memory_mb=512, output_mb=1)


def hostile(name):
    return str(HOSTILE / f"{name}.py")


def check(name, checks=None, **kwargs):
    return gradlab.check("layernorm", impl=hostile(name), checks=checks, seed=0, isolate=True, limits=LIMITS,
                         timeout=1, **kwargs)


def left_running():
    """Live processes started by this process's workers that were stopped (they carry a worker's
    token). Workers still in use (the pytest plugin keeps one per file for the session) are not counted."""
    gc.collect()           # a session dropped without close() stops its worker when collected
    live = {token for session in list(remote._live) if session.proc is not None
            for token in session.tokens.values()}
    found = set()
    for token in set(remote.TOKENS) - live:
        found |= {pid for pid in limits_mod.leftovers(set(), token) if _state(pid) not in (None, "Z")}
    return found


def zombie_children():
    """What gradlab killed and did not reap: its zombie children among the processes its sweeps found.
    (While a worker runs gradlab is a subreaper, so orphans of other programs' children may be
    reparented to it too; those are not its to reap.)"""
    me = os.getpid()
    return sorted(pid for pid in set(limits_mod.SWEPT)
                  if (st := limits_mod._stat(pid)) and st[0] == me and st[3] == "Z")


def _state(pid):
    st = limits_mod._stat(pid)
    return None if st is None else st[3]


def next_submission_unaffected():
    result = gradlab.check("layernorm", impl=hostile("ok_layernorm"), checks="gradient", seed=0, isolate=True,
                           limits=LIMITS)
    assert result.passed, [c.message for c in result.checks]
    assert not left_running() and not zombie_children()


def one_error(result, *words):
    """The first check that did not pass is an error whose one line says `words`."""
    first = next(c for c in result.checks if c.status != "pass")
    assert first.status == "error", (first.status, first.message)
    assert "\n" not in first.message and "Traceback" not in first.message
    for word in words:
        assert word in first.message, first.message
    return first


ERRORS = [
    ("exit_in_forward", ["forward called sys.exit(0) at exit_in_forward.py:10"]),
    ("os_exit_in_backward", ["backward ended the worker process", "exit status 0"]),
    ("signal_self", ["forward ended the worker process with signal SIGTERM"]),
    ("loop_forward", ["forward ran past 1 s, last seen at loop_forward.py:", "--timeout"]),   # line 9 or 10
    ("loop_swallow", ["forward ran past 1 s, last seen at loop_swallow.py:15"]),
    ("memory_flood", ["forward ran out of memory at memory_flood.py:12", "512 MB", "--max-memory"]),
    ("output_flood", ["forward wrote more than 1 MB of output", "--max-output"]),
    ("keyboard_interrupt", ["forward raised KeyboardInterrupt at keyboard_interrupt.py:8"]),
    ("forge_reply", ["forward: the worker sent a malformed reply", "gradlab's pipe"]),
]


@pytest.mark.parametrize("name, words", ERRORS, ids=[e[0] for e in ERRORS])
def test_hostile_behaviour_is_an_error_verdict(name, words):
    result = check(name)
    assert not result.passed
    one_error(result, "layernorm: ", *words)
    assert not left_running() and not zombie_children()
    next_submission_unaffected()


@pytest.mark.parametrize("isolate", [True, False], ids=["worker", "in-process"])
def test_not_implemented_only_when_judged_is_an_error_not_a_skip(isolate):
    # its backward returned gradients in the checks before: no forward-only module, whatever it raises later
    result = gradlab.check("layernorm", impl=hostile("not_implemented_when_judged"), seed=0, isolate=isolate,
                           checks="shapes,gradient", timeout=5)
    gradient = result["gradient"]
    assert not result.passed and gradient.status == "error", gradient.message
    assert "returned gradients earlier in this run, so this is no forward-only module's backward" in gradient.message


def test_deep_recursion_is_an_error_verdict():
    # Python 3.11 recurses in the heap: the time or the memory limit ends it, whichever comes first
    result = check("deep_recursion")
    first = one_error(result)
    assert any(w in first.message for w in ("ran past 1 s", "ran out of memory", "segmentation fault",
                                            "RecursionError")), first.message
    next_submission_unaffected()


@pytest.mark.parametrize("name", ["patch_numpy", "patch_builtins", "patch_gradlab", "fake_json", "lying_subclass"])
def test_patching_inside_the_worker_changes_no_verdict(name):
    # every one of these modules is wrong: whatever it patched, the verdict is not a pass. Either
    # gradlab judges its numbers (a fail that names the wrong gradient or output), or gradlab's own
    # code in the worker broke on the patch (an error that says so)
    result = check(name, checks="gradient")
    assert not result.passed
    first = next(c for c in result.checks if not c.ok)
    if first.status == "fail":
        assert "is wrong" in first.message, first.message
    else:
        assert first.status == "error" and "does your code patch" in first.message, first.message
    json.dumps(result.to_dict())            # gradlab's own records, JSON-able
    assert not os.path.exists("result.json") or json.load(open("result.json")).get("passed") is not True
    next_submission_unaffected()


@pytest.mark.parametrize("name", ["loop_thread", "fork_sleeper", "fork_daemon", "chdir_at_import"])
def test_correct_but_careless_passes_and_leaves_nothing(name, tmp_path):
    pids = HOSTILE / "pids.txt"
    pids.unlink(missing_ok=True)
    cwd = os.getcwd()
    try:
        result = check(name, checks="smoke,gradient")
        assert result.passed, [c.message for c in result.checks]
        assert os.getcwd() == cwd
        assert not left_running() and not zombie_children()
        if name.startswith("fork_"):       # the children it started wrote their pids: each one is gone
            started = [int(p) for p in pids.read_text().split()]
            assert started, "the module's children wrote no pid"
            for pid in started:
                assert _state(pid) in (None,), f"pid {pid} is still there"
    finally:
        pids.unlink(missing_ok=True)


def test_a_worker_that_dies_is_replaced_for_the_next_checks():
    # exits at the third backward of each worker process: each check that needs more errors, and
    # a fresh worker serves the next one (smoke and shapes need one backward each)
    result = check("os_exit_later")
    status = {c.name: c.status for c in result.checks}
    assert status["smoke"] == "pass" and status["shapes"] == "pass"
    died = [c for c in result.checks if "backward ended the worker process" in c.message]
    assert died and all(c.status == "error" for c in died)
    assert not left_running() and not zombie_children()


def test_a_file_not_found_by_a_relative_path_says_how_to_name_it_beside_the_code():
    # np.load("init.npy") in forward, the file beside the code: the worker's current folder is its own
    relative = {"type": "FileNotFoundError", "where": "sol.py:9",
                "detail": "[Errno 2] No such file or directory: 'data/init.npy'"}
    said = str(remote.RemoteException("forward", relative, Limits()))
    assert said.endswith("; a relative path is read from the current folder, not your file's: name a file beside "
                         "your code as os.path.join(os.path.dirname(__file__), 'data/init.npy')")
    absolute = {"type": "FileNotFoundError", "detail": "[Errno 2] No such file or directory: '/data/init.npy'"}
    assert "relative path" not in str(remote.RemoteException("forward", absolute, Limits()))


def test_a_worker_that_ended_leaves_no_folder_once_the_next_one_starts():
    folders, kept = [], []
    launch = remote.Session._launch

    def noted(session, forked):
        launch(session, forked)
        kept.append([f for f in folders if os.path.exists(f)])     # while the session goes on
        folders.append(session.tmp)
    remote.Session._launch = noted
    try:
        result = check("os_exit_later")       # ends its worker at the third backward: several workers in turn
    finally:
        remote.Session._launch = launch
    assert len(folders) >= 3 and any("ended the worker" in c.message for c in result.checks)
    assert kept == [[]] * len(folders)                        # each gone when the next started
    assert not any(os.path.exists(f) for f in folders)        # and the last with the session
    assert not left_running() and not zombie_children()


@pytest.mark.parametrize("name, words", [
    ("exit_at_import", ["called sys.exit(3) at exit_at_import.py:7"]),
    ("os_exit_at_import", ["ended the worker process", "exit status 0"]),
    ("import_reference", ["gradlab's own reference implementation", "register a factory defined in your file"]),
    ("wrap_reference", ["gradlab's own reference implementation"]),
    ("output_flood_at_import", ["importing", "wrote more than 1 MB of output", "--max-output"]),
])
def test_an_unusable_file_is_a_usage_error(name, words):
    with pytest.raises(gradlab.UsageError) as info:
        check(name)
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message
    assert hostile(name) in message or f"{name}.py" in message
    assert not left_running() and not zombie_children()


@pytest.mark.parametrize("name", ["import_reference", "wrap_reference"])
def test_registering_the_reference_is_refused_in_process_too(name):
    with pytest.raises(gradlab.UsageError, match="gradlab's own reference implementation"):
        gradlab.check("layernorm", impl=hostile(name), isolate=False, seed=0)


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize("name, method", [("factory_returns_reference", "LayerNorm.forward"),
                                          ("subclass_reference", "LayerNorm.backward")])
def test_a_factory_returning_the_reference_is_refused(name, method, isolate):
    """The factory is the file's own; what it builds runs gradlab's reference methods: not the student's code,
    whatever the registration rule says to the letter."""
    result = gradlab.check("layernorm", impl=hostile(name), seed=0, isolate=isolate, limits=LIMITS)
    first = one_error(result, "build(cfg) returned an object that runs gradlab's own reference implementation",
                      f"gradlab.modules.layernorm.{method}")
    assert first.name == "smoke" and not result.passed
    assert all(c.status == "skip" for c in result.checks[1:])


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize("name, path", [("holds_reference_child", "'inner'"),
                                        ("holds_reference_in_a_list", "'parts.0'")])
def test_a_module_holding_the_same_kinds_reference_as_a_child_is_refused(name, path, isolate):
    """The class is the file's own, but its work is gradlab's reference of the same kind, held as a part."""
    result = gradlab.check("layernorm", impl=hostile(name), seed=0, isolate=isolate, limits=LIMITS)
    first = one_error(result, f"holds gradlab's own reference layernorm as its child {path}",
                      "gradlab.modules.layernorm.LayerNorm.forward", "write the layernorm yourself")
    assert first.name == "smoke" and not result.passed
    assert all(c.status == "skip" for c in result.checks[1:])


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize("kind, name, held", [
    ("layernorm", "calls_reference_helpers", "gradlab.modules.layernorm.layernorm"),
    ("layernorm", "borrows_reference_methods", "gradlab.modules.layernorm"),
    # found by a later hunt: in the submission's helper file, as a dotted name, a class in a file of three kinds
    ("layernorm", "reference_in_a_sibling/submission", "gradlab.modules.layernorm.layernorm, in mylib.py"),
    ("layernorm", "reference_by_dotted_import", "gradlab.modules.layernorm.layernorm"),
    ("adam", "borrows_reference_adam", "gradlab.modules.optim.Adam"),
])
def test_a_file_holding_the_same_kinds_reference_at_its_top_level_is_refused(kind, name, held, isolate):
    # a class of its own whose methods call gradlab's reference helpers, or its methods unbound, passed every
    # check (a helper's find; so did a subclass overriding with super() calls, and bound methods kept)
    with pytest.raises(gradlab.UsageError, match=f"holds gradlab's own reference code of '{kind}'") as e:
        gradlab.check(kind, impl=hostile(name), seed=0, isolate=isolate, limits=LIMITS)
    assert held in str(e.value) and "compare with gradlab's reference from another file" in str(e.value)


@pytest.mark.parametrize("isolate", [True, False])
def test_check_all_says_which_registration_did_not_count(isolate):
    # the refused softmax was left out of `check all` without a word: the run looked like a clean pass
    result = gradlab.check("all", impl=hostile("refused_beside_a_counted_kind"), seed=0, isolate=isolate,
                           limits=LIMITS, workers=1)
    by_kind = {r.kind: r for r in result.results}
    assert list(by_kind) == ["softmax", "cross_entropy"] and not result.passed
    refused = by_kind["softmax"].checks
    assert [(c.name, c.status) for c in refused] == [("smoke", "error")]
    assert "softmax: not checked:" in refused[0].message and "holds gradlab's own reference code" in refused[0].message
    assert by_kind["cross_entropy"].passed


@pytest.mark.parametrize("isolate", [True, False])
def test_a_module_made_of_other_kinds_references_is_the_students_own(isolate):
    # a block wired by the student from gradlab's LayerNorm, attention and feed-forward: its kind's work
    # (the residual wiring, the order) is the student's, and the parts are other kinds' references
    result = gradlab.check("block", impl=hostile("block_of_reference_parts"), seed=0, isolate=isolate,
                           limits=Limits(timeout=20, wall=120))
    assert result.passed, [c.message for c in result.checks if c.status != "pass"]


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize("name", ["softmax_calls_reference", "softmax_calls_reference_through_a_helper"])
def test_a_function_that_passes_the_call_on_to_the_reference_is_refused(name, isolate):
    # (through a helper function of the file's own, it passed every check)
    with pytest.raises(gradlab.UsageError, match=r"calls gradlab's own reference implementation of it "
                                                 r"\(gradlab\.modules\.functional\.softmax\)"):
        gradlab.check("softmax", impl=hostile(name), seed=0, isolate=isolate, limits=LIMITS)
    # another kind's reference, borrowed as a helper, is code of the student's own kind: it counts
    result = gradlab.check("cross_entropy", impl=hostile("cross_entropy_borrows_softmax"), seed=0, isolate=isolate,
                           limits=LIMITS)
    assert result.passed, [c.message for c in result.checks if c.status != "pass"]


def test_gradlabs_reference_asked_for_by_module_name_passes_through_a_worker():
    result = gradlab.check("layernorm", impl="gradlab.modules.layernorm", seed=0, isolate=True, limits=LIMITS,
                           checks=["smoke", "gradient"])
    assert result.passed, [c.message for c in result.checks]


def test_a_timeout_works_off_the_main_thread():
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("r", check("loop_forward")))
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    one_error(out["r"], "forward ran past 1 s")


def test_the_wall_time_limit_stops_the_whole_submission():
    result = gradlab.check("layernorm", impl=hostile("loop_forward"), seed=0, isolate=True,
                           limits=Limits(timeout=30, wall=1))
    one_error(result, "wall-time limit of 1 s", "--wall-time", "loop_forward.py:")
    assert not left_running()


def test_isolate_refuses_a_python_object():
    with pytest.raises(gradlab.UsageError, match="pass the path of its file"):
        gradlab.check("layernorm", impl=lambda cfg: None, isolate=True)


# ---- the command line: exit statuses, files, Ctrl-C ---------------------------------------------

def gradlab_cli(*args, cwd=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "gradlab", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def test_cli_os_exit_is_an_error_and_the_json_is_gradlabs(tmp_path):
    out = tmp_path / "result.json"
    run = gradlab_cli("check", "layernorm", "--impl", hostile("os_exit_in_backward"), "--json", str(out),
                      "--seed", "0", "--timeout", "2")
    assert run.returncode == 1, run.stderr
    assert "backward ended the worker process" in run.stdout
    assert json.loads(out.read_text())["passed"] is False


def test_cli_a_forged_json_is_overwritten_and_a_relative_path_stays_put(tmp_path):
    run = gradlab_cli("check", "layernorm", "--impl", hostile("fake_json"), "--checks", "gradient",
                      "--json", "result.json", "--seed", "0", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert json.loads((tmp_path / "result.json").read_text())["passed"] is False
    run = gradlab_cli("check", "layernorm", "--impl", hostile("chdir_at_import"), "--checks", "smoke",
                      "--json", "ok.json", "--seed", "0", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads((tmp_path / "ok.json").read_text())["passed"] is True


def test_cli_keyboard_interrupt_raised_by_the_code_is_not_ctrl_c():
    run = gradlab_cli("check", "layernorm", "--impl", hostile("keyboard_interrupt"), "--seed", "0")
    assert run.returncode == 1 and "raised KeyboardInterrupt" in run.stdout


def test_cli_importing_the_reference_exits_2():
    run = gradlab_cli("check", "layernorm", "--impl", hostile("import_reference"))
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "gradlab's own reference implementation" in run.stderr


def test_cli_a_thread_left_running_does_not_keep_gradlab_alive():
    run = gradlab_cli("check", "layernorm", "--impl", hostile("loop_thread"), "--checks", "smoke", "--seed", "0",
                      timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_cli_ctrl_c_stops_the_workers_and_exits_130():
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", "check", "layernorm", "--impl", hostile("loop_forward"),
                             "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = None
    deadline = time.monotonic() + 30
    while worker is None and time.monotonic() < deadline:      # wait until its worker runs the loop
        for pid in limits_mod._pids():
            st = limits_mod._stat(pid)
            if st and st[0] == proc.pid:
                worker = pid
        time.sleep(0.1)
    assert worker is not None
    time.sleep(1.0)
    proc.send_signal(2)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "gradlab: interrupted"
    assert _state(worker) is None


def test_the_references_pass_through_a_worker():
    # the whole suite runs through workers with GRADLAB_TEST_ISOLATE=1; here, cheaply, every kind once
    result = gradlab.check("all", seed=0, isolate=True, checks="smoke,gradient,trajectory")
    assert result.passed, [(r.kind, c.name, c.message) for r in result.results for c in r.checks if not c.ok]
    assert not left_running()


def test_a_call_over_its_time_limit_is_waited_for_once():
    # asked for alone, gradient runs ahead of smoke; its forward ran past the limit, and smoke (the same
    # calls, in a fresh worker) waited for the limit again: a loop cost twice the time limit
    result = check("loop_forward", checks=["gradient"])
    smoke = result["smoke"]
    assert smoke.status == "error" and "forward ran past 1 s" in smoke.message
    assert "in the 'gradient' check, which ran first; smoke makes the same calls" in smoke.message
    assert result["gradient"].status == "error" and "forward ran past 1 s" in result["gradient"].message
    assert not left_running()


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "worker"])
def test_an_output_buffer_the_module_reuses_is_judged_call_by_call(isolate):
    # each forward overwrote the array the last one returned: batch_independence said "samples must not interact"
    # (both ways), and through a worker a batch of calls sent the last call's numbers for all (gradient: "cannot
    # judge: not smooth")
    result = gradlab.check("layernorm", impl=str(HOSTILE / "output_buffer.py"), seed=1, isolate=isolate)
    assert result.passed, [(c.name, c.message) for c in result.checks if not c.ok]


@pytest.mark.parametrize("fork", [True, False])
def test_a_slow_import_is_timed_by_the_limit_given_not_by_an_alarm_of_the_worker(tmp_path, fork):
    # the worker armed an alarm of its own around the import, at the timeout gradlab's process had when the
    # worker started (20 s in a spawned one): a forked worker, its handler reset, died "with signal SIGALRM"
    from gradlab.execution import harness, loader
    slow = tmp_path / "slow_import.py"
    slow.write_text("import time\nimport gradlab\ntime.sleep(1.5)\n\n"
                    "@gradlab.register('softmax')\ndef softmax(x, axis=-1):\n    return x\n")
    previous = harness.get_timeout()
    harness.set_timeout(0.5)          # what a forked worker inherits (a spawned one has the default)
    try:
        impl = loader.open_implementation(str(slow), isolate=True, limits=Limits(timeout=30, wall=60, fork=fork))
    finally:
        harness.set_timeout(previous)
    try:
        assert "softmax" in impl.registrations
    finally:
        impl.close()
