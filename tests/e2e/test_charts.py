"""What only a browser shows of the chart door (``explorer/shell/charts/door.py``, issue 47 items 3-4): a changed
control redraws a chart in place (the same DOM node, one Plotly draw), a learner's zoom survives the change, the dark
theme re-themes the charts, and the toolbar saves SVG and PNG at a print size with the chart's title.

Each fails with ``ATTENTION_CHART_DOOR=plotly_chart`` (``st.plotly_chart``: a changed figure is a new element,
mounted and drawn twice; zoom lost; one PNG button), and the dark one with the ``[theme]`` config of before (one light
custom theme). The head grids' clicks are checked on the real-model pages (``test_real_model.py``, ``test_causes.py``).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.e2e.conftest import WALK_WEIGHTS

pytestmark = pytest.mark.e2e

WATCH_JS = """(key) => {
  const g = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  window.__chart = {node: g, draws: 0};
  g.on('plotly_afterplot', () => { window.__chart.draws += 1; });
  return !!g;
}"""
SAME_NODE_JS = "(key) => document.querySelector('.st-key-' + key + ' .js-plotly-plot') === window.__chart.node"
THEME_JS = """(key) => {
  const g = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  return {paper: g._fullLayout.paper_bgcolor, font: g._fullLayout.font.color,
          page: getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor};
}"""
X_RANGE_JS = """(key) => {
  const a = document.querySelector('.st-key-' + key + ' .js-plotly-plot')._fullLayout.xaxis;
  return {range: a.range.slice(), auto: a.autorange};
}"""

TITLE_JS = """(key) => document.querySelector('.st-key-' + key + ' .js-plotly-plot')._fullLayout.title.text
  .replace(/<[^>]+>/g, '')"""


def _open(st_app) -> None:
    """The walkthrough at defaults, its weights map drawn."""
    st_app.open()
    st_app.page.wait_for_function("(key) => { const g = document.querySelector('.st-key-' + key + ' .js-plotly-plot');"
                                  " return !!(g && g._fullLayout); }", arg=WALK_WEIGHTS, timeout=60_000)


def _luminance(css_color: str) -> float:
    """0 (black) to 1 (white) of ``#rrggbb`` or ``rgb(r, g, b)``."""
    if css_color.startswith("#"):
        rgb = [int(css_color[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        rgb = [float(v) for v in css_color[css_color.index("(") + 1:css_color.index(")")].split(",")[:3]]
    return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255


def test_a_changed_control_redraws_the_chart_in_place_with_one_draw(st_app):
    """A new seed: the weights map plots new numbers in the same ``.js-plotly-plot`` node, drawn once."""
    _open(st_app)
    assert st_app.page.evaluate(WATCH_JS, WALK_WEIGHTS)
    old = st_app.z_signature(WALK_WEIGHTS)
    st_app.set_widget("seed", 43)
    st_app.wait_chart_changed(WALK_WEIGHTS, old)
    st_app.page.wait_for_timeout(500)  # a second draw, if any, comes within a frame or two of the first
    assert st_app.page.evaluate(SAME_NODE_JS, WALK_WEIGHTS), "the chart was mounted again (a new node)"
    assert st_app.page.evaluate("() => window.__chart.draws") == 1


def test_a_learners_zoom_survives_a_changed_control(st_app):
    """Drag a box over the weights map's left half (Plotly's zoom), type a new seed: the new numbers keep that x
    range."""
    _open(st_app)
    plot = st_app.page.locator(f".st-key-{WALK_WEIGHTS} .nsewdrag").first
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    mouse = st_app.page.mouse
    mouse.move(box["x"] + 5, box["y"] + 5)
    mouse.down()
    mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5, steps=8)
    mouse.up()
    st_app.page.wait_for_timeout(500)
    zoomed = st_app.page.evaluate(X_RANGE_JS, WALK_WEIGHTS)
    assert zoomed["auto"] is False, zoomed
    old = st_app.z_signature(WALK_WEIGHTS)
    mouse.move(1, 1)
    st_app.set_widget("seed", 43)
    st_app.wait_chart_changed(WALK_WEIGHTS, old)
    after = st_app.page.evaluate(X_RANGE_JS, WALK_WEIGHTS)
    assert after["auto"] is False and after["range"] == pytest.approx(zoomed["range"]), (zoomed, after)


def test_the_dark_theme_re_themes_the_charts(st_app):
    """The viewer's system turns dark while the page is open: the page and its charts turn dark, text light."""
    st_app.page.emulate_media(color_scheme="light")
    try:
        _open(st_app)
        light = st_app.page.evaluate(THEME_JS, WALK_WEIGHTS)
        assert _luminance(light["paper"]) > 0.8 and _luminance(light["font"]) < 0.7, light
        st_app.page.emulate_media(color_scheme="dark")
        st_app.page.wait_for_function(f"() => ({THEME_JS})('{WALK_WEIGHTS}').paper !== '{light['paper']}'",
                                      timeout=30_000)
        dark = st_app.page.evaluate(THEME_JS, WALK_WEIGHTS)
        assert _luminance(dark["page"]) < 0.2, dark
        assert _luminance(dark["paper"]) < 0.2 and _luminance(dark["font"]) > 0.7, dark
        st_app.screenshot("charts_dark")
    finally:
        st_app.page.emulate_media(color_scheme="light")


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_the_toolbar_saves_svg_and_png_at_a_print_size_with_the_title(st_app, fmt):
    """The weights map's toolbar: "Download as SVG" / "Download as PNG" save a 1600 px wide image (PNG at scale 2:
    3200 px) with the chart's title in it."""
    _open(st_app)
    chart = st_app.page.locator(f".st-key-{WALK_WEIGHTS} .js-plotly-plot").first
    chart.scroll_into_view_if_needed()
    chart.hover()  # Plotly shows its toolbar while the pointer is on the chart
    button = st_app.page.locator(f".st-key-{WALK_WEIGHTS} .modebar-btn[data-title^='Download as {fmt.upper()}']")
    with st_app.page.expect_download(timeout=60_000) as info:
        button.first.click()
    download = info.value
    assert download.suggested_filename.endswith("." + fmt), download.suggested_filename
    data = Path(download.path()).read_bytes()
    title = st_app.page.evaluate(TITLE_JS, WALK_WEIGHTS)
    if fmt == "svg":
        text = data.decode()
        assert text.startswith("<svg") and 'width="1600"' in text[:400], text[:400]
        assert title and title in text, title
    else:
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", data[16:24])
        assert width == 3200 and height > 0, (width, height)
