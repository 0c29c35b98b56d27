"""The "Next lesson" link at the end of a lesson speaks the run's language (issue 30). That every lesson but the
last ends with it, pointing at the next one, is checked where every page is rendered:
``tests/lessons/walkthrough/test_page.py::test_every_page_in_navigation_renders``."""

from __future__ import annotations

import pytest

from tests.apptest_utils import app_at


@pytest.mark.slow
def test_the_link_speaks_the_runs_language():
    at = app_at("walkthrough", query={"lang": "pt"})
    (link,) = [e.proto for e in at.main.get("page_link")]
    assert link.label == "Próxima lição: Atenção como uma busca suave" and link.page.strip("/") == "lookup"
