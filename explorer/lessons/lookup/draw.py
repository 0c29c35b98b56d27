"""Sections of the "attention as a soft lookup" page: the intro, the table's help, the sharpness, both lookups.

The lookups take the validated table (:class:`explorer.lessons.lookup.model.LookupTable`, frozen tuples), the query
``(qx, qy)`` and the sharpness; the page keeps the editor, the sliders and the "last valid table" state. A
keyword-only section is hashed without looking up its parameter names (a few hundredths of a millisecond each).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.lessons.lookup import charts as F
from explorer.lessons.lookup import model as S
from explorer.shell import charts, i18n, textviews
from explorer.shell.cache import section
from explorer.shell.i18n import translator
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import fmt, fmt_formula, latex_text

_, _n = translator(__name__)


@section
def intro() -> None:
    """The page's title, what a query, a key and a value are, and the header of part 1."""
    st.title(_("Attention as a soft database lookup"))
    st.markdown(_(
        "A **database** compares your query with its keys, picks the one that matches and hands over "
        "*that one* value. **Attention** compares the query with *every* key and hands over a *blend of all* "
        "values, weighted by how well each key matches. Below, one table is queried both ways.\n\n"
        "- **query** $q$ — *what am I looking for?* (\"capital of France\")\n"
        "- **key** $k_j$ — *what do I contain?* (\"France\")\n"
        "- **value** $v_j$ — *what do I hand over if chosen?* (\"Paris\")"
    ))
    st.caption(_("This page has its own small table; the sidebar's sentence controls are for the other pages."))
    st.header(_("1 · The table"))


@section
def table_help() -> None:
    """What a row of the table holds and how to edit it (beside the editor)."""
    st.markdown(_(
        "Each row is one entry: a **key** (a name and a 2-D vector $k_j = (k_1, k_2)$, so it can be drawn) and a "
        "**value** (a name and a vector $v_j = (v_1, v_2)$; by default the capital's longitude and latitude, "
        "so a blend of values is a place on the map)."
    ))
    st.caption(_("Edit any cell, add or delete rows (1 to {max}). Keys must be distinct. Rows are numbered from 0, "
                 "like every position in the app.").format(max=S.MAX_ROWS))


@section
def sharpness_formula(*, sharp: float) -> None:
    """The soft lookup's formula at sharpness ``sharp`` and what its extremes mean."""
    st.latex(rf"w_j = \mathrm{{softmax}}_j\big(s\; q\cdot k_j\big), \qquad s = {S.sharpness_latex(sharp)}")
    st.caption(_("s = 0 → uniform weights 1/m (the blend is the mean of the values) · s = 1/√d_k = {lesson} is what "
                 "a transformer uses for keys of width d_k = {d_k} · s = 1e6 → the blend is the database's "
                 "answer.").format(lesson=fmt(S.LESSON_SHARPNESS, 3), d_k=S.D_K))


