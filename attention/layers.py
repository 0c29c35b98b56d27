"""Self-attention and multi-head attention layers, with every intermediate exposed.

Row-vector convention: ``Q = X @ W_q`` with ``W_q [d_model, d_k]`` (the lessons'
convention; PyTorch's ``nn.Linear`` stores the transpose).

Source: Vaswani et al. (2017) sections 3.2.1-3.2.2; lesson steps 1-6 and exercise 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_heads, positive_int
from .core import merge_heads, scaled_dot_product_attention, split_heads

__all__ = [
    "AttentionSteps",
    "attention_steps",
    "SelfAttention",
    "MultiHeadSteps",
    "MultiHeadAttention",
]


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate of single-head self-attention (lesson steps 1-6).

    Attributes:
        X: inputs ``[..., n, d_model]``.
        Q, K: queries and keys ``[..., n, d_k]``; V: values ``[..., n, d_v]``.
        scores: ``Q @ K.T`` ``[..., n, n]`` (step 3).
        scaled_scores: ``scores / sqrt(d_k)`` ``[..., n, n]`` (step 4), before any mask.
        mask: the boolean mask used (``True`` = may attend), or ``None``.
        weights: softmax of the (masked) scaled scores ``[..., n, n]`` (step 5).
        output: ``weights @ V`` ``[..., n, d_v]`` (step 6).
    """

    X: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    scores: np.ndarray
    scaled_scores: np.ndarray
    mask: np.ndarray | None
    weights: np.ndarray
    output: np.ndarray


def attention_steps(X, W_q, W_k, W_v, attn_mask=None, *, is_causal: bool = False) -> AttentionSteps:
    """Run single-head self-attention on ``X`` and keep every step.

    Args:
        X: ``[..., n, d_model]`` token embeddings, one row per token.
        W_q, W_k: ``[d_model, d_k]``; W_v: ``[d_model, d_v]``.
        attn_mask: optional boolean mask broadcastable to ``[..., n, n]``, ``True`` = may attend.
        is_causal: use the causal mask (not with ``attn_mask``).

    Returns:
        :class:`AttentionSteps`; ``output`` and ``weights`` equal
        :func:`scaled_dot_product_attention` on ``(Q, K, V)``.

    Raises:
        ValueError: shapes do not chain (``X`` last axis != rows of a weight
            matrix, ``W_q`` and ``W_k`` widths differ), NaN/inf anywhere, a
            non-boolean or non-broadcastable mask, or both mask arguments.
    """
    X = as_float_array(X, "X", min_ndim=2)
    d_model = X.shape[-1]
    mats = {}
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        W = as_float_array(W, name, min_ndim=2)
        if W.ndim != 2 or W.shape[0] != d_model:
            raise ValueError(
                f"{name} must have shape [d_model={d_model}, width], got {W.shape}"
            )
        mats[name] = W
    if mats["W_q"].shape[1] != mats["W_k"].shape[1]:
        raise ValueError(
            f"W_q {mats['W_q'].shape} and W_k {mats['W_k'].shape} must have the same width d_k"
        )
    if attn_mask is not None and np.asarray(attn_mask).dtype != np.bool_:
        raise ValueError("attn_mask must be boolean here (True = may attend)")
    Q = X @ mats["W_q"]  # [..., n, d_model] x [d_model, d_k] -> [..., n, d_k]
    K = X @ mats["W_k"]  # [..., n, d_k]
    V = X @ mats["W_v"]  # [..., n, d_v]
    output, weights = scaled_dot_product_attention(Q, K, V, attn_mask, is_causal=is_causal)
    scores = Q @ np.swapaxes(K, -1, -2)  # [..., n, n]
    n = X.shape[-2]
    mask = np.tri(n, n, dtype=bool) if is_causal else attn_mask
    return AttentionSteps(
        X=X, Q=Q, K=K, V=V, scores=scores, scaled_scores=scores / math.sqrt(Q.shape[-1]),
        mask=None if mask is None else np.broadcast_to(mask, scores.shape),
        weights=weights, output=output,
    )


