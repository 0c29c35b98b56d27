"""The real-model lesson in a real browser: a click (and, on a phone, the first tap) on the head grid opens that head,
and a click on the six steps' expander draws their charts and keeps them open in the link.

What the page computes (the grid's statistics, each head's map, the six steps' numbers, appended ids, a shared link)
is checked against the model by the AppTests of ``tests/lessons/real_model/test_page.py``; here what only a browser
does: Plotly turning a click or a tap into a cell, and an expander opened by hand.
"""

from __future__ import annotations

import statistics
import time

import pytest

from tests.e2e.conftest import TIMEOUT_MS, App, record_timing, wait_laid_out

pytestmark = pytest.mark.e2e

PATH = "real-model"
GRID, HEAD = "rm_grid", "rm_fig_head"


def head_title(app: App) -> str:
    return app.page.locator("h2").filter(has_text="One head up close").first.inner_text()


def opened(app: App, layer: int, head: int) -> None:
    """The page shows head (layer, head): its title, the sliders, the link, and the group charts' "◀ chosen"."""
    assert head_title(app) == f"One head up close: layer {layer}, head {head}"
    assert (app.widget_value("rm_layer"), app.widget_value("rm_head")) == (str(layer), str(head))
    assert f"rm_layer={layer}" in app.page.url and f"rm_head={head}" in app.page.url, app.page.url
    kv = head // 3
    titles = [app.chart(f"rm_fig_group_{g}")["svgText"] for g in range(3)]
    assert any(f"head {head} (kv {kv}) ◀ chosen" in t for t in titles[head - 3 * kv]), titles


STEP_CHARTS = {"rm_fig_x", "rm_fig_Q", "rm_fig_K", "rm_fig_V", "rm_fig_angles", "rm_fig_Q_rope", "rm_fig_K_rope",
               "rm_fig_scores", "rm_fig_scaled", "rm_fig_weights", "rm_fig_output"}


def test_a_click_on_the_head_grid_opens_that_head_and_a_click_opens_its_six_steps(st_app):
    """Two clicks on "Every head at a glance" open the heads under the pointer (layer 0 on top). Then issue 30: the
    six steps' 11 charts are drawn when their expander opens (not on every head change before), and the address bar
    says so (that a link with ``rm_steps=true`` opens them is the AppTest
    ``tests/lessons/real_model/test_page.py::test_defaults_tokens_prediction_grid_and_head``)."""
    record_timing("real_model_first_open_s", round(st_app.open(PATH), 3))  # the model loads on the first visit
    assert not st_app.exceptions(), st_app.exceptions()
    wait_laid_out(st_app)  # the grid no longer moves: a click lands where it was aimed
    assert st_app.cell_point(GRID, 0, 0)["y"] < st_app.cell_point(GRID, 29, 0)["y"]  # layer 0 on top
    keys = {c["key"] for c in st_app.charts()}
    assert not keys & STEP_CHARTS and HEAD in keys
    latencies = []
    for layer, head in ((3, 5), (29, 8)):
        old = st_app.z_signature(HEAD)
        runs = st_app.runs()
        point = st_app.cell_point(GRID, layer, head)
        t0 = time.perf_counter()
        st_app.page.mouse.click(point["x"], point["y"])
        st_app.wait_chart_changed(HEAD, old)
        latencies.append(round(time.perf_counter() - t0, 3))
        st_app.settle(runs)
        opened(st_app, layer, head)
    record_timing("real_model_click_to_chart_s", {"each": latencies, "median": statistics.median(latencies)})
    runs = st_app.runs()
    st_app.page.locator(".st-key-rm_steps summary").first.click()
    st_app.page.wait_for_function("() => document.querySelector('.st-key-rm_fig_output .js-plotly-plot')",
                                  timeout=TIMEOUT_MS)
    st_app.settle(runs)
    assert {c["key"] for c in st_app.charts()} >= STEP_CHARTS
    assert "rm_steps=true" in st_app.page.url and "rm_head=8" in st_app.page.url, st_app.page.url
    assert not st_app.exceptions() and not st_app.page_errors, st_app.page_errors


def test_the_first_tap_on_a_head_opens_that_head(phone):
    """Plotly builds a click's points from the last hover, and a finger gives no hover: without
    ``explorer/shell/touch_tap.js`` the first tap on "Every head at a glance" opened nothing and each later tap the
    head tapped before it. Every tap, the first included, opens the head under the finger."""
    phone.open(PATH)
    wait_laid_out(phone)
    for layer, head in ((3, 5), (12, 8)):
        old, runs = phone.z_signature(HEAD), phone.runs()
        point = phone.cell_point(GRID, layer, head)
        phone.page.touchscreen.tap(point["x"], point["y"])
        phone.wait_chart_changed(HEAD, old)
        phone.settle(runs)
        opened(phone, layer, head)
    assert not phone.exceptions()
