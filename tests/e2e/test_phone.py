"""A phone (390×844, touch): no toolbar covers a chart's title or the text above it; wide formulas say they scroll;
the first tap on a head opens that head.

Issue 30. On a touch screen there is no hover, so what a mouse shows on hover is shown all the time: Plotly's mode
bar (it sat on every chart's title and legend) and Streamlit's element toolbar (search, download, full screen:
it sat on the last line of the text above a table). ``explorer/shell/app.css`` hides the first on touch screens
(``@media (hover: none)``) and gives the second its own room. A display formula wider than the phone scrolls
sideways with a shadow on the hidden side, drawn at the text's size (not KaTeX's 1.21 times it). These pages at their
defaults, in a touch context (``has_touch``, ``is_mobile``), checked from the boxes the browser laid out.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import OBSERVER_JS, TIMEOUT_MS, App

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
PAGES = ["", "lookup", "scaling", "causal", "multihead"]  # the walkthrough and the lessons with tables and formulas

# Visible toolbars on the page and what they cover: a toolbar overlaps another element container's box (a text,
# a chart, a table above it), by more than 1 px both ways.
TOOLBARS_JS = """() => {
  const shown = (e) => e.offsetParent !== null && e.getBoundingClientRect().height > 0
                       && parseFloat(getComputedStyle(e).opacity) > 0;
  const modebars = [...document.querySelectorAll('.modebar-container')].filter(shown).length;
  const containers = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
    .filter((c) => c.getBoundingClientRect().height > 0 && !c.querySelector('[data-testid="stElementContainer"]'));
  const covered = [];
  let toolbars = 0;
  for (const t of document.querySelectorAll('[data-testid="stElementToolbar"]')) {
    if (!shown(t) || t.closest('details:not([open])')) continue;  // in a closed expander: clipped, not seen
    toolbars += 1;
    const r = t.getBoundingClientRect(), own = t.closest('[data-testid="stElementContainer"]');
    for (const c of containers) {
      if (c === own || c.contains(t) || t.contains(c)) continue;
      for (const n of c.querySelectorAll('p, li, h1, h2, h3, span.katex, [data-testid="stCaptionContainer"]')) {
        const range = document.createRange();
        range.selectNodeContents(n);  // the text's own line boxes, not its block's full width
        const hit = [...range.getClientRects()].some((b) => b.width > 0
          && Math.min(r.right, b.right) - Math.max(r.left, b.left) > 1
          && Math.min(r.bottom, b.bottom) - Math.max(r.top, b.top) > 1);
        if (hit) { covered.push(n.innerText.slice(0, 60)); break; }
      }
    }
  }
  return {modebars, toolbars, covered};
}"""

# Every display formula: its width against its box, whether it scrolls, its font size against the page's text.
FORMULAS_JS = """() => {
  const paragraphs = document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p');
  // the body text's size (captions are smaller)
  const text = Math.max(...[...paragraphs].map((p) => parseFloat(getComputedStyle(p).fontSize)));
  return [...document.querySelectorAll('.katex-display')].filter((e) => e.getBoundingClientRect().height > 0)
    .map((e) => {
      const cs = getComputedStyle(e);
      const before = e.scrollLeft;
      e.scrollLeft = e.scrollWidth;
      const scrolled = e.scrollLeft - before;
      e.scrollLeft = before;
      return {tex: (e.querySelector('annotation') || {}).textContent?.slice(0, 50),
              wide: e.scrollWidth > e.clientWidth + 1,
              right: e.getBoundingClientRect().right, overflow: cs.overflowX, scrolled, shadow: cs.backgroundImage,
              font: parseFloat(getComputedStyle(e.querySelector('.katex')).fontSize), text};
    });
}"""


@pytest.fixture(scope="module")
def phone(browser, ready):
    """A touch phone's browser context (no hover: CSS ``@media (hover: none)`` applies)."""
    ctx = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    ctx.add_init_script(OBSERVER_JS)
    ctx.set_default_timeout(TIMEOUT_MS)
    page = ctx.new_page()
    yield App(page, ready["base"])
    ctx.close()


@pytest.mark.parametrize("path", PAGES)
def test_on_a_touch_screen_no_toolbar_covers_a_title_or_the_text_above(phone, path):
    phone.open(path)
    phone.page.wait_for_timeout(1500)  # the toolbars appear once their element has drawn
    assert not phone.exceptions()
    found = phone.page.evaluate(TOOLBARS_JS)
    phone.screenshot(f"phone-touch-{path or 'walkthrough'}")
    assert found["modebars"] == 0, found  # Plotly's mode bar stays hidden on touch
    assert found["covered"] == [], found


