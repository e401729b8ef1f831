"""gradlab's own reference modules, verified by every check that applies, one
test per (kind, check), through the same runs the pytest plugin uses
(gradlab.testing). `pytest -n auto` includes them; `--gradlab-report PATH`
puts them in the report."""
from gradlab.testing import parametrize_with_checks


@parametrize_with_checks(None)
def test_reference(kind, check):
    check()
