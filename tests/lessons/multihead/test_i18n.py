"""The multi-head page in Português and Türkçe (issue 31): nothing of the English page left in its main states (the
defaults, one head with the causal mask, many heads with the head window and the downloads, a link the page cannot
use), the same numbers with the language's decimal comma, the link keeps ``lang`` and the head window, the charts'
words keep their letters."""

from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.lessons.multihead import charts as mhfig
from explorer.lessons.multihead import model as smh
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figure_array, figures

PAGE = "multihead"
LANGS = ("pt", "tr")
# The sidebar's default sentence and its token labels (visitor text, never translated), and Plotly's hover fields
# (``%{customdata[1]}`` would count as a word of the sentence around it).
SENTENCE = "The cat sat on the mat"
ALLOWED = (SENTENCE, *(f"{t} ({i})" for i, t in enumerate(SENTENCE.split(" "))),
           *(f"%{{{field}}}" for field in ("x", "y", "z", "customdata", "customdata[0]", "customdata[1]",
                                            "customdata[2]")))
# Each state: the link, the session's shared controls, and English words that prove the state was reached.
STATES = {
    "default": ({}, None, "These heads run on **random weights**"),
    "one-head-causal": ({"n_heads": "1", "mh_causal": "true"}, None, "With one head, the right-hand map is that head"),
    "many-heads": ({"n_heads": "128", "mh_head_window": "heads 16-31"}, {"d_model": 128},
                   "the grids show 16 at a time"),
    "bad-link": ({"n_heads": "6", "mh_numbers_matrix": "W_z", "mh_causal": "maybe", "mh_query": "dog (9)"}, None,
                 "is not valid"),
}


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "success", "error", "text")
                    for e in getattr(at, kind))


def page(state: str, lang: str = "en"):
    """The page in ``state`` and ``lang`` (``en``: no ``lang`` in the link)."""
    query, session, _english = STATES[state]
    at = app_at(PAGE, query={**query, **({"lang": lang} if lang != "en" else {})}, session=session, timeout=120)
    assert_clean(at)
    return at


def numbers_of(at) -> dict[str, list[np.ndarray]]:
    """Every chart's numbers (x, y, z of every trace that holds numbers), by chart key."""
    out = {}
    for key, fig in figures(at).items():
        out[key] = [figure_array(tr[axis]) for tr in fig["data"] for axis in ("x", "y", "z")
                    if axis in tr and not (isinstance(tr[axis], list) and tr[axis]
                                           and any(isinstance(v, str) for v in np.ravel(np.array(tr[axis], object))))]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left_in_portuguese_or_turkish(state):
    en = page(state)
    assert STATES[state][2] in texts(en), texts(en)[:2000]
    for lang in LANGS:
        other = page(state, lang)
        assert english_left(en, other, allowed=ALLOWED) == [], lang
        figs = figures(other)
        assert figs and [f["layout"].get("separators") for f in figs.values()] == [",."] * len(figs), lang
        assert other.query_params["lang"] == lang


