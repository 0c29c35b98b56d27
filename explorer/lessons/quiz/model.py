"""Check-yourself questions: what is asked, how an answer is graded, and the numbers behind the feedback.

Pure functions (no Streamlit). Feedback messages are Markdown written here and never contain a user's token: a page
shows tokens through figures and tables only.

Languages (issue 31): an answer is a *code* (an option's key, a step's code, a number, a key position), never a shown
label, so the grade is the same in every language. A :class:`Feedback` is written in the run's language when it is
graded, so a page grades again (cheaply, from the stored codes and reveal) each time it shows one.

Source: the lessons' check-yourself questions and the curriculum quiz (order of the operations, why divide by
sqrt(d_k), which vectors make the scores, head width for d_model 512 with 8 heads, the causal mask, cost in the
sequence length), plus predict-then-reveal questions computed from the current settings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.shell import i18n
from explorer.shell.i18n import N_, translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)


@dataclass(frozen=True)
class Feedback:
    """A graded answer: ``correct`` and a Markdown ``message`` saying why (no user text in it), in the language that
    was the run's when it was graded."""

    correct: bool
    message: str


RIGHT = N_("**Right.**")
NOT_QUITE = N_("**Not quite.**")


# ---------------------------------------------------------------------------------------------
# Multiple-choice questions with a fixed answer (the page adds live numbers to the feedback).


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question: ``options`` maps each option's code (what a page stores and grades) to its label
    and why that option is right or wrong; ``answer`` is a code. ``prompt``, the labels and the explanations are the
    English messages (marked with ``N_``): :meth:`label` and :meth:`explain` give them in the run's language."""

    qid: str
    prompt: str
    answer: str
    options: dict[str, tuple[str, str]]

    def label(self, code: str) -> str:
        """Option ``code``'s label in the run's language."""
        return _(self.options[code][0])

    def explain(self, code: str) -> str:
        """Why option ``code`` is right or wrong, in the run's language."""
        return _(self.options[code][1])


def grade_choice(question: Choice, picked: str) -> Feedback:
    """Grade ``picked`` (the code of one of ``question.options``), in the run's language.

    Raises:
        ValueError: ``picked`` is not one of the options' codes.
    """
    if picked not in question.options:
        raise ValueError(f"{picked!r} is not an option of question {question.qid!r}")
    correct = picked == question.answer
    message = f"{_(RIGHT) if correct else _(NOT_QUITE)} {question.explain(picked)}"
    if not correct:
        message += "\n\n" + _("The answer: *{answer}*.").format(answer=question.label(question.answer))
        message += f" {question.explain(question.answer)}"
    return Feedback(correct, message)


SCALE = Choice(
    "scale", N_("Why are the scores divided by √d_k before the softmax?"), answer="spread", options={
        "sum_to_one": (N_("To make each row of attention weights sum to 1"),
                       N_("That is the softmax's job: every row sums to 1 with or without the division.")),
        "spread": (N_("To keep the scores' spread near 1 as d_k grows, so the softmax does not saturate"),
                   N_("A dot product of two d_k-wide vectors with unit-variance components has variance d_k. "
                      "Large scores make the softmax nearly one-hot (saturated) and its gradients vanish; "
                      "dividing by √d_k brings the variance back to 1.")),
        "speed": (N_("To make the computation faster"),
                  N_("The division is extra work (a little); it is about the size of the scores, not speed.")),
        "values": (N_("To normalise the value vectors"),
                   N_("The values are not touched: the division acts on the scores QKᵀ, before the softmax.")),
    },
)

QK = Choice(
    "qk", N_("Which vectors are used to compute the attention scores?"), answer="qk", options={
        "qv": (N_("The queries and the values"),
               N_("The values never meet the queries: they are only mixed, with the weights, after the softmax.")),
        "qk": (N_("The queries and the keys"),
               N_("The score of query i for key j is the dot product q_i · k_j, so S = QKᵀ. "
                  "The values are only mixed afterwards: out_i = Σ_j w_ij v_j.")),
        "kv": (N_("The keys and the values"),
               N_("Keys are compared with queries, not with values: S = QKᵀ.")),
        "qkv": (N_("The queries, the keys and the values"),
                N_("Only two of them: S = QKᵀ. The values enter after the softmax, in the weighted sum.")),
    },
)

