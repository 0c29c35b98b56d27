"""AppTest of the real-model page: defaults, every control at its ends, the buttons, links, bad input, the exercise,
missing weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import streamlit as st

from attention import heads
from explorer.lessons.real_model import model as M
from explorer.shell import controls, i18n, llm
from explorer.shell.llm import INSTALL_COMMAND
from tests.apptest_utils import app_at, assert_clean, figures

PAGE = "real_model"
DEFAULT_LABELS = ["The (0)", "␣cat (1)", "␣sat (2)", "␣on (3)", "␣the (4)", "␣mat (5)", "␣because (6)", "␣it (7)",
                  "␣was (8)", "␣tired (9)"]


@pytest.fixture
def lm(door_model):
    """The model the page runs on (the door's: tiny SmolLM2 unless marked smollm2)."""
    return door_model


def z(at, key) -> np.ndarray:
    data = figures(at)[key]["data"][0]["z"]
    return np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)


def texts(at, kinds=("success", "warning", "info", "markdown", "error", "caption", "text")) -> str:
    return " ".join(str(e.value) for kind in kinds for e in getattr(at, kind))


def link_warnings(at) -> list[str]:
    return [w.value for w in at.warning if "link" in w.value]


def expected(lm, text=M.DEFAULT_PROMPT):
    ids = lm.encode(text, truncate=True)[: llm.PROMPT_MAX_TOKENS]
    out = lm.forward(ids)
    return ids, out, M.head_statistics(out.attentions, ids)


@pytest.mark.slow
def test_defaults_tokens_prediction_grid_and_head(lm):
    at = app_at(PAGE, query={"rm_steps": "true"})  # the six steps' expander open (closed by default)
    assert_clean(at)
    ids, out, stats = expected(lm)
    # the tokens, as text, with the leading space made visible
    assert "The │ ␣cat │ ␣sat │ ␣on │ ␣the │ ␣mat │ ␣because │ ␣it │ ␣was │ ␣tired" in [t.value for t in at.text]
    # the prediction: top 5 of the last position, probabilities from the logits
    table = next(d.value for d in at.dataframe if "next token" in d.value.columns)
    top, p = llm.top_tokens(out.logits[-1])
    assert list(table["id"]) == list(top)
    assert list(table["next token"]) == [llm.visible_piece(piece) for piece in llm.pieces(lm, top)]
    np.testing.assert_allclose(table["probability"], p, rtol=1e-9)
    # the grid: 30 layers x 9 heads of the sink statistic
    figs = figures(at)
    np.testing.assert_allclose(z(at, "rm_grid"), stats.get("sink"), rtol=1e-9)
    assert figs["rm_grid"]["layout"]["yaxis"]["autorange"] == "reversed"
    assert at.session_state["rm_stat"] == "sink" and (at.slider(key="rm_layer").value, at.slider(key="rm_head").value) \
        == (16, 0)
    # the head: rows = queries, causal (masked above the diagonal, weights exactly 0 there), labels as pieces
    head = z(at, "rm_fig_head")
    assert np.isnan(head[np.triu_indices(10, 1)]).all()
    np.testing.assert_allclose(np.nan_to_num(head), out.attentions[16, 0], rtol=1e-6)
    assert figs["rm_fig_head"]["layout"]["yaxis"]["ticktext"] == DEFAULT_LABELS
    assert "largest weight above the diagonal = 0.0" in texts(at)
    assert "MEAN" in figs["rm_fig_layer_mean"]["layout"]["title"]["text"]
    np.testing.assert_allclose(np.nan_to_num(z(at, "rm_fig_layer_mean")), out.attentions[16].mean(0), rtol=1e-5)
    # the six steps and the key/value group of head 0 (heads 0, 1, 2 read kv head 0)
    for key in ("rm_fig_x", "rm_fig_Q", "rm_fig_K", "rm_fig_V", "rm_fig_angles", "rm_fig_Q_rope", "rm_fig_K_rope",
                "rm_fig_scores", "rm_fig_scaled", "rm_fig_weights", "rm_fig_output", "rm_fig_group_0",
                "rm_fig_group_1", "rm_fig_group_2"):
        assert key in figs, key
    steps = lm.head_steps(ids, 16, 0)
    np.testing.assert_allclose(z(at, "rm_fig_Q_rope"), steps.q, rtol=1e-6)
    np.testing.assert_allclose(z(at, "rm_fig_scores"), steps.scores, rtol=1e-5)
    assert "key/value head 0" in texts(at) and "adjacent" in texts(at) and "GGUF" in texts(at)
    # the honest note, and no statistic ever NaN
    note = texts(at, ("info",))
    assert llm.precision_note(llm.weight_storage(lm)) in note and "computed by this page" in note
    # (the real file's 4-bit / Q8_0 words: tests/shell/test_llm.py's test_the_precision_note_matches_the_file)