@section
def lookups(table: S.LookupTable, query: tuple[float, float], sharp: float, color_scale: str = "fixed") -> None:
    """Parts 3 and 4 for ``query`` on ``table`` at sharpness ``sharp``: both lookups, four charts, the matrix
    (its colours on ``color_scale``, :data:`explorer.shell.charts.COLOR_SCALES`).

    Replayed from the cache for an equal table, query and sharpness (the table, a frozen dataclass of tuples,
    keys the cache by its fields: :func:`explorer.shell.cache.key_hash_funcs`).
    """
    r = S.lookup_scenario(table, query, sharp)
    keys_l, vals_l, rows_l = list(table.key_labels), list(table.value_labels), table.row_labels
    note = f"q = {F.point_text(query, 2)}"
    if r.exact is not None:
        note += " — " + _("exactly the key of row {row} ({key}): the database's exact match").format(
            row=r.exact, key=textviews.md_code(keys_l[r.exact]))
    st.caption(note)
    answer = latex_text(_("answer"))

    # ---- 3 · the same query, two lookups ----------------------------------------------------------------
    st.header(_("3 · The same query, two lookups"))
    left, right = st.columns(2)
    with left:
        st.subheader(_("Database lookup (hard)"))
        st.latex(rf"j^{{*}} = \arg\max_j\; q\cdot k_j, \qquad \text{{{answer}}} = v_{{j^{{*}}}}")
        vec = f"({fmt_formula(r.hard.value[0], 2)},\\ {fmt_formula(r.hard.value[1], 2)})"
        if r.hard.is_tie:
            tied = ", ".join(textviews.md_code(keys_l[j]) for j in r.hard.indices)
            st.warning(_("**A tie:** keys {keys} match equally well (q · k = {score}). The database cannot choose, so "
                         "it splits evenly and hands over the mean of their values.").format(
                keys=tied, score=fmt(r.scores[r.hard.indices[0]], 3)), icon="⚖️")
            st.latex(rf"\text{{{answer}}} = \tfrac{{1}}{{" + str(len(r.hard.indices)) + r"}\big("
                     + " + ".join(rf"v_{{\text{{{latex_text(vals_l[j])}}}}}" for j in r.hard.indices)
                     + rf"\big) = {vec}")
        else:
            j = r.hard.indices[0]
            st.latex(rf"\text{{{latex_text(keys_l[j])}}} \;\to\; \text{{{latex_text(vals_l[j])}}} = {vec}")
        st.caption(_("The best keys share the answer evenly; the others contribute nothing. The database ranks the "
                     "keys by their similarity q · k and takes the top (argmax):") if r.hard.is_tie else
                   _("One key wins; the others contribute nothing. The database ranks the keys by their similarity "
                     "q · k and takes the top (argmax):"))
        key_col, value_col = _("key"), _("value")
        dataframe(pd.DataFrame({key_col: keys_l, "q · k": r.scores, value_col: vals_l}).sort_values(
            "q · k", ascending=False, kind="stable"), hide_index=True, width="stretch")
    with right:
        st.subheader(_("Attention lookup (soft)"))
        st.latex(rf"w_j = \mathrm{{softmax}}_j(s\; q\cdot k_j), \qquad \text{{{answer}}} = \sum_j w_j\, v_j")
        st.latex(textviews.weighted_sum_latex("q", r.weights, r.values, r.blend, digits=2))
        n = r.nearest
        nearest = latex_text(_("nearest value to the blend: {value}").format(value=vals_l[n]))
        st.latex(rf"\text{{{nearest}}}\ ({fmt_formula(r.values[n][0], 2)},\ {fmt_formula(r.values[n][1], 2)})")
        share = S.blend_claim(r.weights, table.m)
        st.caption(share + " " + _("Distance from the blend to the database's answer: {gap}.").format(
            gap=fmt(r.gap, 4)))

    p1, p2 = st.columns(2)
    with p1:
        charts.show_fig(F.keys_plane(r.keys, keys_l, r.query, r.weights, r.hard.indices), key="lookup_fig_keys")
        st.caption(_("The **query** arrow asks *what am I looking for?*; each **key** point says *what do I "
                     "contain?*. q · k = |q| |k| cos θ is large for a key that points the same way and is long. "
                     "Marker area = attention weight; the orange ring is the database's pick."))
    with p2:
        charts.show_fig(F.weights_compare(r.weights, r.hard.weights, rows_l), key="lookup_fig_weights")
        st.caption(_("Weight per row (key → value). Attention's weights sum to 1 and are all above 0 for s > 0; the "
                     "database puts everything on its pick (split evenly on a tie)."))
    p3, p4 = st.columns(2)
    with p3:
        charts.show_fig(F.values_plane(r.values, vals_l, r.weights, r.blend, r.hard.value,
                                       axis_titles=(_("v1 (default: longitude)"), _("v2 (default: latitude)"))),
                        key="lookup_fig_values")
        st.caption(_("Each **value** is *what it hands over*. The star is attention's answer, a weighted average "
                     "that can land between the values; the diamond is the database's answer."))
    with p4:
        charts.show_fig(F.sharpness_dial(r.sweep, r.sweep_weights, rows_l, current=r.sharpness,
                                         lesson=S.LESSON_SHARPNESS, gap=r.sweep_gap), key="lookup_fig_dial")
        st.caption(_("The sharpness dial for this query: far left the weights are uniform (1/m = {uniform}), far "
                     "right they are the database's. Dashed: the transformer's 1/√d_k; red: your setting (at s = 0, "
                     "off the log axis to the left); dotted: how far the blend is from the database's answer.").format(
            uniform=fmt(1 / table.m, 3)))

    answer_col, blend_v1, blend_v2 = _("answer"), _("blend v1"), _("blend v2")
    numbers({"": pd.DataFrame({
        key_col: keys_l, "k1": r.keys[:, 0], "k2": r.keys[:, 1], "q · k": r.scores, "s · q · k": r.scaled,
        _("attention weight"): r.weights, _("database weight"): r.hard.weights,
        value_col: vals_l, "v1": r.values[:, 0], "v2": r.values[:, 1],
        "w · v1": r.weights * r.values[:, 0], "w · v2": r.weights * r.values[:, 1],
    }), _("The two answers"): pd.DataFrame({answer_col: [_("attention (blend)"), _("database")],
                                            "v1": [r.blend[0], r.hard.value[0]], "v2": [r.blend[1], r.hard.value[1]]})},
            label=_("Numbers for this query"))

    # ---- 4 · many queries at once: the attention matrix ------------------------------------------------------
    st.header(_("4 · Many queries at once: the attention matrix"))
    row_by_row, answers = latex_text(_("(row by row)")), latex_text(_("answers"))
    st.latex(rf"W = \mathrm{{softmax}}\big(s\; Q K^\top\big) \;\;\text{{{row_by_row}}}, \qquad "
             rf"\text{{{answers}}} = W V")
    st.caption(_("Stack the queries as the rows of Q ([n_q, d_k] = [{n_q}, {d_k}]): your query, then each row's own "
                 "key. The weights form an [n_q, m] = [{n_q}, {m}] matrix, one row per query, each summing to 1 — "
                 "exactly the attention matrix of the walkthrough.").format(
        n_q=len(r.batch_labels), d_k=S.D_K, m=table.m))
    h1, h2 = st.columns(2)
    with h1:
        charts.show_fig(charts.heatmap(r.batch_weights, r.batch_labels, keys_l,
                                       title=_("attention, s = {s}").format(s=i18n.general(sharp)),
                                       color_scale=color_scale),
                        key="lookup_fig_matrix")
    with h2:
        charts.show_fig(charts.heatmap(r.batch_hard, r.batch_labels, keys_l, title=_("database (one-hot rows)"),
                                       color_scale=color_scale),
                        key="lookup_fig_hard_matrix")
    numbers({"": pd.DataFrame(r.batch_weights, index=list(r.batch_labels), columns=keys_l),
             _("Each query's answer"): pd.DataFrame({_("query"): list(r.batch_labels), "q1": r.batch_queries[:, 0],
                                                     "q2": r.batch_queries[:, 1], blend_v1: r.batch_blends[:, 0],
                                                     blend_v2: r.batch_blends[:, 1]})},
            label=_("Numbers: every query's answer"))