CAUSAL = Choice(
    "causal", N_("What does a causal (decoder) mask block?"), answer="future", options={
        "self": (N_("A token attending to itself"),
                 N_("The diagonal stays allowed: query i may see keys j ≤ i, itself included.")),
        "past": (N_("A token attending to the tokens before it"),
                 N_("The opposite: the past stays visible, the future is hidden.")),
        "future": (N_("A token attending to the tokens after it (key position j > query position i)"),
                   N_("Before the softmax, the scores of the future keys (j > i) are set to −∞, so they get weight 0: "
                      "a model that writes left to right cannot peek at words it has not written yet.")),
        "padding": (N_("Padding tokens at the end of a short sentence"),
                    N_("That is the key padding mask, a different mask; the causal mask depends only on positions.")),
    },
)

COST = Choice(
    "cost", N_("How does the cost of self-attention grow with the sequence length n?"), answer="quadratic", options={
        "linear": (N_("Linearly: twice the tokens, twice the work"),
                   N_("Every query is compared with every key, so it is n queries × n keys, not n.")),
        "quadratic": (N_("Quadratically: twice the tokens, four times the work"),
                      N_("The score matrix is n × n: every query meets every key, each a d_k-long dot product "
                         "(n²·d_k multiply-adds), and the weights have n² entries too.")),
        "cubic": (N_("Cubically: twice the tokens, eight times the work"),
                  N_("There are n² scores, each a dot product of fixed width d_k: n²·d_k, quadratic in n.")),
        "constant": (N_("It does not depend on n"),
                     N_("Every token adds a query row and a key column to the n × n score matrix.")),
    },
)

CHOICES: dict[str, Choice] = {q.qid: q for q in (SCALE, QK, CAUSAL, COST)}


# ---------------------------------------------------------------------------------------------
# Ordering the operations for one input word (lesson steps 2-6).

STEP_TEXTS = {
    "project": (N_("Project: q = x W_q, k = x W_k, v = x W_v"),
                N_("The query, key and value come first: the scores need queries and keys.")),
    "scores": (N_("Scores: the query · every key"),
               N_("The scores compare this word's query with every key: they need q and K.")),
    "scale": (N_("Scale: divide by √d_k"),
              N_("The division acts on the raw scores and must happen before the softmax turns them into weights.")),
    "softmax": (N_("Softmax along the keys"),
                N_("The softmax turns the scaled scores of the row into weights that sum to 1.")),
    "sum": (N_("Weighted sum of the values"),
            N_("The output needs the weights: out = Σ_j w_j v_j, a blend of every value.")),
}
"""Each step's code -> its label (the lessons' wording: :func:`step_label`) and why it comes where it does."""

STEPS = tuple(STEP_TEXTS)
"""The steps' codes in the right order (lesson steps 2-6)."""

STEPS_SHOWN = ("softmax", "project", "sum", "scale", "scores")
"""The order in which the options are offered (never the answer)."""


def step_label(code: str) -> str:
    """Step ``code``'s label in the run's language."""
    return _(STEP_TEXTS[code][0])


def grade_order(picked: Sequence[str | None]) -> Feedback:
    """Grade an ordering of :data:`STEPS` (``picked[p]`` = the code of the step chosen for position ``p``).

    Raises:
        ValueError: ``picked`` does not have one entry per step, or an entry is not a step's code.
    """
    if len(picked) != len(STEPS):
        raise ValueError(f"picked must have {len(STEPS)} entries, got {len(picked)}")
    for p in picked:
        if p is not None and p not in STEPS:
            raise ValueError(f"{p!r} is not one of the steps")
    wrong = [i for i, p in enumerate(picked) if p != STEPS[i]]
    if not wrong:
        return Feedback(True, _(RIGHT) + "\n\n" + "\n".join(f"{i + 1}. {_(why)}"
                                                           for i, (_label, why) in enumerate(STEP_TEXTS.values())))
    notes = [_(NOT_QUITE)]
    repeated = sorted({p for p in picked if p is not None and picked.count(p) > 1}, key=STEPS.index)
    if repeated:
        notes.append(_("Chosen more than once: {steps}.").format(steps="; ".join(f"*{step_label(p)}*"
                                                                                  for p in repeated)))
    missing = [s for s in STEPS if s not in picked]
    if missing:
        notes.append(_("Missing: {steps}.").format(steps="; ".join(f"*{step_label(s)}*" for s in missing)))
    fixes = ["- " + _("Step {position} should be *{step}*.").format(position=i + 1, step=step_label(STEPS[i]))
             + f" {_(STEP_TEXTS[STEPS[i]][1])}" for i in wrong]
    return Feedback(False, " ".join(notes) + "\n\n" + "\n".join(fixes))


