"""Figures of the multi-head page: head-coloured column blocks, the split, grids of heads.

Pure functions, arrays in, ``go.Figure`` out. Every heat map goes through
:func:`explorer.shell.charts.heatmap` (rows = queries top to bottom, tokens escaped, masked
cells blank, light above ``HOVER_CELL_MAX`` cells); the grids copy its traces into subplots
on one shared colour range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from explorer.lessons.multihead import model as smh
from explorer.shell import i18n
from explorer.shell.charts import (
    BAR_PLOT_PX,
    COLORBAR_AT,
    DIVERGING_SCALE,
    HOVER_CELL_MAX,
    MASKED_COLOR,
    PHONE_CHART_PX,
    WEIGHTS_SCALE,
    auto_tick_labels,
    bar_margin,
    colorbar_of_px,
    fit_ticks,
    heatmap,
    heatmap_margin,
    max_ticks,
    text_px,
    tick_angles,
    tick_positions,
    title_top,
    weight_colorbar,
    weight_colors,
)
from explorer.shell.plotly_fast import axis_names, hline, subplot_layout
from explorer.shell.textviews import fmt, head_labels

_, _n = i18n.translator(__name__)

HEAD_COLORS = qualitative.Set3 + qualitative.Pastel2  # 20 light colours; dark text stays readable on them
MAX_AXIS = 64  # a weight-matrix axis longer than this is drawn on an evenly spaced sample of its entries
GRID_TEXT_MAX = 10  # cell text in head grids only while n <= this (and few heads)
BAND_PX = 18  # a head band's width beside a blocked matrix (its 10 px label, 2 px padding each side)


def head_color(h: int) -> str:
    """The colour of head ``h`` (cycles after 20 heads)."""
    return HEAD_COLORS[h % len(HEAD_COLORS)]


def sample_indices(size: int, max_n: int = MAX_AXIS) -> np.ndarray:
    """``[k]`` evenly spaced indices into an axis of ``size`` (all of them when ``size <= max_n``).

    ``sample_indices(512, 64)`` is ``0, 8, 16, …, 504``: every 8th entry.
    """
    if size <= max_n:
        return np.arange(size)
    return np.arange(0, size, math.ceil(size / max_n))


def _head_edges(idx: np.ndarray, step: int, d_head: int, n_heads: int) -> list[tuple[int, float, float]]:
    """``(head, lo, hi)`` cell edges, in true-index coordinates, of each head with a drawn index.

    ``idx`` are the drawn indices (spacing ``step``); a cell at index p covers ``p ± step / 2``.
    """
    def edge(k: int) -> float:
        return float(idx[k]) - step / 2 if k < len(idx) else float(idx[-1]) + step / 2

    spans = []
    for h in range(n_heads):
        lo, hi = np.searchsorted(idx, h * d_head), np.searchsorted(idx, (h + 1) * d_head)
        if hi > lo:
            spans.append((h, edge(int(lo)), edge(int(hi))))
    return spans


def lighten(fig: go.Figure, *, digits: int = 4, hover: str | None = None) -> go.Figure:
    """Make a heat map cheap to send (in place, returned): every ``go.Heatmap``'s ``z`` rounded to ``digits``
    decimals (gaps stay gaps), no cell text, and ``hover`` (default ``y · x: z``) instead of per-cell labels.

    For a grid's panels: :func:`~explorer.shell.charts.heatmap` makes each panel light on its own size, a grid decides
    on the size of all its panels together.
    """
    for tr in fig.data:
        if isinstance(tr, go.Heatmap):
            z = np.array(tr.z, dtype=object)
            shown = np.where(z == None, np.nan, z).astype(float)  # noqa: E711  (None = masked gap)
            template = hover or f"%{{y}} · %{{x}}: %{{z:.{digits}f}}<extra></extra>"
            # A light map coloured per row (heatmap(..., color_scale="row", light=True)) keeps its true weights
            # [n_q, n_k] in customdata: the hover shows them, not the colour values.
            keep = tr.customdata is not None and np.asarray(tr.customdata, dtype=object).ndim == 2
            tr.update(z=np.where(np.isfinite(shown), np.round(shown, digits), None),
                      customdata=tr.customdata if keep else None, text=None, texttemplate=None,
                      hovertemplate=template.replace("%{z:", "%{customdata:") if keep else template)
    return fig


def blocked_heatmap(
    z, n_heads: int, *, block_axis: str = "columns", row_labels: Sequence[str] | None = None,
    row_name: str | None = None, col_name: str | None = None, title: str = "", height: int | None = None,
    colorbar_title: str | None = None, max_size: int = MAX_AXIS,
) -> go.Figure:
    """A matrix with one axis split into ``n_heads`` head blocks: coloured bands and separators (diverging colours
    centred on 0, y axis reversed).

    ``block_axis="columns"`` (``W_q, W_k, W_v``, the concatenation): head h owns columns ``h*d_head:(h+1)*d_head``,
    marked by a band above the plot; ``"rows"`` (``W_o``): head h's rows, a band to the right. A dimension axis
    longer than ``max_size`` is drawn on every k-th entry (:func:`sample_indices`), plotted at its true indices (ticks
    and hover give the real row/column). A sampled map, or one above ``HOVER_CELL_MAX`` cells, is light: indices in
    the hover, values rounded to 4 decimals.

    Args:
        z: ``[n_rows, n_cols]`` finite numbers; the blocked axis has length ``d_model``, a multiple of ``n_heads``.
        row_labels: labels of rows that are not a dimension axis (e.g. tokens; never sampled).
        row_name, col_name, colorbar_title: default "input dim", "output dim", "value" (in the run's language).

    Raises:
        ValueError: ``z`` is not 2-D, the blocked axis is not a multiple of ``n_heads``, or ``block_axis`` is unknown.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"z must be 2-D, got shape {z.shape}")
    if block_axis not in ("columns", "rows"):
        raise ValueError(f"block_axis must be 'columns' or 'rows', got {block_axis!r}")
    d_model = z.shape[1] if block_axis == "columns" else z.shape[0]
    if n_heads < 1 or d_model % n_heads:
        raise ValueError(f"the blocked axis ({d_model}) must be a multiple of n_heads={n_heads}")
    d_head = d_model // n_heads
    row_name = _("input dim") if row_name is None else row_name
    col_name = _("output dim") if col_name is None else col_name
    colorbar_title = _("value") if colorbar_title is None else colorbar_title
    ridx = np.arange(z.shape[0]) if row_labels is not None else sample_indices(z.shape[0], max_size)
    cidx = sample_indices(z.shape[1], max_size)
    rstep = int(ridx[1] - ridx[0]) if len(ridx) > 1 else 1
    cstep = int(cidx[1] - cidx[0]) if len(cidx) > 1 else 1

    def dim_label(p: int, blocked: bool) -> str:
        return _("{p} (head {h})").format(p=p, h=p // d_head) if blocked else str(p)

    rows = list(row_labels) if row_labels is not None else [dim_label(p, block_axis == "rows") for p in ridx]
    cols = [dim_label(p, block_axis == "columns") for p in cidx]
    drawn = z[np.ix_(ridx, cidx)]
    sampled = len(ridx) < z.shape[0] or len(cidx) < z.shape[1]  # then the hover must give true indices anyway
    fig = heatmap(drawn, rows, cols, kind="diverging", row_name=row_name, col_name=col_name,
                  title=title, show_text=False, height=height, colorbar_title=colorbar_title,
                  light=True if sampled else None)
    # plot dimension axes at their true indices (sampled axes then read correctly in ticks and hover)
    fig.update_traces(x=cidx.tolist(), selector=dict(type="heatmap"))
    if sampled or drawn.size > HOVER_CELL_MAX:  # light: 4 decimals (small weights would take a digit more at 4 sig.)
        fig.update_traces(z=np.round(drawn, 4).tolist(), selector=dict(type="heatmap"))  # a list: short numbers
    every = max(1, math.ceil(len(cidx) / 8))
    fig.update_xaxes(tickmode="array", labelalias=None, tickvals=cidx[::every].tolist(),
                     ticktext=[str(p) for p in cidx[::every]], tickangle=0,
                     range=[cidx[0] - cstep / 2, cidx[-1] + cstep / 2])
    fig.layout.meta = None  # its own ticks (true indices), not the heat map's keys for the browser to fit
    # Upright column numbers: the bottom margin they need (issue 20: margins that hold the labels from the start)
    margin = dict(b=heatmap_margin([], [], x_upright=True, colorbar=0, top=0)["b"])
    if row_labels is None:
        fig.update_traces(y=ridx.tolist(), selector=dict(type="heatmap"))
        # at most 16 row numbers, and no more than the plot's height holds (max_ticks: they never touch)
        plot_height = fig.layout.height - fig.layout.margin.t - margin["b"] - (24 if block_axis == "columns" else 0)
        every = max(1, math.ceil(len(ridx) / min(16, max_ticks(plot_height))))
        numbers = [str(p) for p in ridx[::every]]
        fig.update_yaxes(tickvals=ridx[::every].tolist(), ticktext=numbers)
        margin["l"] = heatmap_margin(numbers, [], x_upright=True, colorbar=0, top=0)["l"]  # row numbers alone
    fig.layout.margin.update(margin)

    blocked_idx, step = (cidx, cstep) if block_axis == "columns" else (ridx, rstep)
    spans = _head_edges(blocked_idx, step, d_head, n_heads)
    first = float(blocked_idx[0]) - step / 2
    label_heads = len(spans) <= 8  # more bands are too narrow to hold a readable label
    line = dict(color="black", width=1.5 if len(spans) <= 8 else 0.8)
    shapes, notes = [], []  # built as lists and set once: add_shape per head is slow with many heads
    for h, a, b in spans:
        color = head_color(h)
        short = _("h{h}").format(h=h)  # a narrow band's label
        wide = (b - a) / step >= 4  # cells drawn for this head
        # Bands BAND_PX wide in pixels beside the plot, labels inside them: a band sized in paper units was 13 px on a
        # phone, and its 10 px label spilled onto the cells (issue 47).
        if block_axis == "columns":
            shapes.append(dict(type="rect", xref="x", yref="paper", x0=a, x1=b, ysizemode="pixel", yanchor=1, y0=2,
                               y1=2 + BAND_PX, fillcolor=color, line_width=0))
            if a > first:
                shapes.append(dict(type="line", xref="x", yref="paper", x0=a, x1=a, y0=0, y1=1, line=line))
            if label_heads:
                notes.append(dict(x=(a + b) / 2, y=1, xref="x", yref="paper", yanchor="bottom", yshift=2,
                                  text=head_labels([h])[0] if wide else short, borderpad=2,
                                  showarrow=False, font=dict(size=10, color="black")))
        else:
            shapes.append(dict(type="rect", xref="paper", yref="y", xsizemode="pixel", xanchor=1, x0=2,
                               x1=2 + BAND_PX, y0=a, y1=b, fillcolor=color, line_width=0))
            if a > first:
                shapes.append(dict(type="line", xref="paper", yref="y", x0=0, x1=1, y0=a, y1=a, line=line))
            if label_heads:
                notes.append(dict(x=1, y=(a + b) / 2, xref="paper", yref="y", xanchor="left", xshift=2, text=short,
                                  textangle=-90, borderpad=2, showarrow=False, font=dict(size=10, color="black")))
    fig.update_layout(shapes=list(fig.layout.shapes) + shapes, annotations=list(fig.layout.annotations) + notes)
    if block_axis == "columns":
        fig.update_layout(margin=dict(t=title_top(title) + 24))
    else:
        fig.update_traces(colorbar=dict(x=1, xanchor="left", xpad=BAND_PX + 12), selector=dict(type="heatmap"))
        fig.update_layout(margin=dict(r=50))
    return fig


def _thin_ticks(axis, max_ticks: int) -> dict:
    """``tickvals``/``ticktext`` of a layout axis thinned to at most ``max_ticks`` (every k-th kept, the first and
    the last always: :func:`~explorer.shell.charts.tick_positions`)."""
    vals, text = list(axis.tickvals or []), list(axis.ticktext or [])
    if len(vals) <= max_ticks:
        return {}
    keep = tick_positions(len(vals), max_ticks)
    return dict(tickvals=[vals[i] for i in keep], ticktext=[text[i] for i in keep])


def split_panels(values, owner, *, tokens, titles: Sequence[str], n_cols: int | None = None) -> go.Figure:
    """Panels of readable numbers, each cell coloured by the head that owns its column: the ``split_heads`` example,
    one panel per head ``[n, d_head]`` (or one ``[n, d_model]`` panel before the split).

    Args:
        values: ``[panels, n, width]`` numbers.
        owner: ``[panels, n, width]`` head index of each cell's original column.
        tokens: ``[panels, n, width]`` token (row of the original matrix) of each cell.
        titles: one title per panel.

    Raises:
        ValueError: the three arrays differ in shape, or titles do not match the panels.
    """
    values, owner, tokens = (np.asarray(a) for a in (values, owner, tokens))
    if values.ndim != 3 or owner.shape != values.shape or tokens.shape != values.shape:
        raise ValueError(f"values, owner and tokens must share one [panels, n, width] shape, got "
                         f"{values.shape}, {owner.shape}, {tokens.shape}")
    p, n, width = values.shape
    if len(titles) != p:
        raise ValueError(f"{len(titles)} titles for {p} panels")
    n_cols = n_cols or min(p, 4)
    n_rows = math.ceil(p / n_cols)
    n_colors = int(owner.max()) + 1
    # discrete colour scale: head k -> HEAD_COLORS[k] on [k, k+1) of a 0..n_colors range
    scale = [[(k + edge) / n_colors, head_color(k)] for k in range(n_colors) for edge in (0, 1)]
    # make_subplots' layout (built once per shape) and every panel's axes as dicts, for one constructor call:
    # make_subplots, add_trace(row=, col=) and update_*axes(row=, col=) took about 100 ms for four panels.
    height = int(n_rows * (40 + 32 * n) + 40 + 90 * (n_rows - 1))
    layout = subplot_layout(n_rows, n_cols, subplot_titles=list(titles),  # 90 px between rows: ticks, then a title
                            horizontal_spacing=0.04 if n_cols > 1 else 0.0,
                            vertical_spacing=min(0.5, 90 / (height - 50)) if n_rows > 1 else 0)
    traces = []
    for i in range(p):
        r, c = divmod(i, n_cols)
        xa, ya = axis_names(r * n_cols + c + 1)
        text = np.vectorize(lambda v: f"{v:.0f}", otypes=[object])(values[i])
        hover = np.empty((n, width, 3), dtype=object)
        hover[..., 0] = text
        hover[..., 1] = tokens[i]
        hover[..., 2] = owner[i]
        traces.append(go.Heatmap(
            z=owner[i] + 0.5, x=list(range(width)), y=list(range(n)), zmin=0, zmax=n_colors,
            colorscale=scale, showscale=False, xgap=2, ygap=2, text=text, texttemplate="%{text}",
            textfont=dict(size=12, color="black"), customdata=hover,
            hovertemplate=_("%{customdata[0]}: token %{customdata[1]}, a column of head %{customdata[2]}")
            + "<extra></extra>", xaxis=xa, yaxis=ya,
        ))
        xaxis, yaxis = layout["xaxis" + xa[1:]], layout["yaxis" + ya[1:]]
        xaxis.update(tickmode="array", tickvals=list(range(width)), showgrid=False, zeroline=False)
        if r == n_rows - 1:
            xaxis["title"] = dict(text=_("column"))
        yaxis.update(tickmode="array", tickvals=list(range(n)), autorange="reversed", showgrid=False,
                     zeroline=False, showticklabels=c == 0)
        if c == 0:
            yaxis["title"] = dict(text=_("row"))
    # Margins that hold the row and column numbers from the start: Plotly draws the panels once (issue 20)
    layout.update(height=height, margin=dict(heatmap_margin([str(n - 1)], [], x_upright=True, colorbar=0, top=40),
                                             r=10), separators=i18n.plotly_separators())
    return go.Figure(data=traces, layout=layout)


GRID_COLORBAR_XPAD = 27  # the Streamlit theme's colour-axis colour bar: padding 24 px ("twoXL"), +3 measured


def _position_labels(fig: go.Figure) -> list[str] | None:
    """The labels of a :func:`heatmap` panel's key axis, when it is an axis of positions ``0 … n - 1`` (its
    ``layout.meta`` ones, or every position's tick text); ``None`` for an axis of other values."""
    meta = fig.layout.meta or {}
    if isinstance(meta, dict) and "fit_ticks" in meta:
        return list(meta["fit_ticks"]["xaxis"])
    vals, text = list(fig.layout.xaxis.tickvals or []), list(fig.layout.xaxis.ticktext or [])
    return text if text and vals == list(range(len(text))) and list(fig.data[0].x) == vals else None


def _grid(figs: Sequence[go.Figure], titles: Sequence[str], *, n_cols: int, coloraxis: dict,
          hover_prefixes: Sequence[str], row_height: int, masked: bool = False,
          light_hover: str | None = None) -> go.Figure:
    """Copy single-panel :func:`heatmap` figures into one grid of subplots on a shared colour axis."""
    light_hover = light_hover or _("row %{y} · col %{x}: %{z:.3f}") + "<extra></extra>"
    n = len(figs)
    n_rows = math.ceil(n / n_cols)
    # make_subplots' layout (built once per shape) filled in as dicts, for one constructor call: make_subplots,
    # add_trace(row=, col=) and update_*axes(row=, col=) took about 150 ms for a grid of four heads.
    layout = subplot_layout(n_rows, n_cols, subplot_titles=list(titles),
                            horizontal_spacing=min(0.08, 0.3 / max(n_cols, 1)),
                            vertical_spacing=min(0.12, 0.35 / max(n_rows, 1)) if n_rows > 1 else 0.0)
    traces = []
    y_labels, x_labels, x_upright = [], [], True  # the labels the grid shows: for its margins (issue 20)
    fitted: dict[str, list[str]] = {}  # labelled key axes: the browser labels them for the panels' width
    total = sum(int(np.asarray(f.data[0].z, dtype=object).size) for f in figs)
    for i, (f, prefix) in enumerate(zip(figs, hover_prefixes, strict=True)):
        r, c = divmod(i, n_cols)
        xa, ya = axis_names(r * n_cols + c + 1)
        if total > HOVER_CELL_MAX:  # keep the payload small: positions and rounded values, not labels
            lighten(f, digits=3, hover=f"{prefix}{light_hover}")
        for tr in f.data:
            if isinstance(tr, go.Heatmap):
                rows, cols = len(tr.z), len(tr.z[0]) if len(tr.z) else 0  # a narrow panel's dense axis: no white gaps
                tr.update(coloraxis="coloraxis", colorbar=None, xgap=0 if cols > 16 else tr.xgap,
                          ygap=0 if rows > 16 else tr.ygap)
                if total <= HOVER_CELL_MAX:
                    tr.update(hovertemplate=prefix + tr.hovertemplate)
            tr.update(xaxis=xa, yaxis=ya)
            traces.append(tr)
        keys = _position_labels(f)
        for axis, name in (("xaxis", "xaxis" + xa[1:]), ("yaxis", "yaxis" + ya[1:])):
            spec = f.layout[axis].to_plotly_json()
            spec.pop("domain", None)
            spec.pop("anchor", None)
            panel_px = (PHONE_CHART_PX - 160) / n_cols  # a panel on a phone: as many labels as it holds
            spec.update(_thin_ticks(f.layout[axis], max_ticks(panel_px) if axis == "xaxis" else
                                    max_ticks((row_height - 60) * 0.9)))
            if axis == "xaxis":  # slanted labels only while a phone's panel is wide enough for them
                spec["autotickangles"] = tick_angles(len(spec.get("tickvals") or ()), panel_px)
            if axis == "xaxis" and r != n_rows - 1:
                spec.pop("title", None)
            if axis == "xaxis" and r != n_rows - 1 and n - i > n_cols:
                spec["showticklabels"] = False  # every panel has the same keys: label the bottom row
            if axis == "yaxis" and c != 0:
                spec.pop("title", None)
                spec["showticklabels"] = False  # … and the same queries: label the first column
            layout[name].update(spec)
            if spec.get("showticklabels", True):
                shown = spec.get("ticktext") or list((spec.get("labelalias") or {}).values())
                (x_labels if axis == "xaxis" else y_labels).extend(str(t) for t in shown)
                if axis == "xaxis":
                    x_upright = x_upright and 0 in spec.get("autotickangles", [0])
                    if keys:  # the browser labels them for the panel's width: any of them, maybe on end
                        fitted[name] = keys
                        x_labels.extend(keys)
                        x_upright = False
    if n_cols >= 2:
        for note in layout.get("annotations", ()):
            note.setdefault("font", {})["size"] = 12  # subplot titles of narrow panels (a phone's are ~60 px)
    # The shared colour bar at x = 1 (its right margin is then its width alone) and margins that hold the labels and
    # the colour bar from the start: Plotly lays the grid out and draws it once (issue 20).
    bar = coloraxis.get("colorbar") or {}
    coloraxis = {**coloraxis, "colorbar": {**bar, **COLORBAR_AT}}
    margin = heatmap_margin(y_labels, x_labels, x_upright=x_upright, top=50, colorbar=colorbar_of_px(
        bar, (coloraxis.get("cmin", 0.0), coloraxis.get("cmax", 1.0)), xpad=GRID_COLORBAR_XPAD))
    layout.update(coloraxis=coloraxis, height=int(n_rows * row_height + 50), margin=margin,
                  separators=i18n.plotly_separators())
    if fitted:
        layout["meta"] = fit_ticks(fitted)
    if masked:
        layout["plot_bgcolor"] = MASKED_COLOR
    return go.Figure(data=traces, layout=layout)


def head_weights_grid(
    weights, labels: Sequence[str], heads: Sequence[int], *, entropy=None, mask=None,
    n_cols: int | None = None, show_text: bool | None = None, color_scale: str = "fixed",
) -> go.Figure:
    """Every head's attention weights as a grid of heat maps on ONE colour range (``color_scale``, one of
    :data:`explorer.shell.charts.COLOR_SCALES`); the colour bar marks the uniform level ``1/n``, each row's largest
    weight is outlined, and the hover (``head h · query tok (i) → key tok (j): w``) shows the true weights.

    Args:
        weights: ``[len(heads), n, n]`` (queries × keys) of the heads drawn; labels: ``n`` token labels.
        heads: the head index of each panel (titles, hover).
        entropy: optional ``[len(heads)]`` mean row entropy (nats), written in each title.
        mask: optional ``[n, n]`` bool, ``True`` = may attend (masked cells blank; a × on small maps).
        show_text: cell values; default while ``n <= GRID_TEXT_MAX`` and at most 8 panels.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 3 or w.shape[0] != len(heads):
        raise ValueError(f"weights must be [len(heads)={len(heads)}, n, n], got {w.shape}")
    n = w.shape[1]
    if show_text is None:
        show_text = n <= GRID_TEXT_MAX and len(heads) <= 8
    n_cols = n_cols or min(len(heads), 4)
    # A panel's cell on a phone: the grid's width less the row labels and the colour bar, split into panels and cells.
    cell = ((PHONE_CHART_PX - 160) / n_cols - 10) / max(n, 1)
    size = next((s for s in (12, 10) if text_px("0.000", s) + 3 <= cell), None)
    show_text = bool(show_text and size)
    light = True if color_scale == "row" and w.size > HOVER_CELL_MAX else None  # true weights kept for the hover
    figs = [heatmap(w[i], labels, labels, mask=mask, show_text=show_text, light=light, color_scale=color_scale)
            for i in range(len(heads))]
    for f in figs:
        if f.data[0].texttemplate:
            f.data[0].textfont.size = size
        if cell < text_px("×", 14) + 4:  # no room for a × in a phone's cell: the grey gap alone marks masked cells
            f.data = [t for t in f.data if not (isinstance(t, go.Scatter) and t.mode == "text")]
    top = max((weight_colors(w[i], color_scale, mask)[1][1] for i in range(len(heads))), default=1.0)
    # Short titles (a phone's panels are narrow): the entropy only in a grid of one column.
    titles = [name + (f" · H {fmt(float(entropy[i]), 2)}" if entropy is not None and n_cols == 1 else "")
              for i, name in enumerate(head_labels(heads))]
    per_row = int(min(420, max(220, 22 * n + 120)))
    return _grid(figs, titles, n_cols=n_cols, hover_prefixes=[name + " · " for name in head_labels(heads)],
                 light_hover=_("query %{y} → key %{x}: %{z:.3f}") + "<extra></extra>",
                 coloraxis=dict(cmin=0.0, cmax=top, colorscale=WEIGHTS_SCALE,
                                colorbar=weight_colorbar(color_scale, (0.0, top), n)),
                 row_height=per_row, masked=mask is not None and not np.asarray(mask).all())


def head_output_panels(head_outputs, labels: Sequence[str], heads: Sequence[int], *, d_head: int,
                       n_cols: int | None = None) -> go.Figure:
    """Each head's output ``[n, d_head]`` side by side on one diverging colour range centred on 0.

    A head wider than ``MAX_AXIS // 4`` columns is drawn on a sample of its columns (true
    indices in the ticks).
    """
    o = np.asarray(head_outputs, dtype=float)
    if o.ndim != 3 or o.shape[0] != len(heads) or o.shape[2] != d_head:
        raise ValueError(f"head_outputs must be [len(heads)={len(heads)}, n, d_head={d_head}], got {o.shape}")
    cidx = sample_indices(d_head, MAX_AXIS // 4)
    step = int(cidx[1] - cidx[0]) if len(cidx) > 1 else 1
    top = float(np.abs(o).max()) or 1.0
    figs = []
    for i, h in enumerate(heads):
        cols = [_("{p} (head {h} col {j})").format(p=h * d_head + j, h=h, j=j) for j in cidx]
        f = heatmap(o[i][:, cidx], labels, cols, kind="diverging", row_name=_("token"), col_name=_("dim"),
                    zrange=(-top, top), show_text=False)
        f.update_traces(x=cidx.tolist(), selector=dict(type="heatmap"))  # true column indices within the head
        every = max(1, math.ceil(len(cidx) / 8))
        f.update_xaxes(tickmode="array", labelalias=None, tickvals=cidx[::every].tolist(),
                       ticktext=[str(j) for j in cidx[::every]],
                       range=[cidx[0] - step / 2, cidx[-1] + step / 2], title_text=_("head column"))
        f.layout.meta = None  # its own ticks (true indices), not the heat map's keys for the browser to fit
        figs.append(f)
    n_cols = n_cols or min(len(heads), 4)
    return _grid(figs, head_labels(heads), n_cols=n_cols,  # short titles: the caption gives the shape
                 hover_prefixes=[name + " · " for name in head_labels(heads)],
                 light_hover=_("token %{y} · head column %{x}: %{z:.3f}") + "<extra></extra>",
                 coloraxis=dict(cmin=-top, cmax=top, cmid=0.0, colorscale=DIVERGING_SCALE,
                                colorbar=dict(title=dict(text=_("value")), thickness=12)),
                 row_height=int(min(420, max(200, 20 * o.shape[1] + 110))))


def entropy_bars(head_entropy, n_keys: int, *, is_causal: bool = False) -> go.Figure:
    """Mean row entropy per head (nats), bars in the head colours, with the uniform-attention level.

    ``log(n_keys)`` is the entropy of attending to every key equally (the ceiling without a
    mask); 0 is one-hot. With the causal mask query i has only i + 1 keys, so the ceiling is
    the mean of ``log(i + 1)``.
    """
    h = np.asarray(head_entropy, dtype=float)
    heads = list(range(len(h)))
    ceiling = smh.uniform_entropy(n_keys, is_causal=is_causal)
    bar = go.Bar(
        x=heads, y=h, marker_color=[head_color(k) for k in heads], marker_line=dict(color="#555", width=0.5),
        customdata=[fmt(v, 3) for v in h],
        hovertemplate=_("head %{x}: mean entropy %{customdata} nats") + "<extra></extra>",
        text=[fmt(v, 2) for v in h] if len(h) <= 16 else None, textposition="inside", insidetextanchor="middle",
    )
    y_top = max(ceiling, float(h.max(initial=0))) * 1.2 + 1e-9
    line, notes = hline(ceiling, dict(dash="dash", color="#444"),
                        _("uniform over the allowed keys: {value}").format(value=fmt(ceiling, 2)))
    xaxis = dict(title=dict(text=_("head")), tickmode="array")
    xaxis["tickvals"] = tick_positions(len(h), max_ticks(BAR_PLOT_PX))  # as many as a phone holds
    return go.Figure(data=[bar], layout=dict(  # one constructor call: add_hline and update_* cost 5x more
        shapes=[line], annotations=notes, xaxis=xaxis,
        yaxis=dict(title=dict(text=_("mean entropy (nats)")), range=[0, y_top]),
        height=300, margin=bar_margin(auto_tick_labels(0, y_top), 30), showlegend=False,
        separators=i18n.plotly_separators(),
    ))


def sample_note(d_model: int) -> str:
    """A caption's note when ``d_model`` is too large for :func:`blocked_heatmap` to draw every row and column
    (``""`` otherwise)."""
    if d_model <= MAX_AXIS:
        return ""
    step = int(sample_indices(d_model)[1])
    return " " + _("d_model = {d_model} is large, so one row and column in every {step} is drawn (ticks give "
                   "the true indices); the numbers expander has them all.").format(d_model=d_model, step=step)

