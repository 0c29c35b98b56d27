"""Figures for the page "Watch attention learn": curves over the training steps, the probe sequence, knockouts.

Pure functions, arrays in, ``go.Figure`` out, each built in one ``go.Figure(data, layout)`` call; the attention
maps come from :func:`explorer.shell.charts.heatmap`. Every text that reaches a figure goes through
:func:`explorer.shell.charts.escape_label`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from attention import training
from explorer.lessons.training import model
from explorer.shell import i18n
from explorer.shell.charts import cell_text_font, chart_title, escape_label, heatmap, title_top
from explorer.shell.i18n import N_, translator
from explorer.shell.plotly_fast import hline, vline

HEAD_COLORS = ("#3b78c2", "#e07b39", "#5a9e4b", "#8e6bbf", "#c94f7c", "#2a9d8f", "#b08a2e", "#6c757d")
SCALED_COLOR = "#3b78c2"
UNSCALED_COLOR = "#d1495b"
REFERENCE_COLOR = "#888888"
ROLE_COLORS = ("#e9ecef", "#a5c8ec", "#3b78c2")  # filler, first copy, second copy
ROLE_NAMES = (N_("filler"), N_("first copy of the run"), N_("second copy"))  # shown translated: _(ROLE_NAMES[r])
MAX_POINTS = 1001
"""A curve keeps at most this many points (every k-th step; the last is always kept): 2001 steps of 8 curves
would send 16 000 numbers for lines a phone draws 330 px wide."""

_, _n = translator(__name__)


@dataclass(frozen=True)
class Series:
    """One curve: ``name`` (plain text), ``y`` ``[S]`` over the chart's steps (or over its own ``x``), its colour
    and line dash."""

    name: str
    y: np.ndarray
    color: str
    dash: str = "solid"
    x: np.ndarray | None = None


def thin(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """The indices of ``n`` points a chart keeps: every k-th, and the last."""
    idx = np.arange(0, n, max(1, int(np.ceil(n / max_points))))
    return idx if idx[-1] == n - 1 else np.append(idx, n - 1)


def curves(x, series: Sequence[Series], *, title: str, y_title: str,
           hlines: Sequence[tuple[float, str]] = (), vlines: Sequence[tuple[float, str]] = (),
           log_y: bool = False, y_range: tuple[float, float] | None = None,
           x_range: tuple[float, float] | None = None, height: int = 300) -> go.Figure:
    """Lines over the training steps.

    Args:
        x: ``[S]`` the steps. series: the curves (each ``[S]``, or as long as its own ``x``; names escaped here).
        hlines: ``(y, label)`` dotted reference lines (``ln vocab``, a threshold); vlines: ``(x, label)`` dashed
            vertical lines (where an induction head formed).
        log_y: a logarithmic y axis (values <= 0 are not drawn; its range follows the data). y_range: a fixed
            range of a linear axis. x_range: a fixed step range (the live view: the whole run).

    Raises:
        ValueError: a series whose length differs from ``x``.
    """
    traces = []
    for s in series:
        sx = np.asarray(x if s.x is None else s.x)
        y = np.asarray(s.y, dtype=float)
        if y.shape != sx.shape:
            raise ValueError(f"series {s.name!r} must be [{sx.shape[0]}] like its x, got {y.shape}")
        keep = thin(sx.shape[0])
        name = escape_label(s.name)
        shown = y[keep]
        if log_y:
            shown = np.maximum(shown, 1e-30)  # a log axis cannot draw 0
        traces.append(go.Scatter(
            x=sx[keep], y=np.round(shown, 6) if not log_y else shown, mode="lines", name=name,
            line=dict(color=s.color, dash=s.dash, width=2),
            hovertemplate=_("{name}<br>step {x}: {y}").format(
                name=name, x="%{x}", y=f"%{{y:.3{'e' if log_y else 'f'}}}") + "<extra></extra>",
        ))
    shapes, notes = [], []
    for y, label in hlines:
        shape, note = hline(y, dict(color=REFERENCE_COLOR, dash="dot", width=1), escape_label(label), "bottom right")
        shapes.append(shape)
        notes += note
    for xv, label in vlines:
        shapes.append(vline(xv, dict(color=REFERENCE_COLOR, dash="dash", width=1)))
        notes.append(dict(x=xv, y=1, xref="x", yref="y domain", text=escape_label(label), showarrow=False,
                          xanchor="left", yanchor="top", xshift=3, font=dict(size=11, color=REFERENCE_COLOR)))
    yaxis = dict(title=dict(text=escape_label(y_title)))
    if log_y:
        yaxis.update(type="log", exponentformat="power")
    elif y_range is not None:
        yaxis["range"] = list(y_range)
    legend = len(traces) > 1
    layout = dict(  # the legend under the plot: above it, a phone's wrapped legend ran into the title
        title=chart_title(title), height=height + 24 * ((len(traces) + 1) // 2 if legend else 0),
        margin=dict(l=10, r=10, t=title_top(title, 50), b=10), showlegend=legend,
        xaxis=dict(title=dict(text="" if legend else escape_label(_("training step"))),  # or a legend
                   **({"range": list(x_range)} if x_range else {})),
        yaxis=yaxis, shapes=shapes, annotations=notes,
        legend=dict(orientation="h", yanchor="top", y=-0.12, x=0, yref="paper"), hovermode="closest",
        separators=i18n.plotly_separators(),
    )
    return go.Figure(data=traces, layout=layout)


def probe_strip(tokens, roles, *, title: str = "") -> go.Figure:
    """The probe sequence as one row of cells: each token id printed in its cell, coloured by its role.

    Args:
        tokens: ``[n]`` token ids. roles: ``[n]`` 0 filler, 1 first copy, 2 second copy.

    Raises:
        ValueError: shapes that differ, or a role outside 0..2.
    """
    tokens, roles = np.asarray(tokens), np.asarray(roles)
    if tokens.shape != roles.shape or tokens.ndim != 1:
        raise ValueError(f"tokens and roles must both be [n], got {tokens.shape} and {roles.shape}")
    if roles.size and (roles.min() < 0 or roles.max() > 2):
        raise ValueError("roles must be 0 (filler), 1 (first copy) or 2 (second copy)")
    n = tokens.shape[0]
    scale = [[0.0, ROLE_COLORS[0]], [0.333, ROLE_COLORS[0]], [0.333, ROLE_COLORS[1]], [0.667, ROLE_COLORS[1]],
             [0.667, ROLE_COLORS[2]], [1.0, ROLE_COLORS[2]]]
    texts = [str(int(t)) for t in tokens]
    font = cell_text_font(texts, n, [], colorbar_chars=0)  # hidden on a chart too narrow for it (app.css)
    heat = go.Heatmap(
        z=[roles.tolist()], x=list(range(n)), y=[0], zmin=0, zmax=2, colorscale=scale, showscale=False,
        text=[texts], texttemplate="%{text}" if font else "", textfont=font or dict(size=11), xgap=1,
        customdata=[[_(ROLE_NAMES[int(r)]) for r in roles]],
        hovertemplate=_("position {x}: token {token} ({role})").format(x="%{x}", token="%{text}",
                                                                     role="%{customdata}") + "<extra></extra>",
    )
    layout = dict(title=chart_title(title), height=140, margin=dict(l=10, r=10, t=title_top(title), b=50),
                  yaxis=dict(visible=False), xaxis=dict(title=dict(text=_("position")), dtick=4 if n > 16 else 1),
                  separators=i18n.plotly_separators())
    return go.Figure(data=[heat], layout=layout)


def knockout_bars(labels: Sequence[str], accuracy, baseline: float, *, title: str = "") -> go.Figure:
    """The accuracy with each head (or layer) knocked out, next to the model with every head.

    Args:
        labels: what each bar knocks out (``"layer 1 head 0"``, ``"all of layer 0"``; escaped here).
        accuracy: ``[m]`` accuracies in ``[0, 1]``. baseline: the accuracy with every head (a dotted line).

    Raises:
        ValueError: ``accuracy`` not ``[len(labels)]``.
    """
    acc = np.asarray(accuracy, dtype=float)
    if acc.shape != (len(labels),):
        raise ValueError(f"accuracy must be [{len(labels)}], one per label, got {acc.shape}")
    names = [escape_label(s) for s in labels]
    bar = go.Bar(
        y=names, x=np.round(acc, 4), orientation="h",
        marker_color=[UNSCALED_COLOR if c else SCALED_COLOR for c in acc < 0.5 * baseline],
        text=[i18n.number(a, 2) for a in acc], textposition="outside", cliponaxis=False,
        hovertemplate=_("knock out {what}: accuracy {accuracy}").format(what="%{y}", accuracy="%{x:.3f}")
        + "<extra></extra>",
    )
    line = vline(baseline, dict(color=REFERENCE_COLOR, dash="dot"))
    note = dict(x=baseline, y=1, yref="y domain", xref="x", showarrow=False,
                text=_("every head: {accuracy}").format(accuracy=i18n.number(baseline, 2)),
                xanchor="right", yanchor="bottom", font=dict(size=11, color=REFERENCE_COLOR))
    layout = dict(
        title=chart_title(title), height=90 + 28 * len(names),
        margin=dict(l=10, r=30, t=title_top(title, 60) if title else 30, b=10),
        xaxis=dict(range=[0, 1.1], title=dict(text=_("accuracy with it knocked out"))),
        yaxis=dict(autorange="reversed", automargin=True), shapes=[line], annotations=[note],
        separators=i18n.plotly_separators(),
    )
    return go.Figure(data=[bar], layout=layout)


def head_scores_grid(values, *, title: str) -> go.Figure:
    """A ``[n_layers, n_heads]`` grid of one score (the real model's heads), layer 0 on top: the shell's
    :func:`explorer.shell.charts.heatmap` with this lesson's words.

    Raises:
        ValueError: ``values`` not 2-D.
    """
    z = np.asarray(values, dtype=float)
    return heatmap(z, [str(i) for i in range(z.shape[0])], [str(h) for h in range(z.shape[-1])], title=title,
                   row_name=_("layer"), col_name=_("head"), colorbar_title=_("score"), show_text=False,
                   height=80 + 14 * z.shape[0])


def live_figure(spec: model.RunSpec, p: model.Progress, name: str) -> go.Figure:
    """The live view of a training run: loss (nats, left) and best prefix-match and accuracy so far."""
    return curves(
        p.step, [Series(_("loss ÷ ln vocab"), p.loss / math.log(spec.vocab), REFERENCE_COLOR),
                 Series(_("best prefix-match"), p.prefix_match, HEAD_COLORS[0]),
                 Series(_("accuracy"), p.accuracy, HEAD_COLORS[2], "dot")],
        title=_("{name}: step {step} of {steps}").format(name=name, step=p.done_steps, steps=spec.steps),
        y_title="", y_range=(0, 1.6), x_range=(0, spec.steps),
        hlines=[(training.EMERGENCE_THRESHOLD, _("prefix-match {threshold}").format(threshold=model.threshold()))])


def head_series(values: np.ndarray, layers: Sequence[int], what: str) -> list[Series]:
    """One curve per head of ``layers`` of ``values [S, L, H]``, named ``"{what} L{layer}H{head}"``."""
    H = values.shape[2]
    out = []
    for layer in layers:
        for head in range(H):
            color = HEAD_COLORS[(layer * H + head) % len(HEAD_COLORS)]
            out.append(Series(f"{what} L{layer}H{head}", values[:, layer, head], color,
                              "solid" if layer >= 1 else "dot"))
    return out
