"""Sections of the walkthrough: lesson steps 1-6, one query, the ASCII map, the downloads.

Every function takes the page's ``source``: a :class:`~explorer.shell.settings.Settings` (the
sidebar's sentence through ``SelfAttention(d_model, d_k, d_v, seed)``, lesson worked example 2)
or a :class:`LessonExample` (the lesson's editable worked example 1). Both are frozen
dataclasses, so Streamlit's caches key on them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

import attention as A
from explorer.shell import charts, controls, textviews
from explorer.shell.cache import cached, section
from explorer.shell.settings import Settings, token_labels
from explorer.shell.tables import numbers


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
def computed(source: Source) -> tuple[A.AttentionSteps, dict[str, np.ndarray], list[str], tuple[str, ...]]:
    """``(steps, {"W_q", "W_k", "W_v"}, labels, tokens)`` for ``source`` (lesson worked examples 1 and 2)."""
    if isinstance(source, LessonExample):
        steps = A.attention_steps(source.X, source.W_q, source.W_k, source.W_v)
    else:
        steps = controls.sentence_steps(source)  # the cache the quiz uses too
    return steps, source.weight_matrices(), token_labels(source.tokens), tuple(source.tokens)


def dim_labels(width: int) -> list[str]:
    return [f"dim {j}" for j in range(width)]


@section
def pipeline(source: Source) -> None:
    """Steps 1-6 of the lesson: one picture, formula, shape and table per step."""
    steps, W, labels, _ = computed(source)
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
        with st.expander("The weight matrices W_q, W_k, W_v (drawn from the seed)"):
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

    st.header("4 · Scaled scores")
    st.latex(rf"\frac{{Q K^\top}}{{\sqrt{{d_k}}}}, \qquad \sqrt{{d_k}} = \sqrt{{{d_k}}} = {np.sqrt(d_k):.4g}")
    st.caption(f"shape [{n}, {n}] · keeps the scores' variance near 1 so the softmax does not saturate")
    st.plotly_chart(charts.heatmap(steps.scaled_scores, labels, labels, kind="diverging",
                                    title="scaled scores QKᵀ/√d_k", colorbar_title="score"), key="walk_fig_scaled")
    numbers(steps.scaled_scores, labels, labels)

    st.header("5 · Attention weights")
    st.latex(r"w_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i\cdot k_j}{\sqrt{d_k}}\right)"
             r" = \frac{e^{s_{ij} - \max_k s_{ik}}}{\sum_{k} e^{s_{ik} - \max_k s_{ik}}}")
    st.caption(f"shape [{n}, {n}] · each row sums to 1 · row = query, column = key; top-left = first token "
               "looking at the first token")
    st.plotly_chart(charts.heatmap(steps.weights, labels, labels, title="attention weights"), key="walk_fig_weights")
    numbers(steps.weights, labels, labels)

    st.header("6 · Output")
    st.latex(r"\text{output} = \text{weights}\cdot V, \qquad \text{out}_i = \sum_j w_{ij}\, v_j")
    st.caption(f"shape [n, d_v] = [{n}, {d_v}] · each row is a blend of all the values")
    st.plotly_chart(charts.heatmap(steps.output, labels, dim_labels(d_v), kind="diverging", row_name="token",
                                    col_name="dim", title="output"), key="walk_fig_output")
    numbers(steps.output, labels, dim_labels(d_v))


@section
def one_query(source: Source, i: int) -> None:
    """Query ``i``'s scores, weights and weighted sum of the values."""
    steps, _, labels, _ = computed(source)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Its scores against every key**")
        st.dataframe(pd.DataFrame({"key": labels, "score q·k": steps.scores[i],
                                   "scaled score": steps.scaled_scores[i], "weight": steps.weights[i]}),
                     hide_index=True, width="stretch")
    with c2:
        st.plotly_chart(charts.weights_bar(steps.weights[i], labels, query_label=labels[i],
                                            title=f"weights of query {labels[i]}"), key="walk_fig_query_bar")
    st.latex(textviews.weighted_sum_latex(labels[i], steps.weights[i], steps.V, steps.output[i]))


@section
def ascii_map(source: Source) -> None:
    """The lesson's ASCII heat map of the weights, in a copyable code block."""
    steps, _, _, tokens = computed(source)
    st.header("The lesson's ASCII heat map")
    st.caption("One character per weight, level = weight · 4 / max weight, characters ' ░▒▓█'. Copy it with the "
               "button at the top right.")
    st.code(textviews.ascii_heatmap(steps.weights, list(tokens)), language=None)


def csv(source: Source, name: str) -> str:
    """The attention ``"weights"`` ``[n, n]`` or the ``"output"`` ``[n, d_v]`` as CSV with labelled rows."""
    steps, _, labels, _ = computed(source)
    matrix = getattr(steps, name)
    cols = labels if name == "weights" else dim_labels(matrix.shape[1])
    return pd.DataFrame(matrix, index=labels, columns=cols).to_csv()


def scenario_json(source: Source, params: dict) -> str:
    """The whole scenario (parameters, inputs X and W, every intermediate) as JSON."""
    steps, W, _, _ = computed(source)
    scenario = {
        "parameters": params,
        "inputs": {"X": steps.X.tolist(), **{k: np.asarray(v).tolist() for k, v in W.items()}},
        "results": {"Q": steps.Q.tolist(), "K": steps.K.tolist(), "V": steps.V.tolist(),
                    "scores": steps.scores.tolist(), "scaled_scores": steps.scaled_scores.tolist(),
                    "attention_weights": steps.weights.tolist(), "output": steps.output.tolist()},
    }
    return json.dumps(scenario, indent=1, ensure_ascii=False)
