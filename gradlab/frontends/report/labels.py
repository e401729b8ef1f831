"""Plain words for the numbers checks record (`CheckRecord.metrics`).

The JSON keeps every key as the check wrote it; the report shows a metric
under its label here, hides the ones marked None (gradlab's own bookkeeping:
how many calls, which finite-difference step, how often a kink made it draw a
new input), and shows a key this table does not know with its underscores as
spaces, so a new check's numbers still appear.
"""

LABELS = {
    # gradient, reference, trajectory, repeated_ids
    "max_error": "largest error",
    "tolerance": "tolerance",
    "worst_tensor": "wrong tensor",
    "wrong_tensors": "all wrong tensors",
    "worst_index": "worst element",
    "analytical": "your gradient there",
    "numerical": "finite differences there",
    "numerics": "compared against",
    "tensors": "tensors checked",
    "weights": "weights copied",
    "parameter": "parameter",
    "property": "property broken",
    "tensor": "tensor",
    # structure checks
    "parameters": "parameters found",
    "rows": "rows checked",
    "mismatches": "wrong shapes",
    "arrays": "arrays watched",
    "compared": "tensors compared",
    "leaking_pairs": "leaking pairs",
    "future_pairs": "future pairs tested",
    "max_leak": "largest leak",
    "max_sum_error": "largest row-sum error",
    "max_future_weight": "largest weight on the future",
    "repeated_ids": "repeated ids",
    "rows_checked": "rows checked",
    "failed_properties": "failed properties",
    # training
    "steps": "steps",
    "final_loss": "your final loss",
    "lowest_loss": "your lowest loss",
    "reference_final_loss": "reference final loss",
    "limit": "bar (loss to reach)",
    "limit_step": "bar set by the reference at step",
    "reference_drop": "reference loss drop",
    "accuracy": "your accuracy",
    "reference_accuracy": "reference accuracy",
    "curve_gap": "largest gap to the reference's loss",
    "call": "call",
    "total_norm": "total norm",
    "max_norm": "max_norm",
    "step": "step",
    "loss_first": "your first loss",
    "loss_lowest": "your lowest loss",
    "reference_lowest": "reference lowest loss",
    "bar": "bar (loss to reach)",
    "lr": "learning rate",
    "warmup_steps": "warmup_steps",
    "weight_decay": "weight_decay",
    "first": "first scheduler's first value",
    "second": "second scheduler's first value",
    "reference": "reference value",
    # float16 and mixed precision
    "dtype": "dtype",
    "overflow": "overflow",
    "underflow": "underflow",
    "loss_scale": "loss scale",
    "skipped_steps": "skipped steps",
    # smoke, backward, determinism, input_mutation, finite, reference
    "forward_only": "forward only (no backward yet)",
    "moved": "largest change backward made to it",
    "max_difference": "largest difference between the two runs",
    "changed_entries": "entries changed",
    "argument": "argument changed",
    "non_finite": "non-finite entries",
    "shift": "input shifted by",
    "field": "cfg field moved",
    "value": "moved to",
    "axis": "axis",
    "shape": "your shape",
    "expected": "expected",
    "d_model": "d_model",
    # chunking and memory
    "chunk_size": "chunk size",
    "chunk_sizes": "chunk sizes compared",
    "causal": "causal",
    "causal_checked": "causal chunks checked",
    "peak_bytes_small": "peak memory at the shorter length (bytes)",
    "peak_bytes_large": "peak memory at the longer length (bytes)",
    "growth_exponent": "growth of the peak with T (1: like T, 2: like T squared)",
    "bytes_per_chunk_entry": "bytes per chunk_size x T score",
    # statistical checks: init_stats, dropout
    "alpha": "false-alarm rate per test",
    "tests": "statistical tests",
    "draws": "numbers drawn",
    "scheme": "initialiser",
    "variance": "your variance",
    "distinct": "distinct values",
    "repeated_call": "a second call repeats the first",
    "p": "drop probability p",
    "scale": "survivors scaled by",
    "kept_fraction": "fraction kept",
    "case": "case",
    # losses and their signatures: smoothing, signature, key_padding
    "epsilon": "epsilon",
    "epsilons": "epsilons compared",
    "loss": "your loss",
    "keywords": "keyword arguments accepted",
    "missing": "keyword arguments missing",
    "default": "your default",
    "error": "largest difference",
    "padded_keys": "padded keys",
    "max_change": "largest change",
    "max_padded_weight": "largest weight on a padded key",
    "max_padded_grad": "largest gradient reaching a padded key",
}

# Fractions shown as percentages.
PERCENT = {"accuracy", "reference_accuracy", "curve_gap"}

# Internal bookkeeping: in the JSON, not on the card.
HIDDEN = {"kink_resamples", "resolution", "module_calls", "replay_seed", "backward_calls", "calls",
          "unconfirmed_joint_ratio", "applies"}
# per check, keys whose meaning differs from the shared label
BY_CHECK = {
    "gradient": {"step": None, "max_error": "error along a random direction (of the gradient's size)"},
    "reference": {"max_error": "largest difference (of the output's scale)"},
    "trajectory": {"step": "first wrong step", "reference": "reference learning rate"},
    "init_stats": {"expected": "expected variance"},
    "smoothing": {"reference": "reference loss"},
}


def label(check, key):
    """The words shown for metric `key` of `check`, or None when it is hidden."""
    specific = BY_CHECK.get(check, {})
    if key in specific:
        return specific[key]
    if key in HIDDEN:
        return None
    return LABELS.get(key, key.replace("_", " "))