STEP_CHARTS = ("rm_fig_x", "rm_fig_Q", "rm_fig_K", "rm_fig_V", "rm_fig_angles", "rm_fig_Q_rope", "rm_fig_K_rope",
               "rm_fig_scores", "rm_fig_scaled", "rm_fig_weights", "rm_fig_output")


@pytest.mark.slow
def test_the_six_steps_are_drawn_only_while_their_expander_is_open_and_it_says_how_many_charts(lm):
    """Issue 30: a head change sends the steps' charts only when the learner has opened them; the link keeps it."""
    at = app_at(PAGE)
    assert_clean(at)
    closed = figures(at)
    assert not set(STEP_CHARTS) & set(closed)
    assert {"rm_fig_head", "rm_fig_layer_mean", "rm_fig_group_0"} <= set(closed)
    (steps,) = [e for e in at.expander if "six steps" in e.label]
    assert steps.label == f"Show the six steps, with their {len(STEP_CHARTS)} charts"
    at.session_state["rm_steps"] = True
    at.run()
    assert_clean(at)
    opened = figures(at)
    assert set(opened) - set(closed) == set(STEP_CHARTS)  # the label's count is the charts it holds
    at.slider(key="rm_head").set_value(4).run()  # it stays open for the next head, with that head's numbers
    ids = expected(lm)[0]
    np.testing.assert_allclose(z(at, "rm_fig_scores"), lm.head_steps(ids, 16, 4).scores, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("layer, head", [(0, 0), (29, 8), (0, 8), (29, 0)])
def test_layer_and_head_at_their_ends(lm, layer, head):
    at = app_at(PAGE)
    at.slider(key="rm_layer").set_value(layer).run()
    at.slider(key="rm_head").set_value(head).run()
    assert_clean(at)
    _, out, _ = expected(lm)
    np.testing.assert_allclose(np.nan_to_num(z(at, "rm_fig_head")), out.attentions[layer, head], rtol=1e-6)
    assert any(h.value == f"One head up close: layer {layer}, head {head}" for h in at.header)
    kv = head // 3
    group = [figures(at)[f"rm_fig_group_{g}"]["layout"]["title"]["text"] for g in range(3)]
    assert group == [f"head {h} (kv {kv})" + (" ◀ chosen" if h == head else "") for h in range(3 * kv, 3 * kv + 3)]
    box = figures(at)["rm_grid"]["layout"]["shapes"][0]
    assert (box["x0"], box["y0"]) == (head - 0.5, layer - 0.5)  # the grid outlines the chosen head


@pytest.mark.slow
def test_every_statistic_and_the_undefined_induction_score(lm):
    at = app_at(PAGE)
    _, _, stats = expected(lm)
    for key in M.STATISTICS:
        at.button_group(key="rm_stat").set_value(key).run()
        assert_clean(at)
        if key == "induction":
            assert "rm_grid" not in figures(at)  # undefined: a message, never a map of NaN
            assert "The induction score is undefined for this prompt: no token in it occurs twice.**" in texts(at)
            assert at.button(key="rm_repeat_here")
        else:
            np.testing.assert_allclose(z(at, "rm_grid"), stats.get(key), rtol=1e-9)
            assert figures(at)["rm_grid"]["data"][0]["zmax"] == pytest.approx(M.color_range(key, 10)[1])
            assert any(M.STATISTICS[key].formula in el.value for el in at.latex)
            assert "Averaged over the query rows i = 2 … 9 (8 rows): row 0 has one key" in texts(at)
    at.button(key="rm_repeat_here").click().run()  # the button under the message makes a repeated prompt
    assert_clean(at)
    text = at.text_area(key="rm_prompt").value
    ids, _, stats = expected(lm, text)
    assert tuple(ids) == heads.repeated_random_ids(llm.word_ids(lm), M.REPEAT_WORDS, 0)
    np.testing.assert_allclose(z(at, "rm_grid"), stats.get("induction"), rtol=1e-9)
    assert "Averaged over the" in texts(at) and "query rows R whose token occurred earlier" in texts(at)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, controls.SEED_MAX])
