"""The sinks lesson in a real browser: every chart draws and agrees with the others, the first-token choice changes
its chart and the link, a shared link reproduces the page in a new session, and a phone-wide tab shows it too."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.e2e.conftest import App, chart_numbers, numbers_equal, record_timing

pytestmark = pytest.mark.e2e

PATH = "attention-sinks"
CHARTS = ("sk_fig_layers", "sk_fig_grid", "sk_fig_top_head", "sk_fig_first", "sk_fig_mask", "sk_fig_losses",
          "sk_fig_tradeoff")


def main_text(app: App) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def series(app: App, key: str) -> list[np.ndarray]:
    return [np.array(t["y"], dtype=float) for t in app.chart(key)["traces"]]


@pytest.mark.timeout(1800)
def test_the_page_draws_every_section_and_its_charts_agree(st_app):
    record_timing("sinks_open_s", round(st_app.open(PATH, {"sk_measure": "true"}), 3))
    assert not st_app.exceptions()
    assert {c["key"] for c in st_app.charts()} >= set(CHARTS)
    grid = np.array(st_app.z("sk_fig_grid"), dtype=float)  # [30 layers, 9 heads]
    assert grid.shape == (30, 9)
    bars, dots, _ = series(st_app, "sk_fig_layers")
    np.testing.assert_allclose(bars, grid.mean(axis=1), atol=2e-3)  # the grid is rounded to its 3 digits
    np.testing.assert_allclose(dots, grid.max(axis=1), atol=2e-3)
    losses = series(st_app, "sk_fig_losses")  # 0, 1, 4 kept first tokens and full attention
    assert len(losses) == 4
    for other in losses[1:]:
        np.testing.assert_allclose(other[:16], losses[0][:16], rtol=1e-4)  # before the window: the same
    assert np.abs(losses[0][16:] - losses[3][16:]).max() > 0.1  # after it: the window without sinks differs
    text = main_text(st_app)
    for said in ("Measured on your text: the sink follows the first position, not the word",
                 "Measured: shifting every position by 1,000 changes no logit by more than",
                 "keeping the first 4 tokens brings the perplexity from", "Conversions before any fine-tuning.",
                 "the same numbers (max |Δ logit| = 0, bit for bit)"):
        assert said in text, said
    tradeoff = st_app.chart("sk_fig_tradeoff")["traces"]
    assert [t["name"] for t in tradeoff] == ["key/value heads", "latent cache", "sliding window", "the model (GQA)"]
    st_app.screenshot("sinks-desktop")

    runs = st_app.runs()
    t0 = time.perf_counter()
    st_app.set_widget("sk_first", "drop your first token")
    st_app.page.wait_for_function(
        "() => [...document.querySelectorAll('.st-key-sk_fig_first .legendtext')].some(e => "
        "e.textContent.startsWith('without it'))", timeout=180_000)
    record_timing("sinks_first_token_choice_s", round(time.perf_counter() - t0, 3))
    st_app.settle(runs)
    assert "sk_first=drop" in st_app.page.url, st_app.page.url
    assert "Without your first token" in main_text(st_app)
    assert not st_app.exceptions()


@pytest.mark.timeout(1800)
def test_a_shared_link_reproduces_the_page_on_a_desktop_and_a_phone(st_app, context):
    params = {"sk_prompt": "A quiet village sat at the foot of the mountains. Every morning the baker opened his shop, "
                           "the children walked to school, and the old clock in the square struck eight.",
              "sk_first": "the", "sk_offset": 250, "sk_window": 8, "sk_new": 4, "sk_measure": "true"}
    st_app.open(PATH, params)
    assert not st_app.exceptions()
    assert not st_app.page.locator('[data-testid="stAlert"]').filter(has_text="not valid").count()
    sent = chart_numbers(st_app.charts())
    assert "shifting every position by 250" in main_text(st_app)
    url = st_app.page.url
    phone = context.new_page()
    phone.set_viewport_size({"width": 390, "height": 4000})
    other = App(phone, st_app.base)
    try:
        t0 = time.perf_counter()
        other.page.goto(url, wait_until="domcontentloaded")
        other.settle(before=0)
        record_timing("sinks_shared_link_open_s", round(time.perf_counter() - t0, 3))
        assert not other.exceptions()
        got = chart_numbers(other.charts())
        assert got.keys() == sent.keys()
        assert numbers_equal(got, sent), "the shared link draws other numbers"
        for key, value in (("sk_window", "8"), ("sk_new", "4"), ("sk_offset", "250")):
            assert other.widget_value(key) == value, (key, other.widget_value(key))
        # on a phone no chart is wider than the screen
        widths = other.page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(e => "
                                     "e.getBoundingClientRect().right)")
        assert max(widths) <= 390, widths
        other.screenshot("sinks-phone")
    finally:
        other.page.close()
