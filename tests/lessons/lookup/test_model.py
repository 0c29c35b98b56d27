"""The lookup's editor texts from model.py: the default rows as written in each language, the headers and helps."""

from __future__ import annotations

import pytest

from explorer.lessons.lookup import model as S
from explorer.shell import i18n


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
