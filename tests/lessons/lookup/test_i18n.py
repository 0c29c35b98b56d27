"""The soft lookup in Português and Türkçe (issue 31): nothing of the English page is left, the default table has
its names in the learner's language and the same numbers, numbers in sentences have a decimal comma, and links keep
working."""

from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.lessons.lookup import model as S
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figures
from tests.lessons.lookup.test_page import EDITOR, arr, blend, edit, soft_weights

LANGS = ("pt", "tr")
STATES = {  # every branch of the page with its own text
    "default": {},
    "sharpness 0": {"lookup_sharpness": "0"},
    "the database's answer": {"lookup_sharpness": "1e+06"},
    "a tie": {"lookup_qx": "1.36", "lookup_qy": "1.36", "lookup_sharpness": "1e+06"},
    "no exact match": {"lookup_qx": "-0.5", "lookup_qy": "2.5", "lookup_sharpness": "3"},
}
EDITS = {  # tables that are not usable, and one with a row of the learner's own and an empty row
    "bad cells": {"edited_rows": {0: {"k1": None}, 1: {"k2": "abc"}, 2: {"v1": "5000"}, 3: {"key": ""},
                                  4: {"value": None}}},
    "duplicates": {"edited_rows": {2: {"key": "{key0}"}, 3: {"k1": 1.73, "k2": 1.0}}},
    "empty": {"deleted_rows": list(range(6))},
    "too many rows": {"added_rows": [{"key": f"r{i}", "k1": i, "k2": 1.0, "value": "x", "v1": 0, "v2": 0}
                                     for i in range(7)]},
    "own rows": {"added_rows": [{"key": "Peru", "k1": 3.0, "k2": 3.0, "value": "Lima", "v1": -12.0, "v2": -77.0},
                                {}]},
}
FIGURES = ("lookup_fig_keys", "lookup_fig_weights", "lookup_fig_values", "lookup_fig_dial", "lookup_fig_matrix")
COUNTRIES = {"pt": ["França", "Alemanha", "Espanha", "Itália", "Japão", "Brasil"],
             "tr": ["Fransa", "Almanya", "İspanya", "İtalya", "Japonya", "Brezilya"]}

def latex_sentences(at) -> set[str]:
    """The words of the page's formulas (``\\text{…}`` bodies of two words or more): English left in a formula."""
    bodies = (b for x in at.main.latex for b in re.findall(r"\\text\{([^{}]*)\}", x.value))
    return {b for b in bodies if len(re.findall(r"[^\W\d_]{2,}", b)) >= 2}


_english: dict[str, object] = {}


def english(state: str):
    if state not in _english:
        _english[state] = app_at("lookup", query=STATES[state])
    return _english[state]


def numbers_of(at) -> list[np.ndarray]:
    """Every trace's x and y of every chart, and every heat map's z (the names differ by language, not these)."""
    out = []
    for key in FIGURES:
        for trace in figures(at)[key]["data"]:
            out += [arr(trace[k]) for k in ("x", "y", "z") if k in trace and trace[k] is not None
                    and not (isinstance(trace[k], list) and any(isinstance(v, str) or v is None for v in trace[k]))]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left(state, lang):
    at = app_at("lookup", query={**STATES[state], "lang": lang})
    assert_clean(at)
    assert not at.warning or state == "a tie", [w.value for w in at.warning]
    assert english_left(english(state), at) == []
    assert latex_sentences(english(state)) and not latex_sentences(english(state)) & latex_sentences(at)
    for got, want in zip(numbers_of(at), numbers_of(english(state)), strict=True):  # the same numbers
        np.testing.assert_array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(EDITS))
def test_table_problems_are_reported_in_the_language(name, lang):
    pages = {}
    for code in ("en", lang):
        at = app_at("lookup", query={} if code == "en" else {"lang": code})
        with i18n.using(code):
            key0 = S.default_table().key_labels[0]
        change = {k: ({r: {c: (key0 if v == "{key0}" else v) for c, v in cells.items()} for r, cells in rows.items()}
                      if k == "edited_rows" else rows) for k, rows in EDITS[name].items()}
        pages[code] = edit(at, **change)
        assert not pages[code].exception
    at = pages[lang]
    assert bool(at.error) == (name != "own rows") == bool(pages["en"].error)
    assert english_left(pages["en"], at) == []
    if name == "own rows":  # a row of the learner's own keeps its name, and its preset says so in the language
        ticks = figures(at)["lookup_fig_matrix"]["layout"]["yaxis"]["ticktext"]
        assert ticks[-1] == {"pt": "buscar Peru", "tr": "Peru ara"}[lang]
        assert any(c.value == {"pt": "1 linha vazia ignorada.", "tr": "1 boş satır yok sayıldı."}[lang]
                   for c in at.caption)


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


@pytest.mark.slow
def test_changing_the_language_keeps_the_query_and_the_sharpness():
    at = app_at("lookup", query={"lookup_qx": "-1.88", "lookup_qy": "-0.68", "lookup_sharpness": "3"})
    before = soft_weights(at)
    at.selectbox(key="_lang_choice").set_value("pt").run()
    assert_clean(at)
    assert at.query_params["lookup_qx"] == "-1.88" and at.select_slider(key="lookup_sharpness").value == 3
    np.testing.assert_array_equal(soft_weights(at), before)
    assert at.title[0].value == "Atenção como uma busca suave em banco de dados"
