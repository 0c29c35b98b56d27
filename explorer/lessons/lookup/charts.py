"""Figures of the "attention as a soft lookup" page (pure: arrays in, ``go.Figure`` out; the heat maps are
:func:`explorer.shell.charts.heatmap`'s). Labels come from the learner's table and are escaped with ``escape_label``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import escape_label, text_px
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt, number_list

_, _n = translator(__name__)

SOFT_COLOR = "#3b78c2"  # attention (soft lookup)
HARD_COLOR = "#e07b00"  # database (hard lookup)
QUERY_COLOR = "#c0392b"
KEY_COLOR = "#7f8c8d"
LABEL_BACKGROUND = "rgba(255,255,255,0.8)"  # behind a label that may lie on a marker or a line
# One colour per table row in the sharpness dial (MAX_ROWS = 12), none of them red: red marks the learner's s.
ROW_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#bcbd22", "#7f7f7f",
              "#e377c2", "#aec7e8", "#98df8a", "#c5b0d5")
MARKER_MIN, MARKER_MAX = 6.0, 60.0


def point_text(xs, digits: int = 2) -> str:
    """A point as text in the run's language: ``(1.73, 1.00)`` / ``(1,73; 1,00)`` (a decimal comma needs another
    separator between the coordinates)."""
    return f"({number_list(xs, digits)})"


def marker_sizes(weights) -> np.ndarray:
    """Marker diameters for weights in ``[0, 1]``: the marker's *area* grows with the weight."""
    return MARKER_MIN + (MARKER_MAX - MARKER_MIN) * np.sqrt(np.clip(np.asarray(weights, dtype=float), 0.0, 1.0))


# Where a point's label may go, in order of preference: (Plotly textposition, direction x, direction y) with
# y pointing up; the label sits just outside the marker in that direction.
LABEL_POSITIONS = (("top center", 0, 1), ("bottom center", 0, -1), ("middle right", 1, 0), ("middle left", -1, 0),
                   ("top right", 1, 1), ("top left", -1, 1), ("bottom right", 1, -1), ("bottom left", -1, -1))
# Plot areas (px) the planes are drawn in: a phone's (the smallest) and a desktop column's.
PLOT_AREAS = ((274.0, 380.0), (440.0, 380.0))
LINE_PX = 18.0  # one line of 12 px label text, as the browser measures it (with its line gap)


def _label_box(x: float, y: float, r: float, w: float, h: float, dx: int, dy: int) -> tuple[float, float, float, float]:
    """The box ``(left, bottom, right, top)`` of a ``w`` × ``h`` label put beside a marker of radius ``r`` at
    ``(x, y)``, in direction ``(dx, dy)`` (y up), as Plotly's ``textposition`` places it."""
    gap = r + 2.0
    cx = x + dx * (gap + w / 2) if dx else x
    cy = y + dy * (gap + h / 2) if dy else y
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def _overlap(a, b, pad: float = 2.0) -> float:
    """The area (px²) by which boxes ``a`` and ``b`` (left, bottom, right, top) overlap, ``pad`` px apart."""
    w = min(a[2], b[2]) - max(a[0], b[0]) + pad
    return max(w, 0.0) * max(min(a[3], b[3]) - max(a[1], b[1]) + pad, 0.0)


