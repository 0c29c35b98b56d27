"""Sections of the walkthrough: lesson steps 1-6, one query, the ASCII map, the downloads.

Every function takes the page's ``source``: a :class:`~explorer.shell.settings.Settings` (the
sidebar's sentence through ``SelfAttention(d_model, d_k, d_v, seed)``, lesson worked example 2)
or a :class:`LessonExample` (the lesson's editable worked example 1). Both are frozen
dataclasses, so Streamlit's caches key on them. ``init`` (one of :data:`model.INITS`; the
sentence's weight initialisation, ignored for the lesson example's hand-written weights) and
``scaled`` (divide by √d_k in step 4) are the page's own two switches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

import attention as A
from explorer.lessons.scaling.model import link as scaling_link
from explorer.lessons.walkthrough import model
from explorer.shell import charts, controls, textviews
from explorer.shell.cache import cached, section
from explorer.shell.settings import Settings, token_labels
from explorer.shell.tables import dataframe, numbers


@dataclass(frozen=True)
class LessonExample:
    """The lesson's pipeline example (worked example 1) as the learner edited it: ``X [3, 4]``, ``W_* [4, 4]``."""

    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(A.PIPELINE_EXAMPLE.tokens)

    def weight_matrices(self) -> dict[str, np.ndarray]:
        return {"W_q": self.W_q, "W_k": self.W_k, "W_v": self.W_v}


Source = Settings | LessonExample


@cached(max_entries=16)  # up to 2.1 MiB an entry
def computed(source: Source, init: str = model.DEFAULT_INIT, scaled: bool = True
             ) -> tuple[A.AttentionSteps, dict[str, np.ndarray], list[str], tuple[str, ...]]:
    """``(steps, {"W_q", "W_k", "W_v"}, labels, tokens)`` for ``source`` (lesson worked examples 1 and 2).

    ``init`` draws the sentence's weights (:func:`model.weight_matrices`; the lesson example keeps its
    hand-written ones); ``scaled=False`` leaves out the division by √d_k (:func:`model.steps`).
    """
    if isinstance(source, LessonExample):
        W = source.weight_matrices()
        steps = model.steps(source.X, W["W_q"], W["W_k"], W["W_v"], scaled)
    elif init == model.DEFAULT_INIT and scaled:
        W = source.weight_matrices()
        steps = controls.sentence_steps(source)  # the cache the quiz uses too
    else:
        W = model.weight_matrices(source.d_model, source.d_k, source.d_v, source.seed, init)
        steps = model.steps(source.X, W["W_q"], W["W_k"], W["W_v"], scaled)
    return steps, W, token_labels(source.tokens), tuple(source.tokens)


def dim_labels(width: int) -> list[str]:
    return [f"dim {j}" for j in range(width)]


@section
def embedding_line(source: Settings, choice: str) -> None:
    """One line: which embeddings the sentence uses and what that means, checked on its repeated words (item 3).

    ``choice`` is the sidebar's value (``"auto"``, ``"lesson"`` or ``"per-token"``); ``source.embedding`` is
    what it resolved to for this sentence.
    """
    why = {"auto": "auto: " + ("this is the lesson's sentence" if source.embedding == "lesson" else
                               "a sentence of your own")}.get(choice, "chosen in the sidebar")
    if source.embedding == "per-token":
        text = (f"Embeddings: per-token ({why}): each distinct word has its own vector, so copies of a word "
                "get identical rows of X, Q, K and V.")
    else:
        text = (f"Embeddings: the lesson's random rows ({why}): row i is the i-th random draw, so a row belongs "
                "to its position, not to its word (copies of a word get different rows).")
    repeats = model.repeated_word_rows(source.tokens, source.X)
    if repeats:
        shown = repeats[:3]
        pairs = ", ".join(f"{model.md_code(word)} ({i}) and ({j})" for word, i, j, _ in shown)
        more = f" (and {textviews.count(len(repeats) - len(shown), 'more copy', 'more copies')})" if len(
            repeats) > len(shown) else ""
        diff = max(d for *_, d in shown)
        if diff == 0:
            text += f" Here {pairs}{more}: identical rows."
        elif source.embedding == "per-token" and source.positional:
            text += (f" With positional encoding added, copies differ by their positions' encodings: {pairs}{more} "
                     f"differ by up to {textviews.fmt(diff, 3)} per entry of X, so their rows of Q, K and V differ "
                     "too.")
        else:
            text += f" Here {pairs}{more} differ by up to {textviews.fmt(diff, 3)} per entry of X."
    st.caption(text)


