"""The soft lookup's table checks and presets (explorer/lessons/lookup/model.py), in every language."""

from __future__ import annotations

import pytest

from explorer.lessons.lookup import model as S
from explorer.shell import i18n
from tests.apptest_utils import english_sentences


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
