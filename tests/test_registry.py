"""gradlab.register, as CONTRACT §1 promises it: the decorator records and
returns the function unchanged, runs nothing, and refuses bad arguments with a
message that says what to fix."""
import pytest

import gradlab
from gradlab.contract.errors import UsageError
from gradlab.execution.loader import load
from gradlab.contract.registry import collecting

EXAMPLES = __import__("pathlib").Path(__file__).parent.parent / "examples"


def test_decorator_returns_the_function_unchanged_and_runs_nothing():
    calls = []

    def build(cfg):
        calls.append(cfg)
        return None

    with collecting() as found:
        returned = gradlab.register("layernorm")(build)
    assert returned is build
    assert calls == []                          # registering builds nothing, checks nothing
    assert [(r.kind, r.target) for r in found] == [("layernorm", build)]
    assert found[0].where.startswith("test_registry.py:")


def test_function_kinds_register_the_function_itself():
    def my_softmax(x, axis=-1):
        return x

    with collecting() as found:
        assert gradlab.register("softmax")(my_softmax) is my_softmax
    assert found[0].target is my_softmax and not found[0].is_factory


def test_unknown_kind_is_a_value_error_with_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown kind 'atention': did you mean 'attention'\?"):
        gradlab.register("atention")


def test_kind_must_be_a_string():
    with pytest.raises(TypeError, match="kind must be a string"):
        gradlab.register(lambda cfg: None)       # @gradlab.register without ("kind")


@pytest.mark.parametrize("param_map, words", [
    (["qkv_weight"], "param_map must be a dict"),
    ("qkv_weight", "param_map must be a dict"),
    ({"W": 3}, "keys and values must be strings"),
    ({1: "out_weight"}, "keys and values must be strings"),
], ids=["list", "string", "non-string value", "non-string key"])
def test_bad_param_map_type(param_map, words):
    with pytest.raises(TypeError, match=words):
        gradlab.register("attention", param_map=param_map)


def test_param_map_function_must_take_module_and_reference_params():
    def load(module):
        pass

    with pytest.raises(TypeError, match=r"called as load\(module, reference_params\); load does not take"):
        gradlab.register("attention", param_map=load)


def test_param_map_values_must_be_reference_names():
    with pytest.raises(ValueError, match=r"'W' maps to 'qkv_weigth'.*did you mean 'qkv_weight'"):
        gradlab.register("attention", param_map={"W": "qkv_weigth"})
    with pytest.raises(ValueError, match="adam has no parameters to map"):
        gradlab.register("adam", param_map={"a": "b"})


def test_good_param_maps_are_accepted():
    def build(cfg):
        return None

    with collecting() as found:
        gradlab.register("attention", param_map={"W_qkv": "qkv_weight", "W_o": "out_weight"})(build)
        gradlab.register("lm", param_map={"h.3.mlp.fc": "blocks.3.ffn.w1", "wte": "token_embedding"})(build)
        gradlab.register("attention", param_map=lambda module, ref: None)(build)
    assert [r.kind for r in found] == ["attention", "lm", "attention"]
    assert callable(found[2].param_map)


def test_decorating_something_not_callable_says_what_to_decorate():
    with pytest.raises(TypeError, match=r"decorates a factory build\(cfg\)"):
        gradlab.register("attention")(42)
    with pytest.raises(TypeError, match="decorates the function itself"):
        gradlab.register("softmax")("softmax")


def test_one_file_registers_several_kinds():
    loaded = load(str(EXAMPLES / "student_modules.py"))
    assert set(loaded.registrations) == {"layernorm", "ffn", "linear", "embedding", "adam",
                                         "softmax", "cross_entropy"}
    assert loaded.get("softmax").target.__name__ == "softmax"


def test_one_kind_registered_twice_in_one_file_is_a_clear_error(tmp_path):
    f = tmp_path / "twice.py"
    f.write_text("import gradlab\n\n"
                 "@gradlab.register('layernorm')\ndef a(cfg): pass\n\n"
                 "@gradlab.register('layernorm')\ndef b(cfg): pass\n")
    with pytest.raises(UsageError, match=r"registers 'layernorm' twice \(twice.py:3 and twice.py:6\); keep one"):
        load(str(f))


def test_registrations_are_collected_per_file(tmp_path):
    """Registrations made while loading one file do not leak into another."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import gradlab\ngradlab.register('softmax')(lambda x, axis=-1: x)\n")
    b.write_text("import gradlab\ngradlab.register('schedule')(lambda s, d, w: 1.0)\n")
    assert list(load(str(a)).registrations) == ["softmax"]
    assert list(load(str(b)).registrations) == ["schedule"]


def test_a_check_module_imported_again_declares_its_check_anew_and_another_module_may_not():
    # pytester's in-process runs drop the modules imported during the inner run from sys.modules: the next import
    # of gradlab.checks.overfit declared 'overfit' again, and every later train check was an internal error
    import importlib
    import sys
    from gradlab.contract import suite
    suite.all_checks()
    name = "gradlab.checks.overfit"
    original, spec = sys.modules.pop(name), suite.CHECKS["overfit"]
    try:
        again = importlib.import_module(name)
        assert suite.CHECKS["overfit"].fn.__module__ == name and again is not original
        with pytest.raises(ValueError, match="check 'overfit' is declared twice: gradlab.checks.overfit and "
                                             "somewhere.else"):
            def impostor(subject, rng):
                pass
            impostor.__module__ = "somewhere.else"
            suite.check("overfit", summary="an impostor")(impostor)
    finally:
        sys.modules[name], suite.CHECKS["overfit"] = original, spec
        suite._ordered.clear()
