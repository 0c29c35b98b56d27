"""The real-model lesson in a real browser: the head grid draws, clicking a cell or moving a slider opens that head,
and a shared link reproduces the page in a new session.

Expected numbers come from the model run here, in the test process (``attention.llama`` and the lesson's pure
``model.head_statistics``), so the browser's charts are checked against an independent forward pass.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from attention import llama
from explorer.lessons.real_model import model as M
from tests.e2e.conftest import App, chart_numbers, numbers_equal, record_timing

pytestmark = pytest.mark.e2e

PATH = "real-model"
GRID, HEAD = "rm_grid", "rm_fig_head"


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


def expected(lm, text: str = M.DEFAULT_PROMPT):
    ids = lm.encode(text)
    out = lm.forward(ids)
    return out.attentions.astype(np.float64), M.head_statistics(out.attentions, ids)


def head_map(app: App) -> np.ndarray:
    """The head's attention map as drawn (masked cells, the future, as 0)."""
    return np.array([[0.0 if v is None else v for v in row] for row in app.z(HEAD)], dtype=float)


def head_title(app: App) -> str:
    return app.page.locator("h2").filter(has_text="One head up close").first.inner_text()


def test_the_head_grid_draws_and_a_click_opens_that_head(st_app, lm):
    record_timing("real_model_first_open_s", round(st_app.open(PATH), 3))  # the model loads on the first visit
    assert not st_app.exceptions(), st_app.exceptions()
    attentions, stats = expected(lm)
    grid = st_app.chart(GRID)
    np.testing.assert_allclose(np.array(grid["traces"][0]["z"], dtype=float), stats.get("sink"), rtol=1e-9)
    assert st_app.cell_point(GRID, 0, 0)["y"] < st_app.cell_point(GRID, 29, 0)["y"]  # layer 0 on top
    np.testing.assert_allclose(head_map(st_app), attentions[16, 0], atol=1e-6)
    assert head_title(st_app) == "One head up close: layer 16, head 0"
    latencies = []
    for layer, head in ((3, 5), (29, 8), (18, 6)):
        old = st_app.z_signature(HEAD)
        runs = st_app.runs()
        point = st_app.cell_point(GRID, layer, head)
        t0 = time.perf_counter()
        st_app.page.mouse.click(point["x"], point["y"])
        st_app.wait_chart_changed(HEAD, old)
        latencies.append(round(time.perf_counter() - t0, 3))
        st_app.settle(runs)
        assert head_title(st_app) == f"One head up close: layer {layer}, head {head}"
        assert (st_app.widget_value("rm_layer"), st_app.widget_value("rm_head")) == (str(layer), str(head))
        assert f"rm_layer={layer}" in st_app.page.url and f"rm_head={head}" in st_app.page.url, st_app.page.url
        np.testing.assert_allclose(head_map(st_app), attentions[layer, head], atol=1e-6)
        kv = head // 3
        titles = [st_app.chart(f"rm_fig_group_{g}")["svgText"] for g in range(3)]
        assert any(f"head {head} (kv {kv}) ◀ chosen" in t for t in titles[head - 3 * kv])
    record_timing("real_model_click_to_chart_s", {"each": latencies, "median": statistics.median(latencies)})
    assert not st_app.exceptions() and not st_app.page_errors, st_app.page_errors


def test_the_head_slider_updates_the_detail(st_app, lm):
    st_app.open(PATH)
    attentions, _ = expected(lm)
    latencies = []
    for head in (1, 2, 3):
        old = st_app.z_signature(HEAD)
        runs = st_app.runs()
        t0 = time.perf_counter()
        st_app.slider_step("rm_head", "ArrowRight")
        st_app.wait_chart_changed(HEAD, old)
        latencies.append(round(time.perf_counter() - t0, 3))
        st_app.settle(runs)
        assert st_app.widget_value("rm_head") == str(head)
        np.testing.assert_allclose(head_map(st_app), attentions[16, head], atol=1e-6)
        assert head_title(st_app) == f"One head up close: layer 16, head {head}"
    record_timing("real_model_slider_to_chart_s", {"each": latencies, "median": statistics.median(latencies)})
    assert not st_app.exceptions()


STEP_CHARTS = {"rm_fig_x", "rm_fig_Q", "rm_fig_K", "rm_fig_V", "rm_fig_angles", "rm_fig_Q_rope", "rm_fig_K_rope",
               "rm_fig_scores", "rm_fig_scaled", "rm_fig_weights", "rm_fig_output"}


