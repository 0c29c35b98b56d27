"""Inside a real model: the arrays of the lesson (pure NumPy on the door, :mod:`explorer.shell.llm`; no Streamlit).

Six statistics of every attention head of SmolLM2-135M-Instruct (``[n_layers, n_heads]`` each), the repeated random
prompt that reveals induction heads, the "guess, then reveal" exercise graded from the live numbers, and the causal
map's check. Every statistic is :mod:`attention.heads`' (their one home, with the repeated-random-prompt rule; their
words: :mod:`explorer.shell.head_statistics`), averaged over the query rows ``i = 2 .. n-1`` (:data:`FIRST_ROW`; the
induction score over the rows with a target). This module adds the breadth, the exercise's labels and grades.

Sources:
    * Attention sinks: Xiao et al. (2023), "Efficient Streaming Language Models with Attention Sinks", section 3.1.
    * Induction heads and the repeated-random-tokens score: Olsson et al. (2022), "In-context Learning and Induction
      Heads", section "Definitions" (prefix matching: a token attends to the token that followed an earlier
      occurrence of itself).
    * Grouped-query attention (9 query heads read 3 key/value heads): Ainslie et al. (2023). RoPE: Su et al. (2021),
      section 3.2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from attention import heads
from explorer.shell import head_statistics as head_statistics_words
from explorer.shell import i18n, llm
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

DEFAULT_PROMPT = "The cat sat on the mat because it was tired"
DEFAULT_LAYER, DEFAULT_HEAD = 16, 0
"""The head the page opens: SmolLM2's layer 16, head 0, a previous-token head (tested on the default prompt)."""
FIRST_ROW = heads.FIRST_ROW
"""Statistics average over the query rows ``FIRST_ROW .. n-1`` (see the module docstring)."""
STATISTICS = head_statistics_words.STATISTICS
"""The statistics in words, :data:`explorer.shell.head_statistics.STATISTICS` (one table for every lesson)."""
repeats_too_close = heads.repeats_too_close
REPEAT_WORDS = 16
"""Words (one token each) in each copy of the repeated random prompt: 32 tokens in all."""
MIN_MARGIN = 0.25
"""A head is a clear example of its label when its largest score beats its second largest by at least this."""


# --- token ids appended by greedy decoding ------------------------------------------------------------

IDS_TEXT = re.compile(r"[0-9]+(?: [0-9]+)*")
"""How the appended ids are written (in the box and the link): whole numbers separated by one space, ``30 198 198``."""


def parse_ids(text: str, vocab_size: int) -> tuple[int, ...] | None:
    """The token ids written in ``text`` (``"30 198 198"``; ``""`` -> ``()``), or ``None`` if it is not that.

    Valid: ASCII digits without leading zeros, separated by single spaces, each id below ``vocab_size``
    (what :func:`write_ids` writes; spaces around the whole are ignored).
    """
    text = text.strip()
    if not text:
        return ()
    if not IDS_TEXT.fullmatch(text):
        return None
    parts = text.split(" ")
    if any(len(part) > 1 and part.startswith("0") for part in parts):
        return None
    ids = tuple(int(part) for part in parts)
    return ids if all(i < vocab_size for i in ids) else None


def write_ids(ids: Sequence[int]) -> str:
    """``(30, 198, 198)`` -> ``"30 198 198"`` (read back by :func:`parse_ids`)."""
    return " ".join(str(int(i)) for i in ids)


# --- head statistics (attention.heads; their words: explorer.shell.head_statistics) --------------------------


@dataclass(frozen=True)
class HeadStatistics:
    """The six statistics of every head for one prompt (:mod:`attention.heads`): float64 ``[n_layers, n_heads]`` each.

    Attributes:
        n: the prompt's tokens. values: ``{statistic key: [n_layers, n_heads]}``; ``induction`` is
            missing when no row has an induction target (:func:`attention.heads.induction_targets`: the score is
            undefined), and everything is missing when ``n < FIRST_ROW + 1`` (no row to average over).
        induction_rows: the query rows ``R`` of the induction score (empty when undefined).
        graded_rows: the query rows the exercise grades on: ``R`` when the induction score is defined, else
            ``FIRST_ROW .. n-1`` (an induction head often rests on the first token where it has nothing to copy,
            the first copy of a repeat: a sink score from those rows would not compare with an induction score
            from ``R``).
        graded: ``{label: [n_layers, n_heads]}``, every label's score on ``[0, 1]`` (:data:`LABELS`,
            :func:`graded_scores`) averaged over the same ``graded_rows``, so the scores compare.
    """

    n: int
    values: Mapping[str, np.ndarray]
    induction_rows: tuple[int, ...]
    graded_rows: tuple[int, ...] = ()
    graded: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def defined(self) -> bool:
        """Whether the prompt has rows to average over (at least ``FIRST_ROW + 1`` tokens)."""
        return bool(self.values)

    def get(self, key: str) -> np.ndarray | None:
        """``[n_layers, n_heads]`` of statistic ``key``, or ``None`` when it is undefined for this prompt."""
        return self.values.get(key)


def head_statistics(attentions: np.ndarray, ids: Sequence[int]) -> HeadStatistics:
    """The six statistics of every head (:func:`attention.heads.statistics`), from one forward pass's weights.

    Args:
        attentions: ``[n_layers, n_heads, n, n]`` causal attention weights (``Run.attentions``).
        ids: the ``n`` token ids (for the induction score).

    Returns:
        :class:`HeadStatistics` (float64).

    Raises:
        ValueError: ``attentions`` is not ``[..., n, n]`` for the ``n`` ids.
    """
    A = np.asarray(attentions, dtype=np.float64)
    n = A.shape[-1]
    if A.ndim < 2 or A.shape[-2] != n or len(ids) != n:
        raise ValueError(f"attentions must be [..., n, n] for the n = {len(ids)} ids, got {A.shape}")
    if n <= FIRST_ROW:
        return HeadStatistics(n, {}, ())
    targets = heads.induction_rows(ids)
    graded_rows = targets or tuple(int(i) for i in heads.rows(n))
    return HeadStatistics(n, heads.statistics(A, ids), targets, graded_rows, graded_scores(A, graded_rows, ids))


def graded_scores(A: np.ndarray, rows: Sequence[int], ids: Sequence[int]) -> dict[str, np.ndarray]:
    """Every label's score on the same query ``rows``: ``{label: [n_layers, n_heads]}`` (float64, on [0, 1]).

    sink, previous, self and induction as :func:`attention.heads.score` on those rows (induction only when
    every row has a target), broad ``H_i / log2(i + 1)``; each averaged over ``rows``. On rows with targets
    the four weights fall on different keys (a target is never 0, ``i - 1`` or ``i``), so two of them cannot
    both exceed 1/2.

    Args:
        A: ``[n_layers, n_heads, n, n]`` attention weights. rows: query rows ``>= FIRST_ROW``. ids: the tokens.
    """
    r = np.asarray(rows, dtype=int)
    scores = {key: heads.score(key, A, rows=r) for key in ("previous", "sink", "self")}
    if r.size and set(int(i) for i in r) <= set(heads.induction_rows(ids)):
        scores["induction"] = heads.induction(A, ids, rows=r)
    entropy, _defined = heads.per_row("entropy", A)
    scores["broad"] = (entropy[..., r] / np.log2(r + 1)).mean(-1)  # over its largest possible value, log2(i + 1)
    return scores


def color_range(key: str, n: int) -> tuple[float, float]:
    """The grid's colour range for statistic ``key`` on ``n`` tokens: its possible values.

    Weights: ``[0, 1]``. Entropy: ``[0, log2 n]`` (a uniform row over all ``n`` keys). Distance:
    ``[0, mean of i over the rows]`` (every query on the first token).
    """
    if key == "entropy":
        return 0.0, float(np.log2(max(n, 2)))
    if key == "distance":
        return 0.0, float(np.mean(np.arange(FIRST_ROW, max(n, FIRST_ROW + 1))))
    return 0.0, 1.0


# --- guess, then reveal -------------------------------------------------------------------------

LABELS: dict[str, str] = {  # answer key -> what the learner reads (messages: shown with ``_(LABELS[key])``)
    "previous": N_("previous token"),
    "sink": N_("first-token sink"),
    "self": N_("self"),
    "induction": N_("induction"),
    "broad": N_("broad (spread out)"),
}


@dataclass(frozen=True)
class QuizHead:
    """One head of the exercise: where it is, its ``answer`` (a :data:`LABELS` key), every score, its margin."""

    layer: int
    head: int
    answer: str
    scores: tuple[tuple[str, float], ...]
    margin: float


def quiz_heads(stats: HeadStatistics, min_margin: float = MIN_MARGIN) -> tuple[QuizHead, ...]:
    """One clear example per label: the head whose answer is that label with the largest margin.

    A head's answer is the label with the largest score (``stats.graded``); its margin is that score minus the
    second largest. A label with no head whose margin reaches ``min_margin`` is left out (and induction whenever
    the prompt repeats no token). Ordered by layer, then head. Empty when the statistics are undefined.
    """
    if not stats.defined:
        return ()
    scores = stats.graded
    labels = list(scores)
    stack = np.stack([scores[k] for k in labels])  # [n_labels, L, H]
    order = np.sort(stack, axis=0)
    answer, margin = stack.argmax(axis=0), order[-1] - order[-2]
    picked = []
    for index, label in enumerate(labels):
        candidates = np.where(answer == index, margin, -np.inf)
        best = np.unravel_index(int(np.argmax(candidates)), candidates.shape)
        if candidates[best] >= min_margin:
            layer, head = int(best[0]), int(best[1])
            picked.append(QuizHead(layer, head, label, tuple((k, float(scores[k][layer, head])) for k in labels),
                                   float(margin[layer, head])))
    return tuple(sorted(picked, key=lambda q: (q.layer, q.head)))


