"""Figures of "What made it say that?" (arrays in, Plotly out; no Streamlit).

Same rules as :mod:`explorer.shell.charts`: maps are shell heat maps (placed by position, so repeated tokens
stay apart), every token's text is escaped (:func:`explorer.shell.charts.escape_label`), hover labels name what
a cell is. The head grids carry one transparent marker per cell, so a click selects a point (Streamlit's
``on_select`` reports scatter points, not heat-map cells): ``x`` = head, ``y`` = layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.lessons.causes import model
from explorer.shell import head_statistics, i18n
from explorer.shell.charts import (
    DARK_OUTLINE,
    bar_margin,
    cell_text_size,
    chart_title,
    escape_label,
    head_grid,
    heatmap,
    title_top,
)
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

PICK_COLOR = "#d62728"  # the chosen heads (points, bars)
BLUE, GREY, ORANGE = "#3b78c2", "#9aa0a6", "#e8710a"
LENS_TEXT_MAX = 10  # the top token printed in the logit-lens cells up to this many positions
LENS_CELL_CHARS_MIN = 4  # a cell's top token cut to fewer characters than this (with "…") is left to the hover


def lens_map(top_pieces: Sequence[Sequence[str]], probabilities, token_labels: Sequence[str], *,
             title: str = "") -> go.Figure:
    """The logit lens at every block and position: colour = the top token's probability, text = that token.

    Args:
        top_pieces: ``[n_layers + 1][n]`` readable pieces of the top token (escaped here).
        probabilities: ``[n_layers + 1, n]`` their probabilities.
        token_labels: the prompt's ``n`` token labels (columns).

    Hover: ``block 12 · ␣France (3): ␣Paris 0.231``. Colour bar below; the cells print each token cut with ``…`` to
    what a phone's cell holds (:func:`cell_text_size`, at least :data:`LENS_CELL_CHARS_MIN` characters), the same at
    every width, while the prompt has at most :data:`LENS_TEXT_MAX` tokens (else hover and the Numbers table only).
    """
    p = np.asarray(probabilities, dtype=float)
    n_rows, n = p.shape
    if len(top_pieces) != n_rows or any(len(row) != n for row in top_pieces) or len(token_labels) != n:
        raise ValueError(f"top_pieces must be [{n_rows}][{n}] with {n} token labels")
    rows = block_labels(n_rows)
    fig = heatmap(p, rows, token_labels, title=title, row_name=_("stream entering"), col_name=_("position"),
                  zrange=(0.0, 1.0), show_text=False, height=max(560, 20 * n_rows + 140), colorbar_at="below",
                  colorbar_title=_("probability"), light=False, max_xticks=16)
    trace = fig.data[0]
    pieces = np.array([[escape_label(s) for s in row] for row in top_pieces], dtype=object)
    custom = np.array(trace.customdata, dtype=object)
    custom[..., 2] = np.vectorize(lambda s, v: f"{s} {fmt(v, 3)}", otypes=[object])(pieces, p)
    trace.customdata = custom.tolist()
    longest = max((len(s) for row in top_pieces for s in row), default=0)
    for chars in range(longest, min(longest, LENS_CELL_CHARS_MIN) - 1, -1) if n <= LENS_TEXT_MAX else ():
        cut = [[s if len(s) <= chars else s[: chars - 1] + "…" for s in row] for row in top_pieces]
        if size := cell_text_size(cut, n, rows, colorbar_chars=0):  # measured as shown, escaped after
            trace.update(text=[[escape_label(s) for s in row] for row in cut], texttemplate="%{text}",
                         textfont=dict(size=size))
            break
    return fig


def answer_curve(probability, rank, answer_label: str, *, title: str = "") -> go.Figure:
    """The answer's probability read out of each block's stream at the last position (hover: its rank too)."""
    p = np.asarray(probability, dtype=float)
    label = escape_label(answer_label)
    line = go.Scatter(
        x=list(range(len(p))), y=p, mode="lines+markers", marker=dict(color=BLUE), line=dict(color=BLUE),
        customdata=np.array([[fmt(v, 4), str(int(r))] for v, r in zip(p, rank, strict=True)], dtype=object),
        hovertemplate=_("block {block}: p({answer}) = {p} (rank {rank})").format(
            block="%{x}", answer=label, p="%{customdata[0]}", rank="%{customdata[1]}") + "<extra></extra>",
    )
    layout = dict(
        title=chart_title(title) if title else None,
        xaxis=dict(title=dict(text=_("stream entering block ({last} = after the last block)").format(last=len(p) - 1)),
                   range=[-0.5, len(p) - 0.5]),
        yaxis=dict(title=dict(text=f"p({label})"), range=[0, 1.02]), height=300,
        margin=bar_margin(["0", "0.5", "1"], title_top(title)), showlegend=False,
        separators=i18n.plotly_separators(),
    )
    return go.Figure(data=[line], layout=layout)


def component_bars(embedding: float, mlps, *, title: str = "") -> go.Figure:
    """The embedding's and each MLP's share of the logit (direct logit attribution), one bar each."""
    m = np.asarray(mlps, dtype=float)
    names = [_("emb")] + [_("MLP {i}").format(i=i) for i in range(len(m))]
    values = np.concatenate([[embedding], m])
    bar = go.Bar(
        x=list(range(len(values))), y=values, marker_color=[GREY] + [ORANGE] * len(m),
        customdata=np.array([[nm, fmt(v, 3)] for nm, v in zip(names, values, strict=True)], dtype=object),
        hovertemplate="%{customdata[0]}: %{customdata[1]}<extra></extra>",
    )
    ticks = list(range(0, len(values), 5))
    layout = dict(
        title=chart_title(title) if title else None,
        xaxis=dict(tickmode="array", tickvals=ticks, ticktext=[names[i] for i in ticks], title=dict(text=_("part"))),
        yaxis=dict(title=dict(text=_("share of the logit")), zeroline=True), height=300,
        margin=bar_margin([fmt(values.min(), 1), fmt(values.max(), 1)], title_top(title)),
        separators=i18n.plotly_separators(),
    )
    return go.Figure(data=[bar], layout=layout)


def scatter_effect(statistic, effect, *, x_title: str, y_title: str, highlight: Sequence[tuple[int, int]] = (),
                   title: str = "") -> go.Figure:
    """One point per head: an attention statistic (x) against the knockout's effect (y); ``highlight`` heads in red.

    Hover: ``L18H6: statistic 0.812 · effect −0.031``. Clicking a point selects that head (``customdata``).
    """
    s, e = np.asarray(statistic, dtype=float), np.asarray(effect, dtype=float)
    if s.shape != e.shape or s.ndim != 2:
        raise ValueError(f"statistic and effect must both be [n_layers, n_heads], got {s.shape} and {e.shape}")
    layers, heads = np.divmod(np.arange(s.size), s.shape[1])
    marked = {tuple(h) for h in highlight}
    codes = [model.head_code(layer, head) for layer, head in zip(layers, heads, strict=True)]
    colors = [PICK_COLOR if pair in marked else BLUE for pair in zip(layers.tolist(), heads.tolist(), strict=True)]
    dots = go.Scatter(
        x=s.ravel(), y=e.ravel(), mode="markers", marker=dict(color=colors, size=8, opacity=0.8),
        customdata=np.array([[c, fmt(a, 3), fmt(b, 3), int(la), int(h)] for c, a, b, la, h in
                             zip(codes, s.ravel(), e.ravel(), layers, heads, strict=True)], dtype=object),
        hovertemplate=_("{head}: statistic {statistic} · effect {effect}").format(
            head="%{customdata[0]}", statistic="%{customdata[1]}", effect="%{customdata[2]}") + "<extra></extra>",
    )
    layout = dict(title=chart_title(title) if title else None, xaxis=dict(title=dict(text=escape_label(x_title))),
                  yaxis=dict(title=dict(text=escape_label(y_title))),
                  height=380, margin=dict(l=70, r=10, t=title_top(title), b=60), showlegend=False,
                  clickmode="event+select", dragmode=False, hovermode="closest", separators=i18n.plotly_separators())
    return go.Figure(data=[dots], layout=layout)


def patch_map(values, token_labels: Sequence[str], *, clean: float, corrupted: float, title: str = "") -> go.Figure:
    """Residual patching: ``values [n_layers + 1, n]`` (the logit difference after each patch) as a diverging map
    centred between the corrupted and the clean difference's range (0 white: the two answers tie).

    Hover: ``block 23 · ␣France (3): 7.35``.
    """
    v = np.asarray(values, dtype=float)
    top = max(abs(clean), abs(corrupted), float(np.abs(v).max(initial=0.0))) or 1.0
    rows = block_labels(v.shape[0])
    return heatmap(v, rows, token_labels, title=title, kind="diverging", row_name=_("stream entering"),
                   col_name=_("position"), zrange=(-top, top), digits=2, show_text=v.shape[1] <= 8,
                   height=max(560, 20 * v.shape[0] + 140), colorbar_title=_("logit diff"), light=False, max_xticks=16)


def block_labels(n: int) -> list[str]:
    """``block 0 … block n-1`` in the run's language (a map's row labels)."""
    return [_("block {b}").format(b=b) for b in range(n)]


def head_bars(values, *, clean: float, corrupted: float, y_title: str, title: str = "") -> go.Figure:
    """One bar per head of a layer (its patch's logit difference), with the clean and corrupted levels as lines.

    Clicking a bar selects it (``x`` = head).
    """
    v = np.asarray(values, dtype=float)
    best = int(np.argmax(v)) if len(v) else -1
    bar = go.Bar(
        x=list(range(len(v))), y=v, marker_color=[PICK_COLOR if i == best else BLUE for i in range(len(v))],
        customdata=[fmt(x, 2) for x in v],
        hovertemplate=_("head {head}: {value}").format(head="%{x}", value="%{customdata}") + "<extra></extra>",
    )
    lo, hi = min(0.0, float(v.min()), clean, corrupted), max(0.0, float(v.max()), clean, corrupted)
    pad = 0.08 * (hi - lo or 1.0)
    lines = [dict(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y, line=dict(color=c, dash="dash", width=1.5))
             for y, c in ((clean, BLUE), (corrupted, GREY))]
    notes = [dict(xref="paper", x=1.01, y=y, text=t, showarrow=False, xanchor="left", yanchor="middle",
                  font=dict(size=11, color=c))
             for y, t, c in ((clean, _("clean"), BLUE), (corrupted, _("corrupted"), GREY))]
    margin = {**bar_margin([fmt(lo, 1), fmt(hi, 1)], title_top(title)), "r": 72}  # the lines' names on the right
    layout = dict(title=chart_title(title) if title else None,
                  xaxis=dict(tickmode="array", tickvals=list(range(len(v))), title=dict(text=_("head"))),
                  yaxis=dict(title=dict(text=escape_label(y_title)), range=[lo - pad, hi + pad]), height=320,
                  margin=margin, shapes=lines, annotations=notes, clickmode="event+select", dragmode=False,
                  separators=i18n.plotly_separators())
    return go.Figure(data=[bar], layout=layout)


def loss_bars(names: Sequence[str], losses, accuracies, *, title: str = "") -> go.Figure:
    """The second copy's loss (nats) for each run, its top-1 accuracy in the hover and on the bar."""
    loss, acc = np.asarray(losses, dtype=float), np.asarray(accuracies, dtype=float)
    labels = [escape_label(n) for n in names]
    bar = go.Bar(
        x=list(range(len(loss))), y=loss, marker_color=[BLUE] + [PICK_COLOR] + [GREY] * (len(loss) - 2),
        text=[_("{loss} nats").format(loss=fmt(v, 2)) for v in loss], textposition="outside", cliponaxis=False,
        customdata=[[nm, fmt(v, 3), i18n.percent(float(a), 0)] for nm, v, a in zip(labels, loss, acc, strict=True)],
        hovertemplate=_("{run}: loss {loss} nats · top-1 {accuracy}").format(
            run="%{customdata[0]}", loss="%{customdata[1]}", accuracy="%{customdata[2]}") + "<extra></extra>",
    )
    layout = dict(title=chart_title(title) if title else None,
                  xaxis=dict(tickmode="array", tickvals=list(range(len(loss))), ticktext=labels),
                  yaxis=dict(title=dict(text=_("second-copy loss (nats)")),
                             range=[0, float(loss.max(initial=1)) * 1.2]),
                  height=320, margin=bar_margin(["0", fmt(float(loss.max(initial=1)), 1)], title_top(title)),
                  separators=i18n.plotly_separators())
    return go.Figure(data=[bar], layout=layout)


def attribution_grid(shares: np.ndarray, answer: str, picked: tuple[tuple[int, int], ...]) -> go.Figure:
    """The clickable grid of every head's share ``[n_layers, n_heads]`` of the logit of ``answer`` (the token as
    charts show it) on the red-blue scale (0 white), the knockout's ``picked`` heads framed in dark (a widget: bound
    with :func:`explorer.shell.cache.figure` in ``draw.py``, the same object on every rerun)."""
    return head_grid(shares, title=_("every head's share of {answer}'s logit").format(answer=answer),
                     colorbar_title=_("share"), outlined=picked, kind="diverging", outline=(DARK_OUTLINE, 2.5))


def sweep_grid(effect: np.ndarray, answer: str, guess: tuple[int, int] | None) -> go.Figure:
    """The clickable grid of the sweep's effects ``[n_layers, n_heads]`` on log p(``answer``), as
    :func:`attribution_grid`'s, the guess framed."""
    return head_grid(effect, title=_("change of log p({answer}) per head").format(answer=answer),
                     colorbar_title="Δ log p", outlined=(guess,) if guess else (), kind="diverging",
                     outline=(DARK_OUTLINE, 2.5))


def scatter_figure(values: np.ndarray, effect: np.ndarray, stat: str, answer: str) -> go.Figure:
    """The scatter of the attention statistic ``stat`` (``values [n_layers, n_heads]``) against the effect on log
    p(``answer``) (a widget: clicks select a head), the busiest and the strongest heads in red."""
    r = model.attention_vs_effect(values, effect)
    return scatter_effect(values, effect, x_title=_("{statistic} ({unit})").format(
                              statistic=head_statistics.name(stat), unit=head_statistics.unit(stat)),
                          y_title=_("change of log p({answer})").format(answer=answer),
                          highlight=[r.busiest, r.strongest], title=_("every head: attention vs effect"))
