"""Red-team zoo for the function and optimizer kinds: student files written
only against CONTRACT.md, in styles unlike gradlab's reference (the seed
article's code, torch-like state dicts keyed by id(param), velocity lists,
one-hot and log_softmax cross-entropies, float32-only code, a callable-object
schedule). Correct ones must pass every check, on several seeds and in both
dtypes; broken ones (one quiet bug each) must fail, and the first check that
fails must name the step / parameter / position and the likely cause."""
import pytest

import gradlab

# file, kind, first failing check (None: passes every check), words its message must contain
TABLE = [
    # ---- correct ----------------------------------------------------------------------------------------
    ("red_fn_ok_seed_article.py", "softmax", None, []),
    ("red_fn_ok_seed_article.py", "cross_entropy", None, []),
    ("red_fn_ok_seed_article.py", "adamw", None, []),
    ("red_fn_ok_seed_article.py", "clip_grad_norm", None, []),
    ("red_fn_ok_adam_torch_state.py", "adam", None, []),
    ("red_fn_ok_adamw_slices.py", "adamw", None, []),
    ("red_fn_ok_sgd_list_velocity.py", "sgd", None, []),
    # float32 arithmetic whatever cfg.dtype says (its parameters all float32 numbers): judged as float32
    ("red_fn_ok_adam_float32_math.py", "adam", None, []),
    # only the moments in float32 (the parameters stay float64): every step's change is a float32 number
    ("red_fn_ok_adam_float32_moments.py", "adam", None, []),
    ("red_fn_ok_adam_float32_moments_f64_scalar.py", "adam", None, []),
    ("red_fn_ok_adamw_float32_moments.py", "adamw", None, []),
    ("red_fn_ok_sgd_nesterov_flag.py", "sgd", None, []),
    ("red_fn_ok_ce_onehot_float32.py", "cross_entropy", None, []),
    ("red_fn_ok_ce_logsoftmax_where.py", "cross_entropy", None, []),
    ("red_fn_ok_softmax_float32.py", "softmax", None, []),
    ("red_fn_ok_schedule_class.py", "schedule", None, []),
    ("red_fn_ok_schedule_float32.py", "schedule", None, []),
    ("red_fn_ok_clip_concat.py", "clip_grad_norm", None, []),
    # leaving out the + 1e-6 changes the clipped gradients by ~1e-7 of their size: not judged a bug
    ("red_fn_bad_clip_no_eps.py", "clip_grad_norm", None, []),
    # ---- broken: optimizers --------------------------------------------------------------------------------
    # every optimizer runs with and without weight decay (the kind's default and the other setting): the
    # article's Adam takes a weight_decay argument and ignores it; the decoupled one is AdamW's rule in Adam
    ("red_fn_ok_seed_article.py", "adam", "trajectory", ["weight_decay=0.01", "weight_decay is ignored"]),
    ("red_fn_bad_adam_decoupled_wd.py", "adam", "trajectory", ["weight_decay=0.01", "decoupled (AdamW style)"]),
    # the second run moves every hyperparameter the reference reads, each to its own value: one hard-coded at its
    # default, or read from another field with the same default, shows there
    ("red_fn_bad_sgd_momentum_from_beta1.py", "sgd", "trajectory", ["momentum=0.5", "the momentum is cfg.beta1"]),
    ("red_fn_bad_adam_fixed_betas.py", "adam", "trajectory", ["beta1=0.8, beta2=0.99", "hard-coded?"]),
    ("red_fn_bad_schedule_float32_warmup_sqrt.py", "schedule", "trajectory", ["warmup_steps**-0.5"]),
    ("red_fn_bad_adamw_fixed_eps.py", "adamw", "trajectory", ["eps=0.1", "eps stays 1e-8", "hard-coded?"]),
    ("red_fn_bad_adam_float32_math_eps_inside.py", "adam", "trajectory",
     ["rounds to in float32", "eps is inside the square root"]),
    ("red_fn_bad_sgd_decoupled_decay.py", "sgd", "trajectory", ["weight decay is decoupled", "rides the momentum"]),
    ("red_fn_bad_adamw_matrices_only.py", "adamw", "trajectory", ["only parameters with 2 or more axes are decayed"]),
    ("red_fn_bad_adam_module_counter.py", "adam", "trajectory",
     ["two optimizers built the same way and stepped in turn", "outside the instance"]),
    ("red_fn_bad_adam_float32_moments_eps_inside.py", "adam", "trajectory",
     ["rounds to in float32", "eps is inside the square root"]),
    ("red_fn_bad_adam_float32_moments_no_bias_correction.py", "adam", "trajectory",
     ["after step 1", "only m is bias-corrected"]),
    ("red_fn_bad_adam_t_in_helper.py", "adam", "trajectory", ["after step 1", "'w1'", "t is counted per parameter"]),
    ("red_fn_bad_adam_t_after.py", "adam", "trajectory", ["after step 1", "got nan", "t = 0"]),
    ("red_fn_bad_adam_t_from_one.py", "adam", "trajectory", ["after step 1", "t starts at 1", "start t at 0"]),
    ("red_fn_bad_adam_m_uncorrected.py", "adam", "trajectory", ["after step 1", "only v is bias-corrected"]),
    ("red_fn_bad_adam_v_uncorrected.py", "adam", "trajectory", ["after step 1", "only m is bias-corrected"]),
    ("red_fn_bad_adam_eps_hat.py", "adam", "trajectory", ["after step 1", "before v's bias correction"]),
    ("red_fn_bad_adam_class_state.py", "adam", "trajectory", ["two optimizers", "share state between instances"]),
    ("red_fn_bad_adamw_eps_inside.py", "adamw", "trajectory", ["after step 1", "eps is inside the square root"]),
    ("red_fn_bad_adamw_decay_after_update.py", "adamw", "trajectory", ["after step 1", "decayed after"]),
    ("red_fn_bad_adamw_coupled_l2.py", "adamw", "trajectory", ["after step 1", "coupled into the gradient"]),
    ("red_fn_bad_adamw_double_decay.py", "adamw", "trajectory", ["after step 1", "decayed twice"]),
    ("red_fn_bad_adamw_dict_rebind.py", "adamw", "trajectory", ["step 1", "params['bias']", "in place"]),
    ("red_fn_bad_sgd_dampened_zeros.py", "sgd", "trajectory", ["after step 1", "damped moving average"]),
    ("red_fn_bad_sgd_nesterov.py", "sgd", "trajectory", ["after step 1", "Nesterov"]),
    ("red_fn_bad_sgd_one_velocity.py", "sgd", "trajectory", ["after step 1", "'w1'", "shared by all parameters"]),
    ("red_fn_bad_sgd_local_rebind.py", "sgd", "smoke", ["left params unchanged", "in place"]),
    # ---- broken: clipping and schedule ---------------------------------------------------------------------
    ("red_fn_bad_clip_each_array.py", "clip_grad_norm", "trajectory", ["call 1", "its own norm", "global norm"]),
    ("red_fn_bad_clip_returns_clipped.py", "clip_grad_norm", "trajectory", ["call 1", "norm after clipping"]),
    # the arrays are scaled in place: 'not changed in place' must not explain a wrong returned norm
    ("red_fn_bad_clip_rms.py", "clip_grad_norm", "trajectory", ["call 1", "root-mean-square"]),
    ("red_fn_bad_clip_always_scale.py", "clip_grad_norm", "trajectory", ["call 2", "below max_norm", "scaled up"]),
    ("red_fn_bad_schedule_plus_one.py", "schedule", "trajectory", ["step 1", "counted from 0"]),
    ("red_fn_bad_schedule_warmup_linear.py", "schedule", "trajectory", ["step 1", "warmup_steps**-1.0"]),
    # ---- broken: softmax and cross-entropy -----------------------------------------------------------------
    ("red_fn_bad_softmax_axis0.py", "softmax", "softmax_rows", ["row [0, 0]", "axis 0 (the batch)", "axis=-1"]),
    ("red_fn_bad_softmax_no_max.py", "softmax", "finite", ["NaN", "subtract the row maximum"]),
    ("red_fn_bad_softmax_inplace.py", "softmax", "input_mutation", ["changed the caller's x", "x -= x.max"]),
    ("red_fn_bad_ce_double_mean.py", "cross_entropy", "gradient", ["position", "loss is right",
                                                                     "divided by the number of targets", "twice"]),
    ("red_fn_bad_ce_batch_then_all.py", "cross_entropy", "gradient", ["matches gradlab's reference",
                                                                        "the loss that is off", "0.5 x"]),
    ("red_fn_bad_ce_mean_all_targets.py", "cross_entropy", "reference", ["ignore_index=0",
                                                                           "ignored positions are counted"]),
    ("red_fn_bad_ce_ignored_grad.py", "cross_entropy", "gradient", ["ignore_index=0", "position",
                                                                      "ignored positions", "not zero"]),
    ("red_fn_bad_ce_no_max.py", "cross_entropy", "finite", ["logits around 1000", "log-sum-exp"]),
    ("red_fn_bad_ce_flat_grad.py", "cross_entropy", "smoke", ["(10, 11)", "reshape", "(B, T, V)"]),
    ("red_fn_bad_ce_inplace_shift.py", "cross_entropy", "input_mutation", ["changed the caller's logits"]),
    ("red_fn_bad_ce_pads_targets.py", "cross_entropy", "input_mutation", ["changed the caller's targets",
                                                                            "ignore_index"]),
    ("red_fn_bad_ce_no_ignore_kwarg.py", "cross_entropy", "signature", ["no ignore_index argument",
                                                                               "ignore_index=None"]),
]


