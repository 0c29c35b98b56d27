"""Shared figure builders: the attention heat map (:mod:`.heatmaps`), the clickable head grid (:mod:`.head_grid`)
and the bar charts (:mod:`.bars`), with the geometry, colours and labels they share (:mod:`.geometry`,
:mod:`.colors`, :mod:`.labels`: a visitor's text stays text on a chart).

A lesson draws every chart through :func:`show_fig` or :func:`into` (:mod:`.door`), never ``st.plotly_chart``,
and imports from this package only, and only names of :data:`__all__` (``tests/test_imports.py`` checks it):
the builders first; for a figure a builder cannot draw (the causal mask maps, the multi-head grids, the KV cache's
bars), the public geometry and colours, which follow the same rules. Importing the package also sets how figures
are encoded for the browser (below).
"""

from __future__ import annotations

import plotly.io as pio

from explorer.shell import plotly_fast
from explorer.shell.charts.bars import paired_bars, weights_bar
from explorer.shell.charts.colors import (
    COLOR_SCALES,
    DIVERGING_SCALE,
    MASKED_COLOR,
    WEIGHTS_SCALE,
    weight_colorbar,
    weight_colors,
)
from explorer.shell.charts.door import into, show_fig
from explorer.shell.charts.geometry import (
    BAR_PLOT_PX,
    CELL_TEXT_MAX,
    COLORBAR_AT,
    PHONE_CHART_PX,
    auto_tick_labels,
    bar_margin,
    bar_text,
    cell_text_font,
    cell_text_size,
    colorbar_of_px,
    colorbar_px,
    fit_ticks,
    heatmap_margin,
    max_ticks,
    plot_px,
    text_px,
    tick_angles,
    tick_positions,
)
from explorer.shell.charts.head_grid import DARK_OUTLINE, KEY_COLOR, clicked_head, head_grid
from explorer.shell.charts.heatmaps import HOVER_CELL_MAX, heatmap
from explorer.shell.charts.labels import axis_title, chart_title, escape_label, title_top

__all__ = [
    # the one door every chart goes through
    "into", "show_fig",
    # builders
    "clicked_head", "head_grid", "heatmap", "paired_bars", "weights_bar",
    # labels
    "axis_title", "chart_title", "escape_label", "title_top",
    # colour scales
    "COLOR_SCALES", "DARK_OUTLINE", "DIVERGING_SCALE", "KEY_COLOR", "MASKED_COLOR", "WEIGHTS_SCALE", "weight_colorbar",
    "weight_colors",
    # geometry, for figures of a lesson's own
    "BAR_PLOT_PX", "CELL_TEXT_MAX", "COLORBAR_AT", "HOVER_CELL_MAX", "PHONE_CHART_PX", "auto_tick_labels",
    "bar_margin", "bar_text", "cell_text_font", "cell_text_size", "colorbar_of_px", "colorbar_px", "fit_ticks",
    "heatmap_margin", "max_ticks", "plot_px", "text_px", "tick_angles", "tick_positions",
]

# Figures go to the browser through plotly.io.to_json (show_fig, either door). With orjson installed, Plotly first
# offers the whole figure to orjson, which refuses the object arrays of every heat map (labels, formatted
# values, None gaps) and keeps a reference to each of their items (orjson 3.8.3: about 0.3 MB lost per 64 x 64
# map, so a long session grew without bound); Plotly then cleans the figure and encodes it again. The standard
# json encoder takes them directly: no leak, and faster (17 ms instead of 24 ms for a 64 x 64 map). Same JSON values.
pio.json.config.default_engine = "json"
# plotly.io.to_json's fig.to_dict(): the same dict, faster (see plotly_fast). It still pays with the component door,
# which sends the same to_json: a 64 x 64 heat map in 8.6 ms instead of 23.6, 6 x 6 in 0.9 instead of 1.3 (2026-12-07,
# load 7).
plotly_fast.install()
