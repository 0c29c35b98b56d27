"""Figures of the causal-mask page: the boolean mask, the additive mask, badges, "no peeking" bars.

Same rules as :mod:`explorer.shell.charts`: rows are queries top to bottom, columns keys left
to right, plotted by position, tokens escaped, hover ``query tok (i) → key tok (j): value``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import (
    CELL_TEXT_MAX,
    COLORBAR_AT,
    cell_text_font,
    cell_text_size,
    chart_title,
    colorbar_px,
    escape_label,
    heatmap,
    heatmap_margin,
    max_ticks,
    paired_bars,
    plot_px,
    tick_angles,
    tick_positions,
    title_top,
)
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

ALLOWED_COLOR = "#3b78c2"
BLOCKED_COLOR = "#d4d4d4"
NEG_INF = "−∞"  # U+2212: shown as text, never as a raw float
FULLY_MASKED_BADGE = N_("fully masked: no key to attend to")  # shown translated: _(FULLY_MASKED_BADGE)


def _check_square(matrix: np.ndarray, labels: Sequence[str], name: str) -> None:
    if matrix.ndim != 2 or matrix.shape != (len(labels), len(labels)):
        raise ValueError(f"{name} must be [n, n] with one label per token, got {matrix.shape} and {len(labels)} labels")


def _layout(labels: Sequence[str], title: str, height: int | None, colorbar: int = 0) -> dict:
    """The mask maps' layout, for one ``go.Figure(data=..., layout=...)`` call (``update_*`` calls cost 5x more);
    ``colorbar``: the right margin the colour bar needs (:func:`~explorer.shell.charts.colorbar_px`), 0 for none."""
    n = len(labels)
    ticks = [escape_label(s) for s in labels]
    phone = plot_px(labels, colorbar_chars=16)  # as many labels as a phone's map holds (the hover names every cell)
    shown = tick_positions(n, max_ticks(phone))  # the first and the last always; rotated labels hang left, so the
    # last one stays inside the figure (Plotly hides a tick label that runs past the figure's edge)
    angles = tick_angles(len(shown), phone)
    layout = dict(
        xaxis=dict(tickmode="array", tickvals=shown, ticktext=[ticks[i] for i in shown], title=dict(text=_("key")),
                   showgrid=False, zeroline=False, range=[-0.5, n - 0.5], autotickangles=angles),
        yaxis=dict(tickmode="array", tickvals=shown, ticktext=[ticks[i] for i in shown],
                   title=dict(text=_("query")), autorange="reversed", showgrid=False, zeroline=False),
        # Margins that hold the labels and the legend from the start: Plotly draws the map once (issue 20)
        margin=heatmap_margin([labels[i] for i in shown], [labels[i] for i in shown], x_upright=0 in angles,
                              colorbar=colorbar, top=title_top(title)),
        height=height or int(min(620, max(240, 34 * n + 110))), separators=i18n.plotly_separators(),
    )
    if title:
        layout["title"] = chart_title(title)
    return layout


def _two_level(mask: np.ndarray, labels: Sequence[str], cell_text: tuple[str, str], hover_text: tuple[str, str],
               legend: tuple[str, str], title: str, height: int | None, show_legend: bool = True) -> go.Figure:
    """A bool ``[n, n]`` matrix as two colours: index 0 of each pair is for blocked, 1 for allowed."""
    n = len(labels)
    ticks = [escape_label(s) for s in labels]
    custom = np.empty((n, n, 3), dtype=object)
    custom[..., 0] = np.array(ticks, dtype=object)[:, None]
    custom[..., 1] = np.array(ticks, dtype=object)[None, :]
    custom[..., 2] = np.where(mask, hover_text[1], hover_text[0])
    trace = dict(
        z=mask.astype(int).tolist(), x=list(range(n)), y=list(range(n)), zmin=0, zmax=1, xgap=1, ygap=1,
        colorscale=[[0.0, BLOCKED_COLOR], [0.5, BLOCKED_COLOR], [0.5, ALLOWED_COLOR], [1.0, ALLOWED_COLOR]],
        colorbar=dict(tickmode="array", tickvals=[0.25, 0.75], ticktext=list(legend), thickness=12, len=0.6,
                      **COLORBAR_AT),
        customdata=custom, showscale=show_legend,
        hovertemplate=_("query {query} → key {key}: {value}").format(
            query="%{customdata[0]}", key="%{customdata[1]}", value="%{customdata[2]}") + "<extra></extra>",
    )
    # The words while they fit a phone's cells, else their first letters (T / F), else no text (colours, legend).
    legend_chars = max(len(t) for t in legend) if show_legend else 0
    short = [tuple(t[:1] for t in cell_text)] if min(len(t) for t in cell_text) > 2 else []
    font = None
    for cells in [cell_text, *short] if n <= CELL_TEXT_MAX else []:
        if size := cell_text_size(cells, n, labels, colorbar_chars=legend_chars):
            font = dict(size=size)
            break
    else:  # nothing fits a phone: the words where the chart is wide enough (app.css hides them below)
        cells = cell_text
        font = cell_text_font(cell_text, n, labels, colorbar_chars=legend_chars) if n <= CELL_TEXT_MAX else None
    if font:
        trace.update(text=np.where(mask, cells[1], cells[0]), texttemplate="%{text}", textfont=font)
    return go.Figure(data=[go.Heatmap(**trace)],
                     layout=_layout(labels, title, height, colorbar_px(legend) if show_legend else 0))


def boolean_mask_figure(mask, labels: Sequence[str], *, title: str = "", height: int | None = None,
                        short: bool = False, show_legend: bool = True, badges: Sequence[int] = (),
                        badge_text: str | None = None) -> go.Figure:
    """The boolean mask ``[n, n]`` (``True`` = may attend) in two colours, with a legend saying so.

    Cells read ``True`` / ``False`` (``T`` / ``F`` with ``short``, while ≤ ``CELL_TEXT_MAX`` tokens); hover ``query …
    → key …: True (may attend)``. ``show_legend=False`` drops the colour legend (for small multiples whose caption
    says it). The rows in ``badges`` carry :func:`add_row_badges`' badge (``badge_text``).

    Raises:
        ValueError: ``mask`` is not a square boolean matrix matching ``labels``.
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    _check_square(mask, labels, "mask")
    cells = ("F", "T") if short else ("False", "True")  # Python's bool values: never translated
    fig = _two_level(mask, labels, cells, (_("False (blocked)"), _("True (may attend)")),
                     (_("False: blocked"), _("True: may attend")), title, height, show_legend)
    return add_row_badges(fig, badges, len(labels), badge_text) if len(badges) else fig


