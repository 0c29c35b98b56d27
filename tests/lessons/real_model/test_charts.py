"""Figures of the real-model lesson: the next-token bars, RoPE's angles (its head grid is the shell's:
``tests/shell/charts/test_head_grid.py``)."""

from __future__ import annotations

import numpy as np
import plotly.colors
import pytest

from explorer.lessons.real_model import charts as R
from explorer.lessons.real_model import model as M
from explorer.shell import head_statistics, i18n
from explorer.shell.textviews import tokens_count


def test_prediction_bars_escape_the_tokens():
    fig = R.prediction_bars(["<b>x</b>", "␣cat"], [0.6, 0.25], title="next")
    (bar,) = fig.data
    assert list(fig.layout.yaxis.ticktext) == ["&lt;b&gt;x&lt;/b&gt;", "␣cat"]
    assert list(bar.text) == ["0.600", "0.250"] and fig.layout.yaxis.autorange == "reversed"
    with pytest.raises(ValueError):
        R.prediction_bars(["a"], [0.5, 0.5])


def test_angle_map_wraps_the_angles_on_a_cyclic_scale():
    angles = np.outer(np.arange(4), [1.0, 0.01])  # [4 positions, 2 pairs] radians
    fig = R.angle_map(angles, ["a (0)", "b (1)", "c (2)", "d (3)"], title="angles")
    (heat,) = fig.data[:1]
    z = np.array(heat.z, dtype=float)
    np.testing.assert_allclose(z, np.mod(np.degrees(angles), 360))
    assert z.max() < 360 and heat.zmin == 0 and heat.zmax == 360
    assert [c for _, c in heat.colorscale] == list(plotly.colors.cyclical.Twilight)  # 359° sits next to 0°
    assert heat.customdata[3][0][2].startswith("171.9° (p·θᵢ = 3 rad)")


@pytest.mark.slow  # tracemalloc slows every allocation: about 1.2 s of CPU
def test_sending_a_token_map_leaves_nothing_behind():
    """This lesson draws up to 20 maps of 64 x 64 tokens per run: turning one into JSON (what st.plotly_chart
    does) must not keep its cells alive (orjson kept every item of the object arrays it refused: 0.3 MB per map)."""
    import gc
    import tracemalloc

    import plotly.io

    from explorer.shell import charts

    labels = [f"␣t{i} ({i})" for i in range(64)]
    z = np.random.default_rng(0).random((64, 64))

    def send() -> str:
        return plotly.io.to_json(charts.heatmap(z, labels, labels, mask=np.tri(64, dtype=bool)), validate=False)

    send()
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            send()
        gc.collect()
        grown = (tracemalloc.get_traced_memory()[0] - before) / 5
    finally:
        tracemalloc.stop()
    assert grown < 20_000, f"{grown / 1024:.0f} KiB kept per map sent"


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        bars = R.prediction_bars(["␣şey", "ı"], [0.75, 0.125], title="sonraki token: en olası 2")
        angles = R.angle_map(np.array([[0.0, 0.0], [1.0, 0.5]]), ["a (0)", "b (1)"])
    assert list(bars.data[0].text) == ["0,750", "0,125"] and bars.layout.separators == ",."
    assert bars.layout.xaxis.title.text == "olasılık" and list(bars.layout.yaxis.ticktext) == ["␣şey", "ı"]
    assert bars.data[0].hovertemplate.startswith("sonraki token %{customdata[0]}: olasılık %{customdata[1]}")
    assert angles.layout.xaxis.title.text == "çift" and angles.layout.yaxis.title.text == "token"
    assert angles.data[0].colorbar.title.text == "derece" and angles.layout.separators == ",."
    assert angles.data[0].customdata[1][0][2] == "57,3° (p·θᵢ = 1 rad)"
    with i18n.using("pt"):
        angles = R.angle_map(np.array([[0.0, 0.0], [1.0, 0.5]]), ["a (0)", "b (1)"])
        assert head_statistics.name("induction") == "pontuação de indução" and M.label("sink") == \
            "sumidouro no primeiro token"
        assert tokens_count(1) == "1 token" and M.rows_count(2) == "2 linhas"
    assert angles.data[0].customdata[1][1][2] == "28,6° (p·θᵢ = 0,5 rad)"
    # outside a run: English, the point
    assert R.angle_map(np.array([[1.0]]), ["a"]).data[0].customdata[0][0][2] == "57.3° (p·θᵢ = 1 rad)"
    assert head_statistics.name("induction") == "induction score" and M.rows_count(1) == "1 row"
