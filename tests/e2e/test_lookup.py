"""The lookup lesson's editable table in a real browser (issue 18, item 12)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def _type_in_cell(st_app, row: int, col: int, text: str) -> None:
    """Type ``text`` into data cell (row, col) of the lookup's 6-column table (no index column), as a learner does:
    double-click the cell, type, Enter. The grid is a canvas: the cell is found from the grid's box (Streamlit
    1.67's 35 px header and rows)."""
    grid = st_app.page.locator('[class*="st-key-lookup_table_"] [data-testid="stDataFrame"]')
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    x = box["x"] + box["width"] / 6 * (col + 0.5)
    y = box["y"] + 35 * (row + 1.5)

    def edit():
        st_app.page.mouse.dblclick(x, y)  # opens the cell's editor: a text box over the canvas
        field = st_app.page.locator("textarea.gdg-input").first
        field.wait_for(state="visible")
        field.fill(text)
        field.press("Enter")
    st_app.act(edit)


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
