"""Sections of the "attention as a soft lookup" page: the intro, the table's help, the sharpness, both lookups.

The lookups take the validated table (:class:`explorer.lessons.lookup.model.LookupTable`,
frozen tuples), the query ``(qx, qy)`` and the sharpness; the page keeps the editor, the
sliders and the "last valid table" state (it does not use the sidebar's settings). The
sections are called with keyword arguments (they are keyword-only): Streamlit then hashes
the values without looking up the parameter names in the function's signature, a few
hundredths of a millisecond per argument.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.lessons.lookup import charts as F
from explorer.lessons.lookup import model as S
from explorer.shell import charts, textviews
from explorer.shell.cache import section
from explorer.shell.tables import dataframe, numbers

latex_text = textviews.latex_text
fmt = textviews.fmt

# The table editor's input, made once (the editor copies both): the default rows and the columns' settings.
# The number columns are text columns holding the numbers as written: a number column would turn text typed into
# it into a blank cell, and the learner would be told "blank" instead of "not a number" (issue 18, item 12);
# model.parse_table reads and checks every cell.
TABLE_FRAME = pd.DataFrame([{c: (f"{v:g}" if c in S.NUMBER_COLUMNS else v) for c, v in row.items()}
                            for row in S.DEFAULT_ROWS], columns=list(S.COLUMNS))
_RANGE = f"a number from −{S.NUMBER_LIMIT:g} to {S.NUMBER_LIMIT:g}"
TABLE_COLUMNS = {
    S.KEY: st.column_config.TextColumn("key", help="The key's name: what the database matches."),
    S.K1: st.column_config.TextColumn("k1", help=f"Key vector, first number ({_RANGE})."),
    S.K2: st.column_config.TextColumn("k2", help=f"Key vector, second number ({_RANGE})."),
    S.VALUE: st.column_config.TextColumn("value", help="The value's name: what is handed over."),
    S.V1: st.column_config.TextColumn("v1", help=f"Value vector, first number (default: longitude; {_RANGE})."),
    S.V2: st.column_config.TextColumn("v2", help=f"Value vector, second number (default: latitude; {_RANGE})."),
}


NOT_USED = {  # the sidebar's controls this lesson has no use for, and why (explorer.shell.controls.not_used)
    "sentence": "this lesson queries its own table (section 1), not a sentence.",
    "embedding": "the table's keys and values are typed in, not embedded.",
    "positional": "the table's rows have no order.",
    "seed": "nothing on this page is random.",
    "d_model": "the keys and values are points (k1, k2) and (v1, v2): width 2.",
    "d_k": "d_k = 2 here: the query and every key are points in the plane.",
}


@section
def intro() -> None:
    """The page's title, what a query, a key and a value are, and the header of part 1."""
    st.title("Attention as a soft database lookup")
    st.markdown(
        "A **database** compares your query with its keys, picks the one that matches and hands over "
        "*that one* value. **Attention** compares the query with *every* key and hands over a *blend of all* "
        "values, weighted by how well each key matches. Below, one table is queried both ways.\n\n"
        "- **query** $q$ — *what am I looking for?* (\"capital of France\")\n"
        "- **key** $k_j$ — *what do I contain?* (\"France\")\n"
        "- **value** $v_j$ — *what do I hand over if chosen?* (\"Paris\")"
    )
    st.caption("This page has its own small table; the sidebar's sentence controls are for the other pages.")
    st.header("1 · The table")


@section
def table_help() -> None:
    """What a row of the table holds and how to edit it (beside the editor)."""
    st.markdown(
        "Each row is one entry: a **key** (a name and a 2-D vector $k_j = (k_1, k_2)$, so it can be drawn) and a "
        "**value** (a name and a vector $v_j = (v_1, v_2)$; by default the capital's longitude and latitude, "
        "so a blend of values is a place on the map)."
    )
    st.caption(f"Edit any cell, add or delete rows (1 to {S.MAX_ROWS}). Keys must be distinct. Rows are numbered "
               "from 0, like every position in the app.")


