"""Tests of the lookup lesson's figures (``charts``) and its pure scenario/validation code (``model``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from explorer.lessons.lookup import charts as F
from explorer.lessons.lookup import model as S

T = S.DEFAULT_TABLE
K = np.array(T.keys)
V = np.array(T.values)


def ys(trace) -> np.ndarray:
    return np.asarray(trace.y, dtype=float)


# --- figures ---------------------------------------------------------------------------------------


def test_keys_plane_sizes_markers_by_weight_and_draws_the_query_arrow():
    w = np.array([0.5, 0.2, 0.2, 0.1, 0.0, 0.0])
    fig = F.keys_plane(K, T.key_labels, [1.0, 0.5], w, [0])
    keys = next(t for t in fig.data if t.name and t.name.startswith("keys"))
    sizes = np.asarray(keys.marker.size, dtype=float)
    assert sizes[0] > sizes[1] == sizes[2] > sizes[3] > sizes[4] == F.MARKER_MIN
    np.testing.assert_allclose(sizes[0], F.MARKER_MIN + (F.MARKER_MAX - F.MARKER_MIN) * math.sqrt(0.5))
    np.testing.assert_array_equal(np.asarray(keys.x, dtype=float), K[:, 0])
    pick = next(t for t in fig.data if t.name == "database's pick")
    assert list(pick.x) == [K[0, 0]]
    arrow = next(a for a in fig.layout.annotations if a.showarrow)
    assert (arrow.x, arrow.y, arrow.ax, arrow.ay) == (1.0, 0.5, 0, 0)
    assert fig.layout.yaxis.scaleanchor == "x"  # equal aspect: angles read true
    # issue 47 (390 px): a query inside a key's bubble put its red label on the bubble: a light background under it
    label = next(a for a in fig.layout.annotations if a.text == "query")
    assert label.bgcolor == F.LABEL_BACKGROUND


def test_keys_plane_zero_query_has_no_arrow_and_a_tie_rings_both():
    fig = F.keys_plane(K, T.key_labels, [0.0, 0.0], np.full(6, 1 / 6), [0, 1])
    assert not any(a.showarrow for a in fig.layout.annotations)
    assert len(next(t for t in fig.data if t.name == "database's pick").x) == 2


def test_labels_are_escaped_everywhere():
    labels = ["<b>x</b>", "a&b", "c", "d", "e", "f"]
    w = np.full(6, 1 / 6)
    figs = [F.keys_plane(K, labels, [1, 0], w, [0]), F.weights_compare(w, w, labels),
            F.values_plane(V, labels, w, V.mean(0), V[0]),
            F.sharpness_dial(S.SWEEP, np.full((len(S.SWEEP), 6), 1 / 6), labels, current=1.0, lesson=0.7)]
    for fig in figs:
        text = json.dumps(json.loads(fig.to_json()), ensure_ascii=False)  # to_json writes < as \\u003c
        assert "<b>x</b>" not in text and "&lt;b&gt;x&lt;/b&gt;" in text and "a&amp;b" in text


def test_weights_compare_has_soft_and_hard_bars_in_row_order():
    soft = np.array([0.4, 0.3, 0.2, 0.1, 0.0, 0.0])
    hard = np.array([1.0, 0, 0, 0, 0, 0])
    fig = F.weights_compare(soft, hard, T.row_labels)
    assert [t.name for t in fig.data] == ["attention (soft)", "database (hard)"]
    np.testing.assert_array_equal(ys(fig.data[0]), soft)
    np.testing.assert_array_equal(ys(fig.data[1]), hard)
    assert list(fig.layout.xaxis.ticktext) == ["France → Paris", "Germany → Berlin", "Spain → Madrid",
                                               "Italy → Rome", "Japan → Tokyo", "Brazil → Brasília"]
    with pytest.raises(ValueError):
        F.weights_compare(soft, hard[:3], T.row_labels)


def test_values_plane_marks_the_blend_and_the_database_value():
    fig = F.values_plane(V, T.value_labels, np.full(6, 1 / 6), [10.0, 20.0], V[0])
    star = next(t for t in fig.data if t.marker.symbol == "star")
    diamond = next(t for t in fig.data if t.marker.symbol == "diamond-open")
    assert (star.x[0], star.y[0]) == (10.0, 20.0)
    assert (diamond.x[0], diamond.y[0]) == tuple(V[0])


def test_sharpness_dial_drops_zero_and_marks_the_lesson_scale():
    s = np.array([0.0, 0.01, 1.0, 100.0])
    w = np.array([[0.5, 0.5], [0.5, 0.5], [0.7, 0.3], [1.0, 0.0]])
    fig = F.sharpness_dial(s, w, ["a", "b"], current=100.0, lesson=S.LESSON_SHARPNESS, gap=[3, 3, 1, 0])
    assert fig.layout.xaxis.type == "log"
    assert list(fig.data[0].x) == [0.01, 1.0, 100.0] and list(fig.data[1].y) == [0.5, 0.3, 0.0]
    assert fig.data[2].yaxis == "y2"
    assert sorted(sh.x0 for sh in fig.layout.shapes) == [S.LESSON_SHARPNESS, 100.0]
    note = next(a for a in fig.layout.annotations if "1/√d_k" in a.text)  # above the plot, clear of every curve
    assert (note.yref, note.y, note.yanchor, note.xanchor) == ("paper", 1, "bottom", "right")  # (issue 47)
    no_current = F.sharpness_dial(s, w, ["a", "b"], current=0.0, lesson=S.LESSON_SHARPNESS)
    assert [sh.x0 for sh in no_current.layout.shapes] == [S.LESSON_SHARPNESS]
    assert any("your s = 0" in a.text for a in no_current.layout.annotations)  # s = 0 is still marked
    at_lesson = F.sharpness_dial(s, w, ["a", "b"], current=S.LESSON_SHARPNESS, lesson=S.LESSON_SHARPNESS)
    assert any(a.text == "your s = 1/√d_k" for a in at_lesson.layout.annotations)  # one line hides the other
    far_right = F.sharpness_dial(S.SWEEP, np.full((len(S.SWEEP), 2), 0.5), ["a", "b"], current=1e6,
                                 lesson=S.LESSON_SHARPNESS)
    label = next(a for a in far_right.layout.annotations if a.text.startswith("your s"))
    assert label.xanchor == "right"  # at the right edge the label goes left of its line, inside the plot


def test_sharpness_dial_rows_are_never_red_like_the_learners_s():
    m = 12
    fig = F.sharpness_dial(S.SWEEP, np.full((len(S.SWEEP), m), 1 / m), [f"r{j}" for j in range(m)], current=2.0,
                           lesson=S.LESSON_SHARPNESS)
    colors = [t.line.color for t in fig.data[:m]]
    assert len(set(colors)) == m and F.QUERY_COLOR not in colors


# --- the page's pure code ------------------------------------------------------------------------


def test_default_rows_parse_to_the_default_table():
    check = S.parse_table(list(S.DEFAULT_ROWS))
    assert check.problems == () and check.table == T


def rows_with(**edits) -> list[dict]:
    rows = [dict(r) for r in S.DEFAULT_ROWS]
    for where, value in edits.items():
        i, col = where.split("_", 1)
        rows[int(i[1:])][col] = value
    return rows


@pytest.mark.parametrize(("rows", "expected"), [
    ([], "The table is empty"),
    ([{}, {c: None for c in S.COLUMNS}], "The table is empty"),
    (rows_with(r1_k2=None), "row 1, column `k2` is blank — every key needs 2 numbers (k1, k2)"),
    (rows_with(r1_k2=float("nan")), "row 1, column `k2` is blank"),
    (rows_with(r0_v1="  "), "row 0, column `v1` is blank — every value needs 2 numbers"),
    (rows_with(r2_k1="abc"), "row 2, column `k1` holds `abc`, which is not a number"),
    (rows_with(r2_k1="inf"), "row 2, column `k1` holds `inf`, which is not a finite number"),
    (rows_with(r3_v2=1e9), "row 3, column `v2` holds `1000000000.0`, beyond ±1000"),
    (rows_with(r4_key=""), "row 4, column `key` is blank"),
    (rows_with(r5_value=None), "row 5, column `value` is blank"),
    (rows_with(r4_k1=1.73, r4_k2=1.0), "rows 0 and 4 have the same key vector (1.73, 1)"),
    (rows_with(r3_key="France"), "rows 0 and 3 have the same key name `France`"),
    (list(S.DEFAULT_ROWS) * 3, f"use at most {S.MAX_ROWS}"),
])
def test_bad_tables_say_what_is_wrong_and_where(rows, expected):
    check = S.parse_table(rows)
    assert check.table is None
    assert any(expected in p for p in check.problems), check.problems
    assert not any("nan" in p.lower().split() for p in check.problems)


def test_numbers_as_text_and_empty_rows_are_accepted():
    rows = rows_with(r0_k1="1,5", r0_k2=" 2 ") + [{c: None for c in S.COLUMNS}]
    check = S.parse_table(rows)
    assert check.problems == () and check.n_empty_rows == 1
    assert check.table.keys[0] == (1.5, 2.0)



def test_presets_are_the_keys_a_tie_and_zero():
    p = S.presets(T)
    assert p["capital of France"] == T.keys[0]
    assert p["capital of Italy"] == (-0.35, 1.97)  # exactly the key: the slider grid holds it
    assert p["halfway between France and Germany"] == (1.36, 1.36)
    assert p["the zero query (0, 0)"] == (0.0, 0.0)
    edited = S.LookupTable(("cat", "dog"), ((9.0, 0.0), (0.0, 1.0)), ("meow", "woof"), ((1.0, 0.0), (0.0, 1.0)))
    assert list(S.presets(edited))[:2] == ["look up cat", "look up dog"]
    assert S.presets(edited)["look up cat"] == (S.QUERY_LIMIT, 0.0)  # clipped to the slider range


def test_scenario_at_the_defaults_and_the_extremes():
    r = S.lookup_scenario(T, S.DEFAULT_QUERY, S.LESSON_SHARPNESS)
    assert r.exact == 0 and r.hard.indices == (0,) and r.nearest == 0
    assert math.isclose(r.weights.sum(), 1.0)
    assert r.batch_weights.shape == (7, 6) and r.batch_labels[:2] == ("your query", "capital of France")
    np.testing.assert_array_equal(r.batch_weights[0], r.weights)
    np.testing.assert_array_equal(r.batch_hard[1:], np.eye(6))
    zero = S.lookup_scenario(T, S.DEFAULT_QUERY, 0.0)
    np.testing.assert_allclose(zero.blend, V.mean(0))
    huge = S.lookup_scenario(T, S.DEFAULT_QUERY, 1e6)
    np.testing.assert_allclose(huge.blend, V[0], atol=1e-6)
    assert huge.gap < 1e-6 and zero.gap > 10
    tie = S.lookup_scenario(T, S.presets(T)["halfway between France and Germany"], 1e6)
    assert tie.hard.is_tie and tie.hard.indices == (0, 1)
    assert S.sharpness_label(S.LESSON_SHARPNESS).startswith("0.707") and S.sharpness_label(1e6) == "1e+06"


def _label_boxes(fig, trace_name: str, sizes, area) -> list[tuple]:
    """The label boxes of a plane's points as :func:`F.place_labels` estimates them on plot ``area`` (w, h px)."""
    tr = next(t for t in fig.data if t.name == trace_name)
    xr, yr = fig.layout.xaxis.range, fig.layout.yaxis.range
    sx, sy = area[0] / (xr[1] - xr[0]), area[1] / (yr[1] - yr[0])
    if fig.layout.yaxis.scaleanchor == "x":
        sx = sy = min(sx, sy)
    where = {name: (dx, dy) for name, dx, dy in F.LABEL_POSITIONS}
    return [F._label_box((x - xr[0]) * sx, (y - yr[0]) * sy, size / 2, w, h, *where[pos])
            for x, y, size, pos, (w, h) in zip(tr.x, tr.y, tr.marker.size, tr.textposition, sizes, strict=True)]


