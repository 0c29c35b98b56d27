"""The KV-cache lesson in a real browser: three clicks grow the cache by three K/V rows while the cached step keeps
matching the full recomputation (≤ 1e-5), and a shared link reproduces the page in a new session."""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from tests.e2e.conftest import App, chart_numbers, numbers_equal, record_timing

pytestmark = pytest.mark.e2e

PATH = "kv-cache"
KEYS, VALUES, COMPARE, NEW_ROW = "kv_fig_keys", "kv_fig_values", "kv_fig_compare", "kv_fig_new_row"
N_PROMPT = 5  # "The capital of France is"


def next_button(app: App):
    return app.page.locator(".st-key-kv_next button").first


def main_text(app: App) -> str:
    return app.page.locator('[data-testid="stMain"]').inner_text()


def cached_and_full(app: App) -> tuple[np.ndarray, np.ndarray]:
    traces = app.chart(COMPARE)["traces"]
    return np.array(traces[0]["y"], dtype=float), np.array(traces[1]["y"], dtype=float)


def test_generating_three_tokens_grows_the_cache_and_matches_the_full_recomputation(st_app):
    record_timing("kv_cache_open_s", round(st_app.open(PATH), 3))
    assert not st_app.exceptions()
    keys = np.array(st_app.z(KEYS), dtype=float)
    assert keys.shape == (N_PROMPT, 64)
    assert "Step 0 is the prefill" in main_text(st_app)
    latencies = []
    for step in (1, 2, 3):
        before, old = keys, st_app.z_signature(KEYS)
        runs = st_app.runs()
        t0 = time.perf_counter()
        next_button(st_app).click()
        st_app.wait_chart_changed(KEYS, old)
        latencies.append(round(time.perf_counter() - t0, 3))
        st_app.settle(runs)
        keys = np.array(st_app.z(KEYS), dtype=float)
        assert keys.shape == (N_PROMPT + step, 64), f"step {step}: the K cache has {keys.shape[0]} rows"
        assert np.array(st_app.z(VALUES), dtype=float).shape == (N_PROMPT + step, 64)
        np.testing.assert_array_equal(keys[:-1], before)  # the rows already cached are unchanged
        assert len(st_app.z(NEW_ROW)[0]) == N_PROMPT + step  # the new query sees every cached key
        cached, full = cached_and_full(st_app)
        assert cached.shape == full.shape == (N_PROMPT + step,)
        assert np.abs(cached - full).max() <= 1e-5, np.abs(cached - full).max()
        text = main_text(st_app)
        assert f"{N_PROMPT} prompt tokens + {step} generated = {N_PROMPT + step} tokens in the cache" in text
        assert "max |cached − full|" in text
        assert f"kv_steps={step}" in st_app.page.url, st_app.page.url
    code = st_app.page.locator('[data-testid="stCode"]').first.inner_text()
    assert code.startswith("The capital of France is Paris."), code
    assert not st_app.exceptions()
    st_app.screenshot("kv-cache-3-steps")
    print(f"click -> updated K cache chart: {latencies} s")
    record_timing("kv_cache_click_to_chart_s", {"each": latencies, "median": statistics.median(latencies)})


def test_a_shared_link_reproduces_the_page(st_app, context):
    settings = {"kv_prompt": "Once upon a time", "kv_sampling": "sample", "kv_temperature": 1.2, "seed": 5,
                "kv_layer": 3, "kv_head": 1, "kv_query": 5}  # the sidebar's seed draws; query head 5 reads kv head 1
    st_app.open(PATH, settings)
    for _ in range(2):
        st_app.act(next_button(st_app).click)
    url = st_app.page.url
    assert "kv_steps=2" in url and "seed=5" in url and "kv_seed" not in url, url
    sent = chart_numbers(st_app.charts())
    sent_code = st_app.page.locator('[data-testid="stCode"]').first.inner_text()
    assert np.array(st_app.z(KEYS)).shape == (4 + 2, 64)
    assert st_app.chart(COMPARE)["traces"][0]["name"] == "cached step"

    other = App(context.new_page(), st_app.base)  # a new tab: a new session, as the one who gets the link
    try:
        t0 = time.perf_counter()
        other.page.goto(url, wait_until="domcontentloaded")
        other.settle(before=0)
        record_timing("kv_cache_shared_link_open_s", round(time.perf_counter() - t0, 3))
        assert not other.exceptions()
        assert not other.page.locator('[data-testid="stAlert"]').filter(has_text="not valid").count()
        got = chart_numbers(other.charts())
        assert got.keys() == sent.keys()
        assert numbers_equal(got, sent), "the shared link draws other numbers"
        assert other.page.locator('[data-testid="stCode"]').first.inner_text() == sent_code
        for key, value in (("kv_layer", "3"), ("seed", "5"), ("kv_query", "5"), ("kv_steps", "2")):
            assert other.widget_value(key) == value, (key, other.widget_value(key))
    finally:
        other.page.close()
