"""Shared figure builders: the attention heat map and the weights bar chart."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from explorer.shell.textviews import fmt

# Figures go to the browser through plotly.io.to_json (st.plotly_chart). With orjson installed, Plotly first
# offers the whole figure to orjson, which refuses the object arrays of every heat map (labels, formatted
# values, None gaps) and keeps a reference to each of their items (orjson 3.8.3: about 0.3 MB lost per 64 x 64
# map, so a long session grew without bound); Plotly then cleans the figure and encodes it again. The standard
# json encoder takes them directly: no leak, and faster (17 ms instead of 24 ms for a 64 x 64 map). Same JSON values.
pio.json.config.default_engine = "json"

CELL_TEXT_MAX = 24  # print cell values while both axes have at most this many entries
GAP_MAX = 24  # white gaps between cells while an axis has at most this many entries (more would wash colours out)
CROSS_MAX = 12  # a × on masked cells while both axes have at most this many entries (then the grey gap alone)
HOVER_CELL_MAX = 64 * 64  # above this many cells in one figure: light hover (positions, rounded values; payload).
# 64 x 64: every token-by-token map of the app (at most MAX_TOKENS = 64 tokens) keeps token labels in its hover.

WEIGHTS_SCALE = "Blues"
DIVERGING_SCALE = "RdBu_r"
MASKED_COLOR = "rgba(128, 128, 128, 0.35)"

KINDS = ("weights", "diverging")


def escape_label(text: str) -> str:
    """A user's token as literal text for Plotly: ``<b>`` stays the four characters ``<b>``.

    Plotly renders a few HTML tags in labels and hover text and decodes entities,
    so escaping ``& < >`` shows the text exactly as typed (quotes need no escaping: with
    ``<`` escaped there is no tag for them to break out of).
    """
    return html.escape(str(text), quote=False)  # Plotly decodes &lt; &gt; &amp;, not &quot;


def _fmt_matrix(z: np.ndarray, digits: int, mask: np.ndarray | None) -> np.ndarray:
    text = np.vectorize(lambda v: fmt(v, digits), otypes=[object])(z) if z.size else z.astype(object)
    if mask is not None:
        text = np.where(mask, text, "masked")
    return text


def _light_values(z: np.ndarray, kind: str, digits: int) -> np.ndarray:
    """``z`` rounded for a light map (NaN stays NaN): weights (in ``[0, 1]``) to ``digits`` decimals, what the
    hover shows and far finer than a colour step; other values, of any size, to 4 significant digits."""
    if kind == "weights":
        return np.round(z, digits)
    return np.asarray([float(f"{v:.4g}") for v in z.ravel()]).reshape(z.shape)


def heatmap(
    z,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str = "",
    kind: str = "weights",
    row_name: str = "query",
    col_name: str = "key",
    mask=None,
    zrange: tuple[float, float] | None = None,
    digits: int = 3,
    show_text: bool | None = None,
    height: int | None = None,
    colorbar_title: str | None = None,
    max_xticks: int = 40,
    light: bool | None = None,
) -> go.Figure:
    """A matrix as a heat map with the app's rules.

    Args:
        z: ``[n_rows, n_cols]`` finite numbers (row i = query/token i).
        row_labels, col_labels: one label per row / column (tokens are escaped here;
            repeated labels stay distinct rows because cells are placed by position).
        title: figure title (plain text, escaped).
        kind: ``"weights"`` (sequential scale on ``[0, 1]`` unless ``zrange``) or
            ``"diverging"`` (centred on 0, symmetric range ``±max|z|`` unless ``zrange``).
        row_name, col_name: words used in the hover (``query … → key …``); when
            ``col_name`` is not ``"key"`` the hover reads ``row · col`` instead of an arrow.
        mask: optional bool ``[n_rows, n_cols]``, ``True`` = may attend; masked cells
            are left blank (grey background; a ``×`` while both axes ≤ ``CROSS_MAX``),
            hover says ``masked``.
        zrange: fixed colour range ``(zmin, zmax)``, e.g. to share one range across figures.
        digits: decimals in hover and cell text.
        show_text: print values in the cells; default when both axes ≤ ``CELL_TEXT_MAX``;
            never on a light map (below).
        max_xticks: at most about this many column labels (every k-th; the hover names every
            cell); lower it for a figure in a narrow column.
        light: force the light map (below) on or off; default: light above ``HOVER_CELL_MAX`` cells.
            For a map whose positions are its labels (dimension indices), light loses nothing.

    Size rules: an axis longer than ``GAP_MAX`` has no white gaps between its cells. Above
    ``HOVER_CELL_MAX`` cells the map is *light*, for payload: the hover names positions
    (``query 3 → key 5: 0.125``) instead of carrying every cell's labels, and the values sent
    are rounded, weights to ``digits`` decimals (what the hover shows), other values to 4
    significant digits (about what a colour can show).

    Returns:
        ``go.Figure`` with the y axis reversed: the top-left cell is row 0, column 0.

    Raises:
        ValueError: ``z`` is not 2-D, the labels do not match its shape, or ``kind`` is unknown.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"z must be 2-D [n_rows, n_cols], got shape {z.shape}")
    n_rows, n_cols = z.shape
    if len(row_labels) != n_rows or len(col_labels) != n_cols:
        raise ValueError(f"labels ({len(row_labels)} rows, {len(col_labels)} cols) do not match z {z.shape}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), z.shape)
    rows = [escape_label(s) for s in row_labels]
    cols = [escape_label(s) for s in col_labels]
    shown = z if mask is None else np.where(mask, z, np.nan)
    light = n_rows * n_cols > HOVER_CELL_MAX if light is None else bool(light)

    if zrange is None:
        if kind == "weights":
            zrange = (0.0, 1.0)
        else:
            finite = shown[np.isfinite(shown)]
            top = float(np.abs(finite).max()) if finite.size else 1.0
            top = top or 1.0
            zrange = (-top, top)
    colorscale = WEIGHTS_SCALE if kind == "weights" else DIVERGING_SCALE
    if light:
        shown = _light_values(shown, kind, digits)
    z_plot = np.where(np.isfinite(shown), shown, None)  # masked cells -> gaps (never "NaN" text)

    arrow = col_name == "key"
    sep = " → " if arrow else " · "
    trace = dict(
        z=z_plot, x=list(range(n_cols)), y=list(range(n_rows)),
        zmin=zrange[0], zmax=zrange[1], colorscale=colorscale,
        xgap=1 if n_cols <= GAP_MAX else 0, ygap=1 if n_rows <= GAP_MAX else 0,  # gaps would wash out thin cells
        colorbar=dict(title=dict(text=colorbar_title or ("weight" if kind == "weights" else "value")), thickness=12),
        hoverongaps=True,
    )
    if kind == "diverging":
        trace["zmid"] = 0.0
    if light:  # positions and the rounded value: per-cell labels would dominate what the browser downloads
        trace["hovertemplate"] = f"{row_name} %{{y}}{sep}{col_name} %{{x}}: %{{z:.{digits}f}}<extra></extra>"
    else:
        text = _fmt_matrix(z, digits, mask)
        custom = np.empty((n_rows, n_cols, 3), dtype=object)
        custom[..., 0] = np.array(rows, dtype=object)[:, None]
        custom[..., 1] = np.array(cols, dtype=object)[None, :]
        custom[..., 2] = text
        trace["customdata"] = custom
        trace["hovertemplate"] = (
            f"{row_name} %{{customdata[0]}}{sep}{col_name} %{{customdata[1]}}: %{{customdata[2]}}<extra></extra>"
        )
        if show_text is None:
            show_text = n_rows <= CELL_TEXT_MAX and n_cols <= CELL_TEXT_MAX
        if show_text:
            trace["text"] = np.where(text == "masked", "", text)
            trace["texttemplate"] = "%{text}"
            trace["textfont"] = dict(size=10 if max(n_rows, n_cols) > 10 else 12)

    traces = [go.Heatmap(**trace)]
    if mask is not None and (~mask).any() and max(n_rows, n_cols) <= CROSS_MAX:
        r, c = np.nonzero(~mask)
        traces.append(go.Scatter(
            x=c, y=r, mode="text", text=["×"] * len(r), textfont=dict(color="rgba(90,90,90,0.9)", size=14),
            hoverinfo="skip", showlegend=False,
        ))
    x_every = max(1, int(np.ceil(n_cols / max_xticks)))
    y_every = max(1, int(np.ceil(n_rows / 40)))
    layout = dict(
        xaxis=dict(tickmode="array", tickvals=list(range(0, n_cols, x_every)), ticktext=cols[::x_every],
                   title=dict(text=col_name), side="bottom", showgrid=False, zeroline=False,
                   range=[-0.5, n_cols - 0.5]),
        yaxis=dict(tickmode="array", tickvals=list(range(0, n_rows, y_every)), ticktext=rows[::y_every],
                   title=dict(text=row_name), autorange="reversed", showgrid=False, zeroline=False),
        margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        height=height or int(min(620, max(240, 34 * n_rows + 110))),
    )
    if title:
        layout["title"] = dict(text=escape_label(title))
    if mask is not None:
        layout["plot_bgcolor"] = MASKED_COLOR
    fig = go.Figure(data=traces, layout=layout)  # one constructor call: update_* calls cost 3x more
    return fig


def weights_bar(
    weights, key_labels: Sequence[str], *, title: str = "", query_label: str | None = None,
    yrange: tuple[float, float] = (0.0, 1.0), digits: int = 4, height: int = 300,
) -> go.Figure:
    """One query's attention weights as bars, keys left to right by position.

    Hover: ``query tok (i) → key tok (j): w`` (or ``key tok (j): w`` without a query).
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or len(key_labels) != w.shape[0]:
        raise ValueError(f"weights must be [n_k] with one label per key, got {w.shape} and {len(key_labels)} labels")
    cols = [escape_label(s) for s in key_labels]
    prefix = f"query {escape_label(query_label)} → " if query_label is not None else ""
    bar = go.Bar(
        x=list(range(len(w))), y=w, customdata=np.array([[c, fmt(v, digits)] for c, v in zip(cols, w, strict=True)],
                                                           dtype=object).reshape(-1, 2),
        hovertemplate=f"{prefix}key %{{customdata[0]}}: %{{customdata[1]}}<extra></extra>",
        text=[fmt(v, 3) for v in w] if len(w) <= CELL_TEXT_MAX else None, textposition="outside",
        marker_color="#3b78c2",
    )
    layout = dict(
        xaxis=dict(tickmode="array", tickvals=list(range(len(w))), ticktext=cols, title=dict(text="key")),
        yaxis=dict(range=list(yrange), title=dict(text="weight")),
        height=height, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
    )
    if title:
        layout["title"] = dict(text=escape_label(title))
    fig = go.Figure(data=[bar], layout=layout)
    return fig


def paired_bars(
    series: Sequence[tuple[str, np.ndarray, Sequence[str], str]], labels: Sequence[str], *, quantity: str,
    x_title: str, y_title: str, y_max: float, title: str = "", height: int = 320,
) -> go.Figure:
    """Bar series grouped per position (e.g. bidirectional vs causal, sentence A vs B).

    Args:
        series: ``(name, values [n], formatted values [n], colour)`` per series; names and labels
            are escaped here.
        labels: one label per position (x axis, by position so repeated tokens stay apart).
        quantity: what a bar measures, for the hover (``"entropy"`` ->
            ``A: query cat (1): entropy 1.234``).
        x_title, y_title: axis titles; y_max: top of the y range.

    Raises:
        ValueError: a series' length differs from the labels'.
    """
    n = len(labels)
    ticks = [escape_label(s) for s in labels]
    fig = go.Figure()
    for name, values, shown, color in series:
        values = np.asarray(values, dtype=float)
        if values.shape != (n,) or len(shown) != n:
            raise ValueError(f"{quantity} must be [n] = [{n}], got {values.shape} for {name!r}")
        safe = escape_label(name)
        fig.add_trace(go.Bar(
            name=safe, x=list(range(n)), y=values, marker_color=color,
            customdata=np.array([[tk, tx] for tk, tx in zip(ticks, shown, strict=True)], dtype=object).reshape(-1, 2),
            hovertemplate=f"{safe}: query %{{customdata[0]}}: {quantity} %{{customdata[1]}}<extra></extra>",
            text=list(shown) if n <= CELL_TEXT_MAX else None, textposition="outside", cliponaxis=False,
        ))
    fig.update_xaxes(tickmode="array", tickvals=list(range(n)), ticktext=ticks, title_text=x_title,
                     range=[-0.5, n - 0.5])
    fig.update_yaxes(title_text=y_title, range=[0, y_max])
    fig.update_layout(barmode="group", title=dict(text=escape_label(title)) if title else None, height=height,
                      margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig
