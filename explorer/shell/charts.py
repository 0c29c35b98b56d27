"""Shared figure builders: the attention heat map and the weights bar chart."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from explorer.shell import plotly_fast
from explorer.shell.textviews import fmt

# Figures go to the browser through plotly.io.to_json (st.plotly_chart). With orjson installed, Plotly first
# offers the whole figure to orjson, which refuses the object arrays of every heat map (labels, formatted
# values, None gaps) and keeps a reference to each of their items (orjson 3.8.3: about 0.3 MB lost per 64 x 64
# map, so a long session grew without bound); Plotly then cleans the figure and encodes it again. The standard
# json encoder takes them directly: no leak, and faster (17 ms instead of 24 ms for a 64 x 64 map). Same JSON values.
pio.json.config.default_engine = "json"
plotly_fast.install()  # st.plotly_chart's fig.to_dict(): the same dict, about 8x faster (see plotly_fast)

CELL_TEXT_MAX = 24  # print cell values while both axes have at most this many entries
GAP_MAX = 24  # white gaps between cells while an axis has at most this many entries (more would wash colours out)
CROSS_MAX = 12  # a × on masked cells while both axes have at most this many entries (then the grey gap alone)
PHONE_CHART_PX = 330  # the narrowest a chart gets: a 390 px phone less the page's padding (358), or a column
TICK_GAP_PX = 20  # at least this far apart, tick labels never touch (upright on end, or upright rows)
HOVER_CELL_MAX = 64 * 64  # above this many cells in one figure: light hover (positions, rounded values; payload).
# 64 x 64: every token-by-token map of the app (at most MAX_TOKENS = 64 tokens) keeps token labels in its hover.

WEIGHTS_SCALE = "Blues"
DIVERGING_SCALE = "RdBu_r"
MASKED_COLOR = "rgba(128, 128, 128, 0.35)"

KINDS = ("weights", "diverging")

COLOR_SCALES = {  # the learner's colour scale for attention-weight maps (also its value in the link) -> meaning
    "fixed": "0 to 1, the same on every map",
    "map": "0 to the map's largest weight",
    "row": "each row: 0 to its own largest weight",
}
COLORBAR_AT = dict(x=1.0)  # a colour bar's place (see heatmap_margin): its right margin is its width alone
ROW_MAX_COLOR = "#f08c00"  # outline of each row's largest weight: orange, visible on pale and dark blue


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


def text_px(text: str, size: float) -> float:
    """About how wide ``text`` is drawn in Plotly's default font (Open Sans) at ``size`` px: digits 0.57 em,
    ``.`` 0.27 em, ``-`` 0.32 em, other characters 0.6 em (a little more than most letters)."""
    em = {".": 0.27, "-": 0.32, " ": 0.26, "(": 0.3, ")": 0.3}
    return size * sum(em.get(ch, 0.57 if ch.isdigit() else 0.6) for ch in text)


def plot_px(row_labels: Sequence[str], *, colorbar_chars: int = 11, width_px: float = PHONE_CHART_PX) -> float:
    """About how wide the plot area of a heat map ``width_px`` wide is, after its row labels and colour bar."""
    # Measured in Chromium at 390 px: labels + 40 (pad, axis title), colour bar labels (about 0.52 em a character)
    # + 15 (bar, pads), 38 more (margins).
    labels_px = max((text_px(str(lab), 12) for lab in row_labels), default=0.0) + 40
    colorbar_px = (0.52 * 12 * colorbar_chars + 15) if colorbar_chars else 0.0
    return width_px - labels_px - colorbar_px - 38


def max_ticks(length_px: float) -> int:
    """How many tick labels an axis ``length_px`` long holds, :data:`TICK_GAP_PX` apart (at least 2)."""
    return max(2, int(length_px // TICK_GAP_PX))


def tick_angles(n_cols: int, plot_width: float) -> list[int]:
    """Plotly's ``autotickangles`` for ``n_cols`` column labels on a plot ``plot_width`` px wide (on a phone).

    Plotly takes the first angle at which it thinks the labels do not overlap; it is generous with
    slanted labels, which touch when the columns are narrower than about 34 px at 45°. So 45° is offered
    only while a column is that wide on a phone (upright labels when they fit, at any width).
    """
    return [0, -45, -90] if plot_width / max(n_cols, 1) * 0.707 >= 24.0 else [0, -90]


def cell_text_size(texts, n_cols: int, row_labels: Sequence[str], *, colorbar_chars: int = 11,
                   width_px: float = PHONE_CHART_PX) -> int | None:
    """The font size (12 or 10 px) at which every cell's text fits its cell with a 3 px gap, or ``None``.

    The cell's width is estimated for a heat map ``width_px`` wide (default: a phone's, the narrowest
    a chart gets; a chart in a desktop column is about as wide): the plot is what the row labels, the
    axis title, a colour bar with ``colorbar_chars``-character labels and the margins leave, split
    into ``n_cols`` cells. So a map prints its numbers only where they can be read on a phone too
    (issue 18, item 13); the hover always has them.
    """
    longest = max((str(t) for t in np.ravel(texts)), key=len, default="")
    cell = plot_px(row_labels, colorbar_chars=colorbar_chars, width_px=width_px) / max(n_cols, 1)
    for size in (12, 10):
        if text_px(longest, size) + 3 <= cell:
            return size
    return None


# Cell text that fits only a wider chart than a phone's: drawn in a font family naming the narrowest chart it fits
# (``cells-min-480`` … ``cells-min-1000``; the browser skips the unknown family and uses Open Sans), which
# ``explorer/shell/app.css`` hides with a container query while the chart is narrower. A desktop map keeps its
# numbers; the same map in a phone's or a narrow column's width drops them (the hover keeps every value).
WIDE_CELL_TEXT_PX = (480, 640, 800, 1000)
PLOTLY_FONTS = '"Open Sans", verdana, arial, sans-serif'


def cell_text_font(texts, n_cols: int, row_labels: Sequence[str], *, colorbar_chars: int = 11) -> dict | None:
    """``textfont`` for a heat map's cell text: the size at a phone's width (:func:`cell_text_size`) or, when it
    fits only a wider chart, the size there and the family ``cells-min-W`` of the narrowest such width ``W`` of
    :data:`WIDE_CELL_TEXT_PX` (hidden below it by ``app.css``); ``None`` when it fits none of them."""
    size = cell_text_size(texts, n_cols, row_labels, colorbar_chars=colorbar_chars)
    if size:
        return dict(size=size)
    for width in WIDE_CELL_TEXT_PX:
        size = cell_text_size(texts, n_cols, row_labels, colorbar_chars=colorbar_chars, width_px=width)
        if size:
            return dict(size=size, family=f"cells-min-{width}, {PLOTLY_FONTS}")
    return None


# Margins sent with a figure (issue 20): Plotly's automatic margins grow a margin that is too small to hold the
# tick labels, axis titles and colour bar, and then lay out and draw the whole chart a second time (in Chromium,
# ~40 % of a warm lesson's drawing task). Starting from margins at least that large, estimated from the labels
# drawn, it draws once; automargin stays on for what an estimate misses. Measured in Chromium (Plotly.js 3.8,
# Streamlit theme): a margin is the tick labels' extent + AXIS_PAD_PX (pad, axis title, base margin).
AXIS_PAD_PX = 62.5
UPRIGHT_X_PX = 74  # the bottom margin under upright key labels (12 px) and the x axis title
AUTOMARGIN_PAD_PX = 12  # Plotly adds min(12, every margin) beyond what the labels need
# A colour bar at COLORBAR_AT (x = 1, paper) needs a right margin of its own width alone; at Plotly's default
# x = 1.02 it also needs 2 % of the plot's width, which the figure does not know (a phone's or a desktop's).
COLORBAR_XPAD = 10  # Plotly's default padding on each side of a colour bar (px)
# The Streamlit theme draws chart text in the app's font (Source Sans), narrower than text_px's Open Sans: widths
# in em, a little more than measured in Chromium (digits 0.497, "mat (5)" 2.96 em, "d_model 0" 4.43, "uniform 1/6"
# 4.88, titles at 14 px "mean" 2.36, "weight" 2.86).
_THEME_EM = {**dict.fromkeys("ijl!'|.,:;", 0.27), **dict.fromkeys("ftrI", 0.38), **dict.fromkeys("()[]", 0.31),
             **dict.fromkeys("0123456789−-+", 0.51), " ": 0.21, "_": 0.5, "/": 0.35, "m": 0.84, "w": 0.74,
             "M": 0.8, "W": 0.9}


def theme_text_px(text: str, size: float) -> float:
    """About how wide ``text`` is drawn in the Streamlit theme's chart font at ``size`` px (an over-estimate for
    most text: other lower-case letters 0.55 em, upper-case 0.65 em, anything else 0.6 em)."""
    return size * sum(_THEME_EM.get(ch, 0.55 if ch.islower() else 0.65 if ch.isupper() else 0.6) for ch in text)


def label_px(labels: Sequence[str]) -> float:
    """About the widest of ``labels`` drawn as 12 px tick labels in the Streamlit theme (0 for none)."""
    return max((theme_text_px(str(s), 12) for s in labels), default=0.0)


def auto_tick_labels(lo: float, hi: float) -> list[str]:
    """About the longest labels Plotly's automatic ticks on ``[lo, hi]`` can get: a finer step than Plotly's
    (more decimals: an over-estimate), formatted as Plotly does (``−`` for minus, no trailing zeros)."""
    span = abs(hi - lo) or 1.0
    raw = span / 8
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)  # Plotly's linear steps: 1, 2, 5 x 10^k
    decimals = max(0, int(-np.floor(np.log10(step) + 1e-9)))
    ticks = np.arange(np.ceil(lo / step) * step, hi + step / 2, step)
    return [f"{t:.{decimals}f}".replace("-", "−") for t in ticks if lo - 1e-9 <= t <= hi + 1e-9] or ["0"]


def colorbar_px(labels: Sequence[str], title: str = "", thickness: float = 12, xpad: float = COLORBAR_XPAD) -> int:
    """The right margin a vertical colour bar at ``x = 1`` needs: its width (pads, bar, 12 px tick labels or its
    14 px title, whichever is wider) and Plotly's automargin pad."""
    title_px = theme_text_px(title, 14)
    return int(np.ceil(AUTOMARGIN_PAD_PX + 2 * xpad + max(thickness + 1 + label_px(labels), title_px)))