def test_the_six_steps_open_on_a_click_with_the_heads_numbers_and_the_link_keeps_them_open(st_app, context, lm):
    """Issue 30: the six steps' 11 charts are drawn when their expander opens (not on every head change before), for
    the head on screen, and a link copied then opens them again."""
    st_app.open(PATH, {"rm_head": 4})
    keys = {c["key"] for c in st_app.charts()}
    assert not keys & STEP_CHARTS and HEAD in keys
    runs = st_app.runs()
    st_app.page.locator(".st-key-rm_steps summary").first.click()
    st_app.page.wait_for_function("() => document.querySelector('.st-key-rm_fig_output .js-plotly-plot')",
                                  timeout=60_000)
    st_app.settle(runs)
    assert {c["key"] for c in st_app.charts()} >= STEP_CHARTS
    ids = lm.encode(M.DEFAULT_PROMPT)
    scores = np.array(st_app.z("rm_fig_scores"), dtype=float)
    np.testing.assert_allclose(scores, lm.head_steps(ids, 16, 4).scores, rtol=1e-4, atol=1e-6)
    assert "rm_steps=true" in st_app.page.url, st_app.page.url
    other = App(context.new_page(), st_app.base)
    try:
        other.page.goto(st_app.page.url, wait_until="domcontentloaded")
        other.settle(before=0)
        assert {c["key"] for c in other.charts()} >= STEP_CHARTS
    finally:
        other.page.close()
    assert not st_app.exceptions() and not st_app.page_errors, st_app.page_errors


def test_a_shared_link_reproduces_the_page(st_app, context, lm):
    st_app.open(PATH)
    st_app.set_widget("rm_prompt", "one two three four one two three four")
    st_app.set_widget("rm_stat", "induction")
    st_app.set_widget("rm_layer", 17)
    assert not st_app.exceptions(), st_app.exceptions()
    url = st_app.page.url
    for part in ("rm_prompt=", "rm_stat=induction", "rm_layer=17"):
        assert part in url, url
    _, stats = expected(lm, "one two three four one two three four")
    np.testing.assert_allclose(np.array(st_app.z(GRID), dtype=float), stats.get("induction"), rtol=1e-9)
    shown = chart_numbers(st_app.charts())

    other = App(context.new_page(), st_app.base)  # a new tab: a new session, nothing but the link
    try:
        t0 = time.perf_counter()
        other.page.goto(url, wait_until="domcontentloaded")
        other.settle(before=0)
        record_timing("real_model_shared_link_open_s", round(time.perf_counter() - t0, 3))
        assert not other.exceptions(), other.exceptions()
        assert other.widget_value("rm_prompt") == "one two three four one two three four"
        assert other.widget_value("rm_layer") == "17"
        again = chart_numbers(other.charts())
        assert again.keys() == shown.keys()
        differ = [k for k in shown if not numbers_equal(shown[k], again[k])]
        assert not differ, f"the shared link shows other numbers in {differ}"
        alerts = other.page.locator('[data-testid="stAlert"]').all_inner_texts()
        assert not [a for a in alerts if "not valid" in a], alerts
    finally:
        other.page.close()


def test_append_the_top_token_by_id_and_the_link_keeps_the_ids(st_app, context, lm):
    """Issue 26, item 1: three clicks append the greedy ids (".", "\\n", "\\n"), the link carries them, and a new
    tab opened on the link reads the same 13 tokens."""
    st_app.open(PATH)
    ids = lm.encode(M.DEFAULT_PROMPT)
    for _ in range(3):
        ids.append(int(np.argmax(lm.forward(ids).logits[-1])))
    for step in (1, 2, 3):
        old = st_app.z_signature(HEAD)
        runs = st_app.runs()
        st_app.page.locator(".st-key-rm_append button").first.click()
        st_app.wait_chart_changed(HEAD, old)
        st_app.settle(runs)
        assert head_map(st_app).shape == (10 + step, 10 + step)
    assert st_app.widget_value("rm_then") == " ".join(map(str, ids[10:]))
    attentions = lm.forward(ids).attentions.astype(np.float64)
    np.testing.assert_allclose(head_map(st_app), attentions[16, 0], atol=1e-6)
    assert "rm_then=" + "+".join(map(str, ids[10:])) in st_app.page.url.replace("%20", "+"), st_app.page.url
    assert not st_app.exceptions()
    other = App(context.new_page(), st_app.base)
    try:
        other.page.goto(st_app.page.url, wait_until="domcontentloaded")
        other.settle(before=0)
        assert not other.exceptions(), other.exceptions()
        np.testing.assert_allclose(head_map(other), attentions[16, 0], atol=1e-6)
    finally:
        other.page.close()
