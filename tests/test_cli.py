"""The `gradlab` command (CONTRACT §4): exit 0 all passed, 1 a check failed or
the student's code raised, 2 the command could not run, with one line that says
what to fix and never a traceback unless -v. Most cases run main(argv) in
process (fast); a few run the real command in a subprocess."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gradlab_test_support import nan_adam, strict_json

import gradlab
from gradlab.frontends.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
CHECKS = "smoke,gradient"

# A student's LayerNorm-shaped module with one thing wrong at a time.
MODULE = """\
import numpy as np
import gradlab

class LN:
    def __init__(self, d):
        self.gamma = np.ones(d)
        self.beta = np.zeros(d)

    def forward(self, x):
        self.x = x
        {forward}

    def backward(self, g):
        self.dgamma = (g * self.x).reshape(-1, g.shape[-1]).sum(0)
        self.dbeta = g.reshape(-1, g.shape[-1]).sum(0)
        {backward}

@gradlab.register("layernorm")
def build(cfg):
    {build}
"""
GOOD = {"forward": "return x * self.gamma + self.beta", "backward": "return g * self.gamma",
        "build": "return LN(cfg.d_model)"}


def student_file(folder, name="student.py", **changes):
    path = folder / name
    path.write_text(MODULE.format(**{**GOOD, **changes}))
    return str(path)


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_command(*argv, cwd=None, timeout=60):
    """The installed command, through this interpreter, so it works in any venv."""
    proc = subprocess.run([sys.executable, "-m", "gradlab", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


# ---- exit 2: the command cannot run ------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["check", "attention", "--impl", "{tmp}/nope.py"], "no such file: {tmp}/nope.py"),
    (["check", "attention", "--impl", "{tmp}"], "is a folder; pass the .py file that calls gradlab.register"),
    (["check", "layernorm", "--impl", "{tmp}/syntax.py"], "syntax.py:11: syntax error"),
    (["check", "layernorm", "--impl", "{tmp}/imports.py"],
     "raised ModuleNotFoundError at imports.py:1: No module named 'torchh'"),
    (["check", "layernorm", "--impl", "{tmp}/raises.py"], "raised KeyError at raises.py:1"),
    (["check", "layernorm", "--impl", "{tmp}/exits.py"], "called sys.exit(1) at exits.py:1"),
    (["check", "layernorm", "--impl", "{tmp}/reads.py"],
     "raised FileNotFoundError at reads.py:1: [Errno 2] No such file or directory: 'init.npy'; a relative path is "
     "read from the current folder, not your file's: name a file beside your code as "
     "os.path.join(os.path.dirname(__file__), 'init.npy')"),
    (["check", "attention", "--impl", "{tmp}/student.py"],
     "registers no 'attention' module (it registers layernorm); add @gradlab.register('attention')"),
    (["check", "all", "--impl", "{tmp}/nothing.py"], "nothing.py registers nothing"),
    (["check", "atention"], "unknown kind 'atention': did you mean 'attention'?"),
    (["check", "attention", "--checks", "gradiant"], "unknown check 'gradiant': did you mean 'gradient'?"),
    (["check", "attention", "--set", "d_model=abc"], "--set d_model=abc: d_model takes int values"),
    (["check", "attention", "--set", "dmodel=8"], "unknown config field 'dmodel'; did you mean 'd_model'?"),
    (["check", "attention", "--set", "d_model"], "--set d_model: write it as FIELD=VALUE"),
    (["check", "attention", "--set", "d_model=7"], "d_model=7: is not divisible by num_heads=2"),
    (["check", "attention", "--impl", "no_such_module_xyz"], "no such file or module: no_such_module_xyz"),
    (["check", "softmax", "--json", "{tmp}/no/such/folder/r.json"], "--json {tmp}/no/such/folder/r.json: the folder"),
], ids=["missing file", "folder", "syntax error", "import error", "raises at import", "sys.exit at import",
        "a relative path at import",
        "no registration for the kind", "registers nothing", "unknown kind", "unknown check", "bad --set value",
        "unknown field", "--set without =", "invalid cfg", "unknown module", "--json folder missing"])
def test_what_stops_the_command_exits_2_with_one_line(tmp_path, capsys, argv, words):
    student_file(tmp_path, "student.py")
    student_file(tmp_path, "syntax.py", forward="return x *(")
    (tmp_path / "imports.py").write_text(MODULE.format(**GOOD).replace("import numpy as np", "import torchh"))
    (tmp_path / "raises.py").write_text("{}['missing']\n" + MODULE.format(**GOOD))
    (tmp_path / "exits.py").write_text("import sys; sys.exit(1)\n")
    (tmp_path / "reads.py").write_text("open('init.npy')\n" + MODULE.format(**GOOD))
    (tmp_path / "init.npy").write_text("")   # beside the file: found through __file__, not the current folder
    (tmp_path / "nothing.py").write_text("import gradlab\n")
    argv = [a.format(tmp=tmp_path) for a in argv]
    code, out, err = run_main(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gradlab: error: ")
    assert words.format(tmp=tmp_path) in err
    assert "Traceback" not in err


def test_argparse_mistakes_also_exit_2_with_one_line(capsys):
    for argv in (["check"], ["check", "attention", "--seed", "x"], ["check", "attention", "--timeout", "x"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error: " in err and "see gradlab check --help" in err
    assert main([]) == 2                                  # no command: help, and exit 2


# ---- exit 1: the student's module misbehaves -----------------------------------

@pytest.mark.parametrize("changes, words", [
    ({"forward": "raise RuntimeError('boom')"}, "forward raised RuntimeError at student.py:11: boom"),
    ({"forward": "y = x * self.gamma"}, "forward returned None; it must return an array of shape (2, 5, 12)"),
    ({"forward": "return x * self.gamma, x"}, "forward returned a tuple of 2 items; return only the array"),
    ({"forward": "return (x * self.gamma).tolist()"}, "forward returned a list of 2 items; it must return a NumPy array"),
    ({"forward": "return (x * self.gamma)[:, 1:]"}, "forward returned shape (2, 4, 12); expected (2, 5, 12)"),
    ({"forward": "return (x * self.gamma).astype(int)"}, "forward returned an array of dtype int64; it must be floating"),
    ({"forward": "return x * self.gamma + np.nan"}, "forward returned NaN at index (0, 0, 0)"),
    ({"backward": "return g * self.gamma, self.dgamma"}, "backward returned a tuple of 2 items"),
    ({"build": "LN(cfg.d_model)"}, "build(cfg) returned None; it must return the module object"),
    ({"build": "return object()"}, "build(cfg) returned object, which has no forward() method"),
], ids=["forward raises", "returns None", "tuple", "list", "wrong shape", "integer array", "NaN",
        "backward tuple", "build None", "no forward"])
def test_a_misbehaving_module_errors_its_check_and_exits_1(tmp_path, capsys, changes, words):
    path = student_file(tmp_path, **changes)
    code, out, err = run_main(capsys, "check", "layernorm", "--impl", path, "--checks", CHECKS, "--seed", "0")
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("ERROR  layernorm::smoke") and words in lines[0]
    assert lines[1].startswith(" skip  layernorm::gradient") and "precondition" in lines[1]
    assert "1 errors" in out and "replay with: gradlab check " in out and "--seed 0" in out
    assert "Traceback" not in out


def test_no_discoverable_parameters_fails_and_exits_1(tmp_path, capsys):
    path = student_file(tmp_path, backward="self.dgamma = self.dbeta = None; return g * self.gamma")
    code, out, _ = run_main(capsys, "check", "layernorm", "--impl", path, "--checks", CHECKS, "--seed", "0")
    assert code == 1 and "FAIL  layernorm::smoke" in out and "found no parameters with gradients" in out


def test_verbose_shows_the_students_traceback_only(tmp_path, capsys):
    path = student_file(tmp_path, forward="return self.helper(x)\n\n    def helper(self, x):\n        return x[99]")
    code, out, _ = run_main(capsys, "check", "layernorm", "--impl", path, "--checks", CHECKS, "--seed", "0", "-v")
    assert code == 1
    assert "raised IndexError at student.py:14" in out
    assert "Traceback (most recent call last)" in out and "in helper" in out and "return x[99]" in out
    assert "gradlab/" not in out.split("Traceback")[1]        # gradlab's own frames hidden


def test_verbose_usage_error_shows_the_cause(tmp_path, capsys):
    path = student_file(tmp_path, build="return LN(cfg.d_model)\nimport torchh")
    code, _, err = run_main(capsys, "check", "layernorm", "--impl", path, "-v")
    assert code == 2 and "Traceback" in err and "import torchh" in err


def test_exit_0_and_one_line_per_check(capsys):
    code, out, err = run_main(capsys, "check", "layernorm", "--impl", str(EXAMPLES / "student_modules.py"),
                              "--checks", CHECKS, "--seed", "0")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(" PASS  layernorm::smoke") and lines[1].startswith(" PASS  layernorm::gradient")
    assert "tolerance" in lines[1]                  # the key number is on the line
    assert lines[2].startswith("layernorm (") and "2 passed, 0 failed, 0 errors, 0 skipped; seed 0" in lines[2]


def test_a_gradient_bug_exits_1_and_names_the_parameter(capsys):
    code, out, _ = run_main(capsys, "check", "attention", "--impl", str(EXAMPLES / "broken_attention.py"),
                            "--checks", CHECKS, "--seed", "0")
    assert code == 1
    assert "FAIL  attention::gradient" in out and "gradient of 'out_weight' is wrong" in out


# ---- --json ---------------------------------------------------------------------

def test_json_for_one_kind(tmp_path, capsys):
    target = tmp_path / "result.json"
    code, _, _ = run_main(capsys, "check", "attention", "--impl", str(EXAMPLES / "broken_attention.py"),
                          "--checks", CHECKS, "--seed", "0", "--json", str(target))
    d = json.loads(target.read_text())
    assert code == 1 and d["kind"] == "attention" and d["passed"] is False
    assert d["impl"].endswith("broken_attention.py")
    assert [(c["name"], c["status"]) for c in d["checks"]] == [("smoke", "pass"), ("gradient", "fail")]
    for c in d["checks"]:
        assert {"name", "status", "message", "metrics"} <= set(c)
    assert d["checks"][1]["metrics"]["worst_tensor"] == "out_weight"






def test_json_with_infinite_numbers_is_strict_json(tmp_path, capsys):
    # an optimizer that writes inf into its parameters gave "max_error": Infinity, which JSON.parse rejects
    impl = tmp_path / "nan_adam.py"
    impl.write_text(nan_adam("np.inf"))
    target = tmp_path / "r.json"
    code, _, _ = run_main(capsys, "check", "adam", "--impl", str(impl), "--checks", "trajectory", "--seed", "0",
                          "--json", str(target))
    d = strict_json(target.read_text())
    trajectory = [c for c in d["checks"] if c["name"] == "trajectory"][0]
    assert code == 1 and trajectory["status"] == "fail"
    assert "Infinity" in json.dumps(trajectory)     # written as the string "Infinity", not dropped


def test_every_json_file_gradlab_writes_goes_through_the_strict_writer():
    # json.dump(s) writes NaN and Infinity as bare tokens; only records.dumps (allow_nan=False) may write a file
    allowed = {"gradlab/contract/records.py",       # dumps itself
               "gradlab/grading/isolate.py",        # the judging job's reply, read only by gradlab's parent
               "gradlab/frontends/testing.py",      # a record copied for pytest-xdist, never a file
               "gradlab/frontends/report/render.py",  # a value shown as text in the HTML report
               "gradlab/grading/rubric.py"}         # the rubric's digest
    root = Path(gradlab.__file__).parent.parent
    found = {str(p.relative_to(root)) for p in (root / "gradlab").rglob("*.py")
             if "json.dump" in p.read_text()}
    assert found <= allowed, found - allowed


def test_dumps_writes_non_finite_numbers_as_strings():
    import numpy as np
    from gradlab.contract.records import dumps
    text = dumps({"a": float("nan"), "b": [np.inf, -np.inf, np.float32("nan")], "c": np.array([1.0, np.inf]),
                  "d": np.int64(3)})
    assert strict_json(text) == {"a": "NaN", "b": ["Infinity", "-Infinity", "NaN"], "c": [1.0, "Infinity"], "d": 3}


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a full disk)")
def test_a_result_that_cannot_be_written_after_the_run_is_one_line_exit_2(capsys):
    # the probe before the run writes nothing, so a full disk showed as a traceback after the checks
    code, out, err = run_main(capsys, "check", "softmax", "--checks", "smoke", "--seed", "0", "--json", "/dev/full")
    assert code == 2 and "PASS" in out
    assert err.strip() == ("gradlab: error: --json /dev/full: could not be written after the checks ran (No space "
                           "left on device); free space there or choose another path")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")    # (the swallowing is the point)
def test_a_ctrl_c_python_swallows_still_ends_the_run_with_130(monkeypatch, capsys):
    # a KeyboardInterrupt raised inside a weakref (or gc) callback is printed as "Exception ignored in ..." and
    # lost: a Ctrl-C that landed there let the run go on and exit 0 (seen in gradlab's own Session._share)
    import signal
    import time
    import weakref
    from gradlab.frontends import cli

    class Thing:
        pass

    def command(args):
        thing = Thing()
        weakref.finalize(thing, lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.2)))
        del thing
        return 0
    monkeypatch.setattr(cli, "_command", command)
    assert cli.main(["list"]) == 130
    err = capsys.readouterr().err
    assert err.strip().endswith("gradlab: interrupted")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler     # put back


STARTING = """
import os, signal, sys, time
sys.argv = ["gradlab"]                     # as the gradlab script starts: gradlab loads, main() has not run
import gradlab
if sys.argv[1:] == []:
    os.kill(os.getpid(), signal.SIGINT)    # Ctrl-C while NumPy and gradlab load
    time.sleep(5)
    print("still running")
