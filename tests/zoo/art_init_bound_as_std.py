"""The uniform's bound is taken to be the standard deviation."""
import numpy as np

import gradlab


@gradlab.register("init")
def init(shape, scheme, rng):
    fan_in, fan_out = shape
    std = np.sqrt(2 / (fan_in + fan_out)) if scheme.startswith("xavier") else np.sqrt(2 / fan_in)
    if scheme.endswith("uniform"):
        return rng.uniform(-std, std, size=shape)
    return rng.normal(0, std, size=shape)