@section
def inputs(source: Source, init: str) -> None:
    """Steps 1-3 of the lesson: embeddings, projections, scores (one picture, formula, shape and table each)."""
    steps, W, labels, _ = computed(source, init)
    n, d_model = steps.X.shape
    d_k, d_v = steps.Q.shape[1], steps.V.shape[1]
    dims = dim_labels(d_model)

    st.header("1 · Embeddings X")
    st.latex(r"X \in \mathbb{R}^{n \times d_{\text{model}}}, \quad \text{one row per token}")
    st.caption(f"shape [n, d_model] = [{n}, {d_model}]")
    st.plotly_chart(charts.heatmap(steps.X, labels, dims, kind="diverging", row_name="token", col_name="dim",
                                    title="X"), key="walk_fig_X")
    numbers(steps.X, labels, dims)

    st.header("2 · Queries, keys and values")
    st.latex(r"Q = X W_q,\quad K = X W_k,\quad V = X W_v")
    st.caption(f"W_q, W_k: [d_model, d_k] = [{d_model}, {d_k}] · W_v: [{d_model}, {d_v}] → "
               f"Q, K: [{n}, {d_k}] · V: [{n}, {d_v}]")
    if isinstance(source, Settings):  # the lesson example shows its matrices as editable tables above
        std = model.init_std(init, d_model, d_k)
        st.caption(f"Weights drawn with standard deviation {textviews.fmt(std, 3)} ({model.INITS[init]}); "
                   f"measured: the query components have variance {textviews.fmt(float(steps.Q.var()), 3)}, the "
                   f"key components {textviews.fmt(float(steps.K.var()), 3)}.")
        with st.expander(f"The weight matrices W_q, W_k, W_v (drawn from the seed, std {textviews.fmt(std, 3)})"):
            wcols = st.columns(3)
            for col, name in zip(wcols, ("W_q", "W_k", "W_v"), strict=True):
                M = W[name]
                col.plotly_chart(charts.heatmap(M, [f"d_model {i}" for i in range(M.shape[0])],
                                                 dim_labels(M.shape[1]), kind="diverging", row_name="input dim",
                                                 col_name="output dim", title=name, max_xticks=12),
                                 key=f"walk_fig_{name}")
    qkv_cols = st.columns(3)
    for col, name, M, role in zip(qkv_cols, "QKV", (steps.Q, steps.K, steps.V),
                                  ("what am I looking for?", "what do I contain?", "what do I hand over?"),
                                  strict=True):
        with col:
            st.plotly_chart(charts.heatmap(M, labels, dim_labels(M.shape[1]), kind="diverging", row_name="token",
                                            col_name="dim", title=f"{name}: {role}", max_xticks=12),
                            key=f"walk_fig_{name}_proj")
            numbers(M, labels, dim_labels(M.shape[1]))

    st.header("3 · Scores")
    st.latex(r"S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j")
    st.caption(f"shape [n_q, n_k] = [{n}, {n}] · row i: how well query i matches every key")
    st.plotly_chart(charts.heatmap(steps.scores, labels, labels, kind="diverging", title="scores QKᵀ",
                                    colorbar_title="score"), key="walk_fig_scores")
    numbers(steps.scores, labels, labels)


@section
def attend(source: Source, init: str, scaled: bool, color_scale: str = "fixed") -> None:
    """Steps 4-6 of the lesson: scale (or not), softmax, output; every caption measured on these arrays. The
    weights are coloured on ``color_scale`` (:data:`explorer.shell.charts.COLOR_SCALES`)."""
    steps, _, labels, _ = computed(source, init, scaled)
    story = model.scale_story(steps, scaled)
    n, d_k, d_v = story.n, story.d_k, steps.V.shape[1]
    root = f"{np.sqrt(d_k):.4g}"

    if scaled:
        st.latex(rf"\frac{{Q K^\top}}{{\sqrt{{d_k}}}}, \qquad \sqrt{{d_k}} = \sqrt{{{d_k}}} = {root}")
        st.caption(f"shape [{n}, {n}] · " + story.variance_line())
    else:
        st.latex(rf"Q K^\top \quad \text{{(switched off: not divided by }} \sqrt{{{d_k}}} = {root}\text{{)}}")
        st.caption(f"shape [{n}, {n}] · switched off: the softmax gets the scores QKᵀ themselves. "
                   + story.variance_line())
    if story.claim_line():
        st.caption(story.claim_line() + f" The lesson [Why divide by √d_k]({scaling_link(d_k=d_k, n_keys=n)}) "
                   "measures the argument on queries and keys with unit-variance components.")
    st.plotly_chart(charts.heatmap(steps.scaled_scores, labels, labels, kind="diverging",
                                    title="scaled scores QKᵀ/√d_k" if scaled else "scores QKᵀ (not divided)",
                                    colorbar_title="score"), key="walk_fig_scaled")
    numbers(steps.scaled_scores, labels, labels)

    st.header("5 · Attention weights")
    arg = r"\frac{q_i\cdot k_j}{\sqrt{d_k}}" if scaled else r"q_i\cdot k_j"
    st.latex(rf"w_{{ij}} = \mathrm{{softmax}}_j\!\left({arg}\right)"
             r" = \frac{e^{s_{ij} - \max_k s_{ik}}}{\sum_{k} e^{s_{ik} - \max_k s_{ik}}}")
    off = float(np.abs(steps.weights.sum(axis=-1) - 1).max())
    st.caption(f"shape [{n}, {n}] · each row sums to 1 (largest difference from 1 here: {off:.1e}) · row = query, "
               "column = key; top-left = first token looking at the first token")
    if story.softmax_line():
        st.caption(story.softmax_line())
    st.plotly_chart(charts.heatmap(steps.weights, labels, labels, title="attention weights",
                                   color_scale=color_scale), key="walk_fig_weights")
    numbers(steps.weights, labels, labels)
    softmax_check()

    st.header("6 · Output")
    st.latex(r"\text{output} = \text{weights}\cdot V, \qquad \text{out}_i = \sum_j w_{ij}\, v_j")
    st.caption(f"shape [n, d_v] = [{n}, {d_v}] · each row is a blend of all the values")
    st.plotly_chart(charts.heatmap(steps.output, labels, dim_labels(d_v), kind="diverging", row_name="token",
                                    col_name="dim", title="output"), key="walk_fig_output")
    numbers(steps.output, labels, dim_labels(d_v))