def colorbar_of_px(colorbar: dict, zrange: tuple[float, float], xpad: float = COLORBAR_XPAD) -> int:
    """:func:`colorbar_px` of a Plotly colour-bar dict: its ``ticktext`` (else Plotly's automatic ticks on
    ``zrange``), title and thickness."""
    labels = colorbar.get("ticktext") or auto_tick_labels(*zrange)
    return colorbar_px(labels, (colorbar.get("title") or {}).get("text", ""), colorbar.get("thickness", 12), xpad=xpad)


def heatmap_margin(y_labels: Sequence[str], x_labels: Sequence[str], x_upright: bool, colorbar: int,
                   top: int) -> dict:
    """Margins at least as large as Plotly's automatic margins end with, for a heat map whose y axis shows
    ``y_labels`` and x axis ``x_labels`` (upright when ``x_upright``, else on end), a colour bar ``colorbar`` px
    wide at ``x = 1`` (0: none; then 14 px, room for the last key label) and a top margin ``top``; each axis
    has a title."""
    bottom = UPRIGHT_X_PX if x_upright else max(UPRIGHT_X_PX, label_px(x_labels) + AXIS_PAD_PX)
    return dict(l=int(np.ceil(label_px(y_labels) + AXIS_PAD_PX)), r=colorbar or 14, t=top, b=int(np.ceil(bottom)))


