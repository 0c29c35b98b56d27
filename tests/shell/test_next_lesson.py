"""The end of every lesson links to the next one in LESSONS' order (issue 30); the last lesson has no such link."""

from __future__ import annotations

import pytest

from explorer.lessons import LESSONS
from tests.apptest_utils import app_at

CHEAP = [entry.name for entry in LESSONS if entry.group != "A real model" and entry.name != "training"]


def _links(at) -> list:
    return [e for e in at.main.get("page_link") if e.proto.label.startswith(("Next lesson", "Próxima", "Sonraki"))]


@pytest.mark.parametrize("name", CHEAP)
def test_each_lesson_ends_with_a_link_to_the_next(name):
    at = app_at(name)
    assert not at.exception
    i = [entry.name for entry in LESSONS].index(name)
    links = _links(at)
    if i + 1 == len(LESSONS):
        assert links == []
        return
    nxt = LESSONS[i + 1]
    assert len(links) == 1
    assert links[0].proto.label == f"Next lesson: {nxt.title}"
    assert links[0].proto.page.strip("/").endswith(nxt.url_path)


def test_the_link_speaks_the_runs_language():
    at = app_at("walkthrough", query={"lang": "pt"})
    (link,) = _links(at)
    assert link.proto.label.startswith("Próxima lição: ")
