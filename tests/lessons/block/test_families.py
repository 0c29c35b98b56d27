"""AppTest of "Inside one transformer block" on a tiny model of each other family (qwen2, qwen3, gpt2, gemma3: the
door serves it, ``@pytest.mark.lesson_model``): every block opened with the slider shows that family's parts (its
norm, its MLP, Gemma's norms after attention and the MLP, GPT-2's biases) and the numbers recomputed from the core."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.block import model as M
from explorer.shell import i18n, llm
from tests.apptest_utils import app_at, assert_clean, figure_array, figures

PAGE = "block"
FAMILIES = [pytest.param(f, marks=pytest.mark.lesson_model(f)) for f in ("qwen2", "qwen3", "gpt2", "gemma3")]


def block_values(at) -> list[str]:
    return [v for d in at.dataframe if "quantity" in d.value.columns for v in d.value["value"]]


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info") for e in getattr(at, kind))


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_block_shows_the_familys_parts(family, door_model):
    lm, c = door_model, door_model.config
    at = app_at(PAGE, timeout=120)
    assert_clean(at)
    ids = tuple(lm.encode(M.DEFAULT_PROMPT, truncate=True)[: llm.PROMPT_MAX_TOKENS])
    m = M.measure(lm, ids)
    latex = " ".join(e.value for e in at.latex)
    for line in (*M.stream_latex(c), M.embedding_latex(c), M.norm_latex(c), *M.attention_latex(c), *M.mlp_latex(c)):
        assert line in latex, line
    assert rf"\text{{logits}} = \mathrm{{{llm.norm_name(c)}}}(x_{{{c.n_layers}}})" in latex
    shown = texts(at)
    for sentence in (M.pre_norm_claim(f"tiny-{c.architecture}", c), M.embedding_text(c), M.norm_markdown(c),
                     M.attention_markdown(c), M.mlp_markdown(c)):
        assert sentence in shown, sentence
    assert M.embedding_symbol(c) in next(d.value for d in at.dataframe if "id" in d.value.columns).columns
    fig = figures(at)["blk_fig_stream"]
    np.testing.assert_allclose(figure_array(fig["data"][2]["y"]), m.stream_norms, rtol=1e-6)
    for layer in range(c.n_layers):
        at.slider(key="blk_block").set_value(layer).run()
        assert_clean(at)
        b = M.inside(lm, ids, layer, M.measure)
        assert block_values(at) == [i18n.significant(v, 4) for *_, v in M.inside_rows(b, m.eps)]
        steps = [c_.value for c_ in at.caption if c_.value.startswith("**")]
        assert steps[:3] == [f"**{llm.norm_name(c)} before attention**", "**attention**",
                             f"**MLP ({llm.mlp_name(c)})**"]
        np.testing.assert_allclose(figure_array(figures(at)["blk_fig_heads"]["data"][0]["y"]), b.head_norms,
                                   rtol=1e-6)
        assert M.rms_claim(b) in texts(at)
