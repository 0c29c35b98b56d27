"""AppTest of the "attention as a soft lookup" page.

The table is edited through the data editor's widget state
(``{"edited_rows": ..., "added_rows": ..., "deleted_rows": ...}``), which AppTest
applies like a browser edit (Streamlit 1.67 has no data_editor API in AppTest).
"""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

from explorer.lessons.lookup import model as S
from tests.apptest_utils import app_at, assert_clean, english_left, figures
from tests.lessons.test_languages import check_every_language

EDITOR = "lookup_table_0"
VALUES = np.array(S.DEFAULT_TABLE.values)


def arr(v) -> np.ndarray:
    """A Plotly array from the figure JSON (a list, or Plotly's typed-array ``{"dtype", "bdata"}``)."""
    if isinstance(v, dict):
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return a.reshape(v["shape"]) if "shape" in v else a
    return np.array(v, dtype=float)


def soft_weights(at) -> np.ndarray:
    return arr(figures(at)["lookup_fig_weights"]["data"][0]["y"])


def hard_weights(at) -> np.ndarray:
    return arr(figures(at)["lookup_fig_weights"]["data"][1]["y"])


def blend(at) -> np.ndarray:
    star = next(t for t in figures(at)["lookup_fig_values"]["data"] if t["marker"].get("symbol") == "star")
    return np.array([star["x"][0], star["y"][0]])


def edit(at, edited_rows=None, added_rows=None, deleted_rows=None):
    at.session_state[EDITOR] = {"edited_rows": edited_rows or {}, "added_rows": added_rows or [],
                                "deleted_rows": deleted_rows or []}
    return at.run()


@pytest.fixture(scope="module")
def page():
    return app_at("lookup")


def test_defaults_capital_of_france(page):
    at = page
    assert_clean(at)
    assert set(figures(at)) == {"lookup_fig_keys", "lookup_fig_weights", "lookup_fig_values", "lookup_fig_dial",
                                "lookup_fig_matrix", "lookup_fig_hard_matrix"}
    w = soft_weights(at)
    assert abs(w.sum() - 1) < 1e-12 and np.argmax(w) == 0 and w[0] < 0.5  # 1/sqrt(d_k): soft, France first
    np.testing.assert_array_equal(hard_weights(at), [1, 0, 0, 0, 0, 0])
    assert at.select_slider(key="lookup_sharpness").value == S.LESSON_SHARPNESS
    assert any("exact match" in c.value for c in at.caption)
    assert any("Paris" in x.value for x in at.latex)
    matrix = figures(at)["lookup_fig_matrix"]
    assert matrix["layout"]["yaxis"]["ticktext"][:2] == ["your query", "capital of France"]
    np.testing.assert_allclose(np.array(matrix["data"][0]["z"], dtype=float)[0], w, atol=1e-12)


@pytest.mark.parametrize(("sharpness", "expected"), [
    (0.0, np.full(6, 1 / 6)), (1e6, np.array([1.0, 0, 0, 0, 0, 0])),
])
def test_sharpness_extremes(page, sharpness, expected):
    at = page
    at.select_slider(key="lookup_sharpness").set_value(sharpness).run()
    assert_clean(at)
    np.testing.assert_allclose(soft_weights(at), expected, atol=1e-12)
    want = VALUES.mean(0) if sharpness == 0 else VALUES[0]
    np.testing.assert_allclose(blend(at), want, atol=1e-6)
    at.select_slider(key="lookup_sharpness").set_value(S.LESSON_SHARPNESS).run()


@pytest.mark.slow
def test_query_sliders_at_their_extremes_change_the_weights(page):
    at = page
    before = soft_weights(at)
    for x, y in ((-S.QUERY_LIMIT, -S.QUERY_LIMIT), (S.QUERY_LIMIT, S.QUERY_LIMIT), (0.0, 0.0)):
        at.slider(key="lookup_qx").set_value(x)
        at.slider(key="lookup_qy").set_value(y).run()
        assert_clean(at)
        assert not np.allclose(soft_weights(at), before)
    np.testing.assert_allclose(soft_weights(at), 1 / 6)  # the zero query scores 0 with every key


