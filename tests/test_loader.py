"""Loading `impl` (CONTRACT §4: a file path, a module name, the build function
itself, or None for the reference). Everything that stops a run before a check
starts is a one-line UsageError that says what to fix."""
import os
import sys
import threading
from pathlib import Path

import pytest

import gradlab
from gradlab.contract.errors import UsageError
from gradlab.execution.loader import load, reference

EXAMPLES = Path(__file__).parent.parent / "examples"

LAYERNORM = """\
import numpy as np
import gradlab

class LN:
    def __init__(self, d):
        self.gamma, self.beta = np.ones(d), np.zeros(d)
    def forward(self, x):
        self.x = x
        return x * self.gamma + self.beta
    def backward(self, g):
        self.dgamma = (g * self.x).sum((0, 1))
        self.dbeta = g.sum((0, 1))
        return g * self.gamma

@gradlab.register("layernorm")
def build(cfg):
    return LN(cfg.d_model)
"""


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return str(path)


def test_reference_registers_every_kind():
    assert set(reference().registrations) == set(gradlab.KINDS)
    assert load(None) is reference() and load("reference") is reference()


def test_load_by_path_relative_and_absolute(tmp_path, monkeypatch):
    path = write(tmp_path, "mine.py", LAYERNORM)
    assert list(load(path).registrations) == ["layernorm"]
    monkeypatch.chdir(tmp_path)
    assert list(load("mine.py").registrations) == ["layernorm"]
    assert list(load(Path("mine.py")).registrations) == ["layernorm"]


def test_loading_leaves_sys_path_as_it_was(tmp_path):
    before = list(sys.path)
    load(write(tmp_path, "mine.py", LAYERNORM))
    assert sys.path == before


def test_a_file_may_import_its_siblings(tmp_path):
    write(tmp_path, "helpers_for_loader_test.py", "SCALE = 1.0\n")
    path = write(tmp_path, "uses_helper.py", "from helpers_for_loader_test import SCALE\n" + LAYERNORM)
    assert list(load(path).registrations) == ["layernorm"]


def test_load_by_module_name(tmp_path, monkeypatch):
    write(tmp_path, "student_pkg_for_loader_test.py", LAYERNORM)
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load("student_pkg_for_loader_test")
    assert list(loaded.registrations) == ["layernorm"]
    assert loaded.files and loaded.files[0].endswith("student_pkg_for_loader_test.py")
    assert list(load("student_pkg_for_loader_test").registrations) == ["layernorm"]   # again: cached import


def test_load_a_build_function():
    @gradlab.register("layernorm")
    def build(cfg):
        return None

    loaded = load(build)
    assert loaded.get("layernorm").target is build
    assert loaded.files == (os.path.abspath(__file__),)


@pytest.mark.parametrize("name, text, words", [
    ("syntax.py", "import gradlab\ndef build(cfg)\n    return 1\n", r"syntax\.py:2: syntax error"),
    ("imports.py", "import numpy\nimport torchh\n",
     r"importing .*imports\.py raised ModuleNotFoundError at imports\.py:2: No module named 'torchh'"),
    ("raises.py", "import gradlab\n\nx = 1 / 0\n", r"raised ZeroDivisionError at raises\.py:3: division by zero"),
    ("exits.py", "import sys\nsys.exit('done')\n", r"called sys\.exit\('done'\) at exits\.py:2;.*__main__"),
    ("nothing.py", "import gradlab\n", r"registers nothing; decorate its factory with @gradlab\.register"),
    ("typo.py", "import gradlab\n@gradlab.register('layer_norm')\ndef build(cfg): pass\n",
     r"gradlab\.register\('layer_norm'\) at typo\.py:2: 'layer_norm' is no kind; did you mean 'layernorm'\? "
     r"Register it as 'layernorm'"),
    ("nokind.py", "import gradlab\n@gradlab.register('transformer_xl')\ndef build(cfg): pass\n",
     r"raised ValueError at nokind\.py:2: .*unknown kind 'transformer_xl'"),
    ("badmap.py", "import gradlab\n@gradlab.register('attention', param_map=['a'])\ndef build(cfg): pass\n",
     r"at badmap\.py:2: .*param_map must be a dict"),
], ids=["syntax error", "import error", "raises", "sys.exit", "registers nothing", "misspelled kind",
        "unknown kind", "bad param_map"])
