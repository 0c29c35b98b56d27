"""'What made it say that?' in a real browser: a click on the attribution grid adds that head to the knockout (and
to the link).

What the page computes (the grid, the patching map, the knockout's numbers, the sweep and its graded guess, a shared
link) is checked against the interventions by the AppTests of ``tests/lessons/causes/test_page.py``; here what only a
browser does: Plotly turning a click into a cell.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import App, record_timing, wait_laid_out

pytestmark = pytest.mark.e2e

PATH = "causes"


def page_text(app: App) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def test_a_click_on_the_grid_knocks_that_head_out(st_app):
    record_timing("causes_first_open_s", round(st_app.open(PATH), 3))
    assert not st_app.exceptions(), st_app.exceptions()
    wait_laid_out(st_app)  # a long page still lays out below the chart: a click lands where it was aimed
    point = st_app.cell_point("ca_grid", 0, 4)  # layer 0, head 4
    st_app.act(lambda: st_app.page.mouse.click(point["x"], point["y"]))
    assert not st_app.exceptions(), st_app.exceptions()
    assert "ca_heads=L23H4%2CL29H1%2CL29H2%2CL0H4" in st_app.page.url or \
        "ca_heads=L23H4,L29H1,L29H2,L0H4" in st_app.page.url, st_app.page.url
    assert "Knocking out L23H4, L29H1, L29H2, L0H4 (zero ablation)" in page_text(st_app)
