"""Figures of the page "Attention sinks and smaller KV caches" (arrays in, Plotly out; no Streamlit).

The rules of :mod:`explorer.shell.charts`: heat maps through its :func:`~explorer.shell.charts.heatmap` (rows top to
bottom, placed by position, labels escaped), every label a visitor could have typed escaped, hover labels naming
what a mark is, one figure constructor call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import auto_tick_labels, bar_margin, chart_title, escape_label, heatmap, title_top
from explorer.shell.i18n import N_, translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

MEAN_COLOR, TOP_COLOR, UNIFORM_COLOR = "#3b78c2", "#d62728", "#777777"
SINK_COLORS = {0: "#d62728", 1: "#e07b39", 4: "#2ca02c", None: "#3b78c2"}  # kept first tokens -> line colour
FAMILY_COLORS = {"heads": "#3b78c2", "latent": "#9467bd", "window": "#2ca02c"}
MASK_COLORS = ((0.0, "#e9ecef"), (0.25, "#e9ecef"), (0.25, "#f4a261"), (0.75, "#f4a261"), (0.75, "#3b78c2"),
               (1.0, "#3b78c2"))  # dropped (0), kept first token (1), in the window (2)
MASK_WORDS = {0: N_("dropped by the window"), 1: N_("a kept first token"), 2: N_("in the window")}  # shown: _()
FAMILY_NAMES = {"heads": N_("key/value heads"), "latent": N_("latent cache"), "window": N_("sliding window")}


LEGEND_PX = 110  # the bottom margin that holds the x axis title and a legend of up to 3 rows on a phone


def _legend() -> dict:
    """A horizontal legend under the x axis title: on a phone its rows wrap downwards, never over the title."""
    return dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0)


def sink_layers(mean, top, uniform: float, *, title: str = "", height: int = 380) -> go.Figure:
    """Weight on the first token per layer: bars = mean over the layer's heads, dots = its strongest head, a dashed
    line at what a uniform head would give (``uniform``).

    Raises:
        ValueError: ``mean`` and ``top`` are not two ``[n_layers]`` arrays.
    """
    mean, top = np.asarray(mean, dtype=float), np.asarray(top, dtype=float)
    if mean.ndim != 1 or top.shape != mean.shape:
        raise ValueError(f"mean and top must be [n_layers] each, got {mean.shape} and {top.shape}")
    layers = list(range(len(mean)))
    traces = [
        go.Bar(x=layers, y=mean, name=_("layer mean"), marker_color=MEAN_COLOR,
               customdata=[fmt(v, 3) for v in mean],
               hovertemplate=_("layer {x}: mean over its heads {value}").format(x="%{x}", value="%{customdata}")
               + "<extra></extra>"),
        go.Scatter(x=layers, y=top, name=_("strongest head"), mode="markers", marker=dict(color=TOP_COLOR, size=7),
                   customdata=[fmt(v, 3) for v in top],
                   hovertemplate=_("layer {x}: strongest head {value}").format(x="%{x}", value="%{customdata}")
                   + "<extra></extra>"),
        go.Scatter(x=[-0.5, len(mean) - 0.5], y=[uniform, uniform], mode="lines", name=_("uniform head"),
                   line=dict(color=UNIFORM_COLOR, dash="dash", width=2),
                   hovertemplate=_("a head spreading evenly: {value}").format(value=fmt(uniform, 3))
                   + "<extra></extra>"),
    ]
    layout = dict(title=chart_title(title) if title else None,
                  xaxis=dict(title=dict(text=_("layer")), range=[-0.5, len(mean) - 0.5]),
                  yaxis=dict(title=dict(text=_("weight on the first token")), range=[0, 1.02]),
                  separators=i18n.plotly_separators(),
                  height=height, margin={**bar_margin(auto_tick_labels(0, 1), title_top(title)), "b": LEGEND_PX},
                  legend=_legend())
    return go.Figure(data=traces, layout=layout)


def first_token_layers(series: Sequence[tuple[str, np.ndarray, str]], *, title: str = "",
                       height: int = 420) -> go.Figure:
    """Lines per layer, one per ``(name, values [n_layers], colour)`` (names escaped): where the first-token weight
    goes when another token is first.

    Raises:
        ValueError: series of different lengths, or none.
    """
    if not series:
        raise ValueError("first_token_layers needs at least one series")
    n = len(series[0][1])
    traces = []
    for name, values, color in series:
        values = np.asarray(values, dtype=float)
        if values.shape != (n,):
            raise ValueError(f"every series must be [n_layers] = [{n}], got {values.shape} for {name!r}")
        safe = escape_label(name)
        traces.append(go.Scatter(x=list(range(n)), y=values, mode="lines+markers", name=safe,
                                 line=dict(color=color, width=2), marker=dict(size=5),
                                 customdata=[fmt(v, 3) for v in values],
                                 hovertemplate=_("{name}, layer {x}: {value}").format(
                                     name=safe, x="%{x}", value="%{customdata}") + "<extra></extra>"))
    layout = dict(title=chart_title(title) if title else None,
                  xaxis=dict(title=dict(text=_("layer")), range=[-0.5, n - 0.5]),
                  yaxis=dict(title=dict(text=_("mean weight (over the heads)")), range=[0, 1.02]),
                  height=height, legend=_legend(), separators=i18n.plotly_separators(),
                  margin={**bar_margin(auto_tick_labels(0, 1), title_top(title)), "b": LEGEND_PX + 20})
    return go.Figure(data=traces, layout=layout)


def window_mask(kinds, labels: Sequence[str], *, title: str, height: int | None = None) -> go.Figure:
    """Which keys each query sees: ``kinds [n, n]`` from :func:`explorer.lessons.sinks.model.allowed_keys`
    (2 window, 1 kept first token, 0 dropped, -1 future: left blank). Hover names the cell's kind.

    Raises:
        ValueError: ``kinds`` is not ``[len(labels), len(labels)]``.
    """
    kinds = np.asarray(kinds)
    n = len(labels)
    if kinds.shape != (n, n):
        raise ValueError(f"kinds must be [n, n] = [{n}, {n}], got {list(kinds.shape)}")
    fig = heatmap(kinds.astype(float), labels, labels, title=title, mask=kinds >= 0, zrange=(0.0, 2.0),
                  show_text=False, height=height, light=False)
    trace = fig.data[0]
    trace.colorscale = [list(stop) for stop in MASK_COLORS]
    trace.showscale = False
    custom = np.array(trace.customdata, dtype=object)
    words = {k: _(w) for k, w in MASK_WORDS.items()}
    future = _("the future (causal mask)")
    words = np.vectorize(lambda k: words.get(int(k), future), otypes=[object])(kinds)
    custom[..., 2] = words
    trace.customdata = custom.tolist()  # lists, not an object array (see explorer.shell.charts.heatmap)
    return fig


def losses_along(series: Sequence[tuple[str, np.ndarray, str]], score_from: int, labels: Sequence[str], *,
                 title: str = "", height: int = 440) -> go.Figure:
    """Next-token loss (nats) at every query position, one line per ``(name, losses [n - 1], colour)``; the scored
    positions start at ``score_from`` (a dotted line). ``labels``: the ``n`` tokens (the x ticks name the query).

    Raises:
        ValueError: series of another length than ``len(labels) - 1``.
    """
    m = len(labels) - 1
    ticks = [escape_label(s) for s in labels[:-1]]
    nexts = [escape_label(s) for s in labels[1:]]
    traces, top = [], 1.0
    for name, losses, color in series:
        losses = np.asarray(losses, dtype=float)
        if losses.shape != (m,):
            raise ValueError(f"losses must be [n - 1] = [{m}], got {losses.shape} for {name!r}")
        top = max(top, float(losses.max(initial=0.0)))
        safe = escape_label(name)
        traces.append(go.Scatter(
            x=list(range(m)), y=losses, mode="lines", name=safe, line=dict(color=color, width=2),
            customdata=np.array([[t, u, fmt(v, 3)] for t, u, v in zip(ticks, nexts, losses, strict=True)],
                                dtype=object).reshape(-1, 3).tolist(),
            hovertemplate=_("{name}: at {token}, predicting {next}: loss {loss} nats").format(
                name=safe, token="%{customdata[0]}", next="%{customdata[1]}", loss="%{customdata[2]}")
            + "<extra></extra>"))
    layout = dict(  # numbered ticks (short on a phone); the hover names the tokens
        title=chart_title(title) if title else None,
        xaxis=dict(title=dict(text=_("query position (predicting the next token)")), range=[-0.5, m - 0.5]),
        yaxis=dict(title=dict(text=_("loss (nats)")), range=[0, top * 1.08]), separators=i18n.plotly_separators(),
        shapes=[dict(type="line", x0=score_from - 0.5, x1=score_from - 0.5, y0=0, y1=top * 1.08,
                     line=dict(color=UNIFORM_COLOR, dash="dot", width=2))],
        height=height, margin=dict(l=60, r=10, t=title_top(title), b=LEGEND_PX + 20), legend=_legend())
    return go.Figure(data=traces, layout=layout)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 times the powers of ten within ``[lo, hi]`` (every third dropped when there are more than 9)."""
    out = [m * 10.0 ** e for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
           for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    return [v for v in out if str(int(v))[0] == "1"] if len(out) > 9 else out


def _short(v: float) -> str:
    """``2000`` -> ``2k``, ``150000`` -> ``150k``, ``5`` -> ``5``."""
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


def cache_tradeoff(rows: Sequence[tuple[str, str, float, float]], *, reference: float, title: str = "",
                   height: int = 500) -> go.Figure:
    """Perplexity against KV-cache bytes per token, both on log axes: one marker per ``(label, family,
    bytes_per_token, perplexity)``, coloured by family (:data:`FAMILY_COLORS`; a line joins a family's markers by
    size); a dashed line at the model's own perplexity ``reference``.

    Raises:
        ValueError: a family that is not one of :data:`FAMILY_COLORS`, a non-positive size or perplexity.
    """
    traces = []
    for family, color in FAMILY_COLORS.items():
        mine = sorted((r for r in rows if r[1] == family), key=lambda r: r[2])
        if not mine:
            continue
        x = [r[2] for r in mine]
        y = [r[3] for r in mine]
        if min(x) <= 0 or min(y) <= 0:
            raise ValueError("bytes per token and perplexity must be positive (log axes)")
        names = [escape_label(r[0]) for r in mine]
        traces.append(go.Scatter(
            x=x, y=y, mode="lines+markers", name=_(FAMILY_NAMES[family]),
            line=dict(color=color, width=1, dash="dot"), marker=dict(color=color, size=10),
            customdata=np.array([[nm, i18n.integer(round(b)), fmt(p, 4 if p < 100 else 1)]
                                 for nm, b, p in zip(names, x, y, strict=True)], dtype=object).reshape(-1, 3).tolist(),
            hovertemplate=_("{name}: {bytes} bytes per token, perplexity {ppl}").format(
                name="%{customdata[0]}", bytes="%{customdata[1]}", ppl="%{customdata[2]}") + "<extra></extra>"))
    unknown = {r[1] for r in rows} - set(FAMILY_COLORS)
    if unknown:
        raise ValueError(f"unknown families {sorted(unknown)}; known: {', '.join(FAMILY_COLORS)}")
    xs, ys = [r[2] for r in rows], [r[3] for r in rows] + [reference]
    lo, hi = min(xs) / 1.5, max(xs) * 1.5
    traces.append(go.Scatter(x=[lo, hi], y=[reference, reference], mode="lines", name=_("the model (GQA)"),
                             line=dict(color=UNIFORM_COLOR, dash="dash", width=2),
                             hovertemplate=_("the model as trained: perplexity {ppl}").format(ppl=fmt(reference, 3))
                             + "<extra></extra>"))
    x_ticks = _log_ticks(lo, hi)
    y_ticks = _log_ticks(min(ys) / 1.3, max(ys) * 1.3)
    layout = dict(title=chart_title(title) if title else None,
                  xaxis=dict(type="log", title=dict(text=_("KV cache bytes per token of your text (log)")),
                             range=[np.log10(lo), np.log10(hi)], tickvals=x_ticks,
                             ticktext=[_short(v) for v in x_ticks]),
                  yaxis=dict(type="log", title=dict(text=_("perplexity (log)")), range=[np.log10(min(ys) / 1.3),
                                                                                      np.log10(max(ys) * 1.3)],
                             tickvals=y_ticks, ticktext=[_short(v) for v in y_ticks]),
                  separators=i18n.plotly_separators(),
                  height=height, margin=dict(l=60, r=10, t=title_top(title), b=LEGEND_PX + 20), legend=_legend())
    return go.Figure(data=traces, layout=layout)
