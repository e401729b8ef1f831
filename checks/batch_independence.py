"""`batch_independence`: the samples of a batch do not interact. Change one
sample and no other sample's output may move: a LayerNorm whose statistics
run over the batch, a reshape that mixes samples, or a softmax over axis 0
all break it (and all pass a gradient check)."""
from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.numerics.influence import influence_matrix
from gradlab.contract.kinds import PER_SAMPLE
from gradlab.contract.records import heatmap
from gradlab.execution.subject import call_softmax
from gradlab.contract.suite import Outcome, check


@check("batch_independence", needs={PER_SAMPLE}, order=45,
       summary="changing one sample changes no other sample's output")
def batch_independence(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    B = cfg.batch_size
    if B < 2:
        raise CheckSkipped(f"{kind.name}: batch_size={B}: needs at least 2 samples to compare (--set batch_size=2)")
    if kind.form == "function":
        x = (3 * rng.standard_normal(kind.input_shape(cfg))).astype(cfg.np_dtype)
        call = lambda inp: call_softmax(subject, inp)       # noqa: E731
        call_name = "softmax(x)"
    else:
        module, _ = subject.fresh(rng)
        x = subject.make_inputs(rng)
        call = lambda *inp: subject.forward(module, *inp)     # noqa: E731
        call_name = "forward"
    # change[r, c]: how much sample r's output moved when sample c's input changed (every array input:
    # x and the encoder memory; a padding mask stays as it is)
    change, tol = influence_matrix(call, kind, cfg, x, 0, rng, calls=_forwards(subject, module)
                                   if kind.form != "function" else None)
    leaks = [(c, r) for c in range(B) for r in range(B) if r != c and change[r, c] > tol]
    view = heatmap(f"{kind.name}: max |change| of sample (row)'s output when sample (column)'s input changes; "
                   "off the diagonal must be 0", change.tolist(), xlabel="changed sample", ylabel="output sample")
    metrics = {"leaking_pairs": len(leaks), "max_leak": float(max((change[r, c] for c, r in leaks), default=0.0)),
               "tolerance": tol}
    if leaks:
        c, r = leaks[0]
        raise CheckFailure(
            f"{kind.name}: changing sample {c} of the batch changed {call_name}'s output for sample {r} by "
            f"{change[r, c]:.3g} (tolerance {tol:.1g}): samples must not interact. Look for a mean, sum, max or "
            "softmax over axis 0 (the batch), e.g. LayerNorm statistics over the batch instead of the last "
            "axis, or a reshape that mixes samples (reshape(B*T, ...) read back in a different order)",
            metrics, {"views": [view]})
    return Outcome(f"changing each of the {B} samples moved only its own output", metrics, {"views": [view]})


def _forwards(subject, module):
    """forward on each of several argument tuples, in order (one request through a worker)."""
    return lambda many: subject.forwards(module, [(args, []) for args in many])
