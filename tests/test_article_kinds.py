"""Article 000's kinds (sinusoidal, init, warmup, label_smoothing, chunked_attention,
dropout, encoder_layer, cross_attention, decoder_layer): student-style files in
tests/zoo/art_*.py. Correct ones pass every check in float64 and float32; each broken
one has one slip, and its first failing check must name it."""
import numpy as np
import pytest

import gradlab
from gradlab.contract.kinds import KINDS

# file, kind, first failing check (None: must pass), words its message must contain
TABLE = [
    ("art_sinusoidal_ok_article_odd.py", "sinusoidal", None, []),
    ("art_sinusoidal_ok_loops.py", "sinusoidal", None, []),
    ("art_sinusoidal_article.py", "sinusoidal", "table", ["odd d_model=13", "np.cos(angle[:, :d_model // 2])"]),
    ("art_sinusoidal_halves.py", "sinusoidal", "table", ["concatenated halves", "interleaved"]),
    ("art_sinusoidal_exponent.py", "sinusoidal", "table", ["exponent doubles 2i", "10000 ** (4i/d_model)"]),
    ("art_sinusoidal_swapped.py", "sinusoidal", "table", ["swapped"]),
    ("art_sinusoidal_per_column.py", "sinusoidal", "table", ["own frequency", "(2i+1)/d_model"]),
    ("art_init_ok.py", "init", None, []),
    ("art_init_ok_global.py", "init", None, []),
    ("art_init_ok_kwonly_rng.py", "init", None, []),                    # (smoke: "takes 2 positional arguments")
    ("art_label_smoothing_ok_kwonly.py", "label_smoothing", None, []),  # (the same, and 8 checks not judged)
    ("art_init_fans_swapped.py", "init", "init_stats", ["he_uniform", "fan_in and fan_out are swapped"]),
    ("art_init_bound_as_std.py", "init", "init_stats", ["xavier_uniform", "bound a is the standard deviation"]),
    ("art_init_normal_for_uniform.py", "init", "init_stats", ["not uniform", "Kolmogorov-Smirnov",
                                                                "a normal draw for a uniform scheme?"]),
    ("art_init_not_centred.py", "init", "init_stats", ["mean", "centred on 0"]),
    ("art_init_seeded_inside.py", "init", "init_stats", ["two calls returned the same values", "seeded inside"]),
    ("art_init_tiled_row.py", "init", "init_stats", ["only 256 distinct values", "tiled"]),
    ("art_init_truncated_normal.py", "init", "init_stats", ["not normal", "truncated normal"]),
    ("art_warmup_ok_article.py", "warmup", None, []),
    ("art_warmup_ok_step.py", "warmup", None, []),
    ("art_warmup_ok_noamopt.py", "warmup", None, []),     # (step() returns None and there is no get_last_lr())
    # a bare TypeError ("missing 1 required positional argument: 'step'") was all it said
    ("art_warmup_takes_the_step.py", "warmup", "smoke", ["counts its own steps", "is the schedule kind"]),
    ("art_warmup_ok_noamopt_rate_step.py", "warmup", None, []),   # (and rate(step) cannot be called bare: _rate)
    ("art_warmup_ok_step.py", "schedule", None, []),
    ("art_warmup_class_counter.py", "warmup", "trajectory", ["shared between instances", "class attribute"]),
    ("art_warmup_starts_at_one.py", "warmup", "trajectory", ["step 1", "step + 1"]),
    ("art_warmup_hardcoded_steps.py", "warmup", "trajectory", ["cfg.warmup_steps = 9 it still follows warmup_steps = 4",
                                                              "does not pass cfg.warmup_steps on"]),
    ("art_label_smoothing_ok_article.py", "label_smoothing", None, []),
    ("art_label_smoothing_ok_float32_inside.py", "label_smoothing", None, []),
    ("art_label_smoothing_sum.py", "label_smoothing", "smoothing", ["epsilon = 0", "summed over the positions"]),
    ("art_label_smoothing_v_minus_1.py", "label_smoothing", "smoothing", ["epsilon / (V - 1)"]),
    ("art_label_smoothing_no_uniform.py", "label_smoothing", "smoothing", ["uniform part is missing"]),
    ("art_label_smoothing_kl.py", "label_smoothing", "smoothing", ["KL divergence", "entropy of y"]),
    # the gradient check sees the loss disagree with grad_logits: it said cross-entropy's words ("the mean of
    # -log p[target] ... averaged once"); now the smoothing check's known slip (that check names it too)
    ("art_label_smoothing_uniform_summed.py", "label_smoothing", "gradient", ["it is the loss that is off",
                                                                            "the uniform part sums -log p",
                                                                            "epsilon / V to each"]),
    ("art_label_smoothing_eps_fixed.py", "label_smoothing", "smoothing", ["epsilon argument is not used",
                                                                          "reference's at epsilon = 0.1"]),
    ("art_chunked_ok_article.py", "chunked_attention", None, []),
    ("art_chunked_ok_causal.py", "chunked_attention", None, []),
    ("art_chunked_ok_kwonly_causal.py", "chunked_attention", None, []),
    # a keyword-only causal is tried by name (it was not tried at all)
    ("art_chunked_kwonly_causal_leak.py", "chunked_attention", "chunking", ["causal=True", "see the next key too"]),
    ("art_chunked_local_mask.py", "chunked_attention", "chunking", ["causal=True", "global positions"]),
    ("art_chunked_drops_tail.py", "chunked_attention", "chunking", ["last, shorter chunk", "range(0, T, chunk_size)"]),
    ("art_chunked_concat_drops_tail.py", "chunked_attention", "smoke", ["returned shape", "the last, shorter chunk",
                                                                        "range(0, T, chunk_size)"]),
    ("art_chunked_full_scores.py", "chunked_attention", "memory", ["grows like T**", "(T, T)"]),
    # chunked_attention has no finite check: random inputs never overflowed exp
    ("art_chunked_no_max_shift.py", "chunked_attention", "chunking", ["non-finite values", "overflowed float64",
                                                                      "subtract each query row's max"]),
    ("art_dropout_ok.py", "dropout", None, []),
    ("art_dropout_ok_float32_mask.py", "dropout", None, []),
    ("art_dropout_float16_mask.py", "dropout", "dropout", ["kept entries are x times 1.42871", "rounded to float16"]),
    ("art_dropout_always_on.py", "dropout", "dropout", ["training=False", "identity"]),
    ("art_dropout_no_scale.py", "dropout", "dropout", ["not scaled", "1/(1-p)"]),
    ("art_dropout_keep_prob.py", "dropout", "dropout", ["probability of keeping"]),
    # it was told "with p = 0 nothing is dropped", as if p = 0 needed a case of its own
    ("art_dropout_p_fixed.py", "dropout", "dropout", ["of the entries were dropped at p = 0",
                                                      "does build(cfg) pass cfg.dropout"]),
    ("art_dropout_new_mask.py", "dropout", "dropout", ["backward draws a new mask"]),
    ("art_dropout_backward_twice.py", "dropout", "dropout", ["scales by 1/(1-p) twice", "g * mask"]),
    ("art_dropout_eval_scaled.py", "dropout", "dropout", ["training=False", "identity"]),
    ("art_dropout_shared_over_batch.py", "dropout", "dropout", ["the whole batch axis shares one draw", "x.shape"]),
    ("art_dropout_per_token.py", "dropout", "dropout", ["the whole feature axis shares one draw"]),
    ("art_dropout_stale_eval_mask.py", "dropout", "dropout", ["training=False", "backward still applies the mask"]),
    ("art_encoder_ok.py", "encoder_layer", None, []),
    ("art_encoder_causal.py", "encoder_layer", "reference", ["causal mask in the encoder"]),
    ("art_encoder_preln.py", "encoder_layer", "reference", ["Pre-LN", "Post-LN"]),
    ("art_encoder_std_eps.py", "encoder_layer", "reference", ["(x - mean) / (std + 1e-6)", "sqrt(var + cfg.eps)"]),
    ("art_cross_ok.py", "cross_attention", None, []),
    # float32 inside, the mask after an ordinary softmax (renormalised): a padded key moves float32's rounding
    ("art_cross_ok_float32_renorm.py", "cross_attention", None, []),
    ("art_cross_no_dmemory.py", "cross_attention", "smoke", ["tuple (dx, dmemory)"]),
    ("art_cross_dmemory_no_v.py", "cross_attention", "gradient", ["input gradient 'memory'", "dmemory"]),
    ("art_cross_mask_ignored.py", "cross_attention", "key_padding", ["padded key positions", "zero attention weight"]),
    ("art_cross_mask_none_crashes.py", "cross_attention", "key_padding", ["with key_padding_mask=None, forward raised",
                                                                         "which means no key is padded"]),
    ("art_cross_mask_none_backward.py", "cross_attention", "key_padding", ["with key_padding_mask=None, backward's "
                                                                          "dmemory differs", "None means no key"]),
    ("art_cross_mask_inverted.py", "cross_attention", "key_padding", ["looks inverted", "True means padded"]),
    ("art_cross_neginf_nan.py", "cross_attention", "key_padding", ["every key of sample 0 padded", "nan"]),
    ("art_decoder_ok.py", "decoder_layer", None, []),
    ("backward_ok_decoder_float32_layernorm.py", "decoder_layer", None, []),     # float32 LayerNorms inside
    ("art_decoder_self_not_causal.py", "decoder_layer", "causality", ["position 0 sees the future"]),
    ("art_decoder_no_cross_residual_bwd.py", "decoder_layer", "gradient",
     ["leaves out the residual (skip) path of the cross-attention sub-layer"]),
    ("art_decoder_cross_causal.py", "decoder_layer", "reference", ["causal mask in the cross-attention"]),
    ("art_seq2seq_ok.py", "seq2seq", None, []),
    ("art_seq2seq_no_encoder_grad.py", "seq2seq", "gradient", ["'enc.", "analytical 0"]),
    ("art_seq2seq_src_overwrite.py", "seq2seq", "gradient", ["'E_src'", "occur more than once", "np.add.at"]),
    ("art_seq2seq_dmemory_overwritten.py", "seq2seq", "gradient", ["Only the encoder's side is wrong",
                                                                  "dmemory += each layer's"]),
    # it was blamed on dmemory, which is right: some encoder tensors' gradients are right, and they all pass
    # through it
    # the paper's E[ids] * sqrt(d_model) failed reference with no cause
    ("art_seq2seq_embeddings_scaled.py", "seq2seq", "reference", ["embeddings multiplied by sqrt(d_model)"]),
    ("art_seq2seq_encoder_relu_grad_at_output.py", "seq2seq", "gradient",
     ["Only the encoder's side is wrong", "what reaches the encoder (dmemory) is right",
      "the encoder's own backward goes wrong"]),
]


