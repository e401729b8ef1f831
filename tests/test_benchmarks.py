"""The benchmark scripts still run against the current code (they measure, they do not test; a script that
broke would go unnoticed until its numbers were needed): one small row each, and the results file keeps
what the script does not write."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
bench_gradient = pytest.importorskip("bench_gradient")


def test_the_gradient_benchmark_measures_a_small_kind():
    (row,) = bench_gradient.cost_rows([("layernorm", "layernorm", {})], 1)
    assert row["check_calls"] == "3 fwd + 1 bwd"      # the analytical pass and f(+-h): a clean pass
    assert row["loc_named"] and row["check_x"] > 0 and row["naive_x"] > 0


def test_the_results_file_keeps_the_sections_the_script_does_not_write():
    before = ("# Benchmarks\n\n## Cost\n\nold\n\n## torch.autograd.gradcheck\n\nNot run: torch is not installed\n\n"
              "## torch.autograd.gradcheck\n\n| measured |\n\n## Grading a class\n\nhistory\n")
    kept = bench_gradient.kept_tail(before, torch_measured=False)
    assert "| measured |" in kept and "history" in kept and "Not run" not in kept and "old" not in kept
    kept = bench_gradient.kept_tail(before, torch_measured=True)
    assert "torch" not in kept and "history" in kept
    assert bench_gradient.kept_tail("# Benchmarks\n\n## Cost\n", torch_measured=False) == ""
