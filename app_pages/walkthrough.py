"""Page: self-attention computed step by step, on the lesson's example or on your sentence."""

import json

import numpy as np
import pandas as pd
import streamlit as st

import attention as A
from app import figures, scenarios, state, textviews

st.title("Self-attention, step by step")
st.markdown(
    "Each token asks a **query** (*what am I looking for?*), offers a **key** (*what do I contain?*) "
    "and a **value** (*what do I hand over?*). Follow one formula from the embeddings to the output:"
)
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")

LESSON, SENTENCE = "Lesson example", "Your sentence"
source = st.segmented_control(
    "Input", [SENTENCE, LESSON], default=SENTENCE, key="walk_input", bind="query-params",
    help="Your sentence: the sidebar's sentence through SelfAttention(d_model, d_k, d_v, seed). "
         "Lesson example: the lesson's 3-word example with hand-written matrices you can edit.",
) or SENTENCE

MATRICES = ("X", "W_q", "W_k", "W_v")


def lesson_inputs() -> tuple[dict[str, np.ndarray], list[str]]:
    """Editable lesson matrices; returns the last valid set and the problems found."""
    ex = A.PIPELINE_EXAMPLE
    version = st.session_state.setdefault("walk_edit_version", 0)
    st.markdown("Edit any cell; the whole computation below follows. Row-vector convention: "
                "`Q = X @ W_q` with `W_q` of shape `[d_model, d_k]`. (The sidebar's controls apply to "
                "*Your sentence*; this example is fixed at 3 words and d = 4.)")
    if st.button("↺ Restore the lesson's values", key="walk_restore"):
        st.session_state["walk_edit_version"] = version + 1
        st.session_state.pop("walk_last_valid", None)
        st.rerun()
    edited, problems = {}, []
    cols = [c for _ in range(2) for c in st.columns(2)]  # a 2 x 2 grid: X, W_q / W_k, W_v
    for col, name in zip(cols, MATRICES, strict=True):
        base = getattr(ex, name)
        index = list(ex.tokens) if name == "X" else [f"d_model {i}" for i in range(base.shape[0])]
        frame = pd.DataFrame(base, index=index, columns=[f"{'dim' if name == 'X' else 'col'} {j}"
                                                         for j in range(base.shape[1])])
        with col:
            st.markdown(f"**{name}** `{list(base.shape)}`")
            df = st.data_editor(
                frame, key=f"walk_edit_{name}_{version}", num_rows="fixed", width="stretch",
                column_config={c: st.column_config.NumberColumn(c, format="%.3f", step=0.001) for c in frame.columns},
            )
        values = df.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        bad = scenarios.ragged_cells(values)
        problems += [f"{name}: the cell in row {frame.index[r]!s}, column {frame.columns[c]!s} "
                     f"must be a finite number" for r, c in bad[:5]]
        edited[name] = values
    if not problems:
        st.session_state["walk_last_valid"] = edited
    return st.session_state.get("walk_last_valid", {m: getattr(ex, m) for m in MATRICES}), problems


if source == LESSON:
    mats, problems = lesson_inputs()
    if problems:
        st.error("**Some cells cannot be used**, so the results below are the last valid ones:\n\n"
                 + "\n".join(f"- {p}" for p in problems), icon="✋")
    steps = A.attention_steps(mats["X"], mats["W_q"], mats["W_k"], mats["W_v"])
    labels = [f"{t} ({i})" for i, t in enumerate(A.PIPELINE_EXAMPLE.tokens)]
    tokens = list(A.PIPELINE_EXAMPLE.tokens)
    params = {"input": "lesson pipeline example", "d_model": 4, "d_k": 4, "d_v": 4}
    weight_mats = mats
