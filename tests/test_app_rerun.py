"""A rerun at unchanged settings replays every page's sections from Streamlit's cache.

Moving a widget reruns the whole script; the sections that do not depend on that widget
must not build (or serialize) their Plotly figures again (issue #9's rerun budget, see
``app/sections``). Measured by counting ``go.Figure`` constructions during the rerun.
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from tests.apptest_utils import ROOT, app_at, assert_clean, figures

PAGES = sorted(p.name for p in (ROOT / "app_pages").glob("*.py"))


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


@pytest.mark.parametrize("page", PAGES)
def test_rerun_at_unchanged_settings_builds_no_figure(page, figure_count):
    at = app_at(page)
    before = figures(at)
    assert before, f"{page} draws no chart"
    built = figure_count()
    at.run()
    assert_clean(at)
    assert built == [], f"{page}: {len(built)} figures built again on a rerun at unchanged settings"
    assert figures(at) == before  # the replayed charts are the same charts


def test_pages_list_is_complete():
    assert len(PAGES) == 7 and all(Path(ROOT / "app_pages" / p).is_file() for p in PAGES)
