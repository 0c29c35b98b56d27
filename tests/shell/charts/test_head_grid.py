"""The clickable grid of every head (``charts.head_grid``) and the click read back (``charts.clicked_head``), shared
by "Inside a real model" and "What made it say that?"."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.shell import charts, i18n


def test_head_grid_is_clickable_and_outlines_the_chosen_head():
    values = np.arange(270, dtype=float).reshape(30, 9) / 270
    fig = charts.head_grid(values, title="every head", colorbar_title="weight", zrange=(0, 1), outlined=[(3, 5)])
    heat, dots = fig.data
    assert heat.type == "heatmap" and np.array(heat.z, dtype=float).shape == (30, 9)
    assert fig.layout.yaxis.autorange == "reversed"  # layer 0 on top
    assert heat.hoverinfo == "skip" and heat.text is None  # 270 cells: no numbers printed in them
    # One transparent marker per cell, where Plotly reports a click: x = head, y = layer
    assert dots.type == "scatter" and len(dots.x) == 270
    assert (int(dots.x[4 * 9 + 7]), int(dots.y[4 * 9 + 7])) == (7, 4)
    assert dots.customdata[3 * 9 + 5] == "0.119" and "layer %{y} · head %{x}" in dots.hovertemplate
    (box,) = fig.layout.shapes
    assert (box.x0, box.x1, box.y0, box.y1) == (4.5, 5.5, 2.5, 3.5) and box.line.color == charts.KEY_COLOR
    assert fig.layout.clickmode == "event+select"
    with pytest.raises(ValueError, match="outside"):
        charts.head_grid(values, title="", colorbar_title="", zrange=(0, 1), outlined=[(30, 0)])
    with pytest.raises(ValueError, match="n_layers, n_heads"):
        charts.head_grid(values.ravel(), title="", colorbar_title="")


def test_a_diverging_head_grid_is_white_at_zero_and_outlines_every_picked_head():
    values = np.linspace(-1, 2, 270).reshape(30, 9)
    fig = charts.head_grid(values, title="every head", colorbar_title="share", outlined=[(3, 5), (29, 8)],
                           kind="diverging", outline=(charts.DARK_OUTLINE, 2.5))
    heat, dots = fig.data
    assert heat.zmid == 0 and (heat.zmin, heat.zmax) == (-2, 2)  # white = 0, symmetric
    assert len(dots.x) == 270 and fig.layout.clickmode == "event+select"
    boxes = [(s.x0, s.y0, s.line.color, s.line.width) for s in fig.layout.shapes]
    assert boxes == [(4.5, 2.5, charts.DARK_OUTLINE, 2.5), (7.5, 28.5, charts.DARK_OUTLINE, 2.5)]


def test_a_clicked_point_names_its_head():
    grid_point = {"x": 4, "y": 0, "customdata": "-0.013"}  # a grid marker: x = head, y = layer
    scatter_point = {"x": 0.5, "y": -1.7, "customdata": ["L23H4", "0.903", "-1.700", 23, 4]}
    click = charts.clicked_head
    assert click({"selection": {"points": [grid_point]}}, 30, 9) == (0, 4)
    assert click({"selection": {"points": [scatter_point]}}, 30, 9) == (23, 4)
    assert click({"selection": {"points": [{"x": 1, "y": 1}, {"x": 8.0, "y": 29.0}]}}, 30, 9) == (29, 8)  # the last
    assert click({"selection": {"points": [{"x": 40, "y": 0}]}}, 30, 9) is None  # outside the grid
    assert click({"selection": {"points": [{"x": 9, "y": 0}, {"y": 2}]}}, 30, 9) is None  # outside, no x
    assert click(None, 30, 9) is None and click({"selection": {"points": []}}, 30, 9) is None


def test_the_grids_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        grid = charts.head_grid(np.full((2, 3), 0.25), title="İlk token çukuru, ılık", colorbar_title="ağırlık",
                                zrange=(0.0, 1.0), outlined=[(1, 2)])
    assert grid.layout.title.text == "İlk token çukuru, ılık" and grid.layout.separators == ",."
    assert grid.data[1].hovertemplate == "katman %{y} · kafa %{x}: %{customdata}<extra></extra>"
    assert list(grid.data[1].customdata[:2]) == ["0,250", "0,250"]
    assert grid.layout.yaxis.title.text == "katman" and grid.layout.xaxis.title.text == "kafa"
