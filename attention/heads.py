"""Head statistics: what one attention head does, read from its weights (pure NumPy, float64).

The one home of every head statistic the lessons name ("Inside a real model", "What made it say that?",
"Watch attention learn", the sinks lesson). Each statistic is a number per query row ``i`` of one head's causal
attention weights ``w [n, n]`` (``w[i, j]`` = how much query ``i`` reads key ``j``; ``w[i, j] = 0`` for
``j > i``; every row sums to 1), then averaged over a set of rows: by default the rows ``FIRST_ROW .. n-1``
(:func:`rows`), or one row (``rows="last"``: the query that predicts the next token).

=============  ======================================================  ======================================
key            value of row ``i`` (:data:`FORMULAS`)                    default rows
=============  ======================================================  ======================================
``sink``       ``w[i, 0]``: weight on the first token                   ``2 .. n-1``
``previous``   ``w[i, i-1]``: weight on the previous token              ``2 .. n-1``
``self``       ``w[i, i]``: weight on itself                            ``2 .. n-1``
``entropy``    ``-sum_j w[i, j] log2 w[i, j]`` (bits; ``0 log 0 = 0``)  ``2 .. n-1``
``distance``   ``sum_j w[i, j] (i - j)`` (tokens looked back)           ``2 .. n-1``
``induction``  ``sum_{t in T(i)} w[i, t]`` (prefix matching)            the rows with ``T(i)`` non-empty
=============  ======================================================  ======================================

Why rows from :data:`FIRST_ROW` = 2: row 0 has a single key, which is both the first token and itself (weight 1:
every head would count as a sink *and* as self there); row 1's previous token *is* the first token, so a
previous-token head and a sink look alike there. From row 2 on, ``0``, ``i - 1`` and ``i`` are three different
keys. This is also the previous-token score's one definition: the mean of ``w[i, i-1]`` over ``i = 2 .. n-1``.

The induction score (prefix matching; Olsson et al. 2022, "In-context Learning and Induction Heads", section
"Definitions": a head attends to the token that *followed* an earlier occurrence of the current token). The
targets of query ``i`` are ``T(i) = {j + 1 : j < i - 2, ids[j] == ids[i]}`` (:func:`induction_targets`): the
position right after each earlier occurrence of its token, except the positions ``i`` (an occurrence right
before, ``j = i - 1``: the token after it is the query itself) and ``i - 1`` (an occurrence two back,
``j = i - 2``: the token after it *is* the previous token). Without that exclusion a self head or a
previous-token head would earn induction credit on "the the the" or "one two one two". A row's score is the
weight on all its targets; the statistic is the mean over the rows that have targets. On ``k >= 3`` distinct
tokens written twice (:func:`repeated_random_ids`) the rows with targets are exactly the second copy
``i = k .. 2k-1``, each with the one target ``i - k + 1``, so the score is ``mean_i w[i, i-k+1]`` over the second
copy; a pure previous-token head scores 0 there, and so does a self head.

Sources:
    * Induction heads, prefix matching, repeated random tokens: Olsson et al. (2022), "In-context Learning and
      Induction Heads", sections "Definitions" and "Per-token loss analysis".
    * Attention sinks (weight piled on the first token): Xiao et al. (2023), "Efficient Streaming Language Models
      with Attention Sinks", section 3.1.
    * Previous-token heads as the first half of an induction circuit (K-composition): Elhage et al. (2021),
      "A Mathematical Framework for Transformer Circuits".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._validate import as_float_array

__all__ = ["FIRST_ROW", "FORMULAS", "KEYS", "LAST", "entropy_bits", "formula", "induction", "induction_mask",
           "induction_rows", "induction_targets", "key_weight", "per_row", "repeated_random_ids", "repeats_too_close",
           "rows", "score", "statistics", "top_heads", "uniform"]

FIRST_ROW = 2
"""The first query row a statistic averages over by default (see the module docstring)."""
KEYS = ("sink", "previous", "self", "entropy", "distance", "induction")
"""Every statistic, in the order the pages list them."""
LAST = "last"
"""``rows=LAST``: the statistic of the last query row alone (``i = n-1``)."""
FORMULAS: dict[str, str] = {
    "sink": r"w_{i,0}",
    "previous": r"w_{i,\,i-1}",
    "self": r"w_{i,i}",
    "entropy": r"-\sum_{j \le i} w_{ij} \log_2 w_{ij}",
    "distance": r"\sum_{j \le i} w_{ij}\,(i - j)",
    "induction": r"\sum_{j < i-2,\ t_j = t_i} w_{i,\,j+1}",
}
"""Each statistic's value on query row ``i`` (LaTeX; ``t_j`` = the token at position ``j``): :func:`formula`."""


