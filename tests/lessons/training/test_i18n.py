"""The page "Watch attention learn" in Português and Türkçe (issue 31): nothing of the English page left in its main
states (the defaults, a trained run with its snapshots and knockouts, the experiments, the shortcut task, a run too
big for the server, a link the page cannot use), the same numbers with the language's decimal comma, the link keeps
``lang`` and the option codes, the charts' words keep their letters.

A run trained once is shared by every session of the process (:data:`explorer.lessons.training.model.WORKER`): the
English page trains it, the Portuguese and Turkish pages draw the same finished run, so their numbers must match the
English page's exactly."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlparse

import numpy as np
import pytest

from explorer.lessons.training import charts as tfig
from explorer.lessons.training import model
from explorer.shell import i18n
from explorer.shell.textviews import tokens_count
from tests.apptest_utils import app_at, assert_clean, english_left, figures

PAGE = "training"
LANGS = ("pt", "tr")
QUICK = {"tr_steps": "300"}  # the default model, 300 steps: an induction head forms at about step 220
TOO_BIG = {"tr_layers": "3", "tr_heads": "4", "tr_d_model": "64", "tr_d_head": "64", "tr_n_ctx": "64",
           "tr_steps": "2000"}
BAD_LINK = {"tr_layers": "5", "tr_seed": "abc", "tr_task": "copy", "tr_lr": "1e-2", "tr_scale": "maybe",
            "tr_init": "xavier", "tr_positions": "<b>rope</b>", "tr_steps": "150"}
# Never translated: the citations (Portuguese writes "et al." too; Turkish "vd."), and Plotly's hover fields
# (``%{customdata}`` would count as a word of the sentence around it).
ALLOWED = ("Elhage et al.", "Olsson et al.", "Vaswani et al.", "Musat et al.", "Aoyama et al.",
           *(f"%{{{field}}}" for field in ("x", "y", "z", "text", "customdata")))
# Each state: the link, the buttons pressed in order (a button the page no longer shows, because the server already
# holds its runs, is skipped), and English words that prove the state was reached.
STATES = {
    "default": (dict(), (), "uniform attention would give"),
    "trained": (QUICK, ("tr_train", "tr_show_before"), "An induction head formed"),
    "knockouts": (QUICK, ("tr_train", "tr_run_layers"), "Knocking out all of layer 0 takes the accuracy from"),
    "shortcut": (QUICK, ("tr_train", "tr_run_shortcut"), "The fixed-period model took the shortcut"),
    "shortcut-task": ({**QUICK, "tr_task": "repeat_fixed"}, ("tr_train",), "The fixed-period task"),
    "scaling": ({**QUICK, "tr_sc_d_head": "32"}, ("tr_train", "tr_run_scaling"), "At step 0 the softmax's top"),
    "context": ({"tr_ctx_steps": "400"}, ("tr_run_context",), "Measured here: n = 16"),
    "real-model": (dict(), ("tr_real",), "Measured now on SmolLM2-135M"),
    "too-big": (TOO_BIG, (), "times as long as a run at the defaults"),
    "bad-link": (BAD_LINK, (), "is not valid"),
}


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "success", "error", "text")
                    for e in getattr(at.main, kind))


def page(state: str, lang: str = "en"):
    """The page in ``state`` and ``lang`` (``en``: no ``lang`` in the link), every button of the state pressed."""
    query, clicks, _english = STATES[state]
    at = app_at(PAGE, query={**query, **({"lang": lang} if lang != "en" else {})}, timeout=600)
    assert_clean(at)
    for key in clicks:
        if any(b.key == key for b in at.main.button):
            at.button(key=key).click().run(timeout=600)
            assert_clean(at)
    return at


def array(data) -> np.ndarray:
    """A Plotly data array as NumPy: a plain list, or Plotly's typed-array form ``{"dtype", "bdata"}``."""
    if isinstance(data, dict):
        import base64

        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.array(data, dtype=float)


