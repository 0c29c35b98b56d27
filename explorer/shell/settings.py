"""The shared settings every lesson reads, as one typed, hashable key (no Streamlit here).

The sidebar's six controls (sentence, embeddings, positional encoding, seed, ``d_model``,
``d_k``) become one frozen :class:`Settings` per run. Lessons pass it to their cached
sections and cached computations as is: Streamlit hashes a dataclass by its fields, so it
is the cache key, and nothing is read by position.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.shell import i18n
from explorer.shell.textviews import tokens_count

_, _n = i18n.translator(__name__)

MAX_TOKENS = 64
AUTO_EMBEDDING = "auto"  # the sidebar's default choice: "lesson" for the lesson's sentence, else "per-token"
LESSON_TOKENS = tuple(A.tokenize(A.SENTENCE_EXAMPLE.sentence))  # ("The", "cat", "sat", "on", "the", "mat")


def embedding_mode(choice: str, tokens: Iterable[str]) -> str:
    """The embedding mode (one of :data:`attention.EMBEDDING_MODES`) the sidebar's ``choice`` means for ``tokens``.

    ``"auto"`` (the default) keeps the lesson's random rows for the lesson's own sentence (worked example 2,
    to the last digit) and gives any other sentence per-token embeddings, so copies of a word get the same
    row; ``"lesson"`` and ``"per-token"`` (and any other value) are returned as they are.
    """
    if choice != AUTO_EMBEDDING:
        return choice
    return "lesson" if tuple(tokens) == LESSON_TOKENS else "per-token"


def token_label(token: str, position: int) -> str:
    """The one label of a token everywhere in the app: ``"token (position)"``, 0-based.

    Repeated words stay apart (``"the (0)"``, ``"the (4)"``); a chart escapes it, it is never markup.
    """
    return f"{token} ({position})"


def token_labels(tokens: Iterable[str]) -> list[str]:
    """:func:`token_label` of every token, in order."""
    return [token_label(t, i) for i, t in enumerate(tokens)]


@dataclass(frozen=True)
class SentenceInput:
    """Tokens of a sentence, truncated to ``MAX_TOKENS`` (``n_dropped`` tells how many were cut)."""

    tokens: tuple[str, ...]
    n_dropped: int


def sentence_tokens(sentence: str, max_tokens: int = MAX_TOKENS) -> SentenceInput:
    """Tokenize ``sentence`` (:func:`attention.tokenize`) and keep at most ``max_tokens`` tokens."""
    tokens = A.tokenize(sentence or "")
    return SentenceInput(tuple(tokens[:max_tokens]), max(0, len(tokens) - max_tokens))


def embeddings(tokens: tuple[str, ...], d_model: int, seed: int, embedding: str, positional: bool) -> np.ndarray:
    """``X [n, d_model]`` float64: :func:`attention.embed_tokens` plus, when ``positional``, the sinusoidal encoding.

    ``embedding`` is one of :data:`attention.EMBEDDING_MODES` or ``"auto"`` (:func:`embedding_mode`).

    Raises:
        ValueError: as :func:`attention.embed_tokens` (unknown ``embedding``, ``d_model < 1``).
    """
    X = A.embed_tokens(tokens, d_model, seed, embedding_mode(embedding, tokens))
    if positional:
        X = X + A.sinusoidal_positional_encoding(len(tokens), d_model)
    return X


@dataclass(frozen=True)
class Settings:
    """The shared controls of one run, with the sentence already tokenized (lesson worked example 2, generalised).

    Attributes:
        tokens: the sentence's tokens (at most :data:`MAX_TOKENS`).
        d_model: embedding width (columns of ``X``).
        d_k: query/key width; the value width ``d_v`` equals it.
        seed: seeds the embeddings and ``W_q, W_k, W_v`` (each its own ``default_rng(seed)``).
        embedding: how ``X`` is made, one of :data:`attention.EMBEDDING_MODES` (``"lesson"``, ``"per-token"``).
        positional: whether the sinusoidal positional encoding is added to ``X``.

    With the defaults (``"The cat sat on the mat"``, 8, 4, 42, ``"lesson"``, ``False``) this is
    the lesson's sentence example to the last digit.
    """

    tokens: tuple[str, ...]
    d_model: int
    d_k: int
    seed: int
    embedding: str
    positional: bool

    @property
    def d_v(self) -> int:
        return self.d_k

    @property
    def n(self) -> int:
        """Number of tokens."""
        return len(self.tokens)

    @property
    def labels(self) -> list[str]:
        """:func:`token_label` of every token."""
        return token_labels(self.tokens)

    @property
    def X(self) -> np.ndarray:
        """The embeddings ``[n, d_model]`` float64 (:func:`embeddings`)."""
        return embeddings(self.tokens, self.d_model, self.seed, self.embedding, self.positional)

    def layer(self) -> A.SelfAttention:
        """``SelfAttention(d_model, d_k, d_v, seed)``: the layer every lesson on the sentence uses."""
        return A.SelfAttention(self.d_model, self.d_k, self.d_v, seed=self.seed)

    def weight_matrices(self) -> dict[str, np.ndarray]:
        """``{"W_q", "W_k", "W_v"}`` of :meth:`layer`: ``[d_model, d_k]``, ``[d_model, d_k]``, ``[d_model, d_v]``."""
        layer = self.layer()
        return {"W_q": layer.W_q, "W_k": layer.W_k, "W_v": layer.W_v}

    def steps(self, is_causal: bool = False) -> A.AttentionSteps:
        """Every intermediate of ``SelfAttention(d_model, d_k, d_v, seed)`` on ``X`` (lesson steps 1-6)."""
        return self.layer().steps(self.X, is_causal=is_causal)

    def caption(self) -> str:
        """One line naming every setting: ``6 tokens · d_model = 8 · d_k = d_v = 4 · seed = 42 · embeddings: …``."""
        line = _("{tokens} · d_model = {d_model} · d_k = d_v = {d_k} · seed = {seed} · embeddings: {embedding}").format(
            tokens=tokens_count(self.n), d_model=self.d_model, d_k=self.d_k, seed=self.seed,
            embedding=_(self.embedding))
        return line + (_(" + positional encoding") if self.positional else "")
