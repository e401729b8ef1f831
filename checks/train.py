"""`train`: the student's language model trained on a toy task (reversing a
short sequence) beside gradlab's reference LM, from the same weights on the
same batches (gradlab.training). The bar is relative to the reference: the
student's loss at the end must be at most the reference's loss after half the
steps, so it holds across seeds (both runs see the same seed). Smaller than
`gradlab train` (CHECK_STEPS steps, d_model 16) to keep `check all` fast; run
`gradlab train --impl FILE` for the full run and its report (gradient flow,
attention maps).
"""
from gradlab.contract.errors import CheckSkipped
from gradlab.contract.kinds import CAUSAL, TOKEN_IDS
from gradlab.contract.suite import Outcome, check
from gradlab.training import run as training

CHECK_STEPS = 60
CHECK_SIZE = dict(d_model=16, d_ff=32, batch_size=16, lr=1e-2, half=3)


@check("train", needs={TOKEN_IDS, CAUSAL}, forms={"module"}, order=70,
       summary="a language model learns a toy task (reversal) at least half as fast as the reference")
def train(subject, rng):
    if subject.cfg.dtype == "float16":
        # (the reference itself learns the task in float16: what cannot be judged is a correct model computing in
        # another order, whose float16 rounding (3 digits) leaves the 1% band around the reference's curve)
        raise CheckSkipped(f"{subject.kind.name}: the train check holds your loss curve within 1% of the reference's, "
                           "which float16's 3 significant digits cannot promise a correct model that computes in "
                           "another order; run it in float32 or float64 (the mixed_precision kind checks training "
                           "with float16 compute)")
    cfg, half = training.config(int(rng.integers(0, 2**31)), **CHECK_SIZE, dtype=subject.cfg.dtype)
    part = subject.with_cfg(cfg)
    record = training.run_training({subject.kind.name: part}, cfg, half, CHECK_STEPS, "reverse",
                                   is_reference=subject.impl_name == "reference")
    return Outcome(record.message, record.metrics, record.details)
