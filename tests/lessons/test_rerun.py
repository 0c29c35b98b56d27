"""Every page's sections are replayed from Streamlit's cache, and a replay is never stale.

Moving a widget reruns the whole script; the sections that do not depend on that widget
must not build (or serialize) their Plotly figures again (issue #9's rerun budget, see
``app/sections``): counted as ``go.Figure`` constructions during a rerun. And no section
may miss an input in its cache key: after each widget move the page drawn from the cache
must equal the page drawn with empty caches.
"""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
import streamlit as st

from explorer.lessons import LESSONS
from tests.apptest_utils import ROOT, app_at, assert_clean, figures, layout, option_value

PAGES = [entry.name for entry in LESSONS]


@pytest.fixture
def figure_count(monkeypatch):
    """A list that gets one entry per ``go.Figure`` built while the fixture is active."""
    built: list[int] = []
    original = go.Figure.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    def start():
        monkeypatch.setattr(go.Figure, "__init__", counting)
        return built

    return start


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_rerun_at_unchanged_settings_builds_no_figure(page, figure_count):
    at = app_at(page)
    before, placed = figures(at), layout(at)
    assert before, f"{page} draws no chart"
    built = figure_count()
    at.run()
    assert_clean(at)
    assert built == [], f"{page}: {len(built)} figures built again on a rerun at unchanged settings"
    assert figures(at) == before  # the replayed charts are the same charts
    assert layout(at) == placed, f"{page}: a replay put elements in other containers than the first run"


def test_every_lesson_folder_is_in_the_navigation():
    folders = sorted(p.parent.name for p in (ROOT / "explorer" / "lessons").glob("*/page.py"))
    assert folders == sorted(PAGES), "a lesson folder is missing from explorer.lessons.LESSONS, or the other way"



TIMED = re.compile(r"took \S+ s on this server just now.*")
"""A wall time the page measured (causes' sweep estimate, ``causes.model.sweep_estimate``): a fresh run with empty
caches times it again, so its number (and the estimate made from it) is masked, not compared."""


ESTIMATED = re.compile(r"(under a second|about \S+ (s|min)) on this server")
"""A section's estimated time in its switch's label (``textviews.passes_time``, from a pass the page timed): a fresh
run with empty caches times that pass again, so the estimate may round to another second; masked, not compared."""


def _snapshot(at) -> list:
    """What the learner sees in the main area: every chart, text and table, in order (a measured wall time
    masked: :data:`TIMED`)."""
    out: list = [("charts", figures(at))]
    for kind in ("title", "header", "subheader", "markdown", "caption", "latex", "code", "info", "warning",
                 "error", "success", "metric", "text"):
        out.append((kind, [TIMED.sub("took … (timed)", str(el.value)) for el in getattr(at.main, kind)]))
    out.append(("dataframe", [el.value.to_csv() for el in at.main.dataframe]))
    out.append(("layout", [(depth, kind, ESTIMATED.sub("… (estimated) on this server", name))
                           for depth, kind, name in layout(at)]))  # and every element in the same container
    return out



def _moves(at) -> list[tuple[str, str, object]]:
    """``(kind, key, value)``: every page widget of these kinds moved to another valid value. A number goes to its
    least value (its greatest when it is there already): a page's numbers are cheapest there (1 generated token, not
    32; a window of 1, not 54), and any other value than the one the cache holds shows a missing cache key alike."""
    moves: list[tuple[str, str, object]] = []
    main = at.main
    for w in main.slider:
        if isinstance(w.value, int | float) and not isinstance(w.value, bool) and w.max != w.min:
            moves.append(("slider", w.key, w.min if w.value != w.min else w.max))
    for w in main.number_input:
        if w.max is not None and w.min is not None and w.max != w.min:
            moves.append(("number_input", w.key, w.min if w.value != w.min else w.max))
    for w in main.selectbox:
        if len(w.options) > 1:
            moves.append(("selectbox", w.key, len(w.options) - 1 if w.index != len(w.options) - 1 else 0))
    for w in main.select_slider:
        if len(w.options) > 1:
            first = w.options[0]  # a label; a control whose values are codes (strings) takes the code (= label in en)
            moves.append(("select_slider", w.key, first if isinstance(w.value, str) else option_value(first)))
    for w in main.toggle:
        moves.append(("toggle", w.key, not w.value))
    return moves


def _apply(at, kind: str, key: str, value) -> None:
    widget = next(w for w in getattr(at.main, kind) if w.key == key)
    if kind == "selectbox":
        widget.select_index(value)
    else:
        widget.set_value(value)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_replayed_page_equals_a_fresh_run_after_every_move(page):
    """No section misses an input in its cache key: after each widget move, the page drawn from
    Streamlit's cache (replayed sections + rebuilt ones) equals the page drawn with empty caches."""
    at = app_at(page, session={"sentence": "the dog saw the cat", "d_k": 3, "seed": 7})
    moves = [m for m in _moves(at) if m[1]][:6]
    assert moves, f"{page}: no page widget to move"
    for kind, key, value in moves:
        _apply(at, kind, key, value)
        at.run()
        assert_clean(at)
        replayed = _snapshot(at)
        st.cache_data.clear()
        at.run()
        assert _snapshot(at) == replayed, f"{page}: after moving {key} to {value!r}, a replay differs from a fresh run"
