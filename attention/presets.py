"""The lessons' two worked examples (inputs only) and the softmax example.

Source: ``shared/docs/lesson.md``; exact expected numbers in
``shared/golden/lesson_examples.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PIPELINE_EXAMPLE", "SENTENCE_EXAMPLE", "SOFTMAX_EXAMPLE_LOGITS", "PipelineExample", "SentenceExample"]


@dataclass(frozen=True)
class PipelineExample:
    """Worked example 1: 3 words, ``d_model = d_k = d_v = 4``, hand-written matrices."""

    tokens: tuple[str, ...]
    X: np.ndarray  # [3, 4]
    W_q: np.ndarray  # [4, 4]
    W_k: np.ndarray  # [4, 4]
    W_v: np.ndarray  # [4, 4]


@dataclass(frozen=True)
class SentenceExample:
    """Worked example 2: ``SelfAttention(d_model, d_k, d_v, seed)`` on a sentence with lesson-mode embeddings."""

    sentence: str
    d_model: int
    d_k: int
    d_v: int
    seed: int


def _ro(rows) -> np.ndarray:
    a = np.array(rows, dtype=np.float64)
    a.flags.writeable = False
    return a


PIPELINE_EXAMPLE = PipelineExample(
    tokens=("word 0", "word 1", "word 2"),  # 0-based, as every position in the app: label "word 0 (0)"
    X=_ro([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]),
    W_q=_ro([[0.1, 0.2, 0.0, 0.0], [0.0, 0.1, 0.3, 0.0], [0.1, 0.0, 0.0, 0.2], [0.0, 0.0, 0.2, 0.3]]),
    W_k=_ro([[0.2, 0.0, 0.1, 0.0], [0.0, 0.1, 0.0, 0.3], [0.1, 0.0, 0.2, 0.0], [0.0, 0.2, 0.0, 0.1]]),
    W_v=_ro([[0.0, 0.1, 0.0, 0.2], [0.2, 0.0, 0.2, 0.0], [0.0, 0.3, 0.1, 0.0], [0.1, 0.0, 0.0, 0.3]]),
)

SENTENCE_EXAMPLE = SentenceExample(sentence="The cat sat on the mat", d_model=8, d_k=4, d_v=4, seed=42)

SOFTMAX_EXAMPLE_LOGITS = (2.0, 1.0, 0.1)
