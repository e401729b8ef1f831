"""The CLI and the pytest plugin as a teacher uses them on several files:
a repeated --impl is a usage error (never silently the last file), KIND takes
a comma list, and with several --gradlab-impl one file's import error fails
that file only, its items name the file, and the report lists every file."""
import pathlib
import re

import pytest

from gradlab.frontends.cli import main

pytest_plugins = ["pytester"]

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"


def test_a_repeated_impl_is_a_usage_error(zoo, capsys, tmp_path):
    a, b = EXAMPLES / "student_modules.py", zoo("grad_bad_layernorm_no_gamma.py")
    code = main(["check", "layernorm", "--impl", str(a), "--impl", str(b), "--seed", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "--impl is given 2 times" in err and "gradlab grade" in err
    assert len(err.strip().splitlines()) == 1


def test_kind_takes_a_comma_list(capsys, tmp_path):
    path = str(EXAMPLES / "student_modules.py")
    code = main(["check", "layernorm,softmax", "--impl", path, "--checks", "smoke,shapes", "--seed", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert "layernorm (" in out and "softmax (" in out and "all 2 kinds:" in out
    assert main(["check", "layernorm,layernrom", "--impl", path]) == 2
    assert "unknown kind 'layernrom'" in capsys.readouterr().err


def test_several_impls_one_broken_the_others_still_run(zoo, pytester):
    pytester.makepyfile(broken='import gradlab\n@gradlab.register("layernorm")\ndef build(cfg):\n    return 1 +\n')
    (pytester.path / "bob.py").write_text(pathlib.Path(zoo("grad_bad_layernorm_no_gamma.py")).read_text())
    (pytester.path / "ada.py").write_text((EXAMPLES / "student_modules.py").read_text())
    result = pytester.runpytest("-p", "no:xdist", "--gradlab-impl", "broken.py", "--gradlab-impl", "bob.py",
                                "--gradlab-impl", "ada.py", "--gradlab-kind", "layernorm", "--gradlab-seed", "1", "--gradlab-report", "r.html", "-v")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "FAILED broken.py::load - broken.py:4: syntax error" in out
    assert "FAILED bob.py::layernorm::gradient - layernorm: input gradient 'x'" in out
    result.assert_outcomes(failed=2, passed=19)   # bob's 9 other checks and ada's 10
    html = (pytester.path / "r.html").read_text()
    for name in ("broken.py", "bob.py", "ada.py"):
        assert name in html
    assert re.search(r'layernorm::gradient</span>\s*<span class="student">bob.py</span>', html)   # the card names the file