def test_the_element_toolbar_is_really_shown_on_touch(phone):
    """The check above is not empty: on a touch screen Streamlit's toolbars are shown without a hover."""
    phone.open("lookup")
    phone.page.wait_for_timeout(1500)
    assert phone.page.evaluate(TOOLBARS_JS)["toolbars"] >= 1


@pytest.mark.parametrize("path", ["", "scaling", "multihead"])
def test_a_formula_wider_than_a_phone_scrolls_and_shows_it(phone, path):
    phone.open(path)
    formulas = phone.page.evaluate(FORMULAS_JS)
    assert formulas, "no display formula on the page"
    for f in formulas:
        assert f["font"] <= f["text"] * 1.05, f  # drawn at the text's size on a phone
        assert f["right"] <= PHONE["width"], f  # the box stays on the screen: its content scrolls inside it
        if f["wide"]:
            assert f["overflow"] in ("auto", "scroll") and f["scrolled"] > 0, f  # the rest can be reached
            assert f["shadow"].count("radial-gradient") == 2, f  # and a shadow says there is more
    if path == "scaling":
        assert any(f["wide"] for f in formulas), formulas  # the saturation page's formulas are wider than a phone


def test_the_first_tap_on_a_head_opens_that_head(phone):
    """Plotly builds a click's points from the last hover, and a finger gives no hover: without
    ``explorer/shell/touch_tap.js`` the first tap on "Every head at a glance" opened nothing and each later tap the
    head tapped before it. Every tap, the first included, opens the head under the finger."""
    phone.open("real-model")
    phone.page.wait_for_timeout(1500)
    for layer, head in ((3, 5), (12, 8), (7, 1)):
        old, runs = phone.z_signature("rm_fig_head"), phone.runs()
        point = phone.cell_point("rm_grid", layer, head)
        phone.page.touchscreen.tap(point["x"], point["y"])
        phone.wait_chart_changed("rm_fig_head", old)
        phone.settle(runs)
        title = phone.page.locator("h2").filter(has_text="One head up close").first.inner_text()
        assert title == f"One head up close: layer {layer}, head {head}", title
        assert f"rm_layer={layer}" in phone.page.url and f"rm_head={head}" in phone.page.url, phone.page.url
    assert not phone.exceptions()


# Each chart's plot area (Plotly's own layout), its key labels drawn and its colour bar's box against the key labels.
MAP_JS = """(key) => {
  const g = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const s = g._fullLayout._size;
  const keys = [...g.querySelectorAll('g.xtick > text')].filter((t) => t.textContent.trim());
  const bar = g.querySelector('g.colorbar');
  const lowest = Math.max(...keys.map((t) => t.getBoundingClientRect().bottom));
  return {plot_w: s.w, width: g._fullLayout.width, keys: keys.length, orientation: g._fullData[0].colorbar.orientation,
          bar_top: bar ? bar.getBoundingClientRect().top : null, keys_bottom: lowest,
          chart_bottom: g.getBoundingClientRect().bottom, bar_bottom: bar ? bar.getBoundingClientRect().bottom : null};
}"""


def test_a_real_model_map_on_a_phone_keeps_its_width_for_its_keys(phone):
    """Issue 30: at 390 px the default 10-token head map was 113 of its 358 px wide (the side colour bar and its
    "uniform 1/10" label took as much) and labelled 2 of its 10 keys. Its colour bar is below it now: the plot is
    more than half the chart's width, at least 4 keys are labelled, and the bar lies under the key labels, inside
    the chart. The mean map and the grouped-query maps are laid out the same way."""
    phone.open("real-model")
    phone.page.wait_for_timeout(1000)
    for key in ("rm_fig_head", "rm_fig_layer_mean", "rm_fig_group_0"):
        phone.page.locator(f".st-key-{key}").scroll_into_view_if_needed()
        m = phone.page.evaluate(MAP_JS, key)
        assert m["orientation"] == "h", (key, m)
        assert m["plot_w"] > m["width"] / 2, (key, m)
        assert m["keys"] >= 4, (key, m)
        assert m["keys_bottom"] <= m["bar_top"] and m["bar_bottom"] <= m["chart_bottom"] + 1, (key, m)
    assert not phone.exceptions()