"""


def test_a_ctrl_c_while_gradlab_loads_is_one_line_and_130():
    # it was a traceback of whatever import Ctrl-C landed in (Python's KeyboardInterrupt, main() not yet running)
    run = subprocess.run([sys.executable, "-c", STARTING], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "gradlab: interrupted\n")


def test_main_puts_pythons_ctrl_c_back_once_it_runs(capsys):
    import signal
    previous = signal.signal(signal.SIGINT, gradlab._interrupted_while_starting)    # as the command line starts
    try:
        assert main(["list"]) == 0
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler       # a KeyboardInterrupt again
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_reader_that_leaves_does_not_change_the_exit_status_or_the_json(tmp_path):
    # `gradlab check ... | head -1`: a closed pipe ended the run with exit 0 (read as a pass) and no JSON
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", "check", "attention", "--impl",
                             str(EXAMPLES / "broken_attention.py"), "--seed", "0", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()                        # the reader leaves after the first line
    proc.wait(timeout=120)
    assert proc.returncode == 1 and json.loads(out.read_text())["passed"] is False
    assert b"Traceback" not in proc.stderr.read()


def test_json_for_check_all(tmp_path, capsys):
    target = tmp_path / "all.json"
    code, out, _ = run_main(capsys, "check", "all", "--impl", str(EXAMPLES / "student_modules.py"),
                            "--checks", CHECKS, "--seed", "1", "--json", str(target))
    d = json.loads(target.read_text())
    assert code == 0 and d["passed"] is True and set(d) >= {"results", "passed"}
    kinds = {r["kind"] for r in d["results"]}
    assert kinds == {"linear", "layernorm", "ffn", "embedding", "softmax", "cross_entropy", "adam"}
    for r in d["results"]:
        assert {"kind", "impl", "passed", "checks"} <= set(r) and r["checks"]
    summaries = [line for line in out.splitlines() if " passed, " in line]
    assert len(summaries) == len(kinds) + 1                      # a summary per kind, then the total
    assert summaries[-1].startswith(f"all {len(kinds)} kinds: ")


# ---- list and help ---------------------------------------------------------------

CONTRACT_KINDS = ["linear", "layernorm", "ffn", "attention", "embedding", "positional", "block", "lm",
                  "softmax", "cross_entropy", "sgd", "adam", "adamw", "schedule", "clip_grad_norm"]


def test_list_shows_every_kind_of_the_contract_with_its_checks(capsys):
    code, out, _ = run_main(capsys, "list")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    for kind in CONTRACT_KINDS:
        assert kind in rows, kind
        assert "smoke" in rows[kind]
    assert "gradient" in rows["attention"] and "gradient" not in rows["adam"]
    assert set(CONTRACT_KINDS) <= set(gradlab.KINDS)


def test_help_has_examples_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    for words in ("--impl", "--checks", "--set", "--seed", "--dtype", "--json", "--timeout",
                  "gradlab check attention --impl my_attention.py", "exit status"):
        assert words in out


# ---- the real command, in a subprocess (few: each costs an interpreter start) -------

def test_python_m_gradlab_help():
    code, out, _ = run_command("--help")
    assert code == 0 and "examples:" in out and "gradlab check all" in out


def test_a_hanging_forward_is_stopped_by_timeout(tmp_path):
    path = student_file(tmp_path, forward="while True:\n            pass")
    code, out, err = run_command("check", "layernorm", "--impl", path, "--timeout", "1", "--seed", "0",
                                 "--checks", CHECKS, timeout=30)
    assert code == 1, err
    assert "forward ran past 1 s, last seen at student.py:" in out and "--timeout" in out
    assert "Traceback" not in out + err


def test_done_when_student_files_outside_the_repo_from_another_cwd(tmp_path):
    """Issue 2's acceptance: files written only against CONTRACT.md, copied out of
    the repo, checked from another directory: 0, 1 naming the parameter, 2 with one line."""
    outside, elsewhere = tmp_path / "student", tmp_path / "elsewhere"
    outside.mkdir()
    elsewhere.mkdir()
    good = shutil.copy(EXAMPLES / "student_attention.py", outside / "my_attention.py")
    bad = shutil.copy(EXAMPLES / "broken_attention.py", outside / "my_broken_attention.py")

    code, out, err = run_command("check", "attention", "--impl", str(good), "--checks", CHECKS, cwd=elsewhere)
    assert code == 0, out + err
    code, out, err = run_command("check", "attention", "--impl", os.path.relpath(bad, elsewhere),
                                 "--checks", CHECKS, "--seed", "0", cwd=elsewhere)
    assert code == 1 and "gradient of 'out_weight' is wrong" in out, out + err
    code, out, err = run_command("check", "attention", "--impl", str(outside / "missing.py"), cwd=elsewhere)
    assert code == 2 and out == "" and err.count("\n") == 1 and "no such file" in err
    assert "Traceback" not in err


def test_student_prints_are_counted_not_shown_unless_verbose(tmp_path, capsys):
    path = tmp_path / "noisy.py"
    path.write_text(
        "import numpy as np\nimport gradlab\nprint('loading my module')\n\n"
        "def softmax(x, axis=-1):\n    print('softmax called')\n"
        "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)\n\n"
        "gradlab.register('softmax')(softmax)\n")
    code, out, _ = run_main(capsys, "check", "softmax", "--impl", str(path), "--seed", "0")
    assert code == 0
    assert "softmax called" not in out and "loading my module" not in out
    assert "your code printed" in out and "-v shows them" in out
    code, out, _ = run_main(capsys, "check", "softmax", "--impl", str(path), "--seed", "0", "-v")
    assert "softmax called" in out and "your code printed" not in out


@pytest.mark.parametrize("mode", ["--isolate", "--in-process"])
def test_a_syntax_error_in_a_helper_file_names_the_helper(tmp_path, capsys, mode):
    # it named the file given, at the helper's line: "main.py:3: syntax error" for an error in helpers.py:3
    (tmp_path / "helpers.py").write_text("import numpy as np\n\ndef f(x)\n    return x\n")
    (tmp_path / "main.py").write_text("import gradlab\nfrom helpers import f\n\n@gradlab.register('softmax')\n"
                                      "def softmax(x, axis=-1):\n    return f(x)\n")
    code, out, err = run_main(capsys, "check", "softmax", "--impl", str(tmp_path / "main.py"), mode)
    assert code == 2 and err.strip() == (f"gradlab: error: {tmp_path / 'helpers.py'}:3: syntax error: expected ':'; "
                                         "fix it and run again"), err


def test_verbose_shows_no_empty_worker_traceback_for_a_syntax_error(tmp_path):
    """-v adds the worker's traceback when there is one; a syntax error has none to add (it printed a
    bare 'RemoteTraceback: in gradlab's worker' line)."""
    student_file(tmp_path, "syntax.py", forward="return x *(")
    code, out, err = run_command("check", "layernorm", "--impl", str(tmp_path / "syntax.py"), "-v")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "syntax.py:11: syntax error" in err and "RemoteTraceback" not in err


