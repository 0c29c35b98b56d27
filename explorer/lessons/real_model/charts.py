"""Figures of the real-model lesson: the grid of every head, the next-token bars (arrays in, Plotly out).

Same rules as :mod:`explorer.shell.charts`: the grid is a shell heat map (layers top to bottom,
placed by position), every token's text is escaped, hover labels name what a cell is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.lessons.real_model import model
from explorer.shell import head_statistics, i18n
from explorer.shell.charts import chart_title, escape_label, head_grid, heatmap, title_top
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)


def prediction_bars(labels: Sequence[str], probabilities: Sequence[float], *, title: str = "",
                    height: int = 260) -> go.Figure:
    """The top next tokens as horizontal bars, most likely on top; ``labels`` (readable pieces) are escaped.

    Raises:
        ValueError: the lengths differ.
    """
    p = np.asarray(probabilities, dtype=float)
    if p.ndim != 1 or len(labels) != len(p):
        raise ValueError(f"need one label per probability, got {len(labels)} labels and shape {p.shape}")
    ticks = [escape_label(s) for s in labels]
    bar = go.Bar(
        x=p, y=list(range(len(p))), orientation="h", marker_color="#3b78c2",
        text=[fmt(v, 3) for v in p], textposition="outside", cliponaxis=False,
        customdata=np.array([[t, fmt(v, 4)] for t, v in zip(ticks, p, strict=True)], dtype=object).reshape(-1, 2),
        hovertemplate=_("next token {token}: probability {p}").format(token="%{customdata[0]}", p="%{customdata[1]}")
        + "<extra></extra>",
    )
    layout = dict(
        title=chart_title(title) if title else None,
        xaxis=dict(range=[0, 1.12], title=dict(text=_("probability"))),
        yaxis=dict(tickmode="array", tickvals=list(range(len(p))), ticktext=ticks, autorange="reversed"),
        height=height, margin=dict(l=10, r=10, t=title_top(title), b=10),
        separators=i18n.plotly_separators(),  # the decimal mark of the run's language in ticks and hovers
    )
    return go.Figure(data=[bar], layout=layout)


def angle_map(angles, labels: Sequence[str], *, title: str = "", height: int | None = None) -> go.Figure:
    """RoPE's rotation angles ``[n, d_head/2]`` (radians) as a heat map of ``angle mod 360°`` on a cyclic scale.

    Rows are tokens (position ``p``), columns the coordinate pairs ``i``: pair ``i`` of position ``p``
    turns by ``p θ_i``. The hover gives the wrapped angle in degrees and the whole angle in radians.
    """
    angles = np.asarray(angles, dtype=float)
    degrees = np.mod(np.degrees(angles), 360.0)
    fig = heatmap(degrees, labels, [_("pair {i}").format(i=i) for i in range(angles.shape[1])], title=title,
                  row_name=_("token"), col_name=_("pair"), zrange=(0.0, 360.0), digits=1, show_text=False,
                  colorbar_title=_("degrees"),
                  max_xticks=8, height=height, light=False)
    trace = fig.data[0]
    trace.colorscale = "Twilight"  # cyclic: 359° sits next to 0°
    custom = np.array(trace.customdata, dtype=object)
    custom[..., 2] = np.vectorize(lambda d, r: f"{fmt(d, 1)}° (p·θᵢ = {i18n.general(r, 4)} rad)",
                                  otypes=[object])(degrees, angles)
    trace.customdata = custom.tolist()  # lists, not an object array (see explorer.shell.charts.heatmap)
    return fig


def grid_figure(values: np.ndarray, n: int, stat: str, layer: int, head: int, group_size: int = 1) -> go.Figure:
    """The grid of every head coloured by ``stat`` (``values [n_layers, n_heads]`` of a prompt of ``n`` tokens), the
    chosen head outlined, thin dark lines between the key/value groups of ``group_size`` query heads (none when it
    is 1), in the run's language (a widget: bound with :func:`explorer.shell.cache.figure` in ``draw.py``, the same
    object on every rerun)."""
    fig = head_grid(values, title=_("every head: {statistic}").format(statistic=head_statistics.name(stat)),
                    colorbar_title=head_statistics.unit(stat), zrange=model.color_range(stat, n),
                    outlined=[(layer, head)])
    n_layers, n_heads = np.shape(values)
    for edge in range(group_size, n_heads, group_size) if group_size > 1 else ():
        fig.add_shape(type="line", x0=edge - 0.5, x1=edge - 0.5, y0=-0.5, y1=n_layers - 0.5,
                      line=dict(color="#333333", width=2), layer="above", name="kv group")
    return fig