def _first_failure(result):
    return next((c for c in result.checks if c.status in ("fail", "error")), None)


@pytest.mark.parametrize("name, kind, first, words", TABLE, ids=[f"{t[0][7:-3]}-{t[1]}" for t in TABLE])
def test_outcome_and_message(zoo, run, first_failure, name, kind, first, words):
    first_failure(name, run(kind, zoo(name)), first, words)


@pytest.mark.parametrize("name, kind, first", [(n, k, f) for n, k, f, _ in TABLE],
                         ids=[f"{t[0][7:-3]}-{t[1]}" for t in TABLE])
def test_other_seeds_and_float32(zoo, all_pass, name, kind, first):
    """Correct files pass and broken ones fail on other seeds and in float32 too."""
    for seed, dtype in ((1, "float32"), (2, "float64"), (3, "float32")):
        result = gradlab.check(kind, impl=zoo(name), seed=seed, dtype=dtype)
        bad = _first_failure(result)
        if first is None:
            all_pass(result, seed, dtype)
        else:
            assert bad is not None, f"{name} ({kind}) passed every check at seed {seed}, {dtype}"


def test_adam_decoupled_decay_is_caught_once_weight_decay_is_set(zoo):
    bad = _first_failure(gradlab.check("adam", impl=zoo("red_fn_bad_adam_decoupled_wd.py"), seed=0,
                                       weight_decay=0.01))
    assert bad is not None and bad.name == "trajectory"
    assert "decoupled (AdamW style)" in bad.message