class SelfAttention:
    """Single-head self-attention with weights drawn as in the lesson.

    ``W_q, W_k, W_v`` come from one ``np.random.default_rng(seed)`` in the order
    ``W_q, W_k, W_v``; normal with std ``sqrt(2 / (d_model + d_k))`` for ``W_q``
    and ``W_k`` and ``sqrt(2 / (d_model + d_v))`` for ``W_v``. With
    ``SelfAttention(8, 4, 4, seed=42)`` this reproduces the lesson's sentence
    example to the last digit.

    Attributes:
        W_q, W_k: ``[d_model, d_k]`` float64; W_v: ``[d_model, d_v]``.

    Raises:
        ValueError: a size is not a positive integer.
    """

    def __init__(self, d_model: int, d_k: int, d_v: int | None = None, seed: int = 42):
        self.d_model = positive_int(d_model, "d_model")
        self.d_k = positive_int(d_k, "d_k")
        self.d_v = self.d_k if d_v is None else positive_int(d_v, "d_v")
        self.seed = seed
        rng = np.random.default_rng(seed)
        std_qk = math.sqrt(2.0 / (self.d_model + self.d_k))
        std_v = math.sqrt(2.0 / (self.d_model + self.d_v))
        self.W_q = rng.normal(0.0, std_qk, (self.d_model, self.d_k))
        self.W_k = rng.normal(0.0, std_qk, (self.d_model, self.d_k))
        self.W_v = rng.normal(0.0, std_v, (self.d_model, self.d_v))

    def forward(self, x, attn_mask=None, is_causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``x [..., n, d_model] -> (output [..., n, d_v], weights [..., n, n])``.

        ``attn_mask`` is boolean, ``True`` = may attend. Raises ``ValueError`` as
        :func:`attention_steps`.
        """
        steps = self.steps(x, attn_mask, is_causal=is_causal)
        return steps.output, steps.weights

    __call__ = forward

    def steps(self, x, attn_mask=None, is_causal: bool = False) -> AttentionSteps:
        """Like :meth:`forward`, returning every intermediate (:class:`AttentionSteps`)."""
        return attention_steps(x, self.W_q, self.W_k, self.W_v, attn_mask, is_causal=is_causal)

    def __repr__(self) -> str:
        return f"SelfAttention(d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v}, seed={self.seed})"


@dataclass(frozen=True)
class MultiHeadSteps:
    """Every intermediate of :meth:`MultiHeadAttention.steps`.

    Attributes:
        q, k, v: projections ``[..., n, d_model]`` (bias included).
        q_heads, k_heads, v_heads: ``[..., n_heads, n, d_head]``.
        scaled_scores: ``q_heads @ k_headsᵀ / sqrt(d_head)`` ``[..., n_heads, n, n]`` (before masking).
        weights: per-head attention weights ``[..., n_heads, n, n]``.
        head_outputs: ``[..., n_heads, n, d_head]``.
        concat: heads merged back, ``[..., n, d_model]``.
        output: ``concat @ W_o + b_o`` ``[..., n, d_model]``.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    q_heads: np.ndarray
    k_heads: np.ndarray
    v_heads: np.ndarray
    scaled_scores: np.ndarray
    weights: np.ndarray
    head_outputs: np.ndarray
    concat: np.ndarray
    output: np.ndarray

    @property
    def mean_weights(self) -> np.ndarray:
        """Weights averaged over heads ``[..., n, n]`` (``nn.MultiheadAttention``'s default return)."""
        return self.weights.mean(axis=-3)


class MultiHeadAttention:
    """Multi-head self-attention: project, split into heads, attend, merge, project.

    ``W_q, W_k, W_v, W_o`` are all ``[d_model, d_model]`` (row-vector convention,
    ``q = x @ W_q + b_q``); head h uses columns ``h*d_head:(h+1)*d_head``. Weights
    are drawn from ``np.random.default_rng(seed)`` in the order W_q, W_k, W_v,
    W_o, normal with std ``sqrt(1 / d_model)``; biases (``bias=True``) start at 0
    like PyTorch's.

    Raises:
        ValueError: ``d_model % n_heads != 0`` (names both numbers and lists the
            valid head counts), or a size is not a positive integer.

    Source: Vaswani et al. (2017) section 3.2.2; lesson exercise 2.
    """

    def __init__(self, d_model: int, n_heads: int, seed: int = 0, bias: bool = False):
        self.d_head = check_heads(d_model, n_heads)
        self.d_model, self.n_heads, self.seed = int(d_model), int(n_heads), seed
        rng = np.random.default_rng(seed)
        std = math.sqrt(1.0 / self.d_model)
        shape = (self.d_model, self.d_model)
        self.W_q, self.W_k, self.W_v, self.W_o = (rng.normal(0.0, std, shape) for _ in range(4))
        zeros = np.zeros(self.d_model) if bias else None
        self.b_q = self.b_k = self.b_v = self.b_o = zeros

    @classmethod
    def from_torch(cls, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, n_heads: int):
        """Load the parameters of a ``torch.nn.MultiheadAttention`` (as NumPy arrays).

        Args:
            in_proj_weight: ``[3E, E]``, packed q, k, v rows (PyTorch's ``x @ W.T`` layout).
            in_proj_bias: ``[3E]`` or ``None``.
            out_proj_weight: ``[E, E]``.
            out_proj_bias: ``[E]`` or ``None``.
            n_heads: PyTorch's ``num_heads``.

        Returns:
            a layer whose ``forward`` equals PyTorch's output and per-head weights
            (``average_attn_weights=False``). PyTorch's ``attn_mask`` and
            ``key_padding_mask`` use ``True`` = blocked; invert them for ours.

        Raises:
            ValueError: shapes do not match ``E`` or ``E % n_heads != 0``.
        """
        w_in = as_float_array(in_proj_weight, "in_proj_weight", min_ndim=2)
        e = w_in.shape[1]
        if w_in.shape != (3 * e, e):
            raise ValueError(f"in_proj_weight must have shape [3E, E] = [{3 * e}, {e}], got {w_in.shape}")
        w_out = as_float_array(out_proj_weight, "out_proj_weight", min_ndim=2)
        if w_out.shape != (e, e):
            raise ValueError(f"out_proj_weight must have shape [E, E] = [{e}, {e}], got {w_out.shape}")
        layer = cls(e, n_heads, bias=False)
        layer.W_q, layer.W_k, layer.W_v = (w.T.copy() for w in np.split(w_in, 3))
        layer.W_o = w_out.T.copy()
        if in_proj_bias is not None:
            b_in = as_float_array(in_proj_bias, "in_proj_bias")
            if b_in.shape != (3 * e,):
                raise ValueError(f"in_proj_bias must have shape [3E] = [{3 * e}], got {b_in.shape}")
            layer.b_q, layer.b_k, layer.b_v = np.split(b_in.copy(), 3)
        if out_proj_bias is not None:
            b_out = as_float_array(out_proj_bias, "out_proj_bias")
            if b_out.shape != (e,):
                raise ValueError(f"out_proj_bias must have shape [E] = [{e}], got {b_out.shape}")
            layer.b_o = b_out.copy()
        return layer

    @staticmethod
    def _linear(x: np.ndarray, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        y = x @ W.astype(x.dtype, copy=False)  # [..., n, d_model] x [d_model, d_model]
        return y if b is None else y + b.astype(x.dtype, copy=False)

    def _heads_and_mask(self, x, attn_mask, key_padding_mask, is_causal):
        """Validate, project and split: returns ``(q, k, v, q_h, k_h, v_h, mask)``."""
        x = as_float_array(x, "x", min_ndim=2)
        if x.shape[-1] != self.d_model or x.shape[-2] < 1:
            raise ValueError(f"x must have shape [..., n, d_model={self.d_model}], got {x.shape}")
        n = x.shape[-2]
        mask = None
        if attn_mask is not None:
            attn_mask = np.asarray(attn_mask)
            if attn_mask.dtype != np.bool_ or attn_mask.ndim < 2 or attn_mask.shape[-2:] != (n, n):
                raise ValueError(f"attn_mask must be boolean [..., n, n] = [..., {n}, {n}], "
                                 f"got {attn_mask.dtype} {attn_mask.shape}")
            mask = attn_mask
        if is_causal:
            causal = np.tri(n, n, dtype=bool)
            mask = causal if mask is None else mask & causal
        if key_padding_mask is not None:
            kpm = np.asarray(key_padding_mask)
            if kpm.dtype != np.bool_ or kpm.ndim < 1 or kpm.shape[-1] != n:
                raise ValueError(f"key_padding_mask must be boolean [..., n] = [..., {n}], "
                                 f"got {kpm.dtype} {kpm.shape}")
            kpm = kpm[..., None, :]  # [..., 1, n_k]
            mask = kpm if mask is None else mask & kpm
        if mask is not None:
            mask = np.expand_dims(mask, -3)  # [..., 1, n, n]: the same mask for every head
        # 1) project: [..., n, d_model] x [d_model, d_model] -> [..., n, d_model]
        q = self._linear(x, self.W_q, self.b_q)
        k = self._linear(x, self.W_k, self.b_k)
        v = self._linear(x, self.W_v, self.b_v)
        # 2) split heads: [..., n, d_model] -> [..., n_heads, n, d_head]
        q_h, k_h, v_h = (split_heads(t, self.n_heads) for t in (q, k, v))
        return q, k, v, q_h, k_h, v_h, mask

    def steps(
        self, x, attn_mask=None, key_padding_mask=None, is_causal: bool = False
    ) -> MultiHeadSteps:
        """Multi-head self-attention on ``x [..., n, d_model]``, keeping every intermediate.

        Args:
            x: ``[..., n, d_model]``; float32 stays float32.
            attn_mask: optional bool ``[..., n, n]`` (shared by every head),
                ``True`` = may attend. (PyTorch's MHA uses ``True`` = blocked.)
            key_padding_mask: optional bool ``[..., n]``, ``True`` = real key
                (may attend). (PyTorch's uses ``True`` = padding.)
            is_causal: causal mask for every head (may combine with the other masks).

        Returns:
            :class:`MultiHeadSteps`.

        Raises:
            ValueError: ``x`` is not ``[..., n, d_model]``, contains NaN/inf, or a
                mask has the wrong shape or dtype.
        """
        q, k, v, q_h, k_h, v_h, mask = self._heads_and_mask(x, attn_mask, key_padding_mask, is_causal)
        # 3) attend in every head at once: [..., h, n, d_head] -> [..., h, n, d_head], weights [..., h, n, n]
        head_out, weights = scaled_dot_product_attention(q_h, k_h, v_h, mask)
        scaled = (q_h @ np.swapaxes(k_h, -1, -2)) / q.dtype.type(math.sqrt(self.d_head))
        # 4) merge heads: [..., h, n, d_head] -> [..., n, d_model]
        concat = merge_heads(head_out)
        # 5) output projection
        output = self._linear(concat, self.W_o, self.b_o)  # [..., n, d_model]
        return MultiHeadSteps(q, k, v, q_h, k_h, v_h, scaled, weights, head_out, concat, output)

    def forward(self, x, attn_mask=None, key_padding_mask=None, is_causal: bool = False, *,
                need_weights: bool = True):
        """``x [..., n, d_model] -> (output [..., n, d_model], weights [..., n_heads, n, n])``.

        Same steps as :meth:`steps` without keeping the intermediates;
        see it for the arguments and errors. ``need_weights=False`` returns
        ``(output, None)`` and, for large inputs, never holds the ``n x n`` weights
        (see :func:`~attention.core.scaled_dot_product_attention`).
        """
        _, _, _, q_h, k_h, v_h, mask = self._heads_and_mask(x, attn_mask, key_padding_mask, is_causal)
        head_out, weights = scaled_dot_product_attention(q_h, k_h, v_h, mask, need_weights=need_weights)  # 3) attend
        output = self._linear(merge_heads(head_out), self.W_o, self.b_o)  # 4) merge, 5) project
        return output, weights

    __call__ = forward

    def __repr__(self) -> str:
        return f"MultiHeadAttention(d_model={self.d_model}, n_heads={self.n_heads}, seed={self.seed})"
