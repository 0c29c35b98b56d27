"""The lesson's figure builders: one constructor call each, escaped labels, errors for mismatched shapes."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.lessons.training import charts as tfig
from explorer.lessons.training import model
from explorer.shell import i18n
from explorer.shell.textviews import tokens_count
from tests.lessons.test_one_constructor import WALKING

BUILDERS = {
    "curves": lambda: tfig.curves(np.arange(5), [tfig.Series("a<b>", np.linspace(0, 1, 5), "#000"),
                                                 tfig.Series("own x", np.ones(3), "#111", x=np.arange(3))],
                                  title="t", y_title="y", hlines=[(0.4, "0.4")], vlines=[(2, "here")]),
    "curves_log": lambda: tfig.curves(np.arange(4), [tfig.Series("g", np.array([1e-3, 0.0, 1e-2, 1e-1]), "#000")],
                                      title="t", y_title="y", log_y=True, x_range=(0, 10)),
    "probe_strip": lambda: tfig.probe_strip(np.arange(8), np.array([0, 0, 1, 1, 1, 2, 2, 2]), title="probe"),
    "knockout_bars": lambda: tfig.knockout_bars(["layer 0 head 0", "all of layer 0"], [0.9, 0.1], 0.95, title="k"),
    "head_scores_grid": lambda: tfig.head_scores_grid(np.random.default_rng(0).random((4, 3)), title="g"),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_built_in_one_call(name, monkeypatch):
    BUILDERS[name]()
    called = []
    for method in WALKING:
        original = getattr(go.Figure, method)
        monkeypatch.setattr(go.Figure, method, lambda self, *a, _m=method, _o=original, **k: (called.append(_m),
                                                                                             _o(self, *a, **k))[1])
    fig = BUILDERS[name]()
    assert fig.data and not called, called


def test_curves_escape_names_thin_long_runs_and_draw_a_log_axis_without_zeros():
    fig = BUILDERS["curves"]()
    assert fig.data[0].name == "a&lt;b&gt;" and list(fig.data[1].x) == [0, 1, 2]
    assert fig.layout.annotations[0].text == "0.4" and fig.layout.shapes[1].x0 == 2
    long = tfig.curves(np.arange(5001), [tfig.Series("s", np.arange(5001.0), "#000")], title="", y_title="")
    assert len(long.data[0].x) <= tfig.MAX_POINTS + 1 and long.data[0].x[-1] == 5000
    log = BUILDERS["curves_log"]()
    assert min(log.data[0].y) > 0 and log.layout.yaxis.type == "log" and list(log.layout.xaxis.range) == [0, 10]
    with pytest.raises(ValueError, match="like its x"):
        tfig.curves(np.arange(3), [tfig.Series("s", np.ones(4), "#000")], title="", y_title="")


def test_probe_strip_and_knockout_bars():
    strip = BUILDERS["probe_strip"]()
    assert list(strip.data[0].z[0]) == [0, 0, 1, 1, 1, 2, 2, 2] and strip.data[0].text[0][3] == "3"
    with pytest.raises(ValueError, match="roles"):
        tfig.probe_strip(np.arange(3), np.array([0, 3, 1]))
    bars = BUILDERS["knockout_bars"]()
    assert list(bars.data[0].marker.color) == [tfig.SCALED_COLOR, tfig.UNSCALED_COLOR]  # red: below half of 0.95
    with pytest.raises(ValueError, match="one per label"):
        tfig.knockout_bars(["a"], [0.1, 0.2], 0.5)
    with pytest.raises(ValueError, match="2-D"):
        tfig.head_scores_grid(np.ones(3), title="")


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