def tick_positions(n: int, max_ticks: int) -> list[int]:
    """Positions ``0 … n - 1`` that get a tick label: every k-th with ``k = ceil(n / max_ticks)``, always the
    first and the last, at most ``max_ticks`` of them. When the last position is not on the grid it takes the
    place of the grid's last one, so no two labels are closer than ``k`` positions.

    ``tick_positions(6, 40) == [0, 1, 2, 3, 4, 5]``; ``tick_positions(8, 3) == [0, 3, 7]``;
    ``tick_positions(64, 40) == [0, 2, …, 58, 60, 63]``.
    """
    if n <= 0:
        return []
    every = max(1, int(np.ceil(n / max(1, max_ticks))))
    ticks = list(range(0, n, every))
    if ticks[-1] != n - 1:
        if len(ticks) > 1:
            ticks.pop()
        ticks.append(n - 1)
    return ticks


def position_ticks(labels: Sequence[str], phone_ticks: Sequence[int]) -> dict:
    """The tick settings of a position axis across a chart (positions ``0 … n - 1`` named by ``labels``).

    While a phone's chart holds every label (``phone_ticks`` is every position) each position is labelled.
    Otherwise Plotly picks the ticks for the chart's actual width in the browser (its automatic ticks: about
    one per 80 px, at most 10, at whole-number steps 1, 2, 5, 10 … once there are more positions than ticks) and
    ``labelalias`` names each by its label: a desktop map keeps more labels than a phone's, and none touch
    (long labels stand on end: Plotly's check for overlapping labels misses some of them).
    """
    n = len(labels)
    if len(phone_ticks) >= n:
        return dict(tickmode="array", tickvals=list(range(n)), ticktext=list(labels))
    return dict(tickmode="auto", tick0=0, labelalias={str(i): label for i, label in enumerate(labels)})


