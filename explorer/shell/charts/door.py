"""The one door every chart of the app goes through: :func:`show_fig` (issue 47, item 3).

A lesson never calls ``st.plotly_chart`` itself (``tests/test_imports.py`` checks it): what every chart shares (how
it is sent to the browser, its toolbar, its export for slides) is decided here, once.

Two ways to the browser, chosen by the environment variable :data:`DOOR_ENV` (read on every call):

- ``component`` (the default): an ``st.components.v2`` component (``plotly_chart.js``) that keeps one ``<div>`` per
  key between runs and applies a changed figure with ``Plotly.react``: one Plotly draw per change, and a learner's
  zoom survives it (``layout.uirevision``). ``st.plotly_chart`` draws a changed chart twice: a changed figure changes
  its element's id, so React mounts a new chart, themed twice (``BENCHMARKS.md``, "Why every changed chart is drawn
  twice"). Plotly's JavaScript is the installed ``plotly`` package's bundle, served by Streamlit from the package's
  ``package_data`` folder (a path-only ``st.components.v1`` declaration: ``/component/<name>/plotly.min.js``) and
  loaded once per page. The figure is themed in the browser as ``st.plotly_chart`` themes it, from the theme's CSS
  variables (light or dark). The toolbar saves SVG and PNG at a print size (1600 px wide; PNG at scale 2), with the
  chart's title.
- ``plotly_chart``: ``st.plotly_chart`` as before (for comparisons: ``bench/browser.py --door``); its toolbar's camera
  saves a PNG at the same print size (through Plotly's ``toImageButtonOptions``: one format only).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from streamlit.components.v1 import declare_component
from streamlit.delta_generator import DeltaGenerator

SelectionMode = Literal["points", "box", "lasso"]

DOOR_ENV = "ATTENTION_CHART_DOOR"
"""``component`` (default) or ``plotly_chart``: how :func:`show_fig` sends a chart (see the module's text)."""
DOORS = ("component", "plotly_chart")
COMPONENT_NAME = "attention_explorer.plotly_chart"
"""The ``st.components.v2`` component of every chart (``figures(at)`` in the tests finds charts by it)."""
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
"""The installed ``plotly`` package's Plotly.js bundle: the browser's Plotly (served, never read here)."""
EXPORT_WIDTH_PX = 1600
"""The width of a saved chart, in px; the height keeps the chart's aspect ratio (PNG at scale 2: 3200 px)."""
EMPTY_SELECTION = {"points": [], "point_indices": [], "box": [], "lasso": []}

_JS = (Path(__file__).with_name("plotly_chart.js")).read_text(encoding="utf-8")
_chart = st.components.v2.component(COMPONENT_NAME, js=_JS, isolate_styles=False)


def door() -> str:
    """The door in use: :data:`DOOR_ENV`'s value, ``component`` when unset.

    Raises:
        ValueError: the variable names no door of :data:`DOORS`.
    """
    value = os.environ.get(DOOR_ENV, "component").strip() or "component"
    if value not in DOORS:
        raise ValueError(f"{DOOR_ENV} must be one of {DOORS}, got {value!r}")
    return value


@functools.cache
def _plotly_url(runtime_id: int) -> str:
    """The page-relative URL Streamlit serves :data:`PLOTLY_JS` at, registered once per runtime (server)."""
    served = declare_component("plotly_js", path=str(PLOTLY_JS.parent))
    return f"component/{served.name}/{PLOTLY_JS.name}?v={plotly.__version__}"


def plotly_url() -> str:
    """Where the browser loads Plotly from: ``component/explorer.shell.charts.door.plotly_js/plotly.min.js?v=<plotly
    version>``, relative to the page (so it follows ``server.baseUrlPath``; the version makes a cached copy safe)."""
    from streamlit.runtime import Runtime

    return _plotly_url(id(Runtime.instance()) if Runtime.exists() else 0)


def file_name(fig: go.Figure, key: str | None) -> str:
    """A saved chart's file name, without extension: its title's words (markup dropped), else its key, else
    ``chart``; letters, digits, ``-`` and ``_`` only, at most 80 characters."""
    title = fig.layout.title.text if fig.layout.title is not None else None
    text = re.sub(r"<[^>]+>", " ", title or "") or (key or "")
    words = re.sub(r"[^\w-]+", "_", text, flags=re.UNICODE).strip("_")
    return words[:80] or "chart"


def show_fig(fig: go.Figure, *, key: str | None,
             on_select: Literal["ignore", "rerun"] | Callable[[], None] = "ignore",
             selection_mode: SelectionMode | Iterable[SelectionMode] = ("points", "box", "lasso"),
             width: Literal["stretch", "content"] | int = "stretch", at: DeltaGenerator | None = None) -> Any:
    """Draw ``fig`` under widget ``key`` in the Streamlit theme (light or dark, as the viewer's), as
    ``st.plotly_chart(fig, key=key, on_select=..., selection_mode=..., width=...)`` does, through :func:`door`.

    With ``on_select`` other than ``"ignore"`` it returns the chart's selection, ``{"selection": {"points": [...],
    ...}}`` (also in ``st.session_state[key]``), which :func:`explorer.shell.charts.clicked_head` reads; else
    nothing a page uses. The component reports clicked points only (``selection_mode`` is kept for
    ``st.plotly_chart``; no page selects by box or lasso). ``at`` is the container to draw in (a column, a
    placeholder; the current one by default); ``key=None`` only for a chart drawn again within one run (a
    placeholder's live view): it is sent by ``st.plotly_chart`` (nothing to keep between runs).

    Raises:
        ValueError: :data:`DOOR_ENV` names no door.
    """
    where = st if at is None else at
    if door() == "plotly_chart" or key is None:  # no key, nothing to keep between runs: st.plotly_chart as before
        config = {"toImageButtonOptions": {"format": "png", "width": EXPORT_WIDTH_PX, "scale": 2,
                                           "filename": file_name(fig, key)}}
        return where.plotly_chart(fig, key=key, on_select=on_select, selection_mode=selection_mode, width=width,
                                  config=config)
    if width == "content":  # as st.plotly_chart: the figure's own width, else Plotly's default 700 px
        width = int(fig.layout.width) if fig.layout.width else 700
    select = on_select != "ignore"
    data = {"spec": pio.to_json(fig, validate=False), "plotly": plotly_url(), "select": select,
            "width": width, "filename": file_name(fig, key)}
    if not select:
        return _enqueue_chart(where, key, data, width)
    callback = on_select if callable(on_select) else (lambda: None)
    if at is None:
        return _chart(key=key, data=data, width=width, on_selection_change=callback,
                      default={"selection": EMPTY_SELECTION})
    with at:
        return _chart(key=key, data=data, width=width, on_selection_change=callback,
                      default={"selection": EMPTY_SELECTION})


def _enqueue_chart(where, key: str, data: dict, width) -> None:
    """The component's element for a chart nobody clicks, sent as an element, not a widget.

    Mounting an ``st.components.v2`` component registers a widget (its state), and a widget inside a cached
    function is refused (``CachedWidgetWarning``): most charts are drawn inside :func:`explorer.shell.cache.section`,
    whose elements ``st.cache_data`` records and replays. So the element is built here as Streamlit's own
    ``_bidi_component`` builds it (Streamlit 1.67, ``components/v2/bidi_component/main.py``), its id from ``key``
    alone (the figure left out: the browser keeps the chart when only the figure changes), without the widget.
    """
    from streamlit.elements.lib.form_utils import current_form_id
    from streamlit.elements.lib.layout_utils import LayoutConfig
    from streamlit.elements.lib.utils import compute_and_register_element_id
    from streamlit.proto.BidiComponent_pb2 import BidiComponent as BidiComponentProto

    dg = where if isinstance(where, DeltaGenerator) else st._main
    proto = BidiComponentProto()
    proto.component_name = COMPONENT_NAME
    proto.isolate_styles = False
    proto.js_content = _JS
    proto.json = json.dumps(data, ensure_ascii=False)  # a chart's text as it is (UTF-8), not \u escapes
    proto.form_id = current_form_id(dg)
    proto.id = compute_and_register_element_id("bidi_component", user_key=key, key_as_main_identity=True, dg=dg,
                                               component_name=COMPONENT_NAME, isolate_styles=False, width=width,
                                               height="content")
    dg._enqueue("bidi_component", proto, layout_config=LayoutConfig(width=width, height="content"))


def into(at: DeltaGenerator) -> Callable[..., Any]:
    """:func:`show_fig` drawing in container ``at``: ``charts.into(col)(fig, key=...)`` for ``col.plotly_chart(fig,
    key=...)``."""
    return functools.partial(show_fig, at=at)
