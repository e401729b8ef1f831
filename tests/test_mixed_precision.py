"""The mixed_precision kind: the articles' to_half_precision / to_full_precision
and loss scaling (static and dynamic), against the reference, with a correct
student-style module and one broken module per quiet bug."""
import pytest

from gradlab.contract.errors import UsageError

BROKEN = [
    ("mp_bad_no_unscale.py", ["step 1", "1024 x the reference's", "divide the float16 gradients by loss_scale"]),
    ("mp_bad_unscale_in_half.py", ["step 2", "1e-7", "unscaled in float16", "cast the gradients to float32 first"]),
    ("mp_bad_no_skip.py", ["step 3", "inf", "must be skipped", "return False", "your step updated the weights"]),
    ("mp_bad_static_backoff.py", ["static loss scaling", "is 512, the reference's 1024", "never changes"]),
    ("mp_bad_never_grows.py", ["dynamic loss scaling", "after step 7", "doubles the scale after growth_interval = 4"]),
    ("mp_bad_int_scale.py", ["gradlab's third run: cfg.loss_scale = 256.5", "is 256, the reference's 256.5"]),
    ("mp_bad_count_not_reset_at_growth.py", ["dynamic loss scaling", "after step 8", "is 2048, the reference's 1024",
                                             "counted since the last overflow or growth"]),
    ("mp_bad_half_converts_all.py", ["to_half_precision converted integer token ids", "only float32 arrays",
                                     "above 2048"]),
    ("mp_bad_hardcoded_scale.py", ["gradlab's third run: cfg.loss_scale = 256.5", "must be cfg.loss_scale = 256.5"]),
    ("mp_bad_half_converts_floats.py", ["to_half_precision converted a float64 array", "v.dtype == np.float32"]),
    # at the kind's lr of 1 both passed: the third run moves lr too
    ("mp_bad_no_lr.py", ["cfg.lr = 0.37", "2.703 x the reference's, 1/lr", "the learning rate is left out"]),
    ("mp_bad_lr_times_half_grad.py", ["cfg.lr = 0.37", "more than float32's rounding", "computed in float16"]),
    # every scripted step started from zero master weights, which float16 holds exactly: it passed
    ("mp_bad_master_from_half.py", ["master weights of about 1e-3", "rounded to float16 in the step",
                                    "keep them float32 throughout"]),
    # off by 3.8e-6 of the update at the third run's 256.5, under the 1e-5 allowed then
    ("mp_bad_reciprocal_in_half.py", ["cfg.loss_scale = 256.5", "1/loss_scale taken in float16"]),
]


@pytest.mark.parametrize("impl", [None, "mp_ok_student.py"])
def test_correct_implementations_pass(zoo, run, all_pass, impl):
    for seed in range(20):
        all_pass(run("mixed_precision", impl and zoo(impl), seed=seed), seed)
    # other settings: a scale that is not a power of two, a short growth interval, float32 cfg
    # (and the ends of the ranges, where the third run's moved settings were refused mid-run: exit 2)
    for overrides in ({"loss_scale": 1000.0}, {"growth_interval": 2}, {"dtype": "float32"}, {"dtype": "float16"},
                      {"loss_scale": 1.0}, {"growth_interval": 10000}, {"lr": 1e-8}, {"lr": 100.0}):
        all_pass(run("mixed_precision", impl and zoo(impl), seed=3, **overrides), overrides)


@pytest.mark.parametrize("impl, words", BROKEN, ids=[b[0][7:-3] for b in BROKEN])
def test_each_quiet_bug_is_named(zoo, run, impl, words):
    for seed in range(3):
        record = run("mixed_precision", zoo(impl), seed=seed)["mixed_precision"]
        assert record.status == "fail", (seed, record.message)
        for w in words:
            assert w in record.message, (w, record.message)


@pytest.mark.parametrize("impl, words", [
    ("mp_bad_unscale_in_half.py", ["they were unscaled in float16", "cast the gradients to float32 first"]),
    ("mp_bad_update_in_half.py", ["unscaled in float32, but the update lr * grad was computed in float16"]),
])
def test_where_float16_rounded_the_step_is_told_when_lr_tells_it(zoo, run, impl, words):
    """At lr = 1 (the kind's default) the two roundings give the same numbers, and the message names both; at
    another lr only one reproduces the step."""
    record = run("mixed_precision", zoo(impl), seed=0, lr=0.5)["mixed_precision"]
    assert record.status == "fail" and all(w in record.message for w in words), record.message


def test_bad_loss_scaling_option_is_a_usage_error(run):
    with pytest.raises(UsageError, match="loss_scaling='banana': must be one of 'dynamic', 'static'"):
        run("mixed_precision", loss_scaling="banana")


def test_a_missing_method_is_one_clear_error(run):
    class StepOnly:
        loss_scale = 1024.0

        def step(self, master, half_grads):
            for k, g in half_grads.items():
                master[k] -= g.astype(master[k].dtype) / self.loss_scale
            return True

    def build(cfg):
        return StepOnly()

    record = run("mixed_precision", build, checks=["mixed_precision"])["mixed_precision"]
    assert record.status == "error" and "StepOnly has no to_half_precision() method" in record.message