def test_presets_move_the_query_and_a_tie_is_announced(page):
    at = page
    at.selectbox(key="lookup_preset").set_value("capital of Japan").run()
    assert (at.slider(key="lookup_qx").value, at.slider(key="lookup_qy").value) == S.DEFAULT_TABLE.keys[4]
    assert np.argmax(soft_weights(at)) == 4 and at.selectbox(key="lookup_preset").value is None
    at.selectbox(key="lookup_preset").set_value("halfway between France and Germany").run()
    assert_clean(at)
    assert any("A tie" in w.value for w in at.warning)
    np.testing.assert_array_equal(hard_weights(at), [0.5, 0.5, 0, 0, 0, 0])
    w = soft_weights(at)
    assert abs(w[0] - w[1]) < 1e-12  # symmetric (up to the last bit of the two dot products)


@pytest.mark.slow
def test_editing_the_table_changes_the_result_and_bad_edits_keep_the_last_valid():
    at = app_at("lookup")
    before = soft_weights(at)
    edit(at, {0: {"k1": 0.5, "v1": 10.0}})
    assert_clean(at)
    after = soft_weights(at)
    assert not np.allclose(before, after)
    assert not at.error
    bad_edits = [
        ({0: {"k1": None}}, None, None, "row 0, column `k1` is blank"),
        ({2: {"key": "France"}}, None, None, "rows 0 and 2 have the same key name"),
        ({3: {"k1": 1.73, "k2": 1.0}}, None, None, "same key vector"),
        (None, None, list(range(6)), "The table is empty"),
    ]
    for rows, added, deleted, message in bad_edits:
        edit(at, rows, added, deleted)
        assert not at.exception
        text = " ".join(e.value for e in at.error)
        assert message in text and "last valid" in text, text
        np.testing.assert_array_equal(soft_weights(at), after)
    # A new row (and an empty one, ignored) joins the lookup; a label with markup stays literal text.
    edit(at, added_rows=[{"key": "<b>Peru</b>", "k1": 3.0, "k2": 3.0, "value": "Lima", "v1": -12.0, "v2": -77.0},
                         {}])
    assert_clean(at)
    assert not at.error
    assert soft_weights(at).shape == (7,)
    ticks = figures(at)["lookup_fig_weights"]["layout"]["xaxis"]["ticktext"]
    assert ticks[-1] == "&lt;b&gt;Peru&lt;/b&gt; → Lima"
    at.button(key="lookup_restore").click().run()
    np.testing.assert_allclose(soft_weights(at), before)


@pytest.mark.slow
def test_link_values_are_used_and_bad_ones_warn():
    at = app_at("lookup", query={"lookup_qx": "-1.88", "lookup_qy": "abc", "lookup_sharpness": "1e+06"})
    assert not at.exception
    assert at.slider(key="lookup_qx").value == -1.88 and at.select_slider(key="lookup_sharpness").value == 1e6
    assert any("`lookup_qy=abc`" in w.value for w in at.warning)
    assert not any("lookup_qx" in w.value or "lookup_sharpness" in w.value for w in at.warning)


# --- in every language: the branches no manifest state reaches (tests/lessons/test_languages.py checks the rest) ---

LANGUAGE_STATES = {  # every branch of the page with its own text
    "sharpness 0": {"lookup_sharpness": "0"},
    "the database's answer": {"lookup_sharpness": "1e+06"},
    "a tie": {"lookup_qx": "1.36", "lookup_qy": "1.36", "lookup_sharpness": "1e+06"},
    "no exact match": {"lookup_qx": "-0.5", "lookup_qy": "2.5", "lookup_sharpness": "3"},
}
LANGS = ("pt", "tr")
COUNTRIES = {"pt": ["França", "Alemanha", "Espanha", "Itália", "Japão", "Brasil"],
             "tr": ["Fransa", "Almanya", "İspanya", "İtalya", "Japonya", "Brezilya"]}


