"""Initialisers with a Generator, one small function per scheme behind a dict."""
import numpy as np

import gradlab


def _fans(shape):
    return shape[0], shape[1]


def xavier_uniform(shape, rng):
    fan_in, fan_out = _fans(shape)
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape)


def xavier_normal(shape, rng):
    fan_in, fan_out = _fans(shape)
    return rng.standard_normal(shape) * np.sqrt(2.0 / (fan_in + fan_out))


def he_uniform(shape, rng):
    limit = np.sqrt(6.0 / shape[0])
    return rng.uniform(-limit, limit, size=shape)


def he_normal(shape, rng):
    return rng.normal(0.0, np.sqrt(2.0 / shape[0]), size=shape)


SCHEMES = {"xavier_uniform": xavier_uniform, "xavier_normal": xavier_normal,
           "he_uniform": he_uniform, "he_normal": he_normal}


@gradlab.register("init")
def init(shape, scheme, rng):
    return SCHEMES[scheme](shape, rng)
