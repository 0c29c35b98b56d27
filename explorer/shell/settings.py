"""Pure functions from the app's controls to the arrays a page draws (no Streamlit here).

Pages call these through ``st.cache_data`` wrappers in ``app.state``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import attention as A

MAX_TOKENS = 64


@dataclass(frozen=True)
class SentenceInput:
    """Tokens of a sentence, truncated to ``MAX_TOKENS`` (``n_dropped`` tells how many were cut)."""

    tokens: tuple[str, ...]
    n_dropped: int

    @property
    def labels(self) -> list[str]:
        """One label per position, ``"token (i)"``, distinct even for repeated words."""
        return [f"{t} ({i})" for i, t in enumerate(self.tokens)]


def sentence_tokens(sentence: str, max_tokens: int = MAX_TOKENS) -> SentenceInput:
    """Tokenize ``sentence`` and keep at most ``max_tokens`` tokens."""
    tokens = A.tokenize(sentence or "")
    return SentenceInput(tuple(tokens[:max_tokens]), max(0, len(tokens) - max_tokens))


def embeddings(tokens: tuple[str, ...], d_model: int, seed: int, mode: str, positional: bool) -> np.ndarray:
    """``X [n, d_model]``: ``embed_tokens`` plus, when ``positional``, the sinusoidal encoding."""
    X = A.embed_tokens(tokens, d_model, seed, mode)
    if positional:
        X = X + A.sinusoidal_positional_encoding(len(tokens), d_model)
    return X


def sentence_steps(
    tokens: tuple[str, ...], d_model: int, d_k: int, seed: int, mode: str, positional: bool,
    is_causal: bool = False,
) -> A.AttentionSteps:
    """Lesson worked example 2 generalised: ``SelfAttention(d_model, d_k, d_k, seed)`` on the sentence.

    With the defaults (``"The cat sat on the mat"``, 8, 4, 42, ``"lesson"``, no
    positional encoding) this is the lesson's sentence example to the last digit.
    """
    X = embeddings(tokens, d_model, seed, mode, positional)
    return A.SelfAttention(d_model, d_k, d_k, seed=seed).steps(X, is_causal=is_causal)


def weight_matrices(d_model: int, d_k: int, d_v: int, seed: int) -> dict[str, np.ndarray]:
    """``{"W_q", "W_k", "W_v"}`` of ``SelfAttention(d_model, d_k, d_v, seed)``: the matrices
    :func:`sentence_steps` uses, shapes ``[d_model, d_k]``, ``[d_model, d_k]``, ``[d_model, d_v]``."""
    layer = A.SelfAttention(d_model, d_k, d_v, seed=seed)
    return {"W_q": layer.W_q, "W_k": layer.W_k, "W_v": layer.W_v}


def ragged_cells(matrix: np.ndarray) -> list[tuple[int, int]]:
    """``(row, col)`` of every blank, NaN or infinite cell of ``matrix``."""
    return [(int(r), int(c)) for r, c in np.argwhere(~np.isfinite(matrix))]