@pytest.mark.slow
@pytest.mark.parametrize("state", ["default", "many-heads"])
def test_every_language_shows_the_same_numbers_with_its_decimal_mark(state):
    en = page(state)
    want = numbers_of(en)
    assert {"mh_fig_heads", "mh_fig_mean", "mh_fig_entropy", "mh_fig_output"} <= set(want)
    metrics_en = [m.value for m in en.metric]
    for lang in LANGS:
        at = page(state, lang)
        got = numbers_of(at)
        assert set(got) == set(want), lang
        for key, arrays in want.items():
            assert len(got[key]) == len(arrays), (lang, key)
            for a, b in zip(arrays, got[key], strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{lang} {key}")
        # the entropy bars' own numbers, the head grid's log n and the check's numbers, with the decimal comma
        bars_en = figures(en)["mh_fig_entropy"]["data"][0].get("text")
        if bars_en:
            assert figures(at)["mh_fig_entropy"]["data"][0]["text"] == [t.replace(".", ",") for t in bars_en]
        assert [m.value for m in at.metric][:2] == [
            v.replace(".", ",").replace("0 (same bits)", "0 (mesmos bits)" if lang == "pt" else "0 (aynı bitler)")
            for v in metrics_en[:2]]
        log_n = f"{np.log(6):.2f}".replace(".", ",")
        assert any(f"{log_n} = log n" in c.value for c in at.caption), lang
        assert not [c.value for c in at.caption if re.search(r"\d\.\d", c.value) and "log n" in c.value]


@pytest.mark.slow
def test_the_random_weights_note_writes_its_numbers_in_the_language():
    en = page("default")
    (note_en,) = [i.value for i in en.info if "random weights" in i.value]
    share, overlap = re.search(r"averages (\d+)% .* overlap (\d\.\d\d) on average", note_en).groups()
    for lang, words, shown in (("pt", "pesos aleatórios", f"{share}%"), ("tr", "rastgele ağırlıklarla", f"%{share}")):
        at = page("default", lang)
        (note,) = [i.value for i in at.info if words in i.value]
        assert shown in note and overlap.replace(".", ",") in note and overlap not in note
        assert f"lang={lang}" in note  # the link to the real model's lesson keeps the language


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_head_window():
    # An English link's head window opens in Portuguese on the same heads, with no warning; the link then holds the
    # Portuguese label, and a Turkish page opened from it shows the same window.
    at = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_head_window": "heads 16-31", "lang": "pt"})
    assert_clean(at)
    assert at.selectbox(key="mh_head_window").value == 16
    assert list(at.selectbox(key="mh_head_window").options) == ["cabeças 0-15", "cabeças 16-31"]
    assert not at.warning, [w.value for w in at.warning]
    assert figures(at)["mh_fig_heads"]["layout"]["annotations"][0]["text"] == "cabeça 16"
    assert at.query_params["mh_head_window"] == "cabeças 16-31" and at.query_params["lang"] == "pt"
    at.selectbox(key="n_heads").set_value(16).run()
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == 16 and at.query_params["lang"] == "pt"
    assert at.title[0].value == "Atenção multi-cabeça"  # the page stays in Portuguese
    tr = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_head_window": "cabeças 16-31",
                                                      "mh_causal": "true", "lang": "tr"})
    assert_clean(tr)
    assert tr.selectbox(key="mh_head_window").value == 16 and tr.toggle(key="mh_causal").value is True
    assert not tr.warning, [w.value for w in tr.warning]
    assert tr.query_params["mh_head_window"] == "kafalar 16-31"
    # a window no language names is warned about in the run's language, and the first window is shown
    bad = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_head_window": "kafalar 5-9", "lang": "tr"})
    assert_clean(bad)
    assert bad.selectbox(key="mh_head_window").value == 0
    assert any("mh_head_window" in w.value and "geçerli değil" in w.value for w in bad.warning)


@pytest.mark.slow
def test_a_bad_link_warns_in_the_language_and_opens_at_the_defaults():
    for lang, word in (("pt", "não é válido"), ("tr", "geçerli değil")):
        at = page("bad-link", lang)
        warned = " ".join(w.value for w in at.warning)
        for key in ("n_heads", "mh_numbers_matrix", "mh_causal", "mh_query"):
            assert key in warned, (lang, key)
        assert word in warned
        assert at.selectbox(key="n_heads").value == 4 and at.toggle(key="mh_causal").value is False


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        bars = mhfig.entropy_bars(np.array([1.25, 0.5]), 6)
        grid = mhfig.head_weights_grid(np.full((2, 3, 3), 1 / 3), ["İki (0)", "ılık (1)", "şu (2)"], [0, 1])
        blocked = mhfig.blocked_heatmap(np.eye(4), 2)
        label = smh.diff_text(1.5e-16)
    assert bars.layout.separators == ",." and grid.layout.separators == ",." and blocked.layout.separators == ",."
    assert list(bars.data[0].text) == ["1,25", "0,50"]
    assert bars.layout.annotations[0].text == "izin verilen anahtarlarda düzgün: 1,79"
    assert bars.layout.yaxis.title.text == "ortalama entropi (nat)" and bars.layout.xaxis.title.text == "kafa"
    assert [a.text for a in grid.layout.annotations][:2] == ["kafa 0", "kafa 1"]
    assert list(grid.layout.yaxis.ticktext or grid.layout.yaxis.labelalias.values())[0] == "İki (0)"
    assert blocked.data[0].colorbar.title.text == "değer" and blocked.layout.yaxis.title.text == "girdi boyutu"
    assert label == "1,5e-16"
    with i18n.using("pt"):
        panels = mhfig.head_output_panels(np.ones((1, 2, 2)), ["ação (0)", "pé (1)"], [3], d_head=2)
        split = mhfig.split_panels(np.zeros((1, 1, 2)), np.zeros((1, 1, 2), int), tokens=np.zeros((1, 1, 2), int),
                                   titles=["cabeça 0"])
    assert panels.layout.xaxis.title.text == "coluna da cabeça" and panels.layout.annotations[0].text == "cabeça 3"
    assert panels.layout.separators == ",." and split.layout.separators == ",."
    assert split.data[0].hovertemplate.startswith("%{customdata[0]}: token %{customdata[1]}, uma coluna da cabeça")
    # outside a run: English, the point
    assert mhfig.entropy_bars(np.array([1.25]), 6).layout.annotations[0].text == "uniform over the allowed keys: 1.79"
    assert mhfig.head_labels([0]) == ["head 0"] and smh.diff_text(0.0) == "0 (same bits)"
