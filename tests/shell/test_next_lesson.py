"""The "Next lesson" link at the end of a lesson speaks the run's language (issue 30). That every lesson but the
last ends with it, pointing at the next one, is checked where every page is rendered:
``tests/lessons/walkthrough/test_page.py::test_every_page_in_navigation_renders``."""

from __future__ import annotations

import pytest

from explorer.lessons import LESSONS
from tests.apptest_utils import app_at


def test_every_real_model_lesson_says_what_it_builds_on():
    """Each lesson on the real model names the earlier lessons it builds on (issue 49): existing ones, before it in
    the navigation, each once. That its page shows them as links is checked where every page is rendered
    (``tests/lessons/walkthrough/test_page.py::test_every_page_in_navigation_renders``)."""
    order = [e.name for e in LESSONS]
    real = [e for e in LESSONS if e.group == "A real model"]
    assert len(real) >= 4
    for entry in real:
        assert entry.needs, f"{entry.name} declares no lessons it builds on"
        assert len(set(entry.needs)) == len(entry.needs), entry.needs
        for name in entry.needs:
            assert name in order and order.index(name) < order.index(entry.name), (entry.name, name)


@pytest.mark.slow
def test_the_link_speaks_the_runs_language():
    at = app_at("walkthrough", query={"lang": "pt"})
    (link,) = [e.proto for e in at.main.get("page_link")]
    assert link.label == "Próxima lição: Atenção como uma busca suave" and link.page.strip("/") == "lookup"
