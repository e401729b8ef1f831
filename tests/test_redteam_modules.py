"""Red-team zoo for the module kinds: student files (tests/zoo/red_mod_*.py) written
only against CONTRACT.md, in styles unlike gradlab's reference modules (cache tuples,
attribute params, parameters()/gradients(), loops over heads, einsum, float32-only,
-1e9 / -inf / masked_fill masks, own nested parts). Correct ones must pass every check;
each broken one has one quiet bug and its first failing check must name the place and
the likely cause."""
import pytest

# file, kind, first failing check (None: must pass), key words of that check's message
TABLE = [
    ("red_mod_linear_ok_cache_tuple.py", "linear", None, []),
    ("red_mod_layernorm_ok_float32.py", "layernorm", None, []),
    ("red_mod_ffn_ok_activation.py", "ffn", None, []),
    ("red_mod_attention_ok_einsum.py", "attention", None, []),
    ("red_mod_attention_ok_heads_loop.py", "attention", None, []),
    ("red_mod_embedding_ok_attr.py", "embedding", None, []),
    ("red_mod_positional_ok.py", "positional", None, []),
    ("red_mod_block_ok_nested.py", "block", None, []),
    ("red_mod_lm_ok_tied.py", "lm", None, []),
    ("red_mod_linear_bias_time_only.py", "linear", "shapes", ["'bias'", "(2, 20)", "sum over the batch"]),
    ("red_mod_linear_tuple_return.py", "linear", "smoke", ["tuple of 2", "return only the array"]),
    ("red_mod_layernorm_no_mean_term.py", "layernorm", "gradient", ["input gradient 'x'", "mean term"]),
    ("red_mod_layernorm_no_var_term.py", "layernorm", "gradient", ["input gradient 'x'", "variance"]),
    ("red_mod_layernorm_ddof1.py", "layernorm", "reference", ["unbiased variance", "ddof=1"]),
    ("red_mod_layernorm_eps_bwd.py", "layernorm", "gradient", ["'gamma'", "tiny relative", "eps"]),
    ("red_mod_ffn_exact_gelu_grad.py", "ffn", "gradient", ["'b1'", "analytical", "numerical", "exact"]),
    ("red_mod_ffn_relu_ignores_cfg.py", "ffn", "reference", ["ReLU", "tanh approximation"]),
    ("red_mod_attention_transposed_out_grad.py", "attention", "gradient", ["'out_weight'", "transpose"]),
    ("red_mod_attention_no_softmax_jacobian.py", "attention", "gradient", ["'qkv_bias'", "Q head", "- sum(dA * A)"]),
    ("red_mod_attention_mask_after_softmax.py", "attention", "softmax_rows", ["sums to", "mask applied after the softmax"]),
    ("red_mod_attention_mask_diag.py", "attention", "softmax_rows", ["row 0", "diagonal", "j < i"]),
    # the same bug with -inf: NaN at position 0 of every sample, and smoke's error said nothing more
    ("smoke_bad_attention_mask_diag_inf.py", "attention", "smoke", ["NaN", "only at position 0 of every sample",
                                                                    "hides the diagonal too", "j > i"]),
    ("red_mod_attention_mask_leak.py", "attention", "softmax_rows", ["future position 1", "off by one", "j <= i + 1"]),
    ("red_mod_attention_scale_dk_fwd.py", "attention", "gradient", ["'qkv_bias'", "sqrt(d_k)"]),
    ("red_mod_attention_scale_dk_bwd.py", "attention", "gradient", ["'qkv_bias'", "1/sqrt(d_k)"]),
    ("red_mod_attention_merge_reshape.py", "attention", "causality", ["position 0 sees the future", "transpose"]),
    ("red_mod_attention_dropout_on.py", "attention", "causality", ["not repeatable", "dropout"]),
    ("red_mod_embedding_assign.py", "embedding", "gradient", ["'weight'", "more than once", "np.add.at"]),
    ("red_mod_embedding_not_zeroed.py", "embedding", "backward", ["'weight'", "twice", "+="]),
    ("red_mod_positional_offset.py", "positional", "reference", ["weight[1:T+1]", "weight[:T]"]),
    # no check called the module at two lengths: both passed
    ("red_mod_positional_stale_rows.py", "positional", "backward", ["backward at T = 4 left row 4",
                                                                    "keeps a longer call's rows"]),
    ("red_mod_positional_fixed_length.py", "positional", "shapes", ["forward output at T = 4",
                                                                    "weight[:x.shape[1]]"]),
    ("red_mod_block_no_residual_bwd.py", "block", "gradient", ["input gradient 'x'", "attention sub-layer"]),
    ("red_mod_block_postln.py", "block", "reference", ["Post-LN", "Pre-LN"]),
    ("red_mod_block_parallel.py", "block", "reference", ["a parallel block", "ln2(h)"]),
    ("red_mod_block_inplace_residual.py", "block", "input_mutation", ["changed the caller's x", "x += w"]),
    ("red_mod_lm_tied_lookup_only.py", "lm", "gradient", ["'token_embedding'", "do not occur", "output projection"]),
    ("red_mod_lm_lookup_no_add_at.py", "lm", "gradient", ["'token_embedding'", "more than once", "np.add.at"]),
]


@pytest.mark.parametrize("name, kind, first, words", TABLE, ids=[row[0][8:-3] for row in TABLE])
def test_outcome_and_message(zoo, run, first_failure, name, kind, first, words):
    first_failure(name, run(kind, zoo(name)), first, words)


CORRECT = [(row[0], row[1]) for row in TABLE if row[2] is None]


@pytest.mark.parametrize("seed, dtype", [(1, "float32"), (2, "float64")])
@pytest.mark.parametrize("name, kind", CORRECT, ids=[row[0][8:-3] for row in CORRECT])
def test_correct_files_pass_other_seeds(zoo, name, kind, seed, dtype):
    import gradlab
    result = gradlab.check(kind, impl=zoo(name), seed=seed, dtype=dtype)
    assert result.passed, [(c.name, c.message) for c in result.checks if c.status != "pass"]


@pytest.mark.parametrize("name, overrides", [("red_mod_positional_stale_rows.py", {"max_len": 11}),   # = vocab_size
                                             ("red_mod_positional_stale_rows_3d.py", {})])
def test_stale_position_rows_fail_whatever_the_sizes_and_layout(zoo, run, name, overrides):
    # max_len == vocab_size turned the property off (a token table might have that shape), and a (1, max_len, D)
    # table was not looked at: both passed
    record = run("positional", zoo(name), ["backward"], seed=3, **overrides)["backward"]
    assert record.status == "fail" and "keeps a longer call's rows" in record.message, record.message


def test_a_correct_lm_passes_backward_when_max_len_equals_vocab_size(zoo, run, all_pass):
    all_pass(run("lm", zoo("red_mod_lm_ok_tied.py"), ["backward"], seed=2, max_len=11))
