"""The lesson "Watch attention learn" in a real browser: press Train, the page shows the training live (a progress
bar that moves), then the curves draw and the scores rise; the trained page and two experiments lay out on a desktop
and, resized in place, on a phone.

What a run draws and says, and a link that reproduces it, are checked by the AppTests of
``tests/lessons/training/test_page.py``; here what only a browser sees: the page updating while one long script run
goes on, and the layout.
"""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

from tests.e2e.conftest import DESKTOP, SETTLED_JS, App, layout_problems, record_both_widths, record_timing

pytestmark = pytest.mark.e2e

PATH = "training"
SETTINGS = {"tr_steps": 400, "tr_seed": 1}  # the default model, 400 steps, seed 1: an induction head forms
TRAINING_S = 600_000  # a training run on 2 shared cores (ms)


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


def drawn_and_quiet(app: App, chart: str) -> None:
    """Wait until ``chart`` is drawn and the app is settled (a training run is one long script run, and a click's run
    is followed by a rerun: wait for the result itself, then for quiet, not for a count of runs)."""
    app.page.locator(f".st-key-{chart} .js-plotly-plot").first.wait_for(timeout=TRAINING_S)
    app.page.wait_for_function(f"(a) => ({SETTLED_JS})(a)", arg={"before": -1, "quiet": 500}, timeout=TRAINING_S,
                               polling=200)


def main_text(app: App) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def test_training_shows_its_progress_live_then_the_curves_and_the_scores_rise(st_app):
    st_app.open(PATH, SETTINGS)
    assert not st_app.exceptions()
    assert "Not trained yet" in main_text(st_app)
    st_app.page.evaluate(WATCH_PROGRESS_JS)
    t0 = time.perf_counter()
    st_app.page.locator(".st-key-tr_train button").first.click()
    drawn_and_quiet(st_app, "tr_fig_loss")
    record_timing("training_click_to_curves_s", round(time.perf_counter() - t0, 3))
    seen = st_app.page.evaluate("() => window.__trainingProgress")
    assert seen["bars"] >= 1 and seen["updates"] >= 2, seen  # the page showed the training live, step by step
    assert not st_app.exceptions()
    scores = series(st_app, "tr_fig_scores")
    assert max(scores["prefix-match L1H0"][-20:].max(), scores["prefix-match L1H1"][-20:].max()) > 0.8
    assert max(scores["prefix-match L1H0"][:20].max(), scores["prefix-match L1H1"][:20].max()) < 0.2
    assert st_app.page.locator(".st-key-tr_fig_knockout .js-plotly-plot").count() == 1
    st_app.screenshot("training-after")


def test_no_text_overlaps_on_the_trained_page_and_two_experiments(st_app):
    """The tour checks every lesson at its defaults (before training); this checks the curves, the maps at a step,
    the knockouts and two experiments' charts (the server's shared runs: trained once), at both widths."""
    st_app.page.set_viewport_size(DESKTOP)
    st_app.open(PATH, SETTINGS)
    for key, chart in (("tr_train", "tr_fig_loss"), ("tr_run_layers", "tr_fig_layers"),
                       ("tr_run_shortcut", "tr_fig_shortcut_map")):
        button = st_app.page.locator(f".st-key-{key} button:visible")
        if button.count():
            button.first.click()
            drawn_and_quiet(st_app, chart)
    assert not st_app.exceptions()
    record = record_both_widths(st_app, "training-trained")
    problems = [p for width, r in record.items() for p in layout_problems(r, f"{r['width']}px {PATH} ({width})")]
    assert not problems, "\n".join(problems)
