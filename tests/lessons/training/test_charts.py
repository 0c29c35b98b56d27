"""The lesson's figure builders: one constructor call each, escaped labels, errors for mismatched shapes."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.lessons.training import charts as tfig
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
