"""Issue 18, item 4: the colour scale of attention-weight maps (explorer/shell/charts/colors.py), as the heat map
draws it (no Streamlit); the link and the lessons are tested in ``tests/lessons/test_color_scale.py``, the
multi-head grids in ``tests/lessons/multihead/test_charts.py``.
"""

import json

import numpy as np
import pytest

from explorer.shell.charts import COLOR_SCALES, heatmap, weight_colorbar, weight_colors
from explorer.shell.charts.colors import ROW_MAX_COLOR, row_max_outline

LABELS = ["The (0)", "cat (1)", "sat (2)"]
W = np.array([[0.2, 0.5, 0.3],
              [0.4, 0.4, 0.2],  # a tie: both cells are the row's largest weight
              [0.1, 0.1, 0.8]])


def outline_cells(fig) -> set[tuple[int, int]]:
    """``(row, col)`` of every cell the row-maximum outline goes around (its rectangles' lower-left corners)."""
    (trace,) = [t for t in fig.data if t.type == "scatter" and t.mode == "lines"]
    assert trace.line.color == ROW_MAX_COLOR and trace.hoverinfo == "skip"
    xs, ys = list(trace.x), list(trace.y)
    cells = set()
    for k in range(0, len(xs), 6):  # 5 corners then a None gap per rectangle
        assert xs[k + 5] is None and ys[k + 5] is None
        cells.add((int(ys[k] + 0.5), int(xs[k] + 0.5)))
    return cells


def colorbar_ticks(fig) -> dict[str, float]:
    cb = fig.data[0].colorbar
    return dict(zip(cb.ticktext, cb.tickvals, strict=True))


def test_fixed_scale_colours_on_0_to_1_and_marks_the_uniform_level():
    fig = heatmap(W, LABELS, LABELS, color_scale="fixed")
    hm = fig.data[0]
    assert (hm.zmin, hm.zmax) == (0.0, 1.0)
    np.testing.assert_array_equal(np.array(hm.z, dtype=float), W)
    ticks = colorbar_ticks(fig)
    assert ticks["uniform 1/3"] == pytest.approx(1 / 3)
    assert "0.25" not in ticks  # too close to the 1/3 mark: left out so the labels do not overlap
    assert outline_cells(fig) == {(0, 1), (1, 0), (1, 1), (2, 2)}


def test_map_scale_runs_to_the_largest_weight():
    fig = heatmap(W, LABELS, LABELS, color_scale="map")
    hm = fig.data[0]
    assert (hm.zmin, hm.zmax) == (0.0, 0.8)
    np.testing.assert_array_equal(np.array(hm.z, dtype=float), W)  # the colours use the weights themselves
    assert colorbar_ticks(fig)["uniform 1/3"] == pytest.approx(1 / 3)


def test_near_uniform_map_is_not_blank_on_the_map_scale():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.full(32, 50.0), size=32)  # every weight close to 1/32
    labels = [f"t ({i})" for i in range(32)]
    fixed = heatmap(w, labels, labels, color_scale="fixed").data[0]
    scaled = heatmap(w, labels, labels, color_scale="map").data[0]
    # On [0, 1] every cell sits in the bottom 6 % of the colour bar (white); on the map's scale they span it.
    assert float(np.nanmax(np.array(fixed.z, dtype=float))) / fixed.zmax < 0.06
    assert float(np.nanmax(np.array(scaled.z, dtype=float))) / scaled.zmax == pytest.approx(1.0)
    assert float(np.nanmin(np.array(scaled.z, dtype=float))) / scaled.zmax < 0.8


def test_row_scale_colours_each_row_by_its_largest_weight_and_hover_shows_the_true_weight():
    fig = heatmap(W, LABELS, LABELS, color_scale="row")
    hm = fig.data[0]
    z = np.array(hm.z, dtype=float)
    np.testing.assert_allclose(z, W / W.max(axis=1, keepdims=True))
    assert (hm.zmin, hm.zmax) == (0.0, 1.0)
    assert hm.customdata[2][2][2] == "0.800" and hm.text[2][2] == "0.800"  # hover and cell text: the weight
    assert hm.colorbar.title.text == "÷ row max"
    assert not any("uniform" in t for t in hm.colorbar.ticktext)  # a uniform row is 1 everywhere here


def test_row_scale_on_a_light_map_hovers_the_true_weights():
    fig = heatmap(W, LABELS, LABELS, color_scale="row", light=True)
    hm = fig.data[0]
    assert "%{customdata:.3f}" in hm.hovertemplate and "%{z" not in hm.hovertemplate
    np.testing.assert_allclose(np.array(hm.customdata, dtype=float), W)
    np.testing.assert_allclose(np.array(hm.z, dtype=float), np.round(W / W.max(axis=1, keepdims=True), 3))


def test_masked_cells_do_not_count_and_a_fully_masked_row_has_no_outline():
    w = np.array([[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.0, 0.0, 0.0]])
    mask = np.array([[True, False, False], [True, True, False], [False, False, False]])
    fig = heatmap(w, LABELS, LABELS, mask=mask, color_scale="row")
    z = np.array(fig.data[0].z, dtype=object)
    assert z[0][1] is None and z[2][0] is None  # masked cells stay gaps
    assert float(z[1][0]) == pytest.approx(0.3 / 0.7)
    assert outline_cells(fig) == {(0, 0), (1, 1)}
    assert "nan" not in json.dumps(json.loads(fig.to_json())).lower()
    colours, zrange = weight_colors(w, "map", mask)
    assert zrange == (0.0, 1.0) and np.isnan(colours[2]).all()


def test_an_all_zero_map_keeps_a_usable_range_and_draws_no_outline():
    z = np.zeros((2, 2))
    assert weight_colors(z, "map")[1] == (0.0, 1.0)
    np.testing.assert_array_equal(weight_colors(z, "row")[0], z)
    assert row_max_outline(z) is None


def test_plain_maps_and_bad_choices():
    plain = heatmap(W, LABELS, LABELS)  # no colour scale: no outline, no uniform mark
    assert len(plain.data) == 1 and plain.data[0].colorbar.tickvals is None
    with pytest.raises(ValueError, match="color_scale must be one of"):
        heatmap(W, LABELS, LABELS, color_scale="log")
    with pytest.raises(ValueError, match="kind='weights'"):
        heatmap(W, LABELS, LABELS, kind="diverging", color_scale="row")
    assert list(COLOR_SCALES) == ["fixed", "map", "row"]


def test_colorbar_ticks_never_crowd_the_uniform_mark():
    for n in (1, 2, 3, 4, 6, 10, 64):
        for lo, hi in ((0.0, 1.0), (0.0, 1.5 / n), (0.0, 0.9)):
            cb = weight_colorbar("map", (lo, hi), n)
            vals = sorted(cb["tickvals"])
            assert all(b - a >= 0.12 * (hi - lo) - 1e-12 for a, b in zip(vals, vals[1:], strict=False)), vals
            assert (f"uniform 1/{n}" in cb["ticktext"]) == (lo <= 1 / n <= hi)
