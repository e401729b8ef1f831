"""The global np.random functions, as in article 000 (the rng argument is ignored), float32."""
import numpy as np

import gradlab


@gradlab.register("init")
def init(shape, kind="xavier_uniform", rng=None):
    fan_in, fan_out = shape
    if kind.startswith("xavier"):
        std = np.sqrt(2 / (fan_in + fan_out))
    else:
        std = np.sqrt(2 / fan_in)
    if kind.endswith("uniform"):
        bound = np.sqrt(3) * std
        return ((np.random.rand(*shape) * 2 - 1) * bound).astype(np.float32)
    return (np.random.randn(*shape) * std).astype(np.float32)
