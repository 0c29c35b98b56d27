"""The default lesson opens at its own path too ("/walkthrough", not only "/"); every other lesson's path is opened,
with its title, dialogs and address checked, by ``tests/e2e/test_pages.py``."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from explorer.lessons import LESSONS

pytestmark = pytest.mark.e2e


def test_the_default_lesson_is_the_same_at_the_root_and_at_its_path(st_app):
    st_app.open("")
    root = st_app.page.locator("h1").first.inner_text()
    st_app.open(LESSONS[0].url_path)
    assert st_app.page.locator("h1").first.inner_text() == root
    assert st_app.page.locator('[role="dialog"]').count() == 0
    assert not st_app.exceptions(), st_app.exceptions()
    assert urlparse(st_app.page.url).path.rstrip("/").endswith("/" + LESSONS[0].url_path), st_app.page.url
