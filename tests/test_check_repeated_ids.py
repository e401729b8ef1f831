"""`repeated_ids`: embedding gradients accumulate over repeated token ids."""
import numpy as np
import pytest

from gradlab.contract.config import Config
from gradlab.contract.kinds import KINDS, TOKEN_IDS

TOKEN_KINDS = [k for k, s in KINDS.items() if s.has(TOKEN_IDS)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", TOKEN_KINDS)
def test_reference_accumulates(run, kind, dtype):
    record = run(kind, None, ["repeated_ids"], dtype=dtype)["repeated_ids"]
    assert record.status == "pass", record.message
    assert record.metrics["repeated_ids"] >= 2


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name", [
    ("embedding", "repeated_ids_ok_embedding_onehot.py"),    # one-hot matmul, attribute-style dweight
    ("embedding", "repeated_ids_ok_embedding_loop.py"),      # a Python loop
    ("lm", "repeated_ids_ok_tiny_lm.py"),                     # np.add.at plus the tied output path
    ("lm", "repeated_ids_ok_tiny_lm_float32.py"),             # float32 tables whatever cfg.dtype says
])
def test_correct_variants_pass(run, zoo, kind, name, dtype):
    record = run(kind, zoo(name), ["repeated_ids"], dtype=dtype)["repeated_ids"]
    assert record.status == "pass", record.message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name, exact", [
    ("embedding", "repeated_ids_bad_embedding_overwrite.py", True),
    ("embedding", "repeated_ids_bad_embedding_plus_equals.py", True),
    ("lm", "repeated_ids_bad_tiny_lm_overwrite.py", False),
    ("lm", "repeated_ids_bad_tiny_lm_float32_overwrite.py", False),
])
def test_overwrite_is_caught(run, zoo, kind, name, exact, dtype):
    record = run(kind, zoo(name), ["repeated_ids"], dtype=dtype)["repeated_ids"]
    assert record.status == "fail", record.message
    for word in [kind, "overwrite instead of np.add.at", "appears", "times in the batch", "token id",
                 "np.add.at(dW, ids, g)"]:
        assert word in record.message
    if exact:
        assert "it equals the upstream gradient at" in record.message


def test_the_named_id_really_repeats(run, zoo):
    import re
    record = run("embedding", zoo("repeated_ids_bad_embedding_overwrite.py"), ["repeated_ids"])["repeated_ids"]
    count = int(re.search(r"appears (\d+) times", record.message).group(1))
    assert count >= 2


def test_batch_repeats_ids_within_and_across_rows():
    from gradlab.checks.repeated_ids import repeated_batch
    ids = repeated_batch(Config(), np.random.default_rng(0))
    a = ids[0, 0]
    assert ids[0, 1] == a and ids[-1, -1] == a
    assert ids[0, 2] == ids[-1, 0]


@pytest.mark.parametrize("batch_size, seq_len", [(3, 1), (2, 1), (1, 2)])
def test_tiny_batches_still_repeat_ids(zoo, run, batch_size, seq_len):
    """T = 1 (ids repeat across rows only) and B = 1: the overwrite is still caught, no crash."""
    sizes = dict(batch_size=batch_size, seq_len=seq_len, max_len=max(seq_len, 2))
    assert run("embedding", None, ["repeated_ids"], **sizes)["repeated_ids"].status == "pass"
    broken = run("embedding", zoo("repeated_ids_bad_embedding_overwrite.py"), ["repeated_ids"], **sizes)
    assert broken["repeated_ids"].status == "fail", broken["repeated_ids"].message
    assert "np.add.at" in broken["repeated_ids"].message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_buffer_never_zeroed_is_named_not_sent_to_the_gradient_check(run, zoo, dtype):
    # np.add.at into a gradient buffer that backward never zeroes: the first backward is right (the
    # gradient check passes), gradlab's parameter-finding call left its gradient in the buffer
    record = run("embedding", zoo("red_mod_embedding_not_zeroed.py"), ["repeated_ids"], dtype=dtype)["repeated_ids"]
    assert record.status == "fail", record.message
    for words in ["never zeroes", "np.add.at into it is right", "dW[...] = 0", "see the backward check"]:
        assert words in record.message, record.message
    assert "see the gradient check" not in record.message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_mean_over_occurrences_is_named_not_called_an_overwrite(run, zoo, dtype):
    result = run("embedding", zoo("repeated_ids_bad_embedding_count_mean.py"), ["repeated_ids", "gradient"], dtype=dtype)
    for name in ("repeated_ids", "gradient"):
        record = result[name]
        assert record.status == "fail", record.message
        assert "overwrite" not in record.message and "keeps one occurrence" not in record.message, record.message
        assert "drop the division" in record.message, record.message


@pytest.mark.parametrize("seed", range(4))
def test_a_row_holding_some_occurrences_is_not_called_an_overwrite(run, zoo, seed):
    # the last position left out: "an overwrite ... keeps one occurrence" was said of a row holding two of three
    record = run("embedding", zoo("diag_bad_embedding_drop_last_position.py"), ["repeated_ids"],
                 seed=seed)["repeated_ids"]
    assert record.status == "fail", record.message
    assert "overwrite" not in record.message and "keeps one occurrence" not in record.message, record.message
    assert "It holds the gradients of" in record.message or "is exactly 0" in record.message, record.message


@pytest.mark.parametrize("seed", range(3))
def test_a_zeroed_padding_row_is_caught_on_every_seed_and_named(run, zoo, seed):
    # id 0 is in every batch: a random batch of 10 ids from 11 left it out on 2 seeds of 3, and the bug passed
    record = run("embedding", zoo("repeated_ids_bad_embedding_padding_row.py"), ["repeated_ids"], seed=seed)
    record = record["repeated_ids"]
    assert record.status == "fail", record.message
    assert "row 0 is exactly 0" in record.message and "padding_idx" in record.message, record.message


def test_a_backward_scattering_by_stale_ids_is_named(run, zoo):
    """Every occurrence's gradient arrives, on other rows: not 'row 0 is exactly 0 (padding_idx?)' (a probe)."""
    for seed in (1, 2, 3):
        record = run("embedding", zoo("repeated_ids_bad_embedding_stale_ids.py"), ["repeated_ids"],
                     seed=seed)["repeated_ids"]
        assert record.status == "fail" and "ids that are not this forward's" in record.message, record.message
        assert "padding_idx" not in record.message
