"""Options a careless user could give (CONTRACT §4): each one is refused before
any check runs, as a usage error that says the value, the problem and the fix in
one line (exit 2), never blamed on the module, never an "internal error", never a
traceback after the checks ran. One table, run through the CLI in process; a
sample through the Python API and the pytest plugin, which share the rules."""
import dataclasses
import math

import pytest

import gradlab
from gradlab.contract import options
from gradlab.contract.config import Config
from gradlab.frontends.cli import main

pytest_plugins = ["pytester"]

NOT_NUMBERS = ["nan", "inf", "-inf", "abc", ""]

# (kind checked, field, bad values, words the message must hold)
FIELD_CASES = [
    ("layernorm", "batch_size", ["0", "-1", "1.5", *NOT_NUMBERS], "batch_size="),
    ("layernorm", "seq_len", ["0", "-3", "2.5", *NOT_NUMBERS], "seq_len="),
    ("layernorm", "d_model", ["0", "-12", "12.5", *NOT_NUMBERS], "d_model="),
    ("attention", "num_heads", ["0", "-2", "5", "24", "1.5", *NOT_NUMBERS], "num_heads"),
    ("ffn", "d_ff", ["0", "-20", "20.5", *NOT_NUMBERS], "d_ff="),
    ("embedding", "vocab_size", ["0", "1", "-11", "11.5", *NOT_NUMBERS], "vocab_size="),
    ("positional", "max_len", ["0", "4", "-8", "8.5", *NOT_NUMBERS], "max_len"),
    ("lm", "n_layers", ["0", "-2", "1.5", *NOT_NUMBERS], "n_layers="),
    ("layernorm", "eps", ["0", "-1e-5", "2", "1e-400", *NOT_NUMBERS], "eps="),
    ("adam", "lr", ["0", "-0.1", "1e-12", "1000", *NOT_NUMBERS], "lr="),
    ("adam", "beta1", ["-0.1", "1", "2", *NOT_NUMBERS], "beta1="),
    ("adam", "beta2", ["-1", "1", "1.5", *NOT_NUMBERS], "beta2="),
    ("adamw", "weight_decay", ["-0.01", *NOT_NUMBERS], "weight_decay="),
    ("sgd", "momentum", ["-0.5", "1", "1.5", *NOT_NUMBERS], "momentum="),
    ("clip_grad_norm", "max_norm", ["0", "-1", "1e-300", "1e300", *NOT_NUMBERS], "max_norm="),
    ("schedule", "warmup_steps", ["0", "-4", "2.5", "1000000000", *NOT_NUMBERS], "warmup_steps="),
    ("ffn", "activation", ["sigmoid", "GELU", "tanh", ""], "activation="),
    ("layernorm", "dtype", ["int32", "fp32", "complex128", "bool", "", "float128"], "dtype="),
]

