"""Attention as a soft database lookup: the hard lookup, the soft lookup, and the dial between them.

A database compares a query with its keys, picks the one that matches (here: the key
with the largest dot-product similarity ``q · k_j``) and hands over that key's value.
Attention compares the query with *every* key, turns the similarities into weights
with a softmax and hands over a blend of *all* values::

    weights = softmax(sharpness * (q · k_j))_j        [m]
    blend   = sum_j weights_j * v_j                   [d_v]

``sharpness`` (an inverse temperature, the ``scale`` of scaled dot-product attention)
morphs one into the other: 0 gives every value the same weight (the blend is the
mean of the values), a very large sharpness gives the hard lookup's value. The
transformer uses ``sharpness = 1 / sqrt(d_k)``.

Source: lesson, "attention is a soft database lookup" (the query "capital of France"
finds "Paris"); Vaswani et al. (2017) section 3.2.1, eq. (1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._validate import as_float_array
from .core import softmax

__all__ = [
    "SoftLookup",
    "HardLookup",
    "TIE_RTOL",
    "similarities",
    "soft_lookup",
    "soft_lookup_batch",
    "hard_lookup",
    "hard_lookup_batch",
    "sharpness_sweep",
    "nearest_value",
]

TIE_RTOL = 1e-9
"""Two similarities within ``TIE_RTOL * max(1, max|q · k|)`` of the best count as a tie."""


class SoftLookup(NamedTuple):
    """Result of :func:`soft_lookup` (unpacks as ``weights, blend``).

    Attributes:
        weights: attention weights ``[m]``, float64, non-negative, sum to 1.
        blend: ``weights @ values`` ``[d_v]``, float64.
    """

    weights: np.ndarray
    blend: np.ndarray


class HardLookup(NamedTuple):
    """Result of :func:`hard_lookup`: the database's answer.

    Attributes:
        indices: the row(s) whose key matches best, ascending; more than one on a tie.
        value: the value handed over ``[d_v]``: that row's value, or on a tie the
            mean of the tied rows' values (an even split).
        is_tie: ``True`` when several keys are equally good (within :data:`TIE_RTOL`).
        weights: ``[m]``, ``1 / len(indices)`` on the chosen rows, 0 elsewhere.
    """

    indices: tuple[int, ...]
    value: np.ndarray
    is_tie: bool
    weights: np.ndarray


def _check_rows(x, name: str, *, width: int | None = None, width_of: str = "") -> np.ndarray:
    """``x`` as a float64 matrix ``[m, d]``; ragged rows are named (``row 2 has 3 numbers ...``)."""
    if isinstance(x, Sequence) and not isinstance(x, str | bytes):
        lengths = [len(r) if isinstance(r, Sequence | np.ndarray) and not isinstance(r, str | bytes) else None
                   for r in x]
        known = [n for n in lengths if n is not None]
        if known and len(set(known)) > 1:
            first = known[0]
            bad = next(i for i, n in enumerate(lengths) if n != first)
            raise ValueError(f"{name}: row {bad} has {lengths[bad]} numbers but row 0 has {first}; "
                             f"every row of {name} must have the same length")
    arr = as_float_array(x, name).astype(np.float64, copy=False)
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"{name} must have shape [m, d] with at least one row and one column, got {arr.shape}")
    if width is not None and arr.shape[1] != width:
        raise ValueError(f"{name} rows have {arr.shape[1]} numbers but {width_of} has {width}; they must match")
    return arr


def _check_table(queries, keys, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``queries [n_q, d_k]``, ``keys [m, d_k]``, ``values [m, d_v]`` (float64)."""
    keys = _check_rows(keys, "keys")
    queries = _check_rows(queries, "queries", width=keys.shape[1], width_of="each key")
    values = _check_rows(values, "values")
    if values.shape[0] != keys.shape[0]:
        raise ValueError(f"keys and values must have one row per table entry: {keys.shape[0]} keys, "
                         f"{values.shape[0]} values")
    return queries, keys, values


