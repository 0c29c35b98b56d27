"""Input checks shared by the core (the plain and the blocked attention path among them): every failure is a
``ValueError`` naming the argument. Imports nothing from the package, so any module may use it."""

from __future__ import annotations

import math

import numpy as np


def as_float_array(x, name: str, *, min_ndim: int = 0) -> np.ndarray:
    """Return ``x`` as a floating-point array (float32/float64 kept, integers -> float64).

    Raises:
        ValueError: if ``x`` is not numeric, has fewer than ``min_ndim`` axes, or
            contains NaN or +-inf.
    """
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be a numeric array: {exc}") from None
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} axes, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        bad = "NaN" if np.isnan(arr).any() else "+-inf"
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{name} contains {bad} at index {idx}; every entry must be finite")
    return arr


def positive_int(value, name: str) -> int:
    """Return ``value`` as an ``int`` >= 1, else raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def valid_head_counts(d_model: int) -> list[int]:
    """Every ``n_heads`` that divides ``d_model`` (``[1, ..., d_model]``)."""
    return [h for h in range(1, d_model + 1) if d_model % h == 0]


def check_heads(d_model: int, n_heads: int) -> int:
    """Return ``d_head = d_model // n_heads``; ``ValueError`` listing valid counts otherwise."""
    d_model = positive_int(d_model, "d_model")
    n_heads = positive_int(n_heads, "n_heads")
    if d_model % n_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}; "
            f"valid n_heads for d_model={d_model}: {valid_head_counts(d_model)}"
        )
    return d_model // n_heads


def _float_dtype(*arrays: np.ndarray) -> np.dtype:
    """Common float dtype: float32 stays float32, float16 computes in float32, else float64."""
    dtype = np.result_type(*arrays)
    if dtype == np.float16:
        return np.dtype(np.float32)
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


def _check_qkv(q, k, v):
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    v = as_float_array(v, "v", min_ndim=2)
    for name, arr, axes in (("q", q, "[..., n_q, d_k]"), ("k", k, "[..., n_k, d_k]"),
                            ("v", v, "[..., n_k, d_v]")):
        if 0 in arr.shape:
            raise ValueError(f"{name} must have shape {axes} with no empty axis, got {arr.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (last axis): q {q.shape} is [..., n_q, {q.shape[-1]}], "
            f"k {k.shape} is [..., n_k, {k.shape[-1]}]"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys n_k (axis -2): "
            f"k {k.shape} has {k.shape[-2]}, v {v.shape} has {v.shape[-2]}"
        )
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"leading (batch/head) axes of q {q.shape}, k {k.shape}, v {v.shape} do not broadcast"
        ) from None
    dtype = _float_dtype(q, k, v)
    return q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False), batch


def _check_mask(attn_mask, scores_shape: tuple[int, ...], dtype: np.dtype):
    """Return ``(bool_mask or None, float_mask or None)``, both broadcast to ``scores_shape``."""
    mask = np.asarray(attn_mask)
    try:
        fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"attn_mask of shape {mask.shape} is not broadcastable to the scores "
            f"[..., n_q, n_k] = {scores_shape}"
        )
    if mask.dtype == np.bool_:
        return mask, None
    if not np.issubdtype(mask.dtype, np.number):
        raise ValueError(f"attn_mask must be boolean or float, got dtype {mask.dtype}")
    mask = mask.astype(dtype, copy=False)
    if np.isnan(mask).any() or np.isposinf(mask).any():
        raise ValueError("attn_mask (float) may hold finite values or -inf, not NaN or +inf")
    return None, mask


def prepare_attention(q, k, v, attn_mask, is_causal: bool, scale: float | None):
    """Validation shared by the plain and the blocked path of ``scaled_dot_product_attention``.

    Returns:
        ``(q, k, v, bool_mask, float_mask, scale)``: q, k, v in one float dtype
        (shapes kept); at most one mask, checked to broadcast to the scores
        ``[..., n_q, n_k]`` but not broadcast; ``scale`` a float (default
        ``1 / sqrt(d_k)``). ``is_causal`` builds no mask here.
    """
    q, k, v, batch = _check_qkv(q, k, v)
    n_q, d_k, n_k = q.shape[-2], q.shape[-1], k.shape[-2]
    if attn_mask is not None and is_causal:
        raise ValueError("give either attn_mask or is_causal=True, not both")
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    elif not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    bool_mask = float_mask = None
    if attn_mask is not None:
        bool_mask, float_mask = _check_mask(attn_mask, (*batch, n_q, n_k), q.dtype)
    return q, k, v, bool_mask, float_mask, float(scale)


def scores_may_overflow(q: np.ndarray, k: np.ndarray, scale: float, float_mask: np.ndarray | None) -> bool:
    """Whether ``q kᵀ · scale`` (plus the float mask) could leave the float range of ``q``'s dtype.

    A cheap bound, one pass over q, k (and the mask): every partial sum of a dot product is at most
    ``d_k · max|q| · max|k|`` in size. Only when this returns ``True`` do the attention paths check
    their scores cell by cell (:func:`scores_overflow_error`).
    """
    limit = float(np.finfo(q.dtype).max) / 4
    q_max = max(float(q.max()), -float(q.min()))  # max |q| without a temporary array
    k_max = max(float(k.max()), -float(k.min()))
    bound = q_max * k_max * q.shape[-1] * abs(scale)  # Python floats: inf, never an error
    if float_mask is not None:
        finite = np.abs(float_mask[np.isfinite(float_mask)])
        bound += float(finite.max()) if finite.size else 0.0
    return not bound < limit


def scores_overflow_error(q: np.ndarray, k: np.ndarray) -> ValueError:
    """The one error for scores that overflowed although q and k are finite (both attention paths raise it)."""
    return ValueError(
        f"the scores q kᵀ · scale overflow {q.dtype} (max |q| = {float(np.abs(q).max()):.3g}, "
        f"max |k| = {float(np.abs(k).max()):.3g}, d_k = {q.shape[-1]}; the largest {q.dtype} is "
        f"{float(np.finfo(q.dtype).max):.3g}): scale q and k down, or pass float64 arrays"
    )
