"""The page "Inside a real model" in Português and Türkçe (issue 31): nothing of the English page left in its main
states (the defaults, the repeated random prompt, guess-then-reveal answered, a link the page cannot use), the same
numbers with the language's decimal comma, the link keeps ``lang`` and the option codes, the charts' words keep their
letters.

The real model runs in the test process (loaded once); its forward pass is cached per prompt and shared by every
language, so the Portuguese and Turkish pages draw the same numbers as the English one.

The states avoid text of the shared door to the model (:mod:`explorer.shell.llm`, the shell's domain): no
empty or over-long prompt (its warnings), and the weights are installed (no install note)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlparse

import numpy as np
import pytest

from explorer.lessons import real_model as rm_lesson
from explorer.lessons.real_model import charts as rfig
from explorer.lessons.real_model import model as M
from explorer.shell import controls, head_statistics, i18n
from explorer.shell import llm as rm
from explorer.shell.textviews import tokens_count
from tests.apptest_utils import app_at, assert_clean, english_left, figure_array, figures

PAGE = "real_model"
LANGS = ("pt", "tr")
TIMEOUT = 600
# The citations (authors and the Latin "et al." that Portuguese and these Turkish pages write too), and Plotly's
# hover fields (``%{customdata}`` would count as a word of the sentence around it).
CITATIONS = tuple(f"{name} et al." for name in ("Xiao", "Olsson", "Ainslie", "Su"))
HOVER_FIELDS = tuple(f"%{{{field}}}" for field in ("x", "y", "z", "customdata", "customdata[0]", "customdata[1]",
                                                    "customdata[2]"))
BAD_LINK = {"rm_then": "abc", "rm_stat": "banana", "rm_layer": "99", "rm_head": "-3", "rm_seed": "x"}
OWN_FIGURES = ("rm_fig_prediction", "rm_fig_angles", "rm_grid")  # built by this lesson's charts module


def allowed(lm, prompt: str = M.DEFAULT_PROMPT) -> tuple[str, ...]:
    """What is the same in every language: the prompt and its tokens as the model reads them, the citations, and
    Plotly's hover fields."""
    ids = lm.encode(prompt)[: rm.PROMPT_MAX_TOKENS]
    pieces = " │ ".join(rm.visible_piece(s) for s in lm.token_strings(ids))
    return (prompt, pieces, *CITATIONS, *HOVER_FIELDS)


@pytest.fixture
def lm(door_model):
    """The model the page runs on (the door's: tiny SmolLM2 unless marked smollm2)."""
    return door_model


def texts(at, kinds=("success", "warning", "info", "markdown", "caption", "text")) -> str:
    return " ".join(str(e.value) for kind in kinds for e in getattr(at.main, kind))


def in_language(at):
    """``with in_language(at):`` around setting a widget that shows its options through the page's ``format_func``
    (the guesses, the statistic): AppTest calls that function in the test's thread to find the option, so the
    test must be in the page's language too."""
    return i18n.using(at.query_params.get("lang", i18n.DEFAULT))


def guess_all(at):
    """Answer every head of the exercise rightly (its answer from the live numbers) and press "Check my answers"."""
    lm = rm.load_model("float32")  # the door's model (tests/conftest.py), the one the page runs on
    ids = lm.encode(at.text_area(key="rm_prompt").value)[: rm.PROMPT_MAX_TOKENS]
    heads = M.quiz_heads(M.head_statistics(lm.forward(ids).attentions, ids))
    assert heads
    with in_language(at):
        for q in heads:
            at.selectbox(key=f"rm_guess_{q.layer}_{q.head}").set_value(q.answer)
        at.button(key="rm_check").click().run(timeout=TIMEOUT)
    return at


# Each state: the link, what the test does on the page, and English words that prove the state was reached.
STATES = {
    "default": (dict(), None, "No induction head is asked"),
    "repeated": (dict(), lambda at: at.button(key="rm_repeat").click().run(timeout=TIMEOUT),
                 "only there can an induction head show what it does"),
    "guessed": (dict(), guess_all, "Every head read correctly"),
    "appended": ({"rm_then": "30 198"}, None, "appended by greedy decoding"),
    "bad-link": (BAD_LINK, None, "is not valid"),
}