def test_repeated_prompt_seed_at_its_ends(lm, seed):
    """Issue 26, item 4: the repeat is built from ids (an exact repeat, token for token), and the button opens the
    head with the largest induction score (not the default previous-token head)."""
    at = app_at(PAGE)
    at.number_input(key="rm_seed").set_value(seed).run()
    at.button(key="rm_repeat").click().run()
    assert_clean(at)
    text = at.text_area(key="rm_prompt").value
    ids = heads.repeated_random_ids(llm.word_ids(lm), M.REPEAT_WORDS, seed)
    assert tuple(lm.encode(text)) == ids and ids[: M.REPEAT_WORDS] == ids[M.REPEAT_WORDS:]
    assert at.session_state["rm_stat"] == "induction" and "rm_grid" in figures(at)
    shown = [t.value for t in at.text if "│" in t.value][0].split(" │ ")
    assert shown[: M.REPEAT_WORDS] == shown[M.REPEAT_WORDS:]  # the pieces, as shown, repeat exactly
    stats = M.head_statistics(lm.forward(list(ids)).attentions, list(ids))
    top = heads.top_heads(stats.get("induction"))[0]
    assert (at.slider(key="rm_layer").value, at.slider(key="rm_head").value) == top != (16, 0)
    assert any(h.value == f"One head up close: layer {top[0]}, head {top[1]}" for h in at.header)


def greedy(lm, ids, steps: int) -> list[int]:
    """``steps`` tokens of greedy decoding, by id (the argmax of the last position's logits each time)."""
    ids = list(ids)
    for _ in range(steps):
        ids.append(int(np.argmax(lm.forward(ids).logits[-1])))
    return ids


@pytest.mark.slow
def test_append_the_top_token_is_greedy_decoding_by_id(lm):
    """Issue 26, item 1: three clicks on the default prompt read the same tokens as three steps of greedy decoding
    (".", "\\n", "\\n": appending the text and tokenizing again read one "\\n\\n" token instead)."""
    at = app_at(PAGE)
    for _ in range(3):
        at.button(key="rm_append").click().run()
        assert_clean(at)
    want = greedy(lm, lm.encode(M.DEFAULT_PROMPT), 3)
    assert at.text_area(key="rm_prompt").value == M.DEFAULT_PROMPT  # the typed text stays as typed
    assert at.text_input(key="rm_then").value == " ".join(map(str, want[10:]))
    ids_shown = next(d.value for d in at.dataframe if "piece" in d.value.columns)["id"]
    assert list(ids_shown) == want and len(want) == 13
    np.testing.assert_allclose(np.nan_to_num(z(at, "rm_fig_head")), lm.forward(want).attentions[16, 0], rtol=1e-6)
    table = next(d.value for d in at.dataframe if "next token" in d.value.columns)
    assert list(table["id"]) == list(llm.top_tokens(lm.forward(want).logits[-1])[0])
    assert "appended by greedy decoding" in texts(at)
    at.button(key="rm_default").click().run()
    assert at.text_area(key="rm_prompt").value == M.DEFAULT_PROMPT and at.text_input(key="rm_then").value == ""
    assert z(at, "rm_fig_head").shape == (10, 10)


@pytest.mark.slow
@pytest.mark.smollm2  # the lesson's one page run on the real file: SmolLM2's own greedy bytes
def test_appending_half_an_emoji_shows_it_pending_never_as_a_replacement_character(lm):
    """Issue 26, item 1: the top token after "Great job 👍👍👍" is the first bytes of another 👍 (on SmolLM2): they
    wait as pending bytes until the character is complete, and no U+FFFD ever reaches the page."""
    prompt = "Great job 👍👍👍"
    at = app_at(PAGE, query={"rm_prompt": prompt})
    want = greedy(lm, lm.encode(prompt), 3)
    for step in range(1, 4):
        at.button(key="rm_append").click().run()
        assert_clean(at)
        everything = texts(at) + " ".join(str(d.value) for d in at.dataframe) + json.dumps(figures(at))
        assert "\ufffd" not in everything and "\\ufffd" not in everything, step
        shown = lm.decode_partial(want[: len(want) - 3 + step])
        assert shown.text in [t.value for t in at.text]
        pending = " ".join(c.value for c in at.caption if c.value.startswith("Pending"))
        assert (shown.pending_escaped in pending) if shown.pending else not pending
    assert lm.decode_partial(want).text == prompt + "👍"  # greedy decoding wrote a whole fourth 👍 in 3 tokens