# (id, argv after `gradlab check`, words)
FLAG_CASES = [
    ("seed negative", ["layernorm", "--seed", "-5"], "--seed -5: must be an integer in [0, 4294967295]"),
    ("seed 2**32", ["layernorm", "--seed", str(2**32)], "--seed 4294967296"),
    ("seed via --set", ["layernorm", "--set", "seed=5"], "--set seed=5: the seed is not a cfg field to set; "
                                                        "use --seed 5"),
    ("timeout negative", ["layernorm", "--timeout", "-1"], "--timeout -1: must be a number in [0.1, 1000000]"),
    ("timeout nan", ["layernorm", "--timeout", "nan"], "--timeout nan: must be finite"),
    ("timeout -inf", ["layernorm", "--timeout=-inf"], "--timeout -inf"),
    ("timeout huge", ["layernorm", "--timeout", "1e12"], "--timeout 1000000000000"),
    ("json empty", ["softmax", "--json", ""], "--json '': names no file; e.g. --json result.json"),
    ("json blank", ["softmax", "--json", "  "], "--json '  ': names no file"),
    ("json folder", ["softmax", "--json", "{tmp}"], "--json {tmp}: is a folder; name a file in it, "
                                                    "e.g. --json {tmp}/result.json"),
    ("json unwritable", ["softmax", "--json", "/proc/gradlab.json"], "--json /proc/gradlab.json: cannot be written"),
    ("json under a file", ["softmax", "--json", "{tmp}/a_file/r.json"], "a_file is a file, not a folder"),
    ("json missing folder", ["softmax", "--json", "{tmp}/no/such/r.json"], "the folder {tmp}/no/such does not exist"),
    ("json read-only file", ["softmax", "--json", "/proc/version"], "--json /proc/version: cannot be written"),
    ("report empty", ["softmax", "--report", ""], "--report '': names no file"),
    ("report folder", ["softmax", "--report", "{tmp}"], "--report {tmp}: is a folder; name a file in it, "
                                                        "e.g. --report {tmp}/softmax.html"),
    ("report unwritable", ["softmax", "--report", "/proc/r.html"], "--report /proc/r.html: cannot be written"),
    ("report under a file", ["softmax", "--report", "{tmp}/a_file/r.html"], "a_file is a file, not a folder"),
    # it made the folders (CONTRACT §4 treats --json and --report alike)
    ("report missing folder", ["softmax", "--report", "{tmp}/no/such/r.html"],
     "--report {tmp}/no/such/r.html: the folder {tmp}/no/such does not exist; create it or choose another path"),
    ("json and report one file", ["softmax", "--json", "{tmp}/same", "--report", "{tmp}/same"],
     "both write the same file"),
    # the student's own file: it was overwritten with the JSON, exit 0
    ("json is the impl", ["layernorm", "--impl", "{tmp}/a_file", "--json", "{tmp}/a_file"],
     "it is the file being checked (--impl), which it would overwrite"),
    ("report is the impl", ["layernorm", "--impl", "{tmp}/a_file", "--report", "{tmp}/a_file"],
     "it is the file being checked"),
    # '' and ',' ran every kind (gradlab.check('') checked linear); 'all' is asked for by name
    ("kind empty", ["", "--checks", "smoke"], "kind '': names no kind"),
    ("json dash", ["softmax", "--json", "-"], "--json -: would be a file named '-'"),
    # the last one was kept without a word
    ("set twice", ["layernorm", "--set", "d_model=8", "--set", "d_model=16"], "d_model is set twice"),
    ("dtype twice", ["layernorm", "--dtype", "float16", "--set", "dtype=float32"], "the dtype is given twice"),
    ("impl missing, relative", ["softmax", "--impl", "no_such_student.py"],
     "no such file: no_such_student.py (looked for "),
    ("kind comma", [",", "--checks", "smoke"], "kind ',': names no kind"),
    ("kind all with others", ["all,attention"], "'all' already means every kind"),
    ("dtype flag float128", ["layernorm", "--dtype", "float128"], "dtype='float128': is not supported"),
    ("dtype flag int", ["layernorm", "--dtype", "int64"], "is not a floating type"),
    ("set without =", ["layernorm", "--set", "d_model"], "--set d_model: write it as FIELD=VALUE"),
    ("set without name", ["layernorm", "--set", "=5"], "--set =5: write it as FIELD=VALUE"),
    ("set unknown field", ["layernorm", "--set", "dmodel=8"], "unknown config field 'dmodel'; did you mean 'd_model'?"),
    ("set extra", ["layernorm", "--set", "extra=1"], "unknown config field 'extra'"),
    ("set d_model not multiple of heads", ["attention", "--set", "d_model=7"],
     "d_model=7: is not divisible by num_heads=2"),
    ("set heads not dividing d_model", ["attention", "--set", "num_heads=5"], "is not divisible by num_heads=5"),
    ("set seq_len above max_len", ["attention", "--set", "seq_len=20"], "seq_len=20: is larger than max_len=8"),
    ("set eps below float32's range", ["layernorm", "--dtype", "float32", "--set", "eps=1e-40"],
     "eps=1e-40: rounds to 0 in float32"),
    ("huge d_model for attention", ["attention", "--set", "d_model=100000"],
     "d_model=100000: too large for attention"),
    ("huge batch for layernorm", ["layernorm", "--set", "batch_size=1000000"],
     "batch_size=1000000: too large for layernorm"),
    ("huge vocab for lm", ["lm", "--set", "vocab_size=10000000"], "vocab_size=10000000: too large for lm"),
    ("huge seq_len for attention", ["attention", "--set", "seq_len=5000", "--set", "max_len=5000"],
     "too large for attention"),
    ("huge n_layers", ["lm", "--set", "n_layers=100000"], "n_layers=100000: too large for lm"),
    ("huge max_len for the overfit LM", ["attention", "--set", "max_len=1000000000"],
     "max_len=1000000000: too large for attention"),
    ("huge sizes, gradient only", ["attention", "--checks", "gradient", "--set", "d_model=100000"],
     "d_model=100000: too large for attention"),
    ("huge sizes for check all", ["all", "--set", "batch_size=100000"], "batch_size=100000: too large"),
    ("d_model=inf", ["attention", "--set", "d_model=inf"], "d_model=inf: must be finite"),
    ("d_model=1e300", ["attention", "--set", "d_model=1e300"], "too large for attention"),
    ("unknown check", ["layernorm", "--checks", "gradiant"], "unknown check 'gradiant'"),
    # it ran smoke alone, skipped the check, and exited 0
    ("check that does not apply", ["attention", "--checks", "trajectory"],
     "--checks trajectory: does not apply to attention, so nothing would be judged (trajectory checks sgd, adam"),
    ("checks empty", ["layernorm", "--checks", ""], "--checks '': names no check"),
    ("checks only commas", ["layernorm", "--checks", ",,"], "--checks ',,': names no check"),
    ("impl empty", ["layernorm", "--impl", ""], "--impl '': names no file or module"),
    ("timeout a nanosecond", ["layernorm", "--timeout", "1e-9"], "--timeout 1e-09: must be a number in [0.1, 1000000]"),
    ("unknown kind", ["atention"], "unknown kind 'atention'"),
]

