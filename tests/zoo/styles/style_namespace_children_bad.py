"""Broken twin: the dense layers' bias gradient is a mean over the tokens."""
import gradlab
import style_namespace_children as base


def mean_bias_dense(d_in, d_out, rng, dtype):
    layer = base.dense(d_in, d_out, rng, dtype)
    backward = layer.backward

    def bad_backward(dy):
        dx = backward(dy)
        layer.grads["b"] = dy.reshape(-1, dy.shape[-1]).mean(axis=0)    # BUG: .sum(axis=0)
        return dx

    layer.backward = bad_backward
    return layer


@gradlab.register("ffn", param_map=base.NAMES)
def build(cfg):
    return base.FFN(cfg, dense_layer=mean_bias_dense)
