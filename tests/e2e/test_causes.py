"""'What made it say that?' in a real browser: the attribution grid and the patching map draw the numbers computed
here, a click on the grid adds that head to the knockout (and the link), the sweep runs with its progress bar and
grades the guess, and a shared link reproduces the page in a new session.

Expected numbers come from the interventions run here, in the test process (``attention.llama.interventions``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from attention import llama
from attention.llama import interventions as iv
from explorer.lessons.causes import model as M
from explorer.shell import llm
from tests.e2e.conftest import App, chart_numbers, numbers_equal, record_timing

pytestmark = pytest.mark.e2e

PATH = "causes"


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


def page_text(app: App) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def steady_point(app: App, key: str, row: int, col: int) -> dict:
    """A heat-map cell's position once the page has stopped moving (a long page still lays out below the chart)."""
    point = app.cell_point(key, row, col)
    for _ in range(50):
        app.page.wait_for_timeout(200)
        again = app.cell_point(key, row, col)
        if again == point:
            return point
        point = again
    return point


def choose_by_typing(app: App, key: str, option: str) -> None:
    """Pick ``option`` of a long selectbox the way a learner does: open it, type, Enter."""
    def choose():
        field = app.page.locator(f".st-key-{key} input").first
        field.click()
        field.fill(option)
        app.page.get_by_role("option", name=option, exact=True).first.wait_for(state="visible", timeout=30_000)
        field.press("Enter")
    app.act(choose, idempotent=True)


def test_the_page_draws_the_numbers_computed_here(st_app, lm):
    record_timing("causes_first_open_s", round(st_app.open(PATH), 3))
    assert not st_app.exceptions(), st_app.exceptions()
    ids = lm.encode(M.DEFAULT_PROMPT)
    paris, rome = lm.encode(" Paris")[0], lm.encode(" Rome")[0]
    att = iv.logit_attribution(lm, ids, paris)
    np.testing.assert_allclose(np.array(st_app.z("ca_grid"), dtype=float), att.heads, rtol=1e-6, atol=1e-9)
    grid = iv.patch_residual_sweep(lm, lm.encode(M.DEFAULT_CLEAN), lm.encode(M.DEFAULT_CORRUPTED), paris, rome)
    np.testing.assert_allclose(np.array(st_app.z("ca_fig_patch"), dtype=float), grid, rtol=1e-5, atol=1e-5)
    text = page_text(st_app)
    assert "The fact moves between layers 23 and 24." in text
    assert "Copying L23H4's output alone" in text and "L18H6, L17H4, L17H3" in text
    st_app.screenshot("causes_defaults")


def test_a_click_on_the_grid_knocks_that_head_out(st_app, lm):
    st_app.open(PATH)
    point = steady_point(st_app, "ca_grid", 0, 4)  # layer 0, head 4
    st_app.act(lambda: st_app.page.mouse.click(point["x"], point["y"]))
    assert not st_app.exceptions(), st_app.exceptions()
    assert "ca_heads=L23H4%2CL29H1%2CL29H2%2CL0H4" in st_app.page.url or \
        "ca_heads=L23H4,L29H1,L29H2,L0H4" in st_app.page.url, st_app.page.url
    ids = lm.encode(M.DEFAULT_PROMPT)
    paris = lm.encode(" Paris")[0]
    p = float(llm.probabilities(iv.knock_out(lm, ids, [(23, 4), (29, 1), (29, 2), (0, 4)]))[paris])
    assert f"to {p:.4f}" in page_text(st_app)


def test_the_sweep_shows_progress_and_grades_the_guess(st_app, lm):
    st_app.open(PATH)
    choose_by_typing(st_app, "ca_guess", "L23H4")  # 271 options: the list shows a few, typing filters it
    assert st_app.widget_value("ca_guess") == "L23H4"
    assert "ca_guess=L23H4" in st_app.page.url
    t0 = time.perf_counter()
    st_app.act(lambda: st_app.page.locator(".st-key-ca_reveal button").click())
    record_timing("causes_sweep_5_tokens_s", round(time.perf_counter() - t0, 3))
    assert not st_app.exceptions(), st_app.exceptions()
    assert "Right: L23H4 matters most." in page_text(st_app)
    ids = lm.encode(M.DEFAULT_PROMPT)
    sweep = iv.knockout_sweep(lm, ids, lm.encode(" Paris")[0])
    np.testing.assert_allclose(np.array(st_app.z("ca_sweep_grid"), dtype=float), sweep.effect, rtol=1e-4, atol=1e-5)
    st_app.screenshot("causes_sweep")


def test_a_shared_link_reproduces_the_page(st_app, context):
    st_app.open(PATH)
    st_app.set_widget("ca_prompt", "The capital of Germany is")
    st_app.set_widget("ca_ablation", "mean (the head's average over the prompt)")
    st_app.set_widget("ca_corrupt", "The capital of Spain is")
    assert not st_app.exceptions(), st_app.exceptions()
    url = st_app.page.url
    for part in ("ca_prompt=", "ca_ablation=mean", "ca_corrupt=", "ca_heads="):
        assert part in url, url
    shown = chart_numbers(st_app.charts())
    other = App(context.new_page(), st_app.base)  # a new tab: a new session, nothing but the link
    try:
        other.page.goto(url, wait_until="domcontentloaded")
        other.settle(before=0)
        assert not other.exceptions(), other.exceptions()
        assert other.widget_value("ca_prompt") == "The capital of Germany is"
        again = chart_numbers(other.charts())
        assert again.keys() == shown.keys()
        differ = [k for k in shown if not numbers_equal(shown[k], again[k])]
        assert not differ, f"the shared link shows other numbers in {differ}"
    finally:
        other.page.close()