def page(state: str, lang: str = "en"):
    """The page in ``state`` and ``lang`` (``en``: no ``lang`` in the link), the six steps' expander open (their
    texts and charts are checked in every language too)."""
    query, act, _english = STATES[state]
    at = app_at(PAGE, query={"rm_steps": "true", **query, **({"lang": lang} if lang != "en" else {})},
                timeout=TIMEOUT)
    assert_clean(at)
    if act is not None:
        act(at)
        assert_clean(at)
    return at


@pytest.mark.slow
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left_in_portuguese_or_turkish(lm, state):
    en = page(state)
    assert STATES[state][2] in texts(en), texts(en)[:2000]
    prompt = en.text_area(key="rm_prompt").value
    for lang in LANGS:
        other = page(state, lang)
        assert other.text_area(key="rm_prompt").value == prompt  # the same prompt (the repeat's seed: the same words)
        assert english_left(en, other, allowed=allowed(lm, prompt)) == [], lang
        assert english_left(en, other, allowed=allowed(lm, prompt), sidebar=True) == [], lang  # the "not used" notes
        assert [f["layout"].get("separators") for f in figures(other).values()] == \
            [",."] * len(figures(other)), lang  # every chart of the page writes the decimal comma
        assert other.query_params["lang"] == lang
        if state == "bad-link":  # the link warnings name every control, in the language
            warned = " ".join(w.value for w in other.warning)
            for key in BAD_LINK:
                assert key in warned, (lang, key)
            assert ("não é válido" if lang == "pt" else "geçerli değil") in warned


@pytest.mark.slow
def test_every_language_shows_the_same_numbers_with_its_decimal_mark(lm):
    en = page("default")
    figs_en = figures(en)
    assert set(OWN_FIGURES) <= set(figs_en)
    caption_en = next(c.value for c in en.main.caption if "logits over all" in c.value)
    share_en = re.search(r"(\d+\.\d)%", caption_en).group(1)
    for lang, word in (("pt", "logits da última posição"), ("tr", "Son konumun")):
        at = page("default", lang)
        figs = figures(at)
        assert set(figs) == set(figs_en), lang
        for key, fig in figs_en.items():
            for a, b in zip(fig["data"], figs[key]["data"], strict=True):
                for axis in ("z", "x"):
                    if axis in a and not (isinstance(a[axis], list) and a[axis] and isinstance(a[axis][0], str)):
                        np.testing.assert_array_equal(figure_array(a[axis]), figure_array(b[axis]),
                                                      err_msg=f"{lang} {key} {axis}")
        # the bars' own numbers, and the caption's share of the probability, with the decimal comma
        bars_en = figs_en["rm_fig_prediction"]["data"][0]["text"]
        assert figs["rm_fig_prediction"]["data"][0]["text"] == [t.replace(".", ",") for t in bars_en]
        caption = next(c.value for c in at.main.caption if word in c.value)
        assert (share_en.replace(".", ",") + "%" if lang == "pt" else "%" + share_en.replace(".", ",")) in caption
        assert share_en not in caption and "49.152" in caption  # the vocabulary grouped with the language's mark
        # the prediction table shows the same ids and the same probabilities
        table_en = next(d.value for d in en.main.dataframe if "next token" in d.value.columns)
        table = next(d.value for d in at.main.dataframe if "id" in d.value.columns and len(d.value.columns) == 4)
        assert list(table["id"]) == list(table_en["id"])
        assert list(table.iloc[:, 3]) == [f"{p:.4f}".replace(".", ",") for p in table_en["probability"]]


