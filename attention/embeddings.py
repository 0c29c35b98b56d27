"""Tokens to vectors: tokenizer, embeddings and sinusoidal positional encoding.

Source: lesson step 1 (one embedding row per token); Vaswani et al. (2017) section 3.5.
"""

from __future__ import annotations

import hashlib
import unicodedata

import numpy as np
import regex

from ._validate import positive_int

__all__ = ["tokenize", "embed_tokens", "sinusoidal_positional_encoding", "EMBEDDING_MODES"]

EMBEDDING_MODES = ("lesson", "per-token")

# Tokens are made of extended grapheme clusters (\X: a base character with its combining marks,
# an emoji with its modifiers, a zero-width-joiner sequence, a flag): a word is a run of clusters
# that start with a letter, digit or underscore (any script); any other visible cluster is a token
# of its own. A combining mark with no base (after a space, or first) and control characters are dropped.
_TOKEN = regex.compile(r"(?:(?=[\p{L}\p{N}_])\X)+|(?=[^\s\p{M}\p{Cc}\p{Cf}\p{Cs}])\X")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into words and punctuation, case kept.

    ``"The cat sat on the mat."`` -> ``["The", "cat", "sat", "on", "the", "mat", "."]``.
    The text is first put in Unicode normal form NFC, so a letter typed with a
    combining accent (``"e\u0301"``) and the precomposed letter (``"é"``) give the
    same token. Words are runs of letters, digits and ``_`` of any script, each
    with its combining marks (Devanagari, Arabic, Thai, Vietnamese… keep their
    words whole); every other non-space character is a token of its own, with
    its marks and modifiers (an emoji keeps its skin tone, a family emoji or a
    flag stays one token). A combining mark with nothing to attach to is dropped.

    Raises:
        ValueError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return _TOKEN.findall(unicodedata.normalize("NFC", text))


def _token_vector(token: str, d_model: int, seed: int) -> np.ndarray:
    digest = hashlib.sha256(f"{seed}\x00{token}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(0.0, 1.0, d_model)


def embed_tokens(tokens, d_model: int, seed: int = 42, mode: str = "lesson") -> np.ndarray:
    """Embedding matrix ``X [n, d_model]`` (float64) for ``tokens``.

    Modes:
        ``"lesson"``: ``np.random.default_rng(seed).normal(0, 1, (n, d_model))``, the
            lesson's random rows (a row depends on the position, not the word).
        ``"per-token"``: each distinct token string gets a standard-normal vector
            seeded by SHA-256 of ``(seed, token)``, so the same word has the same
            vector in every sentence and every process.

    Raises:
        ValueError: ``tokens`` is empty, ``d_model`` is not a positive integer,
            or ``mode`` is unknown.
    """
    tokens = list(tokens)
    if not tokens:
        raise ValueError("tokens must hold at least one token, got an empty sequence")
    d_model = positive_int(d_model, "d_model")
    if mode == "lesson":
        return np.random.default_rng(seed).normal(0.0, 1.0, (len(tokens), d_model))
    if mode == "per-token":
        cache = {t: _token_vector(t, d_model, seed) for t in dict.fromkeys(tokens)}
        return np.stack([cache[t] for t in tokens])
    raise ValueError(f"mode must be one of {EMBEDDING_MODES}, got {mode!r}")


def sinusoidal_positional_encoding(n: int, d_model: int) -> np.ndarray:
    """``PE [n, d_model]`` float64: ``PE[p, 2i] = sin(p / 10000^(2i/d_model))``, ``PE[p, 2i+1] = cos(...)``.

    Added to the embeddings so attention can tell positions apart.

    Raises:
        ValueError: ``n`` or ``d_model`` is not a positive integer.

    Source: Vaswani et al. (2017) section 3.5.
    """
    n = positive_int(n, "n")
    d_model = positive_int(d_model, "d_model")
    pos = np.arange(n)[:, None]  # [n, 1]
    two_i = np.arange(0, d_model, 2)  # [ceil(d_model/2)]
    angle = pos / np.power(10000.0, two_i / d_model)  # [n, ceil(d_model/2)]
    pe = np.zeros((n, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe
