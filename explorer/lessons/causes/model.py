"""What made it say that? The arrays of the lesson (pure NumPy on the door's interventions, :mod:`explorer.shell.llm`).

The lesson asks whether a head *causes* the answer, on the loaded model itself (SmolLM2-135M by default; any family
the core reads): it reads the stream out layer by layer (logit lens), splits the answer's logit into the parts that
wrote it (direct logit attribution), knocks heads out (random heads as the control), sweeps every head (270 on
SmolLM2), and moves one activation from a clean prompt into a corrupted one (activation patching). This module holds
what the page computes from those numbers: the top tokens, the statistics of the last query's attention
(:mod:`attention.heads`, words :mod:`explorer.shell.head_statistics`), the second-copy loss on the repeated random
prompt, seeded random heads, the grade of a guess, the sweep's estimated time, and the claims (the ``*_claim``,
``*_note`` and ``*_sentences`` functions: which sentence is true for the learner's input and model, with its
numbers).

Sources:
    * Logit lens: nostalgebraist (2020), "interpreting GPT: the logit lens".
    * Direct logit attribution, the residual stream as a sum: Elhage et al. (2021), "A Mathematical Framework for
      Transformer Circuits".
    * Activation patching: Meng et al. (2022), "Locating and Editing Factual Associations in GPT"; Heimersheim &
      Nanda (2024), "How to use and interpret activation patching" (logit difference as the metric; zero vs mean
      ablation).
    * Induction heads and repeated random tokens: Olsson et al. (2022), "In-context Learning and Induction Heads".
    * Attention weights are not explanations: Jain & Wallace (2019), "Attention is not Explanation".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attention import heads
from explorer.shell import head_statistics, i18n, llm, textviews
from explorer.shell.i18n import N_, translator
from explorer.shell.textviews import fmt, md_code

_, _n = translator(__name__)

DEFAULT_PROMPT = "The capital of France is"
DEFAULT_CLEAN, DEFAULT_CORRUPTED = "The capital of France is", "The capital of Italy is"
PROMPT_MAX_TOKENS = 32
"""Tokens of the prompt the page reads: the 270-head sweep at 32 tokens is about 60-80 forward passes' work (a few
seconds to half a minute on 2 cores, ``BENCHMARKS.md``), and every map keeps one readable column per token."""
PATCH_MAX_TOKENS = 16
"""Tokens of each prompt of the patch pair: the residual map patches every position of every block (31 x n stacked
rows from each block on), so it grows with the square of the length."""
REPEAT_TOKENS = 20
"""Distinct tokens in each copy of the repeated random prompt (40 tokens in all;
:func:`attention.heads.repeated_random_ids` of the door's whole words)."""
ABLATIONS = {"zero": N_("zero (remove the head's output)"), "mean": N_("mean (the head's average over the prompt)")}
"""The ablations: code (the link's value) -> the option's label (a message: shown as ``_(ABLATIONS[code])``)."""
ABLATION_NAMES = {"zero": N_("zero"), "mean": N_("mean")}
"""How a sentence names each ablation ("(zero ablation)"; a message, shown translated)."""
MAX_HEADS = 27
"""At most this many heads knocked out at once (a tenth of SmolLM2-135M's 270; a smaller model: all its heads, see
:func:`max_heads`)."""


# --- heads and links ----------------------------------------------------------------------------------------


def max_heads(n_layers: int, n_heads: int) -> int:
    """How many heads of a model of ``n_layers`` x ``n_heads`` can be knocked out at once: :data:`MAX_HEADS`, or all
    its heads when it has fewer."""
    return min(MAX_HEADS, n_layers * n_heads)


def example_heads(n_layers: int, n_heads: int) -> str:
    """Two head codes of a model of ``n_layers`` x ``n_heads`` as a link writes them, for a warning's example:
    ``"L29H8,L28H4"`` on SmolLM2-135M (30 x 9), ``"L5H3,L4H2"`` on 6 x 4; one code on a 1 x 1 model."""
    last, other = (n_layers - 1, n_heads - 1), (max(n_layers - 2, 0), n_heads // 2)
    return ",".join(dict.fromkeys(head_code(*h) for h in (last, other)))


def head_code(layer: int, head: int) -> str:
    """``"L18H6"``: how the page and the link name a head."""
    return f"L{layer}H{head}"


def head_of(code: str) -> tuple[int, int]:
    """``"L18H6" -> (18, 6)``: a code the page's controls checked (:class:`explorer.shell.controls.Heads`,
    :class:`explorer.shell.controls.Options`: one of the model's heads)."""
    layer, head = code[1:].split("H")
    return int(layer), int(head)


def random_heads(seed: int, count: int, n_layers: int, n_heads: int,
                 exclude: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``count`` distinct heads drawn by ``np.random.default_rng(seed)``, none of ``exclude``, sorted.

    Raises:
        ValueError: ``count`` is more than the heads left to draw from.
    """
    pool = [(layer, head) for layer in range(n_layers) for head in range(n_heads) if (layer, head) not in set(exclude)]
    if not 0 <= count <= len(pool):
        raise ValueError(f"count must be in 0..{len(pool)} (heads left to draw from), got {count}")
    return sorted(pool[i] for i in np.random.default_rng(seed).choice(len(pool), size=count, replace=False))


@dataclass(frozen=True)
class Selection:
    """The knockout's heads and what they were chosen for.

    Attributes:
        heads: their codes (``"L18H6"``). made_for: the ``(prompt's ids, answer id)`` they were chosen for; prompt,
            answer: that prompt's text and the answer's piece as a code span (for the note).
        picked: chosen by the learner (by hand, a click on the grid, "Pick the top k", a link); ``False`` for the
            page's default, the top heads for ``made_for``.
    """

    heads: tuple[str, ...]
    made_for: tuple
    prompt: str
    answer: str
    picked: bool


def knockout_selection(previous: Selection | None, heads: Sequence[str], made_for: tuple, prompt: str, answer: str,
                       top: Sequence[str]) -> Selection:
    """The knockout's selection on this run, from the last run's (``None``: the session's first draw), the widget's
    ``heads`` and the page's default ``top`` heads for ``made_for``, this run's ``(ids, answer id)``.

    New heads (a first draw, from the link or the default, or heads the learner changed) are chosen for this prompt.
    Unchanged heads on a new prompt or answer are chosen again (the new ``top``, as on a first visit) when they were
    the page's default, and kept, still marked as made for the old prompt, when the learner picked them
    (:func:`carried_note`).
    """
    heads, top = tuple(heads), tuple(top)
    if previous is None or heads != previous.heads:
        return Selection(heads, made_for, prompt, answer, heads != top)
    if previous.made_for == made_for or previous.picked:
        return previous
    return Selection(top, made_for, prompt, answer, False)


def carried_note(selection: Selection, made_for: tuple) -> str | None:
    """The note on the knockout's sentences when its heads were picked for another prompt or answer (``None`` when
    they were chosen for ``made_for``)."""
    if selection.made_for == made_for:
        return None
    return _("**Carried over:** these heads were picked for the prompt {prompt} and the answer {answer}, not for "
             "this one. The numbers here are measured on this prompt; to knock out heads chosen for it, press “Pick "
             "the top k” or pick them again.").format(prompt=md_code(selection.prompt, limit=60),
                                                    answer=selection.answer)


# --- the prediction -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knockout:
    """The next-token prediction with some heads knocked out.

    Attributes:
        heads: the heads knocked out. top_ids, top_probabilities: the new top :data:`explorer.shell.llm.TOP_K`.
        answer_probability: the probability of the clean run's answer after the knockout.
    """

    heads: tuple[tuple[int, int], ...]
    top_ids: tuple[int, ...]
    top_probabilities: tuple[float, ...]
    answer_probability: float


def knockout_result(logits, heads: Sequence[tuple[int, int]], answer: int) -> Knockout:
    """:class:`Knockout` from the last position's logits ``[vocab]`` after knocking out ``heads``."""
    ids, p = llm.top_tokens(logits)
    return Knockout(tuple(heads), ids, p, float(llm.probabilities(logits)[answer]))


# --- the logit lens -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerByLayer:
    """The answer token read out of every block's stream at the last position (logit lens).

    Attributes:
        probability: float64 ``[n_layers + 1]``. rank: int ``[n_layers + 1]`` (1 = the most likely token); row ℓ is
            the stream entering block ℓ, the last row the stream after the last block (the model's output).
    """

    probability: np.ndarray
    rank: np.ndarray

    def under(self, level: float = 0.01) -> int | None:
        """The last block of the readout up to which p(answer) < ``level`` at every block (``None``: not at block 0)."""
        reach = np.flatnonzero(self.probability >= level)
        return None if self.probability[0] >= level else int(reach[0]) - 1 if len(reach) else len(self.probability) - 1


def answer_by_layer(lens_logits, answer: int) -> AnswerByLayer:
    """:class:`AnswerByLayer` from the logit lens ``[n_layers + 1, vocab]`` of the last position."""
    z = np.asarray(lens_logits, dtype=np.float64)
    return AnswerByLayer(llm.probabilities(z)[:, answer], 1 + (z > z[:, answer:answer + 1]).sum(axis=1))


def stretches(mask) -> list[tuple[int, int]]:
    """The runs ``(first, last)`` of consecutive ``True`` in the boolean ``mask [n]``, in order."""
    edges = np.flatnonzero(np.diff(np.r_[0, np.asarray(mask, dtype=int), 0]))  # where a run starts, then stops
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def lens_claim(a: AnswerByLayer, answer: str) -> str:
    """What the logit lens says of the answer (``answer``: its piece, already a code span), from its whole run of
    ranks: the first block where it is the most likely readout, whether it stays on top to the output, and where it
    is off the top after that (Markdown in the run's language)."""
    rank, p, out = a.rank, a.probability, len(a.rank) - 1
    top = np.flatnonzero(rank[:-1] == 1)  # the blocks before the output where it is the top readout
    if not len(top):
        if rank[-1] == 1:
            return _("**{answer} becomes the most likely token only after the last block** (probability {p}): "
                     "read out of the stream entering block {block}, it ranks {rank}. The last layer puts it on "
                     "top.").format(answer=answer, p=fmt(float(p[-1]), 3), block=out - 1, rank=int(rank[-2]))
        return _("{answer} is the most likely readout at no block: at the output it ranks {rank}; it reaches "
                 "probability {p} at most, at block {block}.").format(answer=answer, rank=int(rank[-1]),
                                                                      p=fmt(float(p.max()), 3), block=int(np.argmax(p)))
    first = int(top[0])
    runs = stretches((rank != 1) & (np.arange(len(rank)) > first))  # off the top after it
    values = dict(answer=answer, first=first, p=fmt(float(p[first]), 3), p_end=fmt(float(p[-1]), 3), rank=int(rank[-1]))
    if not runs:
        return (_("**{answer} is the most likely readout from block {first} on**, to the output (probability {p} "
                  "there, {p_end} at the output); at block {before} it ranks {rank_before}.").format(
            before=first - 1, rank_before=int(rank[first - 1]), **values) if first else
            _("**{answer} is the most likely readout at every block**, from the token embedding to the output "
              "(probability {p_end} at the output).").format(**values))
    where = i18n.list_separator().join(
        (_("{rank} at the output") if b == out else _("{rank} at block {block}")).format(rank=int(rank[b]), block=b)
        if b == e else _("{rank} at blocks {block} to {last}").format(rank=int(rank[b]), block=b, last=e)
        if rank[b:e + 1].min() == rank[b:e + 1].max() else _("{low} to {high} at blocks {block} to {last}").format(
            low=int(rank[b:e + 1].min()), high=int(rank[b:e + 1].max()), block=b, last=e)
        for b, e in runs)
    end = (_("and it is the model's answer at the output (probability {p_end}).") if rank[-1] == 1 else
           _("so the model's answer is another token."))
    until = runs[0][0] - 1  # the end of its first stretch on top
    return (_("**{answer} is first the most likely readout at block {first}** (probability {p}) and stays on top up "
              "to block {until}; then it ranks {where},") if until > first else
            _("**{answer} is first the most likely readout at block {first}** (probability {p}); then it ranks "
              "{where},")).format(until=until, where=where, **values) + " " + end.format(**values)


def unlikely_claim(a: AnswerByLayer, level: float = 0.01) -> str | None:
    """How long the answer's readout stays under ``level`` from block 0 on (:meth:`AnswerByLayer.under`): at every
    block to the output, a stretch of blocks, or only block 0, the token embedding; ``None`` when it starts above."""
    last, out = a.under(level), len(a.probability) - 1
    values = dict(one_percent=i18n.percent(level, 0), block=last, p=i18n.percent(float(a.probability[1]), 1))
    return None if last is None else (
        _("Its probability stays under {one_percent} at every block of the readout, to the output.") if last == out
        else _("Its probability stays under {one_percent} up to block {block} of the readout.") if last else
        _("Its probability is under {one_percent} in the token embedding's readout (block 0) but already {p} "
          "entering block 1.")).format(**values)


# --- the statistics of the last query's attention -----------------------------------------------------------


LAST_ROW_KEYS = ("sink", "previous", "self", "entropy", "distance")
"""The head statistics (:mod:`attention.heads`) the page reads on the last query row, the one that predicts the answer
(the induction score has its own section, on the repeated random prompt)."""
STATISTICS = {key: head_statistics.STATISTICS[key] for key in LAST_ROW_KEYS}
"""Those statistics in words: :data:`explorer.shell.head_statistics.STATISTICS` (one table for every lesson)."""


def last_row_statistics(attentions) -> dict[str, np.ndarray]:
    """The :data:`LAST_ROW_KEYS` statistics of every head on the last query row (:func:`attention.heads.statistics`
    with ``rows="last"``), from ``attentions [n_layers, n_heads, n, n]``: ``{key: [L, H]}`` float64. With one token
    ``previous`` is 0 (there is no previous token to put weight on)."""
    A = np.asarray(attentions, dtype=np.float64)
    values = heads.statistics(A, rows=heads.LAST)
    return {key: values.get(key, np.zeros(A.shape[:-2])) for key in LAST_ROW_KEYS}


def spearman(x, y) -> float:
    """Spearman's rank correlation of two equally long arrays (ties get their mean rank); 0 when one is constant."""
    rx, ry = (pd.Series(np.asarray(a, dtype=np.float64).ravel()).rank().to_numpy() for a in (x, y))
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass(frozen=True)
class AttentionVsEffect:
    """What the scatter of an attention statistic against the knockout effect says, for one prompt.

    Attributes:
        busiest: the head with the largest statistic; busiest_value, busiest_effect, busiest_rank (its rank by
            drop of the answer's log-probability, 1 = the largest drop).
        strongest: the head whose knockout drops the answer most; strongest_value, strongest_effect,
            strongest_stat_rank (its rank by the statistic, 1 = the largest).
        rho: Spearman's rank correlation between the statistic and the drop (``-effect``).
        n_heads: heads compared.
    """

    busiest: tuple[int, int]
    busiest_value: float
    busiest_effect: float
    busiest_rank: int
    strongest: tuple[int, int]
    strongest_value: float
    strongest_effect: float
    strongest_stat_rank: int
    rho: float
    n_heads: int


def rank_of(values, layer: int, head: int, *, largest: bool = True) -> int:
    """1 + how many heads have a strictly larger (or smaller) value than ``values[layer, head]``."""
    v = np.asarray(values, dtype=np.float64)
    x = v[layer, head]
    return 1 + int((v > x).sum() if largest else (v < x).sum())


def attention_vs_effect(statistic, effect) -> AttentionVsEffect:
    """Compare a statistic ``[L, H]`` with the knockout effect ``[L, H]`` (change of the answer's log-probability)."""
    s, e = np.asarray(statistic, dtype=np.float64), np.asarray(effect, dtype=np.float64)
    busiest = heads.top_heads(s, 1)[0]
    strongest = heads.top_heads(e, 1, largest=False)[0]
    return AttentionVsEffect(
        busiest, float(s[busiest]), float(e[busiest]), rank_of(e, *busiest, largest=False),
        strongest, float(s[strongest]), float(e[strongest]), rank_of(s, *strongest),
        spearman(s, -e), s.size)


def scatter_claim(r: AttentionVsEffect, stat: str, answer: str) -> str:
    """What the scatter of the statistic ``stat`` (a :data:`LAST_ROW_KEYS` key) against the knockout effect says
    (``answer``: its piece, a code span): that the busiest head is also the one that matters most, or both heads'
    numbers and ranks with the rank correlation (Markdown in the run's language)."""
    short = head_statistics.short(stat)
    if r.busiest == r.strongest:
        return _("Here the head with the highest {statistic} ({head}, {value}) is also the head that matters most "
                 "({effect}): on this prompt and statistic, attention and effect agree. Try another statistic or "
                 "prompt.").format(statistic=short, head=head_code(*r.busiest), value=fmt(r.busiest_value, 3),
                                   effect=fmt(r.busiest_effect, 3))
    return _(
        "The head with the highest {statistic}, **{busiest}** ({busiest_value}), changes log p({answer}) by "
        "{busiest_effect} when knocked out (rank {busiest_rank} of {n}). The head that matters most, "
        "**{strongest}** ({strongest_effect}), has {statistic} {strongest_value} (rank {strongest_rank} of {n}). "
        "Rank correlation between the two over all heads: ρ = {rho}.").format(
        statistic=short, busiest=head_code(*r.busiest), busiest_value=fmt(r.busiest_value, 3), answer=answer,
        busiest_effect=fmt(r.busiest_effect, 3), busiest_rank=r.busiest_rank, n=r.n_heads,
        strongest=head_code(*r.strongest), strongest_effect=fmt(r.strongest_effect, 3),
        strongest_value=fmt(r.strongest_value, 3), strongest_rank=r.strongest_stat_rank, rho=fmt(r.rho, 2))


@dataclass(frozen=True)
class Grade:
    """A guess of the head that matters most, graded: its rank by the drop of the answer's log-probability."""

    guess: tuple[int, int]
    rank: int
    effect: float
    best: tuple[int, int]
    best_effect: float

    @property
    def right(self) -> bool:
        return self.rank == 1


def grade_guess(effect, guess: tuple[int, int]) -> Grade:
    """Grade ``guess`` against the sweep's ``effect [L, H]``: the head that matters most is the one whose knockout
    lowers the answer's log-probability the most."""
    e = np.asarray(effect, dtype=np.float64)
    best = heads.top_heads(e, 1, largest=False)[0]
    return Grade(tuple(guess), rank_of(e, *guess, largest=False), float(e[guess]), best, float(e[best]))


def sweep_claim(effect, guess: tuple[int, int] | None, answer: str) -> tuple[str, str]:
    """What the sweep's ``effect [L, H]`` says of the learner's ``guess`` (``None``: no guess; ``answer``: its piece,
    a code span): ``(callout, Markdown)``, the callout ``"success"`` for a right guess, else ``"info"``."""
    e = np.asarray(effect, dtype=np.float64)
    g = grade_guess(e, guess or heads.top_heads(e, 1, largest=False)[0])  # no guess: the best head, graded
    values = dict(guess=head_code(*g.guess), rank=g.rank, n=e.size, answer=answer, effect=fmt(g.effect, 3),
                  best=head_code(*g.best), best_effect=fmt(g.best_effect, 3))
    if guess is None:
        return "info", _("The head that matters most is **{best}**: its knockout changes log p({answer}) by "
                         "{effect}.").format(**values)
    return ("success", _("**Right: {guess} matters most.** Its knockout changes log p({answer}) by {effect}.").format(
        **values)) if g.right else ("info", _(
        "**{guess} ranks {rank} of {n}**: its knockout changes log p({answer}) by {effect}. The head that matters most "
        "is **{best}** ({best_effect}).").format(**values))


# --- the repeated random prompt -----------------------------------------------------------------------------


def second_copy_metrics(logits, ids: Sequence[int], k: int) -> tuple[float, float]:
    """Mean next-token loss (nats) and top-1 accuracy on the second copy: the predictions made at positions
    ``k .. 2k - 2`` of the tokens ``k + 1 .. 2k - 1`` (``k - 1`` predictions; the second copy's first token
    cannot be copied: the token before it occurred only once).

    Args:
        logits: ``[2k, vocab]`` of the whole repeated prompt.
    """
    z = np.asarray(logits, dtype=np.float64)
    ids = np.asarray(ids)
    if z.shape[0] != 2 * k or len(ids) != 2 * k:
        raise ValueError(f"logits and ids must cover 2k = {2 * k} positions, got {z.shape[0]} and {len(ids)}")
    pos = np.arange(k, 2 * k - 1)
    loss = llm.next_token_losses(z, ids)[pos]  # the one next-token loss (attention.llama.variants)
    return float(loss.mean()), float((z[pos].argmax(-1) == ids[pos + 1]).mean())


# --- activation patching ------------------------------------------------------------------------------------


def logit_differences(_model: llm.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int,
                      foil: int) -> tuple[float, float]:
    """logit(answer) - logit(foil) at the last position of the clean and of the corrupted run (the door's runs)."""
    return tuple(llm.logit_difference(llm.run(_model, ids, activations=True).last_logits, answer, foil)
                 for ids in (clean, corrupted))


def recovered(values, clean: float, corrupted: float) -> np.ndarray:
    """How much of the way from the corrupted logit difference to the clean one a patch goes: ``(v - corrupted) /
    (clean - corrupted)`` (0 = nothing, 1 = all of it; float64, the shape of ``values``).

    Raises:
        ValueError: ``clean == corrupted`` (nothing to recover).
    """
    if clean == corrupted:
        raise ValueError("the clean and corrupted logit differences are equal: nothing to recover")
    return (np.asarray(values, dtype=np.float64) - corrupted) / (clean - corrupted)


@dataclass(frozen=True)
class FactMove:
    """Where patching the stream carries the answer, from the residual patching map.

    Attributes:
        last_from: the first block from which patching the *last* position alone recovers at least half of the
            way, at every later block (``None``: never).
        other_until: the last block at which patching some *other* position recovers at least half
            (``None``: none does); other_position: that position (the one with the most, at that block).
        threshold: the half (0.5).
    """

    last_from: int | None
    other_until: int | None
    other_position: int | None
    threshold: float = 0.5

    @property
    def moves(self) -> bool:
        """The fact sits at another position up to a block, then at the last position from the next one on."""
        return self.last_from is not None and self.other_until is not None and self.other_until + 1 == self.last_from


def fact_move(fraction) -> FactMove:
    """:class:`FactMove` from the recovered fractions ``[n_layers + 1, n]`` (:func:`recovered`)."""
    r = np.asarray(fraction, dtype=np.float64)
    half = 0.5
    runs = stretches(r[:, -1] >= half)  # the last position's: the last run is the one that reaches the end, if any
    last_from = runs[-1][0] if runs and runs[-1][1] == len(r) - 1 else None
    ok = np.flatnonzero((r[:, :-1] >= half).any(axis=1))  # the blocks where another position carries half
    other_until = int(ok[-1]) if len(ok) else None
    return FactMove(last_from, other_until, int(np.argmax(r[other_until, :-1])) if len(ok) else None)


def fact_move_claim(move: FactMove, labels: Sequence[str]) -> str:
    """Where the residual patching map says the fact moves (``labels``: the pair's position labels,
    :func:`pair_labels`): between two layers, over two ranges that do not meet, only at the last position, or
    nowhere (Markdown in the run's language)."""
    where = md_code(labels[move.other_position], limit=None) if move.other_position is not None else ""
    values = dict(until=move.other_until, last_from=move.last_from, where=where)
    if move.moves:
        return _("**The fact moves between layers {until} and {last_from}.** Up to block {until}, copying the "
                 "stream at position {where} carries the answer; from block {last_from} on, only the last "
                 "position does. So a layer around {until} moves the information to the last position: its "
                 "heads are below.").format(**values)
    if move.last_from is not None and move.other_until is not None:
        return _("From block {last_from} on, copying the last position carries the answer; up to block {until}, "
                 "copying position {where} does. The two ranges do not meet: no single layer moves it.").format(
            **values)
    if move.last_from is not None:
        return _("From block {last_from} on, copying the last position carries the answer; no other position "
                 "carries at least half of it at any block.").format(**values)
    return _("No single stream copied from the clean run carries at least half of the difference here.")


def head_patch_claim(values, layer: int, clean: float, corrupted: float, answer: str, foil: str) -> str:
    """What patching each head of ``layer`` alone did (``values [n_heads]``: the logit differences; ``clean``,
    ``corrupted``: the runs' own; ``answer``, ``foil``: their pieces, code spans): the head that recovers most, with
    its share of the way (Markdown in the run's language)."""
    v = np.asarray(values, dtype=np.float64)
    best = int(np.argmax(v))
    return _("Copying **{head}**'s output alone takes {answer} − {foil} from {corrupted} to **{patched}** "
             "({share} of the way to the clean {clean}).").format(
        head=head_code(layer, best), answer=answer, foil=foil, corrupted=fmt(corrupted, 2), patched=fmt(v[best], 2),
        share=i18n.percent(float(recovered(v[best], clean, corrupted)), 0), clean=fmt(clean, 2))


def pair_labels(clean_pieces: Sequence[str], corrupted_pieces: Sequence[str]) -> list[str]:
    """One label per position of a patch pair: the token, or ``clean/corrupted`` where they differ, with the
    position (``"␣France/␣Italy (3)"``); pieces already readable (``visible_piece``)."""
    return [f"{a if a == b else f'{a}/{b}'} ({i})" for i, (a, b) in enumerate(zip(clean_pieces, corrupted_pieces,
                                                                                   strict=True))]


# --- the knockouts' claims: which sentence is true, with its numbers ----------------------------------------------


def signed(x: float, digits: int = 4) -> str:
    """``x`` with its sign always written (``+0.0123`` / ``+0,0123``; ``−`` as ``-``), the run's decimal mark."""
    text = fmt(x, digits)
    return text if text.startswith("-") else "+" + text


def heads_list(heads) -> str:
    """Head codes listed in a sentence: ``L18H6, L17H4``."""
    return ", ".join(head_code(*h) for h in heads)


def knockout_sentences(clean: Knockout, chosen: Knockout, control: Knockout, heads: Sequence[tuple[int, int]],
                       random: Sequence[tuple[int, int]], ablation: str, answer_id: int, answer: str,
                       top: str) -> tuple[str, str]:
    """What knocking ``heads`` out did to p(answer), beside the same number of ``random`` heads: ``(the sentence,
    the comparison)`` in the run's language (Markdown of the app's own words; ``answer`` and ``top``, the pieces of
    the answer ``answer_id`` and of the new top token, already code spans).

    The sentence says whether the top token stays the answer; the comparison whether the chosen heads move the
    answer more than the random ones (how many times), or not.
    """
    d_chosen = chosen.answer_probability - clean.answer_probability
    d_random = control.answer_probability - clean.answer_probability
    values = dict(heads=heads_list(heads), ablation=_(ABLATION_NAMES[ablation]), answer=answer,
                  before=fmt(clean.answer_probability, 4), after=fmt(chosen.answer_probability, 4),
                  change=signed(d_chosen, 4), random=heads_list(random), random_change=signed(d_random, 4), top=top)
    sentence = (_(
        "Knocking out {heads} ({ablation} ablation) changes p({answer}) from {before} to **{after}** ({change}); the "
        "top token stays {answer}. The same number of random heads ({random}) change it by {random_change}.")
        if chosen.top_ids[0] == answer_id else _(
        "Knocking out {heads} ({ablation} ablation) changes p({answer}) from {before} to **{after}** ({change}); the "
        "top token becomes {top}. The same number of random heads ({random}) change it by {random_change}.")
    ).format(**values)
    if d_random == 0 and d_chosen != 0:
        comparison = _("Here the chosen heads move the answer and the random ones do not (one random draw: change the "
                       "seed for another).")
    elif abs(d_chosen) > abs(d_random):
        comparison = _("Here the chosen heads move the answer {times} times as much as the random ones (one random "
                       "draw: change the seed for another).").format(times=fmt(abs(d_chosen) / abs(d_random), 1))
    else:
        comparison = _("Here the random heads move the answer at least as much as the chosen ones (one random draw: "
                       "change the seed for another).")
    return sentence, comparison


RANDOM_DRAWS = 5
"""Draws of random heads beside the induction heads."""


@dataclass(frozen=True)
class Induction:
    """The repeated random prompt with and without its induction heads.

    Attributes:
        ids: the ``2k`` token ids. scores: the induction score of every head ``[L, H]``.
        heads: the top induction heads knocked out. random: the random control's heads per draw.
        clean, knocked: ``(loss, accuracy)`` on the second copy; random_runs: one per random draw.
    """

    ids: tuple[int, ...]
    scores: np.ndarray
    heads: tuple[tuple[int, int], ...]
    random: tuple[tuple[tuple[int, int], ...], ...]
    clean: tuple[float, float]
    knocked: tuple[float, float]
    random_runs: tuple[tuple[float, float], ...]


def induction_experiment(_model: llm.LlamaModel, seed: int, n_knock: int, ablation: str) -> Induction:
    """The repeated random prompt of ``seed``: the second-copy loss with no knockout, with its ``n_knock`` top
    induction heads knocked out, and with ``n_knock`` random heads (:data:`RANDOM_DRAWS` draws seeded from ``seed``),
    through the door's forward pass (``_model``: not hashed by the page's cache). Each copy has
    :data:`REPEAT_TOKENS` words, or as many as a small vocabulary has (:func:`explorer.shell.llm.repeat_words`).

    Raises:
        ValueError: the vocabulary has fewer than 2 whole words (the page says so instead of calling this).
    """
    c, k = _model.config, llm.repeat_words(_model, REPEAT_TOKENS)
    if k < 2:
        raise ValueError(f"the vocabulary has {k} whole-word tokens; a repeated random prompt needs at least 2")
    ids = heads.repeated_random_ids(llm.word_ids(_model), k, seed)
    out = llm.forward(_model, ids)  # every position's logits: the second copy's losses
    scores = heads.induction(out.attentions, ids)  # the one induction score: w[i, i-k+1] over the second copy
    top = tuple(heads.top_heads(scores, n_knock))

    def metrics(knocked) -> tuple[float, float]:
        logits = llm.forward(_model, ids, ablate=knocked, ablation=ablation, weights=False).logits
        return second_copy_metrics(logits, ids, k)

    n_random = min(n_knock, c.n_layers * c.n_heads - n_knock)  # a small model may not have as many other heads
    random = tuple(tuple(random_heads(seed * 1000 + d, n_random, c.n_layers, c.n_heads, top))
                   for d in range(RANDOM_DRAWS))
    return Induction(ids, scores, top, random, second_copy_metrics(out.logits, ids, k), metrics(top),
                     tuple(metrics(r) for r in random))


def induction_sentences(r: Induction, ablation: str) -> tuple[str, str]:
    """What knocking out the top induction heads did to the second copy's loss, beside the random draws: ``(the
    sentence, the comparison)`` in the run's language; the comparison says whether the induction heads stand out
    (their knockout adds more loss than the random heads' on average, and some)."""
    n_knock = len(r.heads)
    random_loss = np.array([x[0] for x in r.random_runs])
    sentence = _n(
        "The top {n} induction head by induction score ({heads}): knocking it out ({ablation}) takes the second-copy "
        "loss from {before} to **{after} nats** (top-1 accuracy {acc_before} → {acc_after}); {n} random head, over "
        "{draws} draws: {random} nats on average ({low} to {high}).",
        "The top {n} induction heads by induction score ({heads}): knocking them out ({ablation}) takes the "
        "second-copy loss from {before} to **{after} nats** (top-1 accuracy {acc_before} → {acc_after}); {n} random "
        "heads, over {draws} draws: {random} nats on average ({low} to {high}).", n_knock).format(
        n=n_knock, heads=heads_list(r.heads), ablation=_(ABLATION_NAMES[ablation]), before=fmt(r.clean[0], 2),
        after=fmt(r.knocked[0], 2), acc_before=i18n.percent(r.clean[1], 0), acc_after=i18n.percent(r.knocked[1], 0),
        draws=len(r.random), random=fmt(float(random_loss.mean()), 2), low=fmt(float(random_loss.min()), 2),
        high=fmt(float(random_loss.max()), 2))
    rise, rise_random = r.knocked[0] - r.clean[0], float(random_loss.mean()) - r.clean[0]
    if rise > max(rise_random, 0) and rise > 0:
        comparison = _("Here the induction heads matter: their knockout adds {rise} nats, the random heads' "
                       "{rise_random} on average.").format(rise=fmt(rise, 2), rise_random=fmt(rise_random, 2))
    else:
        comparison = _("Here the induction heads' knockout adds {rise} nats and the random heads' {rise_random} on "
                       "average: on this draw they do not stand out.").format(rise=fmt(rise, 2),
                                                                              rise_random=fmt(rise_random, 2))
    return sentence, comparison


def lens_top(_model: llm.LlamaModel, ids: tuple[int, ...]) -> tuple[tuple[tuple[str, ...], ...], np.ndarray]:
    """The logit lens' top token at every block and position: ``(pieces [L + 1][n], probabilities [L + 1, n])``."""
    top = llm.from_prompt(llm.interventions.logit_lens_top, _model, ids, 1)
    return tuple(tuple(llm.visible_pieces(_model, row.tolist())) for row in top.ids[..., 0]), top.probabilities[..., 0]


def answer_readout(_model: llm.LlamaModel, ids: tuple[int, ...], answer: int) -> AnswerByLayer:
    """The answer's probability and rank read out of every block's stream at the last position."""
    return answer_by_layer(llm.from_prompt(llm.interventions.logit_lens, _model, ids), answer)


def knockout(_model: llm.LlamaModel, ids: tuple[int, ...], heads: tuple[tuple[int, int], ...], ablation: str,
             answer: int) -> Knockout:
    """The prediction with ``heads`` knocked out (recomputed from the first knocked-out layer on)."""
    return knockout_result(llm.from_prompt(llm.interventions.knock_out, _model, ids, heads, ablation=ablation), heads,
                           answer)


def statistics(_model: llm.LlamaModel, ids: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The attention statistics of the last query row of every head (:func:`last_row_statistics`)."""
    return last_row_statistics(llm.run(_model, ids, activations=True).attentions)


def plain(_model: llm.LlamaModel, token: int) -> str:
    """A token as charts and tables show it (text, escaped by the chart): its readable piece in quotes, ``“␣Paris”``."""
    return f"“{llm.visible_pieces(_model, [token])[0]}”"


def piece(_model: llm.LlamaModel, token: int) -> str:
    """A token as a sentence shows it: its readable piece as a Markdown code span (a visitor's token is text)."""
    return md_code(llm.visible_pieces(_model, [token])[0], limit=None)


def latex_safe(text: str) -> str:
    """A token for ``\\text{}`` in a formula: letters, digits and spaces kept, anything else a placeholder."""
    return "".join(ch if ch.isalnum() or ch == " " else "·" for ch in text.strip("“”").replace("␣", " ")).strip() or "·"


def sweep_progress(config: llm.LlamaConfig) -> tuple[Callable[[int], str], str]:
    """The knockout sweep's progress texts for :func:`explorer.shell.jobs.in_steps`: ``(the text while it runs layer
    ``layer`` (1-based) of config.n_layers, the text once it ran)``."""
    n, layers = config.n_layers * config.n_heads, config.n_layers
    step = _("knocking out {n} heads: layer {layer} of {layers}")
    return (lambda layer: step.format(n=n, layer=layer, layers=layers),
            _("knocked out {n} heads, one at a time, in {layers} stacked passes").format(n=n, layers=layers))


def patch_progress(config: llm.LlamaConfig, n: int) -> tuple[Callable[[int], str], str]:
    """The residual patching map's progress texts (``n`` positions), as :func:`sweep_progress`'s: while it patches
    ``block``, once it ran."""
    blocks = config.n_layers + 1
    step = _("patching {blocks} streams × {n} positions: block {block} of {last}")
    return (lambda block: step.format(blocks=blocks, n=n, block=block, last=blocks - 1),
            _("patched {blocks} streams × {n} positions, one stacked pass per block").format(blocks=blocks, n=n))


def sweep_key(model_key: tuple, signature: tuple, default: bool) -> tuple:
    """The key of a kept sweep (:func:`explorer.shell.jobs.Jobs.keep`): the model's identity, the sweep's
    ``(ids, answer, ablation)`` and whether the ids are the page's default prompt's (a sweep the class shares)."""
    return model_key, *signature, default


def is_default_sweep(key: tuple) -> bool:
    """Whether a kept sweep (:func:`sweep_key`) is the default prompt's with zero ablation: pinned while the server
    runs (within the registry's bounds), so a class opening the lesson meets it computed."""
    return bool(key[-1]) and key[-2] == "zero"


def patch_passes(config: llm.LlamaConfig, n: int) -> float:
    """What section 5 runs on a pair of ``n``-token prompts, in forward passes (the blocks they run): both prompts
    once, the residual map (the stacked pass for block ℓ runs blocks ℓ to ``L - 1`` on ``n`` copies: ``(L + 1) / 2``
    passes' worth of blocks, their rows cheap beside the blocks' fixed work: ``llm.PASS_FLAT_TOKENS``) and one
    layer's heads (at most one pass's worth)."""
    return 2 + (config.n_layers + 1) / 2 + 1


INDUCTION_PASSES = 2 + RANDOM_DRAWS
"""The forward passes of the induction experiment (:func:`induction_experiment`): the repeated prompt clean, with its
induction heads knocked out, and with each draw of random heads."""


def control_count(chosen: int, n_layers: int, n_heads: int) -> int:
    """How many random heads the control knocks out beside ``chosen`` heads: as many, or all the others when a small
    model has fewer (``n_layers * n_heads - chosen``)."""
    return max(0, min(chosen, n_layers * n_heads - chosen))


def sweep_passes(config: llm.LlamaConfig) -> tuple[int, int]:
    """The sweep's cost: ``(block runs, forward passes' worth)``. The stacked pass for layer ℓ runs blocks ℓ to
    ``L - 1`` on ``H`` copies of the prompt: ``L (L + 1) / 2`` block runs of ``H`` copies, ``H (L + 1) / 2`` forward
    passes' worth (SmolLM2-135M: 465 block runs, 139.5 passes)."""
    L, H = config.n_layers, config.n_heads
    runs = L * (L + 1) // 2
    return runs, runs * H // L


def last_pass_seconds(_model: llm.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str) -> float:
    """The sweep's cheapest stacked pass (layer ``L - 1``: one block on ``H`` copies, then the readout), run through
    the door, which caches it for the sweep, and timed on this server in seconds: the unit of the sweep's estimate
    (:func:`sweep_seconds`; contended cores make it vary)."""
    start = time.perf_counter()
    llm.knockout_layer(_model, ids, answer, _model.config.n_layers - 1, ablation=ablation)
    return time.perf_counter() - start


def sweep_seconds(config: llm.LlamaConfig, n: int, last: float) -> float:
    """The sweep's time on a prompt of ``n`` tokens from its cheapest stacked pass, timed: ``last`` seconds for layer
    ``L - 1``'s (one block on the ``H`` copies, then the readout of their last position). That pass is split into a
    block run ``b`` and a readout ``r`` by their multiply-adds (a block: the Q/K/V and output projections and the MLP
    on ``H n`` rows; the readout: ``H`` rows times the ``vocab x d_model`` unembedding), and the sweep is
    ``L (L + 1) / 2`` block runs and ``L`` readouts. Seconds (the attention scores and norms are left out: at these
    lengths they cost little)."""
    c, L = config, config.n_layers
    mlp = 2 if c.mlp == "gelu" else 3  # gelu: up and down; swiglu / geglu: gate, up and down
    per_row = c.d_model * (c.n_heads + 2 * c.n_kv_heads) * c.d_head + c.n_heads * c.d_head * c.d_model \
        + mlp * c.d_model * c.d_ff
    block_macs, read_macs = c.n_heads * n * per_row, c.n_heads * c.vocab_size * c.d_model
    block = last * block_macs / (block_macs + read_macs)
    return block * L * (L + 1) / 2 + (last - block) * L


def sweep_estimate(config: llm.LlamaConfig, n: int, last: float) -> str:
    """What the sweep will cost before it runs (Markdown in the run's language): its stacked passes and block runs
    (:func:`sweep_passes`), and its time on ``n`` tokens (:func:`sweep_seconds`) from its cheapest pass, ``last``
    seconds, timed on this server."""
    runs, passes = sweep_passes(config)
    L, H = config.n_layers, config.n_heads
    return _("The sweep runs {n} stacked passes: the one for layer ℓ runs blocks ℓ to {last} on {h} copies of your "
             "prompt, {runs} block runs in all, the blocks of about {passes} forward passes. Its last pass (one "
             "block) took {t} s on this server just now, so the whole sweep should take **{total}** ({layers} layers "
             "× {h} heads = {heads} knockouts). A progress bar shows the layer.").format(
        n=L, last=L - 1, h=H, runs=i18n.integer(runs), passes=i18n.integer(passes), t=i18n.significant(last, 2),
        total=textviews.duration(sweep_seconds(config, n, last)), layers=L, heads=i18n.integer(L * H))


def repeat_note(words: int, wanted: int = REPEAT_TOKENS) -> str | None:
    """What the page says when the vocabulary has fewer whole words than the repeated prompt wants (``words``:
    :func:`explorer.shell.llm.repeat_words`' count); ``None`` when it has enough."""
    if words >= wanted:
        return None
    if words < 2:
        return _n("This model's vocabulary has {n} whole-word token (a space and letters, one token that reads back "
                  "as itself); a repeated random prompt needs at least 2, so this section cannot run here.",
                  "This model's vocabulary has {n} whole-word tokens (a space and letters, one token that reads back "
                  "as itself); a repeated random prompt needs at least 2, so this section cannot run here.",
                  words).format(n=words)
    return _("This model's vocabulary has only {n} whole-word tokens (a space and letters, one token that reads back "
             "as itself), so each copy has {n} tokens instead of {wanted}.").format(n=words, wanted=wanted)


def attribution_note(config: llm.LlamaConfig) -> str | None:
    """What the attribution freezes besides the final norm's divisor on this architecture (``None``: nothing):
    gemma3 normalises what each attention layer writes before it joins the stream (Markdown, the run's language)."""
    if not config.post_norms:
        return None
    return _("This model normalises what each attention layer writes before it joins the stream (an RMSNorm after "
             "the attention, and one after the MLP). The MLPs' parts are taken after their norm, as they join the "
             "stream; for the heads, each layer's norm divisor is held at its actual value too, so the heads of a "
             "layer share their layer's part linearly and the parts still add up to the logit.")


def unembedding(tied: bool | None) -> tuple[str, str]:
    """The output matrix's symbol and its name in a sentence (the run's language): ``("E", "the unembedding E (the
    embedding matrix, tied)")`` when the file's output is its token embedding (``tied``:
    :attr:`explorer.shell.llm.WeightStorage.tied`), ``"W_U"`` when it has one of its own (``False``) or when the
    file's table cannot say (``None``: no claim either way)."""
    if tied:
        return "E", _("the unembedding E (the embedding matrix, tied)")
    if tied is False:
        return "W_U", _("the unembedding W_U (a matrix of its own, not the token embedding)")
    return "W_U", _("the unembedding W_U")


def lens_intro(config: llm.LlamaConfig) -> str:
    """Section 1's question, with the model's final norm (:func:`explorer.shell.llm.norm_name`; Markdown)."""
    return _("What would the model predict if it stopped after block ℓ? Apply its final {norm} and unembedding to the "
             "stream there. Left: the top token at every block and position; right: your answer's probability at the "
             "last position, block by block.").format(norm=llm.norm_name(config))


def final_norm_sentence(config: llm.LlamaConfig) -> str:
    """What the model's final norm does to the stream, in one clause (Markdown): an RMSNorm divides by the root mean
    square; gpt2's LayerNorm subtracts the mean, divides by the standard deviation and adds a bias."""
    if config.norm == "layer":
        return _("The **final LayerNorm** subtracts its mean and divides it by its standard deviation (times a "
                 "learned gain, plus a learned bias)")
    return _("The **final RMSNorm** divides it by its root mean square (times a learned gain)")


def embedding_words(config: llm.LlamaConfig) -> str:
    """What the stream starts as, the attribution's ``x_emb``: the token's embedding, plus its position's learned
    embedding on a model with learned positions (gpt2: :attr:`Attribution.embedding` holds both)."""
    if config.positions == "learned":
        return _("the token's embedding plus its position's (a learned vector per position)")
    return _("the token's embedding")


def stream_caption(config: llm.LlamaConfig, tied: bool | None) -> str:
    """Section 1's words for the stream, the final norm and the unembedding of this model (Markdown)."""
    return _("The **residual stream** x is each position's running vector: it starts as {start} and every block adds "
             "what its attention and its MLP write. {norm}; {unembedding} turns it into one **logit** per token of the "
             "vocabulary, and the softmax turns those into probabilities.").format(
        start=embedding_words(config), norm=final_norm_sentence(config), unembedding=unembedding(tied)[1])


def lens_formula(config: llm.LlamaConfig, tied: bool | None) -> str:
    """The logit lens as LaTeX, with the model's final norm and output matrix."""
    return (r"\text{lens}_\ell = \mathrm{" + llm.norm_name(config) + r"}\big(x^{(\ell)}_{n-1}\big)\,"
            + unembedding(tied)[0] + r"^\top")


def lens_caption(config: llm.LlamaConfig, tied: bool | None) -> str:
    """What the logit lens formula's symbols are on this model (plain text)."""
    return _("x^(ℓ): the stream entering block ℓ (ℓ = 0 is {start}, the last row the stream after the last block); "
             "the final {norm} is recomputed on each stream, then {unembedding}. The last row is exactly the model's "
             "own logits.").format(start=embedding_words(config), norm=llm.norm_name(config),
                                   unembedding=unembedding(tied)[1])


def attribution_formulas(config: llm.LlamaConfig, tied: bool | None) -> tuple[str, str]:
    """Direct logit attribution as LaTeX, as :func:`attention.llama.interventions.logit_attribution` computes it on
    this model: the logit as the parts' sum times ``u_t / s``; gpt2's LayerNorm adds its bias's share and the
    attention outputs' biases ``b_O``, and centres ``u_t`` (the norm's mean moves onto the direction)."""
    row = "E_t" if unembedding(tied)[0] == "E" else "W_{U,t}"
    parts = r"x_{\text{emb}} + \sum_{\ell,h} o_{\ell,h} W_O^{(\ell,h)} + \sum_\ell m_\ell"
    if config.norm == "layer":
        return (r"\text{logit}_t = \Big(" + parts + r" + \sum_\ell b_O^{(\ell)}\Big)\cdot \frac{u_t}{s} + b \cdot "
                + row, r"u_t = g \odot " + row + r" - \mathrm{mean}\big(g \odot " + row + r"\big)")
    return r"\text{logit}_t = \Big(" + parts + r"\Big)\cdot \frac{u_t}{s}", r"u_t = g \odot " + row


def attribution_caption(config: llm.LlamaConfig, tied: bool | None) -> str:
    """What ``s``, ``g`` (and gpt2's ``b``, ``b_O``) and the answer's row are in :func:`attribution_formulas` (plain
    text): the final norm's divisor held at its actual value, the norm's gain and bias, the output matrix's row."""
    symbol = unembedding(tied)[0]
    row = _("E_t the answer's row of the tied unembedding") if symbol == "E" else _(
        "W_U,t the answer's row of the unembedding W_U")
    if config.norm == "layer":
        return _("The stream before the final LayerNorm is the sum of what every part wrote at the last position, "
                 "with each layer's attention output bias b_O; the norm subtracts the stream's mean, which is the "
                 "same as taking the mean off u_t. s is the norm's divisor, the standard deviation √(var(x) + ε), "
                 "held at its actual value; g its gain; b its bias, whose share b · {symbol}_t needs no stream: with "
                 "the b_O it is the row of biases in the table; {row}.").format(symbol=symbol, row=row)
    return _("The stream before the final RMSNorm is the sum of what every part wrote at the last position; s is the "
             "norm's divisor √(mean(x²) + ε), held at its actual value; g its gain; {row}.").format(row=row)


def frozen_scale_caption(config: llm.LlamaConfig, scale: str) -> str:
    """What holding the final norm's divisor ``s`` (``scale``, formatted) fixed means, on this model's norm (plain
    text): an RMSNorm's root mean square, a LayerNorm's standard deviation of the centred stream."""
    if config.norm == "layer":
        what = _("the final LayerNorm subtracts the stream's mean and divides it by its standard deviation, s = {s} "
                 "here").format(s=scale)
    else:
        what = _("the final RMSNorm divides the stream by its size, s = {s} here").format(s=scale)
    return _("What the frozen scale means: {what}, which depends on every part at once. Holding s at that value makes "
             "the readout linear, so each part gets an exact share. A share is what the part writes straight into "
             "the answer's logit with s held fixed: not what removing it would do (that would change s and every "
             "later layer's input; the knockouts below measure that).").format(what=what)
