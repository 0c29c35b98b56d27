"""The page "Two sentences, one set of weights" in Português and Türkçe (issue 31): nothing of the English page left
in its main states (the defaults, a changed sentence B, the shuffle test with and without positional encoding, an
empty or too long sentence B, a link the page cannot use), the same numbers with the language's decimal comma, the
link keeps ``lang`` and every other value, the charts' words keep their letters.

The sentences are the visitor's (or the lesson's English example, kept as the default so the numbers are the
lesson's): they are never translated, and the page shows them as text."""

from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.lessons.two_sentences import charts as tfig
from explorer.lessons.two_sentences import draw
from explorer.lessons.two_sentences import model as M
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figure_array, figures

PAGE = "two_sentences"
LANGS = ("pt", "tr")
SENTENCE_A = ("The", "cat", "sat", "on", "the", "mat")  # the sidebar's default sentence (the lesson's example)
LONG_B = " ".join(f"w{i}" for i in range(70))  # more than settings.MAX_TOKENS (64) tokens
BAD_LINK = {"two_shuffle_seed": "-4", "two_shuffle": "maybe", "two_sentence": "x" * 1001}


def shuffled(seed: int) -> str:
    """Sentence A shuffled as the page shows it (the visitor's words in another order: not translated)."""
    return " ".join(SENTENCE_A[i] for i in M.shuffle_permutation(len(SENTENCE_A), seed))


# Never translated: the visitor's sentences as text (the demo sentence of part 2, a shuffled sentence A), the
# citation (Turkish writes "vd.", Portuguese keeps "et al."), and Plotly's hover fields.
ALLOWED = (" ".join(M.REPEAT_DEMO), shuffled(0), shuffled(5), "Vaswani et al.",
           *(f"%{{{field}}}" for field in ("x", "y", "z", "text", "customdata")))
# Each state: the link, and English words that prove the state was reached.
STATES = {
    "default": ({}, "Switch on Shuffle the words"),
    "changed-b": ({"two_sentence": "a dog barked"}, "The sentences have different lengths"),
    "same-sentence": ({"two_sentence": "The cat sat on the mat"}, "Same sentence twice"),
    "shuffled": ({"two_shuffle": "true", "two_shuffle_seed": "5"}, "equals the original to float rounding"),
    "positional": ({"two_shuffle": "true", "positional": "true"}, "Each word now carries its position"),
    "empty-b": ({"two_sentence": ""}, "Sentence B is empty"),
    "long-b": ({"two_sentence": LONG_B}, "Sentence B has 70 tokens"),
    "bad-link": (BAD_LINK, "is not valid"),
}


def texts(at) -> str:
    return " ".join(str(e.value).replace("*", "") for kind in ("markdown", "caption", "info", "warning", "success",
                                                               "text") for e in getattr(at, kind))


def page(state: str, lang: str = "en"):
    query, _english = STATES[state]
    at = app_at(PAGE, query={**query, **({"lang": lang} if lang != "en" else {})})
    assert_clean(at)
    return at


def numbers_of(at) -> dict[str, list[np.ndarray]]:
    """Every chart's numbers (x, y, z of every numeric trace axis), by chart key."""
    out = {}
    for key, fig in figures(at).items():
        out[key] = [figure_array(tr[axis]) for tr in fig["data"] for axis in ("x", "y", "z")
                    if axis in tr and not (isinstance(tr[axis], list) and tr[axis] and isinstance(tr[axis][0], str))]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left_in_portuguese_or_turkish(state):
    en = page(state)
    assert STATES[state][1] in texts(en), texts(en)[:2000]
    for lang in LANGS:
        other = page(state, lang)
        assert english_left(en, other, allowed=ALLOWED) == [], lang
        assert english_left(en, other, allowed=ALLOWED, sidebar=True) == [], lang  # the "not used" note too
        assert [f["layout"].get("separators") for f in figures(other).values()] == \
            [",."] * len(figures(other)), lang  # every chart of the page writes the decimal comma
        assert other.query_params["lang"] == lang


def notes(at) -> str:
    """The captions and notes of the main area, without the citation's section number (§3.5)."""
    return " ".join(str(e.value) for kind in ("caption", "warning", "success") for e in getattr(at.main, kind)
                    ).replace("§3.5", "")