def _id(row):
    return f"{row[0][4:-3]}-{row[1]}"


@pytest.mark.parametrize("name, kind, first, words", TABLE, ids=[_id(r) for r in TABLE])
def test_outcome_and_message(zoo, run, first_failure, name, kind, first, words):
    first_failure(name, run(kind, zoo(name)), first, words)


CORRECT = [(row[0], row[1]) for row in TABLE if row[2] is None]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, kind", CORRECT, ids=[_id(r) for r in TABLE if r[2] is None])
def test_correct_files_pass_other_seeds(zoo, all_pass, name, kind, dtype):
    for seed in (1, 2, 3):
        all_pass(gradlab.check(kind, impl=zoo(name), seed=seed, dtype=dtype), seed)


NEW_KINDS = ["sinusoidal", "init", "warmup", "label_smoothing", "chunked_attention", "dropout", "encoder_layer",
             "cross_attention", "decoder_layer", "seq2seq"]


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_references_pass_20_seeds_in_both_dtypes(all_pass, kind):
    """The statistical checks (init_stats, dropout) reject at 1e-4 per test: 20 seeds x 2 dtypes
    would see a false alarm with probability below 20 * 2 * 12e-4 ~ 5%, at fixed seeds never.
    seq2seq's copy_task (0.4 s a run) runs at 3 of the seeds, its other checks at all 20."""
    from gradlab.contract import suite
    for seed in range(20):
        for dtype in ("float64", "float32"):
            checks = None if kind != "seq2seq" or seed < 3 else \
                [c.name for c in suite.applicable(KINDS[kind]) if c.name != "copy_task"]
            all_pass(gradlab.check(kind, impl=None, seed=seed, dtype=dtype, checks=checks), seed, dtype)


