"""Unit tests of the shared heat map (explorer/shell/charts/heatmaps.py; no Streamlit)."""

import json

import numpy as np
import pytest

from explorer.shell.charts import COLORBAR_AT, escape_label, heatmap, heatmap_margin
from explorer.shell.charts.geometry import (
    AXIS_PAD_PX,
    CELL_TEXT_MAX,
    COLORBAR_BELOW_PX,
    CROSS_MAX,
    GAP_MAX,
    UPRIGHT_X_PX,
    label_px,
    plotly_tick_step,
)
from explorer.shell.charts.heatmaps import HOVER_CELL_MAX

TOKENS = ["The (0)", "cat (1)", "sat (2)", "on (3)", "the (4)", "mat (5)"]


def test_top_left_cell_is_query0_key0():
    z = np.zeros((6, 6))
    z[0, 0] = 1.0
    z[0, 4] = 0.5  # query 0 -> key 4: off the diagonal, so a transposed map (keys down) is caught too
    fig = heatmap(z, TOKENS, TOKENS)
    trace = fig.data[0]
    assert fig.layout.yaxis.autorange == "reversed"  # row 0 drawn at the top
    assert trace.z[0][0] == 1.0 and trace.x[0] == 0 and trace.y[0] == 0
    assert trace.z[0][4] == 0.5 and trace.z[4][0] == 0.0  # rows are queries, columns keys
    assert trace.customdata[0][0][0] == "The (0)" and trace.customdata[0][0][1] == "The (0)"
    assert list(trace.customdata[0][4][:2]) == ["The (0)", "the (4)"]  # hover: query of the row, key of the column
    assert "query %{customdata[0]} → key %{customdata[1]}" in trace.hovertemplate


def test_repeated_tokens_give_distinct_rows():
    labels = ["the", "the", "the"]
    fig = heatmap(np.eye(3), labels, labels)
    assert list(fig.data[0].y) == [0, 1, 2]  # by position, never merged categories
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2]
    assert list(fig.layout.yaxis.ticktext) == labels


@pytest.mark.parametrize("token", ["<b>bold</b>", "<img src=x onerror=alert(1)>", '"quotes" & amps'])
def test_labels_are_escaped_everywhere(token):
    fig = heatmap(np.ones((2, 2)) / 2, [token, "x"], [token, "x"], title=token)
    dumped = json.dumps(json.loads(fig.to_json()), ensure_ascii=False)
    assert "<b>" not in dumped and "<img" not in dumped
    assert escape_label(token) in fig.layout.xaxis.ticktext
    assert fig.data[0].customdata[0][0][0] == escape_label(token)


def test_weights_scale_fixed_and_scores_diverging():
    w = heatmap(np.full((2, 2), 0.5), ["a", "b"], ["a", "b"])
    assert (w.data[0].zmin, w.data[0].zmax) == (0.0, 1.0)
    s = heatmap(np.array([[-3.0, 1.0], [2.0, 0.0]]), ["a", "b"], ["a", "b"], kind="diverging")
    assert s.data[0].zmid == 0.0 and (s.data[0].zmin, s.data[0].zmax) == (-3.0, 3.0)


def test_masked_cells_are_gaps_with_masked_hover_and_no_nan_text():
    mask = np.tri(3, dtype=bool)
    fig = heatmap(np.tri(3) / 3, ["a", "b", "c"], ["a", "b", "c"], mask=mask)
    trace = fig.data[0]
    assert trace.z[0][2] is None and trace.customdata[0][2][2] == "masked"
    assert "nan" not in json.dumps(json.loads(fig.to_json()), ensure_ascii=False).lower()
    assert len(fig.data) == 2 and list(fig.data[1].text) == ["×"] * 3  # the × marks


def test_cell_text_only_while_readable():
    """Issue 18, item 13: numbers only where they fit a cell of a phone-wide map (no two touch), 12 px or 10 px."""

    def text_size(n: int, labels: list[str] | None = None):
        labels = labels or [f"t{i} ({i})" for i in range(n)]
        fig = heatmap(np.full((n, n), 0.125), labels, labels)
        return fig.data[0].textfont.size if fig.data[0].texttemplate == "%{text}" else None

    def family(n: int):
        labels = [f"t{i} ({i})" for i in range(n)]
        fig = heatmap(np.full((n, n), 0.125), labels, labels)
        return fig.data[0].textfont.family if fig.data[0].texttemplate == "%{text}" else "no text"

    assert text_size(3) == 12 and text_size(5) == 12 and family(5) is None  # fits a phone: always shown
    # 6 columns of "0.125" do not fit a phone's plot: drawn for a chart at least 480 px wide (app.css hides them
    # below that width), 24 columns only on a chart 1000 px wide (a desktop's full-width map), more never.
    assert family(6).startswith("cells-min-480,") and family(12).startswith("cells-min-640,")
    assert family(24).startswith("cells-min-1000,") and family(CELL_TEXT_MAX + 1) == "no text"
    assert heatmap(np.zeros((3, 3)), list("abc"), list("abc"), show_text=False).data[0].texttemplate is None


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="labels"):
        heatmap(np.zeros((2, 3)), ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="2-D"):
        heatmap(np.zeros(3), ["a"], ["a"])
    with pytest.raises(ValueError, match="kind must be one of"):
        heatmap(np.zeros((2, 2)), ["a", "b"], ["a", "b"], kind="log")


