"""Check-yourself questions: what is asked, how an answer is graded, and the numbers behind the feedback.

Pure functions (no Streamlit). Feedback messages are Markdown written here and never
contain a user's token: a page shows tokens through figures and tables only.

Source: the lessons' check-yourself questions and the curriculum quiz (order of the
operations, why divide by sqrt(d_k), which vectors make the scores, head width for
d_model 512 with 8 heads, the causal mask, cost in the sequence length), plus
predict-then-reveal questions computed from the current settings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.lessons.scaling import model as scaling
from explorer.shell.textviews import fmt


@dataclass(frozen=True)
class Feedback:
    """A graded answer: ``correct`` and a Markdown ``message`` saying why (no user text in it)."""

    correct: bool
    message: str


# ---------------------------------------------------------------------------------------------
# Multiple-choice questions with a fixed answer (the page adds live numbers to the feedback).


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question; ``why[option]`` explains that option, right or wrong."""

    qid: str
    prompt: str
    options: tuple[str, ...]
    answer: str
    why: dict[str, str]


def grade_choice(question: Choice, picked: str) -> Feedback:
    """Grade ``picked`` (one of ``question.options``).

    Raises:
        ValueError: ``picked`` is not one of the options.
    """
    if picked not in question.options:
        raise ValueError(f"{picked!r} is not an option of question {question.qid!r}")
    correct = picked == question.answer
    lead = "**Right.**" if correct else "**Not quite.**"
    message = f"{lead} {question.why[picked]}"
    if not correct:
        message += f"\n\nThe answer: *{question.answer}*. {question.why[question.answer]}"
    return Feedback(correct, message)


SCALE = Choice(
    "scale", "Why are the scores divided by √d_k before the softmax?",
    options=(
        "To make each row of attention weights sum to 1",
        "To keep the scores' spread near 1 as d_k grows, so the softmax does not saturate",
        "To make the computation faster",
        "To normalise the value vectors",
    ),
    answer="To keep the scores' spread near 1 as d_k grows, so the softmax does not saturate",
    why={
        "To make each row of attention weights sum to 1":
            "That is the softmax's job: every row sums to 1 with or without the division.",
        "To keep the scores' spread near 1 as d_k grows, so the softmax does not saturate":
            "A dot product of two d_k-wide vectors with unit-variance components has variance d_k. "
            "Large scores make the softmax nearly one-hot (saturated) and its gradients vanish; "
            "dividing by √d_k brings the variance back to 1.",
        "To make the computation faster":
            "The division is extra work (a little); it is about the size of the scores, not speed.",
        "To normalise the value vectors":
            "The values are not touched: the division acts on the scores QKᵀ, before the softmax.",
    },
)

QK = Choice(
    "qk", "Which vectors are used to compute the attention scores?",
    options=(
        "The queries and the values",
        "The queries and the keys",
        "The keys and the values",
        "The queries, the keys and the values",
    ),
    answer="The queries and the keys",
    why={
        "The queries and the values":
            "The values never meet the queries: they are only mixed, with the weights, after the softmax.",
        "The queries and the keys":
            "The score of query i for key j is the dot product q_i · k_j, so S = QKᵀ. "
            "The values are only mixed afterwards: out_i = Σ_j w_ij v_j.",
        "The keys and the values":
            "Keys are compared with queries, not with values: S = QKᵀ.",
        "The queries, the keys and the values":
            "Only two of them: S = QKᵀ. The values enter after the softmax, in the weighted sum.",
    },
)

CAUSAL = Choice(
    "causal", "What does a causal (decoder) mask block?",
    options=(
        "A token attending to itself",
        "A token attending to the tokens before it",
        "A token attending to the tokens after it (key position j > query position i)",
        "Padding tokens at the end of a short sentence",
    ),
    answer="A token attending to the tokens after it (key position j > query position i)",
    why={
        "A token attending to itself":
            "The diagonal stays allowed: query i may see keys j ≤ i, itself included.",
        "A token attending to the tokens before it":
            "The opposite: the past stays visible, the future is hidden.",
        "A token attending to the tokens after it (key position j > query position i)":
            "Before the softmax, the scores of the future keys (j > i) are set to −∞, so they get weight 0: "
            "a model that writes left to right cannot peek at words it has not written yet.",
        "Padding tokens at the end of a short sentence":
            "That is the key padding mask, a different mask; the causal mask depends only on positions.",
    },
)

