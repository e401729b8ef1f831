"""Article 001's CausalSelfAttention, as a student copies it: the forward verbatim,
the backward's six steps verbatim; what the article leaves out ("构造函数和反向传播缓存",
"后续：恢复 QKV 的原始形状，计算投影参数梯度及 grad_x") is written by the student and
marked STUDENT. Registered as is."""
import numpy as np

import gradlab


class CausalSelfAttention:
    def __init__(self, d_model, num_heads, seed=0, dtype="float64"):            # STUDENT
        rng = np.random.default_rng(seed)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.qkv_weight = (rng.standard_normal((d_model, 3 * d_model)) * 0.02).astype(dtype)
        self.qkv_bias = np.zeros(3 * d_model, dtype)
        self.out_weight = (rng.standard_normal((d_model, d_model)) * 0.02).astype(dtype)
        self.out_bias = np.zeros(d_model, dtype)

    def forward(self, x: np.ndarray) -> np.ndarray:
        # x: (B, T, D)
        batch_size, seq_len, d_model = x.shape
        assert d_model == self.d_model
        assert d_model % self.num_heads == 0

        # 1. 一次投影得到 Q、K、V
        qkv = x @ self.qkv_weight + self.qkv_bias
        q, k, v = np.split(qkv, 3, axis=-1)

        # 2. (B, T, D) -> (B, H, T, d_k)
        q = q.reshape(batch_size, seq_len, self.num_heads, self.d_k)
        q = q.transpose(0, 2, 1, 3)
        k = k.reshape(batch_size, seq_len, self.num_heads, self.d_k)
        k = k.transpose(0, 2, 1, 3)
        v = v.reshape(batch_size, seq_len, self.num_heads, self.d_k)
        v = v.transpose(0, 2, 1, 3)

        # 3. 分数矩阵: (B, H, T, T)
        scores = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(self.d_k)

        # 4. 下三角包含对角线，广播到所有 batch 和 head
        mask = np.tril(np.ones((seq_len, seq_len), dtype=bool))
        scores = np.where(mask, scores, -np.inf)

        # 5. 沿 key 位置归一化
        shifted = scores - np.max(scores, axis=-1, keepdims=True)
        exp_scores = np.exp(shifted)
        attn_weights = exp_scores / exp_scores.sum(axis=-1, keepdims=True)

        # 6. 汇总 V，并把各个头拼回 D 维
        out = attn_weights @ v  # (B, H, T, d_k)
        out = out.transpose(0, 2, 1, 3).reshape(batch_size, seq_len, d_model)

        self.x, self.q, self.k, self.v, self.mask = x, q, k, v, mask              # STUDENT: the caches
        self.attn_weights, self.out_pre_proj = attn_weights, out                   # STUDENT

        # 7. 输出投影: (B, T, D)
        return out @ self.out_weight + self.out_bias

    def backward(self, grad_output):
        q, k, v, attn_weights, out_pre_proj, mask = (                             # STUDENT
            self.q, self.k, self.v, self.attn_weights, self.out_pre_proj, self.mask)
        batch_size, seq_len, d_model = self.x.shape                                # STUDENT

        # 1. 输出投影
        self.dout_weight = (
            out_pre_proj.reshape(-1, d_model).T
            @ grad_output.reshape(-1, d_model)
        )
        self.dout_bias = grad_output.sum(axis=(0, 1))
        grad_out = grad_output @ self.out_weight.T

        # 2. 拼接多头的逆变换
        grad_out = grad_out.reshape(
            batch_size, seq_len, self.num_heads, self.d_k
        ).transpose(0, 2, 1, 3)

        # 3. out = attn_weights @ v
        grad_attn_weights = grad_out @ v.transpose(0, 1, 3, 2)
        grad_v = attn_weights.transpose(0, 1, 3, 2) @ grad_out

        # 4. softmax 的向量-雅可比积
        grad_scores = attn_weights * (
            grad_attn_weights
            - np.sum(grad_attn_weights * attn_weights, axis=-1, keepdims=True)
        )

        # 5. 被屏蔽的分数不向 Q、K 传递梯度
        grad_scores = np.where(mask, grad_scores, 0.0)
        grad_scores /= np.sqrt(self.d_k)

        # 6. scores = q @ k.T / sqrt(d_k)
        grad_q = grad_scores @ k
        grad_k = grad_scores.transpose(0, 1, 3, 2) @ q

        # STUDENT: 恢复 QKV 的原始形状，计算投影参数梯度及 grad_x
        def merge(t):
            return t.transpose(0, 2, 1, 3).reshape(batch_size, seq_len, d_model)
        grad_qkv = np.concatenate([merge(grad_q), merge(grad_k), merge(grad_v)], axis=-1)
        self.dqkv_weight = self.x.reshape(-1, d_model).T @ grad_qkv.reshape(-1, 3 * d_model)
        self.dqkv_bias = grad_qkv.sum(axis=(0, 1))
        return grad_qkv @ self.qkv_weight.T


@gradlab.register("attention")
def build(cfg):
    return CausalSelfAttention(cfg.d_model, cfg.num_heads, cfg.seed, cfg.dtype)
