"""The lookup's model (explorer/lessons/lookup/model.py): the editor texts (the default rows as written in each
language, the headers and helps), the table checks and the presets, in every language."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.lookup import model as S
from explorer.shell import i18n
from tests.apptest_utils import english_sentences


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_the_default_rows_as_written_parse_back_to_the_default_table(lang):
    rows = S.table_rows(lang)
    assert [list(r) for r in rows] == [list(S.COLUMNS)] * len(rows)
    assert all(isinstance(r[c], str) for r in rows for c in S.NUMBER_COLUMNS)  # text columns: "1,73" stays text
    with i18n.using(lang):
        check = S.parse_table(rows)
        assert check.problems == () and check.table == S.default_table(), check.problems  # names in lang too


def test_numbers_are_written_in_the_runs_language():
    en, pt = S.table_rows("en"), S.table_rows("pt")
    decimals = [c for c in S.NUMBER_COLUMNS if "." in en[0][c]]
    assert decimals and all(pt[0][c] == en[0][c].replace(".", ",") for c in decimals)


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_every_column_has_its_header_and_help_in_each_language(lang):
    texts = S.column_texts(lang)
    assert list(texts) == list(S.COLUMNS)
    assert all(label and why for label, why in texts.values())
    assert "1000" in texts[S.K1][1] and "1000" in texts[S.V2][1]  # NUMBER_LIMIT, whole: no decimal mark
    with i18n.using(lang):
        assert texts[S.KEY][0] == i18n.translator("explorer.lessons.lookup.model")[0]("key")
    if lang != "en":
        assert texts[S.KEY][1] != S.column_texts("en")[S.KEY][1], "the help is not translated"



def rows(lang: str, name: str) -> list[dict]:
    """The default table as the editor shows it in ``lang``, with the change ``name``: bad cells, duplicates, an
    empty table, too many rows, a row of the learner's own and an empty row."""
    with i18n.using(lang):
        table = [dict(r) for r in S.default_rows()]
    if name == "bad cells":
        table[0]["k1"], table[1]["k2"], table[2]["v1"] = None, "abc", 10 * S.NUMBER_LIMIT
        table[3]["key"], table[4]["value"] = "", None
        table[5]["k1"] = "inf"
    elif name == "duplicates":
        table[2]["key"] = table[0]["key"]
        table[3]["k1"], table[3]["k2"] = table[1]["k1"], table[1]["k2"]
    elif name == "empty":
        table = []
    elif name == "too many rows":
        table += [{"key": f"r{i}", "k1": i, "k2": 1.0, "value": "x", "v1": 0, "v2": 0} for i in range(7)]
    elif name == "own rows":
        table += [{"key": "Peru", "k1": 3.0, "k2": 3.0, "value": "Lima", "v1": -12.0, "v2": -77.0}, {}]
    return table


@pytest.mark.parametrize("lang", ["pt", "tr"])
@pytest.mark.parametrize("name", ["bad cells", "duplicates", "empty", "too many rows", "own rows"])
def test_table_problems_and_presets_are_written_in_the_language(name, lang):
    """Every problem the table check reports (blank, not a number, not finite, too large, duplicate keys and names,
    empty, too many rows) and every preset's name has its translation; a row of the learner's own keeps its
    name."""
    english = S.parse_table(rows("en", name))
    with i18n.using(lang):
        check = S.parse_table(rows(lang, name))
        names = list(S.presets(check.table)) if check.table is not None else []
    assert len(check.problems) == len(english.problems) and bool(check.problems) == (name != "own rows")
    assert not english_sentences(list(english.problems)) & english_sentences(list(check.problems)), check.problems
    if name == "bad cells":
        assert len(check.problems) == 6  # one per cell: blank, not a number, too large, no key, no value, not finite
    if name == "own rows":  # the learner's row: its preset in the language, its name as typed; one empty row
        assert names[len(S.default_rows())] == {"pt": "buscar Peru", "tr": "Peru ara"}[lang]
        assert check.n_empty_rows == 1
        english_names = list(S.presets(english.table))
        assert not english_sentences(english_names) & english_sentences(names)


def test_blend_claim_says_blend_until_the_best_key_takes_more_than_0_999():
    assert S.blend_claim(np.array([0.5, 0.3, 0.2]), 3) == ("Every key gets a share; the answer is a blend of all 3 "
                                                           "values.")
    assert S.blend_claim(np.array([0.998, 0.001, 0.001]), 3).startswith("Every key gets a share")
    assert S.blend_claim(np.array([0.9995, 0.0005]), 2) == ("At this sharpness the best key takes 99.95% of the "
                                                            "weight: the blend has become the database's answer.")
    with i18n.using("tr"):
        shown = S.blend_claim(np.array([0.999, 0.001]), 2)  # 0.999 is not below 0.999
    assert "99,90" in shown and not shown.startswith("At this")
