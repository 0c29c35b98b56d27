"""explorer.shell.plotly_fast: the figure's dict for st.plotly_chart, equal to Plotly's own, a fresh copy."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import streamlit as st
from plotly.basedatatypes import BaseFigure

from explorer.lessons import LESSONS
from explorer.shell import charts, plotly_fast
from tests.apptest_utils import app_at, figures


def _plotly_json(fig) -> str:
    return pio.to_json(plotly_fast._PLOTLY_TO_DICT(fig), validate=False)


def _figures():
    z = np.arange(12, dtype=float).reshape(3, 4) / 12
    mask = np.tril(np.ones((3, 4), dtype=bool))
    yield charts.heatmap(z, ["a", "<b>", "a"], list("wxyz"), title="t", mask=mask)
    yield charts.heatmap(np.random.default_rng(0).normal(size=(70, 70)), [str(i) for i in range(70)],
                         [str(i) for i in range(70)], kind="diverging")
    yield charts.weights_bar(np.array([0.25, 0.75]), ["a", "b"], query_label="q")
    fig = go.Figure(go.Scatter(x=np.arange(5), y=np.arange(5, dtype=np.int64) * 10**10, text=("a", "b")),
                    layout=dict(xaxis=dict(range=np.array([0.0, 4.0])), shapes=[dict(type="line", x0=0, x1=1)]),
                    frames=[go.Frame(data=[go.Scatter(y=np.ones(3))])])
    yield fig


def test_installed_by_charts():
    assert BaseFigure.to_dict is plotly_fast.to_dict


@pytest.mark.parametrize("fig", list(_figures()), ids=["heatmap", "light_heatmap", "bar", "scatter_frames"])
def test_same_json_as_plotly(fig):
    fast = fig.to_dict()
    assert pio.to_json(fast, validate=False) == _plotly_json(fig)
    assert list(fast["layout"]) == list(plotly_fast._PLOTLY_TO_DICT(fig)["layout"])  # same key order


def test_fresh_copy_shares_nothing_mutable():
    fig = charts.heatmap(np.eye(3), list("abc"), list("abc"))
    before = _plotly_json(fig)
    d = fig.to_dict()
    d["data"][0]["x"].append(99)
    d["layout"]["template"]["layout"]["font"] = {"size": 99}
    d["layout"]["xaxis"]["ticktext"][0] = "changed"
    assert _plotly_json(fig) == before
    arr = np.arange(3.0)
    assert plotly_fast.fresh_copy({"a": (arr, [arr])})["a"][0] is not arr


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in LESSONS])
def test_every_lesson_sends_the_same_charts(name):
    """Each lesson at defaults, once with Plotly's to_dict and once with ours: the same chart specs."""
    specs = {}
    for mode in ("plotly", "fast"):
        if mode == "plotly":
            plotly_fast.uninstall()
        try:
            st.cache_data.clear()  # the sections would replay what the other mode recorded
            at = app_at(name)
            specs[mode] = list(figures(at).values())
        finally:
            plotly_fast.install()
    assert specs["fast"], "no chart"
    assert specs["fast"] == specs["plotly"]