@section
def sharpness_formula(*, sharp: float) -> None:
    """The soft lookup's formula at sharpness ``sharp`` and what its extremes mean."""
    st.latex(rf"w_j = \mathrm{{softmax}}_j\big(s\; q\cdot k_j\big), \qquad s = {S.sharpness_latex(sharp)}")
    st.caption(f"s = 0 → uniform weights 1/m (the blend is the mean of the values) · s = 1/√d_k = "
               f"{S.LESSON_SHARPNESS:.3f} is what a transformer uses for keys of width d_k = {S.D_K} · "
               "s = 1e6 → the blend is the database's answer.")


def lookups(table: S.LookupTable, query: tuple[float, float], sharp: float, color_scale: str = "fixed") -> None:
    """Parts 3 and 4 for ``query`` on ``table`` at sharpness ``sharp``: both lookups, four charts, the matrix
    (its colours on ``color_scale``, :data:`explorer.shell.charts.COLOR_SCALES`).

    Replayed from the cache for an equal table, query and sharpness: the cache key
    spells the table out as its ``repr`` (exact: tuples of strings and floats), one
    string that hashes several times faster than the table's dataclass.
    """
    _lookups(key=(repr(table), float(query[0]), float(query[1]), float(sharp), color_scale), _table=table)


@section
def _lookups(*, key: tuple[str, float, float, float, str], _table: S.LookupTable) -> None:
    """:func:`lookups` for ``key = (repr(_table), qx, qy, sharp, color_scale)``; ``_table`` is not hashed (leading
    underscore)."""
    table, (_, qx, qy, sharp, color_scale) = _table, key
    r = S.lookup_scenario(table, (qx, qy), sharp)
    keys_l, vals_l, rows_l = list(table.key_labels), list(table.value_labels), table.row_labels
    note = f"q = ({fmt(qx, 2)}, {fmt(qy, 2)})"
    if r.exact is not None:
        note += f" — exactly the key of row {r.exact} ({S.md_code(keys_l[r.exact])}): the database's exact match"
    st.caption(note)

    # ---- 3 · the same query, two lookups ----------------------------------------------------------------
    st.header("3 · The same query, two lookups")
    left, right = st.columns(2)
    with left:
        st.subheader("Database lookup (hard)")
        st.latex(r"j^{*} = \arg\max_j\; q\cdot k_j, \qquad \text{answer} = v_{j^{*}}")
        vec = f"({fmt(r.hard.value[0], 2)},\\ {fmt(r.hard.value[1], 2)})"
        if r.hard.is_tie:
            tied = ", ".join(S.md_code(keys_l[j]) for j in r.hard.indices)
            st.warning(f"**A tie:** keys {tied} match equally well (q · k = {fmt(r.scores[r.hard.indices[0]], 3)}). "
                       f"The database cannot choose, so it splits evenly and hands over the mean of their values.",
                       icon="⚖️")
            st.latex(r"\text{answer} = \tfrac{1}{" + str(len(r.hard.indices)) + r"}\big("
                     + " + ".join(rf"v_{{\text{{{latex_text(vals_l[j])}}}}}" for j in r.hard.indices)
                     + rf"\big) = {vec}")
        else:
            j = r.hard.indices[0]
            st.latex(rf"\text{{{latex_text(keys_l[j])}}} \;\to\; \text{{{latex_text(vals_l[j])}}} = {vec}")
        st.caption(("The best keys share the answer evenly; " if r.hard.is_tie else "One key wins; ")
                   + "the others contribute nothing. The database ranks the keys by their similarity q · k and "
                   "takes the top (argmax):")
        dataframe(pd.DataFrame({"key": keys_l, "q · k": r.scores, "value": vals_l}).sort_values(
            "q · k", ascending=False, kind="stable"), hide_index=True, width="stretch")
    with right:
        st.subheader("Attention lookup (soft)")
        st.latex(r"w_j = \mathrm{softmax}_j(s\; q\cdot k_j), \qquad \text{answer} = \sum_j w_j\, v_j")
        st.latex(textviews.weighted_sum_latex("q", r.weights, r.values, r.blend, digits=2))
        n = r.nearest
        st.latex(rf"\text{{nearest value to the blend: {latex_text(vals_l[n])}}}"
                 rf"\ ({fmt(r.values[n][0], 2)},\ {fmt(r.values[n][1], 2)})")
        top = float(max(r.weights))
        share = (f"Every key gets a share; the answer is a blend of all {table.m} values." if top < 0.999 else
                 f"At this sharpness the best key takes {fmt(100 * top, 2)}% of the weight: the blend has become "
                 "the database's answer.")
        st.caption(f"{share} Distance from the blend to the database's answer: {fmt(r.gap, 4)}.")

    p1, p2 = st.columns(2)
    with p1:
        st.plotly_chart(F.keys_plane(r.keys, keys_l, r.query, r.weights, r.hard.indices), key="lookup_fig_keys")
        st.caption("The **query** arrow asks *what am I looking for?*; each **key** point says *what do I "
                   "contain?*. q · k = |q| |k| cos θ is large for a key that points the same way and is long. "
                   "Marker area = attention weight; the orange ring is the database's pick.")
    with p2:
        st.plotly_chart(F.weights_compare(r.weights, r.hard.weights, rows_l), key="lookup_fig_weights")
        st.caption("Weight per row (key → value). Attention's weights sum to 1 and are all above 0 for s > 0; the "
                   "database puts everything on its pick (split evenly on a tie).")
    p3, p4 = st.columns(2)
    with p3:
        st.plotly_chart(F.values_plane(r.values, vals_l, r.weights, r.blend, r.hard.value,
                                       axis_titles=("v1 (default: longitude)", "v2 (default: latitude)")),
                        key="lookup_fig_values")
        st.caption("Each **value** is *what it hands over*. The star is attention's answer, a weighted average "
                   "that can land between the values; the diamond is the database's answer.")
    with p4:
        st.plotly_chart(F.sharpness_dial(r.sweep, r.sweep_weights, rows_l, current=r.sharpness,
                                         lesson=S.LESSON_SHARPNESS, gap=r.sweep_gap), key="lookup_fig_dial")
        st.caption(f"The sharpness dial for this query: far left the weights are uniform (1/m = "
                   f"{1 / table.m:.3f}), far right they are the database's. Dashed: the transformer's 1/√d_k; "
                   "red: your setting (at s = 0, off the log axis to the left); dotted: how far the blend is "
                   "from the database's answer.")

    numbers({"": pd.DataFrame({
        "key": keys_l, "k1": r.keys[:, 0], "k2": r.keys[:, 1], "q · k": r.scores, "s · q · k": r.scaled,
        "attention weight": r.weights, "database weight": r.hard.weights,
        "value": vals_l, "v1": r.values[:, 0], "v2": r.values[:, 1],
        "w · v1": r.weights * r.values[:, 0], "w · v2": r.weights * r.values[:, 1],
    }), "The two answers": pd.DataFrame({"answer": ["attention (blend)", "database"],
                                         "v1": [r.blend[0], r.hard.value[0]], "v2": [r.blend[1], r.hard.value[1]]})},
            label="Numbers for this query")

    # ---- 4 · many queries at once: the attention matrix ------------------------------------------------------
    st.header("4 · Many queries at once: the attention matrix")
    st.latex(r"W = \mathrm{softmax}\big(s\; Q K^\top\big) \;\;\text{(row by row)}, \qquad \text{answers} = W V")
    st.caption(f"Stack the queries as the rows of Q ([n_q, d_k] = [{len(r.batch_labels)}, {S.D_K}]): your query, "
               f"then each row's own key. The weights form an [n_q, m] = [{len(r.batch_labels)}, {table.m}] matrix, "
               "one row per query, each summing to 1 — exactly the attention matrix of the walkthrough.")
    h1, h2 = st.columns(2)
    with h1:
        st.plotly_chart(charts.heatmap(r.batch_weights, r.batch_labels, keys_l, title=f"attention, s = "
                                        f"{S.sharpness_label(sharp).split()[0]}", color_scale=color_scale),
                        key="lookup_fig_matrix")
    with h2:
        st.plotly_chart(charts.heatmap(r.batch_hard, r.batch_labels, keys_l, title="database (one-hot rows)",
                                       color_scale=color_scale),
                        key="lookup_fig_hard_matrix")
    numbers({"": pd.DataFrame(r.batch_weights, index=list(r.batch_labels), columns=keys_l),
             "Each query's answer": pd.DataFrame({"query": list(r.batch_labels), "q1": r.batch_queries[:, 0],
                                                  "q2": r.batch_queries[:, 1], "blend v1": r.batch_blends[:, 0],
                                                  "blend v2": r.batch_blends[:, 1]})},
            label="Numbers: every query's answer")
