"""`gradlab check KIND --explore N` and gradlab.strategies: configurations drawn
by Hypothesis, replayable from the seed; a bug that shows only at some sizes is
found and shrunk to the smallest configuration that shows it, printed as a
ready-to-paste command that replays it."""
import random
import shlex

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

import gradlab
from gradlab.contract.kinds import KINDS
from gradlab.execution import runner
from gradlab.execution.explore import explore
from gradlab.frontends.cli import main
from gradlab.strategies import configs, inputs


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_reference_kind_explores_clean(capsys):
    code, out, err = run_main(capsys, "check", "attention", "--explore", "12", "--seed", "0")
    assert code == 0, out
    assert "attention: every check passed on 12 configurations (batch_size 1..3" in out
    assert err == ""


@pytest.mark.parametrize("kind, varied", [("dropout", "dropout 0..0.5"), ("sinusoidal", "max_len "),
                                          ("mixed_precision", "loss_scale "), ("cross_attention", "num_heads ")])
def test_the_newer_kinds_explore_the_fields_their_checks_read(capsys, kind, varied):
    # they drew batch_size, seq_len and d_model alone (a sinusoidal table's max_len, dropout's p: never)
    code, out, err = run_main(capsys, "check", kind, "--explore", "6", "--seed", "0")
    assert code == 0 and varied in out, out


def test_every_kind_says_which_fields_it_reads():
    from gradlab.strategies import FIELDS_BY_KIND
    assert set(KINDS) - set(FIELDS_BY_KIND) == {"init"}      # (init reads no cfg field: shapes are its arguments)


def test_a_bug_only_at_one_head_is_found_and_shrunk_to_the_smallest_configuration(zoo, capsys):
    impl = zoo("explore_bad_attention_one_head_fast_path.py")
    assert gradlab.check("attention", impl=impl, seed=0).passed          # the default sizes (H = 2) miss it
    code, out, _ = run_main(capsys, "check", "attention", "--impl", impl, "--explore", "20", "--seed", "0")
    assert code == 1
    # one head, d_k = 2 (at d_k = 1 the missing scale is 1), T = 2 (one position's weight is 1 whatever the scale)
    assert "smallest configuration that fails the same way" in out
    assert "batch_size=1 seq_len=2 num_heads=1 d_model=2" in out
    assert " FAIL  attention::reference" in out
    replay = out.split("replay with: ")[1].strip()
    assert replay == (f"gradlab check attention --impl {impl} --set batch_size=1 --set seq_len=2 "
                      "--set num_heads=1 --set d_model=2 --seed 0")
    # the printed line is ready to paste: it fails the same check
    code, out, _ = run_main(capsys, *shlex.split(replay)[1:])
    assert code == 1 and " FAIL  attention::reference" in out


def test_a_bug_only_at_a_batch_of_one_or_a_single_token_is_found(zoo):
    impl = zoo("explore_bad_layernorm_squeeze.py")
    assert gradlab.check("layernorm", impl=impl, seed=0).passed
    found = explore("layernorm", 20, impl=impl, seed=0)
    assert not found.passed and found.failing == ("smoke",)
    assert found.config.get("batch_size") == 1 or found.config.get("seq_len") == 1, found.config
    assert "backward returned shape" in found.result["smoke"].message


def test_the_same_seed_draws_the_same_configurations():
    first = explore("softmax", 8, seed=7)
    again = explore("softmax", 8, seed=7)
    other = explore("softmax", 8, seed=8)
    assert first.passed and first.drawn == again.drawn and first.drawn != other.drawn


def test_fixed_options_are_kept_in_every_configuration():
    found = explore("attention", 6, seed=1, checks=["smoke"], fixed={"d_model": 12})
    assert found.passed and len(found.drawn) == 6      # six were drawn: the line below is not about an empty list
    assert all(c["d_model"] == 12 and 12 % c["num_heads"] == 0 for c in found.drawn)


