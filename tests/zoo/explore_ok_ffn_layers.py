"""FFN built from small layer objects (Dense, GELU, Dense), each layer keeping
its own W/b and dW/db attributes; the GELU derivative written with sech^2."""
import numpy as np
import gradlab

SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi).item()


class Dense:
    def __init__(self, n_in, n_out, rng, dtype):
        self.W = (rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / (n_in + n_out))).astype(dtype)
        self.b = np.zeros(n_out, dtype=dtype)
        self.dW = np.zeros_like(self.W)
        self.db = np.zeros_like(self.b)

    def forward(self, x):
        self.inp = x
        return np.tensordot(x, self.W, axes=([x.ndim - 1], [0])) + self.b

    def backward(self, g):
        n_in, n_out = self.W.shape
        self.dW = self.inp.reshape(-1, n_in).T @ g.reshape(-1, n_out)
        self.db = g.reshape(-1, n_out).sum(axis=0)
        return g @ self.W.T


class GELU:
    def forward(self, x):
        self.x = x
        self.u = SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)
        self.th = np.tanh(self.u)
        return 0.5 * x * (1.0 + self.th)

    def backward(self, g):
        x = self.x
        sech2 = 1.0 - self.th ** 2
        du = SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x ** 2)
        return g * (0.5 * (1.0 + self.th) + 0.5 * x * sech2 * du)


class FFN:
    def __init__(self, d_model, d_ff, seed=0, dtype="float64"):
        rng = np.random.default_rng(seed)
        self.fc1 = Dense(d_model, d_ff, rng, dtype)
        self.act = GELU()
        self.fc2 = Dense(d_ff, d_model, rng, dtype)

    def forward(self, x):
        return self.fc2.forward(self.act.forward(self.fc1.forward(x)))

    def backward(self, g):
        return self.fc1.backward(self.act.backward(self.fc2.backward(g)))


@gradlab.register("ffn", param_map={"fc1.W": "w1", "fc1.b": "b1", "fc2.W": "w2", "fc2.b": "b2"})
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, seed=cfg.seed, dtype=cfg.dtype)
