"""The walkthrough in Português and Türkçe (issue 31): nothing of the English page is left, the numbers are the
same, numbers in sentences have a decimal comma, downloads stay machine-readable, and links keep working."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attention as A
from explorer.lessons.walkthrough import model
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figures

MATRICES = ("X", "W_q", "W_k", "W_v")

LANGS = ("pt", "tr")
STATES = {  # every branch of the page with its own text
    "default": {},
    "lesson example": {"walk_input": "lesson"},
    "not divided": {"walk_scale": "false"},
    "wide keys (variance well below 1)": {"d_k": "128"},
    "unit variance, saturated": {"d_k": "64", "walk_init": "unit-variance", "walk_scale": "false"},
    "repeated words, positions": {"sentence": "the dog chased the dog", "positional": "true"},
    "repeated words, per-token": {"sentence": "a a a a a b", "embedding": "per-token"},
    "one token": {"sentence": "hello"},
}
FIGURES = ("walk_fig_X", "walk_fig_Q_proj", "walk_fig_scores", "walk_fig_scaled", "walk_fig_weights", "walk_fig_output")


def z(at, key) -> np.ndarray:
    return np.array(figures(at)[key]["data"][0]["z"], dtype=float)


def captions(at) -> list[str]:
    return [c.value for c in at.main.caption]


def latex_sentences(at) -> set[str]:
    """The words of the page's formulas (``\\text{…}`` bodies of two words or more): English left in a formula."""
    bodies = (b for x in at.main.latex for b in re.findall(r"\\text\{([^{}]*)\}", x.value))
    return {b for b in bodies if len(re.findall(r"[^\W\d_]{2,}", b)) >= 2}


_english: dict[str, object] = {}


