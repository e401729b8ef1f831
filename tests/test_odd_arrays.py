"""Arrays gradlab does not expect from a student's code: each is either judged
correctly (plain-behaving ndarray subclasses, masked arrays with nothing masked)
or named in one line as an error of the module (read-only or float16 parameters,
float16 results, masked entries): never a pass, never a wrong failure, never an
"internal error" of gradlab."""
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


@pytest.mark.parametrize("factor", ["3", "1"], ids=["gradient 3x too large", "correct"])
def test_float16_is_named_as_unsupported_whether_right_or_wrong(zoo, tmp_path, factor):
    impl = variant(tmp_path, zoo, "odd_linear_float16_grad_3x.py", "FACTOR = 3", f"FACTOR = {factor}")
    for seed in range(5):
        result = gradlab.check("linear", impl=impl, seed=seed)
        one_error(result, "forward returned an array of dtype float16: gradlab does not support float16")
        assert "compute in float32 or float64" in result["smoke"].message


def test_float16_parameters_behind_a_float64_forward_are_named(zoo):
    result = gradlab.check("linear", impl=zoo("odd_linear_float16_params.py"), seed=0)
    one_error(result, "parameter 'weight' has dtype float16: gradlab does not support float16")


def test_a_masked_array_with_masked_entries_is_named(zoo):
    result = gradlab.check("linear", impl=zoo("odd_linear_masked_output.py"), seed=0)
    one_error(result, "forward returned a numpy.ma.MaskedArray with")
    assert "masked entries (the first at index (" in result["smoke"].message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_masked_array_with_nothing_masked_is_judged_by_its_numbers(zoo, tmp_path, dtype):
    impl = variant(tmp_path, zoo, "odd_linear_masked_output.py", "MASK_ABOVE = 1.0", "MASK_ABOVE = np.inf")
    for seed in SEEDS:
        result = gradlab.check("linear", impl=impl, seed=seed, dtype=dtype)
        assert result.passed, [f"{c.name}: {c.message}" for c in result.checks if not c.ok]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_an_ndarray_subclass_is_judged_by_its_numbers(zoo, dtype):
    for seed in SEEDS:
        result = gradlab.check("linear", impl=zoo("odd_linear_ndarray_subclass.py"), seed=seed, dtype=dtype)
        assert result.passed, [f"{c.name}: {c.message}" for c in result.checks if not c.ok]


def test_a_broken_ndarray_subclass_still_fails(zoo, tmp_path):
    impl = variant(tmp_path, zoo, "odd_linear_ndarray_subclass.py",
                   'Tensor(g.reshape(-1, d_out).sum(axis=0), "db")', 'Tensor(g.reshape(-1, d_out).mean(axis=0), "db")')
    result = gradlab.check("linear", impl=impl, checks=["gradient"], seed=0)
    assert result["gradient"].status == "fail" and "bias" in result["gradient"].message


def test_the_cli_says_it_in_one_line_and_exits_1(zoo, capsys):
    from gradlab.frontends.cli import main
    assert main(["check", "linear", "--impl", zoo("odd_linear_float16_grad_3x.py"), "--seed", "0"]) == 1
    out = capsys.readouterr().out
    assert "ERROR  linear::smoke" in out and "does not support float16" in out and "PASS" not in out
