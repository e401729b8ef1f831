"""The one known-bug matcher: a cause is named only when a known-buggy variant
reproduces the student's numbers to the comparison's own tolerance.

Used by every check that names causes from variants: `reference` (forward
variants of each module kind, softmax and cross-entropy mistakes), `gradient`
(known-buggy backward passes, gradlab.diagnosis.backward_variants) and
`trajectory` (optimizer, clipping and schedule mistakes).

Each caller measures its errors in multiples of its tolerance (the check's own
tolerance for that dtype, from gradlab.numerics.tolerance), so one rule serves all:
the best variant is named when its error is at most 1 (it reproduces the student's
numbers as closely as a correct module reproduces the reference) and the correct
computation is off by more than 1 and at least SEPARATION times the variant's error.
"""
import math

from gradlab.numerics.tolerance import SEPARATION


def name_cause(candidates):
    """candidates: (hint, variant_error, correct_error) triples, errors in multiples of the
    tolerance (None: the variant could not be compared). The hint of the variant that reproduces
    the student's numbers, or None."""
    # a variant that agrees with the correct computation where it is compared explains nothing
    scored = [(err, correct, hint) for hint, err, correct in candidates
              if err is not None and not math.isnan(err) and (math.isnan(correct) or correct > 1.0)]
    if not scored:
        return None
    err, correct, hint = min(scored, key=lambda s: s[0])
    if err <= 1.0 and (math.isnan(correct) or correct > max(1.0, SEPARATION * err)):
        return hint
    return None
