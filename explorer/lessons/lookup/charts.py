"""Figures of the "attention as a soft lookup" page (pure: arrays in, ``go.Figure`` out).

Labels come from the learner's table and are escaped with ``escape_label``.
The heat maps of this page use :func:`explorer.shell.charts.heatmap` directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell.charts import escape_label
from explorer.shell.textviews import fmt

SOFT_COLOR = "#3b78c2"  # attention (soft lookup)
HARD_COLOR = "#e07b00"  # database (hard lookup)
QUERY_COLOR = "#c0392b"
KEY_COLOR = "#7f8c8d"
# One colour per table row in the sharpness dial (MAX_ROWS = 12), none of them red: red marks the learner's s.
ROW_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#bcbd22", "#7f7f7f",
              "#e377c2", "#aec7e8", "#98df8a", "#c5b0d5")
MARKER_MIN, MARKER_MAX = 6.0, 60.0


def marker_sizes(weights) -> np.ndarray:
    """Marker diameters for weights in ``[0, 1]``: the marker's *area* grows with the weight."""
    w = np.clip(np.asarray(weights, dtype=float), 0.0, 1.0)
    return MARKER_MIN + (MARKER_MAX - MARKER_MIN) * np.sqrt(w)


def _square_range(points: np.ndarray, pad: float = 0.4) -> list[float]:
    top = float(np.abs(points).max()) if points.size else 1.0
    top = max(top, 1.0) * (1 + pad)
    return [-top, top]