def test_article_encoder_layer_registers_and_its_head_axis_bug_is_named(zoo, run):
    """Article 000's TransformerEncoderLayer (forward only) registers through a thin wrapper: the
    checks that need a backward are skipped saying why; reference names its attention over heads."""
    result = run("encoder_layer", zoo("art_encoder_article.py"))
    assert result["smoke"].status == "pass" and "no backward()" in result["smoke"].message
    assert result["gradient"].status == "skip" and "cannot judge" in result["gradient"].message
    assert result["reference"].status == "fail"
    assert "attention over the heads axis" in result["reference"].message
    assert not result.passed


def test_every_kind_declares_inputs_that_make_a_forward_call(run):
    """make_inputs follows the declaration: the same shapes the contract states, in order, and one-input
    kinds draw exactly what make_input always drew (no behaviour change)."""
    cfg = gradlab.contract.config.Config()
    for kind in KINDS.values():
        specs = kind.input_specs()
        values = kind.make_inputs(cfg, np.random.default_rng(0))
        assert len(values) == len(specs)
        first = kind.make_input(cfg, np.random.default_rng(0))
        assert np.array_equal(values[0], first)
    cross = KINDS["cross_attention"]
    assert [s.name for s in cross.input_specs()] == ["x", "memory", "key_padding_mask"]
    assert [s.name for s in cross.grad_inputs()] == ["x", "memory"]
    assert [s.causal for s in KINDS["decoder_layer"].input_specs()] == [True, False, False]
    x, memory, mask = cross.make_inputs(cfg, np.random.default_rng(0))
    assert memory.shape[1] != x.shape[1] and mask.dtype == bool and mask[0].any() and not mask.all(axis=1).any()


