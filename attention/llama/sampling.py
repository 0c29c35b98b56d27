"""Choosing the next token from the logits: greedy, or sampling with a temperature and top-k.

One rule for everything that chooses a token (:meth:`LlamaModel.generate`, the lessons):
:func:`sampling_distribution` says what the next token is drawn from, :func:`sample_next` draws it.

Source: temperature sampling (Ackley et al. 1985; as in transformers' ``TemperatureLogitsWarper``)
and top-k sampling (Fan et al. 2018, "Hierarchical Neural Story Generation", section 5.4;
transformers' ``TopKLogitsWarper``, which keeps ties at the k-th value).
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_sampling", "sample_next", "sampling_distribution"]


def check_sampling(temperature: float, top_k: int | None) -> None:
    """Raise ``ValueError`` for a temperature that is not a number ``>= 0`` or a ``top_k`` that is not ``None`` or
    a positive integer."""
    if isinstance(temperature, bool) or not isinstance(temperature, int | float | np.integer | np.floating) \
            or not temperature >= 0 or not np.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")


def sampling_distribution(logits, *, temperature: float = 0.0, top_k: int | None = None) -> np.ndarray:
    """What the next token is drawn from: float64 ``[vocab]``, summing to 1.

    ``temperature == 0`` (greedy): 1 on the largest logit (the lowest id wins a tie). Otherwise
    ``softmax(logits / temperature)`` over the ``top_k`` largest logits (all when ``None``; ties at
    the k-th value are kept). The logits are shifted by their maximum *before* the division, so a
    tiny temperature (``1e-310``) gives the T -> 0 limit, the largest logits shared equally, never
    ``inf / inf``.

    Args:
        logits: one row ``[vocab]`` (any float dtype; finite).
        temperature, top_k: see above.

    Raises:
        ValueError: a bad temperature or top_k (:func:`check_sampling`), logits that are not one finite row.
    """
    check_sampling(temperature, top_k)
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or z.size == 0 or not np.isfinite(z).all():
        raise ValueError(f"logits must be one finite row [vocab], got shape {list(z.shape)}")
    out = np.zeros_like(z)
    if temperature == 0:
        out[int(np.argmax(z))] = 1.0
        return out
    with np.errstate(over="ignore"):  # a tiny temperature sends the others to -inf: intended (exp -> 0)
        z = (z - z.max()) / temperature  # [vocab], <= 0, the largest exactly 0
    if top_k is not None and top_k < z.size:
        kth = np.partition(z, z.size - top_k)[z.size - top_k]
        z = np.where(z >= kth, z, -np.inf)
    p = np.exp(z)  # the largest logit gives exp(0) = 1: the sum is >= 1
    return p / p.sum()


def sample_next(logits, *, temperature: float = 0.0, top_k: int | None = None,
                rng: np.random.Generator | None = None) -> int:
    """The next token id from one row of logits ``[vocab]``: drawn from :func:`sampling_distribution`.

    ``temperature == 0``: greedy (``argmax``; the lowest id wins a tie; no random number is drawn).
    Otherwise one draw ``rng.choice(vocab, p=...)`` (``rng`` required: pass ``np.random.default_rng(seed)``).

    Raises:
        ValueError: negative or non-finite temperature, ``top_k < 1``, or sampling without ``rng``.
    """
    check_sampling(temperature, top_k)
    if temperature == 0:
        return int(np.argmax(np.asarray(logits)))
    if rng is None:
        raise ValueError("sampling (temperature > 0) needs rng, e.g. np.random.default_rng(seed)")
    p = sampling_distribution(logits, temperature=temperature, top_k=top_k)
    return int(rng.choice(p.size, p=p))