def numbers_of(at) -> dict[str, list[np.ndarray]]:
    """Every chart's numbers (x, y, z of every trace), by chart key."""
    out = {}
    for key, fig in figures(at).items():
        out[key] = [array(tr[axis]) for tr in fig["data"] for axis in ("x", "y", "z")
                    if axis in tr and not (isinstance(tr[axis], list) and tr[axis] and isinstance(tr[axis][0], str))]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_sentence_is_left_in_portuguese_or_turkish(state):
    en = page(state)
    assert STATES[state][2] in texts(en) + " ".join(w.value for w in en.warning), texts(en)[:2000]
    for lang in LANGS:
        other = page(state, lang)
        assert english_left(en, other, allowed=ALLOWED) == [], lang
        assert [f["layout"].get("separators") for f in figures(other).values()] == \
            [",."] * len(figures(other)), lang  # every chart of the page writes the decimal comma
        assert other.query_params["lang"] == lang


@pytest.mark.slow
def test_a_trained_run_shows_the_same_numbers_in_every_language_with_its_decimal_mark():
    en = page("trained")
    want = numbers_of(en)
    assert {"tr_fig_loss", "tr_fig_scores", "tr_fig_knockout", "tr_fig_step_1_0"} <= set(want)
    knock_en = figures(en)["tr_fig_knockout"]["data"][0]["text"]
    caption_en = next(c.value for c in en.main.caption if c.value.startswith("Step "))
    for lang in LANGS:
        at = page("trained", lang)
        got = numbers_of(at)
        assert set(got) == set(want), lang
        for key, arrays in want.items():
            assert len(got[key]) == len(arrays), key
            for a, b in zip(arrays, got[key], strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{lang} {key}")
        # the bars' own numbers and a caption's, with the decimal comma
        assert figures(at)["tr_fig_knockout"]["data"][0]["text"] == [t.replace(".", ",") for t in knock_en]
        decimals_en = re.findall(r"\d+\.\d+", caption_en)
        caption = next(c.value for c in at.main.caption if c.value.startswith(("Passo ", "Adım ")))
        assert decimals_en and re.findall(r"\d+,\d+", caption) == [d.replace(".", ",") for d in decimals_en]
        assert not re.findall(r"\d\.\d", caption)
        # the snapshot button kept its step (the same step in every language)
        assert at.slider(key="tr_step").value == en.slider(key="tr_step").value


@pytest.mark.slow
def test_the_untrained_sentence_writes_its_numbers_with_a_comma():
    en = page("default")
    sentence_en = next(m.value for m in en.main.markdown if "uniform attention would give" in m.value)
    decimals = re.findall(r"\d\.\d{3}", sentence_en)
    assert len(decimals) == 4
    for lang in LANGS:
        at = page("default", lang)
        sentence = next(m.value for m in at.main.markdown if all(d.replace(".", ",") in m.value for d in decimals))
        assert not re.search(r"\d\.\d", sentence), sentence


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_option_codes():
    at = page("default", "pt")
    radio = at.radio(key="tr_init")
    assert list(radio.options) == ["da lição", "variância unitária"]
    radio.set_value("unit-variance").run()
    assert_clean(at)
    assert at.query_params["lang"] == "pt" and at.query_params["tr_init"] == "unit-variance"  # the code, not the label
    at.radio(key="tr_positions").set_value("sinusoidal").run()
    assert at.query_params["tr_positions"] == "sinusoidal" and at.query_params["lang"] == "pt"
    lr = at.select_slider(key="tr_lr")  # shown with the decimal comma, held in the link with the point
    assert list(lr.options) == ["0,001", "0,003", "0,01", "0,03"] and lr.value == "0.01"
    lr.set_value("0.003").run()
    assert_clean(at)
    assert at.query_params["tr_lr"] == "0.003" and at.query_params["lang"] == "pt"
    # a Turkish page opened from that link keeps every value and shows it in Turkish
    tr = app_at(PAGE, query={**dict(at.query_params), "lang": "tr"})
    assert_clean(tr)
    assert not [w.value for w in tr.warning if "tr_" in w.value]
    assert tr.radio(key="tr_init").value == "unit-variance" and tr.select_slider(key="tr_lr").value == "0.003"
    assert list(tr.radio(key="tr_positions").options) == ["öğrenilmiş", "sinüzoidal"]
    # the link to the real-model lesson keeps the language
    link = next(m.value for m in tr.main.markdown if "Gerçek bir modelin içinde" in m.value)
    url = urlparse(link.split("](", 1)[1].split(")", 1)[0])
    assert dict(parse_qsl(url.query))["lang"] == "tr"


@pytest.mark.slow
def test_a_bad_link_warns_in_the_language_and_opens_at_the_defaults():
    for lang, word in (("pt", "não é válido"), ("tr", "geçerli değil")):
        at = page("bad-link", lang)
        warned = " ".join(w.value for w in at.warning)
        for key in ("tr_layers", "tr_seed", "tr_task", "tr_lr", "tr_scale", "tr_init", "tr_positions", "tr_steps"):
            assert key in warned, (lang, key)
        assert word in warned
        assert at.radio(key="tr_task").value == "repeat" and at.radio(key="tr_init").value == "lesson"


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        strip = tfig.probe_strip(np.arange(4), np.array([0, 1, 2, 2]), title="bir dizi: n = 4, p = 1")
        bars = tfig.knockout_bars(["katman 1 kafa 0", "katman 0 tümüyle"], [0.9, 0.125], 0.95,
                                  title="İki katman, ılık")
        curve = tfig.curves(np.arange(3), [tfig.Series("doğruluk", np.ones(3), "#000")], title="", y_title="skor")
        spec = model.RunSpec().describe()
    assert list(strip.data[0].customdata[0]) == ["dolgu", "öbeğin ilk kopyası", "ikinci kopya", "ikinci kopya"]
    assert strip.data[0].hovertemplate.startswith("konum %{x}: token %{text}") and strip.layout.separators == ",."
    assert list(bars.data[0].text) == ["0,90", "0,12"] and bars.layout.title.text == "İki katman, ılık"
    assert bars.layout.annotations[0].text == "tüm kafalar: 0,95"
    assert bars.data[0].hovertemplate.startswith("devre dışı: %{y}, doğruluk %{x:.3f}")
    assert bars.layout.xaxis.title.text == "o devre dışıyken doğruluk"
    assert curve.layout.xaxis.title.text == "eğitim adımı"
    assert curve.data[0].hovertemplate.startswith("doğruluk<br>adım")
    assert spec.startswith("2 katman × 2 kafa") and "öğrenme oranı 0,01" in spec and "600 adım" in spec
    with i18n.using("pt"):
        grid = tfig.head_scores_grid(np.full((2, 3), 0.5), title="SmolLM2: correspondência de prefixo por cabeça")
        spec = model.RunSpec(n_layers=1, n_heads=1, init="unit-variance").describe()
    assert grid.data[0].colorbar.title.text == "pontuação" and grid.layout.yaxis.title.text == "camada"
    assert grid.data[0].hovertemplate.startswith("camada %{customdata[0]} · cabeça %{customdata[1]}: ")
    assert spec.startswith("1 camada × 1 cabeça") and "inicialização de variância unitária" in spec
    assert "taxa do Adam 0,01" in spec
    # outside a run: English, the point
    assert model.RunSpec().describe().startswith("2 layers × 2 heads") and "Adam lr 0.01" in model.RunSpec().describe()


def test_the_live_view_speaks_the_language():
    spec = model.RunSpec()
    p = model.Progress(np.arange(3), np.full(3, 4.0), np.zeros(3), np.zeros(3))
    with i18n.using("pt"):
        fig = tfig.live_figure(spec, p, "este modelo")
        head = model.head_name((1, 0))
        missing = model.emerged_text(None, 600)
    assert fig.layout.title.text == "este modelo: passo 2 de 600"
    assert [t.name for t in fig.data] == ["perda ÷ ln vocab", "melhor correspondência de prefixo", "acurácia"]
    assert fig.layout.annotations[0].text == "correspondência de prefixo 0,4" and fig.layout.separators == ",."
    assert head == "camada 1 cabeça 0" and missing == "em nenhum dos 600 passos"
    with i18n.using("tr"):
        assert model.verdict("shortcut") == "kısayol" and model.emerged_text(218, 600) == "218. adımda"
        assert model.steps_count(1) == "1 adım" and tokens_count(12) == "12 token"
    assert model.verdict("not learned") == "not learned" and model.steps_count(1) == "1 step"
