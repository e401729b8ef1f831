"""The seed articles' own modules (/work/shared/seeds, tests/zoo/seeds/), copied as a
student would and wrapped thinly, pass or fail exactly as their code deserves:
- article 001 (all its kinds): the attention (forward and backward) passes everything;
  its LayerNorm and FFN, printed without a backward, get every forward check and the
  gradient checks skip with that reason; softmax, clip_grad_norm and AdamW pass; its Adam
  has no weight decay ("Adam 本身不要求加入权重衰减"), which PyTorch's Adam has: the
  trajectory runs with weight decay too and fails naming it, every other check passes;
  cross_entropy_with_grad has no ignore_index: one failure (`signature`), every other
  check passes on unpadded targets.
- article 000 (partly: its attention works on one unbatched sequence and mixes heads,
  its encoder layer is post-LN without a backward): the warmup scheduler passes; its
  ReLU FFN passes the forward checks with --set activation=relu and fails `reference`
  naming ReLU without it; `layer_norm(x)` makes gamma and beta inside the call and
  the sinusoidal `positional_encoding` has no weights: CONTRACT §3's layernorm and
  (learned) positional have parameters, so smoke fails naming the ones expected.
"""
from pathlib import Path

import pytest

import gradlab

SEEDS = Path(__file__).parent / "zoo" / "seeds"
FORWARD_ONLY_SKIPS = {"gradient", "backward", "overfit"}

# file, kind, cfg overrides, {check: status} of every check that does not pass, words of the failing one
TABLE = [
    ("seed001_attention.py", "attention", {}, {}, []),
    ("seed001_parts_forward_only.py", "layernorm", {}, dict.fromkeys(FORWARD_ONLY_SKIPS, "skip"),
     ["has no backward() method", "forward-only"]),
    ("seed001_parts_forward_only.py", "ffn", {}, dict.fromkeys(FORWARD_ONLY_SKIPS, "skip"),
     ["has no backward() method", "forward-only"]),
    ("seed001_functions.py", "softmax", {}, {}, []),
    ("seed001_functions.py", "clip_grad_norm", {}, {}, []),
    ("seed001_functions.py", "cross_entropy", {}, {"signature": "fail"},
     ["takes no ignore_index argument", "ignore_index=None", "add nothing to the loss", "zero gradient"]),
    ("seed001_adam.py", "adamw", {}, {}, []),
    ("seed000_modules.py", "schedule", {}, {}, []),
    ("seed000_modules.py", "ffn", {"activation": "relu"}, dict.fromkeys(FORWARD_ONLY_SKIPS, "skip"),
     ["FFN has no backward() method"]),
    ("seed000_modules.py", "ffn", {}, {**dict.fromkeys(FORWARD_ONLY_SKIPS, "skip"), "reference": "fail"},
     ["your output matches ReLU", "GELU"]),
    ("seed000_modules.py", "layernorm", {}, {"smoke": "fail"},
     ["found no parameters", "gamma (12,) = (d_model,)", "beta (12,)"]),
    ("seed000_modules.py", "positional", {}, {"smoke": "fail"},
     ["found no parameters", "array attributes pe (8, 12)", "learned positional embedding",
      "weight (8, 12) = (max_len, d_model)"]),
]


@pytest.mark.parametrize("name, kind, cfg, expected, words", TABLE,
                         ids=[f"{r[0][4:7]}-{r[1]}" + ("-" + "-".join(r[2].values()) if r[2] else "") for r in TABLE])
def test_seed_article_module(name, kind, cfg, expected, words):
    result = gradlab.check(kind, impl=str(SEEDS / name), seed=0, **cfg)
    got = {c.name: c.status for c in result.checks if c.status != "pass"}
    if "smoke" in expected:         # the precondition failed: the rest is skipped, as it says
        got = {k: v for k, v in got.items() if k == "smoke"}
    assert got == expected, [(c.name, c.status, c.message) for c in result.checks if c.status != "pass"]
    failing = [c.message for c in result.checks if c.status == "fail"]
    # the words are in the failure when there is one, else in every skip's reason
    for message in failing[:1] or [c.message for c in result.checks if c.status == "skip"]:
        for w in words:
            assert w in message, (w, message)


def test_seed_article_adam_fails_only_for_the_weight_decay_it_does_not_have():
    result = gradlab.check("adam", impl=str(SEEDS / "seed001_adam.py"), seed=0)
    assert [c.name for c in result.checks if c.status != "pass" and c.name != "trajectory"] == []
    trajectory = result["trajectory"]           # the trajectory runs with weight decay too: caught there
    assert trajectory.status == "fail", trajectory.message
    assert "adam (gradlab's second run's weight_decay=0.01," in trajectory.message
    assert "weight_decay is ignored" in trajectory.message
