"""Sections of the check-yourself page: the clue of question 7 and the reveals shown after an answer.

The answer widgets, the grading and the feedback stay in the page (they depend on the
session's answers). What is drawn here depends on its arguments alone: ``settings`` is the
sidebar's :class:`~explorer.shell.settings.Settings` (its sentence through
``SelfAttention(d_model, d_k, d_k, seed)``, computed once in :func:`explorer.shell.controls.sentence_steps`).
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

import attention as A
from explorer.lessons import scaling
from explorer.lessons.quiz import charts as quiz_figures
from explorer.lessons.quiz import model as quiz
from explorer.lessons.walkthrough.model import scale_story
from explorer.shell import charts, controls, textviews
from explorer.shell.cache import cached, section
from explorer.shell.i18n import translator
from explorer.shell.settings import Settings
from explorer.shell.tables import dataframe

_, _n = translator(__name__)

growth = cached(max_entries=32)(quiz.growth_reveal)
""":func:`explorer.lessons.quiz.model.growth_reveal`, cached (question 8's numbers, for the grade and the reveal)."""


@section
def order_reveal(settings: Settings, word: int) -> None:
    """Question 1's reveal: the five steps on word ``word`` of the sentence (formula, table, weighted sum)."""
    s, labels, d_k = controls.sentence_steps(settings), settings.labels, settings.d_k
    st.latex(r"q = x W_q,\quad s_j = q\cdot k_j,\quad \tilde s_j = \frac{s_j}{\sqrt{d_k}},\quad "
             r"w = \mathrm{softmax}(\tilde s),\quad \text{out} = \sum_j w_j v_j")
    dataframe(pd.DataFrame({_("key"): labels, _("2 · score q·k"): s.scores[word],
                            _("3 · scaled (÷√{d_k})").format(d_k=d_k): s.scaled_scores[word],
                            _("4 · weight"): s.weights[word]}), hide_index=True, width="stretch")
    st.latex(textviews.weighted_sum_latex(labels[word], s.weights[word], s.V, s.output[word]))


@section
def scale_reveal(settings: Settings) -> None:
    """Question 2's reveal: the spread of the sentence's scores and its top weights, with and without √d_k."""
    num = scale_story(controls.sentence_steps(settings), scaled=True)  # the walkthrough's step 4, measured
    st.markdown(_(
        "**On your sentence** (d_k = {d_k}): the raw scores QKᵀ have a spread (std) of {std_raw}; divided by "
        "√{d_k} = {sqrt_d_k} it is {std_scaled}. The mean largest weight of a row would be {top_raw} without the "
        "division and is {top_scaled} with it. The gap grows with d_k: [see the softmax saturate at d_k = 256]({link})."
    ).format(d_k=num.d_k, std_raw=textviews.fmt(math.sqrt(num.raw_var), 3),
             sqrt_d_k=textviews.fmt(math.sqrt(num.d_k), 3), std_scaled=textviews.fmt(math.sqrt(num.scaled_var), 3),
             top_raw=textviews.fmt(num.top_raw, 3),
             top_scaled=textviews.fmt(num.top_scaled, 3), link=controls.link(scaling, d_k=256)))


@section
def qk_reveal(settings: Settings) -> None:
    """Question 3's reveal: the shapes of Q, Kᵀ, V on the sentence and one score recomputed as q_0 · k_j."""
    n, d_k = settings.n, settings.d_k
    j = min(1, n - 1)
    dot, score = quiz.score_check(controls.sentence_steps(settings), 0, j)
    st.markdown(_("**On your sentence:** Q `[{n}, {d_k}]` · Kᵀ `[{d_k}, {n}]` → scores `[{n}, {n}]`; "
                  "V `[{n}, {d_k}]` appears only in the output, weights `[{n}, {n}]` · V → `[{n}, {d_k}]`. "
                  "Check one score: q_0 · k_{j} = {dot}, and the score matrix holds {score} at row 0, column {j}.")
                .format(n=n, d_k=d_k, j=j, dot=textviews.fmt(dot, 6), score=textviews.fmt(score, 6)))


@section
def head_reveal(d_model: int) -> None:
    """Question 4's reveal: the head counts the sidebar's ``d_model`` allows."""
    heads = A.valid_head_counts(d_model)
    splits = ", ".join(_n("{n} head of width {width}", "{n} heads of width {width}", h).format(n=h, width=d_model // h)
                       for h in heads[:8]) + (" …" if len(heads) > 8 else "")
    st.markdown(_("**Your sidebar's d_model = {d_model}** can be split into {splits} — n_heads must divide d_model.")
                .format(d_model=d_model, splits=splits))


@section
def causal_reveal(settings: Settings, color_scale: str = "fixed") -> None:
    """Question 5's reveal: the blocked pairs, the masked softmax and the sentence's masked weights (coloured on
    ``color_scale``, :data:`explorer.shell.charts.COLOR_SCALES`)."""
    labels = settings.labels
    blocked, total = quiz.causal_counts(len(labels))
    causal = controls.sentence_steps(settings, is_causal=True)
    st.markdown(_("**On your sentence:** {blocked} of the {total} query–key pairs are blocked (the cells right of "
                  "the diagonal, marked ×): query i keeps keys 0 … i, and each row still sums to 1.")
                .format(blocked=blocked, total=total))
    st.latex(r"w_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i\cdot k_j}{\sqrt{d_k}} + M_{ij}\right), \qquad "
             r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}")
    charts.show_fig(charts.heatmap(causal.weights, labels, labels, mask=causal.mask,
                                    title=_("attention weights with the causal mask"), color_scale=color_scale),
                    key="quiz_fig_causal")


@section
def cost_reveal(n: int, d_k: int) -> None:
    """Question 6's reveal: the work of the scores for ``n``, 2n, 4n, 8n tokens."""
    st.markdown(_("**From your sentence's length** (n = {n}, d_k = {d_k}): the score matrix has n × n entries.")
                .format(n=n, d_k=d_k))
    st.dataframe(pd.DataFrame(quiz.cost_rows(n, d_k)).rename(columns={
        "tokens": _("tokens n"), "score_entries": _("scores n²"), "multiply_adds": _("multiply-adds for QKᵀ (n²·d_k)"),
        "times_first": _("× the work at n = {n}").format(n=n)}), hide_index=True, width="stretch")


@section
def topkey_clue(settings: Settings, query: int) -> None:
    """Question 7's clue: the score formula and query ``query``'s vector above every key."""
    s, labels = controls.sentence_steps(settings), settings.labels
    st.latex(r"s_j = q \cdot k_j = \sum_{d} q_d\, k_{j,d}, \qquad "
             r"w = \mathrm{softmax}\!\left(\frac{s}{\sqrt{d_k}}\right)")
    charts.show_fig(quiz_figures.query_and_keys(s.Q[query], s.K, labels[query], labels), key="quiz_fig_clue")
    st.caption(" · ".join((
        _n("rows: the query then the {n} key", "rows: the query then the {n} keys", len(labels)).format(n=len(labels)),
        _n("columns: the d_k = {n} dimension", "columns: the d_k = {n} dimensions", settings.d_k).format(
            n=settings.d_k),
        _("the key whose row points most the query's way gets the largest score"))))


@section
def topkey_reveal(settings: Settings, query: int, picked: int) -> None:
    """Question 7's reveal for the ``settings`` answered with: query ``query``'s weights, and its row of numbers."""
    rv, shown = quiz.reveal_top_key(controls.sentence_steps(settings), query), settings.labels
    title = _("weights of query {token}").format(token=shown[rv.query])
    charts.show_fig(charts.weights_bar(rv.weights, shown, query_label=shown[rv.query], title=title),
                    key="quiz_fig_topkey")
    dataframe(pd.DataFrame({
        _("key"): shown, _("score q·k"): rv.scores, _("scaled score"): rv.scaled_scores, _("weight"): rv.weights,
        "": [_("your prediction") if j == picked else "" for j in range(len(shown))],
    }), hide_index=True, width="stretch")


@section
def growth_reveal(d_k: int, n_keys: int, seed: int) -> None:
    """Question 8's reveal: the top weight at ``d_k`` and 16 × ``d_k``, measured (see :data:`growth`)."""
    rv = growth(d_k, n_keys, seed)
    st.latex(r"\operatorname{Var}(q\cdot k) = d_k \;\Rightarrow\; \operatorname{std}(q\cdot k) = \sqrt{d_k}, "
             r"\qquad \operatorname{std}\!\left(\tfrac{q\cdot k}{\sqrt{d_k}}\right) = 1")
    charts.show_fig(quiz_figures.growth_bars(rv.example_small_unscaled, rv.example_large_unscaled,
                                             rv.example_large_scaled, rv.d_k), key="quiz_fig_growth")
    st.caption(_n("One sampled query with {n} key (seed {seed}); the table averages {samples} queries per width.",
                  "One sampled query with {n} keys (seed {seed}); the table averages {samples} queries per width.",
                  rv.n_keys).format(n=rv.n_keys, seed=rv.seed, samples=rv.n_samples))
    dataframe(pd.DataFrame({
        "d_k": list(rv.d_k), _("score std, not scaled"): list(rv.score_std_unscaled),
        _("mean top weight, not scaled"): list(rv.top_unscaled), _("mean top weight, scaled"): list(rv.top_scaled),
    }), hide_index=True, width="stretch")
    st.markdown(_("[Sweep d_k yourself on the saturation page]({link}) (it opens with these settings where it allows "
                  "them).").format(link=controls.link(scaling, **quiz.growth_link_values(rv))))