# ---------------------------------------------------------------------------------------------
# The width of one head.

HEAD_D_MODEL, HEAD_N_HEADS = 512, 8


def head_width(d_model: int = HEAD_D_MODEL, n_heads: int = HEAD_N_HEADS) -> int:
    """``d_head`` as the core computes it: the last axis of ``split_heads`` on a ``[1, d_model]`` input.

    Raises:
        ValueError: ``d_model % n_heads != 0`` (from :func:`attention.split_heads`).
    """
    return int(A.split_heads(np.zeros((1, d_model)), n_heads).shape[-1])  # [1, d_model] -> [n_heads, 1, d_head]


def grade_head_width(answer: float, d_model: int = HEAD_D_MODEL, n_heads: int = HEAD_N_HEADS) -> Feedback:
    """Grade a learner's ``d_head`` for ``d_model`` split into ``n_heads`` heads (in the run's language)."""
    d_head = head_width(d_model, n_heads)
    how = _n("`d_head = d_model / n_heads = {d_model} / {n_heads} = {d_head}`: splitting a `[n, {d_model}]` input "
             "into {n_heads} head gives `[{n_heads}, n, {d_head}]` (computed with `attention.split_heads`).",
             "`d_head = d_model / n_heads = {d_model} / {n_heads} = {d_head}`: splitting a `[n, {d_model}]` input "
             "into {n_heads} heads gives `[{n_heads}, n, {d_head}]` (computed with `attention.split_heads`).",
             n_heads).format(d_model=d_model, n_heads=n_heads, d_head=d_head)
    if answer == d_head:
        return Feedback(True, f"{_(RIGHT)} {how}")
    shown = fmt(answer, 0) if float(answer).is_integer() else i18n.general(float(answer), 12)
    if answer <= 0:
        hint = _("A width counts columns, so it is a positive whole number ({answer} is not).").format(answer=shown)
    elif answer == d_model * n_heads:
        hint = _("That multiplies; the heads *split* d_model between them, they do not each get a full copy.")
    elif answer == d_model:
        hint = _("That is the width of the whole model; each head gets one slice of it.")
    elif answer == n_heads:
        hint = _("That is the number of heads, not their width.")
    else:
        hint = _("{answer} is not d_model / n_heads.").format(answer=shown)
    return Feedback(False, f"{_(NOT_QUITE)} {hint} {how}")


# ---------------------------------------------------------------------------------------------
# Predict, then reveal: which key will this query attend to most?


@dataclass(frozen=True)
class TopKeyReveal:
    """What the core computed for one query row (all ``[n_k]`` float64).

    ``best`` holds every key position with the largest weight (ties within 1e-12).
    """

    query: int
    scores: np.ndarray
    scaled_scores: np.ndarray
    weights: np.ndarray
    best: tuple[int, ...]


def top_keys(weights_row) -> tuple[int, ...]:
    """Key positions of the largest weight in ``weights_row [n_k]`` (every tied key, within 1e-12)."""
    w = np.asarray(weights_row, dtype=float)
    return tuple(int(j) for j in np.flatnonzero(w >= w.max() - 1e-12))


def reveal_top_key(steps: A.AttentionSteps, query: int) -> TopKeyReveal:
    """The row of ``steps`` for ``query`` and its most-attended keys (lesson steps 3-5)."""
    return TopKeyReveal(
        query=int(query), scores=np.array(steps.scores[query]), scaled_scores=np.array(steps.scaled_scores[query]),
        weights=np.array(steps.weights[query]), best=top_keys(steps.weights[query]),
    )


def grade_top_key(reveal: TopKeyReveal, picked: int) -> Feedback:
    """Grade a predicted key position against what the core computed (in the run's language)."""
    w, s = reveal.weights, reveal.scaled_scores
    top = reveal.best[0]
    others = reveal.best[1:]
    tie = (" " + _n("(tied with position {positions})", "(tied with positions {positions})", len(others)).format(
        positions=", ".join(str(j) for j in others))) if others else ""
    if picked in reveal.best:
        return Feedback(True, _(RIGHT) + " " + _(
            "The key at position {picked} gets the largest weight, {weight}{tie}: its scaled score {scaled} is the "
            "highest in the row, and the softmax keeps that order.").format(
            picked=picked, weight=fmt(w[picked]), tie=tie, scaled=fmt(s[picked], 3)))
    return Feedback(False, _(NOT_QUITE) + " " + _(
        "The key at position {picked} gets {weight} (scaled score {scaled}); the largest weight, {top_weight}, goes to "
        "position {top}{tie}, whose scaled score {top_scaled} is the highest in the row. The softmax keeps the "
        "order of the scores, so the biggest q · k wins.").format(
        picked=picked, weight=fmt(w[picked]), scaled=fmt(s[picked], 3), top_weight=fmt(w[top]), top=top, tie=tie,
        top_scaled=fmt(s[top], 3)))