def formula(key: str, which: str = "mean") -> str:
    """The LaTeX formula of statistic ``key``: ``which="mean"`` averaged over its default rows
    (``\\frac{1}{n-2}\\sum_{i=2}^{n-1} w_{i,0}``; induction over ``R``, the rows with a target) or
    ``which=LAST`` on the last row (``w_{i,0} \\quad (i = n-1)``): the same row formula everywhere.

    Raises:
        ValueError: ``key`` is not one of :data:`KEYS`, or ``which`` is not ``"mean"`` or ``"last"``.
    """
    if key not in FORMULAS:
        raise ValueError(f"key must be one of {', '.join(KEYS)}, got {key!r}")
    if which == LAST:
        return FORMULAS[key] + r"\quad (i = n-1)"
    if which != "mean":
        raise ValueError(f"which must be 'mean' or {LAST!r}, got {which!r}")
    if key == "induction":
        return r"\frac{1}{|R|}\sum_{i \in R}\ " + FORMULAS[key]
    inner = FORMULAS[key]
    return r"\frac{1}{n-2}\sum_{i=2}^{n-1} " + (rf"\Big({inner}\Big)" if inner.startswith("-") else inner)


# --- checks ---------------------------------------------------------------------------------------------------


def _weights(attentions, min_n: int = 1) -> np.ndarray:
    """``attentions`` as float64 ``[..., n, n]``, else ``ValueError`` naming it."""
    w = as_float_array(attentions, "attentions", min_ndim=2).astype(np.float64, copy=False)
    if w.shape[-1] != w.shape[-2] or w.shape[-1] < min_n:
        raise ValueError(f"attentions must be [..., n, n] with n >= {min_n}, got shape {w.shape}")
    return w


def _ids(ids, n: int | None = None) -> np.ndarray:
    """``ids`` as an int64 array ``[..., n]``, else ``ValueError`` naming it."""
    try:
        a = np.asarray(ids)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ids must be whole numbers: {exc}") from None
    if a.ndim == 0 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"ids must be a sequence of whole numbers, got {a.dtype} of shape {a.shape}")
    if n is not None and a.shape[-1] != n:
        raise ValueError(f"ids must hold one token per query row (n = {n}), got {a.shape[-1]}")
    return a.astype(np.int64)


def rows(n: int, first: int = FIRST_ROW) -> np.ndarray:
    """The default query rows of a statistic on ``n`` tokens: ``first .. n-1`` (int64; empty when ``n <= first``)."""
    return np.arange(first, max(int(n), first), dtype=np.int64)