def test_label_smoothing_gradient_still_sees_a_small_error(run, tmp_path):
    """The allowance for an eps inside the log (tolerance.smoothing_first_order) does not blind the gradient
    check: one element of grad_logits off by 1e-4 of the gradient's scale is still found."""
    f = tmp_path / "ls_one_off.py"
    f.write_text(           # (a student's own function: one passing the call on to gradlab's is refused)
        "import numpy as np\nimport gradlab\n"
        "@gradlab.register('label_smoothing')\n"
        "def ls(logits, targets, epsilon=0.1):\n"
        "    V = logits.shape[-1]; z = logits.reshape(-1, V); t = targets.reshape(-1); n = len(t)\n"
        "    z = z - z.max(-1, keepdims=True); logp = z - np.log(np.exp(z).sum(-1, keepdims=True))\n"
        "    y = np.full_like(logp, epsilon / V); y[np.arange(n), t] += 1 - epsilon\n"
        "    grad = ((np.exp(logp) - y) / n).reshape(logits.shape)\n"
        "    grad[0, 1, 2] += 1e-4 * abs(grad).max()\n"
        "    return float(-(y * logp).sum() / n), grad\n")
    result = run("label_smoothing", str(f), checks=["gradient"])
    assert result["gradient"].status == "fail", result["gradient"].message
    assert "(0, 1, 2)" in result["gradient"].message


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_references_pass_at_generated_sizes(kind):
    """As test_generated_shapes: T = 1, H = 1, d_k = 1, B = 1, odd d_model... (25 examples per kind in
    both dtypes passed when this was written; 5 here to stay cheap)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @st.composite
    def sizes(draw):                    # test_generated_shapes' sizes (tests cannot import each other)
        num_heads = draw(st.integers(1, 3))
        d_model = num_heads * draw(st.integers(1 if num_heads >= 2 else 2, 4))
        seq_len = draw(st.integers(1, 6))
        return dict(batch_size=draw(st.integers(1, 3)), seq_len=seq_len, d_model=d_model, num_heads=num_heads,
                    d_ff=draw(st.integers(1, 9)), vocab_size=draw(st.integers(2, 9)),
                    max_len=seq_len + draw(st.integers(0, 3)), n_layers=draw(st.integers(1, 2)))

    # derandomized: the statistical checks (init_stats, dropout) reject a correct module in 0.12% / 0.04% of
    # seeds, so fresh random seeds on every run would make this test fail now and then (it did, once)
    @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(cfg=sizes(), seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from(["float64", "float32"]))
    def run(cfg, seed, dtype):
        result = gradlab.check(kind, seed=seed, dtype=dtype, **cfg)
        assert result.passed, [f"{c.name}: {c.message}" for c in result.checks if not c.ok]
    run()


def test_statistical_tests_agree_with_scipy_stats():
    """gradlab.numerics.stats (scipy.special, cheap to import) gives scipy.stats' p-values."""
    from scipy import stats as sst
    from scipy.special import ndtr
    from gradlab.numerics import stats
    rng = np.random.default_rng(0)
    for z in (0.0, 1.3, -2.7, 4.5):
        assert stats.normal_two_sided(z) == pytest.approx(2 * sst.norm.sf(abs(z)), rel=1e-12)
    for k, n, p in ((11400, 16384, 0.7), (1700, 16384, 0.1), (5, 20, 0.3)):
        assert stats.binomial_two_sided(k, n, p) == pytest.approx(sst.binomtest(k, n, p).pvalue, rel=0.05, abs=1e-12)
    for x, cdf, name, args in ((rng.uniform(-2, 2, 16384), lambda v: np.clip((v + 2) / 4, 0, 1), "uniform", (-2, 4)),
                               (rng.normal(0, 3, 16384), lambda v: ndtr(v / 3), "norm", (0, 3)),
                               (rng.normal(0, 3.2, 16384), lambda v: ndtr(v / 3), "norm", (0, 3))):
        d, p_value = stats.ks_test(x, cdf)
        want = sst.kstest(x, name, args=args)
        assert d == pytest.approx(want.statistic, rel=1e-9)
        assert p_value == pytest.approx(want.pvalue, rel=0.05, abs=1e-12)


