"""Issue 47, on screen: a map's key labels fit the width it is drawn at (``geometry.fit_ticks``, ``plotly_chart.js``).

Every key is labelled while the labels fit the drawn map (at 1440 px the walkthrough's 29-token map has room for all
29; the figure's phone ticks labelled every fifth), and where they do not (a phone's head grid: panels 28 px wide) the
labels shown are evenly spaced and never touch (before, five labels on end overlapped in each labelled panel).
What only a browser shows: the labels Plotly draws at the chart's width.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import DESKTOP, WALK_WEIGHTS, wait_laid_out

pytestmark = pytest.mark.e2e

SENTENCE = ("the quick brown fox jumps over the lazy dog and then the cat sat on the mat while a bird sang a long "
            "song about the quick brown fox")  # 29 tokens
# Every x axis of chart ``key`` that shows tick labels: each label's position (its tick's value) and drawn box.
KEY_LABELS_JS = """(key) => {
  const g = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const L = g._fullLayout;
  return Object.keys(L).filter((k) => /^xaxis\\d*$/.test(k) && L[k].showticklabels).map((k) =>
    [...g.querySelectorAll(`g.${L[k]._id}tick`)].filter((t) => t.textContent).map((t) => {
      const r = t.querySelector('text').getBoundingClientRect();
      return {x: t.__data__.x, text: t.textContent, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom};
    }));
}"""


def labels_of(app, key: str) -> list[list[dict]]:
    app.page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    return app.page.evaluate(KEY_LABELS_JS, key)


def assert_even_and_apart(axis: list[dict]) -> None:
    """The labels of one axis: from the first key, one step apart throughout, no two boxes touching."""
    positions = [t["x"] for t in axis]
    assert positions[0] == 0 and len({b - a for a, b in zip(positions, positions[1:], strict=False)}) <= 1, positions
    for a, b in zip(axis, axis[1:], strict=False):
        assert a["x1"] <= b["x0"] + 0.5, (a, b)  # left to right, clear of each other


def test_a_long_map_labels_every_key_where_they_fit(st_app):
    st_app.page.set_viewport_size(DESKTOP)
    st_app.open("", {"sentence": SENTENCE})
    wait_laid_out(st_app)
    (axis,) = labels_of(st_app, WALK_WEIGHTS)
    assert [t["x"] for t in axis] == list(range(29)), [t["text"] for t in axis]
    assert_even_and_apart(axis)
    assert not st_app.exceptions()


def test_a_phones_head_grid_labels_its_keys_evenly_and_apart(phone):
    phone.open("multihead", {"n_heads": 8, "sentence": " ".join(SENTENCE.split()[:21])})
    wait_laid_out(phone)
    panels = labels_of(phone, "mh_fig_heads")
    assert len(panels) == 3, panels  # the bottom panel of each of the grid's three columns
    for axis in panels:
        assert len(axis) >= 2, axis
        assert_even_and_apart(axis)
    assert not phone.exceptions()
