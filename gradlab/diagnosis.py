"""Diagnosis of a failed gradient: compare the analytical and numerical
tensors for the patterns hand-written backward passes are known to produce,
and say it in words a student understands."""


def diagnose(kind, name, analytical, numerical, context):
    """A sentence naming the likely cause, or None when no known pattern fits.

    kind: KindSpec; name: "x" (the input) or the dotted parameter name;
    analytical, numerical: float64 arrays of the same shape (numerical is the
    full per-element map); context: {"cfg": Config, "x": forward input (ids for
    token kinds), "g": upstream gradient given to backward}.
    """
    return None