COST = Choice(
    "cost", "How does the cost of self-attention grow with the sequence length n?",
    options=(
        "Linearly: twice the tokens, twice the work",
        "Quadratically: twice the tokens, four times the work",
        "Cubically: twice the tokens, eight times the work",
        "It does not depend on n",
    ),
    answer="Quadratically: twice the tokens, four times the work",
    why={
        "Linearly: twice the tokens, twice the work":
            "Every query is compared with every key, so it is n queries × n keys, not n.",
        "Quadratically: twice the tokens, four times the work":
            "The score matrix is n × n: every query meets every key, each a d_k-long dot product "
            "(n²·d_k multiply-adds), and the weights have n² entries too.",
        "Cubically: twice the tokens, eight times the work":
            "There are n² scores, each a dot product of fixed width d_k: n²·d_k, quadratic in n.",
        "It does not depend on n":
            "Every token adds a query row and a key column to the n × n score matrix.",
    },
)

CHOICES: dict[str, Choice] = {q.qid: q for q in (SCALE, QK, CAUSAL, COST)}


# ---------------------------------------------------------------------------------------------
# Ordering the operations for one input word (lesson steps 2-6).

STEPS = (
    "Project: q = x W_q, k = x W_k, v = x W_v",
    "Scores: the query · every key",
    "Scale: divide by √d_k",
    "Softmax along the keys",
    "Weighted sum of the values",
)
"""The operations in the right order (lesson steps 2-6)."""

STEPS_SHOWN = (STEPS[3], STEPS[0], STEPS[4], STEPS[2], STEPS[1])
"""The order in which the options are offered (never the answer)."""

_STEP_WHY = (
    "The query, key and value come first: the scores need queries and keys.",
    "The scores compare this word's query with every key: they need q and K.",
    "The division acts on the raw scores and must happen before the softmax turns them into weights.",
    "The softmax turns the scaled scores of the row into weights that sum to 1.",
    "The output needs the weights: out = Σ_j w_j v_j, a blend of every value.",
)


