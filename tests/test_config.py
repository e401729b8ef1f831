"""The read-only cfg (CONTRACT §1): the fields it promises, overrides with
errors that name the field, and each kind's own defaults."""
import dataclasses

import numpy as np
import pytest

import gradlab
from gradlab.contract.config import Config, make_config
from gradlab.contract.errors import UsageError
from gradlab.execution.runner import config_for

PROMISED = ("batch_size seq_len d_model num_heads d_ff vocab_size max_len n_layers eps seed dtype "
            "lr beta1 beta2 weight_decay momentum max_norm warmup_steps").split()


def test_cfg_has_every_promised_field_with_small_defaults():
    cfg = Config()
    for name in PROMISED:
        assert hasattr(cfg, name), name
    assert cfg.batch_size >= 2 and cfg.num_heads >= 2 and 1 < cfg.seq_len < cfg.max_len
    assert cfg.d_model <= 16 and cfg.d_model % cfg.num_heads == 0 and cfg.d_ff != cfg.d_model


def test_cfg_is_read_only():
    cfg = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 64
    assert cfg["d_model"] == cfg.d_model == cfg.get("d_model")   # dict-style reads work
    assert cfg.get("no_such_field", 7) == 7


def test_a_build_that_writes_cfg_gets_an_error_naming_its_line():
    def build(cfg):
        cfg.d_model = 64
        return None

    result = gradlab.check("layernorm", impl=build, checks=["smoke"], seed=0)
    record = result["smoke"]
    assert record.status == "error"
    assert "build(cfg) raised FrozenInstanceError at test_config.py:" in record.message


def test_overrides_reach_the_module(zoo):
    seen = []
    student = gradlab.execution.loader.load(zoo("shapes_ok_layernorm_renamed.py")).get("layernorm").target

    def build(cfg):
        seen.append((cfg.d_model, cfg.seq_len, cfg.dtype))
        return student(cfg)

    result = gradlab.check("layernorm", impl=build, checks=["smoke"], seed=3, d_model=6, seq_len=3,
                           dtype="float32")
    assert result.passed
    assert set(seen) == {(6, 3, "float32")}
    assert result.config["d_model"] == 6 and result.config["seed"] == 3


def test_text_overrides_are_parsed_to_the_field_type():
    cfg = make_config(d_model="16", eps="1e-6", dtype="float32", n_layers="3.0")
    assert (cfg.d_model, cfg.eps, cfg.dtype, cfg.n_layers) == (16, 1e-6, "float32", 3)
    assert make_config(dtype=np.float32).dtype == "float32"


@pytest.mark.parametrize("overrides, words", [
    ({"d_model": "abc"}, "--set d_model=abc: d_model takes int values; e.g. --set d_model=12"),
    ({"d_model": "12.5"}, "d_model=12.5: must be a whole number; e.g. --set d_model=12"),
    ({"eps": "small"}, "eps takes float values"),
    ({"dmodel": 8}, "unknown config field 'dmodel'; did you mean 'd_model'?"),
    ({"extra": 1}, "unknown config field 'extra'"),
    ({"d_model": 7}, "d_model=7: is not divisible by num_heads=2"),
    ({"d_model": 0}, "d_model=0: must be an integer of at least 1"),
    ({"seq_len": 20}, r"seq_len=20: is larger than max_len=8 .*; raise max_len too \(--set max_len=20\)"),
    ({"dtype": "int32"}, "dtype='int32': is not a floating type; use float16, float32 or float64"),
    ({"dtype": "longdouble"}, "is not supported; use float16, float32 or float64"),
    ({"dtype": "fp32"}, "dtype='fp32': is not a NumPy dtype"),
    ({"eps": -1}, r"eps=-1: must be a number in \(0, 1\]"),
    ({"lr": 0}, r"lr=0: must be a number in \[1e-08, 100\]"),
], ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_bad_overrides_say_what_to_fix(overrides, words):
    with pytest.raises(UsageError, match=words):
        make_config(**overrides)


def test_each_kind_has_its_own_defaults():
    assert config_for("adam").eps == 1e-8          # Adam's eps
    assert config_for("adamw").eps == 1e-8
    assert config_for("layernorm").eps == 1e-5     # LayerNorm's eps
    assert config_for("block").eps == 1e-5
    assert config_for("sgd").lr == 0.1 and config_for("adam").weight_decay == 0.0
    assert config_for("adamw").weight_decay > 0    # AdamW's decay must be exercised


def test_user_overrides_beat_kind_defaults_and_seed_is_recorded():
    cfg = config_for("adam", seed=5, eps=1e-6, lr="0.5")
    assert (cfg.eps, cfg.lr, cfg.seed) == (1e-6, 0.5, 5)


def test_the_optimizer_gets_its_eps():
    seen = []

    def build(cfg):
        seen.append(cfg.eps)
        return gradlab.execution.loader.reference().get("adam").target(cfg)

    gradlab.check("adam", impl=build, checks=["smoke"], seed=0)
    assert seen and set(seen) == {1e-8}


@pytest.mark.parametrize("changes", [{"d_model": 7}, {"lr": 0}, {"num_heads": 5}, {"dtype": "int8"},
                                     {"seq_len": 9}, {"eps": 1e-50, "dtype": "float32"}])
def test_replace_refuses_what_a_new_config_refuses(changes):
    # replace checks only the fields it changes (and the relations): the same words as Config(**fields)
    with pytest.raises(UsageError) as direct:
        Config(**{**{f.name: getattr(Config(), f.name) for f in dataclasses.fields(Config)}, **changes})
    with pytest.raises(UsageError) as replaced:
        Config().replace(**changes)
    assert str(replaced.value) == str(direct.value)


def test_replace_converts_like_a_new_config_and_never_shares_extra():
    base = Config(extra={"d_out": 3})
    cfg = base.replace(d_model=np.int64(16), dtype=np.float32)
    assert cfg == Config(d_model=16, dtype="float32") and type(cfg.d_model) is int and cfg.dtype == "float32"
    assert cfg.extra == {"d_out": 3} and cfg.extra is not base.extra
    assert make_config().extra is not make_config().extra    # a module writing into one cfg's extra reaches no other
    with pytest.raises(TypeError, match="no field 'dmodel'"):
        base.replace(dmodel=8)