else:
    sh = state.shared()
    inp = state.sentence_input("to see attention at work")
    steps = state.sentence_steps(inp.tokens, sh.d_model, sh.d_k, sh.seed, sh.embedding, sh.pe)
    labels, tokens = inp.labels, list(inp.tokens)
    params = {"input": "sentence", "sentence": sh.sentence, "tokens": tokens, "embedding": sh.embedding,
              "positional_encoding": sh.pe, "seed": sh.seed, "d_model": sh.d_model, "d_k": sh.d_k, "d_v": sh.d_v}
    layer = A.SelfAttention(sh.d_model, sh.d_k, sh.d_v, seed=sh.seed)
    weight_mats = {"W_q": layer.W_q, "W_k": layer.W_k, "W_v": layer.W_v}
    st.caption(f"{len(tokens)} tokens · d_model = {sh.d_model} · d_k = d_v = {sh.d_k} · seed = {sh.seed} · "
               f"embeddings: {sh.embedding}{' + positional encoding' if sh.pe else ''}")

n, d_model = steps.X.shape
d_k, d_v = steps.Q.shape[1], steps.V.shape[1]
dims = [f"dim {j}" for j in range(d_model)]


def numbers(matrix: np.ndarray, rows, cols) -> None:
    """The exact numbers behind a picture, in a table a learner can copy."""
    with st.expander("Numbers"):
        st.dataframe(pd.DataFrame(matrix, index=rows, columns=cols), width="stretch")


def dim_labels(width: int) -> list[str]:
    return [f"dim {j}" for j in range(width)]


st.header("1 · Embeddings X")
st.latex(r"X \in \mathbb{R}^{n \times d_{\text{model}}}, \quad \text{one row per token}")
st.caption(f"shape [n, d_model] = [{n}, {d_model}]")
st.plotly_chart(figures.heatmap(steps.X, labels, dims, kind="diverging", row_name="token", col_name="dim",
                                title="X"), key="walk_fig_X")
numbers(steps.X, labels, dims)

st.header("2 · Queries, keys and values")
st.latex(r"Q = X W_q,\quad K = X W_k,\quad V = X W_v")
st.caption(f"W_q, W_k: [d_model, d_k] = [{d_model}, {d_k}] · W_v: [{d_model}, {d_v}] → "
           f"Q, K: [{n}, {d_k}] · V: [{n}, {d_v}]")
if source == SENTENCE:
    with st.expander("The weight matrices W_q, W_k, W_v (drawn from the seed)"):
        wcols = st.columns(3)
        for col, name in zip(wcols, ("W_q", "W_k", "W_v"), strict=True):
            W = weight_mats[name]
            col.plotly_chart(figures.heatmap(W, [f"d_model {i}" for i in range(W.shape[0])], dim_labels(W.shape[1]),
                                             kind="diverging", row_name="input dim", col_name="output dim",
                                             title=name, max_xticks=12), key=f"walk_fig_{name}")
qkv_cols = st.columns(3)
for col, name, M, role in zip(qkv_cols, "QKV", (steps.Q, steps.K, steps.V),
                              ("what am I looking for?", "what do I contain?", "what do I hand over?"), strict=True):
    with col:
        st.plotly_chart(figures.heatmap(M, labels, dim_labels(M.shape[1]), kind="diverging", row_name="token",
                                        col_name="dim", title=f"{name}: {role}", max_xticks=12),
                        key=f"walk_fig_{name}_proj")
        numbers(M, labels, dim_labels(M.shape[1]))

st.header("3 · Scores")
st.latex(r"S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j")
st.caption(f"shape [n_q, n_k] = [{n}, {n}] · row i: how well query i matches every key")
st.plotly_chart(figures.heatmap(steps.scores, labels, labels, kind="diverging", title="scores QKᵀ",
                                colorbar_title="score"), key="walk_fig_scores")
numbers(steps.scores, labels, labels)