@pytest.mark.slow
def test_a_link_with_appended_ids_reproduces_them_and_bad_ones_warn(lm):
    at = app_at(PAGE, query={"rm_then": "30 198"})
    assert_clean(at)
    assert z(at, "rm_fig_head").shape == (12, 12) and not link_warnings(at)
    at = app_at(PAGE, query={"rm_then": "30 99999"})
    assert_clean(at)
    assert any("rm_then=" in w and "not valid" in w for w in link_warnings(at))
    assert z(at, "rm_fig_head").shape == (10, 10)
    at.text_input(key="rm_then").set_value("x").run()
    assert_clean(at)
    assert any("must be whole numbers" in w.value for w in at.warning) and z(at, "rm_fig_head").shape == (10, 10)


@pytest.mark.slow
def test_a_shared_link_reproduces_the_page(lm):
    query = {"rm_prompt": "one two three one two three", "rm_layer": "18", "rm_head": "6", "rm_stat": "induction",
             "rm_seed": "5"}
    first = app_at(PAGE, query=query)
    assert_clean(first)
    assert not link_warnings(first)
    shown = (first.text_area(key="rm_prompt").value, first.slider(key="rm_layer").value,
             first.slider(key="rm_head").value, first.session_state["rm_stat"], first.number_input(key="rm_seed").value)
    assert shown == ("one two three one two three", 18, 6, "induction", 5)
    _, out, stats = expected(lm, "one two three one two three")
    np.testing.assert_allclose(z(first, "rm_grid"), stats.get("induction"), rtol=1e-9)
    np.testing.assert_allclose(np.nan_to_num(z(first, "rm_fig_head")), out.attentions[18, 6], rtol=1e-6)
    second = app_at(PAGE, query=query)
    assert figures(second) == figures(first)


@pytest.mark.slow
def test_garbage_links_warn_and_fall_back():
    at = app_at(PAGE, query={"rm_layer": "99", "rm_head": "x", "rm_stat": "bogus", "rm_seed": "-3"})
    assert_clean(at)
    shown = " ".join(link_warnings(at))
    for part in ("`rm_layer=99`", "`rm_head=x`", "`rm_stat=bogus`", "`rm_seed=-3`"):
        assert part in shown, part
    assert (at.slider(key="rm_layer").value, at.slider(key="rm_head").value, at.session_state["rm_stat"]) \
        == (16, 0, "sink")
    long = "ab " * llm.PROMPT_MAX_CHARS  # longer than the box takes: a link can carry it, the page refuses it
    at = app_at(PAGE, query={"rm_prompt": long})
    assert_clean(at)
    assert any("rm_prompt=" in w and "not valid" in w for w in link_warnings(at))
    assert at.text_area(key="rm_prompt").value == M.DEFAULT_PROMPT
    at = app_at(PAGE, query={"rm_head": ["3", "4"]})  # one value per control
    assert any("2 times" in w for w in link_warnings(at)) and at.slider(key="rm_head").value == 0


@pytest.mark.slow
def test_empty_prompt_keeps_the_last_one():
    at = app_at(PAGE, query={"rm_prompt": "A dog barked at the mailman"})
    before = figures(at)["rm_fig_head"]
    at.text_area(key="rm_prompt").set_value("").run()
    assert_clean(at)
    assert any("The prompt is empty" in w.value for w in at.warning)
    assert figures(at)["rm_fig_head"] == before


@pytest.mark.slow
def test_too_long_prompt_is_cut_and_says_where(lm):
    text = " ".join(f"w{i}" for i in range(60))  # 'w', digits: more than 64 tokens
    at = app_at(PAGE, query={"rm_prompt": text})
    assert_clean(at)
    n_total = len(lm.encode(text))
    assert any(f"Your prompt is {n_total} tokens" in w.value and "first 64" in w.value for w in at.warning)
    kept = lm.decode(lm.encode(text)[:64])
    assert "…" + kept[-80:] in [t.value for t in at.text]
    assert z(at, "rm_fig_head").shape == (64, 64)
    assert at.button(key="rm_append").disabled


