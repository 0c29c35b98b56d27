"""Softmax, masks, scaled dot-product attention and the head split.

Conventions (the whole package):
    * Row vectors: ``Q = X @ W_q`` with ``W_q`` of shape ``[d_model, d_k]``.
    * Boolean masks: ``True`` = this query MAY attend to this key (as
      ``torch.nn.functional.scaled_dot_product_attention``). Float masks are
      added to the scaled scores.
    * A query row whose keys are all masked gets all-zero weights and a zero
      output, never NaN (PyTorch >= 2.5 does the same in SDPA).

Source: Vaswani et al. (2017), "Attention Is All You Need", section 3.2.1-3.2.3;
lesson steps 3-6 (``shared/docs/lesson.md``).
"""

from __future__ import annotations

import math

import numpy as np

from . import blocked
from ._validate import (
    as_float_array,
    check_heads,
    positive_int,
    prepare_attention,
    scores_may_overflow,
    scores_overflow_error,
)

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "padding_mask_from_lengths",
    "additive_mask",
    "split_heads",
    "merge_heads",
]


def softmax(x, axis: int = -1, mask=None) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    The row maximum is subtracted before ``exp`` (lesson step 5), so any finite
    logits (``1e4``, ``-1e300``, ...) give finite weights. Entries that are
    ``-inf`` or where ``mask`` is ``False`` get weight 0; a row with no
    allowed entry is all zeros (never NaN).

    Args:
        x: logits, any shape ``[..., n]``; integer input is promoted to float64,
            float32 stays float32. ``-inf`` is allowed (it means "masked").
        axis: the axis that sums to 1.
        mask: optional boolean array broadcastable to ``x``; ``True`` = keep.

    Returns:
        weights with the shape and float dtype of ``x``; each unmasked row sums to 1.

    Raises:
        ValueError: ``x`` contains NaN or ``+inf``, or ``mask`` is not boolean or
            not broadcastable to ``x``.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = as_float_array(x, "x")
    if np.isnan(x).any():
        raise ValueError("x contains NaN; softmax needs finite logits or -inf for masked entries")
    if np.isposinf(x).any():
        raise ValueError("x contains +inf; softmax needs finite logits or -inf for masked entries")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise ValueError(f"mask must be boolean (True = keep), got dtype {mask.dtype}")
        try:
            mask = np.broadcast_to(mask, x.shape)
        except ValueError:
            raise ValueError(
                f"mask of shape {mask.shape} is not broadcastable to x of shape {x.shape}"
            ) from None
        x = np.where(mask, x, -np.inf)
    row_max = np.max(x, axis=axis, keepdims=True)
    row_max = np.where(np.isneginf(row_max), 0, row_max)  # fully masked rows: exp(-inf) = 0
    with np.errstate(over="ignore"):  # x - row_max below -1.8e308 (e.g. -1e308 - 1e308) is -inf: exp gives 0
        e = np.exp(x - row_max)
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """Lower-triangular boolean mask, ``True`` = may attend (query i sees keys j <= i).

    Aligned to the upper-left corner like PyTorch's ``is_causal=True``, also when
    ``n_q != n_k``.

    Args:
        n_q: number of queries (>= 1).
        n_k: number of keys (>= 1); defaults to ``n_q``.

    Returns:
        bool array ``[n_q, n_k]``.

    Raises:
        ValueError: a size is not a positive integer.

    Source: Vaswani et al. (2017) section 3.2.3; lesson exercise 1.
    """
    n_q = positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else positive_int(n_k, "n_k")
    return np.tri(n_q, n_k, dtype=bool)


def padding_mask(valid) -> np.ndarray:
    """Key padding mask from a per-key validity flag, ``True`` = real key (may attend).

    Note: ``torch.nn.MultiheadAttention``'s ``key_padding_mask`` uses the opposite
    convention (``True`` = padding, blocked); pass ``~mask[..., 0, :]`` to it.

    Args:
        valid: bool array ``[..., n_k]``; ``True`` where the key is a real token.

    Returns:
        bool array ``[..., 1, n_k]``, broadcastable against scores ``[..., n_q, n_k]``
        (add a head axis, ``mask[:, None]``, for ``[batch, n_heads, n_q, n_k]``).

    Raises:
        ValueError: ``valid`` is not boolean or has no key axis.
    """
    valid = np.asarray(valid)
    if valid.dtype != np.bool_:
        raise ValueError(f"valid must be a boolean array [..., n_k], got dtype {valid.dtype}")
    if valid.ndim < 1 or valid.shape[-1] < 1:
        raise ValueError(f"valid must have shape [..., n_k] with n_k >= 1, got {valid.shape}")
    return valid[..., None, :]


