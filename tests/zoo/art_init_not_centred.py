"""U(0, 2a) instead of U(-a, a): the right spread, the wrong centre."""
import numpy as np

import gradlab


@gradlab.register("init")
def init(shape, scheme, rng):
    fan_in, fan_out = shape
    var = 2 / (fan_in + fan_out) if scheme.startswith("xavier") else 2 / fan_in
    if scheme.endswith("uniform"):
        a = np.sqrt(3 * var)
        return rng.random(shape) * 2 * a
    return rng.normal(0, np.sqrt(var), size=shape)
