"""The sinks page in Português and Türkçe (issue 31): nothing of the English page left in its main states (the
default, the sweep measured, a link the page cannot use), the same numbers with the language's decimal comma, a
visitor's text shown as text, the link keeps ``lang``. The real model runs in the test process (loaded once); its
computations are cached per prompt and shared by every language, so each language only draws the page again."""

from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.lessons.sinks import charts as S
from explorer.lessons.sinks import model as M
from explorer.shell import i18n
from explorer.shell import llm as rm
from tests.apptest_utils import app_at, assert_clean, english_left, figures
from tests.core.llama_support import real_model
from tests.lessons.sinks.test_page import texts, values

PAGE = "sinks"
LANGS = ("pt", "tr")
TIMEOUT = 900
OWN_FIGURES = ("sk_fig_layers", "sk_fig_first", "sk_fig_losses", "sk_fig_tradeoff")  # built by this lesson's charts
# The citations (authors and the Latin "et al." that Portuguese writes too; Turkish writes "vd.").
CITATIONS = tuple(f"{name} et al." for name in ("Xiao", "Gu", "Su", "Ainslie", "Ji", "Meng"))
# English terms the translations give in parentheses on their first mention (the glossary rule); the
# translated legend that shares one of these words is checked in test_the_charts_words_keep_their_letters.
GLOSSARY = ("key/value heads",)
BAD_LINK = {"sk_first": "banana", "sk_offset": "-5", "sk_window": "1e2", "sk_new": "999", "sk_measure": "maybe"}


@pytest.fixture
def lm(door_model):
    """The model the page runs on (the door's: tiny SmolLM2 unless marked smollm2)."""
    return door_model


def allowed(lm, prompt: str = M.DEFAULT_PROMPT) -> tuple[str, ...]:
    """What is the same in every language: the visitor's text as the model reads it (the token list under the
    text box), and the citations."""
    labels = rm.labels(lm, lm.encode(prompt)[:rm.PROMPT_MAX_TOKENS])
    return (" | ".join(labels), prompt, *CITATIONS, *GLOSSARY)


