"""Weight initialisers: Xavier/Glorot (Glorot & Bengio 2010) and He (He et al. 2015).

For a weight used as x @ W, W has shape (fan_in, fan_out): fan_in = shape[0]
inputs feed each output, fan_out = shape[1] outputs read each input."""
import numpy as np

import gradlab

# scheme -> (distribution, variance as a function of (fan_in, fan_out))
SCHEMES = {
    "xavier_uniform": ("uniform", lambda fi, fo: 2.0 / (fi + fo)),
    "xavier_normal": ("normal", lambda fi, fo: 2.0 / (fi + fo)),
    "he_uniform": ("uniform", lambda fi, fo: 2.0 / fi),
    "he_normal": ("normal", lambda fi, fo: 2.0 / fi),
}


def init(shape, scheme="xavier_uniform", rng=None):
    """-> array of `shape` with mean 0 and the scheme's variance: uniform on [-a, a] with
    a = sqrt(3 * var) (so sqrt(6 / (fan_in + fan_out)) for Xavier), or normal with std sqrt(var)."""
    rng = np.random.default_rng() if rng is None else rng
    fan_in, fan_out = shape[0], shape[1] if len(shape) > 1 else shape[0]
    dist, variance = SCHEMES[scheme]
    var = variance(fan_in, fan_out)
    if dist == "uniform":
        a = np.sqrt(3 * var)
        return rng.uniform(-a, a, size=shape)
    return rng.normal(0.0, np.sqrt(var), size=shape)


gradlab.register("init")(init)