def softmax_check() -> None:
    """Step 5's check-yourself moment: the lesson's printed softmax row against the true one (item 2)."""
    check = model.softmax_check()
    logits = ", ".join(f"{z:.1f}" for z in check.logits)
    printed = ", ".join(f"{p:.2f}" for p in check.printed)
    with st.expander("✋ Check yourself: is the lesson's softmax row a softmax?"):
        st.markdown(f"One of the lessons prints softmax([{logits}]) = [{printed}]. Before reading on, add up that "
                    "row: a row of attention weights must sum to 1.")
        st.dataframe(pd.DataFrame({"logit": check.logits, "the lesson's row": check.printed,
                                   "true softmax": check.true}),
                     hide_index=True, width="stretch",
                     column_config={"logit": st.column_config.NumberColumn(format="%.2f"),
                                    "the lesson's row": st.column_config.NumberColumn(format="%.2f"),
                                    "true softmax": st.column_config.NumberColumn(format="%.3f")})
        true = ", ".join(f"{w:.3f}" for w in check.true)
        st.markdown(f"The printed row sums to **{check.printed_sum:.2f}**, so it is not a softmax; the true one is "
                    f"[{true}], which sums to {check.true_sum:.6f}.")
        st.markdown("Why a row must sum to 1: every weight of the row is e^(its score) divided by the *same* sum, "
                    "the sum of e^(score) over the row, so the weights are shares of one whole. The output is "
                    "then Σⱼ wᵢⱼ vⱼ, a weighted **average** of the values; with weights that summed to 0.90 it would "
                    "come out 10 % shorter than the average those weights stand for.")


@section
def one_query(source: Source, init: str, scaled: bool, i: int) -> None:
    """Query ``i``'s scores, weights and weighted sum of the values."""
    steps, _, labels, _ = computed(source, init, scaled)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Its scores against every key**")
        dataframe(pd.DataFrame({"key": labels, "score q·k": steps.scores[i],
                                   ("scaled score" if scaled else "score (not divided)"): steps.scaled_scores[i],
                                   "weight": steps.weights[i]}),
                     hide_index=True, width="stretch")
    with c2:
        st.plotly_chart(charts.weights_bar(steps.weights[i], labels, query_label=labels[i],
                                            title=f"weights of query {labels[i]}"), key="walk_fig_query_bar")
    st.latex(textviews.weighted_sum_latex(labels[i], steps.weights[i], steps.V, steps.output[i]))


@section
def ascii_map(source: Source, init: str, scaled: bool) -> None:
    """The lesson's ASCII heat map of the weights, in a copyable code block."""
    steps, _, _, tokens = computed(source, init, scaled)
    st.header("The lesson's ASCII heat map")
    st.caption("One character per weight, level = weight · 4 / max weight, characters ' ░▒▓█'. Copy it with the "
               "button at the top right.")
    st.code(textviews.ascii_heatmap(steps.weights, list(tokens)), language=None)


def csv(source: Source, init: str, scaled: bool, name: str) -> str:
    """The attention ``"weights"`` ``[n, n]`` or the ``"output"`` ``[n, d_v]`` as CSV with labelled rows."""
    steps, _, labels, _ = computed(source, init, scaled)
    matrix = getattr(steps, name)
    cols = labels if name == "weights" else dim_labels(matrix.shape[1])
    return pd.DataFrame(matrix, index=labels, columns=cols).to_csv()


def scenario_json(source: Source, init: str, scaled: bool, params: dict) -> str:
    """The whole scenario (parameters, inputs X and W, every intermediate) as JSON."""
    steps, W, _, _ = computed(source, init, scaled)
    scenario = {
        "parameters": params,
        "inputs": {"X": steps.X.tolist(), **{k: np.asarray(v).tolist() for k, v in W.items()}},
        "results": {"Q": steps.Q.tolist(), "K": steps.K.tolist(), "V": steps.V.tolist(),
                    "scores": steps.scores.tolist(), "scaled_scores": steps.scaled_scores.tolist(),
                    "attention_weights": steps.weights.tolist(), "output": steps.output.tolist()},
    }
    return json.dumps(scenario, indent=1, ensure_ascii=False)
