"""Figure builders: pure functions, arrays in, ``plotly.graph_objects.Figure`` out.

Every picture of the app is built here (``base`` holds the shared heat map and bar
chart; one module per page for page-specific figures), so the rules hold everywhere:
rows are queries top to bottom, columns keys left to right, plotted by position,
tokens shown as literal text, hover ``query tok (i) → key tok (j): value``,
weights on [0, 1], scores on a diverging scale centred on 0.
"""

from .base import CELL_TEXT_MAX, escape_label, heatmap, weights_bar

__all__ = ["CELL_TEXT_MAX", "escape_label", "heatmap", "weights_bar"]
