"""Generating with a KV cache computes what is on screen (issue 47, item 2): the full recomputation that the cached
step is compared with runs when the learner switches it on, its switch saying what it runs and about how long here."""

from __future__ import annotations

import pytest

from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow  # whole-app runs
PAGE = "kv_cache"


def test_the_full_recomputation_runs_when_switched_on(passes):
    at = app_at(PAGE, query={"kv_steps": "2"}, timeout=600)
    assert_clean(at)
    prompt = passes[0]
    assert passes == [prompt, 1, 1]  # the prefill and two cached steps: nothing recomputed
    assert "kv_fig_compare" not in figures(at)
    label = at.toggle(key="kv_compare").label
    assert label.startswith(f"Compare with a full recomputation: 1 forward pass of {prompt + 2} tokens, ")
    assert label.endswith(" on this server")
    at.toggle(key="kv_compare").set_value(True).run()
    assert_clean(at)
    assert passes[3:] == [prompt + 2] and "kv_fig_compare" in figures(at)