def additive_mask_figure(additive, labels: Sequence[str], *, title: str = "", height: int | None = None) -> go.Figure:
    """The additive mask ``[n, n]`` (0 where allowed, ``-inf`` where blocked), cells printed ``0`` / ``−∞``: the
    infinite values never reach Plotly (it colours a 0/1 matrix and prints the text ``−∞``).

    Raises:
        ValueError: entries other than 0 and ``-inf``, or a shape that does not match ``labels``.
    """
    additive = np.asarray(additive, dtype=float)
    _check_square(additive, labels, "additive")
    if not np.all((additive == 0) | np.isneginf(additive)):
        raise ValueError("additive must hold only 0 (may attend) and -inf (blocked)")
    return _two_level(additive == 0, labels, (NEG_INF, "0"),
                      (_("{neg_inf} (blocked)").format(neg_inf=NEG_INF), _("0 (may attend)")),
                      (_("{neg_inf}: blocked").format(neg_inf=NEG_INF), _("0: may attend")), title, height)


def add_row_badges(fig: go.Figure, rows, n_cols: int, text: str | None = None) -> go.Figure:
    """Write a badge across each row in ``rows`` of a heat map with ``n_cols`` columns (in place, returned); ``text``
    (already in the run's language) defaults to :data:`FULLY_MASKED_BADGE`, translated."""
    text = _(FULLY_MASKED_BADGE) if text is None else text
    for r in rows:
        fig.add_annotation(x=(n_cols - 1) / 2, y=int(r), text=f"⛔ {escape_label(text)}", showarrow=False,
                           font=dict(size=11, color="#7a4b00"), bgcolor="rgba(255, 243, 205, 0.95)",
                           bordercolor="#d39e00", borderwidth=1, borderpad=2)
    return fig