def test_large_maps_are_rounded_small_maps_exact():
    rng = np.random.default_rng(0)
    small = rng.normal(size=(6, 6))
    assert heatmap(small, list("abcdef"), list("abcdef"), kind="diverging").data[0].z[0][0] == small[0, 0]
    big = rng.normal(size=(200, 200))
    labels = [str(i) for i in range(200)]
    z = np.array(heatmap(big, labels, labels, kind="diverging").data[0].z, dtype=float)
    np.testing.assert_allclose(z, big, rtol=1e-3)
    assert all(len(repr(float(v))) <= 10 for v in z.ravel()[:100])


def test_every_token_is_labelled_while_a_phone_holds_the_labels_and_narrow_maps_thin_their_columns():
    """Issue 18, items 10 and 13: at 34 tokens the labels overlapped. Every token is labelled while a phone's map
    holds the labels; past that the key axis lets Plotly pick ticks for the chart's real width (more on a desktop
    than on a phone), each named by its token (``labelalias``); the query axis, as tall on every screen, keeps as
    many as its height holds (about 20 px apart), the first and the last always (issue 18, item 8)."""
    labels = [f"t{i} ({i})" for i in range(34)]
    six = heatmap(np.zeros((6, 6)), labels[:6], labels[:6])
    assert list(six.layout.xaxis.ticktext) == labels[:6] and list(six.layout.yaxis.ticktext) == labels[:6]
    fig = heatmap(np.zeros((34, 34)), labels, labels)
    x, y = fig.layout.xaxis, fig.layout.yaxis
    assert x.tickmode == "auto" and x.ticktext is None and x.tick0 == 0
    assert {k: v for k, v in x.labelalias.items() if v} == {str(i): label for i, label in enumerate(labels)}
    assert y.ticktext[0] == labels[0] and y.ticktext[-1] == labels[-1] and len(y.ticktext) < 34
    escaped = heatmap(np.zeros((34, 34)), ["<b>x</b>"] * 34, ["<b>x</b>"] * 34)
    assert set(escaped.layout.xaxis.labelalias.values()) - {""} == {"&lt;b&gt;x&lt;/b&gt;"}  # labels are text
    dims = [f"dim {j}" for j in range(128)]
    narrow = heatmap(np.zeros((6, 128)), labels[:6], dims, col_name="dim", max_xticks=12)
    assert narrow.layout.xaxis.labelalias["0"] == "dim 0" and narrow.layout.xaxis.labelalias["127"] == "dim 127"
    assert narrow.data[0].xgap == 0  # no white gaps between 128 thin columns


@pytest.mark.parametrize("n", [6, 34])
def test_heatmap_labels_the_last_key(n):
    """Issue 18, item 8 (the causal mask maps: ``tests/lessons/causal/test_charts.py``)."""
    labels = [f"w ({i})" for i in range(n)]
    fig = heatmap(np.eye(n), labels, labels, max_xticks=8)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        if axis.tickmode == "auto":  # Plotly picks the key ticks for the chart's width; each names its token
            assert axis.labelalias[str(n - 1)] == labels[-1] and n > 6
            continue
        assert axis.ticktext[0] == labels[0] and axis.ticktext[-1] == labels[-1]
        assert axis.tickvals[-1] == n - 1
    # Rotated labels hang to the left of their tick, so the last one stays inside the figure (Plotly hides
    # a tick label that runs past the figure's right edge).
    assert all(a <= 0 for a in fig.layout.xaxis.autotickangles)


