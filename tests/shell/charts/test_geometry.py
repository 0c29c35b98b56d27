"""Unit tests of the chart geometry (explorer/shell/charts/geometry.py): text widths, ticks, cell text, margins."""

import re
from pathlib import Path

import pytest

from explorer.shell.charts import (
    BAR_PLOT_PX,
    auto_tick_labels,
    bar_margin,
    bar_text,
    cell_text_size,
    colorbar_px,
    heatmap_margin,
    tick_angles,
    tick_positions,
)
from explorer.shell.charts.geometry import AXIS_PAD_PX, UPRIGHT_X_PX, WIDE_CELL_TEXT_PX, theme_text_px

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(("text", "size", "measured_em"), [
    ("0", 12, 0.497), ("mat (5)", 12, 2.96), ("d_model 0", 12, 4.43), ("uniform 1/6", 12, 4.88),
    ("mean", 14, 2.36), ("weight", 14, 2.86)])
def test_theme_widths_are_a_little_more_than_chromium_draws(text, size, measured_em):
    """The widths measured in Chromium (Streamlit theme) that the margins rest on: never under, at most 10 % over."""
    assert measured_em * size <= theme_text_px(text, size) <= 1.1 * measured_em * size


def test_tick_positions_keep_first_and_last_without_crowding():
    """Issue 18, item 8: every key label, or a thinning that keeps the first and the last."""
    for n in (1, 2, 6, 7, 33, 34, 63, 64, 128):
        for max_ticks in (3, 8, 12, 24, 40):
            ticks = tick_positions(n, max_ticks)
            every = max(1, -(-n // max_ticks))
            assert ticks[0] == 0 and ticks[-1] == n - 1 and len(ticks) <= max_ticks, (n, max_ticks, ticks)
            assert all(b - a >= every for a, b in zip(ticks, ticks[1:], strict=False)), (n, max_ticks, ticks)
            if n <= max_ticks:
                assert ticks == list(range(n))
    assert tick_positions(0, 8) == [] and tick_positions(8, 3) == [0, 3, 7]


def test_slanted_labels_only_on_wide_columns():
    assert tick_angles(6, 300) == [0, -45, -90]  # 50 px columns: 45° labels do not touch
    assert tick_angles(12, 300) == [0, -90]  # 25 px: upright or on end


def test_auto_tick_labels_are_formatted_as_plotly_does():
    assert auto_tick_labels(0, 1) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert auto_tick_labels(-3, 3) == ["−3", "−2", "−1", "0", "1", "2", "3"]  # U+2212, as Plotly draws a minus
    assert auto_tick_labels(0, 0.37)[-1] == "0.35"


def test_cell_text_size_on_a_phone():
    """Issue 18, item 13: 12 px while the text fits a phone's cell with a 3 px gap, else 10 px, else none."""
    assert cell_text_size(["0.128"], 3, ["The (0)"]) == 12 and cell_text_size(["0.128"], 4, ["The (0)"]) == 10
    assert cell_text_size(["0.128"], 6, ["The (0)"]) is None
    assert cell_text_size(["0.1"], 6, ["a"]) == 12 and cell_text_size(["0.128"], 1, ["a"], width_px=60) is None


def test_bar_values_upright_on_end_or_not_at_all():
    """Issue 18, item 10: values on bars never touch on a phone."""
    assert bar_text(["0.123"] * 6, 6)["textangle"] == 0
    assert bar_text(["0.123"] * 12, 12)["textangle"] == -90  # about one line wide on end
    assert bar_text(["0.123"] * 24, 24) == dict(text=None)  # 8 px bars: the hover alone
    assert bar_text(["0.123"] * 6, 6, 2)["textangle"] == -90  # two series a group: bars half as wide
    assert BAR_PLOT_PX / 6 * 0.8 / 2 >= 17


def test_margins_hold_the_labels():
    """Issue 20: each margin is what its labels need, so Plotly lays a figure out once."""
    short = heatmap_margin(["a"], ["b"], x_upright=True, colorbar=0, top=10)
    assert short == dict(l=int(-(-(theme_text_px("a", 12) + AXIS_PAD_PX) // 1)), r=14, t=10, b=UPRIGHT_X_PX)
    long = heatmap_margin(["a much longer label"], ["a much longer label"], x_upright=False, colorbar=90, top=40)
    assert long["l"] > short["l"] and long["b"] > UPRIGHT_X_PX and long["r"] == 90  # on end: as tall as they are long
    assert bar_margin(["0.75"], 10)["l"] < bar_margin(["1,000,000"], 10)["l"]
    assert 104 <= colorbar_px(["0", "uniform 1/6", "0.5", "1"], "weight") <= 110  # measured: 104 (test_heatmaps)
    assert colorbar_px([], "a much longer colour bar title") > colorbar_px(["0", "1"], "")  # the title can be wider


def test_app_css_hides_every_wide_only_cell_text_below_its_width():
    """Every ``cells-min-W`` family of :func:`cell_text_font` has a container query hiding it below ``W`` px."""
    css = (ROOT / "explorer" / "shell" / "app.css").read_text()
    assert 'container-type: inline-size' in css
    hidden_below = {}
    for limit, body in re.findall(r"@container \(max-width: (\d+)px\) \{(.*?)\}\s*\}", css, flags=re.S):
        for width in re.findall(r"cells-min-(\d*)", body):
            for w in ([int(width)] if width else WIDE_CELL_TEXT_PX):
                hidden_below[w] = max(hidden_below.get(w, 0), int(limit) + 1)
    assert hidden_below == {w: w for w in WIDE_CELL_TEXT_PX}
    app = (ROOT / "streamlit_app.py").read_text()
    assert 'st.html(Path(__file__).parent / "explorer" / "shell" / "app.css")' in app