def test_key_padding_judges_the_forward_of_a_forward_only_module(zoo, run):
    result = run("cross_attention", zoo("art_cross_forward_only.py"))
    assert result["key_padding"].status == "pass", result["key_padding"].message
    assert "no gradient checked" in result["key_padding"].message
    assert result["gradient"].status == "skip"
    broken = run("cross_attention", zoo("art_cross_mask_ignored.py"), checks=["key_padding"])
    assert broken["key_padding"].status == "fail"


def test_the_report_shows_the_new_kinds_views(zoo, run):
    """The HTML report renders the new checks' figures (tables, heatmaps, curves) like any other."""
    from gradlab.frontends.report.render import render
    results = [run("sinusoidal", zoo("art_sinusoidal_halves.py")),
               run("cross_attention", zoo("art_cross_mask_inverted.py")),
               run("warmup", zoo("art_warmup_starts_at_one.py")),
               run("chunked_attention", None, checks=["memory"])]
    html = render(results)
    for words in ("sinusoidal", "concatenated halves", "key_padding", "looks inverted", "learning rate per step",
                  "peak memory of one call"):
        assert words in html, words


def test_a_hard_target_gradient_is_named_by_the_reference_check(run, zoo):
    """Plain cross-entropy's mistakes are not label smoothing's: the hard-target gradient equals the gradient of
    'the loss summed over positions', which the reference check named for a loss that is right."""
    record = run("label_smoothing", zoo("art_label_smoothing_hard_grad.py"), ["reference"])["reference"]
    assert record.status == "fail", record.message
    assert "hard one-hot target" in record.message and "summed over positions" not in record.message, record.message


