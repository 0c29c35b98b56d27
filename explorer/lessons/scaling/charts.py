"""Figures for the page "Why divide by √d_k": score histograms, saturation curves, temperature (arrays in,
``go.Figure`` out; the heat maps and weight bars come from :mod:`explorer.shell.charts`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import escape_label, weights_bar
from explorer.shell.i18n import translator
from explorer.shell.plotly_fast import axis_names, hline, subplot_layout, vline
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

RAW_COLOR = "#d1495b"  # unscaled q·k
SCALED_COLOR = "#3b78c2"  # scaled q·k / √d_k
TEMP_COLORS = ("#3b78c2", "#e07b39", "#5a9e4b", "#8e6bbf", "#888888")


def _check_hist(edges, density, name: str) -> tuple[np.ndarray, np.ndarray]:
    edges, density = np.asarray(edges, dtype=float), np.asarray(density, dtype=float)
    if edges.ndim != 1 or density.ndim != 1 or edges.shape[0] != density.shape[0] + 1:
        raise ValueError(f"{name}: edges must be [n_bins + 1] and density [n_bins], got {edges.shape}, {density.shape}")
    return edges, density


def score_histograms(
    raw_edges, raw_density, scaled_edges, scaled_density, *, d_k: int, raw_var: float, scaled_var: float,
    log_y: bool = False, height: int = 380,
) -> go.Figure:
    """Raw scores ``q·k`` and scaled scores ``q·k/√d_k`` as two overlaid density histograms (bar traces) with dotted
    ±std lines (full height).

    Args:
        raw_edges, scaled_edges: bin edges ``[n_bins + 1]`` (each histogram has its own bins).
        raw_density, scaled_density: densities ``[n_bins]`` (area 1), already binned (np.histogram).
        d_k: key width; the theory lines are drawn at ``±√d_k`` (raw) and ``±1`` (scaled).
        raw_var, scaled_var: measured variances, printed in the legend next to the theory.
        log_y: a logarithmic density axis (both bells stay visible at large ``d_k``; empty bins vanish).

    Raises:
        ValueError: edges and densities of mismatched shapes.
    """
    traces = []
    bins = _("scores in [{lo}, {hi}): density {density}").format(lo="%{customdata[0]:.3f}",
                                                                 hi="%{customdata[1]:.3f}", density="%{y:.4f}")
    for name, edges, density, color, var, theory in (
        (_("raw q·k"), *_check_hist(raw_edges, raw_density, "raw"), RAW_COLOR, raw_var, f"d_k = {d_k}"),
        (_("scaled q·k/√d_k"), *_check_hist(scaled_edges, scaled_density, "scaled"), SCALED_COLOR, scaled_var, "1"),
    ):
        centers, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
        traces.append(go.Bar(
            x=np.round(centers, 4), y=np.round(density, 6), width=np.round(widths, 4), marker_color=color,
            opacity=0.55, name=_("{name}: Var = {var} (theory {theory})").format(name=name, var=fmt(var, 3),
                                                                                 theory=theory),
            customdata=np.round(np.stack([edges[:-1], edges[1:]], axis=-1), 3),
            hovertemplate=f"{name}<br>{bins}<extra></extra>",
        ))
    shapes, notes = [], []  # set with the figure: add_shape/add_annotation/update_* calls cost 5x more
    for s, color, label in ((float(np.sqrt(d_k)), RAW_COLOR, "√d_k"), (1.0, SCALED_COLOR, "1")):
        for sign in (-1, 1):
            shapes.append(dict(type="line", x0=sign * s, x1=sign * s, y0=0, y1=1, yref="paper",
                               line=dict(color=color, dash="dot")))
        # √d_k's label above the plot, 1's just inside it: apart even where √d_k is close to 1 (a phone's narrow axis)
        notes.append(dict(x=s, y=1, yref="paper", text=f"±{label}", showarrow=False, font=dict(color=color, size=11),
                          yanchor="top" if label == "1" else "bottom", xanchor="left", xshift=3))
    yaxis = dict(title=dict(text=_("density (area 1), log scale") if log_y else _("density (area 1)")))
    if log_y:
        yaxis.update(type="log", exponentformat="power")
    return go.Figure(data=traces, layout=dict(
        shapes=shapes, annotations=notes,
        barmode="overlay", bargap=0, height=height, margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.08, x=0),
        xaxis=dict(title=dict(text=_("score"))), yaxis=yaxis, separators=i18n.plotly_separators(),
    ))


def saturation_curves(
    d_k: Sequence[int], panels: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, current_d_k: int,
    yranges: Mapping[str, tuple[float, float]] | None = None, panel_height: int = 190,
) -> go.Figure:
    """Curves over ``d_k`` (log x axis), unscaled vs scaled, one panel per statistic, one panel per row
    (``panel_height`` px each): side by side, a phone's narrow panels ran titles and ticks together.

    Args:
        d_k: the x values ``[m]`` (positive ints, e.g. 1, 2, 4, …, 1024).
        panels: ``{panel title: (unscaled [m], scaled [m])}``, in display order (one subplot each; one legend).
        current_d_k: marked with a vertical dashed line in every panel. yranges: optional y range per panel title.

    Raises:
        ValueError: an empty ``panels``, or a series whose length differs from ``d_k``.
    """
    x = np.asarray(d_k, dtype=float)
    if not panels:
        raise ValueError("panels must hold at least one statistic")
    titles = list(panels)
    # What make_subplots and the update_*/add_* calls would make, as one layout dict for one constructor call
    # (those calls took about 30 ms for this figure; the subplot skeleton is built once per set of titles).
    n = len(titles)
    layout = subplot_layout(n, 1, subplot_titles=[escape_label(t) for t in titles], vertical_spacing=0.5 / n)
    ticks = x[::2] if x.shape[0] > 6 else x  # every other power of two: readable on a phone
    traces, shapes = [], []
    for col, title in enumerate(titles, start=1):
        unscaled, scaled = (np.asarray(v, dtype=float) for v in panels[title])
        if unscaled.shape != x.shape or scaled.shape != x.shape:
            raise ValueError(f"{title}: series must be [{x.shape[0]}] like d_k, got {unscaled.shape}, {scaled.shape}")
        xa, ya = axis_names(col)
        series = (("unscaled", _("unscaled"), unscaled, RAW_COLOR, "solid"),
                  ("scaled", _("scaled"), scaled, SCALED_COLOR, "dash"))
        for group, name, y, color, dash in series:
            traces.append(go.Scatter(
                x=x, y=np.round(y, 6), mode="lines+markers", name=name, legendgroup=group, showlegend=col == 1,
                line=dict(color=color, dash=dash), marker=dict(size=6),
                hovertemplate=f"{name}, d_k = %{{x}}: %{{y:.4f}}<extra>{escape_label(title)}</extra>",
                xaxis=xa, yaxis=ya,
            ))
        shapes.append(vline(float(current_d_k), dict(color="#444", dash="dot", width=1), xref=xa, yref=f"{ya} domain"))
        layout[xa.replace("x", "xaxis")].update(type="log", title=dict(text="d_k"), tickvals=ticks.tolist(),
                                                ticktext=[str(int(v)) for v in ticks], tickangle=0)
        yaxis = layout[ya.replace("y", "yaxis")]
        if yranges and title in yranges:
            yaxis["range"] = list(yranges[title])
        yaxis["rangemode"] = "tozero"  # "falls towards 0" must be visible as such
    # The legend 28 px above the first panel's title, the current d_k on its own line 54 px above it (side by side
    # they overlapped on a phone in Portuguese: "pontilhado: d_k atual = 64" next to "sem escala", "com escala";
    # 48 px above, the legend's 22 px row still reached it by 2 px).
    above = 1 + 28 / (panel_height * n + 10)
    layout["annotations"].append(dict(text=_("dotted: current d_k = {d_k}").format(d_k=int(current_d_k)),
                                      xref="paper", yref="paper", x=1, y=1 + 54 / (panel_height * n + 10),
                                      showarrow=False, font=dict(size=11, color="#444"), xanchor="right",
                                      yanchor="bottom"))
    layout.update(shapes=shapes, height=panel_height * n + 96, margin=dict(l=10, r=10, t=76, b=10),
                  legend=dict(orientation="h", yanchor="bottom", y=above, x=0), separators=i18n.plotly_separators())
    return go.Figure(data=traces, layout=layout)


def query_bars(weights, key_labels: Sequence[str], *, query_label: str, scaled: bool, title: str = "",
               height: int = 300) -> go.Figure:
    """One query's weights ``[n_k]`` as bars (:func:`explorer.shell.charts.weights_bar`), coloured like the curves.

    Red for unscaled scores, blue for scaled ones. Raises ``ValueError`` like ``weights_bar``.
    """
    fig = weights_bar(weights, key_labels, query_label=query_label, title=title, height=height)
    return fig.update_traces(marker_color=SCALED_COLOR if scaled else RAW_COLOR)


def temperature_bars(weights, logits, *, temperature: float, height: int = 300) -> go.Figure:
    """``softmax(logits / T)`` ``[n]`` as bars, one per logit (labelled ``z=2.0 (0)``; hover ``key …: w``).

    Raises ``ValueError`` when ``weights`` and ``logits`` differ in length.
    """
    labels = [f"z={fmt(v, 1)} ({j})" for j, v in enumerate(np.asarray(logits, dtype=float))]
    fig = weights_bar(weights, labels, title=f"softmax(z / {temperature:g})", height=height)  # a formula: `.`
    return fig.update_xaxes(title_text=_("logit"))


def temperature_sweep(temperatures, sweep, logits, *, current: float, height: int = 320) -> go.Figure:
    """Each weight of ``softmax(logits / T)`` as a line over ``T`` (log x axis), ``current`` ``T`` marked (dashed):
    ``temperatures [t]`` positive, ``sweep [t, n]`` (row ``i`` = softmax at ``temperatures[i]``), ``logits [n]`` (the
    lines' labels). ``ValueError`` for shapes that do not match."""
    temps, w, z = (np.asarray(a, dtype=float) for a in (temperatures, sweep, logits))
    if w.ndim != 2 or w.shape != (temps.shape[0], z.shape[0]):
        raise ValueError(f"sweep must be [{temps.shape[0]}, {z.shape[0]}], got {w.shape}")
    traces = [go.Scatter(
        x=temps, y=np.round(w[:, j], 6), mode="lines+markers", name=_("logit {z} ({j})").format(z=fmt(zj, 1), j=j),
        line=dict(color=TEMP_COLORS[j % len(TEMP_COLORS)]), marker=dict(size=5),
        hovertemplate=_("logit {z} ({j}), T = {t}: weight {w}").format(z=fmt(zj, 1), j=j, t="%{x}", w="%{y:.4f}")
        + "<extra></extra>",
    ) for j, zj in enumerate(z)]
    uniform, notes = hline(1 / len(z), dict(color="#888", dash="dot", width=1),
                           _("uniform 1/{n}").format(n=len(z)), "bottom right")
    return go.Figure(data=traces, layout=dict(  # one constructor call: add_*/update_* calls cost 5x more
        shapes=[uniform, vline(float(current), dict(color="#444", dash="dot", width=1))], annotations=notes,
        xaxis=dict(type="log", title=dict(text=_("temperature T"))),
        yaxis=dict(range=[0, 1.05], title=dict(text=_("weight"))), separators=i18n.plotly_separators(),
        height=height, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    ))