@pytest.mark.parametrize("argv, words", [
    (["--explore", "0"], "--explore 0: must be an integer in [1, 10000]"),
    (["--explore", "-3"], "--explore -3"),
    (["--explore", "5", "--json", "r.json"], "--explore with --json: an exploration writes no JSON or report"),
    (["--explore", "5", "--report"], "--explore with --report"),
    (["--explore", "5", "--seed", "-1"], "--seed -1"),
    (["--explore", "5", "--set", "beta1=3"], "beta1=3: must be a number in [0, 1)"),
], ids=["zero", "negative", "with json", "with report", "bad seed", "bad fixed option"])
def test_bad_explore_options_are_usage_errors(capsys, argv, words):
    code, out, err = run_main(capsys, "check", "adam", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("kinds", ["all", "layernorm,softmax"])     # (the list was called an unknown kind)
def test_explore_takes_one_kind(capsys, kinds):
    code, out, err = run_main(capsys, "check", kinds, "--explore", "5")
    assert code == 2 and "--explore explores one kind at a time" in err


# ---- gradlab.strategies -------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), data=st.data())
def test_every_drawn_configuration_is_valid_and_small(kind, data):
    cfg = data.draw(configs(kind))
    full = runner.config_for(kind, 0, **cfg)        # raises UsageError if invalid
    names = [c.name for c in gradlab.contract.suite.applicable(KINDS[kind])]
    gradlab.contract.options.check_sizes(kind, full, names, set(cfg))


@settings(max_examples=30, deadline=None, database=None)
@given(kind=st.sampled_from(["attention", "block", "lm"]), data=st.data())
def test_d_model_is_drawn_as_heads_times_a_head_width(kind, data):
    # drawn valid by construction (d_k = d_model / num_heads up to max_head_width), not redrawn and rejected
    cfg = data.draw(configs(kind, max_heads=3, max_head_width=2))
    assert cfg["d_model"] % cfg["num_heads"] == 0 and cfg["d_model"] // cfg["num_heads"] <= 2, cfg


@pytest.mark.parametrize("condition, expected", [
    (lambda c: True, {"batch_size": 1, "seq_len": 1, "num_heads": 1, "d_model": 1, "dtype": "float64"}),
    (lambda c: c["num_heads"] == 3, {"num_heads": 3, "d_model": 3}),                      # d_k = 1
    (lambda c: c["dtype"] == "float32", {"dtype": "float32"}),
], ids=["the smallest", "d_k = 1 at three heads", "float32"])
def test_configs_shrink_to_the_edges(condition, expected):
    smallest = find(configs("attention"), condition, settings=settings(database=None), random=random.Random(0))
    assert expected.items() <= smallest.items()


def test_configs_reach_t_equal_max_len_for_positional():
    smallest = find(configs("positional"), lambda c: c["seq_len"] == 4, settings=settings(database=None),
                    random=random.Random(0))
    assert smallest["max_len"] == 4


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_inputs_match_the_kind_and_cfg(data):
    cfg = data.draw(configs("lm"))
    ids = data.draw(inputs("lm", cfg))
    assert ids.shape == (cfg["batch_size"], cfg["seq_len"]) and ids.min() >= 0 and ids.max() < cfg["vocab_size"]
    cfg = data.draw(configs("layernorm"))
    x = data.draw(inputs("layernorm", cfg))
    assert x.shape == (cfg["batch_size"], cfg["seq_len"], cfg["d_model"]) and x.dtype == cfg["dtype"]
    logits, targets = data.draw(inputs("cross_entropy", data.draw(configs("cross_entropy"))))
    assert logits.shape[:-1] == targets.shape


def test_gradlab_strategies_is_reachable_from_the_package():
    import gradlab as g
    assert g.strategies.configs is configs


def test_a_student_file_that_imports_a_reference_module_leaves_the_reference_whole(zoo):
    # the fast-path zoo file subclasses gradlab.modules.attention; loaded before the reference, it used
    # to leave the reference without 'attention' ("reference registers no 'attention' module")
    import subprocess
    import sys
    code = ("import gradlab; impl = " + repr(zoo("explore_bad_attention_one_head_fast_path.py")) + "\n"
            "assert gradlab.check('attention', impl=impl, checks=['smoke'], seed=0).passed\n"
            "assert gradlab.check('attention', checks=['reference'], seed=0).passed\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_explore_stops_the_worker_it_started(zoo, monkeypatch):
    """Called without `loaded` (the Python API), explore opens the file in a worker of its own and
    stops it when it returns, not only at exit."""
    from gradlab.execution import loader, remote
    monkeypatch.setattr(loader, "ISOLATE_BY_DEFAULT", True)    # as outside the tests: a file runs in a worker
    before = {id(s) for s in list(remote._live) if s.proc is not None}
    found = explore("softmax", 2, impl=zoo("red_fn_ok_softmax_float32.py"), seed=0, checks=["smoke"])
    assert found.passed
    assert [s for s in list(remote._live) if s.proc is not None and id(s) not in before] == []
