"""Broken: the parts' Pre-LN block, its attention backward without the - sum(dA * A) term of the
softmax Jacobian (ds = A * dA)."""
import numpy as np

import gradlab
from bwdvar_block_parts import Block, SelfAttention


class NoJacobianAttention(SelfAttention):
    def backward(self, g):
        B, T, D = g.shape
        dk = D // self.H
        A = self.attn_weights
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.grads["out_bias"] = g.reshape(-1, D).sum(0)
        dctx = (g @ self.params["out_weight"].T).reshape(B, T, self.H, dk).transpose(0, 2, 1, 3)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * dA / np.sqrt(dk)                                   # BUG: - (dA * A).sum(-1) missing
        dq, dkk = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([a.transpose(0, 2, 1, 3).reshape(B, T, D) for a in (dq, dkk, dv)], -1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ self.params["qkv_weight"].T


@gradlab.register("block")
def build(cfg):
    block = Block(cfg)
    block.attn.__class__ = NoJacobianAttention
    return block