def uniform(n: int) -> np.ndarray:
    """Uniform causal attention ``[n, n]`` float64: row ``i`` spreads ``1 / (i + 1)`` over the keys ``0 .. i`` (the
    baseline every statistic is read against: its sink is ``mean 1 / (i + 1)``).

    Raises:
        ValueError: ``n < 1``.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a whole number >= 1, got {n!r}")
    return np.tri(int(n)) / np.arange(1, int(n) + 1)[:, None]


# --- induction targets ----------------------------------------------------------------------------------------


def induction_mask(ids) -> np.ndarray:
    """Where each query's induction targets are: bool ``[..., n, n]``, ``mask[..., i, t]`` true when ``t`` is in
    ``T(i)``, i.e. ``1 <= t <= i - 2`` and ``ids[t - 1] == ids[i]`` (see the module docstring).

    Args:
        ids: ``[..., n]`` token ids (one sequence, or a batch ``[B, n]``).

    Raises:
        ValueError: ``ids`` is not an array of whole numbers.
    """
    a = _ids(ids)
    n = a.shape[-1]
    i, t = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = (t >= 1) & (t <= i - 2)  # [n, n]: never i (the query) or i - 1 (the previous token)
    before = np.concatenate([np.full(a.shape[:-1] + (1,), -1, dtype=np.int64), a[..., :-1]], axis=-1)  # ids[t - 1]
    same = before[..., None, :] == a[..., :, None]  # [..., n, n]: ids[t - 1] == ids[i]
    return same & allowed


def induction_targets(ids: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """For each query row with an induction target, its targets: ``{i: T(i)}`` (rows without one are left out).

    ``[1, 2, 3, 1, 2]`` -> ``{3: (1,), 4: (2,)}``; ``[7, 7, 7]`` -> ``{}`` (every repeat too close);
    ``[1, 2, 1]`` -> ``{}`` (the token after the 1 at 0 is row 2's previous token).

    Raises:
        ValueError: ``ids`` is not one sequence of whole numbers.
    """
    a = _ids(ids)
    if a.ndim != 1:
        raise ValueError(f"ids must be one sequence [n], got shape {a.shape}")
    m = induction_mask(a)
    return {int(i): tuple(int(t) for t in np.nonzero(m[i])[0]) for i in np.nonzero(m.any(-1))[0]}


def induction_rows(ids: Sequence[int]) -> tuple[int, ...]:
    """The query rows ``R`` of the induction score: those with at least one target (ascending)."""
    return tuple(induction_targets(ids))


def repeats_too_close(ids: Sequence[int]) -> bool:
    """Whether ``ids`` repeat a token, but only right away or one apart, so no row has an induction target: the
    score cannot tell induction from previous-token (or self) attention on them."""
    a = _ids(ids)
    return len(np.unique(a)) < len(a) and not induction_rows(a)


def repeated_random_ids(candidates: Sequence[int], k: int, seed: int) -> tuple[int, ...]:
    """The repeated random prompt: ``k`` distinct ids drawn from ``candidates`` with
    ``np.random.default_rng(seed).choice(len(candidates), k, replace=False)``, written twice (``2k`` ids,
    ``ids[k + i] == ids[i]``). Olsson et al. (2022) find induction heads on repeated random tokens: nothing but the
    first copy predicts the second. The caller supplies the candidates (the door: SmolLM2's whole-word tokens,
    :func:`explorer.shell.llm.word_ids`; training: its own vocabulary).

    Raises:
        ValueError: ``k < 1``, ``seed < 0``, or fewer than ``k`` distinct candidates.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    pool = _ids(candidates)
    if pool.ndim != 1 or len(np.unique(pool)) != len(pool) or len(pool) < k:
        raise ValueError(f"candidates must be at least k = {k} distinct ids, got {len(pool)} "
                         f"({len(np.unique(pool))} distinct)")
    chosen = [int(pool[i]) for i in np.random.default_rng(int(seed)).choice(len(pool), size=int(k), replace=False)]
    return tuple(chosen + chosen)


# --- per row ---------------------------------------------------------------------------------------------------


def entropy_bits(attentions) -> np.ndarray:
    """``-sum_j w_ij log2 w_ij`` of every row (bits; ``0 log 0 = 0``): ``[..., n_q, n_k] -> [..., n_q]`` float64."""
    w = as_float_array(attentions, "attentions", min_ndim=1).astype(np.float64, copy=False)
    return -(w * np.log2(np.where(w > 0, w, 1.0))).sum(axis=-1)


def per_row(key: str, attentions, ids=None) -> tuple[np.ndarray, np.ndarray]:
    """Statistic ``key`` of every query row: ``(values [..., n], defined [..., n] bool)``, float64.

    ``defined`` is false where the row has no value: ``previous`` on row 0 (no previous token), ``induction`` on a
    row without a target (the value there is 0). Rows below :data:`FIRST_ROW` are given too (the default rows start
    at it: see the module docstring).

    Args:
        key: one of :data:`KEYS`.
        attentions: ``[..., n, n]`` causal attention weights (e.g. ``[n_layers, n_heads, n, n]``).
        ids: the ``n`` token ids, ``[n]`` or one per leading batch entry ``[B, n]`` (``attentions [B, ..., n, n]``);
            only ``induction`` reads them.

    Raises:
        ValueError: ``key`` unknown, ``attentions`` not ``[..., n, n]``, or ``ids`` missing or not ``n`` long.
    """
    if key not in KEYS:
        raise ValueError(f"key must be one of {', '.join(KEYS)}, got {key!r}")
    w = _weights(attentions)
    n = w.shape[-1]
    i = np.arange(n)
    every = np.ones(w.shape[:-1], dtype=bool)
    if key == "sink":
        return w[..., 0], every
    if key == "self":
        return w[..., i, i], every
    if key == "previous":
        values = np.zeros(w.shape[:-1])
        values[..., 1:] = w[..., i[1:], i[1:] - 1]
        return values, every & (i >= 1)
    if key == "entropy":
        return entropy_bits(w), every
    if key == "distance":
        return (w * np.maximum(i[:, None] - i[None, :], 0)).sum(-1), every
    if ids is None:
        raise ValueError("ids must be given for the induction score (its targets come from the tokens)")
    mask = induction_mask(_ids(ids, n))  # [n, n] or [B, n, n]
    if mask.ndim > 2:  # a batch: [B, n, n] -> [B, 1, ..., n, n] against attentions [B, ..., n, n]
        if w.shape[0] != mask.shape[0]:
            raise ValueError(f"ids must hold one sequence per batch entry ({w.shape[0]}), got {mask.shape[0]}")
        mask = mask.reshape(mask.shape[:1] + (1,) * (w.ndim - 3) + mask.shape[1:])
    values = (w * mask).sum(-1)
    return values, np.broadcast_to(mask.any(-1), values.shape)


def _row_indices(which, n: int) -> np.ndarray:
    if which is None:
        return rows(n)
    if isinstance(which, str):
        if which != LAST:
            raise ValueError(f"rows must be None, {LAST!r} or a sequence of query rows, got {which!r}")
        return np.array([n - 1])
    r = np.asarray(which)
    integer = r.size == 0 or np.issubdtype(r.dtype, np.integer)
    if r.ndim != 1 or not integer or (r.size and (r.min() < 0 or r.max() >= n)):
        raise ValueError(f"rows must be query rows in 0 .. {n - 1}, got {which!r}")
    return r.astype(np.int64)


def score(key: str, attentions, ids=None, rows=None, *, batch: bool = False) -> np.ndarray:
    """Statistic ``key`` averaged over query rows: float64 ``attentions.shape[:-2]`` (``[n_layers, n_heads]``).

    Args:
        key, attentions, ids: as :func:`per_row`.
        rows: ``None`` (the default rows: :func:`rows`, for induction the rows among them with a target), ``"last"``
            (the row ``n-1``) or a sequence of query rows (each must be defined for ``key``).
        batch: the first axis of ``attentions`` holds sequences (``ids [B, n]``): the mean runs over every
            (sequence, row) pair that is defined, and the result drops that axis (``[B, H, n, n] -> [H]``). With
            ``batch`` and ``rows=None``, an induction score no row defines (every repeat too close) is 0.

    Raises:
        ValueError: the arguments of :func:`per_row`; ``rows`` out of range or holding a row where ``key`` is
            undefined (``previous`` on row 0; ``induction`` on a row without a target, or with ``rows=None``
            when no row has one; use :func:`induction_rows` first); no row to average (``n <= FIRST_ROW``).
    """
    values, defined = per_row(key, attentions, ids)
    n = values.shape[-1]
    r = _row_indices(rows, n)
    v, d = values[..., r], defined[..., r]
    if batch:
        d = d & np.ones_like(v, dtype=bool)
        count = d.sum(axis=(0, -1))
        total = np.where(d, v, 0.0).sum(axis=(0, -1))
        if rows is not None and not d.all():
            raise ValueError(f"rows must be rows where {key!r} is defined in every sequence")
        if rows is None and key != "induction" and r.size == 0:
            raise ValueError(f"attentions must have n > {FIRST_ROW} query rows to average, got n = {n}")
        return np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    if key == "induction" and rows is None:
        keep = np.asarray(d).reshape(-1, d.shape[-1]).any(0) if d.ndim > 1 else d
        r, v = r[keep], v[..., keep]
        if r.size == 0:
            raise ValueError("ids: no query row has an induction target (every repeat, if any, is too close: "
                             "see induction_rows)")
    elif r.size == 0:
        raise ValueError(f"attentions must have n > {FIRST_ROW} query rows to average, got n = {n}")
    elif not np.all(d):
        raise ValueError(f"rows must be rows where {key!r} is defined, got {[int(x) for x in r]}")
    return v.mean(axis=-1)


def statistics(attentions, ids=None, rows=None) -> dict[str, np.ndarray]:
    """Every statistic :func:`score` defines for these weights: ``{key: attentions.shape[:-2]}`` float64, in the
    order of :data:`KEYS`; ``induction`` is left out when ``ids`` is ``None`` or no chosen row has a target, and
    ``previous`` when ``rows`` hold row 0.

    Raises:
        ValueError: as :func:`score` (e.g. no row to average: ``n <= FIRST_ROW`` with ``rows=None``).
    """
    w = _weights(attentions)
    chosen = {int(x) for x in _row_indices(rows, w.shape[-1])}
    targets = set(induction_rows(ids)) if ids is not None else set()
    out = {}
    for key in KEYS:
        if key == "induction" and not (targets & chosen if rows is None else chosen <= targets):
            continue  # undefined on these rows (no ids, no target)
        if key == "previous" and 0 in chosen:
            continue  # row 0 has no previous token
        out[key] = score(key, w, ids if key == "induction" else None, rows)
    return out


def key_weight(attentions, key: int = 0) -> np.ndarray:
    """The mean weight on one key position over the query rows ``max(FIRST_ROW, key + 1) .. n-1`` (the rows that
    can see it, from :data:`FIRST_ROW` on): float64 ``attentions.shape[:-2]``. ``key = 0`` is the sink statistic
    (:func:`score` of ``"sink"``); ``key = 1`` reads a token moved to position 1 (the sinks lesson).

    Raises:
        ValueError: ``attentions`` not ``[..., n, n]``; ``key`` not a whole number >= 0; no row to average
            (``n <= max(FIRST_ROW, key + 1)``).
    """
    w = _weights(attentions)
    if isinstance(key, bool) or not isinstance(key, int | np.integer) or key < 0:
        raise ValueError(f"key must be a whole number >= 0, got {key!r}")
    first = max(FIRST_ROW, int(key) + 1)
    if w.shape[-1] <= first:
        raise ValueError(f"attentions: the weight on position {key} averages query rows {first}..n-1: it needs at "
                         f"least {first + 1} tokens, got {w.shape[-1]}")
    return w[..., first:, key].mean(axis=-1)


def induction(attentions, ids, rows=None, *, batch: bool = False) -> np.ndarray:
    """The induction (prefix-matching) score: :func:`score` of ``"induction"`` (see the module docstring)."""
    return score("induction", attentions, ids, rows, batch=batch)


def top_heads(values, k: int = 1, *, largest: bool = True) -> list[tuple[int, int]]:
    """The ``k`` heads with the largest (or, ``largest=False``, smallest) value of a layer × head grid, best first:
    ``[(layer, head), ...]`` (ints; fewer than ``k`` when the grid has fewer heads). Ties go to the lower layer, then
    the lower head (the first in row-major order).

    Args:
        values: one number per head, ``[n_layers, n_heads]`` (any real dtype; compared as float64).
        k: how many heads, a whole number >= 1.

    Raises:
        ValueError: ``values`` is not a non-empty 2-D grid of numbers; ``k`` is not a whole number >= 1.
    """
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be numbers [n_layers, n_heads]: {exc}") from None
    if v.ndim != 2 or v.size == 0:
        raise ValueError(f"values must be a non-empty [n_layers, n_heads] grid, got shape {v.shape}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    flat = v.ravel()
    order = np.argsort(-flat if largest else flat, kind="stable")[:k]
    return [(int(i // v.shape[1]), int(i % v.shape[1])) for i in order]
