"""Figure builders of the scaling page (app/figures/scaling.py): pure arrays -> go.Figure."""

import json
import math

import numpy as np
import pytest

from explorer.lessons.scaling import charts as F
from explorer.shell import i18n

D_K = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def hist_args(d_k=64, n=10_000, bins=60):
    rng = np.random.default_rng(0)
    raw = rng.standard_normal(n) * np.sqrt(d_k)
    rd, re = np.histogram(raw, bins=bins, density=True)
    sd, se = np.histogram(raw / np.sqrt(d_k), bins=bins, density=True)
    return dict(raw_edges=re, raw_density=rd, scaled_edges=se, scaled_density=sd, d_k=d_k,
                raw_var=float(raw.var()), scaled_var=float((raw / np.sqrt(d_k)).var()))


def test_histograms_overlay_binned_bars_with_variances_in_the_legend():
    args = hist_args()
    fig = F.score_histograms(**args)
    raw, scaled = fig.data
    assert raw.type == scaled.type == "bar" and fig.layout.barmode == "overlay"
    assert len(raw.x) == len(raw.y) == len(raw.width) == 60
    np.testing.assert_allclose(raw.x, (args["raw_edges"][:-1] + args["raw_edges"][1:]) / 2, atol=1e-4)
    np.testing.assert_allclose(np.sum(np.asarray(scaled.y) * np.asarray(scaled.width)), 1.0, atol=1e-3)
    assert "theory d_k = 64" in raw.name and "theory 1" in scaled.name
    assert f"{args['raw_var']:.3f}" in raw.name
    xs = sorted({s.x0 for s in fig.layout.shapes})
    assert xs == [-8.0, -1.0, 1.0, 8.0]  # ±√d_k and ±1
    assert all(s.yref == "paper" and (s.y0, s.y1) == (0, 1) for s in fig.layout.shapes)
    assert fig.layout.yaxis.type != "log"
    assert F.score_histograms(**args, log_y=True).layout.yaxis.type == "log"


def test_histogram_payload_stays_small_however_many_samples():
    fig = F.score_histograms(**hist_args(n=200_000))
    assert len(json.dumps(fig.to_plotly_json(), default=str)) < 20_000


def test_histograms_reject_mismatched_bins():
    args = hist_args()
    args["raw_density"] = args["raw_density"][:-1]
    with pytest.raises(ValueError, match="raw"):
        F.score_histograms(**args)


def test_curves_have_a_log_x_axis_a_panel_per_statistic_and_the_current_d_k():
    x = np.array(D_K)
    panels = {"max": (x / 1024, np.full(11, 0.4)), "keys": (6 / x, np.full(11, 4.0)), "‖J‖": (1 / x, np.full(11, 0.3))}
    fig = F.saturation_curves(x, panels, current_d_k=256, yranges={"max": (0, 1)})
    assert len(fig.data) == 6
    assert [t.name for t in fig.data[:2]] == ["unscaled", "scaled"]
    assert sum(bool(t.showlegend) for t in fig.data) == 2  # one legend entry per series
    np.testing.assert_allclose(fig.data[0].y, x / 1024, atol=1e-6)
    for axis in ("xaxis", "xaxis2", "xaxis3"):
        assert fig.layout[axis].type == "log"
    assert [t.text for t in fig.layout.annotations[:3]] == ["max", "keys", "‖J‖"]
    vlines = [s for s in fig.layout.shapes if s.x0 == s.x1]
    assert len(vlines) == 3 and all(s.x0 == 256 for s in vlines)
    assert list(fig.layout.yaxis.range) == [0, 1]
    note = fig.layout.annotations[-1]  # the current d_k: on a line of its own above the legend (a phone has no room
    assert note.text == "dotted: current d_k = 256" and note.y > fig.layout.legend.y  # for both side by side)


def test_curves_reject_bad_series():
    with pytest.raises(ValueError, match="like d_k"):
        F.saturation_curves(D_K, {"a": ([1, 2], [1, 2])}, current_d_k=1)
    with pytest.raises(ValueError, match="at least one"):
        F.saturation_curves(D_K, {}, current_d_k=1)