@pytest.mark.slow
def test_the_exercise_grades_the_same_in_every_language():
    en = page("guessed")
    n = len([b for b in en.selectbox if b.key and b.key.startswith("rm_guess_")])  # the heads asked on this model
    assert n and any(f"{n} of {n} right" in s.value for s in en.success)
    for lang, right in (("pt", f"{n} de {n} certas"), ("tr", f"{n} kafadan {n} doğru")):
        at = page("guessed", lang)
        assert any(right in s.value for s in at.success), lang
        boxes = [b for b in at.selectbox if b.key and b.key.startswith("rm_guess_")]
        assert [b.value for b in boxes] == [b.value for b in en.selectbox if b.key and b.key.startswith("rm_guess_")]
        with i18n.using(lang):
            names = [M.label(k) for k in M.LABELS]
        assert [str(o) for o in boxes[0].options] == names, lang


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_option_codes():
    at = app_at(PAGE, query={"lang": "tr"}, timeout=TIMEOUT)
    assert_clean(at)
    control = at.button_group(key="rm_stat")
    assert [str(o.content) for o in control.proto.options] == ["çukur", "önceki", "kendisi", "entropi", "uzaklık",
                                                                "indüksiyon"]
    with in_language(at):
        control.set_value("entropy").run(timeout=TIMEOUT)
    assert_clean(at)
    # the control holds the code, not the label (the code is what its link value is; AppTest's query_params shows
    # only the link the page was opened with)
    assert at.session_state["rm_stat"] == "entropy" and at.query_params["lang"] == "tr"
    assert figures(at)["rm_grid"]["layout"]["title"]["text"] == "tüm kafalar: entropi (bit)"
    with in_language(at):
        at.button(key="rm_append").click().run(timeout=TIMEOUT)
    assert_clean(at)
    appended = at.session_state["rm_then"]
    assert re.fullmatch(r"\d+", appended) and at.query_params["lang"] == "tr"
    # a Portuguese page opened from that link keeps every value and shows it in Portuguese
    pt = app_at(PAGE, query={"rm_stat": "entropy", "rm_then": appended, "lang": "pt"}, timeout=TIMEOUT)
    assert_clean(pt)
    assert not [w.value for w in pt.warning if "rm_" in w.value]
    assert pt.button_group(key="rm_stat").value == "entropy"
    assert figures(pt)["rm_grid"]["layout"]["title"]["text"] == "todas as cabeças: entropia (bits)"
    assert "foi acrescentado pela decodificação gulosa" in texts(pt, ("caption",))
    # a link from another lesson to a head here keeps the language
    with i18n.using("pt"):
        url = urlparse(controls.link(rm_lesson, rm_lesson.SIZES, prompt="a b c a", layer=3, head=4))
    assert dict(parse_qsl(url.query)) == {"rm_prompt": "a b c a", "rm_layer": "3", "rm_head": "4", "lang": "pt"}


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        bars = rfig.prediction_bars(["␣şey", "ı"], [0.75, 0.125], title="sonraki token: en olası 2")
        angles = rfig.angle_map(np.array([[0.0, 0.0], [1.0, 0.5]]), ["a (0)", "b (1)"])
        note = M.precision_note({"token_embd.weight": ("Q8_0", (576, 49152)),
                                 "blk.0.attn_q.weight": ("Q4_1", (576, 576)),
                                 "blk.0.attn_norm.weight": ("F32", (576,))})
    assert list(bars.data[0].text) == ["0,750", "0,125"] and bars.layout.separators == ",."
    assert bars.layout.xaxis.title.text == "olasılık" and list(bars.layout.yaxis.ticktext) == ["␣şey", "ı"]
    assert bars.data[0].hovertemplate.startswith("sonraki token %{customdata[0]}: olasılık %{customdata[1]}")
    assert angles.layout.xaxis.title.text == "çift" and angles.layout.yaxis.title.text == "token"
    assert angles.data[0].colorbar.title.text == "derece" and angles.layout.separators == ",."
    assert angles.data[0].customdata[1][0][2] == "57,3° (p·θᵢ = 1 rad)"
    assert note.startswith("token gömmesi (aynı zamanda her logitin arkasındaki paylaşılan çıktı matrisi) 8 bit (Q8_0, "
                           "parametrelerin %")
    assert "%0,0" in note or "%0,1" in note
    with i18n.using("pt"):
        angles = rfig.angle_map(np.array([[0.0, 0.0], [1.0, 0.5]]), ["a (0)", "b (1)"])
        assert head_statistics.name("induction") == "pontuação de indução" and M.label("sink") == \
            "sumidouro no primeiro token"
        assert tokens_count(1) == "1 token" and M.rows_count(2) == "2 linhas"
    assert angles.data[0].customdata[1][1][2] == "28,6° (p·θᵢ = 0,5 rad)"
    # outside a run: English, the point
    assert rfig.angle_map(np.array([[1.0]]), ["a"]).data[0].customdata[0][0][2] == "57.3° (p·θᵢ = 1 rad)"
    assert head_statistics.name("induction") == "induction score" and M.rows_count(1) == "1 row"
