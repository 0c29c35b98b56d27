"""AppTest of "What made it say that?" on a tiny model of every other family (qwen2, qwen3, gpt2, gemma3): the
defaults, then every control that takes another path (a knockout of more than half the heads, mean ablation, the
top-k picker, the sweep with its estimate, the patch pair and its layer), each checked against the core on the
served model (issue 50)."""

from __future__ import annotations

import numpy as np
import pytest

from attention.heads import top_heads
from attention.llama import interventions as iv
from explorer.lessons.causes import model as M
from explorer.shell import llm
from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow
PAGE = "causes"
FAMILIES = [pytest.param(f, marks=pytest.mark.lesson_model(f)) for f in ("qwen2", "qwen3", "gpt2", "gemma3")]


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("success", "warning", "info", "markdown", "caption", "text")
                    for e in getattr(at, kind))


def table(at, column: str, nth: int = 0):
    return [d.value for d in at.dataframe if column in d.value.columns][nth]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_section_runs_on_the_family(door_model, family):
    lm, c = door_model, door_model.config
    n_heads = c.n_layers * c.n_heads
    at = app_at(PAGE, query={"ca_induct": "true", "ca_patch": "true"}, opened_by_link=True, timeout=600)  # all on
    assert_clean(at)
    said = texts(at)
    assert f"tiny-{family}: {llm.describe(c)}." in [e.value for e in at.caption]
    assert ("the BOS token first, as the model file says" in said) == (family == "gemma3")
    assert "float32 holds them exactly, so the numbers are the file's own model's." in said  # the tiny files are F32
    # the attribution: its parts add up on every family (gemma3: each post-attention norm's divisor frozen, said so)
    ids = lm.encode(M.DEFAULT_PROMPT)
    answer = int(lm.forward(ids).logits[-1].argmax())
    a = iv.logit_attribution(lm, ids, answer)
    parts = table(at, "share of the logit")
    shares = dict(zip(parts["part"], parts["share of the logit"], strict=True))
    assert shares["sum of the parts"] == pytest.approx(a.total, abs=1e-6)
    assert shares["the real logit"] == pytest.approx(a.logit, abs=1e-6)
    assert ("biases (attention outputs, final norm)" in shares) == (family == "gpt2")
    assert ("each layer's norm divisor is held at its actual value too" in said) == (family == "gemma3")
    assert llm.mlp_name(c) + ", a small network" in said
    # the readout's texts and formulas are the family's own (gpt2: a LayerNorm, no RMSNorm anywhere; the tiny files
    # are tied), with no caveat about the default model's formulas
    assert ("Apply its final LayerNorm and unembedding" in said) == (family == "gpt2")
    assert ("RMSNorm" in said) == (family != "gpt2") and "of the default model" not in said
    formulas = [e.value.strip("$\n") for e in at.latex]
    assert M.lens_formula(c, True) in formulas and M.attribution_formulas(c, True)[1] in formulas
    # the repeated random prompt: the tiny vocabulary's own words, as many as it has, said so
    words = llm.repeat_words(lm, M.REPEAT_TOKENS)
    assert 2 <= words < M.REPEAT_TOKENS
    assert f"so each copy has {words} tokens instead of {M.REPEAT_TOKENS}" in said
    r = M.induction_experiment(lm, 0, min(3, c.n_heads), "zero")
    assert len(r.ids) == 2 * words and r.ids[:words] == r.ids[words:]
    assert " ".join(llm.visible_pieces(lm, r.ids[:words])) + "  ×2" in [t.value for t in at.text]
    # the sweep's size and time, said before it runs
    runs, passes = M.sweep_passes(c)
    assert f"{runs} block runs in all, the blocks of about {passes} forward passes" in said
    assert f"({c.n_layers} layers × {c.n_heads} heads = {n_heads} knockouts)" in said
    # more than half of the heads knocked out: the control takes the others
    many = [M.head_code(layer, h) for layer in range(c.n_layers) for h in range(c.n_heads)][: n_heads - 2]
    at.multiselect(key="ca_heads").set_value(many).run()
    assert_clean(at)
    knocked = iv.knock_out(lm, ids, [M.head_of(h) for h in many])
    np.testing.assert_allclose(table(at, "next token", 2)["probability"], llm.top_tokens(knocked)[1], rtol=1e-5)
    assert "2 random heads (seed 0)" in [e.value.strip("*") for e in at.markdown]
    at.radio(key="ca_ablation").set_value("mean").run()
    at.number_input(key="ca_k").set_value(n_heads - 1).run()
    at.selectbox(key="ca_by").set_value("entropy").run()
    at.button(key="ca_pick").click().run()
    assert_clean(at)
    stats = M.last_row_statistics(lm.forward(ids).attentions)
    assert at.multiselect(key="ca_heads").value == [M.head_code(*h) for h in top_heads(stats["entropy"],
                                                                                        n_heads - 1)]
    # the sweep
    at.button(key="ca_reveal").click().run()
    assert_clean(at)
    values = figures(at)["ca_sweep_grid"]["data"][0]["z"]
    sweep = iv.knockout_sweep(lm, ids, answer, ablation="mean")
    np.testing.assert_allclose(np.array(values, dtype=float), sweep.effect, rtol=1e-5, atol=1e-5)
    # the patch pair: a corrupted prompt of the clean one's length whose answer differs, then another layer
    clean_ids = llm.encode_prompt(lm, M.DEFAULT_CLEAN, M.PATCH_MAX_TOKENS).ids  # as cut by the page
    a_clean = int(lm.forward(clean_ids).logits[-1].argmax())
    for letter in "ABCDEFGHIJKLMNOPQRSUVWXYZ":  # the first letter changed: a tiny vocabulary spells by letters
        corrupted = f"{letter}he capital of France is"
        other = llm.encode_prompt(lm, corrupted, M.PATCH_MAX_TOKENS).ids
        if len(other) == len(clean_ids) and int(lm.forward(other).logits[-1].argmax()) != a_clean:
            break
    else:
        raise AssertionError("no corrupted prompt of the clean one's length with another answer")
    at.text_area(key="ca_corrupt").input(corrupted).run()
    assert_clean(at)
    assert "ca_fig_patch" in figures(at)
    at.slider(key="ca_layer").set_value(0).run()
    assert_clean(at)
    a_corrupt = int(lm.forward(other).logits[-1].argmax())
    assert "ca_fig_head_patch" in figures(at)
    np.testing.assert_allclose(table(at, "logit diff", -1)["logit diff"],
                               iv.patch_head_layer(lm, clean_ids, other, a_clean, a_corrupt, 0), rtol=1e-5, atol=1e-5)
