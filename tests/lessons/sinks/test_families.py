"""AppTest of the sinks page on a tiny model of every other family (qwen2, qwen3, gpt2, gemma3): the defaults (a text
clipped to what a small model accepts, said so), every first-token choice (one a tokenizer cannot write as one token
is said, not raised), the shift at its top (gpt2: learned positions, said so), the window and generated tokens at
their ends (gpt2: StreamingLLM's numbering does not apply, said so) and every cache variant measured, each checked
against the core on the served model (issue 50)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from explorer.lessons.sinks import model as M
from explorer.shell import llm
from explorer.shell.textviews import fmt
from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow
PAGE = "sinks"
FAMILIES = [pytest.param(f, marks=pytest.mark.lesson_model(f)) for f in ("qwen2", "qwen3", "gpt2", "gemma3")]


def values(data) -> np.ndarray:
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.array(data, dtype=float)


def texts(at, *kinds) -> str:
    kinds = kinds or ("markdown", "caption", "info", "warning", "success", "text", "code")
    return "\n".join(str(e.value) for kind in kinds for e in getattr(at, kind))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_section_and_control_on_the_family(door_model, family):
    lm, c = door_model, door_model.config
    limit = M.prompt_limit(c)
    ids = llm.encode_prompt(lm, M.DEFAULT_PROMPT, limit).ids
    at = app_at(PAGE, query={"sk_swap": "true", "sk_shifted": "true", "sk_streams": "true"}, opened_by_link=True,
                timeout=900)  # sections 2-4 switched on (issue 47)
    assert_clean(at)
    said = texts(at)
    assert f"tiny-{family}'s own weights" in said
    assert "float32 holds them exactly, so the numbers are the file's own model's." in said  # the tiny files are F32
    # a model that accepts fewer tokens than the text and the page's extras: clipped, and said so
    assert (f"This model accepts {c.max_tokens} tokens in all, so the page reads at most {limit}" in said) == (
        limit < llm.PROMPT_MAX_TOKENS)
    s = M.sink_summary(lm, ids)
    np.testing.assert_allclose(values(figures(at)["sk_fig_layers"]["data"][0]["y"]), s.per_layer, atol=1e-9)
    # every first-token choice: measured, or said to be more than one token here
    for choice in M.FIRST_CHOICES:
        at.radio(key="sk_first").set_value(choice).run()
        assert_clean(at)
        note = M.first_token_note(lm, choice)
        if note is not None:
            assert note in texts(at, "info")
            continue
        f = M.first_token_experiment(lm, ids, s, choice)
        np.testing.assert_allclose(values(figures(at)["sk_fig_first"]["data"][1]["y"]), f.changed, atol=1e-9)
    if family == "gemma3":  # its new line is the byte token <0x0A>, after the BOS the file adds
        newline = M.first_token_ids(lm, "newline")
        assert len(newline) == 1 and lm.token_bytes(newline) == [b"\n"] and newline[0] != lm.tokenizer.bos_id
    # the shift at its top
    top = c.context_length - len(ids)
    at.slider(key="sk_offset").set_value(top).run()
    assert_clean(at)
    sh = M.shift_experiment(lm, ids, top)
    assert M.shift_claim(sh) in texts(at, "markdown")
    assert ("This model has no RoPE: its positions are learned vectors" in texts(at, "markdown")) == (
        family == "gpt2")
    # the window and the generated tokens at their ends
    window_top = M.window_max(len(ids))
    for window, n_new in ((1, 1), (window_top, M.MAX_NEW_TOKENS)):
        at.slider(key="sk_window").set_value(window).run()
        at.slider(key="sk_new").set_value(n_new).run()
        assert_clean(at)
        run = M.streamed(lm, ids, window, 4, n_new)
        assert fmt(run.perplexity, 1) in [m.value for m in at.metric]
        numbering = [d.value for d in at.dataframe if "k = 4" in d.value.columns]
        if family == "gpt2":
            assert run.renumbered is None and not numbering
            assert "StreamingLLM's numbering does not apply to it" in texts(at, "info")
            assert "**Which positions?**" not in texts(at, "markdown")  # the paragraph that ends "Both perplexities"
        else:
            assert numbering[0]["k = 4"].iloc[1] == pytest.approx(run.renumbered)
    # every cache variant measured
    at.toggle(key="sk_measure").set_value(True).run()
    assert_clean(at)
    table = at.dataframe[-2].value
    variants = M.cache_variants(c, len(ids))
    assert list(table["variant"]) == [M.variant_label(c, v) for v in variants]
    reference = M.reference_logits(lm, ids)
    score_from = M.sweep_score_from(variants)
    for v, ppl in zip(variants, table["perplexity"], strict=True):
        assert ppl == pytest.approx(M.measure(lm, ids, v, reference, score_from).perplexity, rel=1e-6)
    rows = dict(zip(table["variant"], table["perplexity"], strict=True))
    full = M.variant_label(c, M.CacheVariant(f"latent-{llm.latent_full_rank(c)}", "latent",
                                             ("latent", llm.latent_full_rank(c))))
    model_row = M.variant_label(c, M.CacheVariant("gqa", "heads"))
    if full in rows:  # a latent cache at full rank is the model again
        assert rows[full] == pytest.approx(rows[model_row], rel=1e-3)
    assert ("MHA: 4 key/value heads (the model)" in rows) == (family == "gpt2")  # gpt2 is MHA: no separate MHA row