@pytest.mark.slow
@pytest.mark.parametrize("state", list(LANGUAGE_STATES))
def test_every_branch_is_written_in_every_language(state):
    runs = check_every_language("lookup", LANGUAGE_STATES[state])
    assert not [w.value for at in runs.values() for w in at.warning] or state == "a tie"


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_the_default_table_has_the_languages_names_and_the_same_numbers(lang):
    at = app_at("lookup", query={"lang": lang})
    assert_clean(at)
    en = app_at("lookup")
    np.testing.assert_array_equal(soft_weights(at), soft_weights(en))
    np.testing.assert_array_equal(blend(at), blend(en))
    matrix = figures(at)["lookup_fig_matrix"]
    xaxis = matrix["layout"]["xaxis"]  # every key named, or named as Plotly picks ticks (labelalias)
    keys_shown = xaxis.get("ticktext") or [xaxis["labelalias"][str(i)]
                                   for i in range(sum(k.isdigit() for k in xaxis["labelalias"]))]
    assert keys_shown == COUNTRIES[lang]  # Turkish İ, Portuguese ç, ã, á as written
    assert matrix["layout"]["yaxis"]["ticktext"][:2] == {"pt": ["sua consulta", "capital da França"],
                                                         "tr": ["sorgunuz", "Fransa'nın başkenti"]}[lang]
    keys = next(t for t in figures(at)["lookup_fig_keys"]["data"] if t.get("mode") == "markers+text")
    assert keys["text"][2].startswith(COUNTRIES[lang][2] + "<br>")
    assert figures(at)["lookup_fig_keys"]["layout"]["separators"] == ",."
    cells = at.session_state[EDITOR]  # the editor's rows are the language's names, its numbers with a comma
    assert cells == {"edited_rows": {}, "added_rows": [], "deleted_rows": []}
    editor = next(d for d in at.main.dataframe if EDITOR in (d.proto.id or ""))
    assert list(editor.value["key"]) == COUNTRIES[lang] and editor.value["k1"][0] == "1,73"


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_captions_write_numbers_with_a_decimal_comma(lang):
    at = app_at("lookup", query={"lang": lang, "lookup_sharpness": "1e+06"})
    text = "\n".join(c.value for c in at.main.caption)
    assert "q = (1,73; 1,00)" in text
    assert {"pt": "leva 100,00% do peso", "tr": "ağırlığın %100,00 kadarını"}[lang] in text  # the best key's share
    assert not re.search(r"\d\.\d", text), text
    formulas = " ".join(x.value for x in at.latex)
    assert "(2.40,\\ 48.90)" in formulas and not re.search(r"\d,\d", formulas)  # formulas keep the point


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_presets_and_links_work_in_the_language(lang):
    at = app_at("lookup", query={"lang": lang, "lookup_qx": "-1.88", "lookup_qy": "-0.68", "lookup_sharpness": "3"})
    assert_clean(at)
    assert not at.warning
    assert at.query_params["lang"] == lang and at.query_params["lookup_sharpness"] == "3"
    assert np.argmax(soft_weights(at)) == 4  # Japan's own key
    at.selectbox(key="lookup_preset").set_value({"pt": "capital da Espanha", "tr": "İspanya'nın başkenti"}[lang]).run()
    assert (at.slider(key="lookup_qx").value, at.slider(key="lookup_qy").value) == S.DEFAULT_TABLE.keys[2]
    at = app_at("lookup", query={"lang": lang, "lookup_qy": "abc"})
    assert any("`lookup_qy=abc`" in w.value for w in at.warning)
    assert english_left(app_at("lookup", query={"lookup_qy": "abc"}), at) == []


TABLE_EDITS = {  # an edit the table check refuses, and one it takes with a row of the learner's own and an empty row
    "bad cells": {"edited_rows": {0: {"k1": None}, 1: {"k2": "abc"}, 2: {"v1": str(10 * S.NUMBER_LIMIT)}}},
    "own rows": {"added_rows": [{"key": "Peru", "k1": 3.0, "k2": 3.0, "value": "Lima", "v1": -12.0, "v2": -77.0},
                                {}]},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TABLE_EDITS))
def test_what_the_page_says_about_an_edited_table_is_in_the_language(name):
    """After an edit, the page's words about the table are in its language: the refusal and its problems (the
    problems' own words: test_model.py's test_table_problems_and_presets_are_written_in_the_language), or the
    caption "1 empty row ignored." and the learner's row named in the matrix's ticks as a preset is. (Restored from
    the deleted tests/lessons/lookup/test_i18n.py::test_table_problems_are_reported_in_the_language.)"""
    runs = check_every_language("lookup", act=lambda at, lang: edit(at, **TABLE_EDITS[name]))
    for lang, at in runs.items():
        if name == "bad cells":
            assert len(at.error) == 1 and at.error[0].value.count("\n- ") == 3, (lang, [e.value for e in at.error])
            continue
        assert not at.error
        captions = [c.value for c in at.main.caption]
        assert {"en": "1 empty row ignored.", "pt": "1 linha vazia ignorada.",
                "tr": "1 boş satır yok sayıldı."}[lang] in captions, (lang, captions)
        ticks = figures(at)["lookup_fig_matrix"]["layout"]["yaxis"]["ticktext"]
        assert ticks[-1] == {"en": "look up Peru", "pt": "buscar Peru", "tr": "Peru ara"}[lang]