def weight_colors(z, color_scale: str, mask=None) -> tuple[np.ndarray, tuple[float, float]]:
    """The values an attention-weight map is coloured by, and their colour range, for ``color_scale``.

    Args:
        z: ``[n_q, n_k]`` attention weights (each row sums to 1, or is all 0 when fully masked).
        color_scale: one of :data:`COLOR_SCALES`: ``"fixed"`` colours ``z`` on ``[0, 1]``; ``"map"`` on
            ``[0, max z]``; ``"row"`` colours ``z[i] / max z[i]`` on ``[0, 1]`` (a row of zeros stays 0).
        mask: optional bool ``[n_q, n_k]``, ``True`` = may attend; masked cells are NaN in the result
            and do not count for a maximum.

    Returns:
        ``(colour values [n_q, n_k] float64, (zmin, zmax))``; only the colours change: hover and cell text
        keep the true weights.

    Raises:
        ValueError: unknown ``color_scale``.
    """
    if color_scale not in COLOR_SCALES:
        raise ValueError(f"color_scale must be one of {tuple(COLOR_SCALES)}, got {color_scale!r}")
    z = np.asarray(z, dtype=float)
    shown = z if mask is None else np.where(np.broadcast_to(np.asarray(mask, dtype=bool), z.shape), z, np.nan)
    if color_scale == "fixed":
        return shown, (0.0, 1.0)
    finite = np.where(np.isfinite(shown), shown, -np.inf)
    if color_scale == "map":
        top = float(finite.max()) if finite.size else 0.0
        return shown, (0.0, top if top > 0 else 1.0)
    row_top = finite.max(axis=1, keepdims=True) if finite.size else finite[:, :1]
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(row_top > 0, shown / np.where(row_top > 0, row_top, 1.0), np.where(np.isfinite(shown), 0.0,
                                                                                          np.nan))
    return scaled, (0.0, 1.0)


def weight_colorbar(color_scale: str, zrange: tuple[float, float], n_keys: int, title: str = "weight") -> dict:
    """The colour bar of an attention-weight map: its title and ticks, with the uniform level ``1/n`` marked.

    ``1/n_keys`` is the weight of every key when a query attends to all ``n_keys`` keys equally; it is
    marked on the ``"fixed"`` and ``"map"`` scales (``"uniform 1/6"``; regular ticks too close to it are
    left out so no two labels overlap). On ``"row"`` the colours are fractions of each row's largest
    weight, where a uniform row is 1 everywhere, so there is no single level to mark (title ``"÷ row max"``
    instead of ``title``).
    """
    lo, hi = zrange
    if color_scale == "row":
        return dict(title=dict(text="÷ row max"), thickness=12, tickmode="array", tickvals=[0.0, 0.5, 1.0],
                    ticktext=["0", "½", "1"])
    span = hi - lo or 1.0
    regular = [lo + span * k / 4 for k in range(5)]
    uniform = 1.0 / n_keys if n_keys > 0 else None
    vals, text = [], []
    for v in regular:
        if uniform is not None and lo <= uniform <= hi and abs(v - uniform) < 0.3 * span:  # apart on a short bar
            continue
        vals.append(v)
        text.append(f"{v:.3g}")
    if uniform is not None and lo <= uniform <= hi:
        vals.append(uniform)
        text.append(f"uniform 1/{n_keys}")
    order = np.argsort(vals)
    return dict(title=dict(text=title), thickness=12, tickmode="array",
                tickvals=[float(vals[i]) for i in order], ticktext=[text[i] for i in order])


