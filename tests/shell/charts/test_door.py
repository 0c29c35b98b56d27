"""The one door every chart goes through (``charts.show_fig``): what it sends, by either way (the component that
updates in place, or ``st.plotly_chart``), and what a page reads back. What only a browser shows (one draw, zoom kept,
dark theme, the saved images) is ``tests/e2e/test_charts.py``."""

from __future__ import annotations

import json

import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

from explorer.shell import charts
from explorer.shell.charts import door
from tests.apptest_utils import chart_elements, figures


def _page():
    import numpy as np
    import plotly.graph_objects as go
    import streamlit as st

    from explorer.shell import charts

    k = st.slider("k", 0, 10, 0, key="k")
    charts.show_fig(go.Figure(go.Heatmap(z=np.arange(4.0).reshape(2, 2) + k), layout={"title": "<b>two</b> × two"}),
                    key="fig_map")
    left, _ = st.columns(2)
    charts.into(left)(go.Figure(go.Bar(x=["a", "b"], y=[1, k])), key="fig_bars")
    event = charts.show_fig(charts.head_grid(np.ones((3, 2)), title="grid", colorbar_title="w"), key="fig_grid",
                            on_select="rerun", selection_mode="points")
    st.text(repr(charts.clicked_head(event, 3, 2)))
    st.text(repr(st.session_state.get("fig_grid")))


def _run(monkeypatch, way: str | None) -> AppTest:
    if way is None:
        monkeypatch.delenv(door.DOOR_ENV, raising=False)
    else:
        monkeypatch.setenv(door.DOOR_ENV, way)
    at = AppTest.from_function(_page, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_component_is_the_default_way_and_sends_plotlys_own_json(monkeypatch):
    at = _run(monkeypatch, None)
    els = chart_elements(at)
    assert [el.proto.component_name for el in els] == [door.COMPONENT_NAME] * 3 and not at.get("plotly_chart")
    assert [el.proto.id.rsplit("-", 1)[-1] for el in els] == ["fig_map", "fig_bars", "fig_grid"]
    data = json.loads(els[0].proto.json)
    fig = go.Figure(go.Heatmap(z=np.arange(4.0).reshape(2, 2)), layout={"title": "<b>two</b> × two"})
    assert json.loads(data["spec"]) == json.loads(pio.to_json(fig, validate=False))
    assert data["plotly"] == f"component/explorer.shell.charts.door.plotly_js/plotly.min.js?v={plotly.__version__}"
    assert data["select"] is False and data["width"] == "stretch" and data["filename"] == "two_two"
    assert json.loads(els[2].proto.json)["select"] is True
    assert set(figures(at)) == {"fig_map", "fig_bars", "fig_grid"}
    # A selectable chart returns st.plotly_chart's shape: nothing clicked yet
    assert [t.value for t in at.text] == ["None", repr({"selection": door.EMPTY_SELECTION})]


def test_the_chart_keeps_its_element_id_when_its_figure_changes(monkeypatch):
    """The browser keeps a chart's node while its element id stays: the id follows the key, not the figure."""
    at = _run(monkeypatch, None)
    before = {el.proto.id: json.loads(el.proto.json)["spec"] for el in chart_elements(at)}
    at.slider(key="k").set_value(3).run()
    after = {el.proto.id: json.loads(el.proto.json)["spec"] for el in chart_elements(at)}
    assert list(after) == list(before)
    assert all(after[i] != before[i] for i in list(before)[:2])  # new figures, same ids


def test_a_click_on_a_grid_reads_back_as_st_plotly_charts_selection(monkeypatch):
    """What the browser's component sends on a click (the selection's points, as st.plotly_chart's) is what
    ``clicked_head`` reads, from the return value and from ``st.session_state[key]``."""
    at = _run(monkeypatch, None)
    grid = chart_elements(at)[2]
    selection = {"points": [{"curve_number": 1, "point_number": 3, "point_index": 3, "x": 1, "y": 1,
                             "customdata": "1.000"}], "point_indices": [3], "box": [], "lasso": []}
    at.session_state["fig_grid"] = {"selection": selection}  # what setStateValue("selection", …) stores
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.text][0] == "(1, 1)"
    assert grid.proto.id == chart_elements(at)[2].proto.id


def test_the_old_way_is_st_plotly_chart_with_a_print_size_png(monkeypatch):
    at = _run(monkeypatch, "plotly_chart")
    assert not at.get("bidi_component") and len(at.get("plotly_chart")) == 3
    config = json.loads(at.get("plotly_chart")[0].proto.config)
    assert config == {"toImageButtonOptions": {"format": "png", "width": 1600, "scale": 2, "filename": "two_two"}}
    assert set(figures(at)) == {"fig_map", "fig_bars", "fig_grid"}


def test_the_door_is_named_or_refused(monkeypatch):
    monkeypatch.setenv(door.DOOR_ENV, "iframe")
    with pytest.raises(ValueError, match=door.DOOR_ENV):
        door.door()
    monkeypatch.setenv(door.DOOR_ENV, "")
    assert door.door() == "component"


def test_a_saved_charts_file_name_is_its_title_or_key():
    assert door.file_name(go.Figure(layout={"title": "attention <b>weights</b> (layer 3)"}), "k") == \
        "attention_weights_layer_3"
    assert door.file_name(go.Figure(), "rm_fig_map") == "rm_fig_map"
    assert door.file_name(go.Figure(), None) == "chart"
    assert door.file_name(go.Figure(layout={"title": "→ ←"}), None) == "chart"


def test_plotlys_bundle_and_the_components_code_are_there():
    assert door.PLOTLY_JS.stat().st_size > 1_000_000
    js = door.Path(door.__file__).with_name("plotly_chart.js").read_text(encoding="utf-8")
    assert "export default function" in js and "Plotly.react" in js and "uirevision" in js
    assert charts.show_fig is door.show_fig
