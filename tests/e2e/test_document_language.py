"""The page tells the browser its language (issue 48): ``<html lang>`` is ``pt-BR`` or ``tr`` on a Portuguese or
Turkish page, for screen readers (pronunciation), the browser's "translate this page?" offer and CSS case changes;
Streamlit's own page says ``en`` whatever the app's language. Switching the language in the sidebar changes it."""

from __future__ import annotations

import contextlib

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = pytest.mark.e2e

LANG_JS = "() => document.documentElement.lang"


def _document_language(st_app, expected: str) -> str:
    """The document's language once it is ``expected`` (the script runs as its element renders), or after 10 s."""
    with contextlib.suppress(PlaywrightTimeout):  # then the assertion reports the value the page has
        st_app.page.wait_for_function(f"() => document.documentElement.lang === {expected!r}", timeout=10_000)
    return st_app.page.evaluate(LANG_JS)


def test_the_documents_language_is_the_pages(st_app):
    st_app.open("lookup", {"lang": "pt"})
    assert _document_language(st_app, "pt-BR") == "pt-BR"
    st_app.open("scaling", {"lang": "tr"})
    assert _document_language(st_app, "tr") == "tr"
    assert "Neden √d_k'ye bölüyoruz" in st_app.page.locator('[data-testid="stMain"]').inner_text()

    def choose(name: str):
        def switch():
            st_app.page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
            st_app.page.get_by_role("option", name=name).click()
        return switch

    st_app.act(choose("English"))
    assert "lang=en" in st_app.page.url
    assert _document_language(st_app, "en") == "en"
    st_app.act(choose("Português"))
    assert "lang=pt" in st_app.page.url
    assert _document_language(st_app, "pt-BR") == "pt-BR"
    assert not st_app.exceptions() and not st_app.page_errors, (st_app.exceptions(), st_app.page_errors)