def add_row_separator(fig: go.Figure, t: int, n_cols: int) -> go.Figure:
    """A dashed line under row ``t`` of a heat map (rows ≤ t above it), in place, returned."""
    return fig.add_shape(type="line", x0=-0.5, x1=n_cols - 0.5, y0=t + 0.5, y1=t + 0.5,
                         line=dict(color="#d62728", width=2, dash="dash"))


def weights_map(weights, labels: Sequence[str], mask, fully, *, title: str = "",
                color_scale: str | None = None) -> go.Figure:
    """Attention weights ``[n, n]`` under ``mask`` (bool ``[n, n]``, ``True`` = may attend: blocked cells blank with a
    ×; a mask that allows everything draws no × at all), a badge across each fully masked row (``fully``, bool
    ``[n]``); coloured on ``color_scale`` (:data:`explorer.shell.charts.COLOR_SCALES`)."""
    mask = np.asarray(mask)
    fig = heatmap(weights, labels, labels, mask=None if mask.all() else mask, title=title, color_scale=color_scale)
    return add_row_badges(fig, np.flatnonzero(fully), len(labels))


def output_map(output, labels: Sequence[str], dims: Sequence[str], fully, *, title: str = "") -> go.Figure:
    """The attention output ``[n, d_v]`` on a diverging scale, a badge across each fully masked row (``fully``)."""
    fig = heatmap(output, labels, dims, kind="diverging", row_name=_("token"), col_name=_("dim"), title=title)
    return add_row_badges(fig, np.flatnonzero(fully), len(dims))


def change_map(diff, labels: Sequence[str], dims: Sequence[str], t: int, zrange: tuple[float, float], *,
               title: str = "") -> go.Figure:
    """How much the output ``[n, d_v]`` moved (after − before) on ``zrange``, a dashed line under row ``t`` while rows
    after it exist (the replaced tokens)."""
    fig = heatmap(diff, labels, dims, kind="diverging", row_name=_("token"), col_name=_("dim"), zrange=zrange,
                  title=title, colorbar_title="Δ")
    return add_row_separator(fig, t, len(dims)) if t < len(labels) - 1 else fig


def exact_change_text(value: float) -> str:
    """A row's largest change as text: ``0 (exact)`` only when it is exactly 0.0, else 3 significant digits (with
    the run's decimal mark)."""
    return _("0 (exact)") if value == 0.0 else i18n.general(value)


def row_change_bars(change_bidirectional, change_causal, labels: Sequence[str], t: int, *, title: str = "",
                    height: int = 340) -> go.Figure:
    """Largest change of each output row (``change_bidirectional``, ``change_causal``: ``[n]``, ``max_j |Δ
    output[i, j]|``, one per label) after replacing the tokens after ``t``, both modes side by side; a dashed line
    after row ``t``. ``ValueError`` when the lengths differ."""
    b, c = (np.asarray(a, dtype=float) for a in (change_bidirectional, change_causal))
    n = len(labels)  # paired_bars checks that both series have one value per label
    top = float(max(b.max(initial=0.0), c.max(initial=0.0))) or 1.0
    # The line and its note go in with the figure (one constructor call: add_shape/add_annotation cost 5x more).
    line = dict(type="line", x0=t + 0.5, x1=t + 0.5, y0=0, y1=top * 1.15, line=dict(color="#d62728", dash="dash"))
    note = dict(x=t + 0.5, y=top * 1.15, text=_("replaced after t = {t}").format(t=t), showarrow=False,  # short
                xanchor="right" if t >= n / 2 else "left", yanchor="bottom", font=dict(color="#d62728"))
    return paired_bars(
        [(name, values, [exact_change_text(v) for v in values], color)
         for name, values, color in ((_("bidirectional"), b, "#e07b39"), (_("causal"), c, ALLOWED_COLOR))],
        labels, quantity=_("largest |Δ output| ="), x_title=_("query (output row)"), y_title=_("largest |Δ output|"),
        y_max=top * 1.3, title=title, height=height, shapes=[line], annotations=[note],
    )