def row_max_outline(z, mask=None) -> go.Scatter | None:
    """One line trace outlining each row's largest weight (every cell of a tie), or ``None`` if no row has one.

    ``z``: ``[n_q, n_k]`` weights; masked (``mask`` False) and non-finite cells never count; a row whose
    largest weight is 0 (fully masked) gets no outline. Cell ``(i, j)`` spans ``j ± 0.5``, ``i ± 0.5``.
    """
    z = np.asarray(z, dtype=float)
    shown = z if mask is None else np.where(np.broadcast_to(np.asarray(mask, dtype=bool), z.shape), z, np.nan)
    finite = np.where(np.isfinite(shown), shown, -np.inf)
    if not finite.size:
        return None
    top = finite.max(axis=1, keepdims=True)
    rows, cols = np.nonzero((top > 0) & (finite >= top * (1 - 1e-12)))
    if not len(rows):
        return None
    xs: list[float | None] = []
    ys: list[float | None] = []
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        xs += [c - 0.5, c + 0.5, c + 0.5, c - 0.5, c - 0.5, None]
        ys += [r - 0.5, r - 0.5, r + 0.5, r + 0.5, r - 0.5, None]
    width = 2 if max(z.shape) <= GAP_MAX else 1
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=ROW_MAX_COLOR, width=width), hoverinfo="skip",
                      showlegend=False, name="largest weight of the row")


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
    color_scale: str | None = None,
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

    Size rules: an axis longer than ``GAP_MAX`` has no white gaps between its cells. Above
    ``HOVER_CELL_MAX`` cells the map is *light*, for payload: the hover names positions
    (``query 3 → key 5: 0.125``) instead of carrying every cell's labels, and the values sent
    are rounded, weights to ``digits`` decimals (what the hover shows), other values to 4
    significant digits (about what a colour can show).

    Returns:
        ``go.Figure`` with the y axis reversed: the top-left cell is row 0, column 0.

    Raises:
        ValueError: ``z`` is not 2-D, the labels do not match its shape, ``kind`` is unknown, or
            ``color_scale`` is unknown or given for a map that is not ``kind="weights"``.
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
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), z.shape)
    rows = [escape_label(s) for s in row_labels]
    cols = [escape_label(s) for s in col_labels]
    shown = z if mask is None else np.where(mask, z, np.nan)
    light = n_rows * n_cols > HOVER_CELL_MAX if light is None else bool(light)

    true_shown = shown
    if color_scale is not None:
        shown, zrange = weight_colors(z, color_scale, mask)
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
        true_shown = _light_values(true_shown, kind, digits)
    z_plot = np.where(np.isfinite(shown), shown, None)  # masked cells -> gaps (never "NaN" text)

    arrow = col_name == "key"
    sep = " → " if arrow else " · "
    trace = dict(
        z=z_plot, x=list(range(n_cols)), y=list(range(n_rows)),
        zmin=zrange[0], zmax=zrange[1], colorscale=colorscale,
        xgap=1 if n_cols <= GAP_MAX else 0, ygap=1 if n_rows <= GAP_MAX else 0,  # gaps would wash out thin cells
        colorbar=dict(title=dict(text=colorbar_title or ("weight" if kind == "weights" else "value")), thickness=12,
                      **COLORBAR_AT),
        hoverongaps=True,
    )
    if kind == "diverging":
        trace["zmid"] = 0.0
    if color_scale is not None:
        trace["colorbar"] = {**weight_colorbar(color_scale, zrange, n_cols, colorbar_title or "weight"), **COLORBAR_AT}
    if light and color_scale == "row":  # colours are fractions of the row's largest weight: hover the true weight
        trace["customdata"] = np.where(np.isfinite(true_shown), true_shown, None)
        trace["hovertemplate"] = (f"{row_name} %{{y}}{sep}{col_name} %{{x}}: %{{customdata:.{digits}f}}"
                                  "<extra></extra>")
    elif light:  # positions and the rounded value: per-cell labels would dominate what the browser downloads
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
        cells = np.where(text == "masked", "", text)
        font = cell_text_font(cells, n_cols, row_labels, colorbar_chars=11 if color_scale in ("fixed", "map") else 6) \
            if show_text else None
        if font:
            trace["text"] = cells
            trace["texttemplate"] = "%{text}"
            trace["textfont"] = font

    traces = [go.Heatmap(**trace)]
    if (mask is not None and (~mask).any() and max(n_rows, n_cols) <= CROSS_MAX
            and plot_px(row_labels, colorbar_chars=11) / n_cols >= text_px("×", 14) + 4):  # a × fits a phone's cell
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
    height = height or int(min(620, max(240, 34 * n_rows + 110)))
    phone_width = plot_px(row_labels, colorbar_chars=11)
    x_ticks = tick_positions(n_cols, min(max_xticks, max_ticks(phone_width)))
    y_ticks = tick_positions(n_rows, min(40, max_ticks(height - 160)))  # less the title and slanted key labels
    x_angles = tick_angles(len(x_ticks), phone_width) \
        if len(x_ticks) >= n_cols or max(text_px(c, 12) for c in cols) < 60 else [-90]
    colorbar = trace["colorbar"]
    margin = heatmap_margin(
        [row_labels[i] for i in y_ticks], col_labels,
        # Upright where Plotly keeps them upright on a desktop chart (a phone's may turn them: a second layout)
        x_upright=0 in x_angles,
        colorbar=colorbar_of_px(colorbar, zrange),
        top=40 if title else 10)
    layout = dict(
        # Rotated key labels hang to the left of their tick (negative angles), so the last one stays inside the
        # figure: Plotly hides a tick label that runs past the figure's edge ("hide past div").
        xaxis=dict(**position_ticks(cols, x_ticks), title=dict(text=col_name), side="bottom", showgrid=False,
                   zeroline=False, range=[-0.5, n_cols - 0.5], autotickangles=x_angles),
        # The map's height is the same on every screen: its row labels are thinned for that height alone.
        yaxis=dict(tickmode="array", tickvals=y_ticks, ticktext=[rows[i] for i in y_ticks],
                   title=dict(text=row_name), autorange="reversed", showgrid=False, zeroline=False),
        margin=margin,
        height=height,
    )
    if title:
        layout["title"] = dict(text=escape_label(title))
    if mask is not None:
        layout["plot_bgcolor"] = MASKED_COLOR
    fig = go.Figure(data=traces, layout=layout)  # one constructor call: update_* calls cost 3x more
    return fig


