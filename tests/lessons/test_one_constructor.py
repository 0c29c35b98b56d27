"""The figure builders that dominated a cold run build each figure in one ``go.Figure(data, layout)`` call.

``make_subplots``, ``update_xaxes/yaxes/layout``, ``add_trace`` and ``add_shape/annotation/hline/vline`` each walk
the whole figure (a 6 x 6 mask map: 10 ms with them, 1.8 ms in one call; issue 20, BENCHMARKS.md "Classroom").
These builders set everything at construction (a grid's skeleton comes from make_subplots once per shape:
``explorer.shell.plotly_fast.subplot_layout``); a call of one of those methods in them is a regression.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.subplots
import pytest
from plotly.basedatatypes import BaseFigure

from explorer.lessons.causal import charts as causal
from explorer.lessons.multihead import charts as multihead
from explorer.lessons.scaling import charts as scaling
from explorer.lessons.two_sentences import charts as two
from explorer.shell import charts

WALKING = ("update_xaxes", "update_yaxes", "update_layout", "add_trace", "add_traces", "add_shape", "add_annotation",
           "add_hline", "add_vline")
LABELS = ["a (0)", "b (1)", "c (2)", "d (3)"]
RNG = np.random.default_rng(0)
W = RNG.dirichlet(np.ones(4), size=(2, 4))  # [heads, n, n] rows sum to 1

BUILDERS = {
    "causal.boolean_mask_figure": lambda: causal.boolean_mask_figure(np.tri(4, dtype=bool), LABELS, title="t"),
    "causal.additive_mask_figure": lambda: causal.additive_mask_figure(
        np.where(np.tri(4, dtype=bool), 0.0, -np.inf), LABELS),
    "causal.row_change_bars": lambda: causal.row_change_bars(np.ones(4), np.r_[0.0, 0.0, 1.0, 1.0], LABELS, 1),
    "charts.paired_bars": lambda: charts.paired_bars([("A", np.ones(4), ["1"] * 4, "#000")], LABELS, quantity="q",
                                                     x_title="x", y_title="y", y_max=2.0),
    "two_sentences.entropy_bars": lambda: two.entropy_bars(np.ones(4), np.zeros(4), LABELS),
    "scaling.score_histograms": lambda: scaling.score_histograms(np.arange(5.0), np.ones(4) / 4, np.arange(5.0) / 2,
                                                                 np.ones(4) / 2, d_k=4, raw_var=4.0, scaled_var=1.0,
                                                                 log_y=True),
    "scaling.saturation_curves": lambda: scaling.saturation_curves([1, 2, 4], {"p": ([1, 2, 3], [1, 1, 1]),
                                                                              "q": ([3, 2, 1], [1, 1, 1])},
                                                                   current_d_k=2, yranges={"p": (0, 4)}),
    "scaling.temperature_sweep": lambda: scaling.temperature_sweep([0.5, 1, 2], np.full((3, 2), 0.5), [1.0, 2.0],
                                                                   current=1.0),
    "multihead.split_panels": lambda: multihead.split_panels(np.ones((2, 3, 2)), np.zeros((2, 3, 2), dtype=int),
                                                             tokens=np.zeros((2, 3, 2), dtype=int),
                                                             titles=["h0", "h1"]),
    "multihead.head_weights_grid": lambda: multihead.head_weights_grid(W, LABELS, [0, 1]),
    "multihead.entropy_bars": lambda: multihead.entropy_bars(np.ones(3), 4),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_built_in_one_call(name, monkeypatch):
    BUILDERS[name]()  # the subplot skeletons are made (by make_subplots) once per shape, then copied
    called = []
    for method in WALKING:
        original = getattr(go.Figure, method)  # update_xaxes & co. are go.Figure's own (generated) methods
        monkeypatch.setattr(go.Figure, method, lambda self, *a, _m=method, _o=original, **k: (called.append(_m),
                                                                                             _o(self, *a, **k))[1])
    monkeypatch.setattr(plotly.subplots, "make_subplots", lambda *a, **k: called.append("make_subplots"))
    fig = BUILDERS[name]()
    assert isinstance(fig, BaseFigure) and fig.data
    assert not called, f"{name} walks the figure with {sorted(set(called))}"