def place_labels(points, radii, sizes, xrange, yrange, *, square: bool, obstacles=()) -> list[int]:
    """For each point, the index in :data:`LABEL_POSITIONS` of a place for its label where it overlaps no other.

    Greedy, in the given order (the label that matters most first): each label takes the first position that
    overlaps none of the labels placed before it and stays in the plot, on every plot area of :data:`PLOT_AREAS`
    (with ``square`` both axes share one scale, as with ``scaleanchor``); when there is none, the one that overlaps
    least.

    Args:
        points: ``[m, 2]`` data coordinates. radii: ``[m]`` marker radii (px). sizes: ``m`` label sizes
            ``(width, height)`` in px. xrange, yrange: the axes' ranges. obstacles: ``(x, y, radius px)`` of
            markers no label may cover (the query, the blend).
    """
    scales = []
    for w_px, h_px in PLOT_AREAS:
        sx, sy = w_px / (xrange[1] - xrange[0]), h_px / (yrange[1] - yrange[0])
        if square:
            sx = sy = min(sx, sy)
        scales.append((sx, sy, (xrange[1] - xrange[0]) * sx, (yrange[1] - yrange[0]) * sy))
    # boxes[i][k][a]: label i at position k on plot area a
    boxes = [[[_label_box((x - xrange[0]) * sx, (y - yrange[0]) * sy, float(r), w, h, dx, dy)
               for sx, sy, _w, _h in scales] for _pos, dx, dy in LABEL_POSITIONS]
             for (x, y), r, (w, h) in zip(np.asarray(points, dtype=float), radii, sizes, strict=True)]
    areas = [(0.0, 0.0, width, height) for _sx, _sy, width, height in scales]
    blocked = [[((x - xrange[0]) * sx - r, (y - yrange[0]) * sy - r, (x - xrange[0]) * sx + r, (y - yrange[0]) * sy + r)
                for x, y, r in obstacles] for sx, sy, _w, _h in scales]

    def cost(i: int, k: int, others: dict[int, int]) -> float:
        c = 0.0
        for a, box in enumerate(boxes[i][k]):
            outside = (box[2] - box[0]) * (box[3] - box[1]) - _overlap(box, areas[a], 0)
            c += 4 * outside + sum(_overlap(box, boxes[j][kj][a]) for j, kj in others.items())
            c += sum(_overlap(box, ob, 0) for ob in blocked[a])
        return c

    chosen: dict[int, int] = {}
    for i in range(len(boxes)):  # greedy, in order: the first free position
        chosen[i] = min(range(len(LABEL_POSITIONS)), key=lambda k, i=i: (cost(i, k, chosen) > 0, cost(i, k, chosen)))
    for _round in range(3):  # then a few rounds of moving a label that still overlaps to its best place
        for i in range(len(boxes)):
            others = {j: k for j, k in chosen.items() if j != i}
            if cost(i, chosen[i], others) > 0:
                chosen[i] = min(range(len(LABEL_POSITIONS)), key=lambda k, i=i, o=others: (cost(i, k, o), k))
    return [chosen[i] for i in range(len(boxes))]


def _label_size(lines: Sequence[str]) -> tuple[float, float]:
    return max(text_px(t, 12) for t in lines) + 4, LINE_PX * len(lines)


def _padded_range(v: np.ndarray, pad: float = 0.2) -> list[float]:
    """``[min, max]`` of ``v`` widened by ``pad`` of its span on each side (1 when the span is 0)."""
    lo, hi = float(np.min(v)), float(np.max(v))
    span = hi - lo or 1.0
    return [lo - pad * span, hi + pad * span]


def _square_range(points: np.ndarray, pad: float = 0.4) -> list[float]:
    top = float(np.abs(points).max()) if points.size else 1.0
    top = max(top, 1.0) * (1 + pad)
    return [-top, top]


