"""Page: self-attention computed step by step, on the lesson's example or on your sentence."""

import numpy as np
import pandas as pd
import streamlit as st

import attention as A
from explorer.lessons.walkthrough import draw
from explorer.lessons.walkthrough.draw import LessonExample
from explorer.shell import controls, settings

st.title("Self-attention, step by step")
st.markdown(
    "Each token asks a **query** (*what am I looking for?*), offers a **key** (*what do I contain?*) "
    "and a **value** (*what do I hand over?*). Follow one formula from the embeddings to the output:"
)
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")

LESSON, SENTENCE = "Lesson example", "Your sentence"
controls.refuse_unusable("walk_input", lambda raw: raw in (SENTENCE, LESSON))  # "" would select nothing
source = st.segmented_control(
    "Input", [SENTENCE, LESSON], default=SENTENCE, key="walk_input", bind="query-params", required=True,
    help="Your sentence: the sidebar's sentence through SelfAttention(d_model, d_k, d_v, seed). "
         "Lesson example: the lesson's 3-word example with hand-written matrices you can edit.",
) or SENTENCE
controls.check_link("walk_input", source, f"one of '{SENTENCE}', '{LESSON}'")

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
        bad = settings.ragged_cells(values)
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
    source = LessonExample(*(np.asarray(mats[m], dtype=float) for m in MATRICES))
    params = {"input": "lesson pipeline example", "d_model": 4, "d_k": 4, "d_v": 4}
else:
    source = controls.lesson_settings("to see attention at work")
    params = {"input": "sentence", "sentence": controls.shared().sentence, "tokens": list(source.tokens),
              "embedding": source.embedding, "positional": source.positional, "seed": source.seed,
              "d_model": source.d_model, "d_k": source.d_k, "d_v": source.d_v}
    st.caption(source.caption())
labels = settings.token_labels(source.tokens)

draw.pipeline(source)

st.header("One query at a time")
query = controls.token_picker("Query token", labels, "walk_query")
draw.one_query(source, query)
draw.ascii_map(source)

st.header("Download")
# The files are written only when the learner clicks (deferred data), and a click does not rerun the page
# (on_click="ignore"): a rerun would replace the buttons' deferred files while a download is being fetched.
d1, d2, d3 = st.columns(3)
d1.download_button("Attention weights (CSV)", lambda: draw.csv(source, "weights"),
                   "attention_weights.csv", "text/csv", key="walk_dl_weights", on_click="ignore")
d2.download_button("Output (CSV)", lambda: draw.csv(source, "output"),
                   "attention_output.csv", "text/csv", key="walk_dl_output", on_click="ignore")
d3.download_button("Whole scenario (JSON)", lambda: draw.scenario_json(source, params),
                   "attention_scenario.json", "application/json", key="walk_dl_json", on_click="ignore")
