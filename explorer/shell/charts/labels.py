"""A visitor's text on a chart stays text: :func:`escape_label` for every label, title and hover name;
:func:`chart_title` for a figure's title, escaped and broken into lines a phone can show, and :func:`title_top`, the
top margin those lines need.

Public (in :mod:`explorer.shell.charts`' ``__all__``): every lesson that puts a token, a prompt's piece or a table
cell into a figure of its own escapes it here; the shell's heat map and bars escape their labels themselves.
"""

from __future__ import annotations

import html

import numpy as np

from explorer.shell.charts.geometry import theme_text_px


def escape_label(text: str) -> str:
    """A user's token as literal text for Plotly: ``<b>`` stays the four characters ``<b>``.

    Plotly renders a few HTML tags in labels and hover text and decodes entities,
    so escaping ``& < >`` shows the text exactly as typed (quotes need no escaping: with
    ``<`` escaped there is no tag for them to break out of).
    """
    return html.escape(str(text), quote=False)  # Plotly decodes &lt; &gt; &amp;, not &quot;


TITLE_PX = 16  # the Streamlit theme's chart title size (measured in Chromium)
TITLE_WIDTH_PX = 320  # the narrowest chart (a phone, a column: geometry.PHONE_CHART_PX) less the title's 4 px inset
TITLE_LINE_PX = 20  # the top margin each further line of a wrapped title adds (its lines are raised: TITLE_RAISE_PX)
TITLE_RAISE_PX = 20.8  # the distance between two lines of a title in Chromium (16 px font)
TITLE_GAP_PX = 4  # between a wrapped title's last line and the plot (a one-line title's descenders reach 3 px in)
AXIS_TITLE_PX = 14  # the theme's axis title size (measured in Chromium)


def wrap_lines(text: str, width_px: float, size: float) -> list[str]:
    """``text`` broken at spaces into lines that each fit ``width_px`` in the theme's chart font at ``size`` px
    (:func:`~explorer.shell.charts.geometry.theme_text_px`, a slight over-estimate); a word wider than ``width_px``
    stays whole on its own line; the lines joined by single spaces give ``text`` back. The lines are balanced: as
    few as fit ``width_px``, each as short as that allows (``"the new row both"`` / ``"ways"`` comes out as two
    halves)."""
    lines = _greedy_lines(str(text).split(" "), width_px, size)
    if len(lines) > 1:  # balanced: the narrowest width that still needs no more lines (no one-word last line)
        lo, hi = width_px / len(lines), width_px
        for _ in range(12):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if len(_greedy_lines(str(text).split(" "), mid, size)) <= len(lines) else (mid, hi)
        lines = _greedy_lines(str(text).split(" "), hi, size)
    return lines


def _greedy_lines(words: list[str], width_px: float, size: float) -> list[str]:
    lines = [words[0]]
    for word in words[1:]:
        if lines[-1].strip() and theme_text_px(f"{lines[-1]} {word}", size) > width_px:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}"
    return lines


def axis_title(text: str, length_px: float) -> dict:
    """An axis's ``title``: ``text`` escaped and broken into lines (``<br>``) of at most ``length_px`` at the theme's
    14 px, so that a long (Portuguese, Turkish) title along a short axis neither runs past the chart's edge nor, on
    a vertical axis, reaches into the chart's title. Give the axis's length in px on the narrowest chart."""
    return dict(text="<br>".join(escape_label(line) for line in wrap_lines(text, length_px, AXIS_TITLE_PX)))


def chart_title(title: str, *, width_px: float = TITLE_WIDTH_PX) -> dict:
    """A figure's ``layout.title``: ``title`` escaped (:func:`escape_label`) and broken at spaces into lines
    (``<br>``) that each fit ``width_px`` in the theme's 16 px title font, so that a long title (Portuguese and
    Turkish ones run a third longer than English) is never cut at a phone's right edge. One line: ``{"text": …}``.
    More: the title's bottom sits on the plot (``yref="paper"``, ``y=1``, ``yanchor="bottom"``) raised by a bottom
    pad of :data:`TITLE_RAISE_PX` per further line, because Plotly anchors a title of several lines by its first line
    and hangs the others below it, over the plot (measured in Chromium: each further line 20.8 px lower). Give the
    figure the top margin :func:`title_top` names for it. A single word wider than ``width_px`` stays whole."""
    lines = wrap_lines(title, width_px, TITLE_PX)
    text = "<br>".join(escape_label(line) for line in lines)
    if len(lines) == 1:
        return dict(text=text)
    return dict(text=text, yref="paper", y=1, yanchor="bottom",
                pad=dict(b=int(np.ceil(TITLE_RAISE_PX * (len(lines) - 1))) + TITLE_GAP_PX))


def title_top(title: str, one_line: int = 40, *, width_px: float = TITLE_WIDTH_PX) -> int:
    """The top margin (px) a figure sends for ``title`` as :func:`chart_title` breaks it: ``one_line`` for a title of
    one line, :data:`TITLE_LINE_PX` more for each further line, 10 for no title. Sent with the figure, the margin
    already holds the lines, and the chart is laid out once (``tests/e2e/test_tour.py``, the margins and the
    overlaps). With ``one_line`` = 40, a title's first line starts about 22 px below the figure's top."""
    if not title:
        return 10
    return one_line + TITLE_LINE_PX * (len(wrap_lines(title, width_px, TITLE_PX)) - 1)