def padding_mask_from_lengths(lengths, n_k: int) -> np.ndarray:
    """Key padding mask from sequence lengths: key j of item b is real iff ``j < lengths[b]``.

    Args:
        lengths: int array ``[batch]`` (or a scalar), each in ``0..n_k``.
        n_k: padded sequence length.

    Returns:
        bool array ``[batch, 1, n_k]`` (``[1, n_k]`` for a scalar), ``True`` = may attend.

    Raises:
        ValueError: a length is negative or larger than ``n_k``, or ``n_k`` < 1.
    """
    n_k = positive_int(n_k, "n_k")
    lengths = np.asarray(lengths)
    if not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"lengths must be integers, got dtype {lengths.dtype}")
    if (lengths < 0).any() or (lengths > n_k).any():
        raise ValueError(f"lengths must lie in 0..n_k={n_k}, got {lengths.tolist()}")
    return padding_mask(np.arange(n_k) < lengths[..., None])


def additive_mask(mask, dtype=np.float64) -> np.ndarray:
    """Boolean mask -> additive float mask: 0 where ``True`` (may attend), ``-inf`` elsewhere.

    Adding it to the scores before the softmax is the same as masking (lesson,
    causal mask). Shape is kept.
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    return np.where(mask, 0.0, -np.inf).astype(dtype)


def _attention_plain(q, k, v, bool_mask, float_mask, is_causal: bool, scale: float):
    """The textbook path on validated input: whole score matrix, softmax, ``@ v``.

    Raises:
        ValueError: the scores overflow the float type although q and k are finite
            (:func:`~attention._validate.scores_overflow_error`).
    """
    check = scores_may_overflow(q, k, scale, float_mask)  # cheap bound; cell checks only when it fails
    if is_causal:
        bool_mask = causal_mask(q.shape[-2], k.shape[-2])
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, in words
        # [..., n_q, d_k] x [..., d_k, n_k] -> [..., n_q, n_k]
        scores = (q @ np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
        if check and not np.isfinite(scores).all():
            raise scores_overflow_error(q, k)
        if float_mask is not None:
            scores = scores + float_mask
            if check and (np.isnan(scores) | np.isposinf(scores)).any():
                raise scores_overflow_error(q, k)
    weights = softmax(scores, axis=-1, mask=bool_mask)  # [..., n_q, n_k], rows sum to 1 (or 0 if fully masked)
    output = weights @ v  # [..., n_q, n_k] x [..., n_k, d_v] -> [..., n_q, d_v]
    return output, weights


BLOCKED_MIN_CELLS = 1 << 19
"""Score cells (``batch * n_q * n_k``) from which ``scaled_dot_product_attention`` takes the blocked path.