# argparse's own mistakes: exit 2 and one line too
ARGPARSE_CASES = [
    ("seed not an integer", ["layernorm", "--seed", "1.5"], "argument --seed: invalid int value"),
    ("seed text", ["layernorm", "--seed", "abc"], "argument --seed: invalid int value"),
    ("timeout text", ["layernorm", "--timeout", "soon"], "argument --timeout: invalid float value"),
    ("no kind", [], "the following arguments are required: kind"),
    ("json without a path", ["layernorm", "--json"], "argument --json: expected one argument"),
    ("set without a value", ["layernorm", "--set"], "argument --set: expected one argument"),
]


def field_cases():
    for kind, name, values, words in FIELD_CASES:
        for value in values:
            yield pytest.param(kind, ["--set", f"{name}={value}"], words, id=f"{name}={value or 'empty'}")


def run(capsys, argv, tmp_path):
    (tmp_path / "a_file").write_text("")
    argv = ["check", *[a.format(tmp=tmp_path) for a in argv]]
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code, out, err, words):
    assert code == 2, (out, err)
    assert out == "", out                         # nothing ran: no check printed a line
    assert err.count("\n") == 1, err              # one line
    assert "Traceback" not in err and "internal error" not in err
    assert words in err, err


@pytest.mark.parametrize("kind, argv, words", list(field_cases()))
def test_bad_cfg_fields_are_refused_in_one_line(capsys, tmp_path, kind, argv, words):
    code, out, err = run(capsys, [kind, *argv], tmp_path)
    assert_refused(code, out, err, words)
    assert err.startswith("gradlab: error: ") and "; " in err   # the problem; then the fix


@pytest.mark.parametrize("argv, words", [pytest.param(a, w, id=i) for i, a, w in FLAG_CASES])
def test_bad_flags_are_refused_before_any_check_runs(capsys, tmp_path, argv, words):
    code, out, err = run(capsys, argv, tmp_path)
    assert_refused(code, out, err, words.format(tmp=tmp_path))
    assert not (tmp_path / "same").exists()


@pytest.mark.parametrize("argv, words", [pytest.param(a, w, id=i) for i, a, w in ARGPARSE_CASES])
def test_argparse_mistakes_are_one_line_too(capsys, tmp_path, argv, words):
    code, out, err = run(capsys, argv, tmp_path)
    assert_refused(code, out, err, words)


def test_the_table_has_enough_bad_inputs():
    n = sum(len(v) for *_, v, _ in FIELD_CASES) + len(FLAG_CASES) + len(ARGPARSE_CASES)
    assert n >= 150, n


def test_the_students_file_is_not_imported_when_an_option_is_bad(capsys, tmp_path):
    marker = tmp_path / "imported"
    student = tmp_path / "student.py"
    student.write_text(f"open({str(marker)!r}, 'w').close()\nimport gradlab\n"
                       "gradlab.register('layernorm')(lambda cfg: None)\n")
    code, out, err = run(capsys, ["layernorm", "--impl", str(student), "--set", "beta1=2"], tmp_path)
    assert_refused(code, out, err, "beta1=2: must be a number in [0, 1)")
    assert not marker.exists()
    # sizes too, when the kind is named (they were judged after the import; with `all` the file says its kinds)
    code, out, err = run(capsys, ["layernorm", "--impl", str(student), "--set", "d_model=100000"], tmp_path)
    assert_refused(code, out, err, "d_model=100000: too large for layernorm")
    assert not marker.exists()