def test_curve_titles_are_escaped():
    fig = F.saturation_curves([1, 2], {"<b>x</b>": ([1, 2], [1, 2])}, current_d_k=1)
    assert fig.layout.annotations[0].text == "&lt;b&gt;x&lt;/b&gt;"


def test_query_bars_keep_key_order_and_colour_by_scaling():
    w = np.array([0.1, 0.7, 0.2])
    un = F.query_bars(w, ["k0", "k1", "k2"], query_label="q0", scaled=False)
    sc = F.query_bars(w, ["k0", "k1", "k2"], query_label="q0", scaled=True)
    assert list(un.data[0].y) == [0.1, 0.7, 0.2]
    assert list(un.layout.xaxis.ticktext) == ["k0", "k1", "k2"]
    assert un.data[0].marker.color == F.RAW_COLOR and sc.data[0].marker.color == F.SCALED_COLOR
    assert "query q0 → key" in un.data[0].hovertemplate


def test_temperature_bars_label_the_logits():
    fig = F.temperature_bars([0.659, 0.242, 0.099], [2.0, 1.0, 0.1], temperature=0.5)
    assert list(fig.layout.xaxis.ticktext) == ["z=2.0 (0)", "z=1.0 (1)", "z=0.1 (2)"]
    assert fig.layout.xaxis.title.text == "logit" and "0.5" in fig.layout.title.text


def test_temperature_sweep_one_line_per_logit():
    temps = np.array([0.1, 1.0, 10.0])
    sweep = np.array([[1.0, 0.0, 0.0], [0.66, 0.24, 0.1], [0.35, 0.33, 0.32]])
    fig = F.temperature_sweep(temps, sweep, [2.0, 1.0, 0.1], current=1.0)
    assert len(fig.data) == 3 and fig.layout.xaxis.type == "log"
    np.testing.assert_allclose(fig.data[0].y, sweep[:, 0])
    assert any(s.x0 == 1.0 and s.x1 == 1.0 for s in fig.layout.shapes)
    with pytest.raises(ValueError, match="sweep"):
        F.temperature_sweep(temps, sweep[:, :2], [2.0, 1.0, 0.1], current=1.0)


def test_the_charts_words_keep_their_letters_and_numbers_take_the_decimal_comma():
    edges = np.linspace(-3, 3, 7)
    density = np.full(6, 1 / 6)
    with i18n.using("tr"):
        sweep = F.temperature_sweep([0.5, 1, 2], np.full((3, 3), 1 / 3), [2.0, 1.0, 0.1], current=1.0)
        hist = F.score_histograms(edges, density, edges / 2, density, d_k=4, raw_var=4.125, scaled_var=1.03125)
        curves = F.saturation_curves([1, 2], {"a": ([1, 2], [1, 1])}, current_d_k=2)
    assert sweep.layout.xaxis.title.text == "sıcaklık T" and sweep.layout.yaxis.title.text == "ağırlık"  # ı, ğ
    assert [t.name for t in sweep.data] == ["logit 2,0 (0)", "logit 1,0 (1)", "logit 0,1 (2)"]
    assert "ağırlık %{y:.4f}" in sweep.data[0].hovertemplate and sweep.layout.separators == ",."
    assert hist.data[1].name == "ölçeklenmiş q·k/√d_k: Var = 1,031 (teori 1)"
    assert hist.layout.yaxis.title.text == "yoğunluk (alan 1)" and hist.layout.separators == ",."
    assert [t.name for t in curves.data] == ["ölçeksiz", "ölçekli"]
    assert {t.legendgroup for t in curves.data} == {"unscaled", "scaled"}  # the groups are codes
    with i18n.using("pt"):
        hist = F.score_histograms(edges, density, edges / 2, density, d_k=4, raw_var=4.125, scaled_var=1.0)
    assert hist.layout.xaxis.title.text == "pontuação" and "densidade" in hist.data[0].hovertemplate  # ç, ã
    assert hist.data[0].name == "q·k bruto: Var = 4,125 (teoria d_k = 4)"
    assert math.isclose(float(hist.data[0].x[0]), -2.5)  # the data stay numbers: Plotly writes their commas