def grade_order(picked: Sequence[str | None]) -> Feedback:
    """Grade an ordering of :data:`STEPS` (``picked[p]`` = the step chosen for position ``p``).

    Raises:
        ValueError: ``picked`` does not have one entry per step, or an entry is not a step.
    """
    if len(picked) != len(STEPS):
        raise ValueError(f"picked must have {len(STEPS)} entries, got {len(picked)}")
    for p in picked:
        if p is not None and p not in STEPS:
            raise ValueError(f"{p!r} is not one of the steps")
    wrong = [i for i, p in enumerate(picked) if p != STEPS[i]]
    if not wrong:
        return Feedback(True, "**Right.**\n\n" + "\n".join(f"{i + 1}. {w}" for i, w in enumerate(_STEP_WHY)))
    notes = ["**Not quite.**"]
    repeated = sorted({p for p in picked if p is not None and picked.count(p) > 1}, key=STEPS.index)
    if repeated:
        notes.append("Chosen more than once: " + "; ".join(f"*{p}*" for p in repeated) + ".")
    missing = [s for s in STEPS if s not in picked]
    if missing:
        notes.append("Missing: " + "; ".join(f"*{s}*" for s in missing) + ".")
    fixes = [f"- Step {i + 1} should be *{STEPS[i]}*. {_STEP_WHY[i]}" for i in wrong]
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
    """Grade a learner's ``d_head`` for ``d_model`` split into ``n_heads`` heads."""
    d_head = head_width(d_model, n_heads)
    how = (f"d_head = d_model / n_heads = {d_model} / {n_heads} = {d_head}: splitting a "
           f"[n, {d_model}] input into {n_heads} heads gives [{n_heads}, n, {d_head}] "
           "(computed with `attention.split_heads`).")
    if answer == d_head:
        return Feedback(True, f"**Right.** {how}")
    if answer <= 0:
        hint = f"A width counts columns, so it is a positive whole number ({fmt(answer, 0)} is not)."
    elif answer == d_model * n_heads:
        hint = "That multiplies; the heads *split* d_model between them, they do not each get a full copy."
    elif answer == d_model:
        hint = "That is the width of the whole model; each head gets one slice of it."
    elif answer == n_heads:
        hint = "That is the number of heads, not their width."
    else:
        hint = f"{fmt(answer, 0) if float(answer).is_integer() else answer} is not d_model / n_heads."
    return Feedback(False, f"**Not quite.** {hint} {how}")


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
    """Grade a predicted key position against what the core computed."""
    w, s = reveal.weights, reveal.scaled_scores
    top = reveal.best[0]
    tie = f" (tied with position {', '.join(str(j) for j in reveal.best[1:])})" if len(reveal.best) > 1 else ""
    if picked in reveal.best:
        return Feedback(True, f"**Right.** The key at position {picked} gets the largest weight, {fmt(w[picked])}"
                              f"{tie}: its scaled score {fmt(s[picked], 3)} is the highest in the row, and the "
                              "softmax keeps that order.")
    return Feedback(False, f"**Not quite.** The key at position {picked} gets {fmt(w[picked])} (scaled score "
                           f"{fmt(s[picked], 3)}); the largest weight, {fmt(w[top])}, goes to position {top}{tie}, "
                           f"whose scaled score {fmt(s[top], 3)} is the highest in the row. The softmax keeps the "
                           "order of the scores, so the biggest q · k wins.")


# ---------------------------------------------------------------------------------------------
# Predict, then reveal: the top weight when d_k grows and the scores are not scaled.

GROWTH_OPTIONS = ("It goes up", "It goes down", "It stays about the same")
GROWTH_TOLERANCE = 0.01  # a change of the mean top weight below this counts as "about the same"
GROWTH_FACTOR = 16


@dataclass(frozen=True)
class GrowthReveal:
    """Mean largest weight of a row at two widths, unscaled and scaled (:func:`attention.saturation_sweep`).

    ``d_k = (small, large)``; every statistic is a pair in the same order.
    ``example_*``: one sampled query's weights ``[n_keys]`` sorted largest first.
    ``answer`` is one of :data:`GROWTH_OPTIONS`, decided by ``top_unscaled``.
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
    """``"It goes up"``, ``"It goes down"`` or ``"It stays about the same"`` for a change ``before -> after``."""
    if after - before > tolerance:
        return GROWTH_OPTIONS[0]
    if before - after > tolerance:
        return GROWTH_OPTIONS[1]
    return GROWTH_OPTIONS[2]


def growth_reveal(d_k: int, n_keys: int, seed: int, factor: int = GROWTH_FACTOR,
                  n_samples: int = 512) -> GrowthReveal:
    """Measure the top weight at ``d_k`` and ``factor * d_k`` with unit-variance queries and keys.

    The lesson's argument: ``q · k`` of unit-variance d_k-wide vectors has variance d_k, so
    without the ``1/sqrt(d_k)`` the softmax saturates as d_k grows.

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
        w = A.softmax(raw / math.sqrt(d) if scaled else raw)
        return np.sort(w)[::-1]

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
    """Grade a prediction (one of :data:`GROWTH_OPTIONS`) against the measured top weights.

    Raises:
        ValueError: ``picked`` is not one of the options.
    """
    if picked not in GROWTH_OPTIONS:
        raise ValueError(f"{picked!r} is not one of {GROWTH_OPTIONS}")
    (d0, d1), (t0, t1), (s0, s1) = reveal.d_k, reveal.top_unscaled, reveal.score_std_unscaled
    keys = f"{reveal.n_keys} key{'s' if reveal.n_keys != 1 else ''}"
    numbers = (f"Measured over {reveal.n_samples} sampled queries with {keys} each: without "
               f"scaling, the scores' spread (std) goes from {fmt(s0, 2)} at d_k = {d0} to {fmt(s1, 2)} at "
               f"d_k = {d1}, and the mean largest weight from {fmt(t0, 3)} to {fmt(t1, 3)}.")
    if reveal.n_keys == 1:
        why = "With a single key the softmax always gives it weight 1, whatever the scores."
    elif reveal.answer == GROWTH_OPTIONS[0]:
        why = ("Wider vectors give larger dot products (variance d_k), and larger score gaps push the softmax "
               "towards one-hot: the top key takes almost everything.")
    elif reveal.answer == GROWTH_OPTIONS[1]:
        why = "Here the sampled scores happened to spread less, so the softmax got flatter."
    else:
        why = "Here the change is too small to call."
    c0, c1 = reveal.top_scaled
    moves = "moves much less" if abs(c1 - c0) < abs(t1 - t0) else "moves"
    scaled = f" With the division by √d_k it {moves}: {fmt(c0, 3)} → {fmt(c1, 3)}."
    lead = "**Right.**" if picked == reveal.answer else f"**Not quite** — {reveal.answer.lower()}."
    return Feedback(picked == reveal.answer, f"{lead} {numbers} {why}{scaled}")