@pytest.mark.slow
def test_markup_in_the_prompt_stays_text():
    at = app_at(PAGE, query={"rm_prompt": "<b>x</b> **y** $z$"})
    assert_clean(at)
    ticks = figures(at)["rm_fig_head"]["layout"]["yaxis"]["ticktext"]
    assert "<b>" not in "".join(ticks) and any("&lt;" in t for t in ticks)
    for el in list(at.markdown) + list(at.caption) + list(at.warning) + list(at.info):
        assert "<b>x" not in el.value and "**y**" not in el.value
    shown = [t.value for t in at.text if "│" in t.value]  # the tokens, as typed (a space shown as ␣), as text
    assert shown and shown[0].replace(" │ ", "") == "<b>x</b> **y** $z$".replace(" ", "␣")


@pytest.mark.slow
@pytest.mark.parametrize("text", ["Hi", "Hi!", "🙂"])
def test_prompts_too_short_for_statistics(text, lm):
    at = app_at(PAGE, query={"rm_prompt": text})
    assert_clean(at)
    n = len(lm.encode(text))
    assert n < 3
    assert "rm_grid" not in figures(at) and "need at least 3 tokens" in texts(at)
    assert z(at, "rm_fig_head").shape == (n, n)
    assert not [s for s in at.selectbox if s.key and s.key.startswith("rm_guess_")]


@pytest.mark.slow
@pytest.mark.parametrize("text", ["the the the the", "count: one two one two"])
def test_a_prompt_that_cannot_separate_induction_says_so(lm, text):
    """Issue 26, item 3: "the the the" repeats, but no row can tell induction from previous-token attention."""
    at = app_at(PAGE, query={"rm_prompt": text, "rm_stat": "induction"})
    assert_clean(at)
    assert "rm_grid" not in figures(at)
    assert "its tokens repeat, but only right away or one token apart" in texts(at)
    assert "no row that separates induction from previous-token attention" in texts(at)
    assert "cannot tell induction from previous-token attention" in texts(at, ("caption",))


@pytest.mark.slow
def test_guess_then_reveal_is_graded_from_the_live_numbers(lm):
    at = app_at(PAGE)
    _, _, stats = expected(lm)
    heads = M.quiz_heads(stats)
    n = len(heads)
    assert n >= 2 and ("No induction head is asked" in texts(at)) == ("induction" not in {q.answer for q in heads})
    assert not at.main.dataframe or all("your guess" not in d.value.columns for d in at.main.dataframe)
    for q in heads:
        at.selectbox(key=f"rm_guess_{q.layer}_{q.head}").set_value(q.answer)
    at.button(key="rm_check").click().run()
    assert_clean(at)
    assert any(f"{n} of {n} right" in s.value for s in at.success)
    table = next(d.value for d in at.main.dataframe if "your guess" in d.value.columns)
    assert list(table["answer"]) == [M.LABELS[q.answer] for q in heads] and set(table["right?"]) == {"✓"}
    wrong = heads[0]
    other = next(label for label in M.LABELS if label != wrong.answer)
    at.selectbox(key=f"rm_guess_{wrong.layer}_{wrong.head}").set_value(other).run()
    assert any(f"{n - 1} of {n} right" in i.value for i in at.info)


@pytest.mark.smollm2  # the shipped door (the tiny model is never missing); no model is loaded
def test_missing_weights_show_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_MODEL_PATH", str(tmp_path / "nothing-here.gguf"))
    st.cache_resource.clear()
    try:
        at = app_at(PAGE)
        assert not at.exception, [e.value for e in at.exception]
        assert [c.value for c in at.code] == [INSTALL_COMMAND]
        assert any("weights are not available" in w.value for w in at.warning)
        assert any(t.value.startswith("model file not found") for t in at.text)
        assert not figures(at)
        assert at.title[0].value == "Inside a real model"
    finally:
        monkeypatch.delenv("ATTENTION_MODEL_PATH")
        st.cache_resource.clear()


@pytest.mark.slow
def test_a_prompt_longer_than_the_model_takes_is_counted_truly(lm):
    """Issue 26, item 7: a 288-token prompt is "288 tokens", not "more than 256"; the page reads its first 64."""
    text = "7" * 288  # one token per digit
    at = app_at(PAGE, query={"rm_prompt": text})
    assert_clean(at)
    cut = [w.value for w in at.warning if "Your prompt is" in w.value]
    assert len(cut) == 1 and "Your prompt is 288 tokens" in cut[0] and "the first 64" in cut[0], cut
    assert z(at, "rm_fig_head").shape == (64, 64)


