"""--dtype float16 for module kinds: gradients compared with a float64 copy of the
student's module, tolerances that fit float16 (README: float16), overflow and
underflow named, and no false alarms on correct modules."""
import pytest

from gradlab.contract import suite
from gradlab.contract.kinds import KINDS
from gradlab.frontends import cli

CORRECT = [(None, "linear"), (None, "layernorm"), ("red_mod_attention_ok_einsum.py", "attention"),
           ("causality_ok_attention.py", "attention"), (None, "block"), ("red_mod_lm_ok_tied.py", "lm")]


@pytest.mark.parametrize("impl, kind", CORRECT)
def test_correct_modules_pass_gradient_and_backward_in_float16(zoo, run, all_pass, impl, kind):
    for seed in range(20):
        result = run(kind, impl and zoo(impl), checks=["gradient", "backward"], seed=seed, dtype="float16")
        all_pass(result, seed)
        assert "float64 copy of your float16 module" in result["gradient"].message


@pytest.mark.parametrize("kind", ["linear", "ffn", "attention", "embedding", "lm"])
def test_reference_passes_every_check_in_float16(run, kind):
    for seed in range(3):
        result = run(kind, seed=seed, dtype="float16")
        assert result.passed, (seed, [(c.name, c.message) for c in result.checks if not c.ok])


def test_a_3x_weight_gradient_fails_in_float16(zoo, run):
    for seed in range(10):
        record = run("linear", zoo("fp16_bad_linear_grad_3x.py"), checks=["gradient"], seed=seed,
                     dtype="float16")["gradient"]
        assert record.status == "fail", (seed, record.message)
        assert "'weight'" in record.message and "3 x the right one" in record.message


def test_exp_overflow_is_named(zoo, run):
    record = run("attention", zoo("fp16_bad_attention_naive_softmax.py"), checks=["finite"], seed=1,
                 dtype="float16")["finite"]
    assert record.status == "fail"
    for words in ("float16", "exp above 11.09", "subtract the row maximum", "overflow encountered in exp"):
        assert words in record.message, (words, record.message)
    # the same module in float64 at ordinary inputs is fine: float16 is what breaks it
    assert run("attention", zoo("fp16_bad_attention_naive_softmax.py"), checks=["gradient", "reference"],
               seed=1).passed


def test_variance_underflow_is_named(zoo, run):
    impl = zoo("fp16_bad_layernorm_pow_variance.py")
    record = run("layernorm", impl, checks=["finite"], seed=2, dtype="float16")["finite"]
    assert record.status == "fail"
    for words in ("scaled by 0.001 in float16", "underflow", "(var + eps) ** -1.5", "overflow encountered in power"):
        assert words in record.message, (words, record.message)
    assert run("layernorm", impl, seed=2).passed                        # right in float64
    assert run("layernorm", impl, seed=2, dtype="float32").passed       # and in float32


def test_float16_is_for_module_kinds(run):
    result = run("cross_entropy", dtype="float16")
    # every check that applies is there (an empty list would pass the line below) and skipped, saying why
    assert [c.name for c in result.checks] == [c.name for c in suite.applicable(KINDS["cross_entropy"])]
    assert all(c.status == "skip" and "module kinds" in c.message for c in result.checks)


def test_cli_accepts_float16(capsys):
    assert cli.main(["check", "layernorm", "--dtype", "float16", "--checks", "gradient", "--seed", "1"]) == 0
    assert "float64 copy of your float16 module" in capsys.readouterr().out


def test_a_float64_module_given_float16_input_is_still_judged(zoo, run):
    # the module ignores cfg.dtype and computes in float64; a step of 1e-6 on the float16 x would round away
    # (nothing tested, a vacuous pass): the numerics perturb a float64 copy of x instead
    for seed in range(5):
        record = run("layernorm", zoo("red_mod_layernorm_no_mean_term.py"), checks=["gradient"], seed=seed,
                     dtype="float16")["gradient"]
        assert record.status == "fail" and "input gradient 'x'" in record.message, (seed, record.message)
    assert run("layernorm", zoo("red_mod_layernorm_ok_float32.py"), checks=["gradient"], seed=0,
               dtype="float16").passed
