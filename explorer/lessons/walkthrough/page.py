"""Page: self-attention computed step by step, on the lesson's example or on your sentence."""

import numpy as np
import pandas as pd
import streamlit as st

import attention as A
from explorer.lessons.walkthrough import CONTROLS, LESSON, draw
from explorer.lessons.walkthrough import model as W
from explorer.lessons.walkthrough.model import LessonExample
from explorer.shell import controls, i18n, settings, textviews
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names the domain

st.title(_("Self-attention, step by step"))
st.markdown(_(
    "Each token asks a **query** (*what am I looking for?*), offers a **key** (*what do I contain?*) "
    "and a **value** (*what do I hand over?*). Follow one formula from the embeddings to the output:"
))
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")

c_input, c_init = st.columns(2)
with c_input:
    source = controls.draw(CONTROLS["input"])
with c_init:
    init = controls.draw(CONTROLS["init"], disabled=source == LESSON)
    if source == LESSON:
        st.caption(_("Not used by the lesson example: its W_q, W_k, W_v are hand-written (edit them below)."))

MATRICES = ("X", "W_q", "W_k", "W_v")


def lesson_inputs() -> tuple[dict[str, np.ndarray], list[str]]:
    """Editable lesson matrices; returns the last valid set and the problems found.

    The cells hold the learner's text (a text column, so a typed word reaches the page and is
    reported as "not a number", not as a blank). What the learner typed is kept in
    ``walk_cells`` and is the editors' data, so the edits survive a visit to "Your sentence"
    (Streamlit forgets a widget's state when it is not drawn on a run); after a change of language
    its numbers are written with the new decimal mark (``0.1`` -> ``0,1``).
    """
    ex = A.PIPELINE_EXAMPLE
    ss = st.session_state
    version = controls.edition("walk_edit_version")
    st.markdown(_("Edit any cell; the whole computation below follows. Row-vector convention: "
                  "`Q = X @ W_q` with `W_q` of shape `[d_model, d_k]`. (The sidebar's controls apply to "
                  "*Your sentence*; this example is fixed at 3 words and d = 4.)"))
    if st.button(_("↺ Restore the lesson's values"), key="walk_restore"):
        controls.next_edition("walk_edit_version", "walk_last_valid", "walk_cells")
    kept = ss.setdefault("walk_cells", {})
    if kept and ss.get("walk_cells_lang") != i18n.current():  # the language changed: the cells' numbers follow it
        kept = ss["walk_cells"] = {name: W.cells_in_language(cells) for name, cells in kept.items()}
        version = ss["walk_edit_version"] = version + 1  # fresh editors: their edits are in the cells already
    ss["walk_cells_lang"] = i18n.current()
    edited, problems = {}, []
    cols = [c for _row in range(2) for c in st.columns(2)]  # a 2 x 2 grid: X, W_q / W_k, W_v
    for col, name in zip(cols, MATRICES, strict=True):
        base = getattr(ex, name)
        index = list(ex.tokens) if name == "X" else [f"d_model {i}" for i in range(base.shape[0])]
        # The columns' ids stay English (the editors' edit state and its identity); their headers are translated.
        columns = [f"{'dim' if name == 'X' else 'col'} {j}" for j in range(base.shape[1])]
        shown = textviews.dim_labels(base.shape[1]) if name == "X" else \
            [_("col {j}").format(j=j) for j in range(base.shape[1])]
        cells = kept.get(name, [[W.cell_text(x) for x in row] for row in base])
        frame = pd.DataFrame(cells, index=index, columns=columns, dtype=object)
        with col:
            st.markdown(f"**{name}** `{list(base.shape)}`")
            df = st.data_editor(
                frame, key=f"walk_edit_{name}_{version}", num_rows="fixed", width="stretch",
                column_config={c: st.column_config.TextColumn(label) for c, label in zip(columns, shown, strict=True)},
            )
        kept[name] = df.to_numpy(dtype=object).tolist()
        values, bad = W.parse_matrix(kept[name], index, shown, name)
        problems += bad[:5]
        edited[name] = values
    return controls.last_valid("walk_last_valid", None if problems else edited,
                               {m: getattr(ex, m) for m in MATRICES}), problems


if source == LESSON:
    mats, problems = lesson_inputs()
    if problems:
        st.error(_("**Some cells cannot be used**, so the results below are the last valid ones:") + "\n\n"
                 + "\n".join(f"- {p}" for p in problems), icon="✋")
    source = LessonExample(*(np.asarray(mats[m], dtype=float) for m in MATRICES))
    init = W.DEFAULT_INIT  # hand-written weights: the initialisation does not apply
    params = {"input": "lesson pipeline example", "d_model": 4, "d_k": 4, "d_v": 4}
else:
    source = controls.lesson_settings()  # the prompt's purpose: the shell's "to see attention at work"
    params = {"input": "sentence", "sentence": controls.shared().sentence, "tokens": list(source.tokens),
              "embedding": source.embedding, "positional": source.positional, "seed": source.seed,
              "d_model": source.d_model, "d_k": source.d_k, "d_v": source.d_v, "weight_init": init}
    st.caption(source.caption())
    draw.embedding_line(source, controls.shared().embedding)
labels = settings.token_labels(source.tokens)

draw.inputs(source, init)

st.header(_("4 · Scaled scores"))
scaled = controls.draw(CONTROLS["scale"])
params["divide_by_sqrt_d_k"] = scaled
draw.attend(source, init, scaled, controls.color_scale())

st.header(_("One query at a time"))


@controls.fragment  # the query box changes this part only: rerun it alone, nothing above is resent (issue 20)
def one_query() -> None:
    draw.one_query(source, init, scaled, controls.draw(CONTROLS["query"], {"labels": labels}))


one_query()
draw.ascii_map(source, init, scaled)

st.header(_("Download"))
# The files are written only when the learner clicks (deferred data), and a click does not rerun the page
# (on_click="ignore"): a rerun would replace the buttons' deferred files while a download is being fetched.
d1, d2, d3 = st.columns(3)
d1.download_button(_("Attention weights (CSV)"), lambda: W.csv(source, init, scaled, "weights"),
                   "attention_weights.csv", "text/csv", key="walk_dl_weights", on_click="ignore")
d2.download_button(_("Output (CSV)"), lambda: W.csv(source, init, scaled, "output"),
                   "attention_output.csv", "text/csv", key="walk_dl_output", on_click="ignore")
d3.download_button(_("Whole scenario (JSON)"), lambda: W.scenario_json(source, init, scaled, params),
                   "attention_scenario.json", "application/json", key="walk_dl_json", on_click="ignore")
