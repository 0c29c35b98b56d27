"""Issue 47 on a touch phone (390 × 844): chart labels clear of the cells and curves they name, and tables that fit
the column or say they scroll, measured from the drawn boxes.

The figures' layouts are checked by the charts' unit tests; here what only a browser shows: where Plotly draws a
label at a phone's width, and whether a table's grid is wider than its column (and its scroll shadow shows).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import App, wait_laid_out

pytestmark = pytest.mark.e2e

# Box of a chart's plot area and of its annotations' texts (``contains``: annotations whose text has it).
BOXES_JS = """([key, contains]) => {
  const chart = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
  };
  return {plot: box(chart.querySelector('.draglayer .nsewdrag')),
          notes: [...chart.querySelectorAll('g.annotation')].filter(a => a.textContent.includes(contains))
                   .map(a => ({text: a.textContent, ...box(a.querySelector('text'))}))};
}"""

# Every visible table: how much wider its grid is than its column, and its scroll shadows' opacities (``end``: after
# scrolling each to its end).
TABLES_JS = """(end) => [...document.querySelectorAll('[data-testid="stDataFrame"]')].filter(d => d.offsetParent)
  .map(d => {
  const s = d.querySelector('.dvn-scroller');
  if (end && s) s.scrollLeft = s.scrollWidth;
  return {hidden_px: s ? s.scrollWidth - s.clientWidth : 0, text: d.innerText.slice(0, 40),
          left: +getComputedStyle(d, '::before').opacity, right: +getComputedStyle(d, '::after').opacity};
})"""


def boxes(app: App, key: str, contains: str) -> dict:
    app.page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    return app.page.evaluate(BOXES_JS, [key, contains])


def test_head_band_labels_stay_above_the_cells_and_the_mean_map_note_names_its_title(phone):
    phone.open("multihead")
    wait_laid_out(phone)
    for key in ("mh_fig_W_q", "mh_fig_W_k", "mh_fig_W_v"):
        got = boxes(phone, key, "head")
        assert [n["text"] for n in got["notes"]] == ["head 0", "head 1"], got
        for note in got["notes"]:  # above the plot: at 13 px the band's labels reached 4 px into the cells
            assert note["y1"] <= got["plot"]["y0"] + 0.5, (key, note, got["plot"])
    w_o = boxes(phone, "mh_fig_W_o", "h")
    assert [n["text"] for n in w_o["notes"]] == ["h0", "h1"]
    assert all(n["x0"] >= w_o["plot"]["x1"] - 0.5 for n in w_o["notes"]), w_o  # right of the cells
    assert not phone.exceptions()


def test_the_dial_note_stays_above_its_curves(phone):
    phone.open("lookup")
    wait_laid_out(phone)
    got = boxes(phone, "lookup_fig_dial", "1/√d_k =")
    (note,) = got["notes"]
    assert note["y1"] <= got["plot"]["y0"] + 0.5, got  # inside the plot it lay on the distance curve's start


def test_tables_fit_a_phone_or_show_a_shadow_where_columns_are_hidden(phone):
    phone.open("two-sentences")
    wait_laid_out(phone)
    tables = phone.page.evaluate(TABLES_JS, False)
    assert tables[0]["hidden_px"] <= 1, tables[0]  # the word table: 3 columns fit (5 hid 200 px)
    assert any(t["hidden_px"] > 1 for t in tables), tables  # the positional table still scrolls: it says so
    for t in tables:
        assert t["right"] == (1 if t["hidden_px"] > 1 else 0) and t["left"] == 0, t
    phone.page.evaluate(TABLES_JS, True)
    phone.page.wait_for_timeout(300)
    for t in phone.page.evaluate(TABLES_JS, False):  # scrolled to the end: the hidden columns are now on the left
        assert (t["left"], t["right"]) == ((1, 0) if t["hidden_px"] > 1 else (0, 0)), t
