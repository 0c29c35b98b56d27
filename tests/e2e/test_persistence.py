"""Controls keep their values when the learner goes to another page and back (through the navigation)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import chart_numbers, numbers_equal

pytestmark = pytest.mark.e2e

# Not the defaults; d_model = 6 has valid head counts 1, 2, 3, 6 for the multi-head page.
VALUES = {"sentence": "a small dog sleeps", "embedding": "per-token", "positional": True, "seed": 11, "d_model": 6,
          "d_k": 5}


def _shared_values(st_app) -> dict:
    return {k: st_app.widget_value(k) for k in VALUES}


def test_shared_controls_survive_visits_to_other_pages(st_app, nav_pages):
    """Set on the walkthrough, then the first and the last other page, then back (the markup test tours them all)."""
    others = [p["path"] for p in nav_pages if p["path"]]
    assert others, f"the navigation shows only the default page: {nav_pages}"
    others = list(dict.fromkeys([others[0], others[-1]]))
    st_app.open()
    for key, value in VALUES.items():
        st_app.set_widget(key, value)
    set_values = _shared_values(st_app)
    walk_charts = chart_numbers(st_app.charts())

    problems = []
    for path in others:
        st_app.go_to_page(path)
        if st_app.exceptions():
            problems.append(f"{path}: exception: {st_app.exceptions()[0][:200]!r}")
        now = _shared_values(st_app)
        if now != set_values:
            problems.append(f"{path}: sidebar shows {now}, was set to {set_values}")
        link = {k: v[-1] for k, v in parse_qs(urlparse(st_app.page.url).query).items()}
        missing = {k: link.get(k) for k, v in VALUES.items() if link.get(k) != (str(v).lower() if isinstance(v, bool)
                                                                               else str(v))}
        if missing:
            problems.append(f"{path}: the address bar does not carry the controls: {missing} ({st_app.page.url})")

    st_app.go_to_page("")
    now = _shared_values(st_app)
    if now != set_values:
        problems.append(f"back on the walkthrough the sidebar shows {now}, was set to {set_values}")
    back = chart_numbers(st_app.charts())
    differ = [k for k in walk_charts if not numbers_equal(walk_charts[k], back.get(k))]
    if differ:
        problems.append(f"back on the walkthrough these charts changed: {differ}")
    assert not problems, "\n".join(problems)


def test_a_page_control_survives_a_visit_to_another_page(st_app, nav_pages):
    """The walkthrough's query selectbox (a page control, not in the sidebar) keeps its choice."""
    others = [p["path"] for p in nav_pages if p["path"]]
    assert others, f"the navigation shows only the default page: {nav_pages}"
    st_app.open()
    st_app.set_widget("walk_query", "cat (1)")
    bar = st_app.chart("walk_fig_query_bar")["traces"][0]["y"]
    st_app.go_to_page(others[0])
    st_app.go_to_page("")
    problems = []
    if st_app.widget_value("walk_query") != "cat (1)":
        problems.append(f"after {others[0]} and back the query selectbox shows {st_app.widget_value('walk_query')!r}, "
                        "was set to 'cat (1)'")
    if not numbers_equal(st_app.chart("walk_fig_query_bar")["traces"][0]["y"], bar):
        problems.append("after a visit to another page the query's weights bar chart shows another query")
    assert not problems, "\n".join(problems)


def test_a_page_link_clicked_during_the_first_run_keeps_the_links_values(st_app):
    """Issue 30: a teacher's link, and the learner clicks another lesson before the first page has finished. The
    next page used the link's seed while its Seed box showed 42 and its address had dropped ``seed=…`` (measured:
    6 of 6 fresh sessions here), so a copied link opened at 42. The box, the address and the page now agree."""
    link = {"seed": 9, "d_k": 16}
    st_app.page.goto(st_app.url("", link), wait_until="domcontentloaded")
    nav_link = st_app.page.locator('[data-testid="stSidebarNav"] a[href$="/causal"]').first
    nav_link.wait_for()
    nav_link.click()  # the walkthrough's first run is still going
    st_app.page.wait_for_function("() => location.pathname.endsWith('/causal')")
    st_app.settle(before=0)
    st_app.page.wait_for_timeout(1500)  # the address follows the run's last message
    query = parse_qs(urlparse(st_app.page.url).query)
    assert {k: query.get(k) for k in link} == {k: [str(v)] for k, v in link.items()}, st_app.page.url
    assert {k: str(st_app.widget_value(k)) for k in link} == {k: str(v) for k, v in link.items()}
    assert not st_app.exceptions()
