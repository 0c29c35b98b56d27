"""Issue 18, item 9: one numbering everywhere, 0-based positions (as the token labels ``"token (i)"``)."""

import re

import attention as A
from explorer.lessons.lookup import model as lookup
from explorer.shell.settings import token_labels


def test_the_lesson_example_labels_number_each_word_by_its_position():
    labels = token_labels(A.PIPELINE_EXAMPLE.tokens)
    for i, label in enumerate(labels):
        assert set(re.findall(r"\d+", label)) == {str(i)}, f"{label!r} mixes two numberings"


def test_the_lookup_table_names_rows_0_based_as_the_core_does():
    rows = [dict(r) for r in lookup.DEFAULT_ROWS]
    rows[0][lookup.K1] = None
    (problem,) = lookup.parse_table(rows).problems
    assert problem.startswith("row 0, column")
