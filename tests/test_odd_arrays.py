"""Arrays gradlab does not expect from a student's code: each is either judged
correctly (plain-behaving ndarray subclasses, masked arrays with nothing masked)
or named in one line as an error of the module (read-only parameters, masked
entries; a module kept in float16 whatever cfg.dtype says: its gradients cannot be
judged), never a pass, never a wrong failure, never an "internal error" of gradlab."""
from pathlib import Path

import pytest

import gradlab

SEEDS = range(20)


def one_error(result, words):
    """Every check after smoke is skipped; smoke is an error naming the problem."""
    smoke = result["smoke"]
    assert smoke.status == "error", smoke.message
    assert words in smoke.message, smoke.message
    assert "internal error" not in smoke.message and "\n" not in smoke.message
    assert not result.passed
    assert all(c.status == "skip" for c in result.checks if c.name != "smoke")


def variant(tmp_path, zoo, name, old, new):
    source = open(zoo(name)).read()
    assert old in source
    path = tmp_path / name
    path.write_text(source.replace(old, new))
    return str(path)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_read_only_parameters_are_named(zoo, dtype):
    result = gradlab.check("linear", impl=zoo("odd_linear_read_only_params.py"), seed=0, dtype=dtype)
    one_error(result, "parameter 'weight' is read-only (weight.flags.writeable is False)")


def cannot_judge_float16(result):
    """A module kept in float16 whatever cfg.dtype says: its gradient cannot be judged (finite differences
    in float16 are too coarse, and no float64 copy of it can be built), so the gradient check is an error
    that says so, never a pass. (`--dtype float16` with a module that follows cfg.dtype is judged:
    tests/test_float16.py.)"""
    grad = result["gradient"]
    assert grad.status == "error", grad.message
    assert grad.message.startswith("linear: cannot judge: a float16 module's gradients") and "\n" not in grad.message
    assert "still keeps 'weight' in float16" in grad.message and "build it in cfg.dtype" in grad.message
    assert not result.passed


@pytest.mark.parametrize("factor", ["3", "1"], ids=["gradient 3x too large", "correct"])
def test_a_module_kept_in_float16_is_never_passed_whether_right_or_wrong(zoo, tmp_path, factor):
    impl = variant(tmp_path, zoo, "odd_linear_float16_grad_3x.py", "FACTOR = 3", f"FACTOR = {factor}")
    for seed in range(5):
        cannot_judge_float16(gradlab.check("linear", impl=impl, seed=seed))


def test_float16_parameters_behind_a_float64_forward_cannot_be_judged(zoo):
    cannot_judge_float16(gradlab.check("linear", impl=zoo("odd_linear_float16_params.py"), seed=0))


def test_a_masked_array_with_masked_entries_is_named(zoo):
    result = gradlab.check("linear", impl=zoo("odd_linear_masked_output.py"), seed=0)
    one_error(result, "forward returned a numpy.ma.MaskedArray with")
    assert "masked entries (the first at index (" in result["smoke"].message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_masked_array_with_nothing_masked_is_judged_by_its_numbers(zoo, tmp_path, all_pass, dtype):
    impl = variant(tmp_path, zoo, "odd_linear_masked_output.py", "MASK_ABOVE = 1.0", "MASK_ABOVE = np.inf")
    for seed in SEEDS:
        all_pass(gradlab.check("linear", impl=impl, seed=seed, dtype=dtype), seed)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_an_ndarray_subclass_is_judged_by_its_numbers(zoo, all_pass, dtype):
    for seed in SEEDS:
        all_pass(gradlab.check("linear", impl=zoo("odd_linear_ndarray_subclass.py"), seed=seed, dtype=dtype), seed)


def test_a_broken_ndarray_subclass_still_fails(zoo, tmp_path):
    impl = variant(tmp_path, zoo, "odd_linear_ndarray_subclass.py",
                   'Tensor(g.reshape(-1, d_out).sum(axis=0), "db")', 'Tensor(g.reshape(-1, d_out).mean(axis=0), "db")')
    result = gradlab.check("linear", impl=impl, checks=["gradient"], seed=0)
    assert result["gradient"].status == "fail" and "bias" in result["gradient"].message


def test_the_cli_says_it_in_one_line_and_exits_1(zoo, capsys):
    from gradlab.frontends.cli import main
    assert main(["check", "linear", "--impl", zoo("odd_linear_float16_grad_3x.py"), "--seed", "0"]) == 1
    out = capsys.readouterr().out
    assert "ERROR  linear::gradient" in out and "cannot judge: a float16 module's gradients" in out
    assert "PASS  linear::gradient" not in out


def test_float32_arithmetic_inside_is_not_told_to_build_in_cfg_dtype(zoo, run, all_pass):
    # its parameters, output and gradients follow cfg.dtype; "build it in cfg.dtype" sent the student to change
    # what was right. In float16 it cannot be judged (no float64 copy), and the words say where it is
    for dtype in ("float64", "float32"):
        all_pass(run("linear", zoo("odd_linear_float32_inside.py"), seed=1, dtype=dtype), dtype)
    record = run("linear", zoo("odd_linear_float32_inside.py"), ["gradient"], seed=1, dtype="float16")["gradient"]
    assert record.status == "error" and "build it in cfg.dtype" not in record.message
    assert "judged in --dtype float32 and float64" in record.message, record.message


def test_float64_parameters_under_float16_inputs_are_judged_as_float16(zoo, run):
    # the shipped example keeps float64 parameters whatever cfg.dtype says; given float16 inputs its LayerNorm
    # computes mean and variance in float16, and the gradient check compared that with float64 finite
    # differences at float64's tolerance: "a constant differs slightly (eps?)". Judged as float16 (a float64
    # copy, float16's tolerance), it passes, and a wrong dgamma still fails
    example = str(Path(zoo("odd_linear_float32_inside.py")).parents[2] / "examples" / "student_modules.py")
    for seed in range(3):       # (overfit is skipped in float16, with its reason)
        result = run("layernorm", example, seed=seed, dtype="float16")
        assert result.passed and result["gradient"].status == "pass", (seed, result["gradient"].message)
    record = run("layernorm", zoo("odd_layernorm_float64_params_bad_dgamma.py"), ["gradient"], seed=0,
                 dtype="float16")["gradient"]
    assert record.status == "fail" and "'gamma'" in record.message, record.message