def keys_plane(
    keys, key_labels: Sequence[str], query, weights, chosen: Sequence[int], *, height: int = 480,
) -> go.Figure:
    """The keys as points in the plane, the query as an arrow from the origin.

    Each key's marker is sized by its attention weight and labelled ``name`` and
    ``weight``; the key(s) the database picks get an orange ring.

    Args:
        keys: ``[m, 2]``. key_labels: ``m`` names (escaped here). query: ``[2]``.
        weights: ``[m]`` attention weights. chosen: row indices of the hard lookup.

    Raises:
        ValueError: keys are not ``[m, 2]`` or the lengths do not match.
    """
    K = np.asarray(keys, dtype=float)
    q = np.asarray(query, dtype=float)
    w = np.asarray(weights, dtype=float)
    if K.ndim != 2 or K.shape[1] != 2 or len(key_labels) != K.shape[0] or w.shape != (K.shape[0],):
        raise ValueError(f"keys must be [m, 2] with m labels and m weights, got {K.shape}, "
                         f"{len(key_labels)} labels, weights {w.shape}")
    names = [escape_label(s) for s in key_labels]
    scores = K @ q
    fig = go.Figure()
    # Keys are vectors too: faint lines from the origin, so q · k reads as "same direction, long".
    xs, ys = [], []
    for x, y in K:
        xs += [0.0, x, None]
        ys += [0.0, y, None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="rgba(127,140,141,0.35)", width=1),
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=K[:, 0], y=K[:, 1], mode="markers+text", name="keys (size = weight)",
        marker=dict(size=marker_sizes(w), color=SOFT_COLOR, opacity=0.55, line=dict(color=SOFT_COLOR, width=1)),
        text=[f"{n}<br>{fmt(v, 3)}" for n, v in zip(names, w, strict=True)], textposition="top center",
        customdata=np.array([[n, fmt(x, 2), fmt(y, 2), fmt(s, 3), fmt(v, 4)]
                             for n, (x, y), s, v in zip(names, K, scores, w, strict=True)], dtype=object),
        hovertemplate="key %{customdata[0]} = (%{customdata[1]}, %{customdata[2]})<br>"
                      "q · k = %{customdata[3]}<br>weight %{customdata[4]}<extra></extra>",
    ))
    chosen = list(chosen)
    if chosen:
        fig.add_trace(go.Scatter(
            x=K[chosen, 0], y=K[chosen, 1], mode="markers", name="database's pick",
            marker=dict(size=MARKER_MAX + 10, color="rgba(0,0,0,0)", line=dict(color=HARD_COLOR, width=3)),
            hoverinfo="skip",
        ))
    fig.add_trace(go.Scatter(
        x=[q[0]], y=[q[1]], mode="markers", name="query", marker=dict(size=9, color=QUERY_COLOR, symbol="x"),
        hovertemplate=f"query q = ({fmt(q[0], 2)}, {fmt(q[1], 2)})<extra></extra>",
    ))
    if np.any(q != 0):
        fig.add_annotation(x=q[0], y=q[1], ax=0, ay=0, xref="x", yref="y", axref="x", ayref="y", text="",
                           showarrow=True, arrowhead=3, arrowsize=1.4, arrowwidth=2.5, arrowcolor=QUERY_COLOR)
    fig.add_annotation(x=q[0], y=q[1], text="query", showarrow=False, yshift=-16,
                       font=dict(color=QUERY_COLOR))
    rng = _square_range(np.vstack([K, q[None, :]]))
    fig.update_xaxes(range=rng, zeroline=True, title_text="dimension 1", constrain="domain")
    fig.update_yaxes(range=rng, zeroline=True, title_text="dimension 2", scaleanchor="x", scaleratio=1)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def weights_compare(soft, hard, row_labels: Sequence[str], *, height: int = 340) -> go.Figure:
    """Attention's weights next to the database's, one pair of bars per table row.

    Args:
        soft: ``[m]`` attention weights. hard: ``[m]`` one-hot (or evenly split) weights.
        row_labels: ``m`` labels such as ``"France → Paris"`` (escaped here).
    """
    s = np.asarray(soft, dtype=float)
    h = np.asarray(hard, dtype=float)
    if s.ndim != 1 or s.shape != h.shape or len(row_labels) != s.shape[0]:
        raise ValueError(f"soft and hard must be [m] with m labels, got {s.shape}, {h.shape}, {len(row_labels)}")
    names = [escape_label(x) for x in row_labels]
    x = list(range(len(s)))
    fig = go.Figure()
    for w, name, color in ((s, "attention (soft)", SOFT_COLOR), (h, "database (hard)", HARD_COLOR)):
        fig.add_trace(go.Bar(
            x=x, y=w, name=name, marker_color=color, textposition="outside", cliponaxis=False,
            text=[fmt(v, 3) if (v > 0 or color == SOFT_COLOR) else "" for v in w],
            customdata=np.array([[n, fmt(v, 4)] for n, v in zip(names, w, strict=True)], dtype=object),
            hovertemplate=f"{name}: %{{customdata[0]}}: weight %{{customdata[1]}}<extra></extra>",
        ))
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=names, title_text="row (key → value)", tickangle=-35,
                     automargin=True)
    fig.update_yaxes(range=[0, 1.12], title_text="weight")
    fig.update_layout(barmode="group", height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def values_plane(
    values, value_labels: Sequence[str], weights, blend, hard_value, *, axis_titles: tuple[str, str] = ("v1", "v2"),
    height: int = 480,
) -> go.Figure:
    """The values as points, with what each lookup hands over: the blend (star) and the database's value.

    Markers are sized by the weight each value receives. The blend is always
    inside the values' convex hull: a weighted average.

    Args:
        values: ``[m, 2]``. value_labels: ``m`` names (escaped here). weights: ``[m]``.
        blend: ``[2]`` attention's output. hard_value: ``[2]`` the database's output.
    """
    V = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    b = np.asarray(blend, dtype=float)
    h = np.asarray(hard_value, dtype=float)
    if V.ndim != 2 or V.shape[1] != 2 or len(value_labels) != V.shape[0] or w.shape != (V.shape[0],):
        raise ValueError(f"values must be [m, 2] with m labels and m weights, got {V.shape}, "
                         f"{len(value_labels)} labels, weights {w.shape}")
    names = [escape_label(s) for s in value_labels]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=V[:, 0], y=V[:, 1], mode="markers+text", name="values (size = weight)",
        marker=dict(size=marker_sizes(w), color=SOFT_COLOR, opacity=0.45, line=dict(color=SOFT_COLOR, width=1)),
        text=names, textposition="top center",
        customdata=np.array([[n, fmt(x, 2), fmt(y, 2), fmt(v, 4)] for n, (x, y), v in zip(names, V, w, strict=True)],
                            dtype=object),
        hovertemplate="value %{customdata[0]} = (%{customdata[1]}, %{customdata[2]})<br>"
                      "weight %{customdata[3]}<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[h[0]], y=[h[1]], mode="markers", name="database hands over",
        marker=dict(size=18, symbol="diamond-open", color=HARD_COLOR, line=dict(width=3)),
        hovertemplate=f"database: ({fmt(h[0], 2)}, {fmt(h[1], 2)})<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[b[0]], y=[b[1]], mode="markers", name="attention hands over (blend)",
        marker=dict(size=16, symbol="star", color=QUERY_COLOR, line=dict(color="white", width=1)),
        hovertemplate=f"attention's blend: ({fmt(b[0], 2)}, {fmt(b[1], 2)})<extra></extra>",
    ))
    fig.update_xaxes(title_text=axis_titles[0])
    fig.update_yaxes(title_text=axis_titles[1])
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def sharpness_dial(
    sharpnesses, weights, row_labels: Sequence[str], *, current: float, lesson: float, gap=None,
    height: int = 400,
) -> go.Figure:
    """Each row's weight as the sharpness grows (log axis), with the current and the lesson's sharpness.

    Sharpness 0 cannot sit on a log axis: the curves start at the grid's smallest
    positive value, where the weights are already all but uniform (``1/m``).

    Args:
        sharpnesses: ``[s]`` (0 allowed; dropped from the picture). weights: ``[s, m]``.
        row_labels: ``m`` labels (escaped here; at most ``len(ROW_COLORS)`` colours, then
            they repeat). current: the page's sharpness (a red line when > 0; at 0 a red
            arrow to the left edge). lesson: ``1/sqrt(d_k)`` (a dashed line).
        gap: optional ``[s]`` distance from the blend to the database's value
            (dotted, on a second axis).
    """
    s = np.asarray(sharpnesses, dtype=float)
    W = np.asarray(weights, dtype=float)
    if W.ndim != 2 or W.shape[0] != s.shape[0] or W.shape[1] != len(row_labels):
        raise ValueError(f"weights must be [s, m] with s = {s.shape[0]} and m = {len(row_labels)}, got {W.shape}")
    keep = s > 0
    s, W = s[keep], W[keep]
    names = [escape_label(x) for x in row_labels]
    fig = go.Figure()
    for j, name in enumerate(names):
        fig.add_trace(go.Scatter(
            x=s, y=W[:, j], mode="lines", name=name, line=dict(color=ROW_COLORS[j % len(ROW_COLORS)]),
            hovertemplate=f"{name}<br>sharpness %{{x:.3g}}: weight %{{y:.4f}}<extra></extra>",
        ))
    if gap is not None:
        g = np.asarray(gap, dtype=float)[keep]
        fig.add_trace(go.Scatter(
            x=s, y=g, mode="lines", name="distance blend ↔ database value", yaxis="y2",
            line=dict(color="black", dash="dot", width=1.5),
            hovertemplate="sharpness %{x:.3g}: |blend − database value| = %{y:.4g}<extra></extra>",
        ))
        fig.update_layout(yaxis2=dict(title=dict(text="distance blend ↔ database value"), overlaying="y",
                                      side="right", rangemode="tozero", showgrid=False))
    fig.add_vline(x=lesson, line=dict(color="#555", dash="dash", width=1.5))
    fig.add_annotation(x=np.log10(lesson), y=1.06, yref="y", text=f"1/√d_k = {lesson:.3g}", showarrow=False,
                       xanchor="right", xshift=-4, font=dict(size=11))  # beside its dashed line, not across it
    if current > 0:
        fig.add_vline(x=current, line=dict(color=QUERY_COLOR, width=2))
        same = np.isclose(current, lesson)
        right_half = np.log10(current) > (np.log10(s[0]) + np.log10(s[-1])) / 2 if s.size else False
        fig.add_annotation(x=np.log10(current), y=0.5, yref="y", showarrow=False,  # on the side with room
                           xanchor="right" if right_half else "left", xshift=-4 if right_half else 4,
                           text="your s = 1/√d_k" if same else f"your s = {current:.3g}",
                           font=dict(color=QUERY_COLOR, size=11), bgcolor="rgba(255,255,255,0.8)")
    else:  # s = 0 cannot sit on a log axis: point left, where the weights are uniform
        fig.add_annotation(x=0, xref="paper", y=0.5, yref="y", showarrow=True, ax=60, ay=0, arrowcolor=QUERY_COLOR,
                           arrowhead=2, xanchor="left", text="your s = 0 (left of the axis: uniform)",
                           font=dict(color=QUERY_COLOR, size=11), bgcolor="rgba(255,255,255,0.8)")
    fig.update_xaxes(type="log", title_text="sharpness (multiplier on q · k), log scale")
    fig.update_layout(yaxis=dict(range=[0, 1.12], title=dict(text="weight")), height=height,
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", yanchor="top", y=-0.25, x=0))
    return fig
