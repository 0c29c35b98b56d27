"""Figures of the page "Generating with a KV cache": the cache's K and V rows, the new query's weights,
cached step vs full recomputation, and the cost curves. Pure functions: arrays in, Plotly figures out.

Same rules as :mod:`explorer.shell.charts` (its :func:`~explorer.shell.charts.heatmap` draws every heat map:
rows top to bottom, placed by position, labels escaped); the shapes added here mark the newest cache row
and where the prompt ends.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import axis_title, bar_text, chart_title, escape_label, heatmap, tick_positions, title_top
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

NEWEST_COLOR = "#d62728"  # the row this step appended
PROMPT_COLOR = "#555555"  # the line after the prompt's rows
PROMPT_BAND = "rgba(120,120,120,0.10)"  # the prompt's lengths on the cost and size charts
CACHED_COLOR = "#3b78c2"
NEW_ROW_TEXT_MAX = 10  # keys: cell values printed in the new query's weights up to this many
BAR_TEXT_MAX = 8  # keys: values printed on the cached-vs-full bars (two bars a key) up to this many
FULL_COLOR = "#e07b39"


def _row_box(n_cols: int, row: int) -> dict:
    """A rectangle around heat-map row ``row`` (shape dict)."""
    return dict(type="rect", x0=-0.5, x1=n_cols - 0.5, y0=row - 0.5, y1=row + 0.5,
                line=dict(color=NEWEST_COLOR, width=3), fillcolor="rgba(0,0,0,0)")


def cache_matrix(z, token_labels: Sequence[str], n_prompt: int, *, title: str, colorbar_title: str,
                 height: int | None = None) -> go.Figure:
    """The K or V cache of one layer and key/value head: ``z [n, d_head]``, one row per cached token.

    The newest row (the last) is outlined in red; a dashed line separates the prompt's rows from the
    generated ones (when there are generated rows). Diverging colours centred on 0, hover
    ``token ␣Paris (5) · dim 12: 0.123``.

    Raises:
        ValueError: ``z`` is not ``[len(token_labels), d]`` (from :func:`explorer.shell.charts.heatmap`).
    """
    z = np.asarray(z, dtype=float)
    n, d = z.shape if z.ndim == 2 else (0, 0)
    fig = heatmap(z, token_labels, [str(j) for j in range(d)], title=title, kind="diverging", row_name=_("token"),
                  col_name=_("dim"), colorbar_title=colorbar_title, max_xticks=8, height=height)
    shapes = [_row_box(d, n - 1)]
    if 0 < n_prompt < n:  # under the prompt's last row
        shapes.append(dict(type="line", x0=-0.5, x1=d - 0.5, y0=n_prompt - 0.5, y1=n_prompt - 0.5,
                           line=dict(color=PROMPT_COLOR, width=2, dash="dash")))
    fig.update_layout(shapes=shapes)
    return fig


def new_query_weights(weights, head_labels: Sequence[str], key_labels: Sequence[str], n_prompt: int,
                      chosen: int, *, title: str, color_scale: str = "fixed") -> go.Figure:
    """The new token's attention weights over every cached key, one row per query head of the group.

    Args:
        weights: ``[n_heads_in_group, n]`` in ``[0, 1]``, each row sums to 1.
        head_labels: one label per row (the query heads' numbers).
        key_labels: one label per cached key.
        n_prompt: the prompt's length (a dashed line after its keys, when keys follow).
        chosen: the row compared below (outlined in red).
        color_scale: the colour scale of the weights (:data:`explorer.shell.charts.COLOR_SCALES`).

    Cell values are printed up to :data:`NEW_ROW_TEXT_MAX` keys (readable on a phone); the hover has every value.
    """
    w = np.asarray(weights, dtype=float)
    n = w.shape[1] if w.ndim == 2 else 0
    # Cell text while a cell stays wide enough for "0.123" on a phone too (the map is as wide as the page).
    fig = heatmap(w, head_labels, key_labels, title=title, row_name=_("query head"), col_name=_("key"),
                  height=330, max_xticks=24, show_text=n <= NEW_ROW_TEXT_MAX,  # room for long key labels on end
                  color_scale=color_scale, colorbar_at="below")  # the keys keep the page's width (a phone)
    shapes = [_row_box(n, chosen)]
    if 0 < n_prompt < n:
        shapes.append(dict(type="line", x0=n_prompt - 0.5, x1=n_prompt - 0.5, y0=-0.5, y1=w.shape[0] - 0.5,
                           line=dict(color=PROMPT_COLOR, width=2, dash="dash")))
    fig.update_layout(shapes=shapes)
    return fig


def cached_vs_full(cached, full, key_labels: Sequence[str], *, title: str, height: int = 360) -> go.Figure:
    """The new row's attention weights from the cached step beside the same row of a full recomputation.

    Two bar series per key (``cached step``, ``full recomputation``), keys by position; hover
    ``cached step: key ␣Paris (5): 0.1234567``.

    Raises:
        ValueError: the two rows and the labels differ in length.
    """
    a, b = np.asarray(cached, dtype=float), np.asarray(full, dtype=float)
    n = len(key_labels)
    if a.shape != (n,) or b.shape != (n,):
        raise ValueError(f"cached and full must be [n] = [{n}], got {a.shape} and {b.shape}")
    ticks = [escape_label(s) for s in key_labels]
    traces = []
    for name, values, color in ((_("cached step"), a, CACHED_COLOR), (_("full recomputation"), b, FULL_COLOR)):
        custom = np.array([[t, fmt(v, 7)] for t, v in zip(ticks, values, strict=True)], dtype=object).reshape(-1, 2)
        traces.append(go.Bar(
            name=name, x=list(range(n)), y=values, marker_color=color, customdata=custom,
            hovertemplate=_("{name}: key {key}: {value}").format(name=name, key="%{customdata[0]}",
                                                                 value="%{customdata[1]}") + "<extra></extra>",
            cliponaxis=False, **(bar_text([fmt(v, 3) for v in values], n, 2) if n <= BAR_TEXT_MAX else {}),
        ))
    shown = tick_positions(n, 24)  # the first and the last key always
    layout = dict(
        barmode="group", height=height, margin=dict(l=10, r=10, t=title_top(title), b=10),
        title=chart_title(title) if title else None,
        xaxis=dict(tickmode="array", tickvals=shown, ticktext=[ticks[i] for i in shown],
                   title=dict(text=_("key (cached token)")), range=[-0.5, n - 0.5]),
        yaxis=dict(title=dict(text=_("attention weight")),
                   range=[0, min(1.0, float(max(a.max(), b.max()))) * 1.2 + 0.02]),
        legend=dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0.0),  # below: the title stays clear
        separators=i18n.plotly_separators(),
    )
    return go.Figure(data=traces, layout=layout)


PLOT_PX_LESS = 175  # a line chart's plot height is about its height less this (title, axis, legend below: measured)


def _marked_lines(ns, series: Sequence[tuple[str, np.ndarray, str, str]], n_now: int, n_prompt: int, *,
                  y_title: str, title: str, hover_unit: str, height: int) -> go.Figure:
    """Lines of ``values [len(ns)]`` against the sequence length ``ns``, the current length marked."""
    ns = np.asarray(ns)
    now = int(np.flatnonzero(ns == n_now)[0]) if (ns == n_now).any() else None
    traces = []
    for name, values, shown_unit, color in series:
        values = np.asarray(values, dtype=float)
        traces.append(go.Scatter(
            x=ns, y=values, mode="lines", name=name, line=dict(color=color, width=2),
            hovertemplate=name + "<br>" + _("{x} tokens: {y} {unit}").format(x="%{x}", y="%{y:,.4g}",
                                                                              unit=shown_unit) + "<extra></extra>",
        ))
        if now is not None:
            traces.append(go.Scatter(
                x=[n_now], y=[values[now]], mode="markers", marker=dict(color=color, size=11, line=dict(width=1)),
                showlegend=False,
                hovertemplate=_("{name}, now").format(name=name) + "<br>" + _("{x} tokens: {y} {unit}").format(
                    x="%{x}", y="%{y:,.4g}", unit=hover_unit) + "<extra></extra>",
            ))
    top = max(float(np.max(np.asarray(v, dtype=float))) for _, v, _, _ in series)
    shapes = [dict(type="line", x0=n_now, x1=n_now, y0=0, y1=top * 1.05, line=dict(color=NEWEST_COLOR, dash="dot"))]
    now_text = _n("now: {n} token", "now: {n} tokens", n_now).format(n=n_now)
    annotations = [dict(x=n_now, y=top * 1.05, text=now_text, showarrow=False, yanchor="bottom",
                        xanchor="left" if n_now <= (ns[0] + ns[-1]) / 2 else "right",
                        font=dict(color=NEWEST_COLOR))]
    if ns[0] < n_prompt < ns[-1]:
        shapes.append(dict(type="rect", x0=ns[0], x1=n_prompt, y0=0, y1=top * 1.05, line=dict(width=0),
                           fillcolor=PROMPT_BAND, layer="below"))
        # Named in the legend, not on the band: a short prompt's band is narrower than its name, which ran into the
        # "now" line and its label (issue 47: "istem" at 390 px); earlier on the y axis's "0" (issue 30)
        swatch = dict(symbol="square", size=14, color=PROMPT_BAND, line=dict(color=PROMPT_COLOR, width=1))
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=_("prompt"), hoverinfo="skip", marker=swatch))
    layout = dict(
        height=height, margin=dict(l=10, r=10, t=title_top(title), b=10),
        title=chart_title(title) if title else None,
        xaxis=dict(title=dict(text=_("tokens in the sequence (n)")), range=[ns[0] - 0.5, ns[-1] + 0.5]),
        yaxis=dict(title=axis_title(y_title, height - PLOT_PX_LESS), rangemode="tozero", range=[0, top * 1.15]),
        shapes=shapes, annotations=annotations,
        legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0.0),  # below: titles stay clear
        separators=i18n.plotly_separators(),
    )
    return go.Figure(data=traces, layout=layout)


def cost_chart(ns, with_cache, without_cache, n_now: int, n_prompt: int, *, title: str = "",
               height: int = 400) -> go.Figure:
    """Multiply-adds for the next token's logits at each sequence length ``ns``, with and without the cache
    (millions), the current length marked."""
    scale = 1e-6
    return _marked_lines(ns, [(_("with the KV cache"), np.asarray(with_cache, dtype=float) * scale, "M",
                               CACHED_COLOR),
                              (_("without: recompute all n"), np.asarray(without_cache, dtype=float) * scale, "M",
                               FULL_COLOR)],
                         n_now, n_prompt, y_title=_("million multiply-adds per new token"), title=title,
                         hover_unit="M", height=height)


def cache_size_chart(ns, gqa_bytes, mha_bytes, n_now: int, n_prompt: int, *, n_kv_heads: int, n_heads: int,
                     title: str = "", height: int = 400) -> go.Figure:
    """The cache's size at each sequence length ``ns`` (MB = 10⁶ bytes): the model's key/value heads
    (``n_kv_heads``: grouped-query, or multi-query when 1) and what ``n_heads`` key/value heads would keep (one line
    only when the model already has a key/value head per query head), the current length marked."""
    scale = 1e-6
    if n_kv_heads == n_heads:
        lines = [(_("{n} key/value heads (this model)").format(n=n_kv_heads),
                  np.asarray(gqa_bytes, dtype=float) * scale, "MB", CACHED_COLOR)]
    else:
        own = (_("{n} key/value head (this model, MQA)") if n_kv_heads == 1 else
               _("{n} key/value heads (this model, GQA)")).format(n=n_kv_heads)
        lines = [(own, np.asarray(gqa_bytes, dtype=float) * scale, "MB", CACHED_COLOR),
                 (_("{n} key/value heads (no grouping)").format(n=n_heads),
                  np.asarray(mha_bytes, dtype=float) * scale, "MB", FULL_COLOR)]
    return _marked_lines(ns, lines, n_now, n_prompt, y_title=_("KV cache size (MB, float32)"), title=title,
                         hover_unit="MB", height=height)
