"""AppTest of "Generating with a KV cache" on a tiny model of each other family (qwen2, qwen3, gpt2, gemma3: the door
serves it, ``@pytest.mark.lesson_model``): the defaults, a few generated tokens, every layer (Gemma's local layers and
its global one), every key/value head and query head, sampling; the cache's rows per layer are the config's, the cached
step equals the full pass, and every sentence about the cache is the family's."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons import kv_cache
from explorer.lessons.kv_cache import model as M
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, figures
from tests.lessons.kv_cache.test_page import compare, texts, z

PAGE = "kv_cache"
FAMILIES = [pytest.param(f, marks=pytest.mark.lesson_model(f)) for f in ("qwen2", "qwen3", "gpt2", "gemma3")]
STEPS = 6


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_control_on_each_family(family, door_model):
    lm, c = door_model, door_model.config
    at = app_at(PAGE, query={"kv_steps": str(STEPS), "kv_compare": "true"}, timeout=120)
    assert_clean(at)
    ids = lm.encode(M.DEFAULT_PROMPT)
    state = M.run(lm, ids, M.Sampling(), STEPS)
    n = len(ids) + state.steps
    latex = " ".join(e.value for e in at.latex)
    assert M.qkv_latex(c) in latex and M.key_latex(c) in latex and M.value_latex(c) in latex
    for line in M.cost_latex(c):
        assert line in latex
    shown = texts(at)
    assert M.intro_caption(c) in shown and M.sharing_words(c) in shown and M.keys_note(c) in shown
    assert M.mlp_words(c) in shown and M.weights_text(c, i18n.integer(M.macs_per_layer_weights(c))) in shown
    long = c.context_length
    windowed = M.window_cache_claim(c, i18n.integer(round(M.cache_bytes(c, long) / 1e6)),
                                    i18n.integer(round(M.window_cache_bytes(c, long) / 1e6)))
    assert (windowed in shown) if c.local_layers else windowed is None
    lines = [d for d in figures(at)["kv_fig_cache_size"]["data"] if d.get("mode") == "lines"]
    assert len(lines) == (1 if c.group_size == 1 else 2)  # no "no grouping" line when there is no grouping
    radio = at.radio(key="kv_head")
    assert list(radio.options) == [str(k) for k in range(c.n_kv_heads)]
    for layer in range(c.n_layers):
        at.slider(key="kv_layer").set_value(layer).run()
        assert_clean(at)
        np.testing.assert_allclose(z(at, "kv_fig_keys"), state.cache.keys[layer, 0], rtol=1e-3, atol=1e-3)
        assert z(at, "kv_fig_keys").shape == (n, c.d_head)  # every layer's cache holds every token (the model's)
        assert M.new_query_title(c, layer, n) in [h.value for h in at.subheader]
        note = M.window_note(c, layer, n)
        assert (note in texts(at)) if note else "is local" not in texts(at)
        new_row = np.asarray(figures(at)["kv_fig_new_row"]["data"][0]["z"], dtype=float)
        if layer in c.local_layers and n > c.sliding_window:
            assert not np.nan_to_num(new_row)[:, : n - c.sliding_window].any()  # outside the window: weight 0
    for kv_head in range(c.n_kv_heads):
        at.radio(key="kv_head").set_value(kv_head).run()
        for head in kv_cache.group({"kv_head": kv_head, "group_size": c.group_size}):
            at.radio(key="kv_query").set_value(head).run()
            assert_clean(at)
            assert figures(at)["kv_fig_compare"]["layout"]["title"]["text"].startswith(f"query head {head},")
            cached, full = compare(at)
            assert np.abs(cached - full).max() <= 1e-5
    at.radio(key="kv_sampling").set_value("sample").run()
    at.number_input(key="kv_top_k").set_value(c.vocab_size).run()
    assert_clean(at)
    assert "sampled: temperature 0.8, top-k" in texts(at, "caption")
