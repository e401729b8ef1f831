"""Right variance everywhere, but "uniform" schemes draw from a normal."""
import numpy as np

import gradlab


@gradlab.register("init")
def init(shape, scheme, rng):
    fan_in, fan_out = shape
    std = np.sqrt(2 / (fan_in + fan_out)) if scheme.startswith("xavier") else np.sqrt(2 / fan_in)
    return rng.normal(0, std, size=shape)