# ---------------------------------------------------------------------------------------------
# Predict, then reveal: the top weight when d_k grows and the scores are not scaled.

GROWTH_TEXTS = {
    "up": (N_("It goes up"), N_("**Not quite** — it goes up.")),
    "down": (N_("It goes down"), N_("**Not quite** — it goes down.")),
    "same": (N_("It stays about the same"), N_("**Not quite** — it stays about the same.")),
}
"""Each prediction's code -> its label (:func:`growth_label`) and the feedback's lead when it was the answer and
another was picked."""
GROWTH_OPTIONS = tuple(GROWTH_TEXTS)
"""The predictions' codes: ``("up", "down", "same")``."""
GROWTH_TOLERANCE = 0.01  # a change of the mean top weight below this counts as "about the same"
GROWTH_FACTOR = 16


def growth_label(code: str) -> str:
    """Prediction ``code``'s label in the run's language."""
    return _(GROWTH_TEXTS[code][0])


@dataclass(frozen=True)
class GrowthReveal:
    """Mean largest weight of a row at two widths, unscaled and scaled (:func:`attention.saturation_sweep`).

    ``d_k = (small, large)``; every statistic is a pair in the same order.
    ``example_*``: one sampled query's weights ``[n_keys]`` sorted largest first.
    ``answer`` is one of :data:`GROWTH_OPTIONS` (a code), decided by ``top_unscaled``.
    """

    d_k: tuple[int, int]
    n_keys: int
    n_samples: int
    seed: int
    score_std_unscaled: tuple[float, float]
    top_unscaled: tuple[float, float]
    top_scaled: tuple[float, float]
    example_small_unscaled: np.ndarray
    example_large_unscaled: np.ndarray
    example_large_scaled: np.ndarray
    answer: str


def growth_answer(before: float, after: float, tolerance: float = GROWTH_TOLERANCE) -> str:
    """``"up"``, ``"down"`` or ``"same"`` (:data:`GROWTH_OPTIONS`) for a change ``before -> after``."""
    return "up" if after - before > tolerance else "down" if before - after > tolerance else "same"


def growth_reveal(d_k: int, n_keys: int, seed: int, factor: int = GROWTH_FACTOR,
                  n_samples: int = 512) -> GrowthReveal:
    """Measure the top weight at ``d_k`` and ``factor * d_k`` with unit-variance queries and keys (the lesson's
    argument: ``q · k`` then has variance d_k, so without ``1/sqrt(d_k)`` the softmax saturates as d_k grows).

    Args:
        d_k: the current key width (>= 1); n_keys: keys per query row (the sentence length).
        seed: Monte Carlo seed (the sidebar's seed); n_samples: query rows per width.

    Raises:
        ValueError: a size is not a positive integer.
    """
    d_small = int(d_k)
    d_large = d_small * int(factor)
    stats = A.saturation_sweep([d_small, d_large], n_keys=n_keys, n_samples=n_samples, seed=seed)

    def example(d: int, scaled: bool) -> np.ndarray:
        raw = A.sample_scores(d, n_keys, n_keys, seed)[0, 0]  # first sampled query row [n_keys]
        return np.sort(A.softmax(raw / math.sqrt(d) if scaled else raw))[::-1]

    top = (float(stats.max_weight_unscaled[0]), float(stats.max_weight_unscaled[1]))
    return GrowthReveal(
        d_k=(d_small, d_large), n_keys=int(n_keys), n_samples=int(n_samples), seed=seed,
        score_std_unscaled=(float(stats.score_std_unscaled[0]), float(stats.score_std_unscaled[1])),
        top_unscaled=top,
        top_scaled=(float(stats.max_weight_scaled[0]), float(stats.max_weight_scaled[1])),
        example_small_unscaled=example(d_small, False), example_large_unscaled=example(d_large, False),
        example_large_scaled=example(d_large, True),
        answer=growth_answer(*top),
    )