def _check_query(query, keys, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One query ``[d_k]`` -> ``[1, d_k]`` plus the validated table."""
    q = as_float_array(query, "query")
    if q.ndim != 1:
        raise ValueError(f"query must be a vector [d_k], got shape {q.shape}")
    return _check_table(q[None, :], keys, values)


def _check_sharpness(sharpness) -> float:
    if isinstance(sharpness, bool) or not isinstance(sharpness, int | float | np.integer | np.floating):
        raise ValueError(f"sharpness must be a number >= 0, got {sharpness!r}")
    s = float(sharpness)
    if not math.isfinite(s) or s < 0:
        raise ValueError(f"sharpness must be a finite number >= 0, got {sharpness}")
    return s


def _scores(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``queries @ keys.T`` ``[n_q, d_k] x [d_k, m] -> [n_q, m]``; overflow is an error, not inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = queries @ keys.T
    if not np.all(np.isfinite(s)):
        raise ValueError("the dot products q · k overflow float64; use smaller numbers in the query and keys")
    return s


def similarities(query, keys) -> np.ndarray:
    """Dot-product similarity of one query with every key: ``q · k_j``.

    Args:
        query: ``[d_k]``. keys: ``[m, d_k]`` (numbers; a ragged list is an error).

    Returns:
        ``[m]`` float64 (lesson step 3, one row of ``Q Kᵀ``).

    Raises:
        ValueError: empty, ragged, non-finite or mismatched inputs (the message says which).
    """
    k = _check_rows(keys, "keys")
    q = as_float_array(query, "query")
    if q.ndim != 1 or q.shape[0] != k.shape[1]:
        raise ValueError(f"query must be a vector of {k.shape[1]} numbers (the key width), got shape {q.shape}")
    return _scores(q[None, :].astype(np.float64), k)[0]


def soft_lookup_batch(queries, keys, values, sharpness: float) -> tuple[np.ndarray, np.ndarray]:
    """Several queries looked up at once: the attention matrix and its outputs.

    ``weights = softmax(sharpness * Q Kᵀ)`` row by row and ``output = weights @ V``:
    scaled dot-product attention with ``scale = sharpness`` (for sharpness
    ``1/sqrt(d_k)`` this equals ``scaled_dot_product_attention(Q, K, V)``). The
    row maximum is subtracted *before* multiplying by the sharpness, so
    sharpness 1e6 (or any finite value) cannot overflow: far-behind keys get
    exactly 0, never NaN.

    Args:
        queries: ``[n_q, d_k]``. keys: ``[m, d_k]``. values: ``[m, d_v]``.
        sharpness: inverse temperature, a finite number ``>= 0``; 0 gives uniform weights.

    Returns:
        ``(weights [n_q, m], output [n_q, d_v])``, float64; each weights row sums to 1.

    Raises:
        ValueError: empty or ragged tables, a key/query width mismatch, keys and
            values of different lengths, non-finite numbers, a negative or
            non-finite sharpness, or dot products that overflow.

    Source: Vaswani et al. (2017) section 3.2.1; lesson steps 3-6.
    """
    queries, keys, values = _check_table(queries, keys, values)
    s = _check_sharpness(sharpness)
    scores = _scores(queries, keys)  # [n_q, d_k] x [d_k, m] -> [n_q, m]
    shifted = scores - scores.max(axis=-1, keepdims=True)  # [n_q, m], <= 0, the best key at 0
    with np.errstate(over="ignore"):
        logits = shifted * s if s > 0 else np.zeros_like(shifted)  # -inf where far behind: weight 0
    weights = softmax(logits, axis=-1)  # [n_q, m], rows sum to 1
    return weights, weights @ values  # [n_q, m] x [m, d_v] -> [n_q, d_v]


def soft_lookup(query, keys, values, sharpness: float) -> SoftLookup:
    """Attention for one query: a blend of every value, weighted by ``softmax(sharpness * q · k)``.

    Args:
        query: ``[d_k]`` ("what am I looking for?").
        keys: ``[m, d_k]`` ("what do I contain?").
        values: ``[m, d_v]`` ("what do I hand over?").
        sharpness: finite, ``>= 0``. 0 -> uniform weights, the blend is the mean of
            the values; very large -> the blend is the hard lookup's value.

    Returns:
        :class:`SoftLookup` ``(weights [m], blend [d_v])``, float64; weights sum to 1.

    Raises:
        ValueError: see :func:`soft_lookup_batch`.

    Source: lesson, "attention is a soft database lookup"; Vaswani et al. (2017) eq. (1).
    """
    q, k, v = _check_query(query, keys, values)
    weights, output = soft_lookup_batch(q, k, v, sharpness)
    return SoftLookup(weights[0], output[0])


def _best_rows(scores: np.ndarray) -> np.ndarray:
    """Boolean ``[n_q, m]``: True where a key is (within the tie tolerance) the best for its query."""
    best = scores.max(axis=-1, keepdims=True)  # [n_q, 1]
    tol = TIE_RTOL * np.maximum(1.0, np.abs(scores).max(axis=-1, keepdims=True))
    return scores >= best - tol


def hard_lookup_batch(queries, keys, values) -> tuple[np.ndarray, np.ndarray]:
    """The database's answer for several queries: one-hot rows (an even split on a tie).

    Args:
        queries: ``[n_q, d_k]``. keys: ``[m, d_k]``. values: ``[m, d_v]``.

    Returns:
        ``(weights [n_q, m], output [n_q, d_v])``, float64: row i is ``1/t`` on the
        ``t`` best keys of query i (argmax of ``q_i · k_j``), 0 elsewhere.

    Raises:
        ValueError: see :func:`soft_lookup_batch`.
    """
    queries, keys, values = _check_table(queries, keys, values)
    chosen = _best_rows(_scores(queries, keys)).astype(np.float64)  # [n_q, m]
    weights = chosen / chosen.sum(axis=-1, keepdims=True)
    return weights, weights @ values  # [n_q, m] x [m, d_v] -> [n_q, d_v]


def hard_lookup(query, keys, values) -> HardLookup:
    """A database lookup: the key with the largest similarity ``q · k_j`` hands over its value.

    Ties (similarities within ``TIE_RTOL * max(1, max|q · k|)`` of the best) are
    reported, and the value is split evenly between the tied rows (their mean).

    Args:
        query: ``[d_k]``. keys: ``[m, d_k]``. values: ``[m, d_v]``.

    Returns:
        :class:`HardLookup` ``(indices, value [d_v], is_tie, weights [m])``.

    Raises:
        ValueError: see :func:`soft_lookup_batch`.

    Source: lesson, "a database matches a query to one key and returns that one value".
    """
    q, k, v = _check_query(query, keys, values)
    weights, output = hard_lookup_batch(q, k, v)
    indices = tuple(int(i) for i in np.flatnonzero(weights[0]))
    return HardLookup(indices, output[0], len(indices) > 1, weights[0])


def sharpness_sweep(query, keys, values, sharpnesses) -> tuple[np.ndarray, np.ndarray]:
    """The soft lookup of one query at many sharpness values (the dial from mean to database).

    Args:
        query: ``[d_k]``. keys: ``[m, d_k]``. values: ``[m, d_v]``.
        sharpnesses: ``[s]`` finite numbers ``>= 0``.

    Returns:
        ``(weights [s, m], blends [s, d_v])``, float64; row t is ``soft_lookup(..., sharpnesses[t])``.

    Raises:
        ValueError: see :func:`soft_lookup_batch`; an empty or negative ``sharpnesses``.
    """
    q, k, v = _check_query(query, keys, values)
    sharp = as_float_array(sharpnesses, "sharpnesses").astype(np.float64, copy=False)
    if sharp.ndim != 1 or sharp.size == 0 or (sharp < 0).any():
        raise ValueError(f"sharpnesses must be a non-empty vector of numbers >= 0, got shape {sharp.shape}")
    scores = _scores(q, k)[0]  # [m]
    shifted = scores - scores.max()  # [m], <= 0
    with np.errstate(over="ignore", invalid="ignore"):
        logits = np.where(sharp[:, None] > 0, sharp[:, None] * shifted[None, :], 0.0)  # [s, m]
    weights = softmax(logits, axis=-1)  # [s, m]
    return weights, weights @ v  # [s, m] x [m, d_v] -> [s, d_v]


def nearest_value(vector, values) -> int:
    """Row of ``values`` closest to ``vector`` (Euclidean distance; the first on a tie).

    Args:
        vector: ``[d_v]``, e.g. a blend. values: ``[m, d_v]``.

    Returns:
        the row index (int).

    Raises:
        ValueError: empty, ragged or non-finite inputs, or a width mismatch.
    """
    x = as_float_array(vector, "vector")
    if x.ndim != 1:
        raise ValueError(f"vector must be [d_v], got shape {x.shape}")
    v = _check_rows(values, "values", width=x.shape[0], width_of="the vector")
    return int(np.argmin(np.linalg.norm(v - x[None, :], axis=-1)))
