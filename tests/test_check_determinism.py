"""`determinism`: the same input gives the same output and gradients, twice."""
import pytest

from gradlab.contract.kinds import DIFFERENTIABLE, KINDS, OPTIMIZER, PROBABILITIES

KINDS_CHECKED = [k for k, s in KINDS.items() if s.tags & {DIFFERENTIABLE, PROBABILITIES, OPTIMIZER}]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", KINDS_CHECKED)
def test_reference_is_deterministic(run, kind, dtype):
    record = run(kind, None, ["determinism"], dtype=dtype)["determinism"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("kind, name", [
    ("attention", "causality_ok_attention.py"), ("attention", "shapes_ok_attention_split_qkv.py"),
    ("layernorm", "shapes_ok_layernorm_renamed.py"), ("embedding", "repeated_ids_ok_embedding_onehot.py"),
    ("softmax", "finite_ok_functions.py"), ("cross_entropy", "finite_ok_functions.py"),
    ("sgd", "input_mutation_ok_optimizers.py"), ("adamw", "input_mutation_ok_optimizers.py"),
    # mutating its input is input_mutation's finding; determinism gives every call its own copy
    ("layernorm", "input_mutation_bad_layernorm_backward_inplace.py"),
    ("positional", "input_mutation_bad_positional_inplace.py"),
])
def test_correct_variants_pass(run, zoo, kind, name):
    record = run(kind, zoo(name), ["determinism"])["determinism"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("kind, name, words", [
    ("attention", "determinism_bad_attention_dropout.py",
     ["attention", "output differs", "same input", "dropout", "np.random"]),
    ("layernorm", "determinism_bad_layernorm_running_stats.py",
     ["layernorm", "output differs", "running statistics"]),
    ("linear", "determinism_bad_linear_grad_accumulate.py",
     ["linear", "gradient of 'weight'", "second call", "+="]),
])
def test_nondeterminism_is_caught(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["determinism"])["determinism"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message
    assert "at index (" in record.message


def test_optimizers_sharing_class_level_state_are_caught(run, tmp_path):
    path = tmp_path / "shared_state_sgd.py"
    path.write_text('''
import gradlab

class SGD:
    buf = {}                          # class-level: every instance shares it
    def __init__(self, cfg):
        self.cfg = cfg
    def step(self, params, grads):
        for k, p in params.items():
            self.buf[k] = self.cfg.momentum * self.buf.get(k, 0.0) + grads[k]
            p -= self.cfg.lr * self.buf[k]

gradlab.register("sgd")(SGD)
''')
    record = run("sgd", str(path), ["determinism"])["determinism"]
    assert record.status == "fail"
    assert "share state between instances" in record.message