def grade_growth(reveal: GrowthReveal, picked: str) -> Feedback:
    """Grade a prediction (a code of :data:`GROWTH_OPTIONS`) against the measured top weights (in the run's
    language).

    Raises:
        ValueError: ``picked`` is not one of the codes.
    """
    if picked not in GROWTH_OPTIONS:
        raise ValueError(f"{picked!r} is not one of {GROWTH_OPTIONS}")
    (d0, d1), (t0, t1), (s0, s1) = reveal.d_k, reveal.top_unscaled, reveal.score_std_unscaled
    numbers = _n(
        "Measured over {samples} sampled queries with {n} key each: without scaling, the scores' spread (std) goes "
        "from {std0} at d_k = {d0} to {std1} at d_k = {d1}, and the mean largest weight from {top0} to {top1}.",
        "Measured over {samples} sampled queries with {n} keys each: without scaling, the scores' spread (std) goes "
        "from {std0} at d_k = {d0} to {std1} at d_k = {d1}, and the mean largest weight from {top0} to {top1}.",
        reveal.n_keys).format(samples=reveal.n_samples, n=reveal.n_keys, std0=fmt(s0, 2), d0=d0, std1=fmt(s1, 2),
                              d1=d1, top0=fmt(t0, 3), top1=fmt(t1, 3))
    if reveal.n_keys == 1:
        why = _("With a single key the softmax always gives it weight 1, whatever the scores.")
    elif reveal.answer == "up":
        why = _("Wider vectors give larger dot products (variance d_k), and larger score gaps push the softmax "
                "towards one-hot: the top key takes almost everything.")
    elif reveal.answer == "down":
        why = _("Here the sampled scores happened to spread less, so the softmax got flatter.")
    else:
        why = _("Here the change is too small to call.")
    c0, c1 = reveal.top_scaled
    scaled = (_("With the division by √d_k it moves much less: {before} → {after}.") if abs(c1 - c0) < abs(t1 - t0)
              else _("With the division by √d_k it moves: {before} → {after}.")).format(before=fmt(c0, 3),
                                                                                      after=fmt(c1, 3))
    lead = _(RIGHT) if picked == reveal.answer else _(GROWTH_TEXTS[reveal.answer][1])
    return Feedback(picked == reveal.answer, f"{lead} {numbers} {why} {scaled}")


# ---------------------------------------------------------------------------------------------
# Live numbers for the fixed-answer questions.


def cost_rows(n: int, d_k: int, doublings: int = 3) -> list[dict[str, int]]:
    """Work of one attention head for ``n, 2n, 4n, ...`` tokens: one dict per length with ``tokens``,
    ``score_entries`` (``n²``), ``multiply_adds`` (``n²·d_k``, for ``QKᵀ``) and ``times_first`` (work relative to the
    first row). ``ValueError``: ``n`` or ``d_k`` is not a positive integer."""
    if int(n) < 1 or int(d_k) < 1:
        raise ValueError(f"n and d_k must be positive integers, got n={n}, d_k={d_k}")
    rows = []
    for p in range(doublings + 1):
        m = int(n) * 2**p
        rows.append({"tokens": m, "score_entries": m * m, "multiply_adds": m * m * int(d_k),
                     "times_first": (m * m) // (int(n) * int(n))})
    return rows


def causal_counts(n: int) -> tuple[int, int]:
    """``(blocked, total)`` query-key pairs of the causal mask for ``n`` tokens (blocked = ``n(n-1)/2``)."""
    mask = A.causal_mask(n)  # [n, n], True = may attend
    return int((~mask).sum()), int(mask.size)


def score_check(steps: A.AttentionSteps, i: int, j: int) -> tuple[float, float]:
    """``(q_i · k_j, scores[i, j])``: the score recomputed from the query and key rows, and the core's value."""
    return float(np.dot(steps.Q[i], steps.K[j])), float(steps.scores[i, j])


def growth_link_values(reveal: GrowthReveal) -> dict[str, int]:
    """The saturation page's controls preset to question 8's reveal: its larger ``d_k``, its keys and its seed (the
    link built from them, ``controls.link(scaling, **values)``, makes each one the page accepts: ``d_k`` to the
    nearest power of two it offers, the keys clamped to its range)."""
    return {"d_k": reveal.d_k[1], "n_keys": reveal.n_keys, "seed": reveal.seed}
