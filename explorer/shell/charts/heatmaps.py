"""The heat map: any matrix with the app's rules (rows top to bottom, labels escaped, masked cells blank).

:func:`heatmap` draws every map of the app: the lessons call it, or copy its traces into grids. Its sizes come
from :mod:`~explorer.shell.charts.geometry` (ticks, cell text, margins) and its colours from
:mod:`~explorer.shell.charts.colors`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts.colors import (
    DIVERGING_SCALE,
    KINDS,
    MASKED_COLOR,
    WEIGHTS_SCALE,
    row_max_outline,
    weight_colorbar,
    weight_colors,
)
from explorer.shell.charts.geometry import (
    CELL_TEXT_MAX,
    COLORBAR_AT,
    COLORBAR_BELOW_PX,
    CROSS_MAX,
    GAP_MAX,
    cell_text_font,
    colorbar_below,
    colorbar_of_px,
    fit_ticks,
    heatmap_margin,
    max_ticks,
    plot_px,
    position_ticks,
    text_px,
    tick_angles,
    tick_positions,
)
from explorer.shell.charts.labels import chart_title, escape_label, title_top
from explorer.shell.textviews import fmt

_, _n = i18n.translator(__name__)

COLORBAR_PLACES = ("right", "below", "none")  # heatmap(colorbar_at=...)
CROSS_ROW_PX = 20  # a 14 px × is drawn in a box 19 px tall: rows lower than this would stack the marks
ROWS_PX_LESS = 160  # a map's height less about this much (title, slanted key labels) is its rows' height
HOVER_CELL_MAX = 64 * 64  # above this many cells in one figure: light hover (positions, rounded values; payload).
# 64 x 64: every token-by-token map of the app (at most MAX_TOKENS = 64 tokens) keeps token labels in its hover.


def _fmt_matrix(z: np.ndarray, digits: int) -> np.ndarray:
    """Every cell's value as the hover and the cells show it (the run's decimal mark)."""
    return np.vectorize(lambda v: fmt(v, digits), otypes=[object])(z) if z.size else z.astype(object)


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
    row_name: str | None = None,
    col_name: str | None = None,
    mask=None,
    zrange: tuple[float, float] | None = None,
    digits: int = 3,
    show_text: bool | None = None,
    height: int | None = None,
    colorbar_title: str | None = None,
    max_xticks: int = 40,
    light: bool | None = None,
    color_scale: str | None = None,
    colorbar_at: str = "right",
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
        show_text: print values in the cells where they fit (:func:`cell_text_size`: on a phone-wide
            chart, at 12 or 10 px); default when both axes ≤ ``CELL_TEXT_MAX``; never on a light
            map (below); ``False``: never.
        max_xticks: at most about this many column labels (every k-th; the hover names every
            cell); lower it for a figure in a narrow column.
        light: force the light map (below) on or off; default: light above ``HOVER_CELL_MAX`` cells.
            For a map whose positions are its labels (dimension indices), light loses nothing.
        color_scale: for a map of attention weights (``kind="weights"``), the learner's colour scale, one of
            :data:`COLOR_SCALES` (:func:`weight_colors`; it replaces ``zrange``); the colour bar marks the
            uniform level ``1/n_cols`` (:func:`weight_colorbar`) and each row's largest weight is outlined
            (:func:`row_max_outline`). Hover and cell text show the true weights. ``None``: a plain map.
        colorbar_at: where the colour bar goes, one of :data:`COLORBAR_PLACES`: ``"right"`` of the map (default),
            ``"below"`` it, across the plot's width under the key axis (a map of many keys: on a phone the side
            bar and its labels take ~110 of its ~330 px, and the keys get their width back), or ``"none"``
            (no bar, no room kept for one: a map read by its hover and cell text, or one of several that share
            a scale shown once). Margins and key labels are sized for the place chosen.

    Size rules: an axis longer than ``GAP_MAX`` has no white gaps between its cells. Above
    ``HOVER_CELL_MAX`` cells the map is *light*, for payload: the hover names positions
    (``query 3 → key 5: 0.125``) instead of carrying every cell's labels, and the values sent
    are rounded, weights to ``digits`` decimals (what the hover shows), other values to 4
    significant digits (about what a colour can show).

    Returns:
        ``go.Figure`` with the y axis reversed: the top-left cell is row 0, column 0.

    Raises:
        ValueError: ``z`` is not 2-D, the labels do not match its shape, ``kind`` is unknown, or
            ``color_scale`` is unknown or given for a map that is not ``kind="weights"``, or ``colorbar_at`` is
            not one of :data:`COLORBAR_PLACES`.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"z must be 2-D [n_rows, n_cols], got shape {z.shape}")
    n_rows, n_cols = z.shape
    if len(row_labels) != n_rows or len(col_labels) != n_cols:
        raise ValueError(f"labels ({len(row_labels)} rows, {len(col_labels)} cols) do not match z {z.shape}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if color_scale is not None and kind != "weights":
        raise ValueError(f"color_scale is for attention weights (kind='weights'), got kind={kind!r}")
    if colorbar_at not in COLORBAR_PLACES:
        raise ValueError(f"colorbar_at must be one of {COLORBAR_PLACES}, got {colorbar_at!r}")
    side_chars = 11 if colorbar_at == "right" else 0  # a phone's plot width is what a side colour bar leaves
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), z.shape)
    rows = [escape_label(s) for s in row_labels]
    cols = [escape_label(s) for s in col_labels]
    shown = z if mask is None else np.where(mask, z, np.nan)
    light = n_rows * n_cols > HOVER_CELL_MAX if light is None else bool(light)

    true_shown = shown
    if color_scale is not None:
        shown, zrange = weight_colors(z, color_scale, mask)
    if zrange is None and kind == "weights":
        zrange = (0.0, 1.0)
    elif zrange is None:
        finite = np.abs(shown[np.isfinite(shown)])
        top = (float(finite.max()) if finite.size else 0.0) or 1.0
        zrange = (-top, top)
    if light:
        shown = _light_values(shown, kind, digits)
        true_shown = _light_values(true_shown, kind, digits)
    z_plot = np.where(np.isfinite(shown), shown, None)  # masked cells -> gaps (never "NaN" text)

    sep = " → " if col_name in (None, "key") else " · "  # query → key; any other pair of axes reads "row · col"
    row_name = _("query") if row_name is None else row_name
    col_name = _("key") if col_name in (None, "key") else col_name
    trace = dict(
        z=z_plot, x=list(range(n_cols)), y=list(range(n_rows)),
        zmin=zrange[0], zmax=zrange[1], colorscale=WEIGHTS_SCALE if kind == "weights" else DIVERGING_SCALE,
        xgap=1 if n_cols <= GAP_MAX else 0, ygap=1 if n_rows <= GAP_MAX else 0,  # gaps would wash out thin cells
        colorbar=dict(title=dict(text=colorbar_title or (_("weight") if kind == "weights" else _("value"))),
                      thickness=12, **COLORBAR_AT),
        hoverongaps=True,
    )
    if kind == "diverging":
        trace["zmid"] = 0.0
    if color_scale is not None:
        trace["colorbar"] = {**weight_colorbar(color_scale, zrange, n_cols, colorbar_title), **COLORBAR_AT}
    if light and color_scale == "row":  # colours are fractions of the row's largest weight: hover the true weight
        trace["customdata"] = np.where(np.isfinite(true_shown), true_shown, None)
        trace["hovertemplate"] = (f"{row_name} %{{y}}{sep}{col_name} %{{x}}: %{{customdata:.{digits}f}}"
                                  "<extra></extra>")
    elif light:  # positions and the rounded value: per-cell labels would dominate what the browser downloads
        trace["hovertemplate"] = f"{row_name} %{{y}}{sep}{col_name} %{{x}}: %{{z:.{digits}f}}<extra></extra>"
    else:
        values = _fmt_matrix(z, digits)
        text = values if mask is None else np.where(mask, values, _("masked"))
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
        cells = values if mask is None else np.where(mask, values, "")
        chars = (11 if color_scale in ("fixed", "map") else 6) if colorbar_at == "right" else 0
        font = cell_text_font(cells, n_cols, row_labels, colorbar_chars=chars) if show_text else None
        if font:
            trace.update(text=cells, texttemplate="%{text}", textfont=font)

    height = height or int(min(620, max(240, 34 * n_rows + 110)))
    traces = [go.Heatmap(**trace)]
    if (mask is not None and (~mask).any() and max(n_rows, n_cols) <= CROSS_MAX
            and plot_px(row_labels, colorbar_chars=side_chars) / n_cols >= text_px("×", 14) + 4  # a × fits a phone's
            and (height - ROWS_PX_LESS) / n_rows >= CROSS_ROW_PX):  # cell, and a row holds it
        r, c = np.nonzero(~mask)
        traces.append(go.Scatter(
            x=c, y=r, mode="text", text=["×"] * len(r), textfont=dict(color="rgba(90,90,90,0.9)", size=14),
            hoverinfo="skip", showlegend=False,
        ))
    if color_scale is not None:
        outline = row_max_outline(z, mask)
        if outline is not None:
            traces.append(outline)
    # As many labels as a phone's map holds (about 20 px apart; the hover names every cell).
    phone_width = plot_px(row_labels, colorbar_chars=side_chars)
    x_count = min(max_xticks, max_ticks(phone_width))
    x_ticks = tick_positions(n_cols, x_count)
    y_ticks = tick_positions(n_rows, min(40, max_ticks(height - ROWS_PX_LESS)))
    fitted = len(x_ticks) < n_cols  # a phone's map does not hold every key: the browser labels them for its width
    x_angles = tick_angles(len(x_ticks), phone_width) \
        if len(x_ticks) >= n_cols or max(text_px(c, 12) for c in cols) < 60 else [-90]
    colorbar = trace["colorbar"]
    margin = heatmap_margin(
        [row_labels[i] for i in y_ticks], col_labels,
        # Upright where Plotly keeps them upright on a desktop chart (a phone's may turn them: a second layout); a
        # bar below is placed from this margin, so it leaves room for the labels a phone turns (issue 47); keys the
        # browser labels for its width (fit_ticks) may stand on end at any width: room for them from the start
        x_upright=not fitted and 0 in x_angles and (
            colorbar_at != "below" or max(text_px(cols[i], 12) for i in x_ticks) + 6 <= phone_width / len(x_ticks)),
        colorbar=colorbar_of_px(colorbar, zrange) if colorbar_at == "right" else 0,
        top=title_top(title))
    if colorbar_at == "below":  # under the key labels and the axis title; the map keeps its height
        traces[0].colorbar.update(colorbar_below(colorbar, margin["b"], height - margin["t"] - margin["b"]))
        margin["b"] += COLORBAR_BELOW_PX
        height += COLORBAR_BELOW_PX
    elif colorbar_at == "none":
        traces[0].showscale = False
    layout = dict(
        # Rotated key labels hang to the left of their tick (negative angles), so the last one stays inside the
        # figure: Plotly hides a tick label that runs past the figure's edge ("hide past div").
        xaxis=dict(**position_ticks(cols, x_ticks, x_count), title=dict(text=col_name), side="bottom", showgrid=False,
                   zeroline=False, range=[-0.5, n_cols - 0.5], autotickangles=x_angles),
        # The map's height is the same on every screen: its row labels are thinned for that height alone.
        yaxis=dict(tickmode="array", tickvals=y_ticks, ticktext=[rows[i] for i in y_ticks],
                   title=dict(text=row_name), autorange="reversed", showgrid=False, zeroline=False),
        margin=margin,
        height=height,
        separators=i18n.plotly_separators(),  # the decimal mark of the run's language in ticks and hovers
    )
    if fitted:
        layout["meta"] = fit_ticks({"xaxis": cols})
    if title:
        layout["title"] = chart_title(title)
    if mask is not None:
        layout["plot_bgcolor"] = MASKED_COLOR
    return go.Figure(data=traces, layout=layout)  # one constructor call: update_* calls cost 3x more
