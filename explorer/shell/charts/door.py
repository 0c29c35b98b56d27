"""The one door every chart of the app goes through: :func:`show_fig` (issue 47, item 3).

A lesson never calls ``st.plotly_chart`` itself (``tests/test_imports.py`` checks it): what every chart shares (how
it is sent to the browser, its toolbar, its export for slides) is decided here, once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Literal

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

SelectionMode = Literal["points", "box", "lasso"]


def show_fig(fig: go.Figure, *, key: str | None,
             on_select: Literal["ignore", "rerun"] | Callable[[], None] = "ignore",
             selection_mode: SelectionMode | Iterable[SelectionMode] = ("points", "box", "lasso"),
             width: Literal["stretch", "content"] | int = "stretch", at: DeltaGenerator | None = None) -> Any:
    """Draw ``fig`` under widget ``key``, as ``st.plotly_chart(fig, key=key, on_select=..., selection_mode=...,
    width=...)`` does, in the Streamlit theme (light or dark, as the viewer's).

    With ``on_select`` other than ``"ignore"`` it returns the chart's selection, ``{"selection": {"points": [...],
    ...}}`` (also in ``st.session_state[key]``), which :func:`explorer.shell.charts.clicked_head` reads; else
    nothing a page uses. ``at`` is the container to draw in (a column, a placeholder; the current one by default);
    ``key=None`` only for a chart drawn again within one run (a placeholder's live view).
    """
    where = st if at is None else at
    return where.plotly_chart(fig, key=key, on_select=on_select, selection_mode=selection_mode, width=width)


def into(at: DeltaGenerator) -> Callable[..., Any]:
    """:func:`show_fig` drawing in container ``at``: ``charts.into(col)(fig, key=...)`` for ``col.plotly_chart(fig,
    key=...)``."""
    return functools.partial(show_fig, at=at)