@pytest.mark.slow
def test_the_asked_heads_clearly_do_one_thing_on_the_rows_graded(lm):
    """Issue 26, item 5: every label is graded on the same rows R (the second copy), and each asked head's largest
    score, recomputed here from its map, beats the runner-up by the margin the page states. (That SmolLM2's induction
    head is asked and rests on the first token in the first copy: test_model.py's
    test_repeated_random_prompt_reveals_induction_heads.)"""
    from tests.lessons.real_model.test_model import graded_by_hand

    at = app_at(PAGE)
    at.button(key="rm_repeat").click().run()
    assert_clean(at)
    ids, out, stats = expected(lm, at.text_area(key="rm_prompt").value)
    k = M.REPEAT_WORDS
    heads = M.quiz_heads(stats)
    assert heads  # the loop below grades at least one asked head
    shown = texts(at)
    assert f"beats the runner-up by at least {M.MIN_MARGIN:.2f}" in shown
    assert f"the {k} rows R whose token occurred earlier ({k} … {2 * k - 1})" in shown
    for q in heads:
        at.selectbox(key=f"rm_guess_{q.layer}_{q.head}").set_value(q.answer)
    at.button(key="rm_check").click().run()
    assert_clean(at)
    table = next(d.value for d in at.main.dataframe if "your guess" in d.value.columns)
    for q, (_, row) in zip(heads, table.iterrows(), strict=True):
        by_hand = graded_by_hand(out.attentions, ids, q.layer, q.head)
        first, second = sorted(by_hand.values())[::-1][:2]
        assert row["answer"] == M.LABELS[max(by_hand, key=by_hand.get)] and first - second >= M.MIN_MARGIN
        assert float(row["margin"]) == pytest.approx(first - second, abs=6e-4)


@pytest.mark.slow  # a whole page run (2-3 s): the capitals' rule itself is tests/test_i18n.py's, in the fast tier
def test_turkish_capitals_and_the_prediction_formulas_words_follow_the_language():
    """Issue 48: the statistic's heading capitalises by Turkish rules ("İndüksiyon", where ``str.upper`` wrote
    "Indüksiyon"), and the prediction formula's words are the page's language's, not "next" and "prompt"."""
    repeat = "the cat sat on the mat and the cat sat on the mat"  # repeats: the induction score is defined
    tr = app_at(PAGE, query={"rm_stat": "induction", "rm_prompt": repeat, "lang": "tr"})
    assert_clean(tr)
    assert any(m.value.startswith("**İndüksiyon") for m in tr.markdown), [m.value for m in tr.markdown][:20]
    formula = next(x.value for x in tr.latex if "softmax" in x.value and "logits" in x.value)
    assert r"\text{sonraki}" in formula and r"\text{istem}" in formula and "next" not in formula
    pt = app_at(PAGE, query={"lang": "pt"})
    formula = next(x.value for x in pt.latex if "softmax" in x.value and "logits" in x.value)
    assert r"\text{próximo}" in formula and "next" not in formula


@pytest.mark.slow
def test_every_head_read_correctly_is_graded_the_same_in_every_language(lm):
    """The exercise answered rightly (its answers from the live numbers, as a learner would) is checked in every
    language like a manifest state (no link or button alone reaches it: ``TEXT_STATES`` checks it unanswered), and
    grades the same heads right in each."""
    from tests.lessons.test_languages import check_every_language

    _, _, stats = expected(lm)
    asked = M.quiz_heads(stats)
    assert asked

    def answer_all(at, lang):
        with i18n.using(lang):  # AppTest finds an option through the page's format_func, in the test's thread
            for q in asked:
                at.selectbox(key=f"rm_guess_{q.layer}_{q.head}").set_value(q.answer)
            at.button(key="rm_check").click().run()
        return at

    runs = check_every_language(PAGE, act=answer_all)
    n = len(asked)
    assert any(f"{n} of {n} right" in s.value for s in runs["en"].success)
    for at in runs.values():
        assert len(at.success) == len(runs["en"].success)
        assert [b.value for b in at.selectbox if b.key and b.key.startswith("rm_guess_")] == [q.answer for q in asked]
