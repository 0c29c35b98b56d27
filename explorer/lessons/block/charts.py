"""Figures of the transformer-block lesson (arrays in, Plotly figures out): the stream and the writes block by block,
one block's heads, the loss at each position."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import chart_title, escape_label, title_top
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

ATTENTION, MLP, STREAM = "#3b78c2", "#e07b39", "#444444"


def _layout(title: str, x_title: str, y_title: str, height: int, **extra) -> dict:
    """A chart's layout: the legend under the x axis (a phone's width keeps it off the title), 8 px more above the
    plot than a title needs (the top tick's label reaches above the plot: it overlapped a title of two lines)."""
    return dict(title=chart_title(title), height=height, margin=dict(l=10, r=10, t=title_top(title, 48), b=10),
                xaxis=dict(title=dict(text=x_title)), yaxis=dict(title=dict(text=y_title), rangemode="tozero"),
                legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0),
                separators=i18n.plotly_separators()) | extra


def stream_figure(stream_norms, attention_norms, mlp_norms, *, height: int = 400) -> go.Figure:
    """``‖x_l‖`` entering each block (a line, ``[n_layers + 1]``: the last is before the final norm) and each block's
    two writes (bars, ``[n_layers]``).

    Raises:
        ValueError: the lengths do not match.
    """
    s, a, m = (np.asarray(v, dtype=float) for v in (stream_norms, attention_norms, mlp_norms))
    n = len(a)
    if s.shape != (n + 1,) or m.shape != (n,):
        raise ValueError(f"need n_layers + 1 stream norms and n_layers writes, got {s.shape}, {a.shape}, {m.shape}")
    blocks = list(range(n))

    def bars(name: str, values: np.ndarray, color: str) -> go.Bar:
        return go.Bar(x=blocks, y=values, name=name, marker_color=color, customdata=[fmt(v, 2) for v in values],
                      hovertemplate=_("block {block}: {part} writes ‖·‖ = {value}").format(
                          block="%{x}", part=name, value="%{customdata}") + "<extra></extra>")

    line = go.Scatter(x=list(range(n + 1)), y=s, name=_("‖x‖ entering the block"), mode="lines+markers",
                      line=dict(color=STREAM), customdata=[fmt(v, 2) for v in s],
                      hovertemplate=_("stream entering block {block}: ‖x‖ = {value}").format(
                          block="%{x}", value="%{customdata}") + " " + _("(block {n}: before the final norm)").format(
                          n=n) + "<extra></extra>")
    return go.Figure(data=[bars(_("attention"), a, ATTENTION), bars(_("MLP"), m, MLP), line], layout=_layout(
        _("the last token's stream, block by block"), _("block"), _("norm ‖·‖"), height, barmode="group"))


def heads_figure(head_norms, total: float, layer: int, *, height: int = 300) -> go.Figure:
    """Each head's part of one block's attention write (``‖o_h W_o[h]‖``, ``[n_heads]``) and the norm of their sum
    (a dashed line: parts can cancel, so it is at most the sum of the parts)."""
    h = np.asarray(head_norms, dtype=float)
    bar = go.Bar(x=list(range(len(h))), y=h, marker_color=ATTENTION, customdata=[fmt(v, 3) for v in h],
                 hovertemplate=_("head {head}: ‖o_h W_o[h]‖ = {value}").format(head="%{x}", value="%{customdata}")
                 + "<extra></extra>", name=_("one head's part"))
    line = dict(type="line", xref="paper", x0=0, x1=1, y0=total, y1=total, line=dict(dash="dash", color=STREAM))
    note = dict(xref="paper", x=1, y=total, yanchor="bottom", xanchor="right", showarrow=False,
                text=escape_label(_("‖sum‖ = {value}").format(value=fmt(total, 3))))
    return go.Figure(data=[bar], layout=_layout(_("block {layer}: each head's part of the attention write").format(
        layer=layer), _("head"), _("norm ‖·‖"), height, shapes=[line], annotations=[note],
        yaxis=dict(title=dict(text=_("norm ‖·‖")), range=[0, 1.15 * max(total, float(h.max(initial=0)))])))


def loss_figure(losses, labels: Sequence[str], *, height: int = 320) -> go.Figure:
    """The loss ``-ln p`` of each actual next token (``[n - 1]``), one bar per position; ``labels``: the token each
    bar predicts (escaped here).

    Raises:
        ValueError: one label per loss is needed.
    """
    v = np.asarray(losses, dtype=float)
    if v.ndim != 1 or len(labels) != len(v):
        raise ValueError(f"need one label per loss, got {len(labels)} and {v.shape}")
    ticks = [escape_label(t) for t in labels]
    bar = go.Bar(x=list(range(len(v))), y=v, marker_color=MLP,
                 customdata=[[t, fmt(x, 3), fmt(float(np.exp(-x)), 4)] for t, x in zip(ticks, v, strict=True)],
                 hovertemplate=_("next token {token}: loss {loss}, p = {p}").format(
                     token="%{customdata[0]}", loss="%{customdata[1]}", p="%{customdata[2]}") + "<extra></extra>")
    return go.Figure(data=[bar], layout=_layout(
        _("loss on each actual next token"), _("the token to predict"), _("−ln p (nats)"), height,
        xaxis=dict(tickmode="array", tickvals=list(range(len(v))), ticktext=ticks,
                   title=dict(text=_("the token to predict")))))