def english(state: str):
    """The English page in ``state`` (run once per test module)."""
    if state not in _english:
        _english[state] = app_at(query=STATES[state])
    return _english[state]


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left(state, lang):
    at = app_at(query={**STATES[state], "lang": lang})
    assert_clean(at)
    assert not at.warning, [w.value for w in at.warning]
    assert english_left(english(state), at) == []
    assert latex_sentences(english(state)) and not latex_sentences(english(state)) & latex_sentences(at)
    for key in FIGURES:  # the same numbers in every language
        np.testing.assert_array_equal(z(at, key), z(english(state), key), err_msg=key)


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_a_bad_cell_is_reported_in_the_language(lang):
    at = app_at(query={"walk_input": "lesson", "lang": lang})
    at.session_state["walk_edit_X_0"] = {"edited_rows": {1: {"dim 1": "abc"}, 2: {"dim 0": None}},
                                         "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    en = app_at(query={"walk_input": "lesson"})
    en.session_state["walk_edit_X_0"] = at.session_state["walk_edit_X_0"]
    en.run()
    assert "abc" in at.error[0].value and "`abc`" in en.error[0].value
    assert english_left(en, at) == []
    problem = {"pt": "X: a célula na linha word 1, coluna dim 1 contém `abc`, que não é um número",
               "tr": "X: word 1 satırı, boyut 1 sütunundaki hücre `abc` içeriyor, bu bir sayı değil"}[lang]
    assert problem in at.error[0].value


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_captions_write_numbers_with_a_decimal_comma(lang):
    at = app_at(query={"lang": lang})
    text = "\n".join(captions(at))
    assert re.search(r"\d,\d{3}", text), text  # the measured variances
    assert not re.search(r"\d\.\d", text), text  # never a decimal point in a sentence
    check = next(e for e in at.main.expander if "✋" in e.label)
    markdown = " ".join(m.value for m in check.markdown)
    assert "softmax([2,1; 0,3; 0,1; 0,8; 0,2]) = [0,52; 0,09; 0,07; 0,14; 0,08]" in markdown
    assert "**0,90**" in markdown and "1,000000" in markdown
    assert list(check.dataframe[0].value.iloc[:, 2]) == ["0,580", "0,096", "0,079", "0,158", "0,087"]
    formulas = " ".join(x.value for x in at.latex)
    assert re.search(r"\d\.\d", formulas) and not re.search(r"\d,\d", formulas)  # formulas keep the point


@pytest.mark.slow
def test_chart_labels_carry_the_languages_letters():
    """Turkish ı/ğ and Portuguese ç/õ reach the charts' titles and axes as written (Plotly escapes nothing of it)."""
    tr, pt = app_at(query={"lang": "tr"}), app_at(query={"lang": "pt"})
    assert figures(tr)["walk_fig_weights"]["layout"]["title"]["text"] == "dikkat ağırlıkları"
    assert figures(tr)["walk_fig_X"]["layout"]["xaxis"]["title"]["text"] == "boyut"
    assert figures(pt)["walk_fig_scores"]["layout"]["title"]["text"] == "pontuações QKᵀ"
    assert figures(pt)["walk_fig_scores"]["data"][0]["colorbar"]["title"]["text"] == "pontuação"
    assert figures(tr)["walk_fig_Q_proj"]["layout"]["title"]["text"] == "Q: ne arıyorum?"


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_the_input_link_holds_a_code_and_old_links_still_open(lang, golden):
    expected = golden["pipeline_example"]["expected"]["attention_weights"]
    for value in ("lesson", "Lesson example"):  # the code, and the English label links held before issue 31
        at = app_at(query={"walk_input": value, **({"lang": lang} if lang != "en" else {})})
        assert_clean(at)
        assert not at.warning, [w.value for w in at.warning]
        np.testing.assert_allclose(z(at, "walk_fig_weights"), expected, atol=1e-9)
        assert at.query_params["walk_input"] == "lesson"
        assert (at.query_params.get("lang") == lang) == (lang != "en")
    at = app_at(query={"walk_input": "Your sentence", "walk_init": "unit-variance", "lang": lang})
    assert not at.warning and "walk_input" not in at.query_params  # the default is left out of the link
    assert at.query_params["walk_init"] == "unit-variance"
    at = app_at(query={"walk_input": "Exemplo da lição", "lang": lang})  # a shown label is not a link value
    assert any("`walk_input=Exemplo da lição`" in w.value for w in at.warning)
    assert z(at, "walk_fig_weights").shape == (6, 6)


@pytest.mark.slow
def test_changing_the_language_keeps_the_pages_controls():
    at = app_at(query={"walk_input": "lesson", "walk_scale": "false", "walk_init": "unit-variance"})
    before = z(at, "walk_fig_weights")
    at.selectbox(key="_lang_choice").set_value("tr").run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.query_params["walk_input"] == "lesson"
    assert at.query_params["walk_scale"] == "false" and at.query_params["walk_init"] == "unit-variance"
    assert at.session_state["walk_input"] == "lesson" and at.toggle(key="walk_scale").value is False
    np.testing.assert_array_equal(z(at, "walk_fig_weights"), before)
    assert at.title[0].value == "Adım adım öz-dikkat"


def test_downloads_stay_machine_readable_in_every_language():
    ex = A.PIPELINE_EXAMPLE
    source = model.LessonExample(ex.X, ex.W_q, ex.W_k, ex.W_v)
    params = {"input": "lesson pipeline example", "d_model": 4, "d_k": 4, "d_v": 4}
    files = {}
    for lang in ("en", *LANGS):
        with i18n.using(lang):
            files[lang] = (model.csv(source, "lesson", True, "output"),
                           model.scenario_json(source, "lesson", True, params))
    assert files["pt"] == files["tr"] == files["en"]
    csv, scenario = files["tr"]
    assert csv.splitlines()[0] == ",dim 0,dim 1,dim 2,dim 3" and "," in csv and re.search(r"\d\.\d", csv)
    assert set(json.loads(scenario)["results"]) >= {"attention_weights", "scaled_scores", "output"}


def editor(at, name: str):
    """What the matrix editor ``name`` (X, W_q, W_k, W_v) shows: its cells' text, ``[rows, columns]``."""
    found = [d for d in at.dataframe if d.proto.editing_mode and f"-walk_edit_{name}_" in d.proto.id]
    assert len(found) == 1, [d.proto.id for d in at.dataframe]
    return found[0].value.to_numpy().tolist()


@pytest.mark.slow
def test_the_matrix_editors_write_the_languages_decimal_mark_after_a_switch():
    """Switching from English to Portuguese redraws the lesson's matrices with ``0,1`` (every other number on the page
    has a decimal comma); a cell the learner typed keeps its value, a cell that is no number keeps its text."""
    at = app_at(query={"walk_input": "lesson"})
    assert "0.3" in sum(editor(at, "W_v"), []) and "0.1" in sum(editor(at, "W_q"), [])
    at.session_state["walk_edit_X_0"] = {"edited_rows": {1: {"dim 1": "0.75"}, 2: {"dim 0": "abc"}},
                                         "added_rows": [], "deleted_rows": []}
    at.run()
    before = z(at, "walk_fig_weights")
    at.selectbox(key="_lang_choice").set_value("pt").run()
    assert_clean(at)
    cells = {m: sum(editor(at, m), []) for m in MATRICES}
    assert not any(re.search(r"\d\.\d", c) for m in MATRICES for c in cells[m]), cells
    assert "0,3" in cells["W_v"] and "0,1" in cells["W_q"] and "0,75" in cells["X"] and "abc" in cells["X"]
    np.testing.assert_array_equal(z(at, "walk_fig_weights"), before)  # the last valid values, as before
    at.selectbox(key="_lang_choice").set_value("en").run()
    assert "0.75" in sum(editor(at, "X"), []) and "abc" in sum(editor(at, "X"), [])
