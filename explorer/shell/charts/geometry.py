"""Chart geometry: how wide text is drawn, which positions get a tick label, how large cell text may be, margins.

Estimates of what Plotly.js draws (measured in Chromium, Plotly.js 3.8, Streamlit theme), as pure functions of
labels and sizes: no figure is built here. The shell's heat map and bars size themselves with them, so that on
a phone no two labels or values touch (issue 18) and every figure is sent with margins that already hold its
labels and colour bar, so Plotly lays it out and draws it once (issue 20). A lesson's own figure uses the public
names (:mod:`explorer.shell.charts`' ``__all__``) and asks :func:`heatmap_margin` or :func:`bar_margin` for a
margin instead of adding up the paddings measured here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# --- sizes ---------------------------------------------------------------------------------------------------
PHONE_CHART_PX = 330  # the narrowest a chart gets: a 390 px phone less the page's padding (358), or a column
TICK_GAP_PX = 20  # at least this far apart, tick labels never touch (upright on end, or upright rows)
BAR_PLOT_PX = PHONE_CHART_PX - 70  # a bar chart's plot area on a phone: less the margins, y ticks and title
CELL_TEXT_MAX = 24  # print cell values while both axes have at most this many entries
GAP_MAX = 24  # white gaps between cells while an axis has at most this many entries (more would wash colours out)
CROSS_MAX = 12  # a × on masked cells while both axes have at most this many entries (then the grey gap alone)


# --- text widths -----------------------------------------------------------------------------------------------
def text_px(text: str, size: float) -> float:
    """About how wide ``text`` is drawn in Plotly's default font (Open Sans) at ``size`` px: digits 0.57 em,
    ``.`` 0.27 em, ``-`` 0.32 em, other characters 0.6 em (a little more than most letters).

    Public: lessons size the text of their own figures with it (whether a value fits a cell, a label's box)."""
    em = {".": 0.27, "-": 0.32, " ": 0.26, "(": 0.3, ")": 0.3}
    return size * sum(em.get(ch, 0.57 if ch.isdigit() else 0.6) for ch in text)


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


# --- ticks -----------------------------------------------------------------------------------------------------
def max_ticks(length_px: float) -> int:
    """How many tick labels an axis ``length_px`` long holds, :data:`TICK_GAP_PX` apart (at least 2).

    Public: with :func:`tick_positions`, how a lesson's own axis of positions is thinned (e.g. for a phone's plot
    width, :func:`plot_px` or :data:`BAR_PLOT_PX`)."""
    return max(2, int(length_px // TICK_GAP_PX))


def tick_positions(n: int, max_ticks: int) -> list[int]:
    """Positions ``0 … n - 1`` that get a tick label: every k-th with ``k = ceil(n / max_ticks)``, always the
    first and the last, at most ``max_ticks`` of them. When the last position is not on the grid it takes the
    place of the grid's last one, so no two labels are closer than ``k`` positions.

    ``tick_positions(6, 40) == [0, 1, 2, 3, 4, 5]``; ``tick_positions(8, 3) == [0, 3, 7]``;
    ``tick_positions(64, 40) == [0, 2, …, 58, 60, 63]``.

    Public: every axis of token positions in the app is thinned with it, the lessons' own figures too.
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


def tick_angles(n_cols: int, plot_width: float) -> list[int]:
    """Plotly's ``autotickangles`` for ``n_cols`` column labels on a plot ``plot_width`` px wide (on a phone).

    Plotly takes the first angle at which it thinks the labels do not overlap; it is generous with
    slanted labels, which touch when the columns are narrower than about 34 px at 45°. So 45° is offered
    only while a column is that wide on a phone (upright labels when they fit, at any width).

    Public: for the column labels of a lesson's own heat map or grid panel.
    """
    return [0, -45, -90] if plot_width / max(n_cols, 1) * 0.707 >= 24.0 else [0, -90]


def position_ticks(labels: Sequence[str], phone_ticks: Sequence[int], nticks: int | None = None) -> dict:
    """The tick settings of a position axis across a chart (positions ``0 … n - 1`` named by ``labels``).

    While a phone's chart holds every label (``phone_ticks`` is every position) each position is labelled.
    Otherwise Plotly picks the ticks (its automatic ticks, at whole-number steps 1, 2, 5, 10 …) and ``labelalias``
    names each by its label; long labels stand on end (Plotly's check for overlapping labels misses some of them).
    ``nticks`` (default ``len(phone_ticks)``) is how many labels a phone's map holds (:func:`max_ticks`): Plotly is
    asked for that many where it gives the step Plotly takes on its widest charts (:func:`plotly_tick_step`), so a
    phone gets more labels and a desktop none fewer; else Plotly's own count (about one per 80 px) stands.
    """
    n = len(labels)
    if len(phone_ticks) >= n:
        return dict(tickmode="array", tickvals=list(range(n)), ticktext=list(labels))
    # Zoomed in, Plotly's automatic ticks step by 0.5 and would print the raw positions between the tokens
    # ("3.5", "-0,5"): those labels are blank, in either decimal mark (issue 30).
    signs = {0: ("", "-", "\u2212")}  # Plotly writes "−0.5" with the minus sign U+2212
    halves = {f"{sign}{i}{mark}5": "" for i in range(n) for mark in ".," for sign in signs.get(i, ("",))}
    ticks = dict(tickmode="auto", tick0=0, labelalias={**halves, **{str(i): label for i, label in enumerate(labels)}})
    # Plotly's own count is about one tick per 80 px (5 to 10), which labels 2 of a 10-token map's keys on a phone.
    # Asking for the phone's count gives a phone more labels, and as many as a desktop's widest chart gets, where
    # both come to the same step; where the phone's would be coarser, Plotly's own count keeps a desktop's finer one.
    count = max(2, nticks or len(phone_ticks))
    if plotly_tick_step(n, count) == plotly_tick_step(n, PLOTLY_NTICKS_MAX):
        ticks["nticks"] = count
    return ticks


FIT_TICKS = "fit_ticks"
"""The key of ``layout.meta`` naming the axes the chart's component labels for its drawn width (:func:`fit_ticks`)."""


def fit_ticks(axes: dict[str, Sequence[str]]) -> dict:
    """A figure's ``layout.meta`` asking the chart's component (``plotly_chart.js``) to label position axes for the
    width the chart is drawn at: ``axes`` maps a layout axis (``"xaxis"``, ``"xaxis3"``) of positions ``0 … n - 1``
    to its ``n`` labels (escaped, as the figure shows them). In the browser every label is shown while they fit
    (upright when the widest fits its cell, else on end), else every k-th from the first, evenly, k the smallest
    step at which labels on end do not touch (18 px apart), on a phone and a desktop alike, zoomed in too; the hover
    names every cell. The figure's own ticks (a phone's, :func:`position_ticks`) stand for any other renderer
    (``st.plotly_chart``, an exported figure). Give such an axis the margin of labels on end
    (:func:`heatmap_margin` with ``x_upright=False`` and every label): the browser may turn any of them.

    Public: the key axis of a lesson's own heat map or grid panel."""
    return {FIT_TICKS: {name: [str(label) for label in labels] for name, labels in axes.items()}}


PLOTLY_NTICKS_MAX = 10  # Plotly's automatic tick count on a wide axis (axes.js: constrain(length / 80, 4, 9) + 1)


def plotly_tick_step(n: int, nticks: float) -> float:
    """The step Plotly's automatic ticks take on a position axis ``[-0.5, n - 0.5]`` asked for ``nticks`` ticks
    (Plotly.js ``axes.autoTicks``: ``n / nticks`` rounded up, strictly, to 2, 5 or 10 times a power of ten)."""
    rough = n / nticks
    base = 10.0 ** np.floor(np.log10(rough))
    return float(base * next(m for m in (2, 5, 10) if m > rough / base * (1 + 1e-12)))


def auto_tick_labels(lo: float, hi: float) -> list[str]:
    """About the longest labels Plotly's automatic ticks on ``[lo, hi]`` can get: a finer step than Plotly's
    (more decimals: an over-estimate), formatted as Plotly does (``−`` for minus, no trailing zeros).

    Public: the tick labels to give :func:`bar_margin` or :func:`colorbar_px` for an axis or a colour bar whose
    ticks Plotly chooses."""
    span = abs(hi - lo) or 1.0
    raw = span / 8
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)  # Plotly's linear steps: 1, 2, 5 x 10^k
    decimals = max(0, int(-np.floor(np.log10(step) + 1e-9)))
    ticks = np.arange(np.ceil(lo / step) * step, hi + step / 2, step)
    return [f"{t:.{decimals}f}".replace("-", "−") for t in ticks if lo - 1e-9 <= t <= hi + 1e-9] or ["0"]


# --- cell text -------------------------------------------------------------------------------------------------
def plot_px(row_labels: Sequence[str], *, colorbar_chars: int = 11, width_px: float = PHONE_CHART_PX) -> float:
    """About how wide the plot area of a heat map ``width_px`` wide is, after its row labels and colour bar.

    Public: a lesson's own heat map sizes its cells and its column ticks with it (a phone's width by default)."""
    # Measured in Chromium at 390 px: labels + 40 (pad, axis title), colour bar labels (about 0.52 em a character)
    # + 15 (bar, pads), 38 more (margins).
    labels_px = max((text_px(str(lab), 12) for lab in row_labels), default=0.0) + 40
    colorbar_px = (0.52 * 12 * colorbar_chars + 15) if colorbar_chars else 0.0
    return width_px - labels_px - colorbar_px - 38


def cell_text_size(texts, n_cols: int, row_labels: Sequence[str], *, colorbar_chars: int = 11,
                   width_px: float = PHONE_CHART_PX) -> int | None:
    """The font size (12 or 10 px) at which every cell's text fits its cell with a 3 px gap, or ``None``.

    The cell's width is estimated for a heat map ``width_px`` wide (default: a phone's, the narrowest
    a chart gets; a chart in a desktop column is about as wide): the plot is what the row labels, the
    axis title, a colour bar with ``colorbar_chars``-character labels and the margins leave, split
    into ``n_cols`` cells. So a map prints its numbers only where they can be read on a phone too
    (issue 18, item 13); the hover always has them.

    Public: for the cell text of a lesson's own heat map (with :func:`cell_text_font` for wider charts).
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
    :data:`WIDE_CELL_TEXT_PX` (hidden below it by ``app.css``); ``None`` when it fits none of them.

    Public: for the cell text of a lesson's own heat map."""
    size = cell_text_size(texts, n_cols, row_labels, colorbar_chars=colorbar_chars)
    if size:
        return dict(size=size)
    for width in WIDE_CELL_TEXT_PX:
        size = cell_text_size(texts, n_cols, row_labels, colorbar_chars=colorbar_chars, width_px=width)
        if size:
            return dict(size=size, family=f"cells-min-{width}, {PLOTLY_FONTS}")
    return None


# --- margins ---------------------------------------------------------------------------------------------------
# Margins sent with a figure (issue 20): Plotly's automatic margins grow a margin that is too small to hold the
# tick labels, axis titles and colour bar, and then lay out and draw the whole chart a second time (in Chromium,
# ~40 % of a warm lesson's drawing task). Starting from margins at least that large, estimated from the labels
# drawn, it draws once; automargin stays on for what an estimate misses. Measured in Chromium (Plotly.js 3.8,
# Streamlit theme): a margin is the tick labels' extent + AXIS_PAD_PX (pad, axis title, base margin).
AXIS_PAD_PX = 62.5
UPRIGHT_X_PX = 74  # the bottom margin under upright key labels (12 px) and the x axis title
AUTOMARGIN_PAD_PX = 12  # Plotly adds min(12, every margin) beyond what the labels need
COLORBAR_AT = dict(x=1.0)  # a colour bar's place (see heatmap_margin): its right margin is its width alone
# A colour bar at COLORBAR_AT (x = 1, paper) needs a right margin of its own width alone; at Plotly's default
# x = 1.02 it also needs 2 % of the plot's width, which the figure does not know (a phone's or a desktop's).
COLORBAR_XPAD = 10  # Plotly's default padding on each side of a colour bar (px)
BAR_Y_PAD_PX = 55  # a bar chart's left margin: its y tick labels + this (pad, axis title; Chromium, issue 20)
BAR_UPRIGHT_X_PX = 67  # its bottom margin under upright x tick labels and the axis title


def colorbar_px(labels: Sequence[str], title: str = "", thickness: float = 12, xpad: float = COLORBAR_XPAD) -> int:
    """The right margin a vertical colour bar at ``x = 1`` needs: its width (pads, bar, 12 px tick labels or its
    14 px title, whichever is wider) and Plotly's automargin pad.

    Public: for a lesson's own colour bar or legend bar, placed at :data:`COLORBAR_AT`."""
    title_px = theme_text_px(title, 14)
    return int(np.ceil(AUTOMARGIN_PAD_PX + 2 * xpad + max(thickness + 1 + label_px(labels), title_px)))


def colorbar_of_px(colorbar: dict, zrange: tuple[float, float], xpad: float = COLORBAR_XPAD) -> int:
    """:func:`colorbar_px` of a Plotly colour-bar dict: its ``ticktext`` (else Plotly's automatic ticks on
    ``zrange``), title and thickness.

    Public: the shell's heat map and a lesson's grid of heat maps on one colour axis size their colour bar with
    it (``xpad``: the theme's padding of a colour axis' bar, when it is not Plotly's default)."""
    labels = colorbar.get("ticktext") or auto_tick_labels(*zrange)
    return colorbar_px(labels, (colorbar.get("title") or {}).get("text", ""), colorbar.get("thickness", 12), xpad=xpad)


# A colour bar below a map (heatmap(colorbar_at="below")): across the plot's width, in a strip of its own under the
# key labels and the axis title (placed in paper units from the figure's fixed height and margins): its title, the
# bar, its tick labels. The strip is this tall (Chromium, Streamlit theme: 14 px title, 12 px bar, 12 px labels).
COLORBAR_BELOW_PX = 46


def colorbar_below(colorbar: dict, below_px: float, plot_height_px: float) -> dict:
    """The keys that turn the vertical colour bar ``colorbar`` (a Plotly colour-bar dict) into one below the map:
    horizontal, the plot's width, its top (its title) ``below_px`` under the plot area, whose height is
    ``plot_height_px`` (the figure's height less its top and bottom margins; the figure's bottom margin needs
    :data:`COLORBAR_BELOW_PX` more than ``below_px``)."""
    title = dict(colorbar.get("title") or {})
    return dict(orientation="h", xref="paper", x=0.0, xanchor="left", len=1.0, lenmode="fraction",
                yref="paper", y=-below_px / max(plot_height_px, 1.0), yanchor="top", ypad=0, xpad=0,
                thickness=colorbar.get("thickness", 12), title={**title, "side": "top"})


def heatmap_margin(y_labels: Sequence[str], x_labels: Sequence[str], x_upright: bool, colorbar: int,
                   top: int) -> dict:
    """Margins at least as large as Plotly's automatic margins end with, for a heat map whose y axis shows
    ``y_labels`` and x axis ``x_labels`` (upright when ``x_upright``, else on end), a colour bar ``colorbar`` px
    wide at ``x = 1`` (0: none; then 14 px, room for the last key label) and a top margin ``top``; each axis
    has a title.

    Public: the margins of a lesson's own heat map, grid of maps or panels (``dict(l=, r=, t=, b=)``; a lesson
    that needs one side alone takes it from here rather than adding up paddings)."""
    bottom = UPRIGHT_X_PX if x_upright else max(UPRIGHT_X_PX, label_px(x_labels) + AXIS_PAD_PX)
    return dict(l=int(np.ceil(label_px(y_labels) + AXIS_PAD_PX)), r=colorbar or 14, t=top, b=int(np.ceil(bottom)))


def bar_margin(y_labels: Sequence[str], top: int) -> dict:
    """A bar chart's margins (see :func:`heatmap_margin`): its y tick labels ``y_labels``, upright x labels.

    Public: for a lesson's own bar chart (with :func:`auto_tick_labels` when Plotly picks the y ticks)."""
    return dict(l=int(np.ceil(label_px(y_labels) + BAR_Y_PAD_PX)), r=10, t=top, b=BAR_UPRIGHT_X_PX)


def bar_text(texts: Sequence[str], n_groups: int, n_series: int = 1) -> dict:
    """How a bar chart prints its values so that no two touch on a phone (issue 18, items 10 and 13).

    Upright while the longest value fits its bar's width, else turned upright-on-end (``textangle
    -90``: about one line wide) while that fits, else not printed (the hover still has them). Bars
    are ``n_series`` per group and ``n_groups`` groups (Plotly's default gaps: 80 % of a group is bars).
    Returns the bar traces' ``text``-related keyword arguments.

    Public: for the values printed on a lesson's own bars (``go.Bar(..., **bar_text(values, n))``).
    """
    longest = max((str(t) for t in texts), key=len, default="")
    bar = BAR_PLOT_PX / max(n_groups, 1) * 0.8 / max(n_series, 1)
    if text_px(longest, 12) + 4 <= bar:
        return dict(text=list(texts), textposition="outside", textangle=0)
    if bar >= 17:
        return dict(text=list(texts), textposition="outside", textangle=-90)
    return dict(text=None)
