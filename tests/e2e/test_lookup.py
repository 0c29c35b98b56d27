"""The lookup lesson's editable table in a real browser (issue 18, item 12)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def _type_in_cell(st_app, row: int, col: int, text: str) -> None:
    """The lookup's table: 6 data columns, no index column."""
    st_app.type_in_cell('[class*="st-key-lookup_table_"]', 6, row, col, text)


def test_text_typed_into_a_number_cell_is_reported_as_not_a_number(st_app):
    st_app.open("lookup")
    before = st_app.chart("lookup_fig_keys")["traces"][1]["x"]  # the keys' first numbers, France's 1.73 first
    _type_in_cell(st_app, 0, 1, "abc")  # France's k1
    alerts = " ".join(st_app.page.locator('[data-testid="stAlert"]').all_inner_texts())
    assert "holds abc, which is not a number" in alerts and "blank" not in alerts, alerts
    assert st_app.chart("lookup_fig_keys")["traces"][1]["x"] == before and not st_app.exceptions()  # kept
    _type_in_cell(st_app, 0, 1, "1.5")
    assert "cannot be used" not in " ".join(st_app.page.locator('[data-testid="stAlert"]').all_inner_texts())
    assert st_app.chart("lookup_fig_keys")["traces"][1]["x"][0] == 1.5  # the edit is used