st.header("4 · Scaled scores")
st.latex(rf"\frac{{Q K^\top}}{{\sqrt{{d_k}}}}, \qquad \sqrt{{d_k}} = \sqrt{{{d_k}}} = {np.sqrt(d_k):.4g}")
st.caption(f"shape [{n}, {n}] · keeps the scores' variance near 1 so the softmax does not saturate")
st.plotly_chart(figures.heatmap(steps.scaled_scores, labels, labels, kind="diverging",
                                title="scaled scores QKᵀ/√d_k", colorbar_title="score"), key="walk_fig_scaled")
numbers(steps.scaled_scores, labels, labels)

st.header("5 · Attention weights")
st.latex(r"w_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i\cdot k_j}{\sqrt{d_k}}\right)"
         r" = \frac{e^{s_{ij} - \max_k s_{ik}}}{\sum_{k} e^{s_{ik} - \max_k s_{ik}}}")
st.caption(f"shape [{n}, {n}] · each row sums to 1 · row = query, column = key; top-left = first token "
           "looking at the first token")
st.plotly_chart(figures.heatmap(steps.weights, labels, labels, title="attention weights"), key="walk_fig_weights")
numbers(steps.weights, labels, labels)

st.header("6 · Output")
st.latex(r"\text{output} = \text{weights}\cdot V, \qquad \text{out}_i = \sum_j w_{ij}\, v_j")
st.caption(f"shape [n, d_v] = [{n}, {d_v}] · each row is a blend of all the values")
st.plotly_chart(figures.heatmap(steps.output, labels, dim_labels(d_v), kind="diverging", row_name="token",
                                col_name="dim", title="output"), key="walk_fig_output")
numbers(steps.output, labels, dim_labels(d_v))

st.header("One query at a time")
if st.session_state.get("walk_query") not in labels:  # a new sentence: start from its first token
    st.session_state["walk_query"] = labels[0]
query = st.selectbox("Query token", labels, key="walk_query", bind="query-params")
state.check_link("walk_query", query, "one of the sentence's tokens, as 'token (position)'")
i = labels.index(query)
c1, c2 = st.columns(2)
with c1:
    st.markdown("**Its scores against every key**")
    st.dataframe(pd.DataFrame({"key": labels, "score q·k": steps.scores[i],
                               "scaled score": steps.scaled_scores[i], "weight": steps.weights[i]}),
                 hide_index=True, width="stretch")
with c2:
    st.plotly_chart(figures.weights_bar(steps.weights[i], labels, query_label=labels[i],
                                        title=f"weights of query {labels[i]}"), key="walk_fig_query_bar")
st.latex(textviews.weighted_sum_latex(labels[i], steps.weights[i], steps.V, steps.output[i]))

st.header("The lesson's ASCII heat map")
st.caption("One character per weight, level = weight · 4 / max weight, characters ' ░▒▓█'. Copy it with the "
           "button at the top right.")
st.code(textviews.ascii_heatmap(steps.weights, tokens), language=None)

st.header("Download")
d1, d2, d3 = st.columns(3)
d1.download_button("Attention weights (CSV)", pd.DataFrame(steps.weights, index=labels, columns=labels).to_csv(),
                   "attention_weights.csv", "text/csv", key="walk_dl_weights")
d2.download_button("Output (CSV)", pd.DataFrame(steps.output, index=labels, columns=dim_labels(d_v)).to_csv(),
                   "attention_output.csv", "text/csv", key="walk_dl_output")
scenario = {
    "parameters": params,
    "inputs": {"X": steps.X.tolist(), **{k: np.asarray(v).tolist() for k, v in weight_mats.items() if k != "X"}},
    "results": {"Q": steps.Q.tolist(), "K": steps.K.tolist(), "V": steps.V.tolist(),
                "scores": steps.scores.tolist(), "scaled_scores": steps.scaled_scores.tolist(),
                "attention_weights": steps.weights.tolist(), "output": steps.output.tolist()},
}
d3.download_button("Whole scenario (JSON)", json.dumps(scenario, indent=1, ensure_ascii=False),
                   "attention_scenario.json", "application/json", key="walk_dl_json")
