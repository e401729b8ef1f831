"""`causality`: perturbing the input at position t must leave every output at
positions before t unchanged. A causal mask makes earlier outputs *exactly*
independent of later inputs (exp of -inf or of -1e9 is exactly 0 in float32
and float64), so the tolerance is only a guard against rounding noise."""
import numpy as np

from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.numerics.influence import influence_matrix
from gradlab.contract.kinds import ATTN_WEIGHTS, CAUSAL
from gradlab.contract.records import heatmap
from gradlab.contract.suite import Outcome, check
from gradlab.numerics.tolerance import tolerance


def _hint(subject, module):
    """Where to look: when the module's own attention weights are causal, the leak comes after them."""
    kind, cfg = subject.kind, subject.cfg
    B, H, T = cfg.batch_size, cfg.num_heads, cfg.seq_len
    weights = subject.attribute(module, "attn_weights") if kind.has(ATTN_WEIGHTS) else None
    if isinstance(weights, np.ndarray) and weights.shape == (B, H, T, T) \
            and not np.abs(np.triu(weights.astype(np.float64), k=1)).max() > 0:
        sums = weights.astype(np.float64).sum(axis=-1)
        off = float(np.abs(sums - 1).max())
        if off > tolerance("probability_sum", cfg.np_dtype, weights).rtol:
            # zeroed future weights whose rows do not sum to 1: the future is still in the softmax's denominator
            return (f"Your attn_weights are 0 above the diagonal but their rows sum to as little as "
                    f"{float(sums.min()):.4g}, not 1: the mask is applied after the softmax, so the future "
                    "scores still enter each row's normalisation; set scores[..., i, j] = -inf (or -1e9) for "
                    "j > i before the softmax")
        return ("Your attn_weights are causal (0 above the diagonal), so the leak comes after the softmax: "
                "merging heads with a reshape but no transpose((0, 2, 1, 3)) mixes time steps; "
                "merge with ctx.transpose(0, 2, 1, 3).reshape(B, T, D)")
    where = "the causal mask" if kind.has(ATTN_WEIGHTS) else "the causal mask of the attention inside"
    return (f"Look at {where}: scores[..., i, j] must be -inf (or -1e9) for every j > i, set before the "
            "softmax; and at anything that mixes time steps (a reshape without a transpose when merging heads, "
            "a mean over the time axis)")


@check("causality", needs={CAUSAL}, order=9,
       summary="perturbing position t changes no output at positions before t")
def causality(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    T = cfg.seq_len
    if T < 2:
        raise CheckSkipped(f"{kind.name}: seq_len={T}: causality needs at least 2 positions (--set seq_len=5)")
    module, _ = subject.fresh(rng)
    inputs = subject.make_inputs(rng)
    # only inputs declared causal are perturbed along time (a decoder's x; its encoder memory may be seen whole)
    which = [k for k, spec in enumerate(kind.input_specs()) if spec.causal and spec.role in ("float", "ids")]
    # change[r, c]: how much the output at position r moved when the input at position c was perturbed
    change, tol = influence_matrix(lambda *inp: subject.forward(module, *inp), kind, cfg, inputs, 1, rng, which,
                                   calls=lambda many: subject.forwards(module, [(args, []) for args in many]))
    leaks = [(c, r) for c in range(T) for r in range(c) if change[r, c] > tol]
    view = heatmap(f"{kind.name}: max |change| of the output at position (row) when the input at position "
                   "(column) is perturbed; above the diagonal must be 0",
                   change.tolist(), xlabel="perturbed input position", ylabel="output position")
    future = T * (T - 1) // 2
    metrics = {"leaking_pairs": len(leaks), "future_pairs": future,
               "max_leak": float(max((change[r, c] for c, r in leaks), default=0.0)), "tolerance": tol}
    if leaks:
        c, r = leaks[0]
        raise CheckFailure(
            f"{kind.name}: perturbing position {c} changed the output at position {r} by {change[r, c]:.3g} "
            f"(tolerance {tol:.1g}): position {r} sees the future; {len(leaks)} of {future} future pairs leak. "
            + _hint(subject, module),
            metrics, {"views": [view]})
    return Outcome(f"no output at an earlier position changed in {T} perturbations ({future} future pairs)",
                   metrics, {"views": [view]})
