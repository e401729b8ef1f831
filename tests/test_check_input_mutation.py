"""`input_mutation`: forward, backward and step leave the caller's arrays alone."""
import pytest

from gradlab.contract.kinds import DIFFERENTIABLE, KINDS, OPTIMIZER, PROBABILITIES

KINDS_CHECKED = [k for k, s in KINDS.items() if s.tags & {DIFFERENTIABLE, PROBABILITIES, OPTIMIZER}]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", KINDS_CHECKED)
def test_reference_leaves_inputs_alone(run, kind, dtype):
    record = run(kind, None, ["input_mutation"], dtype=dtype)["input_mutation"]
    assert record.status == "pass", record.message


def test_clip_grad_norm_is_exempt(run):
    # it scales the caller's gradients in place by contract
    record = run("clip_grad_norm", None, ["smoke", "input_mutation"])["input_mutation"]   # (alone: exit 2)
    assert record.status == "skip"


@pytest.mark.parametrize("kind, name", [
    ("attention", "causality_ok_attention.py"), ("attention", "shapes_ok_attention_split_qkv.py"),
    ("embedding", "repeated_ids_ok_embedding_loop.py"), ("lm", "repeated_ids_ok_tiny_lm.py"),
    ("softmax", "finite_ok_functions.py"), ("cross_entropy", "finite_ok_functions.py"),
    ("sgd", "input_mutation_ok_optimizers.py"), ("adam", "input_mutation_ok_optimizers.py"),
    ("adamw", "input_mutation_ok_optimizers.py"),
    ("chunked_attention", "art_chunked_ok_article.py"), ("chunked_attention", "art_chunked_ok_causal.py"),
])
def test_correct_variants_pass(run, zoo, kind, name):
    record = run(kind, zoo(name), ["input_mutation"])["input_mutation"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("kind, name, words", [
    ("layernorm", "input_mutation_bad_layernorm_inplace.py",
     ["layernorm", "forward(x) changed the caller's x", "first at index (0, 0, 0)", "x -= mean"]),
    ("layernorm", "input_mutation_bad_layernorm_backward_inplace.py",
     ["backward(grad_out) changed the caller's grad_out", "at index", "not g *= s"]),
    ("positional", "input_mutation_bad_positional_inplace.py",
     ["positional", "forward(x) changed the caller's x", "not x += w"]),
    ("softmax", "input_mutation_bad_functions.py", ["softmax(x) changed the caller's x", "x -= x.max"]),
    ("cross_entropy", "input_mutation_bad_functions.py",
     ["cross_entropy(logits, targets) changed the caller's logits", "at index"]),
    ("adamw", "input_mutation_bad_adamw.py",
     ["adamw", "step 1", "changed the caller's grads['w'] (given to step 1)", "not g += wd * p"]),
    ("sgd", "input_mutation_bad_sgd_buffer_alias.py",
     ["sgd", "step 2", "grads['w'] (given to step 1)", "g.copy()"]),
    ("sgd", "input_mutation_bad_sgd_decay_inplace.py",      # the default weight_decay is 0: moved to catch it
     ["sgd", "step 1 (step(params, grads)) with weight_decay=0.01", "not g += wd * p"]),
    ("chunked_attention", "input_mutation_bad_chunked_scale_inplace.py",
     ["chunked_attention(Q, K, V, chunk_size=2) changed the caller's Q", "not Q /= ..."]),
])
def test_mutations_are_caught(run, zoo, kind, name, words):
    record = run(kind, zoo(name), ["input_mutation"])["input_mutation"]
    assert record.status == "fail", record.message
    for word in words:
        assert word in record.message
    assert record.metrics["changed_entries"] > 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float32_mutation_is_caught(run, zoo, dtype):
    record = run("layernorm", zoo("input_mutation_bad_layernorm_inplace.py"), ["input_mutation"], dtype=dtype)
    assert record["input_mutation"].status == "fail"