def test_broken_files_give_one_line_that_says_what_to_fix(tmp_path, name, text, words):
    with pytest.raises(UsageError, match=words) as info:
        load(write(tmp_path, name, text))
    assert "\n" not in str(info.value)


def test_missing_file_folder_and_module(tmp_path, monkeypatch):
    with pytest.raises(UsageError, match=r"^no such file: .*nope\.py$"):
        load(str(tmp_path / "nope.py"))
    with pytest.raises(UsageError, match="is a folder; pass the .py file"):
        load(str(tmp_path))
    with pytest.raises(UsageError, match="^no such file or module: no_such_module_xyz"):
        load("no_such_module_xyz")
    with pytest.raises(UsageError, match="no such file or module: os.no_such_submodule"):
        load("os.no_such_submodule")
    write(tmp_path, "mine.py", LAYERNORM)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"did you mean the file mine\.py\? \(--impl mine\.py\)"):
        load("mine")


def test_impl_of_the_wrong_type():
    with pytest.raises(UsageError, match="impl must be a file path, a module name or a registered function"):
        load(42)


def test_no_registration_for_the_kind_lists_what_the_file_has():
    loaded = load(str(EXAMPLES / "student_modules.py"))
    with pytest.raises(UsageError, match=r"registers no 'attention' module \(it registers layernorm, ffn, .*\); "
                                         r"add @gradlab\.register\('attention'\)"):
        loaded.get("attention")


def test_an_import_that_hangs_is_stopped(tmp_path):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("timeouts use SIGALRM, which only the main thread receives")
    path = write(tmp_path, "hangs.py", "import gradlab\nwhile True:\n    pass\n")
    with pytest.raises(UsageError, match=r"importing .*hangs\.py ran past 0\.3 s, last seen at hangs\.py:"):
        gradlab.check("layernorm", impl=path, timeout=0.3)


def test_a_variant_file_importing_the_original_checks_the_variant(zoo):
    loaded = load(zoo("found_block_scaled_ffn.py"))
    assert loaded.get("block").where.startswith("found_block_scaled_ffn.py:")


def test_a_file_that_checks_itself_at_import_gets_told_to_use_a_main_guard(tmp_path):
    """A student's `result = gradlab.check(..., impl=__file__)` at the bottom of
    their file: loading it would load it again, forever (RecursionError)."""
    text = ("import gradlab\n\n@gradlab.register('schedule')\ndef schedule(step, d_model, warmup):\n"
            "    return 1.0\n\nresult = gradlab.check('schedule', impl=__file__)\n")
    path = write(tmp_path, "checks_itself.py", text)
    with pytest.raises(UsageError, match=r"checks_itself\.py:7 runs gradlab\.check on its own file while being "
                                         r"imported.*if __name__ == \"__main__\""):
        load(path)
    guarded = text.replace("result = ", "if __name__ == '__main__':\n    result = ")
    assert list(load(write(tmp_path, "guarded.py", guarded)).registrations) == ["schedule"]


def test_a_misspelled_kind_costs_that_kind_only(tmp_path):
    # register("layer_norm") raised at import: every other kind of the file was lost with it (a grade of 0)
    from gradlab.execution.loader import missing_kind
    source = open(os.path.join(os.path.dirname(__file__), "..", "examples", "student_modules.py")).read()
    path = write(tmp_path, "typos.py", source.replace('register("layernorm")', 'register("LayerNorm")')
                 .replace('register("adam")', 'register("ada m")'))
    loaded = load(path)
    assert "ffn" in loaded.registrations and "layernorm" not in loaded.registrations
    assert loaded.refused["layernorm"].startswith("gradlab.register('LayerNorm') at typos.py:")
    assert "did you mean 'adam'? Register it as 'adam'" in loaded.refused["adam"]
    assert "Register it as 'layernorm'" in str(missing_kind(loaded, "layernorm"))
    with pytest.raises(ValueError, match="unknown kind 'layer_norm'"):     # outside an import: raised as it was
        import gradlab
        gradlab.register("layer_norm")