@pytest.mark.slow
@pytest.mark.parametrize("state", ["default", "positional"])
def test_every_language_shows_the_same_numbers_with_its_decimal_mark(state):
    en = page(state)
    want = numbers_of(en)
    assert want
    bars_en = figures(en).get("two_fig_entropy")
    for lang in LANGS:
        at = page(state, lang)
        got = numbers_of(at)
        assert set(got) == set(want), lang
        for key, arrays in want.items():
            assert len(got[key]) == len(arrays), key
            for a, b in zip(arrays, got[key], strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{lang} {key}")
        if bars_en is not None:  # the entropy bars' own numbers and the uniform line's note, with the comma
            bars = figures(at)["two_fig_entropy"]
            for trace_en, trace in zip(bars_en["data"], bars["data"], strict=True):
                assert trace["text"] == [t.replace(".", ",") for t in trace_en["text"]]
            note_en = bars_en["layout"]["annotations"][0]["text"]
            note = bars["layout"]["annotations"][0]["text"]
            assert re.findall(r"\d+,\d+", note) == [d.replace(".", ",") for d in re.findall(r"\d+\.\d+", note_en)]
        # the captions' and notes' decimals: the same digits, the decimal comma, no decimal point left
        decimals_en = re.findall(r"\d+\.\d+(?:e-\d+)?", notes(en))
        assert decimals_en
        assert sorted(re.findall(r"\d+,\d+(?:e-\d+)?", notes(at))) == sorted(d.replace(".", ",") for d in decimals_en)
        assert not re.findall(r"\d\.\d", notes(at)), lang


@pytest.mark.slow
def test_the_same_sentence_twice_says_exactly_zero_in_the_language():
    for lang, word in (("pt", "exatamente 0,0"), ("tr", "tam olarak 0,0")):
        at = page("same-sentence", lang)
        assert np.all(figure_array(figures(at)["two_fig_diff"]["data"][0]["z"]) == 0.0)
        assert any(word in s.value for s in at.success), lang


@pytest.mark.slow
def test_the_link_keeps_the_language_and_every_value():
    at = page("default", "pt")
    assert at.text_input(key="two_sentence").value == "The dog sat on the rug"  # the lesson's English default
    at.text_input(key="two_sentence").set_value("O cachorro sentou no tapete").run()
    assert_clean(at)
    assert at.query_params["lang"] == "pt" and at.text_input(key="two_sentence").label == "Frase B"
    # a link with every value of this page, in each language: every value kept, the page in that language
    link = {"two_sentence": "O cachorro sentou no tapete", "two_shuffle": "true", "two_shuffle_seed": "3",
            "positional": "true"}
    for lang, label in (("pt", "Embaralhar as palavras da frase A"), ("tr", "A cümlesinin sözcüklerini karıştır")):
        other = app_at(PAGE, query={**link, "lang": lang})
        assert_clean(other)
        assert not [w.value for w in other.warning if "two_" in w.value]
        assert other.query_params["lang"] == lang
        assert {k: other.query_params[k] for k in link} == link
        assert other.toggle(key="two_shuffle").value is True and other.toggle(key="two_shuffle").label == label
        assert other.number_input(key="two_shuffle_seed").value == 3
        assert other.text_input(key="two_sentence").value == "O cachorro sentou no tapete"
        assert "two_fig_order_unpermuted" in figures(other)


@pytest.mark.slow
def test_a_bad_link_warns_in_the_language_and_opens_at_the_defaults():
    for lang, word in (("pt", "não é válido"), ("tr", "geçerli değil")):
        at = page("bad-link", lang)
        warned = " ".join(w.value for w in at.warning)
        for key in BAD_LINK:
            assert key in warned, (lang, key)
        assert word in warned
        assert at.toggle(key="two_shuffle").value is False and at.number_input(key="two_shuffle_seed").value == 0


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        bars = tfig.entropy_bars([0.5, 0.25, 1.0], [0.125, 1.5, 0.0], ["İ (0)", "ılık (1)", "ş / ğ (2)"],
                                 title="İki cümle, ılık")
        gap, exact, count = draw.gap_text(1.234e-16), draw.gap_text(0.0), draw.tokens_count(2)
    assert bars.layout.separators == ",." and bars.layout.title.text == "İki cümle, ılık"
    assert list(bars.data[0].text) == ["0,500", "0,250", "1,000"]
    assert bars.layout.annotations[0].text == "düzgün: log 3 = 1,10"
    assert bars.layout.yaxis.title.text == "entropi (nat)" and bars.layout.xaxis.title.text == "sorgu (konum)"
    assert (gap, exact, count) == ("1,23e-16", "0 (tam)", "2 token")
    with i18n.using("pt"):
        bars = tfig.entropy_bars([0.5, 0.25], [0.125, 1.5], ["ação (0)", "é / ç (1)"], title="entropia: atenção")
        assert draw.gap_text(2.5e-3) == "2,50e-03" and draw.tokens_count(1) == "1 token"
    assert bars.layout.annotations[0].text == "uniforme: log 2 = 0,69" and bars.layout.title.text == "entropia: atenção"
    assert bars.layout.xaxis.title.text == "consulta (posição)"
    # outside a run: English, the point
    assert draw.gap_text(1.234e-16) == "1.23e-16" and draw.gap_text(0.0) == "0 (exact)"
    assert tfig.entropy_bars([0.5, 0.25], [0.1, 0.2], ["a", "b"]).layout.annotations[0].text == "uniform: log 2 = 0.69"



TWINS = {"pt": ("O gato sentou no tapete", "O cachorro sentou no tapete"),
         "tr": ("Kedi paspasın üzerine oturdu", "Köpek paspasın üzerine oturdu")}


@pytest.mark.slow
def test_sentence_b_has_a_translated_twin_one_click_away_and_the_english_default_stays():
    en = page("default")
    assert not [b for b in en.main.button if b.key == "two_sentence_twin"]  # English: the lesson's sentences only
    for lang, (twin_a, twin_b) in TWINS.items():
        at = app_at(PAGE, query={"lang": lang, "sentence": twin_a})
        assert_clean(at)
        assert at.text_input(key="two_sentence").value == "The dog sat on the rug"  # the default is the lesson's
        assert twin_b in at.button(key="two_sentence_twin").label
        at.button(key="two_sentence_twin").click().run()
        assert_clean(at)
        assert at.text_input(key="two_sentence").value == twin_b
        assert not [b for b in at.main.button if b.key == "two_sentence_twin"]  # shown only while it would change B
        ticks = figures(at)["two_fig_weights_b"]["layout"]["yaxis"]["ticktext"]
        shared = [t for t in ticks if t.endswith("★")]  # the words the twins share, with their letters
        assert shared and all(t.split(" (")[0] in twin_a.split() for t in shared), ticks
        assert len(shared) == len(twin_b.split()) - 1  # every word but the animal