BAR_PLOT_PX = PHONE_CHART_PX - 70  # a bar chart's plot area on a phone: less the margins, y ticks and title
BAR_Y_PAD_PX = 55  # a bar chart's left margin: its y tick labels + this (pad, axis title; Chromium, issue 20)
BAR_UPRIGHT_X_PX = 67  # its bottom margin under upright x tick labels and the axis title


def bar_margin(y_labels: Sequence[str], top: int) -> dict:
    """A bar chart's margins (see :func:`heatmap_margin`): its y tick labels ``y_labels``, upright x labels."""
    return dict(l=int(np.ceil(label_px(y_labels) + BAR_Y_PAD_PX)), r=10, t=top, b=BAR_UPRIGHT_X_PX)


def bar_text(texts: Sequence[str], n_groups: int, n_series: int = 1) -> dict:
    """How a bar chart prints its values so that no two touch on a phone (issue 18, items 10 and 13).

    Upright while the longest value fits its bar's width, else turned upright-on-end (``textangle
    -90``: about one line wide) while that fits, else not printed (the hover still has them). Bars
    are ``n_series`` per group and ``n_groups`` groups (Plotly's default gaps: 80 % of a group is bars).
    Returns the bar traces' ``text``-related keyword arguments.
    """
    longest = max((str(t) for t in texts), key=len, default="")
    bar = BAR_PLOT_PX / max(n_groups, 1) * 0.8 / max(n_series, 1)
    if text_px(longest, 12) + 4 <= bar:
        return dict(text=list(texts), textposition="outside", textangle=0)
    if bar >= 17:
        return dict(text=list(texts), textposition="outside", textangle=-90)
    return dict(text=None)


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
    text = bar_text([fmt(v, 3) for v in w], len(w)) if len(w) <= CELL_TEXT_MAX else {}
    bar = go.Bar(
        x=list(range(len(w))), y=w, customdata=np.array([[c, fmt(v, digits)] for c, v in zip(cols, w, strict=True)],
                                                           dtype=object).reshape(-1, 2),
        hovertemplate=f"{prefix}key %{{customdata[0]}}: %{{customdata[1]}}<extra></extra>",
        marker_color="#3b78c2", cliponaxis=False, **text,
    )
    # Room above the tallest bar for its value (upright or on end), below the title.
    top = yrange[1] if not text.get("text") else max(yrange[1], float(w.max(initial=0.0)) * (
        1.15 if text.get("textangle") == 0 else 1.35))
    y_ticks = [v for v in (0, 0.25, 0.5, 0.75, 1.0) if yrange[0] <= v <= yrange[1]] \
        if tuple(yrange) == (0.0, 1.0) else None
    layout = dict(
        xaxis=dict(tickmode="array", tickvals=(shown := tick_positions(len(w), max_ticks(BAR_PLOT_PX))),
                   ticktext=[cols[i] for i in shown], title=dict(text="key")),
        yaxis=dict(range=[yrange[0], top], title=dict(text="weight"), tickvals=y_ticks),
        height=height, margin=bar_margin([f"{v:g}" for v in y_ticks] if y_ticks else auto_tick_labels(yrange[0], top),
                                         40 if title else 10),
    )
    if title:
        layout["title"] = dict(text=escape_label(title))
    fig = go.Figure(data=[bar], layout=layout)
    return fig


