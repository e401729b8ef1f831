"""What training can tell: the `train` check over 10 seeds on correct LMs and on
one with a transposed (square) attention out_weight gradient, which still
learns; and the CPU time of `gradlab train` at its default size.

    OPENBLAS_NUM_THREADS=1 python benchmarks/train_separation.py

Prints, per model and dtype, how many seeds pass and the largest gap between
the model's loss curve and the reference's (same weights, same batches).
README "Train a tiny model" quotes the result.
"""
import os
import time
from pathlib import Path

import numpy as np

import gradlab
from gradlab.training import train

ZOO = Path(__file__).resolve().parents[1] / "tests" / "zoo"
MODELS = [("reference", None), ("red_mod_lm_ok_tied (correct)", ZOO / "red_mod_lm_ok_tied.py"),
          ("train_bad_lm_transposed_out_grad", ZOO / "train_bad_lm_transposed_out_grad.py")]


def main(seeds=10):
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    for dtype in ("float64", "float32"):
        for label, impl in MODELS:
            gaps, passed = [], 0
            for seed in range(seeds):
                record = gradlab.check("lm", impl=impl and str(impl), checks=["train"], seed=seed,
                                       dtype=dtype)["train"]
                passed += record.status == "pass"
                gaps.append(record.metrics.get("curve_gap", float("nan")))
            print(f"{dtype}  {label:36s} pass {passed}/{seeds}  curve gap min {np.nanmin(gaps):.2e} "
                  f"max {np.nanmax(gaps):.2e}")
    start = time.process_time()
    record = train(seed=0).checks[0]
    print(f"gradlab train, default size, reference: {time.process_time() - start:.2f} s CPU ({record.status})")


if __name__ == "__main__":
    main()
