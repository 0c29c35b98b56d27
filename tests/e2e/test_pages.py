"""Every page the navigation shows loads at its own path, draws at least one Plotly chart and shows no exception.

A screenshot of each page goes to ``.screenshots/<page>.png`` on every run.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest

from explorer.lessons import LESSONS
from tests.e2e.conftest import record_timing

pytestmark = pytest.mark.e2e

NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def test_navigation_lists_pages(nav_pages):
    assert nav_pages, "the sidebar navigation shows no page"
    paths = [p["path"] for p in nav_pages]
    assert len(set(paths)) == len(paths), f"duplicate navigation entries: {paths}"


def test_every_page_loads_with_a_chart_and_no_exception(st_app, nav_pages):
    problems, loads = [], {}
    for entry in nav_pages:
        name = entry["path"] or "walkthrough"
        try:
            loads[name] = round(st_app.open(entry["path"]), 3)
        except Exception as exc:  # a page that never settles is reported with the others
            problems.append(f"{name}: did not finish loading ({type(exc).__name__}: {str(exc).splitlines()[0]})")
            st_app.screenshot(f"page-{name}")
            continue
        st_app.screenshot(f"page-{name}")
        dialogs = st_app.page.locator('[role="dialog"]')
        if dialogs.count():
            problems.append(f"{name}: a dialog opened: {dialogs.all_inner_texts()}")
        if not st_app.page.locator("h1").first.inner_text().strip():
            problems.append(f"{name}: no title")
        # The path only: a page may write its controls into the query (the causes lesson its heads).
        if urlparse(st_app.page.url).path.strip("/") != entry["path"]:
            problems.append(f"{name}: the address moved to {st_app.page.url}")
        charts = st_app.charts()
        exceptions = st_app.exceptions()
        if not charts:
            problems.append(f"{name}: no Plotly chart at defaults")
        if exceptions:
            problems.append(f"{name}: exception shown: {exceptions[0][:300]!r}")
        text = st_app.page.locator('[data-testid="stMain"]').inner_text()
        if NAN.search(text):
            problems.append(f"{name}: 'nan' on screen: …{text[max(0, NAN.search(text).start() - 60):][:120]!r}…")
        print(f"{name}: {len(charts)} charts, {len(exceptions)} exceptions, loaded in {loads.get(name)} s")
    record_timing("page_load_s", loads)
    # Each lesson at its own path (the default one at "/"; tests/e2e/test_paths.py opens it at its path too).
    assert [p["path"] for p in nav_pages] == ["", *[entry.url_path for entry in LESSONS[1:]]], nav_pages
    assert not problems, "\n".join(problems)



def test_a_link_to_a_missing_page_says_so_and_opens_the_walkthrough(st_app):
    """Streamlit's own "Page not found" dialog tells the learner; the walkthrough is drawn behind it."""
    st_app.open("nonexistent")
    dialog = st_app.page.get_by_role("dialog")
    assert "Page not found" in dialog.inner_text(), dialog.inner_text()
    assert any(c["key"] == "walk_fig_weights" for c in st_app.charts())
    assert not st_app.exceptions()