Measured on 2 cores (``bench/bench_core.py``, BENCHMARKS.md): the blocked path is about as fast
as the plain one near 2**18 cells and clearly faster from 2**19 (float32 and float64)."""

ONLINE_MIN_CELLS = 1 << 16
"""Score cells from which ``scaled_dot_product_attention(..., need_weights=False)`` takes the online path
(:func:`attention.blocked.attend_online`). Measured on 2 shared cores (2026-11-30, under load): about as
fast as the plain path near 2**15 cells (8 heads of 64 x 64), 1.3-3x faster from 2**17 (8 heads of
128 x 128, where the plain path's temporaries and softmax passes cost more than the arithmetic)."""


def scaled_dot_product_attention(
    q, k, v, attn_mask=None, *, is_causal: bool = False, scale: float | None = None, need_weights: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """``softmax(q kᵀ * scale + mask) v``, with PyTorch's SDPA semantics.

    Small inputs (fewer than :data:`BLOCKED_MIN_CELLS` score cells, or
    :data:`ONLINE_MIN_CELLS` with ``need_weights=False``; e.g. the app's
    sentences) take the plain path: the whole score matrix, then the
    softmax. Larger ones take the blocked path (:mod:`attention.blocked`),
    which computes the same numbers block by block in cache and in place, on
    one worker thread per core (:func:`attention.blocked.default_threads`);
    results agree with the plain path to rounding (~1e-7 relative in float32;
    at most about 1e-6 of the largest output value).

    Args:
        q: queries ``[..., n_q, d_k]``.
        k: keys ``[..., n_k, d_k]``.
        v: values ``[..., n_k, d_v]``. Leading (batch, head) axes of q, k, v broadcast.
        attn_mask: optional, broadcastable to ``[..., n_q, n_k]``. Boolean: ``True`` =
            this query may attend to this key. Float: added to the scaled scores
            (use ``-inf`` to block).
        is_causal: apply ``causal_mask(n_q, n_k)`` (upper-left aligned). Not
            together with ``attn_mask``.
        scale: multiplier on the scores; default ``1 / sqrt(d_k)``.
        need_weights: ``False`` returns ``(output, None)``: on the blocked path
            the ``[..., n_q, n_k]`` weights are never held (online softmax over
            key blocks), so memory stays ``O(n)`` beyond q, k, v and the output.
            (Below the threshold the plain path runs and its weights are dropped.)

    Returns:
        ``(output, weights)``: ``output [..., n_q, d_v]``, ``weights [..., n_q, n_k]``
        (``None`` with ``need_weights=False``). float32 inputs give float32,
        float64 gives float64, integers are promoted to float64. A fully
        masked query row has zero weights and a zero output.

    Raises:
        ValueError: mismatched ``d_k`` or ``n_k``, non-broadcasting batch axes, an
            empty axis, NaN/inf in q, k or v (the message names the array), a
            mask that does not broadcast to the scores, both ``attn_mask``
            and ``is_causal``, or scores that overflow the float type although q
            and k are finite (huge float32 inputs: the message names q, k, the
            dtype and what to do; same message on both paths).

    Source: Vaswani et al. (2017) section 3.2.1, eq. (1); lesson steps 3-6;
    the blocked path: Dao et al. (2022), FlashAttention.
    """
    q, k, v, bool_mask, float_mask, scale = prepare_attention(q, k, v, attn_mask, is_causal, scale)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    cells = math.prod(batch) * q.shape[-2] * k.shape[-2]
    if cells < (BLOCKED_MIN_CELLS if need_weights else ONLINE_MIN_CELLS):
        output, weights = _attention_plain(q, k, v, bool_mask, float_mask, is_causal, scale)
        return output, (weights if need_weights else None)
    threads = blocked.default_threads()
    if need_weights:
        return blocked.attend_rows(q, k, v, bool_mask, float_mask, is_causal=is_causal, scale=scale,
                                   n_threads=threads)
    output = blocked.attend_online(q, k, v, bool_mask, float_mask, is_causal=is_causal, scale=scale,
                                   n_threads=threads)
    return output, None


def split_heads(x, n_heads: int) -> np.ndarray:
    """``[..., n, d_model] -> [..., n_heads, n, d_head]`` with ``d_head = d_model / n_heads``.

    Head h takes columns ``h*d_head:(h+1)*d_head`` (reshape, then swap the
    sequence and head axes), as in ``torch.nn.MultiheadAttention``.

    Raises:
        ValueError: ``x`` has fewer than 2 axes, or ``d_model % n_heads != 0``
            (the message lists the valid head counts).
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape [..., n, d_model], got {x.shape}")
    *lead, n, d_model = x.shape
    d_head = check_heads(d_model, n_heads)
    return np.swapaxes(x.reshape(*lead, n, n_heads, d_head), -3, -2)  # [..., n, h, d_head] -> [..., h, n, d_head]


def merge_heads(x) -> np.ndarray:
    """``[..., n_heads, n, d_head] -> [..., n, n_heads * d_head]``; the exact inverse of ``split_heads``.

    Raises:
        ValueError: ``x`` has fewer than 3 axes.
    """
    x = np.asarray(x)
    if x.ndim < 3:
        raise ValueError(f"x must have shape [..., n_heads, n, d_head], got {x.shape}")
    *lead, h, n, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, n, h * d_head)  # [..., h, n, d_head] -> [..., n, h*d_head]
