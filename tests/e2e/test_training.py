"""The lesson "Watch attention learn" in a real browser: press Train, the page shows the training live (a progress
bar), then the curves draw and the scores rise; a shared link opens the same run in a new session."""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

from tests.e2e.conftest import SETTLED_JS, App, chart_numbers, numbers_equal, record_timing
from tests.e2e.test_layout import DESKTOP, PHONE, _check_pages

pytestmark = pytest.mark.e2e

PATH = "training"
SETTINGS = {"tr_steps": 400, "tr_seed": 1}  # the default model, 400 steps, seed 1: an induction head forms


# Records, from before the click, that a progress bar appeared and how often its text changed (the live view).
WATCH_PROGRESS_JS = """
() => {
  const s = window.__trainingProgress = {bars: 0, updates: 0, texts: []};
  new MutationObserver(() => {
    const bar = document.querySelector('[data-testid="stProgress"]');
    if (!bar) return;
    const text = bar.innerText;
    if (!s.texts.length) s.bars += 1;
    if (s.texts[s.texts.length - 1] !== text) { s.texts.push(text); s.updates += 1; }
  }).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
}
"""


def array(data) -> np.ndarray:
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.array(data, dtype=float)


def series(app: App, key: str) -> dict[str, np.ndarray]:
    return {t["name"]: array(t["y"]) for t in app.chart(key)["traces"]}


def trained_and_quiet(app: App) -> None:
    """Wait until the run's curves are drawn and the app is settled (a training run is one long script run, and
    a click's run is followed by a rerun: wait for the result itself, then for quiet, not for a count of runs)."""
    app.page.locator(".st-key-tr_fig_loss .js-plotly-plot").first.wait_for(timeout=600_000)
    app.page.wait_for_function(f"(a) => ({SETTLED_JS})(a)", arg={"before": -1, "quiet": 500}, timeout=600_000,
                               polling=200)


def main_text(app: App) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def test_training_in_the_browser_draws_the_curves_and_the_scores_rise(st_app):
    st_app.open(PATH, SETTINGS)
    assert not st_app.exceptions()
    assert "Not trained yet" in main_text(st_app)
    st_app.page.evaluate(WATCH_PROGRESS_JS)
    t0 = time.perf_counter()
    st_app.page.locator(".st-key-tr_train button").first.click()
    trained_and_quiet(st_app)
    record_timing("training_click_to_curves_s", round(time.perf_counter() - t0, 3))
    seen = st_app.page.evaluate("() => window.__trainingProgress")
    assert seen["bars"] >= 1 and seen["updates"] >= 2, seen  # the page showed the training live, step by step
    assert not st_app.exceptions()
    loss = series(st_app, "tr_fig_loss")["loss"]
    assert loss.shape == (401,) and loss[:20].mean() > 3.9 and loss[-20:].mean() < 1.0
    scores = series(st_app, "tr_fig_scores")
    assert max(scores["prefix-match L1H0"][-20:].max(), scores["prefix-match L1H1"][-20:].max()) > 0.8
    assert max(scores["prefix-match L1H0"][:20].max(), scores["prefix-match L1H1"][:20].max()) < 0.2
    text = main_text(st_app)
    assert "An induction head formed" in text and "rose from" in text
    assert st_app.page.locator(".st-key-tr_fig_knockout .js-plotly-plot").count() == 1
    st_app.screenshot("training-after")


def test_a_shared_link_reproduces_the_run(st_app, context):
    st_app.open(PATH, SETTINGS)
    if st_app.page.locator(".st-key-tr_train button").count():  # not trained on this server yet
        st_app.page.locator(".st-key-tr_train button").first.click()
    trained_and_quiet(st_app)
    url = st_app.page.url
    assert "tr_steps=400" in url and "tr_seed=1" in url, url
    sent = chart_numbers(st_app.charts())
    other = App(context.new_page(), st_app.base)  # a new tab: a new session, as the one who gets the link
    try:
        t0 = time.perf_counter()
        other.page.goto(url, wait_until="domcontentloaded")
        other.settle(before=0)
        record_timing("training_shared_link_open_s", round(time.perf_counter() - t0, 3))
        assert not other.exceptions()
        assert not other.page.locator('[data-testid="stAlert"]').filter(has_text="not valid").count()
        assert not other.page.locator(".st-key-tr_train button").count()  # the server's run: no training again
        got = chart_numbers(other.charts())
        assert got.keys() == sent.keys()
        assert numbers_equal(got, sent), "the shared link draws other numbers"
        for key, value in (("tr_steps", "400"), ("tr_seed", "1")):
            assert other.widget_value(key) == value, (key, other.widget_value(key))
    finally:
        other.page.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone-390x844", "desktop-1440x900"])
def test_no_chart_text_overlaps_on_the_trained_page_and_two_experiments(st_app, viewport):
    """test_layout.py checks every lesson at its defaults (before training); this checks the curves, the maps at
    a step, the knockouts and two experiments' charts, drawn from the server's shared runs."""
    st_app.page.set_viewport_size(viewport)
    st_app.open(PATH, SETTINGS)
    for key in ("tr_train", "tr_run_layers", "tr_run_shortcut"):
        button = st_app.page.locator(f".st-key-{key} button:visible")
        if button.count():
            button.first.click()
            chart = {"tr_train": "tr_fig_loss", "tr_run_layers": "tr_fig_layers",
                     "tr_run_shortcut": "tr_fig_shortcut_map"}[key]
            st_app.page.locator(f".st-key-{chart} .js-plotly-plot").first.wait_for(timeout=600_000)
            st_app.page.wait_for_function(f"(a) => ({SETTLED_JS})(a)", arg={"before": -1, "quiet": 500},
                                          timeout=600_000, polling=200)
    problems = _check_pages(st_app, viewport, [(PATH, SETTINGS)])
    assert not problems, "\n".join(problems)