@pytest.mark.parametrize("query", [S.DEFAULT_QUERY, (1.0, 1.0), (0.0, 0.0), (-1.2, 0.4)])
def test_plane_labels_do_not_overlap_on_a_phone_or_a_desktop(query):
    """Issue 18, item 10: "query" sat on "France 0.391" and "Spain 0.269"; "Madrid", "Paris" and "Rome" collided."""
    r = S.lookup_scenario(T, query, S.LESSON_SHARPNESS)
    keys = F.keys_plane(r.keys, T.key_labels, r.query, r.weights, r.hard.indices)
    values = F.values_plane(r.values, T.value_labels, r.weights, r.blend, r.hard.value)
    key_sizes = [F._label_size([k, F.fmt(v, 3)]) for k, v in zip(T.key_labels, r.weights, strict=True)]
    value_sizes = [F._label_size([v]) for v in T.value_labels]
    for area in F.PLOT_AREAS:
        for boxes in (_label_boxes(keys, "keys (size = weight)", key_sizes, area),
                      _label_boxes(values, "values (size = weight)", value_sizes, area)):
            pairs = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if F._overlap(a, b, 0) > 0]
            assert not pairs, (area, pairs)
    note = next(a for a in keys.layout.annotations if a.text == "query")
    assert (note.xshift, note.yshift) != (0, 0) and not note.showarrow  # beside the query's marker, not on it
