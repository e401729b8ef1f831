"""The toy tasks, generated in code: a sequence of n symbols, a separator, and
the same symbols copied or reversed. The model reads the whole sequence (next
token prediction); only the second half is scored, the first half is random
and cannot be predicted.

    symbols 1 .. V-2, separator V-1, ignored target 0
    copy:    3 7 1 | 3 7 1        reverse: 3 7 1 | 1 7 3
"""
import numpy as np

TASKS = ("reverse", "copy")
IGNORE = 0


def batch(rng, task, batch_size, n, vocab_size):
    """(ids (B, 2n), targets (B, 2n)): targets are the ids shifted by one, 0 where not scored."""
    a = rng.integers(1, vocab_size - 1, size=(batch_size, n))
    b = a[:, ::-1] if task == "reverse" else a
    seq = np.concatenate([a, np.full((batch_size, 1), vocab_size - 1), b], axis=1)     # (B, 2n + 1)
    ids, targets = seq[:, :-1], seq[:, 1:].copy()
    targets[:, :n] = IGNORE                   # the first half's next symbols are random: not scored
    return ids, targets


def tokens(ids, vocab_size):
    """Words for the axes of an attention map."""
    return ["|" if int(t) == vocab_size - 1 else str(int(t)) for t in ids]
