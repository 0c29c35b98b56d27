"""Every lesson's own path opens that lesson, the default lesson's included ("/walkthrough", not only "/")."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from explorer.lessons import LESSONS

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("lesson", LESSONS, ids=[entry.name for entry in LESSONS])
def test_each_lesson_opens_at_its_own_path(st_app, lesson):
    st_app.open(lesson.url_path)
    dialogs = st_app.page.locator('[role="dialog"]')
    assert dialogs.count() == 0, f"/{lesson.url_path}: a dialog opened: {dialogs.all_inner_texts()}"
    assert not st_app.exceptions(), st_app.exceptions()
    title = st_app.page.locator("h1").first.inner_text()
    assert title.strip(), f"/{lesson.url_path}: no title"
    # The path only: a page may write its controls into the query (the causes lesson its heads).
    assert urlparse(st_app.page.url).path.rstrip("/").endswith("/" + lesson.url_path), st_app.page.url


def test_the_default_lesson_is_the_same_at_the_root_and_at_its_path(st_app):
    st_app.open("")
    root = st_app.page.locator("h1").first.inner_text()
    st_app.open(LESSONS[0].url_path)
    assert st_app.page.locator("h1").first.inner_text() == root