def grade(heads: Sequence[QuizHead], guesses: Sequence[str | None]) -> tuple[bool, ...]:
    """Each guess right or not (a missing guess, ``None``, is wrong)."""
    if len(heads) != len(guesses):
        raise ValueError(f"{len(guesses)} guesses for {len(heads)} heads")
    return tuple(g == q.answer for q, g in zip(heads, guesses, strict=True))


def grade_claim(right: Sequence[bool]) -> tuple[str, str]:
    """The grade of the answers ``right`` (:func:`grade`): the callout kind (``"success"`` when all are right, else
    ``"info"``) and the sentence, in the run's language."""
    facts = dict(right=sum(right), total=len(right))
    if all(right):
        return "success", _("**{right} of {total} right.** Every head read correctly.").format(**facts)
    return "info", _("**{right} of {total} right.**").format(**facts)


# --- the repeated prompt from the door, and the causal map's check ------------------------------------------


def repeated_prompt(_model: llm.LlamaModel, seed: int) -> tuple[str, tuple[int, ...]]:
    """The repeated random prompt of ``seed``: its text and its ids (:func:`attention.heads.repeated_random_ids`,
    :data:`REPEAT_WORDS` of the door's :func:`explorer.shell.llm.word_ids`).

    The text is the ids decoded (it starts with a space: every word keeps its own); it tokenizes back to
    exactly these ids, so the prompt box can hold it and the second copy stays an exact repeat.
    """
    ids = heads.repeated_random_ids(llm.word_ids(_model), REPEAT_WORDS, seed)
    text = llm.text(_model, ids).text
    if tuple(llm.token_ids(_model, text)) != ids:  # cannot happen for word_ids; never show a repeat that is not one
        raise ValueError(f"the repeated prompt of seed {seed} does not tokenize back to its ids")
    return text, ids


def layer_mean(attentions: np.ndarray, layer: int) -> np.ndarray:
    """The mean of one layer's head maps: float64 ``[n, n]`` from ``attentions`` ``[n_layers, n_heads, n, n]``."""
    return attentions[layer].astype(np.float64).mean(axis=0)


def causal_check(weights: np.ndarray) -> str:
    """``largest weight above the diagonal = 0.0 · largest |row sum − 1| = 6.0e-08`` (what the map shows; the decimal
    mark of the run's language)."""
    w = np.asarray(weights, dtype=np.float64)
    mark = "," if i18n.plotly_separators()[0] == "," else "."
    return _("largest weight above the diagonal = {above} (exactly 0: the causal mask) · largest |row sum − 1| = "
             "{sum_error}").format(above=repr(float(np.triu(w, 1).max(initial=0.0))).replace(".", mark),
                                   sum_error=f"{float(np.abs(w.sum(-1) - 1).max()):.1e}".replace(".", mark))


def rows_count(n: int) -> str:
    """``1 row`` / ``30 rows`` in the run's language."""
    return _n("{n} row", "{n} rows", n).format(n=n)


def label(answer: str) -> str:
    """An exercise label (:data:`LABELS`) in the run's language."""
    return _(LABELS[answer])


def statistics(_model: llm.LlamaModel, ids: tuple[int, ...]) -> HeadStatistics:
    """:func:`head_statistics` of the prompt's forward pass."""
    return head_statistics(llm.run(_model, ids).attentions, ids)


def precision(_model: llm.LlamaModel) -> str:
    """How the loaded model's file stores its weights, in the run's language (:func:`explorer.shell.llm.precision_note`
    of the door's :func:`explorer.shell.llm.weight_storage`; the file's name when it cannot be read again)."""
    storage = llm.weight_storage(_model)
    return llm.MODEL_FILENAME if storage is None else llm.precision_note(storage)


def head_title(layer: int, head: int) -> str:
    """``layer 16, head 0`` in the run's language (a map's title)."""
    return _("layer {layer}, head {head}").format(layer=layer, head=head)


def power_of_ten(x: float) -> str:
    """LaTeX for ``x``: ``10^{-5}`` when it is a power of ten, else ``x`` as ``%g``."""
    e = np.log10(x) if x > 0 else np.nan
    return f"10^{{{int(round(e))}}}" if np.isfinite(e) and abs(e - round(e)) < 1e-9 else f"{x:g}"


def row_list(rows: tuple[int, ...], shown: int = 12) -> str:
    """``"16, 17, 18, …"``: the first ``shown`` rows, and ``…`` when there are more; ``"16 … 31"`` for a run."""
    if len(rows) > 2 and list(rows) == list(range(rows[0], rows[-1] + 1)):
        return f"{rows[0]} … {rows[-1]}"
    return ", ".join(map(str, rows[:shown])) + (", …" if len(rows) > shown else "")
