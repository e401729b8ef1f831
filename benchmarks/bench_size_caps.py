"""The size cap of gradlab/contract/options.py: its estimate of a run's seconds
next to the measured time, for a few configurations near the cap.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_size_caps.py

options.estimate() models a run as (numbers one forward holds) x (forwards the
chosen checks make) x SECONDS_PER_NUMBER, plus the overfit check's training of
the reference LM. The cap refuses runs estimated above MAX_SECONDS; this prints
how far the estimate is from what a run takes, so the constant can be kept honest.
"""
import time

import gradlab
from gradlab.contract import options, suite
from gradlab.contract.kinds import KINDS
from gradlab.execution.plan import config_for

CASES = [
    ("layernorm", dict(batch_size=1000)),
    ("attention", dict(seq_len=64, max_len=64, batch_size=8, d_model=64, num_heads=4)),
    ("layernorm", dict(batch_size=200000), ["gradient"]),
    ("cross_entropy", dict(batch_size=100, seq_len=8, vocab_size=10000)),
    ("lm", dict(batch_size=4, seq_len=32, max_len=32, d_model=64, num_heads=4, vocab_size=1000, d_ff=128)),
]


def main():
    print(f"{'kind':<14} {'sizes':<62} {'checks':<9} {'estimate':>9} {'measured':>9} {'ratio':>6}")
    for kind, sizes, *checks in CASES:
        checks = checks[0] if checks else None
        names = checks or [c.name for c in suite.applicable(KINDS[kind])]
        cfg = config_for(kind, 0, **sizes)
        estimate, _ = options.estimate(kind, {k: getattr(cfg, k) for k in options.SIZES}, names)
        start = time.perf_counter()
        gradlab.check(kind, checks=checks, seed=0, **sizes)
        measured = time.perf_counter() - start
        label = " ".join(f"{k}={v}" for k, v in sizes.items())
        print(f"{kind:<14} {label:<62} {'some' if checks else 'all':<9} {estimate:>8.1f}s {measured:>8.1f}s "
              f"{measured / estimate:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