def test_one_size_rule_for_hover_gaps_and_crosses():
    """Above HOVER_CELL_MAX cells a map is light (position hover, rounded values, no text); long axes lose their
    gaps, big masked maps their × marks (the grey gap stays)."""
    n = 65
    assert (n - 1) ** 2 <= HOVER_CELL_MAX < n * n  # 64 tokens (the app's most) keep token labels in the hover
    w = np.random.default_rng(1).dirichlet(np.ones(n), size=n)  # [n, n], rows sum to 1
    labels = [f"t{i} ({i})" for i in range(n)]
    mask = np.tri(n, dtype=bool)
    light = heatmap(w, labels, labels, mask=mask, show_text=True)
    (trace,) = light.data  # no × trace
    assert trace.customdata is None and trace.text is None and trace.texttemplate is None
    assert trace.hovertemplate == "query %{y} → key %{x}: %{z:.3f}<extra></extra>"
    assert trace.z[0][5] is None and trace.z[5][0] == np.round(w[5, 0], 3)  # weights: the hover's 3 decimals
    assert (trace.xgap, trace.ygap) == (0, 0) and light.layout.plot_bgcolor is not None
    dims = heatmap(w[:3], labels[:3], [f"dim {j}" for j in range(n)], kind="diverging", row_name="token",
                   col_name="dim")
    assert dims.data[0].customdata is not None  # 3 × 65 cells: every label in the hover
    assert dims.data[0].hovertemplate.startswith("token %{customdata[0]} · dim")
    rich = heatmap(w[:n - 1, :n - 1], labels[:n - 1], labels[:n - 1], mask=mask[:n - 1, :n - 1])
    assert rich.data[0].customdata is not None  # at the threshold: still rich
    assert len(light.to_json()) < len(rich.to_json()) / 3  # the light map is for payload
    for size in (GAP_MAX, GAP_MAX + 1):
        fig = heatmap(np.eye(size), labels[:size], labels[:size])
        assert fig.data[0].xgap == (1 if size <= GAP_MAX else 0) == fig.data[0].ygap
    short = [str(i) for i in range(n)]  # a × needs about 18 px: short labels leave a phone's map room for 12
    for size in (CROSS_MAX, CROSS_MAX + 1):
        fig = heatmap(np.tri(size), short[:size], short[:size], mask=mask[:size, :size])
        assert len(fig.data) == (2 if size <= CROSS_MAX else 1)
    wide = [f"a long token {i}" for i in range(12)]  # long row labels leave a phone's 12 columns too narrow for a ×
    assert len(heatmap(np.tri(12), wide, wide, mask=mask[:12, :12]).data) == 1


def test_heatmap_starts_with_margins_that_hold_its_labels_and_colour_bar():
    """Issue 20: a figure sent with margins smaller than its labels and colour bar need is laid out and drawn twice
    by Plotly's automargin. What the walkthrough's default maps need, measured in Chromium (Plotly.js 3.8, Streamlit
    theme) at 390 and 1440 px: left 98 (labels "mat (5)" 35.5 px), bottom 74 (upright keys), right 64 for a
    "value" bar at x = 1 (its 14 px title 31.5 px + pads 20 + Plotly's pad 12), 104 for "uniform 1/6" ticks."""
    rng = np.random.default_rng(0)
    fig = heatmap(rng.normal(size=(6, 6)), TOKENS, [f"dim {j}" for j in range(6)], title="X", kind="diverging",
                  row_name="token", col_name="dim").to_dict()
    m = fig["layout"]["margin"]
    assert m["l"] >= 98 and m["r"] >= 64 and m["b"] >= 74 and m["t"] == 40
    assert m["l"] <= 102 and m["r"] <= 70 and m["b"] <= 76  # a few px more at most: the map keeps its size
    assert fig["data"][0]["colorbar"]["x"] == COLORBAR_AT["x"] == 1.0  # right margin independent of the width
    weights = heatmap(np.full((6, 6), 1 / 6), TOKENS, TOKENS, color_scale="fixed").to_dict()["layout"]["margin"]
    assert 104 <= weights["r"] <= 110


def test_a_colour_bar_below_gives_a_phones_map_the_width_of_the_side_bar_back():
    """Issue 30 (phones): a real-model map of 10 tokens was 113 px wide at 390 px, the side colour bar and its
    "uniform 1/10" label taking 113 px, and labelled 2 of its keys. With the bar below (horizontal, across the
    plot, under the key axis) the right margin is the 14 px a last key label needs, the phone's map holds more key
    labels, the map keeps its height and the figure grows by the bar's strip; ``"none"`` keeps no room at all."""
    labels = ["The (0)", "␣cat (1)", "␣sat (2)", "␣on (3)", "␣the (4)", "␣mat (5)", "␣because (6)", "␣it (7)",
              "␣was (8)", "␣tired (9)"]
    w = np.tri(10) / np.tri(10).sum(axis=1, keepdims=True)
    mask = np.tri(10, dtype=bool)
    side = heatmap(w, labels, labels, mask=mask, color_scale="fixed", title="t")
    below = heatmap(w, labels, labels, mask=mask, color_scale="fixed", title="t", colorbar_at="below")
    none = heatmap(w, labels, labels, mask=mask, color_scale="fixed", title="t", colorbar_at="none")
    bar = below.data[0].colorbar
    assert side.data[0].colorbar.orientation in (None, "v") and side.layout.margin.r >= 100
    assert bar.orientation == "h" and bar.x == 0 and bar.xanchor == "left" and bar.len == 1
    assert bar.yanchor == "top" and bar.y < 0 and bar.title.text == "weight" and bar.title.side == "top"
    assert "uniform 1/10" in bar.ticktext  # the same ticks as the side bar's
    assert below.layout.margin.r == none.layout.margin.r == 14
    assert below.layout.margin.b == side.layout.margin.b + COLORBAR_BELOW_PX
    assert below.layout.height == side.layout.height + COLORBAR_BELOW_PX
    # The bar's top sits under the key labels and the axis title: the side map's bottom margin below the plot.
    plot_h = below.layout.height - below.layout.margin.t - below.layout.margin.b
    assert bar.y * plot_h == pytest.approx(-side.layout.margin.b)
    assert none.data[0].showscale is False and none.layout.margin.b == side.layout.margin.b
    # More key labels on a phone: 8 asked (Plotly's step 2, as on a desktop); the side map's phone holds 4 (step 5,
    # coarser than a desktop's 2), so it leaves Plotly its own count.
    assert below.layout.xaxis.nticks == 8 and side.layout.xaxis.nticks is None
    with pytest.raises(ValueError, match="colorbar_at"):
        heatmap(w, labels, labels, colorbar_at="left")


