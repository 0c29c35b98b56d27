"""Figures of the sinks lesson: what each trace holds, the escaping of every label a visitor could type, the
log axes' ticks, and one ValueError per bad input."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.sinks import charts as S
from explorer.lessons.sinks import model as M
from explorer.shell import i18n


def test_sink_layers_bars_dots_and_the_uniform_line():
    mean, top = np.linspace(0, 0.8, 30), np.linspace(0.1, 1.0, 30)
    fig = S.sink_layers(mean, top, 0.06, title="t")
    bars, dots, line = fig.data
    np.testing.assert_allclose(bars.y, mean) and np.testing.assert_allclose(dots.y, top)
    assert list(line.y) == [0.06, 0.06] and "0.060" in line.hovertemplate
    assert fig.layout.legend.y < 0  # under the plot: never over the title on a phone
    with pytest.raises(ValueError):
        S.sink_layers(mean, top[:3], 0.06)


def test_series_names_and_tokens_are_escaped():
    fig = S.first_token_layers([("<b>x</b> first", np.zeros(30), "#000"), ("[a](b)", np.ones(30), "#111")])
    assert fig.data[0].name == "&lt;b&gt;x&lt;/b&gt; first" and fig.data[1].name == "[a](b)"
    labels = ["<b>A</b> (0)", "␣b (1)", "c (2)", "d (3)"]
    losses = S.losses_along([("full", np.array([1.0, 2.0, 3.0]), "#000")], 2, labels, title="<i>t</i>")
    assert losses.data[0].customdata[0][0] == "&lt;b&gt;A&lt;/b&gt; (0)" and losses.layout.title.text == \
        "&lt;i&gt;t&lt;/i&gt;"
    assert losses.layout.shapes[0].x0 == 1.5  # the first scored position is 2
    mask = S.window_mask(M.allowed_keys(4, 2, 1), labels, title="mask")
    assert mask.data[0].customdata[3][0][2] == "a kept first token"
    assert mask.data[0].customdata[3][1][2] == "dropped by the window"
    assert mask.data[0].customdata[3][3][2] == "in the window" and mask.data[0].z[0][1] is None  # the future
    with pytest.raises(ValueError):
        S.first_token_layers([("a", np.zeros(30), "#000"), ("b", np.zeros(29), "#000")])
    with pytest.raises(ValueError):
        S.losses_along([("a", np.zeros(5), "#000")], 1, labels)
    with pytest.raises(ValueError):
        S.window_mask(np.zeros((3, 3)), labels, title="")


def test_cache_tradeoff_is_log_log_with_readable_ticks():
    rows = [("MHA", "heads", 138240.0, 21.0), ("GQA", "heads", 46080.0, 21.0), ("MQA", "heads", 15360.0, 4970.0),
            ("latent 128", "latent", 15360.0, 999.0), ("window 8", "window", 9372.0, 21.6)]
    fig = S.cache_tradeoff(rows, reference=21.0, title="t")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    heads = fig.data[0]
    assert list(heads.x) == [15360.0, 46080.0, 138240.0]  # sorted by size
    assert list(fig.layout.xaxis.ticktext) == ["10k", "20k", "50k", "100k", "200k"]
    assert "1k" in fig.layout.yaxis.ticktext and fig.data[-1].name == "the model (GQA)"
    with pytest.raises(ValueError, match="unknown families"):
        S.cache_tradeoff([("x", "other", 1.0, 1.0)], reference=1.0)
    with pytest.raises(ValueError, match="positive"):
        S.cache_tradeoff([("x", "heads", 0.0, 1.0)], reference=1.0)


def test_cache_tradeoff_takes_its_columns_width():
    """The chart the page draws only with *Measure* on: no width of its own, so on a phone it is as wide as the column
    (the browser tour reads the page at its defaults, without it; tests/e2e/test_sinks.py checked its 390 px)."""
    fig = S.cache_tradeoff([("MHA", "heads", 138240.0, 21.0), ("GQA", "heads", 46080.0, 21.0)], reference=21.0)
    assert fig.layout.width is None and fig.layout.autosize is not False


@pytest.mark.slow
def test_the_charts_words_keep_their_letters(door_model):
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
        assert M.variant_label(door_model.config, M.cache_variants(door_model.config, 64)[-1]) == \
            "janela 32 + 4 primeiros tokens"
        assert S.sink_layers([0.5, 0.75], [0.5, 1.0], 0.125).data[2].hovertemplate.startswith(
            "uma cabeça que distribui por igual: 0,125")