def test_float16_refuses_an_eps_only_for_the_kinds_it_checks(capsys, tmp_path):
    # adam's default eps, 1e-8, is 0 in float16: `check adam --dtype float16` and `check all --dtype float16` were
    # refused (exit 2), though float16 skips an optimizer with the reason and checks only module kinds
    code, out, err = run(capsys, ["adam", "--dtype", "float16", "--seed", "0"], tmp_path)
    assert code == 1 and "nothing was judged" in out and "applies to module kinds" in out, out + err
    code, out, err = run(capsys, ["layernorm", "--dtype", "float16", "--set", "eps=1e-9"], tmp_path)
    assert_refused(code, out, err, "eps=1e-09: rounds to 0 in float16")
    # (a file of function kinds alone: it "registers no kind gradlab knows", which was wrong)
    only = tmp_path / "only_softmax.py"
    only.write_text("import numpy as np\nimport gradlab\n\n@gradlab.register('softmax')\ndef softmax(x, axis=-1):\n"
                    "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)\n")
    code, out, err = run(capsys, ["all", "--impl", str(only), "--dtype", "float16"], tmp_path)
    assert_refused(code, out, err, "only_softmax.py registers only softmax, checked in float32 or float64")
    assert "--dtype float16 checks module kinds (and mixed_precision)" in err
    result = gradlab.check("all", dtype="float16", seed=0)
    assert result.passed and {r.kind for r in result.results} == {k for k, spec in gradlab.KINDS.items()
                                                                  if spec.in_float16}


def test_every_cfg_field_has_a_rule_with_a_reason():
    names = {f.name for f in dataclasses.fields(Config)} - {"extra", "dtype"}
    assert names == set(options.FIELDS)
    for name, rule in options.FIELDS.items():
        assert rule.why and rule.example is not None, name
        assert rule.check(name, rule.example, "") == rule.example   # the example given is itself valid


@pytest.mark.parametrize("value, words", [
    (0, "no limit"), (math.inf, "no limit"), (20, None), (0.5, None), (options.TIMEOUT_MAX, None)])
def test_timeouts_that_are_accepted(value, words):
    got = options.check_timeout(value)
    assert got == (0 if words else value)


@pytest.mark.parametrize("overrides, words", [
    ({"beta1": 2}, "beta1=2: must be a number in [0, 1)"),
    ({"lr": math.inf}, "lr=inf: must be finite"),
    ({"momentum": math.nan}, "momentum=nan: must be finite"),
    ({"d_model": 12.5}, "d_model=12.5: must be a whole number"),
    ({"d_model": True}, "d_model=True: must be an integer, not bool"),
    ({"batch_size": "2x"}, "batch_size=2x: batch_size takes int values; e.g. batch_size=2"),
    ({"activation": "sigmoid"}, "activation='sigmoid': must be one of 'gelu', 'relu'"),
    ({"dtype": "longdouble"}, "is not supported; use float16, float32 or float64"),
    ({"loss_scaling": "banana"}, "loss_scaling='banana': must be one of 'dynamic', 'static'"),
    ({"seed": -5}, "seed=-5: must be an integer in [0, 4294967295]"),          # (Python's words, not --seed -5)
    ({"timeout": math.nan}, "timeout=nan: must be finite"),
    ({"timeout": -1}, "timeout=-1: "),
    ({"d_model": 100000}, "d_model=100000: too large for attention"),
    ({"checks": 5}, "checks=5: must be check names"),
    ({"checks": []}, "--checks []: names no check"),
], ids=lambda v: ",".join(f"{k}={v[k]}" for k in v) if isinstance(v, dict) else None)
def test_the_python_api_raises_usage_error(overrides, words):
    with pytest.raises(gradlab.UsageError) as info:
        gradlab.check("attention", **{"checks": ["smoke"], **overrides})
    assert words in str(info.value)