def paired_bars(
    series: Sequence[tuple[str, np.ndarray, Sequence[str], str]], labels: Sequence[str], *, quantity: str,
    x_title: str, y_title: str, y_max: float, title: str = "", height: int = 320,
    shapes: Sequence[dict] = (), annotations: Sequence[dict] = (),
) -> go.Figure:
    """Bar series grouped per position (e.g. bidirectional vs causal, sentence A vs B).

    Args:
        series: ``(name, values [n], formatted values [n], colour)`` per series; names and labels
            are escaped here.
        labels: one label per position (x axis, by position so repeated tokens stay apart).
        quantity: what a bar measures, for the hover (``"entropy"`` ->
            ``A: query cat (1): entropy 1.234``).
        x_title, y_title: axis titles; y_max: top of the y range.
        shapes, annotations: layout shapes and annotations (dicts) drawn on top (lines, notes).

    Raises:
        ValueError: a series' length differs from the labels'.
    """
    n = len(labels)
    ticks = [escape_label(s) for s in labels]
    bars = []
    for name, values, shown, color in series:
        values = np.asarray(values, dtype=float)
        if values.shape != (n,) or len(shown) != n:
            raise ValueError(f"{quantity} must be [n] = [{n}], got {values.shape} for {name!r}")
        safe = escape_label(name)
        bars.append(go.Bar(
            name=safe, x=list(range(n)), y=values, marker_color=color,
            customdata=np.array([[tk, tx] for tk, tx in zip(ticks, shown, strict=True)], dtype=object).reshape(-1, 2),
            hovertemplate=f"{safe}: query %{{customdata[0]}}: {quantity} %{{customdata[1]}}<extra></extra>",
            cliponaxis=False, **(bar_text(shown, n, len(series)) if n <= CELL_TEXT_MAX else {}),
        ))
    layout = dict(
        xaxis=dict(tickmode="array", tickvals=(shown := tick_positions(n, max_ticks(BAR_PLOT_PX))),
                   ticktext=[ticks[i] for i in shown], title=dict(text=x_title), range=[-0.5, n - 0.5]),
        yaxis=dict(title=dict(text=y_title), range=[0, y_max]),
        barmode="group", height=height, margin=bar_margin(auto_tick_labels(0, y_max), 40 if title else 10),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
    )
    if title:
        layout["title"] = dict(text=escape_label(title))
    if shapes:
        layout["shapes"] = list(shapes)
    if annotations:
        layout["annotations"] = list(annotations)
    return go.Figure(data=bars, layout=layout)  # one constructor call: add_trace and update_* cost 5x more
