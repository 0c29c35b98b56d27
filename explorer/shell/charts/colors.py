"""Colour scales: the maps' colours, the learner's scale for attention weights, its colour bar, row maxima.

A heat map of attention weights (``kind="weights"``) is coloured on :data:`WEIGHTS_SCALE`, any other matrix on
:data:`DIVERGING_SCALE` centred on 0; masked cells show :data:`MASKED_COLOR` (the plot's background behind a gap).
For weights the learner picks one of :data:`COLOR_SCALES` (a sidebar control). The names in
:mod:`explorer.shell.charts`' ``__all__`` are for a lesson that draws several maps on one colour axis (the
multi-head grids) on the same colours as the shell's heat map.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts.geometry import GAP_MAX
from explorer.shell.i18n import N_

_, _n = i18n.translator(__name__)

WEIGHTS_SCALE = "Blues"
DIVERGING_SCALE = "RdBu_r"
MASKED_COLOR = "rgba(128, 128, 128, 0.35)"

KINDS = ("weights", "diverging")

COLOR_SCALES = {  # the learner's colour scale for attention-weight maps (also its value in the link) -> meaning
    "fixed": N_("0 to 1, the same on every map"),
    "map": N_("0 to the map's largest weight"),
    "row": N_("each row: 0 to its own largest weight"),
}  # (the meanings are messages: translate them where shown, _(COLOR_SCALES[code]))
ROW_MAX_COLOR = "#f08c00"  # outline of each row's largest weight: orange, visible on pale and dark blue


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


def weight_colorbar(color_scale: str, zrange: tuple[float, float], n_keys: int, title: str | None = None) -> dict:
    """The colour bar of an attention-weight map: its title and ticks, with the uniform level ``1/n`` marked.

    ``1/n_keys`` is the weight of every key when a query attends to all ``n_keys`` keys equally; it is
    marked on the ``"fixed"`` and ``"map"`` scales (``"uniform 1/6"``; regular ticks too close to it are
    left out so no two labels overlap). On ``"row"`` the colours are fractions of each row's largest
    weight, where a uniform row is 1 everywhere, so there is no single level to mark (title ``"÷ row max"``
    instead of ``title``).
    """
    lo, hi = zrange
    if color_scale == "row":
        return dict(title=dict(text=_("÷ row max")), thickness=12, tickmode="array", tickvals=[0.0, 0.5, 1.0],
                    ticktext=["0", "½", "1"])
    span = hi - lo or 1.0
    uniform = 1.0 / n_keys if n_keys > 0 and lo <= 1.0 / n_keys <= hi else None
    ticks = {v: i18n.general(v, 3) for v in (lo + span * k / 4 for k in range(5))
             if uniform is None or abs(v - uniform) >= 0.3 * span}  # regular ticks apart from 1/n on a short bar
    if uniform is not None:
        ticks[uniform] = _("uniform 1/{n}").format(n=n_keys)
    return dict(title=dict(text=_("weight") if title is None else title), thickness=12, tickmode="array",
                tickvals=[float(v) for v in sorted(ticks)], ticktext=[ticks[v] for v in sorted(ticks)])


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
                      showlegend=False, name=_("largest weight of the row"))
