"""Input checks shared by the core: every failure is a ``ValueError`` naming the argument."""

from __future__ import annotations

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