# ---------------------------------------------------------------------------------------------
# Live numbers for the fixed-answer questions.


def cost_rows(n: int, d_k: int, doublings: int = 3) -> list[dict[str, int]]:
    """Work of one attention head for ``n, 2n, 4n, ...`` tokens: score entries ``n²`` and ``n²·d_k`` multiply-adds.

    Returns one dict per length with ``tokens``, ``score_entries``, ``multiply_adds`` (for ``QKᵀ``)
    and ``times_first`` (work relative to the first row).

    Raises:
        ValueError: ``n`` or ``d_k`` is not a positive integer.
    """
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


@dataclass(frozen=True)
class ScaleNumbers:
    """The sentence's scores with and without the division by √d_k (lesson step 4).

    ``std_*``: standard deviation of all scores; ``top_*``: mean over queries of the largest weight.
    """

    d_k: int
    sqrt_d_k: float
    std_raw: float
    std_scaled: float
    top_raw: float
    top_scaled: float


def scale_numbers(steps: A.AttentionSteps) -> ScaleNumbers:
    """Spread of the scores and mean top weight of ``steps``, unscaled (softmax of ``QKᵀ``) and scaled."""
    d_k = int(steps.Q.shape[-1])
    raw_weights = A.softmax(steps.scores, axis=-1)  # [n, n]: what the weights would be without the division
    return ScaleNumbers(
        d_k=d_k, sqrt_d_k=math.sqrt(d_k),
        std_raw=float(steps.scores.std()), std_scaled=float(steps.scaled_scores.std()),
        top_raw=float(raw_weights.max(axis=-1).mean()), top_scaled=float(steps.weights.max(axis=-1).mean()),
    )


def score_check(steps: A.AttentionSteps, i: int, j: int) -> tuple[float, float]:
    """``(q_i · k_j, scores[i, j])``: the score recomputed from the query and key rows, and the core's value."""
    return float(np.dot(steps.Q[i], steps.K[j])), float(steps.scores[i, j])


def growth_link(reveal: GrowthReveal) -> str:
    """The saturation page preset to question 8's reveal: its larger ``d_k``, its keys and its seed.

    Built by that page's own :func:`explorer.lessons.scaling.model.link`, so every value is one
    the page accepts (``d_k`` to the nearest power of two it offers, the keys clamped to its range).
    """
    return scaling.link(d_k=reveal.d_k[1], n_keys=reveal.n_keys, seed=reveal.seed)