def test_checks_given_twice_run_both(capsys):
    # argparse kept the last --checks alone, without a word
    assert main(["check", "layernorm", "--checks", "gradient", "--checks", "backward", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "layernorm::gradient" in out and "layernorm::backward" in out


# ---- what the student's text may not do to the terminal ------------------------------------------

FAKE_PASS = "\\x1b[2K\\x1b[1A\\x1b[32m PASS  layernorm::gradient\\x1b[0m\\x07\\x9b"


def test_control_characters_of_the_students_text_are_shown_escaped(tmp_path, capsys):
    # a forward raising with this message erased gradlab's ERROR line and printed a PASS of its own (records,
    # without -v); what the code prints (-v) and a file name in a usage error likewise
    impl = student_file(tmp_path, forward=f'print("out\\r{FAKE_PASS}\\tend"); raise ValueError("{FAKE_PASS}")')
    for verbose in ([], ["-v"]):
        code, out, err = run_main(capsys, "check", "layernorm", "--impl", impl, "--checks", "smoke", "--seed", "0",
                                  *verbose)
        assert code == 1
        assert not [c for c in out + err if ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f]
        assert ": \\x1b[2K\\x1b[1A\\x1b[32m PASS  layernorm::gradient\\x1b[0m\\x07\\x9b" in out
    assert "out\\r\\x1b[2K" in out and "\tend" in out     # (-v) a tab and newlines: the layout, kept
    code, out, err = run_main(capsys, "check", "layernorm", "--impl", str(tmp_path / "\x1b[31mred.py"))
    assert code == 2 and err.count("\n") == 1 and "\\x1b[31mred.py" in err and "\x1b" not in err


def test_a_carriage_return_or_a_bidi_override_in_an_exception_is_shown_escaped_not_obeyed(tmp_path, capsys):
    # str.splitlines() ends a line at \r: the message's first line stopped there (the rest dropped), and with -v
    # the traceback broke there; U+202E (right-to-left override) was printed as it is
    impl = student_file(tmp_path, forward='raise ValueError("bad thing\\rOVERWRITE and \\u202e reversed")')
    for verbose in ([], ["-v"]):
        code, out, err = run_main(capsys, "check", "layernorm", "--impl", impl, "--checks", "smoke", "--seed", "0",
                                  *verbose)
        assert code == 1 and "bad thing\\rOVERWRITE and \\u202e reversed" in out, out
        assert "\r" not in out and "\u202e" not in out


def test_the_json_and_the_report_keep_the_students_text_as_it_is(tmp_path, capsys):
    impl = student_file(tmp_path, forward=f'raise ValueError("<b>{FAKE_PASS}")')
    code, out, err = run_main(capsys, "check", "layernorm", "--impl", impl, "--checks", "smoke", "--seed", "0",
                              "--json", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html"))
    assert code == 1
    raw = "<b>\x1b[2K\x1b[1A\x1b[32m PASS  layernorm::gradient\x1b[0m\x07\x9b"
    assert raw in json.loads((tmp_path / "r.json").read_text())["checks"][0]["message"]
    html = (tmp_path / "r.html").read_text()
    assert "&lt;b&gt;" in html and "<b>\x1b" not in html


def test_the_status_line_escapes_what_it_shows_but_writes_its_own_erase(monkeypatch):
    import io
    from gradlab.frontends.status import ERASE, StatusLine
    from gradlab.frontends.terminal import Escaped
    raw = io.StringIO()
    raw.isatty = lambda: True
    line = StatusLine(Escaped(raw))
    line.show("[1/2 graded] \x1b[31mred: 10/10")
    assert raw.getvalue() == ERASE + "[1/2 graded] \\x1b[31mred: 10/10"


# ---- the worker's limits: one rule each, said as it is --------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["--wall-time", "-1"], "--wall-time -1: must be a number >= 0 (0 or inf: no limit)"),
    (["--max-output", "nan"], "--max-output nan: must be a number >= 0 (0 or inf: no limit)"),
    (["--max-memory", "-5"], "--max-memory -5: must be 0 (no limit) or at least 256 (MB"),
    (["--max-memory", "100"], "--max-memory 100: is less than NumPy alone needs; give at least 256 (MB), or 0"),
], ids=["wall-time negative", "max-output nan", "max-memory negative", "max-memory small"])
def test_a_bad_limit_says_the_rule_it_breaks(capsys, argv, words):
    code, out, err = run_main(capsys, "check", "softmax", "--checks", "smoke", *argv)
    assert code == 2 and err.count("\n") == 1 and words in err


def test_inf_is_no_limit_for_every_limit_as_for_timeout(capsys):
    # --timeout inf was no limit, --wall-time inf was refused as "must be a number >= 0", and
    # --max-memory inf by argparse ("invalid int value")
    from gradlab.frontends import cli
    args = cli.build_parser().parse_args(["check", "softmax", "--timeout", "inf", "--wall-time", "inf",
                                          "--max-output", "inf", "--max-memory", "inf"])
    limits = cli.run_limits(args)
    assert (limits.wall, limits.output_mb, limits.memory_mb) == (0, 0, 0)
    code, out, err = run_main(capsys, "check", "softmax", "--checks", "smoke", "--seed", "0", "--isolate",
                              "--timeout", "inf", "--wall-time", "inf", "--max-output", "inf", "--max-memory", "inf")
    assert code == 0, out + err


def test_a_wall_time_too_small_to_start_the_worker_is_said_so(tmp_path, capsys):
    # it said "last seen at gradlab:6" (or re's _parser.py), as if the student's code had run past the limit
    code, out, err = run_main(capsys, "check", "layernorm", "--wall-time", "0.001")
    assert code == 2 and err.count("\n") == 1
    assert "--wall-time 0.001: is too small to start the worker" in err and "last seen" not in err


def test_a_wall_time_that_runs_out_before_the_file_is_reached_is_not_blamed_on_it(tmp_path):
    # the limit ran out while the worker was still in gradlab's own set-up (above 0.1 s, on a busy machine)
    from gradlab.execution.remote import Session
    impl = student_file(tmp_path)
    session = Session(impl, None)
    session.tmp = str(tmp_path)
    dump = tmp_path / "last_seen.txt"
    gradlab_frame = f'  File "{Path(gradlab.__file__).parent}/execution/worker.py", line 6 in init\n'
    dump.write_text("Current thread 0x1 (most recent call first):\n"
                    '  File "/usr/lib/python3.11/re/_parser.py", line 169 in __getitem__\n' + gradlab_frame)
    init = {"op": "init", "impl": impl}
    assert session._still_starting(init)
    dump.write_text("Current thread 0x1 (most recent call first):\n"
                    f'  File "{impl}", line 3 in <module>\n' + gradlab_frame)
    assert not session._still_starting(init)
    assert not session._still_starting({"op": "call"})


# ---- help and small messages ----------------------------------------------------------------------------

def test_the_help_gives_every_default_and_exit_status(capsys):
    for argv, words in ((["check", "--help"], ["(default float64)", "(default 20; 0 or inf: none)",
                                                "130 interrupted (Ctrl-C), 143 / 129 stopped by SIGTERM / SIGHUP"]),
                        (["autograder", "--help"], ["wall time for one submission (default 300)"])):
        with pytest.raises(SystemExit):
            main(argv)
        shown = " ".join(capsys.readouterr().out.split())     # (argparse wraps the lines)
        for word in words:
            assert word in shown, (argv, word)
    from gradlab.frontends import grade_cli
    from gradlab.grading import job
    assert grade_cli.DEFAULT_WALL == job.DEFAULT_WALL


def test_an_unknown_option_points_at_its_commands_help(capsys):
    # it said "see gradlab --help", whose help does not list check's options
    for argv, command in ((["check", "attention", "--bogus"], "gradlab check"),
                          (["grade", "x", "--out", "o", "--bogus"], "gradlab grade"), (["--bogus"], "gradlab")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and err == f"{command}: error: unrecognized arguments: --bogus; see {command} --help\n"


def test_counts_agree_with_their_nouns():
    from gradlab.contract.numbers import counted
    assert (counted(1, "tensor"), counted(2, "tensor"), counted(0, "input array")) == \
        ("1 tensor", "2 tensors", "0 input arrays")
    result = gradlab.check("softmax", checks="input_mutation,determinism", seed=0)
    messages = {c.name: c.message for c in result.checks}
    assert messages["input_mutation"].startswith("1 input array unchanged")
    assert messages["determinism"].startswith("1 tensor identical")


@pytest.mark.parametrize("isolate", ["--isolate", "--in-process"])
def test_a_notebook_given_to_check_is_told_how_to_check_it(tmp_path, capsys, isolate):
    # it said "is not a Python file gradlab can import; give it a .py name"
    notebook = tmp_path / "lab.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    code, out, err = run_main(capsys, "check", "layernorm", "--impl", str(notebook), isolate)
    assert code == 2 and err.count("\n") == 1, err
    assert "lab.ipynb is a notebook" in err and "gradlab.check(KIND, impl=build)" in err and "nbconvert" in err