def test_a_mask_multiplied_in_after_the_softmax_is_named(run, zoo):
    # its padded keys get weight 0, so "padded keys must get zero weight" would point the wrong way: their
    # scores are still in the softmax's sum (the gradient check fails first on the same file, as it should)
    record = run("cross_attention", zoo("art_cross_mask_after_softmax.py"), checks=["key_padding"])["key_padding"]
    assert record.status == "fail", record.message
    for words in ("attn_weights are 0 at the padded keys", "still enter the softmax's sum", "after the softmax"):
        assert words in record.message, record.message


def test_dropout_scaled_at_evaluation_names_forward_too(zoo, run):
    """The gradient check (training=False) sees backward and forward disagree by 1/(1-p): scaling at
    evaluation in one of them, not "a factor missing in backward" alone (it blamed backward)."""
    (record,) = run("dropout", zoo("art_dropout_eval_scaled.py"), checks=["gradient"]).checks[1:]
    assert record.status == "fail", record.message
    for words in ("derivative of your forward", "1/(1-p)", "training=False", "identity when training is False"):
        assert words in record.message, (words, record.message)


@pytest.mark.parametrize("sizes", [{"seq_len": 7}, {"seq_len": 8}, {"seq_len": 1, "max_len": 2}])
def test_a_seq2seq_holding_its_table_for_max_len_passes_up_to_max_len(zoo, run, sizes):
    # the source was seq_len + 2 long, past max_len: forward could not add the table (smoke, copy_task)
    result = run("seq2seq", zoo("art_seq2seq_ok_table_for_max_len.py"), seed=1, **sizes)
    assert result.passed and not [c for c in result.checks if c.status == "error"], \
        [(c.name, c.message) for c in result.checks if not c.ok]


@pytest.mark.parametrize("max_len", [8, 512, 5000])
def test_a_float32_sinusoidal_table_passes_at_long_lengths_and_a_wrong_one_does_not(zoo, run, all_pass, max_len):
    # float32 rounds the angle pos / 10000**(2i/d) to ~6e-8 of itself: at position 461 sin moved by 2.8e-5, over
    # a fixed 1e-5 tolerance, and a correct float32 table failed from max_len ~200
    all_pass(run("sinusoidal", zoo("art_sinusoidal_ok_float32_exp_log.py"), seed=1, max_len=max_len, d_model=64),
             max_len)
    record = run("sinusoidal", zoo("art_sinusoidal_float32_from_one.py"), seed=1, max_len=max_len,
                 d_model=64)["table"]
    assert record.status == "fail" and "positions start at 1" in record.message, record.message


def test_a_mask_handled_wrong_is_not_blamed_on_a_last_sample_cache(zoo, run):
    # gradlab pads every sample but the last, so "right for the last sample only" said a loop over the samples
    # overwrote its cache; it is the padding mask
    record = run("cross_attention", zoo("art_cross_mask_after_softmax.py"), checks=["gradient"], seed=0)["gradient"]
    assert record.status == "fail", record.message
    assert "right only for the samples with no padded key (1)" in record.message, record.message
    assert "cache" not in record.message


def test_a_float16_table_from_one_is_named_at_long_lengths(zoo, run):
    # the slip was looked for within the largest per-entry allowance (4 at the far end), and "concatenated halves"
    # matched first
    record = run("sinusoidal", zoo("art_sinusoidal_float16_from_one.py"), seed=0, max_len=512, d_model=8)["table"]
    assert record.status == "fail" and "positions start at 1" in record.message, record.message



def test_the_advice_for_an_all_padded_row_fits_the_dtype():
    # it said "mask with -1e9 instead of -inf" to a float16 module, where -1e9 overflows to -inf as well
    from gradlab.checks.key_padding import _finite
    from gradlab.contract.errors import CheckFailure
    from gradlab.contract.kinds import KINDS
    for dtype, words in (("float16", "-1e4 or np.finfo(scores.dtype).min in float16"), ("float64", "(uniform weights): -1e9")):
        with pytest.raises(CheckFailure) as info:
            _finite(KINDS["cross_attention"], np.array([[np.nan, 1.0]], dtype=dtype), "forward's output")
        assert words in str(info.value)
