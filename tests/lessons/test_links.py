"""Every link a page builds to another lesson opens that lesson without a link warning.

Each lesson is drawn for sentences of 1, 6, 33 and 64 tokens with everything revealed (the quiz
answered), every Markdown link to a page of the app is collected, and each one is opened as a
fresh session: the target must accept every value in it (no "not valid" warning, no exception).
Links come from the target lesson's own ``model.link`` (issue #15: a copy of another page's
ranges had drifted and produced ``scale_n_keys=40`` for a page that accepts 2 to 32).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlparse

import pytest

from explorer.lessons import LESSONS
from tests.apptest_utils import app_at, assert_clean

LENGTHS = (1, 6, 33, 64)
LINK = re.compile(r"\]\((\./[^)\s]*)\)")  # a Markdown link to a page of this app: [text](./path?query)
URL_PATHS = {entry.url_path: entry.name for entry in LESSONS}


def reveal_everything(at) -> None:
    """Answer every question of the quiz (any answer: the reveals, with their links, follow a check)."""
    answered: set[str] = set()
    while True:
        open_radios = [r for r in at.main.radio if r.key and r.key.startswith("quiz_") and r.key.endswith("_answer")
                       and r.value is None and r.key not in answered]
        if not open_radios:
            return
        radio = open_radios[0]
        answered.add(radio.key)
        radio.set_value(radio.options[0])
        at.button(key=radio.key.removesuffix("_answer") + "_check").click().run()
        assert_clean(at)


def links_on(at) -> list[str]:
    found = []
    for kind in ("markdown", "caption", "info", "warning", "success", "error"):
        for el in getattr(at.main, kind):
            found += LINK.findall(str(el.value))
    return found


def sentence(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def collect_links() -> set[tuple[int, str]]:
    out = set()
    for n in LENGTHS:
        for entry in LESSONS:
            at = app_at(entry.name, session={"sentence": sentence(n)}, opened_by_link=True)
            assert_clean(at)
            if entry.name == "quiz":
                reveal_everything(at)
            out |= {(n, link) for link in links_on(at)}
    return out


@pytest.fixture(scope="module")
def all_links() -> set[tuple[int, str]]:
    return collect_links()


@pytest.mark.slow
def test_pages_build_links(all_links):
    """The walk finds the quiz's two links to the scaling lesson at every length (so the next test means something):
    question 2's and question 8's (the one with the sentence's key count); the walkthrough's step 4 adds one from
    2 tokens on (issue #18, item 1)."""
    for n in LENGTHS:
        found = [link for m, link in all_links if m == n and urlparse(link).path == "./scaling"]
        assert len(found) >= 2 and any("scale_n_keys=" in link for link in found), (n, all_links)


@pytest.mark.slow
def test_every_link_opens_its_lesson_without_a_warning(all_links):
    """A warning the link brings (a value refused, an empty prompt…) is one the target does not show when opened
    at the same sentence without the link's values: a warning about what the model did on the lesson's own
    text (the sinks lesson's "on your text the sink does not simply follow the first position") is the page's."""
    problems = []
    own: dict[tuple[str, int], list[str]] = {}
    for n, link in sorted(all_links):
        url = urlparse(link)
        target = URL_PATHS.get(url.path.removeprefix("./"))
        if target is None:
            problems.append(f"{n} tokens: {link} names no lesson (paths: {sorted(URL_PATHS)})")
            continue
        query = dict(parse_qsl(url.query))
        at = app_at(target, query=query, session={"sentence": sentence(n)}, opened_by_link=True)
        assert_clean(at)
        if (target, n) not in own:
            alone = app_at(target, session={"sentence": sentence(n)}, opened_by_link=True)
            own[target, n] = [w.value for w in alone.warning]
        warnings = [w.value for w in at.warning if w.value not in own[target, n]]
        if warnings:
            problems.append(f"{n} tokens: {link} -> {warnings}")
    assert not problems, "\n".join(problems)
