"""AppTest of "Inside a real model" on a tiny model of each other family (qwen2, qwen3, gpt2, gemma3, and llama3: a
llama file with Llama 3.2's scaled RoPE; the door serves it, ``@pytest.mark.lesson_model``): the page at its defaults
with the six steps open, then every layer's first head and the last head of the last layer (what a click on the grid
sets), each showing that architecture's steps."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.real_model import model as M
from tests.apptest_utils import app_at, assert_clean, figures

PAGE = "real_model"
FAMILIES = [pytest.param(f, marks=pytest.mark.lesson_model(f)) for f in ("qwen2", "qwen3", "gpt2", "gemma3", "llama3")]


def z(at, key) -> np.ndarray:
    data = figures(at)[key]["data"][0]["z"]
    return np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "subheader") for e in getattr(at, kind))


def latex(at) -> str:
    return " ".join(e.value for e in at.latex)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_the_page_shows_this_architectures_steps(family, door_model):
    lm, c = door_model, door_model.config
    at = app_at(PAGE, query={"rm_steps": "true"}, timeout=120)
    assert_clean(at)
    ids = lm.encode(M.DEFAULT_PROMPT, truncate=True)[:64]
    n = len(ids)
    out = lm.forward(ids)
    (steps,) = [e for e in at.expander if "six steps" in e.label]
    assert steps.label == f"Show the six steps, with their {M.step_charts(c)} charts"
    assert M.parts_text(c) in texts(at) and M.steps_overview(c) in texts(at)
    figs = figures(at)
    grid_lines = [s for s in figs["rm_grid"]["layout"].get("shapes", []) if s.get("name") == "kv group"]
    assert len(grid_lines) == (c.n_kv_heads - 1 if c.group_size > 1 else 0)  # the key/value groups, parted
    heads_to_open = [(layer, 0) for layer in range(c.n_layers)] + [(c.n_layers - 1, c.n_heads - 1)]
    for layer, head in heads_to_open:
        at.slider(key="rm_layer").set_value(layer).run()
        at.slider(key="rm_head").set_value(head).run()
        assert_clean(at)
        s = lm.head_steps(ids, layer, head)
        figs, shown = figures(at), texts(at)
        np.testing.assert_allclose(np.nan_to_num(z(at, "rm_fig_head")), out.attentions[layer, head], rtol=1e-5,
                                   atol=1e-7)
        np.testing.assert_array_equal(~np.isnan(z(at, "rm_fig_head")), s.mask)  # grey where the layer masks
        np.testing.assert_allclose(np.nan_to_num(z(at, "rm_fig_weights")), s.weights, rtol=1e-5, atol=1e-7)
        assert f"1 · x after {'LayerNorm' if c.norm == 'layer' else 'RMSNorm'}" in shown
        assert M.norm_latex(c) in latex(at) and M.qkv_latex(c, head, s.kv_head)[0] in latex(at)
        assert M.qkv_caption(c) in shown and M.mask_latex(c, layer) in latex(at)
        assert M.masked_caption(c, layer, n) in shown
        if c.positions == "learned":  # gpt2: no rotation step; the position vectors added before block 0
            assert "rm_fig_angles" not in figs and "rm_fig_Q_rope" not in figs
            assert "3 · Positions: learned vectors, no rotation" in shown
            np.testing.assert_allclose(z(at, "rm_fig_positions"), s.position_embedding, rtol=1e-3, atol=1e-3)
        else:
            assert "rm_fig_positions" not in figs
            np.testing.assert_allclose(z(at, "rm_fig_Q_rope"), s.q, rtol=1e-3, atol=1e-3)  # 4 digits
            assert M.rope_text(c, layer) in shown and M.rope_latex(c, s.rope_base)[1] in latex(at)
            assert ("q'_{i+" if c.rope_layout == "halves" else "q'_{2i+1}") in latex(at)  # the file's pairs
            assert f"pair 0 turns {s.angles[1, 0]:g} rad ({np.degrees(s.angles[1, 0]):.0f}°) per position" in shown
            if c.rope_freq_factors is not None:  # llama3: the speeds divided by the file's factors, said and shown
                assert "**Scaled speeds:**" in M.rope_text(c, layer) and "/ f_i" in latex(at)
        if c.qkv_bias:
            assert r"+ b_q^{(" in latex(at)
        if c.qk_norm:
            assert r"\mathrm{RMSNorm}(q_i) \odot g_q" in latex(at)
        if c.local_layers:
            assert M.layer_kind(c, layer) in shown and M.local_layers_text(c) in shown
        group = [k for k in figs if k.startswith("rm_fig_group_")]
        assert len(group) == (c.group_size if c.group_size > 1 else 0)
        assert M.gqa_text(c, head, c.name) in shown
    # the buttons: greedy decoding by hand reads the model's own top token; the repeated random prompt needs 16
    # whole-word tokens, which these tiny vocabularies do not have: the button is off and says why (no traceback)
    at.button(key="rm_append").click().run()
    assert_clean(at)
    assert at.text_input(key="rm_then").value == str(int(np.argmax(out.logits[-1])))
    repeat = at.button(key="rm_repeat")
    assert repeat.disabled == (not M.can_repeat(lm))
    if repeat.disabled:
        assert repeat.help == M.no_repeat_reason(lm) and "the repeated random prompt needs 16" in repeat.help
