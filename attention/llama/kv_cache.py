"""The KV cache: keys (after RoPE) and values of every layer for the tokens seen so far.

Source: Pope et al. (2022), "Efficiently Scaling Transformer Inference", sections 2-3; grouped-query
attention keeps ``n_kv_heads`` (3) heads instead of ``n_heads`` (9): Ainslie et al. (2023).
"""

from __future__ import annotations

import threading

import numpy as np

from .config import LlamaConfig

__all__ = ["KVCache"]


class _KVStore:
    """Buffers ``[n_layers, n_kv_heads, capacity, d_head]`` float32 for K and V, shared by the caches
    that extend one another; ``filled`` is how many positions hold data."""

    def __init__(self, config: LlamaConfig, capacity: int):
        shape = (config.n_layers, config.n_kv_heads, capacity, config.d_head)
        self.k, self.v = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
        self.filled = 0
        self.lock = threading.Lock()

    @property
    def capacity(self) -> int:
        return self.k.shape[2]


class KVCache:
    """Keys (after RoPE) and values of every layer for the tokens seen so far; pass it back to
    :meth:`LlamaModel.forward` to process only the new tokens.

    ``keys`` / ``values``: read-only float32 ``[n_layers, n_kv_heads, length, d_head]``
    (``keys[l]`` is layer ``l``'s ``[n_kv_heads, n_tokens, d_head]``). Size: :attr:`nbytes` =
    ``length * config.kv_bytes_per_token`` = 46,080 bytes per token for SmolLM2-135M (45 kB;
    11.8 MB at 256 tokens); the buffer behind it may be up to twice that (it grows by doubling).

    A cache is never changed by a later call: extending it writes into positions after its
    ``length`` (shared, amortised O(1) per token) and, when another call already extended the
    same cache (branching), copies instead. Safe to share between threads.

    ``position_offset`` (RoPE positions start there) and ``options`` (the attention window, the kept
    first tokens and the ablated heads the cached keys and values were computed with) travel with the
    cache: :meth:`LlamaModel.forward` continues a cache only with the same ones, so the new tokens see
    keys and values computed the way their own are.
    """

    def __init__(self, store: _KVStore, length: int, position_offset: int = 0, options: tuple = ()):
        self._store, self.length = store, length
        self.position_offset, self.options = position_offset, options

    def _view(self, array: np.ndarray) -> np.ndarray:
        view = array[:, :, :self.length]
        view.flags.writeable = False
        return view

    @property
    def keys(self) -> np.ndarray:
        return self._view(self._store.k)

    @property
    def values(self) -> np.ndarray:
        return self._view(self._store.v)

    @property
    def nbytes(self) -> int:
        """Bytes of K and V for :attr:`length` tokens (the live part of the buffers)."""
        return 2 * self._store.k[:, :, :self.length].nbytes

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"KVCache(length={self.length}, nbytes={self.nbytes:,})"