def test_integral_numbers_are_accepted_as_sizes():
    cfg = Config(d_model=12.0, batch_size=3)
    assert cfg.d_model == 12 and isinstance(cfg.d_model, int)
    import numpy as np
    assert Config(d_model=np.int64(12)).d_model == 12


def test_sizes_are_capped_by_the_checks_chosen():
    # the probes of batch_independence make B forwards: a large batch fits gradient alone, not every check
    assert gradlab.check("layernorm", checks=["smoke"], seed=0, batch_size=2000).passed
    with pytest.raises(gradlab.UsageError, match=r"batch_size=2000: too large for layernorm: .* about \d+"):
        gradlab.check("layernorm", seed=0, batch_size=2000)


def test_the_size_message_names_a_size_that_fits():
    with pytest.raises(gradlab.UsageError) as info:
        gradlab.check("attention", seed=0, d_model=100000)
    message = str(info.value)
    assert "480 GB in float64" in message
    fits = int(message.split("e.g. d_model=")[1].split(",")[0])
    assert fits % 2 == 0 and fits >= 12
    seconds, _ = options.estimate("attention", {**{k: getattr(Config(), k) for k in options.SIZES},
                                                "d_model": fits},
                                  [c.name for c in gradlab.contract.suite.applicable(gradlab.KINDS["attention"])])
    assert seconds <= options.MAX_SECONDS


# ---- the pytest plugin and parametrize_with_checks share the rules -------------------

@pytest.mark.parametrize("args, words", [
    (["--gradlab-seed", "-5"], "--gradlab-seed -5: must be an integer in [0, 4294967295]"),
    (["--gradlab-report", "{tmp}"], "--gradlab-report {tmp}: is a folder"),
    (["--gradlab-report", ""], "--gradlab-report '': names no file"),
    (["--gradlab-report", "/proc/r.html"], "--gradlab-report /proc/r.html: cannot be written"),
    (["--gradlab-report", "{tmp}/no/such/r.html"], "the folder {tmp}/no/such does not exist"),
], ids=["seed", "report folder", "report empty", "report unwritable", "report missing folder"])
def test_the_plugin_refuses_bad_options_as_usage_errors(pytester, args, words):
    tmp = str(pytester.path)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--gradlab-impl", "reference",
                                          "--gradlab-kind", "softmax", *[a.format(tmp=tmp) for a in args])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert words.format(tmp=tmp) in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_parametrize_with_checks_refuses_bad_overrides():
    from gradlab.testing import parametrize_with_checks
    with pytest.raises(pytest.UsageError, match=r"beta2=-1: must be a number in \[0, 1\)"):
        parametrize_with_checks(None, kinds="adam", beta2=-1)
    with pytest.raises(pytest.UsageError, match="too large for layernorm"):
        parametrize_with_checks(None, kinds="layernorm", batch_size=10**6)


def test_a_size_refused_after_the_worker_started_stops_that_worker(zoo):
    """Sizes are judged once the file's kinds are known, so its worker is already running: the
    refusal stops it (not only at exit), as a refused kind does."""
    from gradlab.execution import remote
    from gradlab.execution.plan import Plan
    before = {id(s) for s in list(remote._live) if s.proc is not None}
    with pytest.raises(gradlab.UsageError, match="batch_size=1000000: too large for attention"):
        Plan(zoo("red_mod_attention_ok_einsum.py"), kinds=None, isolate=True,
             overrides={"batch_size": 10**6, "d_model": 512, "num_heads": 8})
    assert [s for s in list(remote._live) if s.proc is not None and id(s) not in before] == []


def test_the_fast_path_accepts_only_what_the_full_check_returns_unchanged():
    import numpy as np
    from gradlab.contract.options import FIELDS
    samples = [0, 1, 2, -1, 10**20, 0.0, 1.0, 0.5, -0.5, 1e-9, 1e-5, 0.9, 0.999, 100.0, 1e6, 65504.0, 2**32 - 1,
               2**32, float("nan"), float("inf"), True, False, np.int64(3), np.float32(0.5), "gelu", "relu", "dynamic",
               "static", "GELU", "", None]
    for name, rule in FIELDS.items():
        for value in samples + [rule.example, rule.low, rule.high]:
            if value is None:
                continue
            try:
                full = rule.check(name, value, "fix")
            except Exception:
                full = "refused"
            if rule.fits(value):      # the fast path: exactly what the full check returns, same type
                assert full != "refused" and type(full) is type(value) and full == value, (name, value, full)
