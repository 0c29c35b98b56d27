"""Controls keep their values when the learner goes to another page and back (through the navigation), and the
address bar they write is a link that reopens the page."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import App, chart_numbers, numbers_equal

pytestmark = pytest.mark.e2e

# Not the defaults in every field, so a control the link fails to set shows up as a difference; one of each kind of
# widget the sidebar has (text box, radio, switch, number boxes, slider). d_model = 12: heads 1, 2, 3, 4, 6, 12 on the
# multi-head page.
VALUES = {"sentence": "the dog chased the cat", "embedding": "per-token", "positional": True, "seed": 7,
          "d_model": 12, "d_k": 5}
QUERY = "dog (1)"  # the walkthrough's query (a page control, not in the sidebar)


def _link(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(url).query, keep_blank_values=True).items()}


def _as_param(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _wrong_values(app: App) -> dict:
    """The sidebar's controls that do not show :data:`VALUES` (a radio shows its label, "per-token: one vector per
    word"; a switch true or false)."""
    shown = {k: app.widget_value(k) for k in VALUES}
    return {k: shown[k] for k, v in VALUES.items()
            if not ((shown[k] is v) if isinstance(v, bool) else str(v) in str(shown[k]))}


def test_controls_set_by_hand_travel_to_other_pages_and_make_a_link_that_reopens_the_page(st_app, nav_pages, context):
    """The sidebar's controls and a page control set by hand on the walkthrough, as a learner does: the address bar
    spells every value as a link does; the first and the last other page keep them (sidebar and address: AppTest
    drops sidebar widgets after ``switch_page``), the walkthrough keeps its query and numbers when the learner comes
    back; and the address opened in a new tab (a new session, nothing but the link) shows the same controls and
    numbers: the one link round trip of the browser suite."""
    others = [p["path"] for p in nav_pages if p["path"]]
    assert others, f"the navigation shows only the default page: {nav_pages}"
    st_app.open()
    for key, value in VALUES.items():
        st_app.set_widget(key, value)
    st_app.set_widget("walk_query", QUERY)
    assert not st_app.exceptions(), st_app.exceptions()
    by_hand, link = chart_numbers(st_app.charts()), st_app.page.url
    wrong = {k: _link(link).get(k) for k, v in VALUES.items() if _link(link).get(k) != _as_param(v)}
    assert not wrong, f"after setting by hand the address bar has {wrong} ({link})"

    problems = []
    for path in dict.fromkeys([others[0], others[-1]]):
        st_app.go_to_page(path)
        if st_app.exceptions():
            problems.append(f"{path}: exception: {st_app.exceptions()[0][:200]!r}")
        if wrong := _wrong_values(st_app):
            problems.append(f"{path}: the sidebar shows {wrong}, was set to {VALUES}")
        if missing := {k: _link(st_app.page.url).get(k) for k, v in VALUES.items()
                       if _link(st_app.page.url).get(k) != _as_param(v)}:
            problems.append(f"{path}: the address bar does not carry the controls: {missing} ({st_app.page.url})")
    st_app.go_to_page("")
    if wrong := _wrong_values(st_app):
        problems.append(f"back on the walkthrough the sidebar shows {wrong}")
    if st_app.widget_value("walk_query") != QUERY:
        problems.append(f"back on the walkthrough the query shows {st_app.widget_value('walk_query')!r}, not {QUERY!r}")
    back = chart_numbers(st_app.charts())
    if differ := [k for k in by_hand if not numbers_equal(by_hand[k], back.get(k))]:
        problems.append(f"back on the walkthrough these charts changed: {differ}")
    assert not problems, "\n".join(problems)

    other = App(context.new_page(), st_app.base)
    try:
        other.page.goto(link, wait_until="domcontentloaded")
        other.settle(before=0)
        assert not other.exceptions(), other.exceptions()
        alerts = other.page.locator('[data-testid="stAlert"]').all_inner_texts()
        assert not [a for a in alerts if "not valid" in a], alerts
        assert not (wrong := _wrong_values(other)), f"the link opens with the controls at {wrong}, set to {VALUES}"
        from_link = chart_numbers(other.charts())
        differ = [k for k in by_hand if not numbers_equal(by_hand[k], from_link.get(k))]
        assert from_link.keys() == by_hand.keys() and not differ, f"the link shows other numbers in {differ}"
    finally:
        other.page.close()


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
