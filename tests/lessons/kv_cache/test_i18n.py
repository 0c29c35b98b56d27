"""The page "Generating with a KV cache" in Português and Türkçe (issue 31): nothing of the English page left in its
main states (the defaults, tokens generated greedily and sampled, a link the page cannot use), the same numbers with
the language's decimal comma (charts, the difference and byte texts), the link keeps ``lang`` and the option codes,
the charts' words keep their letters.

The model runs in the test process (loaded once); the generation is cached per (prompt, sampling, steps) and shared by
every language, so each language only draws the same generation again: its numbers must match the English page's
exactly. The states avoid what only the shared model door (:mod:`explorer.shell.llm`, the shell domain) says:
a prompt cut or emptied, missing weights."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlparse

import numpy as np
import pytest

from explorer.lessons.kv_cache import charts as K
from explorer.lessons.kv_cache import model as M
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figures
from tests.lessons.kv_cache.test_page import FIGURES, texts, values

PAGE = "kv_cache"
LANGS = ("pt", "tr")
TIMEOUT = 600
# Never translated: the citations (Portuguese writes "et al." too; Turkish "vd."), the paper's title, and Plotly's
# hover fields (``%{customdata[0]}`` would count as words of the sentence around it).
CITATIONS = ("Pope et al.", "Ainslie et al.", "*Efficiently Scaling Transformer Inference*")
HOVER_FIELDS = tuple(f"%{{{f}}}" for f in ("x", "y", "z", "y:,.4g", "customdata[0]", "customdata[1]", "customdata"))
GENERATED = {"kv_steps": "4"}
SHORT = {"kv_prompt": "The capital of", "kv_steps": "2"}  # 5 keys: the bars print their values on a page this wide
SAMPLED = {"kv_sampling": "sample", "kv_temperature": "1.2", "kv_top_k": "0", "seed": "5", "kv_steps": "3"}
BAD_LINK = {"kv_steps": "99", "kv_layer": "-1", "kv_head": "x", "kv_query": "7", "kv_sampling": "beam",
            "kv_temperature": "0.25", "kv_top_k": "1e9", "kv_seed": "4"}
# Each state: the link, and English words that prove the state was reached.
STATES = {
    "default": ({}, "Step 0 is the prefill"),
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


def allowed(en) -> tuple[str, ...]:
    """What is the same in every language: the model's text and its tokens (as read and generated), the citations
    and Plotly's hover fields."""
    return (*(e.value for e in en.main.text), *(e.value for e in en.main.code), *CITATIONS, *HOVER_FIELDS)


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
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left_in_portuguese_or_turkish(state):
    en = page(state)
    assert STATES[state][1] in texts(en) + " ".join(str(c) for c in table_columns(en)), texts(en)[:2000]
    for lang in LANGS:
        other = page(state, lang)
        assert english_left(en, other, allowed=allowed(en)) == [], lang
        assert english_left(en, other, allowed=allowed(en), sidebar=True) == [], lang  # the "not used" notes too
        assert set(FIGURES) <= set(figures(other))
        assert [f["layout"].get("separators") for f in figures(other).values()] == \
            [",."] * len(figures(other)), lang  # every chart of the page writes the decimal comma
        assert other.query_params["lang"] == lang
        assert not set(table_columns(other)) & set(table_columns(en)) - {"token"}, lang  # the columns' names too
        if state == "bad-link":  # the link warnings name every control, in the language
            warned = texts(other, "warning")
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
        table = at.dataframe[0].value
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


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    ns = np.arange(1, 9)
    with i18n.using("tr"):
        cost = K.cost_chart(ns, ns * 1e6, ns**2 * 1e6, 5, 3, title="İlk ışık: ığdır")
        size = K.cache_size_chart(ns, ns * 1e3, ns * 3e3, 5, 3, n_kv_heads=3, n_heads=9)
        bars = K.cached_vs_full([0.25, 0.75], [0.25, 0.75], ["İ", "ı"], title="sorgu kafası İ")
        sampled = M.Sampling("sample", 0.8, 40, 0).describe()
    assert cost.layout.title.text == "İlk ışık: ığdır" and cost.layout.separators == ",."
    assert [t.name for t in cost.data if t.showlegend is not False] == [
        "KV önbelleğiyle", "önbelleksiz: n tokenin hepsini yeniden hesapla"]
    assert cost.layout.xaxis.title.text == "dizideki token sayısı (n)"
    assert cost.layout.annotations[0].text == "şimdi: 5 token" and cost.layout.annotations[1].text == "istem"
    assert size.data[0].name == "3 anahtar/değer kafası (bu model, GQA)" and size.layout.separators == ",."
    assert bars.data[0].text == ("0,250", "0,750") and bars.layout.title.text == "sorgu kafası İ"
    assert bars.data[0].hovertemplate.startswith("önbellekli adım: anahtar %{customdata[0]}")
    assert sampled == "örneklendi: sıcaklık 0,8, top-k 40, tohum 0"
    with i18n.using("pt"):
        assert M.Sampling().describe() == "guloso (greedy: o token mais provável)"
        assert M.pending_marker("ç".encode()[:1]) == "⟨+1 byte pendente⟩"
        assert "1 dos seus 2 bytes UTF-8" in M.pending_note("ç".encode()[:1])
        assert M.difference_text(1.5e-6) == "1,5e-06" and M.difference_text(0.0) == "0 (bit a bit)"
        assert M.probability_text(0.1234) == "0,123" and M.probability_text(0.00012) == "1,20e-04"
    # outside a run: English, the point
    assert M.Sampling("sample", 0.8, 40, 0).describe() == "sampled: temperature 0.8, top-k 40, seed 0"
    assert M.difference_text(1.5e-6) == "1.5e-06" and K.cost_chart(ns, ns, ns, 5, 3).layout.separators == ".,"
