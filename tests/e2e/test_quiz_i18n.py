"""The check-yourself page across a language switch in a real browser (issue 31).

A choice widget sends back the *label* it showed. A learner who picks "Sobe" in Portuguese, switches to Türkçe and
presses "Kontrol et" without picking again sends "Sobe" to a run whose options read "Artar": Streamlit hands the
page that text instead of a code. AppTest cannot send it (it formats the value itself), so this is checked here: the
page asks for an answer again (no exception, no grade), and the answers already checked keep their grade.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def _form(st_app, option_text: str):
    page = st_app.page
    return page.locator('[data-testid="stForm"]').filter(
        has=page.locator('[data-testid="stRadio"] label', has_text=option_text))


def test_a_choice_picked_before_a_language_switch_is_asked_again_not_graded(st_app):
    page = st_app.page
    st_app.open("quiz", {"lang": "pt"})
    page.locator('[data-testid="stRadio"] label', has_text="Para manter a dispersão").click()  # in a form: no run
    st_app.act(lambda: _form(st_app, "Para manter a dispersão").get_by_role("button", name="Conferir").click())
    assert "Acertos: 1 / 1" in page.locator('[data-testid="stMain"]').inner_text()
    page.locator('[data-testid="stRadio"] label', has_text="Sobe").click()  # picked, not checked

    def switch():
        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name="Türkçe").click()
    st_app.act(switch)
    assert "lang=tr" in page.url
    st_app.act(lambda: _form(st_app, "Artar").get_by_role("button", name="Kontrol et").click())
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert not st_app.exceptions(), st_app.exceptions()
    assert "Önce bir tahmin seçin." in main  # asked again: the Portuguese label is not an answer here
    assert "Sonuç: 1 / 1" in main and "Doğru. Birim varyanslı" in main  # question 2 keeps its grade, in Turkish
    page.locator('[data-testid="stRadio"] label', has_text="Artar").click()
    st_app.act(lambda: _form(st_app, "Artar").get_by_role("button", name="Kontrol et").click())
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Sonuç: 2 / 2" in main and "Tahmininiz: Artar" in main and not st_app.exceptions()
    st_app.screenshot("quiz_tr_after_switch")