def keys_plane(
    keys, key_labels: Sequence[str], query, weights, chosen: Sequence[int], *, height: int = 480,
) -> go.Figure:
    """The keys as points in the plane, the query as an arrow from the origin. Each key's marker is sized by its
    attention weight and labelled ``name`` and ``weight``; the key(s) the database picks get an orange ring.

    Args:
        keys: ``[m, 2]``. key_labels: ``m`` names (escaped here). query: ``[2]``.
        weights: ``[m]`` attention weights. chosen: row indices of the hard lookup.

    Raises:
        ValueError: keys are not ``[m, 2]`` or the lengths do not match.
    """
    K, q, w = (np.asarray(a, dtype=float) for a in (keys, query, weights))
    if K.ndim != 2 or K.shape[1] != 2 or len(key_labels) != K.shape[0] or w.shape != (K.shape[0],):
        raise ValueError(f"keys must be [m, 2] with m labels and m weights, got {K.shape}, "
                         f"{len(key_labels)} labels, weights {w.shape}")
    names = [escape_label(s) for s in key_labels]
    scores = K @ q
    rng = _square_range(np.vstack([K, q[None, :]]))
    # Labels placed so none overlaps another: the query's first, then the keys' by weight (the largest first).
    order = [0] + [1 + i for i in np.argsort(-w, kind="stable")]
    pts = np.vstack([q[None, :], K])[order]
    radii = np.concatenate([[4.5], marker_sizes(w) / 2])[order]
    query_word = _("query")
    sizes = [_label_size([query_word])] + [_label_size([str(k), fmt(v, 3)]) for k, v in zip(key_labels, w, strict=True)]
    where = dict(zip(order, place_labels(pts, radii, [sizes[i] for i in order], rng, rng, square=True), strict=True))
    fig = go.Figure()
    # Keys are vectors too: faint lines from the origin, so q · k reads as "same direction, long".
    xs, ys = [], []
    for x, y in K:
        xs += [0.0, x, None]
        ys += [0.0, y, None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="rgba(127,140,141,0.35)", width=1),
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=K[:, 0], y=K[:, 1], mode="markers+text", name=_("keys (size = weight)"),
        marker=dict(size=marker_sizes(w), color=SOFT_COLOR, opacity=0.55, line=dict(color=SOFT_COLOR, width=1)),
        text=[f"{n}<br>{fmt(v, 3)}" for n, v in zip(names, w, strict=True)],
        textposition=[LABEL_POSITIONS[where[1 + i]][0] for i in range(len(names))],
        customdata=np.array([[n, point_text((x, y), 2), fmt(s, 3), fmt(v, 4)]
                             for n, (x, y), s, v in zip(names, K, scores, w, strict=True)], dtype=object),
        hovertemplate=_("key {key} = {point}<br>q · k = {score}<br>weight {weight}").format(
            key="%{customdata[0]}", point="%{customdata[1]}", score="%{customdata[2]}", weight="%{customdata[3]}")
        + "<extra></extra>",
    ))
    chosen = list(chosen)
    if chosen:
        fig.add_trace(go.Scatter(
            x=K[chosen, 0], y=K[chosen, 1], mode="markers", name=_("database's pick"),
            marker=dict(size=MARKER_MAX + 10, color="rgba(0,0,0,0)", line=dict(color=HARD_COLOR, width=3)),
            hoverinfo="skip",
        ))
    fig.add_trace(go.Scatter(
        x=[q[0]], y=[q[1]], mode="markers", name=query_word, marker=dict(size=9, color=QUERY_COLOR, symbol="x"),
        hovertemplate=_("query q = {point}").format(point=point_text(q, 2)) + "<extra></extra>",
    ))
    if np.any(q != 0):
        fig.add_annotation(x=q[0], y=q[1], ax=0, ay=0, xref="x", yref="y", axref="x", ayref="y", text="",
                           showarrow=True, arrowhead=3, arrowsize=1.4, arrowwidth=2.5, arrowcolor=QUERY_COLOR)
    _pos, dx, dy = LABEL_POSITIONS[where[0]]
    qw, qh = sizes[0]
    fig.add_annotation(x=q[0], y=q[1], text=query_word, showarrow=False, font=dict(color=QUERY_COLOR),
                       xshift=dx * (6.5 + qw / 2), yshift=dy * (6.5 + qh / 2),
                       bgcolor=LABEL_BACKGROUND)  # legible on a key's bubble (a query inside one: issue 47)
    fig.update_xaxes(range=rng, zeroline=True, title_text=_("dimension 1"), constrain="domain")
    fig.update_yaxes(range=rng, zeroline=True, title_text=_("dimension 2"), scaleanchor="x", scaleratio=1)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), separators=i18n.plotly_separators(),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def weights_compare(soft, hard, row_labels: Sequence[str], *, height: int = 340) -> go.Figure:
    """Attention's weights next to the database's, one pair of bars per table row.

    Args:
        soft: ``[m]`` attention weights. hard: ``[m]`` one-hot (or evenly split) weights.
        row_labels: ``m`` labels such as ``"France → Paris"`` (escaped here).
    """
    s, h = (np.asarray(a, dtype=float) for a in (soft, hard))
    if s.ndim != 1 or s.shape != h.shape or len(row_labels) != s.shape[0]:
        raise ValueError(f"soft and hard must be [m] with m labels, got {s.shape}, {h.shape}, {len(row_labels)}")
    names = [escape_label(x) for x in row_labels]
    x = list(range(len(s)))
    fig = go.Figure()
    for w, name, color in ((s, _("attention (soft)"), SOFT_COLOR), (h, _("database (hard)"), HARD_COLOR)):
        fig.add_trace(go.Bar(
            x=x, y=w, name=name, marker_color=color, textposition="outside", cliponaxis=False,
            text=[fmt(v, 3) if (v > 0 or color == SOFT_COLOR) else "" for v in w],
            customdata=np.array([[n, fmt(v, 4)] for n, v in zip(names, w, strict=True)], dtype=object),
            hovertemplate=_("{lookup}: {row}: weight {weight}").format(
                lookup=name, row="%{customdata[0]}", weight="%{customdata[1]}") + "<extra></extra>",
        ))
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=names, title_text=_("row (key → value)"), tickangle=-35,
                     automargin=True)
    fig.update_yaxes(range=[0, 1.12], title_text=_("weight"))
    fig.update_layout(barmode="group", height=height, margin=dict(l=10, r=10, t=30, b=10),
                      separators=i18n.plotly_separators(), legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def values_plane(
    values, value_labels: Sequence[str], weights, blend, hard_value, *, axis_titles: tuple[str, str] = ("v1", "v2"),
    height: int = 480,
) -> go.Figure:
    """The values as points (sized by the weight each receives), with what each lookup hands over: the blend (a
    star, always inside the values' convex hull: a weighted average) and the database's value.

    Args:
        values: ``[m, 2]``. value_labels: ``m`` names (escaped here). weights: ``[m]``.
        blend: ``[2]`` attention's output. hard_value: ``[2]`` the database's output.
    """
    V, w, b, h = (np.asarray(a, dtype=float) for a in (values, weights, blend, hard_value))
    if V.ndim != 2 or V.shape[1] != 2 or len(value_labels) != V.shape[0] or w.shape != (V.shape[0],):
        raise ValueError(f"values must be [m, 2] with m labels and m weights, got {V.shape}, "
                         f"{len(value_labels)} labels, weights {w.shape}")
    names = [escape_label(s) for s in value_labels]
    xr = _padded_range(np.concatenate([V[:, 0], b[:1], h[:1]]))
    yr = _padded_range(np.concatenate([V[:, 1], b[1:], h[1:]]))
    order = list(np.argsort(-w, kind="stable"))
    where = dict(zip(order, place_labels(V[order], (marker_sizes(w) / 2)[order],
                                         [_label_size([str(value_labels[i])]) for i in order], xr, yr, square=False,
                                         obstacles=[(b[0], b[1], 9.0), (h[0], h[1], 10.0)]),  # the star, the diamond
                     strict=True))
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=V[:, 0], y=V[:, 1], mode="markers+text", name=_("values (size = weight)"),
        marker=dict(size=marker_sizes(w), color=SOFT_COLOR, opacity=0.45, line=dict(color=SOFT_COLOR, width=1)),
        text=names, textposition=[LABEL_POSITIONS[where[i]][0] for i in range(len(names))],
        customdata=np.array([[n, point_text((x, y), 2), fmt(v, 4)] for n, (x, y), v in zip(names, V, w, strict=True)],
                            dtype=object),
        hovertemplate=_("value {value} = {point}<br>weight {weight}").format(
            value="%{customdata[0]}", point="%{customdata[1]}", weight="%{customdata[2]}") + "<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[h[0]], y=[h[1]], mode="markers", name=_("database hands over"),
        marker=dict(size=18, symbol="diamond-open", color=HARD_COLOR, line=dict(width=3)),
        hovertemplate=_("database: {point}").format(point=point_text(h, 2)) + "<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[b[0]], y=[b[1]], mode="markers", name=_("attention hands over (blend)"),
        marker=dict(size=16, symbol="star", color=QUERY_COLOR, line=dict(color="white", width=1)),
        hovertemplate=_("attention's blend: {point}").format(point=point_text(b, 2)) + "<extra></extra>",
    ))
    fig.update_xaxes(title_text=axis_titles[0], range=xr)
    fig.update_yaxes(title_text=axis_titles[1], range=yr)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), separators=i18n.plotly_separators(),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def sharpness_dial(
    sharpnesses, weights, row_labels: Sequence[str], *, current: float, lesson: float, gap=None,
    height: int = 400,
) -> go.Figure:
    """Each row's weight as the sharpness grows (log axis), with the current and the lesson's sharpness. Sharpness 0
    cannot sit on a log axis: the curves start at the grid's smallest positive value (weights all but ``1/m``).

    Args:
        sharpnesses: ``[s]`` (0 allowed; dropped from the picture). weights: ``[s, m]``.
        row_labels: ``m`` labels (escaped here; the ``len(ROW_COLORS)`` colours repeat). current: the page's
            sharpness (a red line when > 0; at 0 a red arrow to the left edge). lesson: ``1/sqrt(d_k)`` (dashed).
        gap: optional ``[s]`` distance from the blend to the database's value (dotted, on a second axis).
    """
    s, W = (np.asarray(a, dtype=float) for a in (sharpnesses, weights))
    if W.ndim != 2 or W.shape[0] != s.shape[0] or W.shape[1] != len(row_labels):
        raise ValueError(f"weights must be [s, m] with s = {s.shape[0]} and m = {len(row_labels)}, got {W.shape}")
    keep = s > 0
    s, W = s[keep], W[keep]
    fig = go.Figure()
    for j, name in enumerate([escape_label(x) for x in row_labels]):
        fig.add_trace(go.Scatter(
            x=s, y=W[:, j], mode="lines", name=name, line=dict(color=ROW_COLORS[j % len(ROW_COLORS)]),
            hovertemplate=name + "<br>" + _("sharpness {s}: weight {weight}").format(s="%{x:.3g}", weight="%{y:.4f}")
            + "<extra></extra>",
        ))
    if gap is not None:
        distance = _("distance blend ↔ database value")
        fig.add_trace(go.Scatter(
            x=s, y=np.asarray(gap, dtype=float)[keep], mode="lines", name=distance, yaxis="y2",
            line=dict(color="black", dash="dot", width=1.5),
            hovertemplate=_("sharpness {s}: |blend − database value| = {distance}").format(
                s="%{x:.3g}", distance="%{y:.4g}") + "<extra></extra>",
        ))
        fig.update_layout(yaxis2=dict(title=dict(text=distance), overlaying="y",
                                      side="right", rangemode="tozero", showgrid=False))
    fig.add_vline(x=lesson, line=dict(color="#555", dash="dash", width=1.5))
    # Above the plot, beside its dashed line: inside it the note lay on the distance curve's start (issue 47)
    fig.add_annotation(x=np.log10(lesson), y=1, yref="paper", yanchor="bottom", text=f"1/√d_k = {i18n.general(lesson)}",
                       showarrow=False, xanchor="right", xshift=-4, font=dict(size=11))
    if current > 0:
        fig.add_vline(x=current, line=dict(color=QUERY_COLOR, width=2))
        same = np.isclose(current, lesson)
        right_half = np.log10(current) > (np.log10(s[0]) + np.log10(s[-1])) / 2 if s.size else False
        fig.add_annotation(x=np.log10(current), y=0.5, yref="y", showarrow=False,  # on the side with room
                           xanchor="right" if right_half else "left", xshift=-4 if right_half else 4,
                           text=_("your s = 1/√d_k") if same else _("your s = {s}").format(s=i18n.general(current)),
                           font=dict(color=QUERY_COLOR, size=11), bgcolor=LABEL_BACKGROUND)
    else:  # s = 0 cannot sit on a log axis: point left, where the weights are uniform
        fig.add_annotation(x=0, xref="paper", y=0.5, yref="y", showarrow=True, ax=60, ay=0, arrowcolor=QUERY_COLOR,
                           arrowhead=2, xanchor="left", text=_("your s = 0 (left of the axis: uniform)"),
                           font=dict(color=QUERY_COLOR, size=11), bgcolor=LABEL_BACKGROUND)
    fig.update_xaxes(type="log", title_text=_("sharpness (multiplier on q · k), log scale"))
    fig.update_layout(yaxis=dict(range=[0, 1.12], title=dict(text=_("weight"))), height=height,
                      separators=i18n.plotly_separators(),
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", yanchor="top", y=-0.25, x=0))
    return fig