# Every main state with the English words that prove it was reached.
STATES = [
    pytest.param({}, "Turn on *Measure*", id="default"),
    pytest.param({"sk_measure": "true", "sk_first": "drop", "sk_offset": "0"}, "A window stops the cache growing",
                 id="measured"),
    pytest.param(BAD_LINK, "is not valid", id="bad-link"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("query", "english"), STATES)
def test_no_english_sentence_is_left_in_portuguese_or_turkish(lm, query, english):
    en = app_at(PAGE, query=query, timeout=TIMEOUT)
    assert_clean(en)
    assert english in texts(en, "markdown", "info", "warning")
    for lang in LANGS:
        other = app_at(PAGE, query={**query, "lang": lang}, timeout=TIMEOUT)
        assert_clean(other)
        assert english_left(en, other, allowed=allowed(lm)) == [], lang
        assert english_left(en, other, allowed=allowed(lm), sidebar=True) == [], lang  # the "not used" notes too
        if query is BAD_LINK:  # the link warnings name every control, in the language
            warned = texts(other, "warning")
            for key in BAD_LINK:
                assert key in warned, (lang, key)


@pytest.mark.slow
def test_every_language_shows_the_same_numbers_with_its_decimal_mark(lm):
    query = {"sk_measure": "true"}
    en = app_at(PAGE, query=query, timeout=TIMEOUT)
    ids = tuple(lm.encode(M.DEFAULT_PROMPT))
    s = M.sink_summary(lm, ids)
    shift = M.shift_experiment(lm, ids, M.DEFAULT_OFFSET)
    runs = {k: M.streamed(lm, ids, M.DEFAULT_WINDOW, k, M.DEFAULT_NEW_TOKENS) for k in (0, 1, 4, None)}
    figs_en = figures(en)
    for lang, heads in (("pt", "cabeças"), ("tr", "kafadan")):
        at = app_at(PAGE, query={**query, "lang": lang}, timeout=TIMEOUT)
        assert_clean(at)
        figs = figures(at)
        assert set(figs) == set(figs_en)
        for key, fig_en in figs_en.items():  # every plotted number is the English page's
            for trace_en, trace in zip(fig_en["data"], figs[key]["data"], strict=True):
                for axis in ("x", "y", "z"):
                    if axis in trace_en and not isinstance(trace_en[axis][0] if isinstance(trace_en[axis], list)
                                                           and trace_en[axis] else 0, str):
                        np.testing.assert_array_equal(values(trace_en[axis]), values(trace[axis]),
                                                      err_msg=f"{lang} {key} {axis}")
        for key in OWN_FIGURES:
            assert figs[key]["layout"]["separators"] == ",.", key
        md = texts(at, "markdown")
        # the sink's sentence: the percentage as the language writes it (Turkish puts the sign first)
        assert f"**{i18n.percent(float(s.mass.mean()), 0, lang=lang)}**" in md
        over = f"**{s.n_over_half} de 270 {heads}**" if lang == "pt" else f"**270 {heads} {s.n_over_half} tanesi**"
        assert over in md
        # metrics: the shift's max |Δ logit| and the four perplexities, with a decimal comma
        assert at.metric[0].value == f"{shift.max_logit_diff:.1e}".replace(".", ",")
        assert [m.value for m in at.metric][-4:] == [f"{runs[k].perplexity:.1f}".replace(".", ",")
                                                     for k in (0, 1, 4, None)]
        assert f"{runs[0].perplexity:.1f}".replace(".", ",") in md  # bold or not: either sentence states it
        # the tables: whole numbers stay numbers, floats shown with the comma
        bytes_col = {"pt": "bytes do cache KV por token", "tr": "token başına KV önbelleği baytı"}[lang]
        table = at.dataframe[-2].value
        assert list(table[bytes_col])[:3] == [round(M.variant_bytes(lm.config, v, len(ids))[1])  # SmolLM2's:
                                              for v in M.cache_variants(lm.config, len(ids))][:3]  # test_model.py
        ppl_col = {"pt": "perplexidade", "tr": "perplexity (şaşkınlık)"}[lang]
        ppl_en = list(en.dataframe[-2].value["perplexity"])
        assert list(table[ppl_col]) == [i18n.number(float(v), 3, lang=lang) for v in ppl_en]
        # a formula groups digits by a thin space, never a comma (a decimal mark in pt and tr)
        gqa = int(list(table[bytes_col])[1])  # the model's own bytes per token (SmolLM2: 46,080)
        assert gqa >= 1000 and any(f"{gqa:,}".replace(",", r"\,") in str(e.value) for e in at.latex)
        assert not any(re.search(r"\d\{?,\}?\d{3}", str(e.value)) for e in at.latex)


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_visitor_text_is_text_never_markup_in_every_language(lang):
    prompt = "<b>bold</b> **x** $y$ [a](./walkthrough) and then some more words so that a window fits in it"
    at = app_at(PAGE, query={"sk_prompt": prompt, "sk_first": "drop", "lang": lang}, timeout=TIMEOUT)
    assert_clean(at)
    for kind in ("markdown", "caption", "info", "warning", "success", "latex"):
        for el in getattr(at, kind):
            assert "<b>" not in str(el.value).replace("`<`", "") and "**x**" not in str(el.value), (kind, el.value)
    said = {"pt": "Sem o seu primeiro token `<`, `b` vem primeiro", "tr": "İlk tokeniniz `<` olmadan `b` başa geçer"}
    assert said[lang] in texts(at, "markdown")
    names = [d["name"] for d in figures(at)["sk_fig_first"]["data"]]
    assert names[0] == {"pt": "seu texto: posição 0 (&lt;)", "tr": "metniniz: konum 0 (&lt;)"}[lang]
    ticks = figures(at)["sk_fig_top_head"]["layout"]["yaxis"]["ticktext"]
    assert ticks[0] == "&lt; (0)" and not any("<" in t for t in ticks)


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_page_s_values_open_in_it(lm):
    query = {"lang": "tr", "sk_first": "the", "sk_offset": "77", "sk_window": "8", "sk_new": "3"}
    at = app_at(PAGE, query=query, timeout=TIMEOUT)
    assert_clean(at)
    ids = tuple(lm.encode(M.DEFAULT_PROMPT))  # the 🔎 warning only where the model's sink does not follow position 0
    follows = M.first_token_experiment(lm, ids, M.sink_summary(lm, ids), "the").follows_position
    assert [w.icon for w in at.warning] == ([] if follows else ["🔎"]) and not at.session_state["_link_warnings"]
    assert at.radio(key="sk_first").value == "the" and at.slider(key="sk_offset").value == 77
    assert at.title[0].value == "Dikkat çukurları (attention sinks) ve daha küçük KV önbellekleri"
    assert "lang=tr" in texts(at, "caption")  # the link to the KV-cache lesson keeps the language
    at.slider(key="sk_window").set_value(9).run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr"
    assert at.query_params["sk_first"] == "the" and at.query_params["sk_offset"] == "77"
    assert at.slider(key="sk_window").value == 9
    assert "Metniniz" in [h.value for h in at.header]


@pytest.mark.slow
def test_the_charts_words_keep_their_letters():
    labels = ["İzmir (0)", "ılık (1)", "şöyle (2)", "ağaç (3)"]  # Turkish dotted capital and dotless small i
    with i18n.using("tr"):
        fig = S.losses_along([("tutulan ilk 4 token", np.array([1.5, 2.25, 3.0]), "#000")], 2, labels)
        mask = S.window_mask(M.allowed_keys(4, 2, 1), labels, title="hangi anahtarlar")
        trade = S.cache_tradeoff([("gizil, rank 32", "latent", 3840.0, 1234.5)], reference=10.0)
    assert fig.layout.xaxis.title.text == "sorgu konumu (sonraki tokeni tahmin ederken)"
    assert fig.data[0].customdata[0][:2] == ["İzmir (0)", "ılık (1)"] and fig.data[0].customdata[0][2] == "1,500"
    assert fig.layout.separators == ",."
    assert list(mask.layout.yaxis.ticktext) == labels
    assert np.asarray(mask.data[0].customdata, dtype=object)[3, 0, 2] == "tutulan bir ilk token"
    assert np.asarray(mask.data[0].customdata, dtype=object)[0, 3, 2] == "gelecek (nedensel maske)"
    with i18n.using("pt"):
        heads = S.cache_tradeoff([("MHA", "heads", 138240.0, 12.5)], reference=10.0)
    assert heads.data[0].name == "cabeças de chave/valor"
    assert trade.data[0].name == "gizil önbellek" and trade.data[0].customdata[0][1:] == ["3.840", "1234,5"]
    with i18n.using("pt"):
        assert M.variant_label(real_model().config, M.cache_variants(real_model().config, 64)[-1]) == \
            "janela 32 + 4 primeiros tokens"
        assert S.sink_layers([0.5, 0.75], [0.5, 1.0], 0.125).data[2].hovertemplate.startswith(
            "uma cabeça que distribui por igual: 0,125")
