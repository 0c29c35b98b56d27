"""A visitor's text on a chart stays text: :func:`escape_label` for every label, title and hover name.

Public (in :mod:`explorer.shell.charts`' ``__all__``): every lesson that puts a token, a prompt's piece or a table
cell into a figure of its own escapes it here; the shell's heat map and bars escape their labels themselves.
"""

from __future__ import annotations

import html


def escape_label(text: str) -> str:
    """A user's token as literal text for Plotly: ``<b>`` stays the four characters ``<b>``.

    Plotly renders a few HTML tags in labels and hover text and decodes entities,
    so escaping ``& < >`` shows the text exactly as typed (quotes need no escaping: with
    ``<`` escaped there is no tag for them to break out of).
    """
    return html.escape(str(text), quote=False)  # Plotly decodes &lt; &gt; &amp;, not &quot;