def test_a_bar_below_leaves_room_for_the_key_labels_a_phone_turns():
    """Issue 47: the logit lens (31 blocks, 5 tokens) at 390 px: Plotly turned the key labels, which ran into the colour
    bar's title placed for upright ones. A bar below now sits under the turned labels' margin; labels a phone keeps
    upright keep the upright margin."""
    rows = [f"block {i}" for i in range(31)]
    cols = ["The (0)", "␣capital (1)", "␣of (2)", "␣France (3)", "␣is (4)"]
    fig = heatmap(np.zeros((31, 5)), rows, cols, colorbar_at="below", height=760)
    assert fig.layout.margin.b >= label_px(cols) + AXIS_PAD_PX + COLORBAR_BELOW_PX
    short = heatmap(np.zeros((31, 3)), rows, ["a (0)", "b (1)", "c (2)"], colorbar_at="below", height=760)
    assert short.layout.margin.b == UPRIGHT_X_PX + COLORBAR_BELOW_PX


def test_plotly_picks_no_fewer_key_labels_than_a_phone_holds():
    """Issue 30 (phones): Plotly's own tick count (one per 80 px, 5 to 10) labelled 2 of a 10-token map's keys on a
    phone. The key axis asks for as many as a phone's map holds (``nticks``) where that gives the step Plotly takes
    on its widest charts, so a desktop's map keeps every label it had (9 keys: all 9 on a desktop)."""
    ten = ["The (0)", "␣cat (1)", "␣sat (2)", "␣on (3)", "␣the (4)", "␣mat (5)", "␣because (6)", "␣it (7)",
           "␣was (8)", "␣tired (9)"]  # the real model's default prompt: a phone's map holds 8 of them
    assert heatmap(np.eye(10), ten, ten, colorbar_at="below").layout.xaxis.nticks == 8
    nine = [f"a long token {i}" for i in range(9)]
    fig = heatmap(np.eye(9), nine, nine)
    assert fig.layout.xaxis.tickmode == "auto" and fig.layout.xaxis.nticks is None  # a desktop: step 1


@pytest.mark.parametrize(("n", "nticks", "step"), [(10, 5, 5), (10, 8, 2), (10, 10, 2), (10, 11, 1), (9, 10, 1),
                                                   (64, 8, 10), (38, 8, 5)])
def test_plotly_tick_step_is_plotlys(n, nticks, step):
    """Plotly.js's automatic step on a position axis [-0.5, n - 0.5], as drawn in Chromium (``_fullLayout.xaxis.dtick``
    of maps of 10 positions at 265 and 604 px with nticks unset, 8, 10 and 11: 5 (at 265 px: 5 ticks), 2, 2, 1)."""
    assert plotly_tick_step(n, nticks) == step


def test_a_map_a_phone_cannot_label_fully_asks_the_browser_to_label_its_keys_for_its_width():
    tokens = [f"<t{i}>" for i in range(29)]
    fig = heatmap(np.full((29, 29), 1 / 29), tokens, tokens)
    assert fig.layout.meta == {"fit_ticks": {"xaxis": [escape_label(t) for t in tokens]}}  # every key, escaped
    # the browser may stand any of them on end: the bottom margin holds the longest on end from the start
    assert fig.layout.margin.b >= heatmap_margin([], tokens, x_upright=False, colorbar=0, top=0)["b"]
    short = heatmap(np.full((4, 4), 0.25), list("abcd"), list("abcd"))
    assert short.layout.meta is None  # a phone holds all four: the figure's own ticks label them all
