"""Unit tests of the shared bar charts (explorer/shell/charts/bars.py; no Streamlit)."""

import json

import numpy as np
import pytest

from explorer.shell.charts import paired_bars, weights_bar


@pytest.mark.parametrize("token", ["<b>bold</b>", "<img src=x onerror=alert(1)>", '"quotes" & amps'])
def test_bar_labels_are_escaped(token):
    bar = weights_bar(np.array([0.5, 0.5]), [token, "x"], query_label=token)
    bar_json = json.dumps(json.loads(bar.to_json()), ensure_ascii=False)
    assert "<img" not in bar_json and "<b>" not in bar_json


def test_weights_bar_by_position_with_room_for_its_values():
    w = np.array([0.1, 0.6, 0.3])
    fig = weights_bar(w, ["the (0)", "the (1)", "cat (2)"], query_label="cat (2)", title="t")
    (bar,) = fig.data
    assert list(bar.x) == [0, 1, 2] and list(fig.layout.xaxis.ticktext) == ["the (0)", "the (1)", "cat (2)"]
    assert bar.hovertemplate.startswith("query cat (2) → key %{customdata[0]}")
    assert list(bar.text) == ["0.100", "0.600", "0.300"] and bar.textangle == 0  # three bars: upright values
    assert fig.layout.yaxis.range[1] >= 1.0 and list(fig.layout.yaxis.tickvals) == [0, 0.25, 0.5, 0.75, 1.0]
    assert fig.layout.margin.t == 40
    with pytest.raises(ValueError, match="one label per key"):
        weights_bar(w, ["a", "b"])


def test_paired_bars_group_by_position_and_escape():
    fig = paired_bars([("<b>A</b>", np.array([0.1, 0.2]), ["0.1", "0.2"], "red"),
                       ("B", np.array([0.3, 0.4]), ["0.3", "0.4"], "blue")],
                      ["the (0)", "the (1)"], quantity="entropy", x_title="query", y_title="nats", y_max=1.0)
    assert fig.layout.barmode == "group" and [t.name for t in fig.data] == ["&lt;b&gt;A&lt;/b&gt;", "B"]
    assert list(fig.data[0].x) == [0, 1] and list(fig.layout.xaxis.ticktext) == ["the (0)", "the (1)"]
    assert "entropy %{customdata[1]}" in fig.data[1].hovertemplate
    with pytest.raises(ValueError, match="entropy"):
        paired_bars([("A", np.array([0.1]), ["0.1"], "red")], ["a", "b"], quantity="entropy", x_title="",
                    y_title="", y_max=1.0)
