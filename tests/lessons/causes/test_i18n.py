""""What made it say that?" in Português and Türkçe (issue 31): nothing of the English page left in any of its states
(the defaults with their knockout and patching, one head, the sweep and its graded guess, prompts the patch cannot
use, a link it cannot use), the same numbers with the language's decimal comma, a visitor's prompt shown as text, the
link keeps ``lang``, the charts' words keep their letters."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

from attention.llama import interventions as iv
from explorer.lessons.causes import charts as C
from explorer.lessons.causes import model as M
from explorer.shell import i18n, llm
from tests.apptest_utils import app_at, assert_clean, english_left, figures

PAGE = "causes"
LANGS = ("pt", "tr")
TIMEOUT = 900
OWN_FIGURES = ("ca_fig_answer_curve", "ca_fig_parts", "ca_fig_induction", "ca_fig_head_patch")  # this lesson's layouts
# Text that stays as it is in every language: the prompts (the lesson's English examples, visitor text), the model's
# tokens, and the title of a cited paper.
PROMPTS = (M.DEFAULT_PROMPT, M.DEFAULT_CORRUPTED, "The capital of the United Kingdom is")
ALLOWED = (*PROMPTS, "“Attention is not Explanation”")
SAID = ("success", "warning", "info", "markdown", "error", "caption", "text")


def texts(at) -> str:
    return "\n".join(str(e.value) for kind in SAID for e in getattr(at, kind))


def model_text(at) -> tuple[str, ...]:
    """The page's plain-text lines: the prompts' tokens and the repeated random tokens (the model's text, never
    translated), each also without the label before its tokens (``clean:     The (0) │ …``)."""
    lines = [t.value for t in at.text]
    return tuple(lines) + tuple(line.split(":", 1)[1].strip() for line in lines if ":" in line.split("│")[0])


def reveal(at, guess: str | None = None):
    """Run the sweep (with ``guess`` chosen first)."""
    if guess:
        at.selectbox(key="ca_guess").set_value(guess).run()
    at.button(key="ca_reveal").click().run()
    return at


# Every state with its own text, and the English words that prove the branch was reached.
STATES = [
    pytest.param({}, None, "The parts add up to", id="default"),
    pytest.param({"ca_heads": "L23H4", "ca_k": "1", "ca_ind_k": "1", "ca_ablation": "mean"}, None,
                 "1 head knocked out", id="one-head-mean"),
    pytest.param({}, "sweep-wrong", " of 270**: its knockout changes", id="sweep-wrong-guess"),
    pytest.param({}, "sweep-right", "matters most.**", id="sweep-right-guess"),
    pytest.param({"ca_heads": "", "ca_corrupt": PROMPTS[2]}, None, "same number of tokens", id="no-heads-unequal"),
    pytest.param({"ca_corrupt": M.DEFAULT_CLEAN}, None, "no difference to move", id="same-answer"),
    pytest.param({"ca_heads": "L99H1,<b>x</b>", "ca_ablation": "half"}, None,
                 "(ca_heads must be heads written as L18H6,L17H4", id="bad-link"),
]


def live_guess(right: bool) -> str:
    """A guess for the sweep on the door's model (tests/conftest.py) and the default prompt: its most important head
    (``right``), or another one."""
    lm = llm.load_model("float32")
    ids = lm.encode(M.DEFAULT_PROMPT)
    answer = int(lm.forward(ids).logits[-1].argmax())
    best = M.grade_guess(iv.knockout_sweep(lm, ids, answer).effect, (0, 0)).best
    return M.head_code(*(best if right else ((0, 4) if best != (0, 4) else (1, 0))))


def run(query: dict, action: str | None, lang: str | None = None):
    if action in ("sweep-right", "sweep-wrong"):
        query = {**query, "ca_guess": live_guess(action == "sweep-right")}
    at = app_at(PAGE, query={**query, **({"lang": lang} if lang else {})}, timeout=TIMEOUT)
    if action is not None:
        reveal(at)
    return at


@pytest.mark.slow
@pytest.mark.parametrize(("query", "action", "english"), STATES)
def test_no_english_sentence_is_left_in_portuguese_or_turkish(query, action, english):
    en = run(query, action)
    assert_clean(en)
    assert english in texts(en)
    for lang in LANGS:
        other = run(query, action, lang)
        assert_clean(other)
        left = english_left(en, other, allowed=ALLOWED + model_text(en))
        assert left == [], (lang, left)
        assert english not in texts(other), lang
        for key, value in query.items():  # a link value the page cannot use is quoted as code, never markup
            if "<" in value:
                assert f"`{key}={value}`" in texts(other), (lang, key)


# --- the same numbers -------------------------------------------------------------------------------------------

EN_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:\.\d+)?")
LOCAL_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:\.\d{3})+(?![\d.])|\d+(?:,\d+)?")


def numbers_in(text: str, lang: str) -> list[float]:
    """Every number written in ``text`` (code spans left out), read with the language's marks: ``1,395`` / ``0.123``
    in English, ``1.395`` / ``0,123`` in pt and tr."""
    text = re.sub(r"`+[^`]*`+", " ", text)
    if lang == "en":
        return sorted(float(m.replace(",", "")) for m in EN_NUMBER.findall(text))
    return sorted(float(m.replace(".", "").replace(",", ".")) for m in LOCAL_NUMBER.findall(text))


def plotted(fig: dict) -> list[np.ndarray]:
    out = []
    for trace in fig["data"]:
        for axis in ("x", "y", "z"):
            data = trace.get(axis)
            if isinstance(data, dict) and "bdata" in data:
                out.append(np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float))
            elif isinstance(data, list) and data and not isinstance(data[0], str):
                out.append(np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
                           if isinstance(data[0], list) else np.array(data, dtype=float))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("query", "action"), [pytest.param({}, None, id="default"),
                                               pytest.param({"ca_guess": "L0H4"}, "sweep", id="sweep")])
def test_every_language_shows_the_same_numbers_with_its_decimal_mark(query, action):
    en = run(query, action)
    said_en = {kind: [str(e.value) for e in getattr(en, kind)] for kind in SAID}
    figs_en = figures(en)
    for lang in LANGS:
        at = run(query, action, lang)
        assert_clean(at)
        # every sentence, note and caption: the same numbers as the English one, in the same elements
        for kind in SAID:
            shown = [str(e.value) for e in getattr(at, kind)]
            assert len(shown) == len(said_en[kind]), kind
            for text_en, text in zip(said_en[kind], shown, strict=True):
                assert numbers_in(text, lang) == numbers_in(text_en, "en"), (lang, text_en, text)
        # the charts: the same arrays; this lesson's own layouts write the decimal comma
        figs = figures(at)
        assert set(figs) == set(figs_en)
        for key, fig_en in figs_en.items():
            for a, b in zip(plotted(fig_en), plotted(figs[key]), strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{lang} {key}")
        for key in OWN_FIGURES + (("ca_scatter",) if action else ()):
            assert figs[key]["layout"]["separators"] == ",.", (lang, key)
        # a decimal comma, not a point, in the sentences: the parts' sum with its 6 decimals
        total = re.search(r"The parts add up to \*\*(-?\d+\.\d{6})\*\*", texts(en)).group(1)
        assert f"**{total.replace('.', ',')}**" in texts(at) and f"**{total}**" not in texts(at), lang


# --- a visitor's text, the link ----------------------------------------------------------------------------------

HOSTILE = "**Bold** <b>x</b> $x$ {answer} [a](b) _it_ is"


@pytest.mark.slow
def test_a_hostile_prompt_stays_text_in_every_language():
    en = app_at(PAGE, query={"ca_prompt": HOSTILE}, timeout=TIMEOUT)
    assert_clean(en)
    tokens_en = [t.value for t in en.text if " │ " in t.value][0]
    for lang in LANGS:
        at = app_at(PAGE, query={"ca_prompt": HOSTILE, "lang": lang}, timeout=TIMEOUT)
        assert_clean(at)
        assert at.text_area(key="ca_prompt").value == HOSTILE
        assert [t.value for t in at.text if " │ " in t.value][0] == tokens_en  # the tokens as plain text
        # the prompt's pieces reach the sentences only inside code spans: no markup of it is written bare
        for el in (*at.markdown, *at.info, *at.success, *at.caption):
            bare = re.sub(r"(`+).*?\1", " ", el.value)
            assert "<b>" not in bare and "$x$" not in bare and "[a](b)" not in bare, (lang, el.value)
            assert "{answer}" not in bare, (lang, el.value)  # no placeholder left unfilled


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_page_s_codes():
    at = app_at(PAGE, query={"lang": "tr", "ca_heads": "L23H4,L29H1", "ca_ablation": "mean", "ca_stat": "entropy"},
                timeout=TIMEOUT)
    assert_clean(at)
    assert not [w.value for w in at.warning if "ca_" in w.value]
    assert at.radio(key="ca_ablation").value == "mean" and at.multiselect(key="ca_heads").value == [
        "L23H4", "L29H1"]
    assert "(ortalama ablasyonu)" in texts(at)  # the ablation named in the run's language
    # the links to "Inside a real model" keep the language
    header = "“Gerçek bir modelin içinde” dersinde aç"
    links = [d.value for d in at.dataframe if header in d.value.columns][0][header]
    assert list(links) and all(link.endswith("&lang=tr") or "&lang=tr&" in link for link in links)
    at.number_input(key="ca_seed").set_value(3).run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.query_params["ca_ablation"] == "mean"
    assert at.query_params["ca_heads"] == "L23H4,L29H1"


# --- the words of the charts and formulas (no model) ---------------------------------------------------------------


def test_the_charts_words_keep_their_letters():
    labels = ["İzmir (0)", "ılık (1)"]  # Turkish dotted capital and dotless small i in token labels
    with i18n.using("tr"):
        lens = C.lens_map([["İ", "ı"], ["ş", "ğ"]], np.array([[0.5, 0.25], [1.0, 0.125]]), labels,
                          title="son konumda p(“İstanbul”)")
        bars = C.loss_bars(["devre dışı bırakma yok", "ılık"], [3.2, 6.5], [0.9, 0.1])
        curve = C.answer_curve(np.array([0.0, 0.5]), np.array([3, 1]), "“İ”")
    assert list(lens.layout.xaxis.ticktext) == labels and list(lens.data[0].text[0]) == ["İ", "ı"]
    assert lens.layout.title.text == "son konumda p(“İstanbul”)" and lens.layout.yaxis.title.text == "bloğa giren akış"
    assert list(lens.layout.yaxis.ticktext)[:2] == ["blok 0", "blok 1"]
    assert list(bars.data[0].text) == ["3,20 nat", "6,50 nat"] and bars.data[0].customdata[0][2] == "%90"
    assert list(bars.layout.xaxis.ticktext) == ["devre dışı bırakma yok", "ılık"]
    assert curve.layout.separators == ",." and "(1 = son bloktan sonra)" in curve.layout.xaxis.title.text
    with i18n.using("pt"):
        parts = C.component_bars(0.5, [0.25, 1.5])
        head_bars = C.head_bars(np.array([1.0, 2.5]), clean=3.0, corrupted=-1.0, y_title="dif. de logit")
        formula = M.STATISTICS["sink"].last_formula
    assert parts.layout.yaxis.title.text == "parcela do logit" and parts.layout.xaxis.title.text == "parte"
    assert [a.text for a in head_bars.layout.annotations] == ["limpo", "corrompido"]
    assert head_bars.data[0].customdata == ("1,00", "2,50")
    # one row formula in every language and lesson (attention.heads), on the last row
    assert formula == M.STATISTICS["sink"].last_formula == r"w_{i,0}\quad (i = n-1)"


@pytest.mark.slow
def test_every_message_of_the_lesson_is_translated():
    from tools import i18n as tool

    assert [p for p in tool.problems() if "causes.po" in p] == []
