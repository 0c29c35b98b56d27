"""Sections of the walkthrough: lesson steps 1-6, one query, the ASCII map, the downloads.

Every function takes the page's ``source`` (frozen, so it keys the caches): a
:class:`~explorer.shell.settings.Settings` (lesson worked example 2) or a
:class:`~explorer.lessons.walkthrough.model.LessonExample` (the editable worked example 1). ``init`` (one of
:data:`model.INITS`; ignored for the lesson example's hand-written weights) and ``scaled`` (divide by √d_k in step 4)
are the page's own two switches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons import scaling
from explorer.lessons.walkthrough import model
from explorer.shell import charts, controls, i18n, textviews
from explorer.shell.cache import cached, section
from explorer.shell.i18n import N_, translator
from explorer.shell.settings import Settings
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import dim_labels

_, _n = translator(__name__)

ROLES = {  # the projections' questions (lesson step 2), shown in their charts' titles
    "Q": N_("what am I looking for?"), "K": N_("what do I contain?"), "V": N_("what do I hand over?"),
}


computed = cached(max_entries=16)(model.computed)  # up to 2.1 MiB an entry


@section
def embedding_line(source: Settings, choice: str) -> None:
    """One line: which embeddings the sentence uses, checked on its repeated words (:func:`model.embedding_claim`)."""
    st.caption(model.embedding_claim(source, choice))


@section
def inputs(source: model.Source, init: str) -> None:
    """Steps 1-3 of the lesson: embeddings, projections, scores (one picture, formula, shape and table each)."""
    steps, W, labels, _tokens = computed(source, init)
    n, d_model = steps.X.shape
    d_k, d_v = steps.Q.shape[1], steps.V.shape[1]
    dims = dim_labels(d_model)

    st.header(_("1 · Embeddings X"))
    st.latex(r"X \in \mathbb{R}^{n \times d_{\text{model}}}, \quad \text{"
             + textviews.latex_text(_("one row per token")) + "}")
    st.caption(_("shape [n, d_model] = [{n}, {d_model}]").format(n=n, d_model=d_model))
    charts.show_fig(charts.heatmap(steps.X, labels, dims, kind="diverging", row_name=_("token"), col_name=_("dim"),
                                    title="X"), key="walk_fig_X")
    numbers(steps.X, labels, dims)

    st.header(_("2 · Queries, keys and values"))
    st.latex(r"Q = X W_q,\quad K = X W_k,\quad V = X W_v")
    st.caption(f"W_q, W_k: [d_model, d_k] = [{d_model}, {d_k}] · W_v: [{d_model}, {d_v}] → "
               f"Q, K: [{n}, {d_k}] · V: [{n}, {d_v}]")
    if isinstance(source, Settings):  # the lesson example shows its matrices as editable tables above
        std = model.init_std(init, d_model, d_k)
        st.caption(_("Weights drawn with standard deviation {std} ({init}); measured: the query components have "
                     "variance {var_q}, the key components {var_k}.").format(
            std=textviews.fmt(std, 3), init=_(model.INITS[init]), var_q=textviews.fmt(float(steps.Q.var()), 3),
            var_k=textviews.fmt(float(steps.K.var()), 3)))
        with st.expander(_("The weight matrices W_q, W_k, W_v (drawn from the seed, std {std})").format(
                std=textviews.fmt(std, 3))):
            for col, name in zip(st.columns(3), ("W_q", "W_k", "W_v"), strict=True):
                M = W[name]
                charts.into(col)(charts.heatmap(M, [f"d_model {i}" for i in range(M.shape[0])],
                                                 dim_labels(M.shape[1]), kind="diverging", row_name=_("input dim"),
                                                 col_name=_("output dim"), title=name, max_xticks=12),
                                 key=f"walk_fig_{name}")
    for col, name, M in zip(st.columns(3), "QKV", (steps.Q, steps.K, steps.V), strict=True):
        with col:
            charts.show_fig(charts.heatmap(M, labels, dim_labels(M.shape[1]), kind="diverging", row_name=_("token"),
                                            col_name=_("dim"), title=f"{name}: {_(ROLES[name])}", max_xticks=12),
                            key=f"walk_fig_{name}_proj")
            numbers(M, labels, dim_labels(M.shape[1]))

    st.header(_("3 · Scores"))
    st.latex(r"S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j")
    st.caption(_("shape [n_q, n_k] = [{n}, {n}] · row i: how well query i matches every key").format(n=n))
    charts.show_fig(charts.heatmap(steps.scores, labels, labels, kind="diverging", title=_("scores QKᵀ"),
                                    colorbar_title=_("score")), key="walk_fig_scores")
    numbers(steps.scores, labels, labels)


@section
def attend(source: model.Source, init: str, scaled: bool, color_scale: str = "fixed") -> None:
    """Steps 4-6 of the lesson: scale (or not), softmax, output; every caption measured on these arrays. The
    weights are coloured on ``color_scale`` (:data:`explorer.shell.charts.COLOR_SCALES`)."""
    steps, _W, labels, _tokens = computed(source, init, scaled)
    story = model.scale_story(steps, scaled)
    n, d_k, d_v = story.n, story.d_k, steps.V.shape[1]
    root = f"{np.sqrt(d_k):.4g}"

    if scaled:
        st.latex(rf"\frac{{Q K^\top}}{{\sqrt{{d_k}}}}, \qquad \sqrt{{d_k}} = \sqrt{{{d_k}}} = {root}")
        st.caption(_("shape [{n}, {n}]").format(n=n) + " · " + story.variance_line())
    else:
        off_words = textviews.latex_text(_("switched off: not divided by"))
        st.latex(rf"Q K^\top \quad \text{{({off_words} }} \sqrt{{{d_k}}} = {root}\text{{)}}")
        st.caption(_("shape [{n}, {n}]").format(n=n) + " · "
                   + _("switched off: the softmax gets the scores QKᵀ themselves.") + " " + story.variance_line())
    if story.claim_line():
        st.caption(story.claim_line() + " " + _("The lesson [Why divide by √d_k]({link}) measures the argument on "
                                                "queries and keys with unit-variance components.").format(
            link=controls.link(scaling, d_k=d_k, n_keys=n)))
    charts.show_fig(charts.heatmap(steps.scaled_scores, labels, labels, kind="diverging",
                                    title=_("scaled scores QKᵀ/√d_k") if scaled else _("scores QKᵀ (not divided)"),
                                    colorbar_title=_("score")), key="walk_fig_scaled")
    numbers(steps.scaled_scores, labels, labels)

    st.header(_("5 · Attention weights"))
    arg = r"\frac{q_i\cdot k_j}{\sqrt{d_k}}" if scaled else r"q_i\cdot k_j"
    st.latex(rf"w_{{ij}} = \mathrm{{softmax}}_j\!\left({arg}\right)"
             r" = \frac{e^{s_{ij} - \max_k s_{ik}}}{\sum_{k} e^{s_{ik} - \max_k s_{ik}}}")
    st.caption(_("shape [{n}, {n}] · each row sums to 1 (largest difference from 1 here: {off}) · row = query, "
                 "column = key; top-left = first token looking at the first token").format(
        n=n, off=i18n.scientific(story.row_sum_error)))
    if story.softmax_line():
        st.caption(story.softmax_line())
    charts.show_fig(charts.heatmap(steps.weights, labels, labels, title=_("attention weights"),
                                   color_scale=color_scale), key="walk_fig_weights")
    numbers(steps.weights, labels, labels)
    softmax_check()

    st.header(_("6 · Output"))
    out_word, weights_word = textviews.latex_text(_("output")), textviews.latex_text(_("weights"))
    st.latex(rf"\text{{{out_word}}} = \text{{{weights_word}}}\cdot V, \qquad \text{{out}}_i = \sum_j w_{{ij}}\, v_j")
    st.caption(_("shape [n, d_v] = [{n}, {d_v}] · each row is a blend of all the values").format(n=n, d_v=d_v))
    charts.show_fig(charts.heatmap(steps.output, labels, dim_labels(d_v), kind="diverging", row_name=_("token"),
                                    col_name=_("dim"), title=_("output")), key="walk_fig_output")
    numbers(steps.output, labels, dim_labels(d_v))


def softmax_check() -> None:
    """Step 5's check-yourself moment: the lesson's printed softmax row against the true one (item 2)."""
    check = model.softmax_check()
    logit, row, true_col = _("logit"), _("the lesson's row"), _("true softmax")
    with st.expander(_("✋ Check yourself: is the lesson's softmax row a softmax?")):
        st.markdown(_("One of the lessons prints softmax([{logits}]) = [{printed}]. Before reading on, add up that "
                      "row: a row of attention weights must sum to 1.").format(
            logits=textviews.number_list(check.logits, 1), printed=textviews.number_list(check.printed, 2)))
        digits = {logit: 2, row: 2, true_col: 3}
        frame = pd.DataFrame({logit: check.logits, row: check.printed, true_col: check.true})
        if i18n.current() == i18n.DEFAULT:
            config = {c: st.column_config.NumberColumn(format=f"%.{d}f") for c, d in digits.items()}
        else:  # a decimal comma: the numbers as the language writes them (as explorer.shell.tables.dataframe does)
            frame = pd.DataFrame({c: [textviews.fmt(float(v), d) for v in frame[c]] for c, d in digits.items()})
            config = {c: st.column_config.TextColumn(alignment="right") for c in digits}
        st.dataframe(frame, hide_index=True, width="stretch", column_config=config)
        st.markdown(_("The printed row sums to **{printed_sum}**, so it is not a softmax; the true one is [{true}], "
                      "which sums to {true_sum}.").format(printed_sum=textviews.fmt(sum(check.printed), 2),
                                                          true=textviews.number_list(check.true, 3),
                                                          true_sum=textviews.fmt(sum(check.true), 6)))
        st.markdown(_("Why a row must sum to 1: every weight of the row is e^(its score) divided by the *same* sum, "
                      "the sum of e^(score) over the row, so the weights are shares of one whole. The output is "
                      "then Σⱼ wᵢⱼ vⱼ, a weighted **average** of the values; with weights that summed to 0.90 it "
                      "would come out 10 % shorter than the average those weights stand for."))


@section
def one_query(source: model.Source, init: str, scaled: bool, i: int) -> None:
    """Query ``i``'s scores, weights and weighted sum of the values."""
    steps, _W, labels, _tokens = computed(source, init, scaled)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(_("**Its scores against every key**"))
        dataframe(pd.DataFrame({_("key"): labels, _("score q·k"): steps.scores[i],
                                (_("scaled score") if scaled else _("score (not divided)")): steps.scaled_scores[i],
                                _("weight"): steps.weights[i]}),
                  hide_index=True, width="stretch")
    with c2:
        charts.show_fig(charts.weights_bar(steps.weights[i], labels, query_label=labels[i],
                                            title=_("weights of query {token}").format(token=labels[i])),
                        key="walk_fig_query_bar")
    st.latex(textviews.weighted_sum_latex(labels[i], steps.weights[i], steps.V, steps.output[i]))


@section
def ascii_map(source: model.Source, init: str, scaled: bool) -> None:
    """The lesson's ASCII heat map of the weights, in a copyable code block."""
    steps, _W, _labels, tokens = computed(source, init, scaled)
    st.header(_("The lesson's ASCII heat map"))
    st.caption(_("One character per weight, level = weight · 4 / max weight, characters ' ░▒▓█'. Copy it with the "
                 "button at the top right."))
    st.code(textviews.ascii_heatmap(steps.weights, list(tokens)), language=None)
