"""Every head of a model at a glance, clickable: one cell per (layer, head), and the click read back.

Streamlit's ``on_select`` reports scatter points, not heat-map cells, so a transparent marker sits on every cell
(``x`` = head, ``y`` = layer); :func:`clicked_head` reads the last clicked one (or a scatter point whose
``customdata`` carries ``[…, …, …, layer, head]``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell.charts.heatmaps import heatmap
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

KEY_COLOR = "#d62728"
"""The outline of the chosen head on a sequential grid."""
DARK_OUTLINE = "#111111"
"""The outline of chosen heads on a red-blue (diverging) grid: red would vanish on a red cell."""


def head_grid(values, *, title: str, colorbar_title: str, outlined: Sequence[tuple[int, int]] = (),
              kind: str = "weights", zrange: tuple[float, float] | None = None, digits: int = 3,
              height: int = 640, outline: tuple[str, float] = (KEY_COLOR, 3)) -> go.Figure:
    """Every head: ``values [n_layers, n_heads]`` as a heat map (``kind`` as :func:`heatmap`'s), layer 0 on top, the
    ``outlined`` heads framed in ``outline = (colour, width in px)``, a transparent marker per cell for clicks (hover
    ``layer 3 · head 4: 0.123``, words and decimal mark in the run's language).

    Raises:
        ValueError: ``values`` is not 2-D, or an outlined head is outside it.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values must be [n_layers, n_heads], got shape {values.shape}")
    n_layers, n_heads = values.shape
    for layer, head in outlined:
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"(layer, head) = ({layer}, {head}) is outside the {n_layers} x {n_heads} grid")
    fig = heatmap(values, [str(i) for i in range(n_layers)], [str(h) for h in range(n_heads)], title=title,
                  kind=kind, row_name=_("layer"), col_name=_("head"), zrange=zrange, digits=digits, show_text=False,
                  height=height, colorbar_title=colorbar_title, light=False)
    fig.data[0].hoverinfo = "skip"  # the markers below carry the same label (two labels would stack)
    layers, heads = np.divmod(np.arange(n_layers * n_heads), n_heads)
    fig.add_trace(go.Scatter(
        x=heads, y=layers, mode="markers", showlegend=False, name="heads",
        marker=dict(symbol="square", size=14, color="rgba(0,0,0,0)", opacity=0.01),
        selected=dict(marker=dict(opacity=0.01)), unselected=dict(marker=dict(opacity=0.01)),
        customdata=[fmt(v, digits) for v in values.ravel()],
        hovertemplate=_("layer {layer} · head {head}: {value}").format(layer="%{y}", head="%{x}", value="%{customdata}")
        + "<extra></extra>",
    ))
    color, width = outline
    for layer, head in outlined:
        fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
                      line=dict(color=color, width=width), fillcolor="rgba(0,0,0,0)")
    fig.update_layout(clickmode="event+select", dragmode=False, hovermode="closest")
    return fig


def clicked_head(event, n_layers: int, n_heads: int) -> tuple[int, int] | None:
    """The ``(layer, head)`` of the last clicked point of a :func:`head_grid` (``x`` = head, ``y`` = layer) or of a
    scatter whose points carry ``customdata = [code, x, y, layer, head]``, from a chart's selection ``event``
    (``st.plotly_chart``'s, or its state: ``{"selection": {"points": […]}}``); ``None`` when nothing usable was
    clicked (no event, no point, or a head outside the ``n_layers × n_heads`` grid)."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in reversed(list(points)):
        custom = point.get("customdata") if isinstance(point, dict) else None
        try:
            if isinstance(custom, list | tuple) and len(custom) >= 5:  # a scatter's [code, x, y, layer, head]
                layer, head = int(custom[3]), int(custom[4])
            else:
                layer, head = int(round(float(point["y"]))), int(round(float(point["x"])))
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= layer < n_layers and 0 <= head < n_heads:
            return layer, head
    return None
