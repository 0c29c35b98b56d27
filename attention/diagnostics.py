"""Diagnostics of attention weights: entropy, softmax Jacobian, and the saturation sweep.

Source: lesson, "why scale by sqrt(d_k)"; Vaswani et al. (2017) section 3.2.1, footnote 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validate import positive_int
from .core import softmax

__all__ = [
    "entropy",
    "effective_keys",
    "softmax_jacobian",
    "jacobian_frobenius_norm",
    "SaturationStats",
    "saturation_sweep",
]


def _probabilities(p, name: str = "p") -> np.ndarray:
    p = np.asarray(p, dtype=np.float64) if not np.issubdtype(np.asarray(p).dtype, np.floating) else np.asarray(p)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{name} must have shape [..., n] with n >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)) or (p < 0).any():
        raise ValueError(f"{name} must hold finite, non-negative weights")
    return p


def entropy(weights, axis: int = -1) -> np.ndarray:
    """Shannon entropy of each row of ``weights``, in nats (``0 log 0 = 0``).

    ``0`` for a one-hot row, ``log(n)`` for a uniform row of n keys; a fully
    masked (all-zero) row gives 0.

    Args:
        weights: ``[..., n]`` non-negative (rows normally sum to 1).
    Returns:
        ``[...]`` (the ``axis`` removed), same float dtype.
    Raises:
        ValueError: negative, NaN or inf entries.
    """
    p = _probabilities(weights, "weights")
    logp = np.log(p, out=np.zeros_like(p), where=p > 0)
    return -np.sum(p * logp, axis=axis)


def effective_keys(weights, axis: int = -1) -> np.ndarray:
    """``exp(entropy)``: how many keys a row effectively attends to (1 = one-hot, n = uniform)."""
    return np.exp(entropy(weights, axis=axis))


def softmax_jacobian(p) -> np.ndarray:
    """Jacobian of the softmax at output ``p``: ``J = diag(p) - p pᵀ`` (batched).

    ``J[i, j] = d p_i / d z_j``. It is what multiplies the gradient flowing back
    through the softmax, so a saturated (one-hot) ``p`` gives ``J ≈ 0``.

    Args:
        p: softmax output ``[..., n]``.
    Returns:
        ``[..., n, n]``.
    Raises:
        ValueError: negative, NaN or inf entries.
    """
    p = _probabilities(p)
    return p[..., :, None] * np.eye(p.shape[-1], dtype=p.dtype) - p[..., :, None] * p[..., None, :]


def jacobian_frobenius_norm(p) -> np.ndarray:
    """``||diag(p) - p pᵀ||_F`` per row ``[...]``, without building the ``n x n`` matrix.

    Uses ``||J||_F² = Σ_i p_i² ((1 - p_i)² + Σ_{j≠i} p_j²)``: every term is non-negative,
    so nearly one-hot rows keep full relative precision (the expanded form
    ``Σp² - 2Σp³ + (Σp²)²`` cancels to 0 there).
    """
    p = _probabilities(p)
    sq = p**2
    zero = np.zeros_like(sq[..., :1])
    before = np.concatenate([zero, np.cumsum(sq, axis=-1)[..., :-1]], axis=-1)  # Σ_{j<i} p_j²
    after = np.concatenate([np.cumsum(sq[..., ::-1], axis=-1)[..., -2::-1], zero], axis=-1)  # Σ_{j>i} p_j²
    return np.sqrt(np.sum(sq * ((1 - p) ** 2 + before + after), axis=-1))


@dataclass(frozen=True)
class SaturationStats:
    """Per-``d_k`` statistics from :func:`saturation_sweep`; every array is ``[len(d_k_values)]``.

    ``*_unscaled`` use raw scores ``q·k``; ``*_scaled`` use ``q·k / sqrt(d_k)``.
    ``score_std``: measured standard deviation of the scores (theory: ``sqrt(d_k)``
    unscaled, 1 scaled). ``max_weight``: mean over query rows of the largest weight.
    ``entropy``: mean row entropy in nats. ``effective_keys``: mean ``exp(entropy)``.
    ``jacobian_norm``: mean Frobenius norm of the softmax Jacobian.
    """

    d_k: np.ndarray
    n_keys: int
    n_samples: int
    seed: int
    score_std_unscaled: np.ndarray
    score_std_scaled: np.ndarray
    max_weight_unscaled: np.ndarray
    max_weight_scaled: np.ndarray
    entropy_unscaled: np.ndarray
    entropy_scaled: np.ndarray
    effective_keys_unscaled: np.ndarray
    effective_keys_scaled: np.ndarray
    jacobian_norm_unscaled: np.ndarray
    jacobian_norm_scaled: np.ndarray


def sample_scores(d_k: int, n_keys: int, n_samples: int, seed: int) -> np.ndarray:
    """Raw scores ``q·k`` of unit-variance queries and keys, ``[n_matrices, n_keys, n_keys]``.

    ``n_matrices = ceil(n_samples / n_keys)``: each matrix is ``n_keys`` queries
    against their own ``n_keys`` keys, all components i.i.d. ``N(0, 1)``, drawn from
    ``np.random.default_rng([seed, d_k])`` (so each ``d_k`` is reproducible alone).
    At least ``n_samples`` query rows in all.
    """
    d_k = positive_int(d_k, "d_k")
    n_keys = positive_int(n_keys, "n_keys")
    n_samples = positive_int(n_samples, "n_samples")
    rng = np.random.default_rng([seed, d_k])
    n_mat = math.ceil(n_samples / n_keys)
    step = max(1, SAMPLE_BLOCK_BYTES // (8 * n_keys * d_k))  # matrices per block
    if step >= n_mat:
        q = rng.standard_normal((n_mat, n_keys, d_k))
        k = rng.standard_normal((n_mat, n_keys, d_k))
        return q @ np.swapaxes(k, -1, -2)  # [m, n, d_k] x [m, d_k, n] -> [m, n, n]
    # Large d_k: the same draws, a block of matrices at a time (q and k whole would be 2 x 64 MiB at d_k 1024 with
    # 8192 rows). One pass advances the generator through q and then k, keeping its state at each block's start;
    # the second draws each block of q and of k from those states (a Generator's normals are drawn in order, so
    # a block drawn alone is the same numbers as that part of one draw).
    starts = range(0, n_mat, step)
    q_states, k_states = [], []
    for states in (q_states, k_states):
        for start in starts:
            states.append(rng.bit_generator.state)
            rng.standard_normal((min(step, n_mat - start), n_keys, d_k))
    out = np.empty((n_mat, n_keys, n_keys))
    for start, q_state, k_state in zip(starts, q_states, k_states, strict=True):
        size = (min(step, n_mat - start), n_keys, d_k)
        rng.bit_generator.state = q_state
        q = rng.standard_normal(size)
        rng.bit_generator.state = k_state
        k = rng.standard_normal(size)
        out[start:start + size[0]] = q @ np.swapaxes(k, -1, -2)
    return out


SAMPLE_BLOCK_BYTES = 4 * 2**20
""":func:`sample_scores` draws its queries and keys in blocks of at most this many float64 bytes each (4 MiB)."""


def saturation_sweep(d_k_values, n_keys: int = 16, n_samples: int = 2048, seed: int = 0) -> SaturationStats:
    """Measure how softmax saturates as ``d_k`` grows, with and without ``1/sqrt(d_k)``.

    For each ``d_k``, scores of unit-variance queries and keys (see
    :func:`sample_scores`) go through the softmax raw and scaled.

    Args:
        d_k_values: iterable of positive ints (e.g. ``[1, 2, 4, ..., 1024]``).
        n_keys: keys per query (row length).
        n_samples: query rows per ``d_k`` (at least).
        seed: the Monte Carlo seed.

    Returns:
        :class:`SaturationStats`.

    Raises:
        ValueError: an empty ``d_k_values`` or a non-positive size.
    """
    d_ks = [positive_int(int(d), "d_k") for d in d_k_values]
    if not d_ks:
        raise ValueError("d_k_values must hold at least one d_k")
    stats: dict[str, list[float]] = {}
    for d_k in d_ks:
        raw = sample_scores(d_k, n_keys, n_samples, seed)
        for tag, scores in (("unscaled", raw), ("scaled", raw / math.sqrt(d_k))):
            w = softmax(scores, axis=-1)
            h = entropy(w)
            for name, value in (
                ("score_std", scores.std()),
                ("max_weight", w.max(axis=-1).mean()),
                ("entropy", h.mean()),
                ("effective_keys", np.exp(h).mean()),
                ("jacobian_norm", jacobian_frobenius_norm(w).mean()),
            ):
                stats.setdefault(f"{name}_{tag}", []).append(float(value))
    return SaturationStats(
        d_k=np.array(d_ks), n_keys=int(n_keys), n_samples=int(n_samples), seed=seed,
        **{name: np.array(values) for name, values in stats.items()},
    )
