"""Helpers for the AppTests: start the app on a page, read its Plotly figures back."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from explorer.lessons import lesson

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = str(ROOT / "streamlit_app.py")


def lesson_page(name: str) -> str:
    """The page file of lesson ``name`` as ``AppTest.switch_page`` wants it."""
    return lesson(name).page


def app_at(page: str | None = None, *, session: dict | None = None, query: dict | None = None,
           timeout: float = 60) -> AppTest:
    """Run the whole app (entrypoint + navigation) on lesson ``page`` (its package name) and return the AppTest.

    Shared controls are driven through ``session`` (``at.session_state``) or ``query``
    (``at.query_params``): AppTest drops the entrypoint's sidebar widgets on a rerun
    after a page switch (Streamlit 1.67), a real browser keeps them.
    """
    at = AppTest.from_file(ENTRYPOINT, default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (session or {}).items():
        at.session_state[k] = v
    at.run()
    if page is not None:
        at.switch_page(lesson_page(page))
        at.run()
    return at


def figures(at: AppTest) -> dict[str, dict]:
    """Every Plotly chart of the last run as ``{widget key suffix: figure dict}``."""
    out = {}
    for i, el in enumerate(at.get("plotly_chart")):
        key = el.proto.id.rsplit("-", 1)[-1] if el.proto.id else str(i)
        out[key] = json.loads(el.proto.spec)
    return out


def layout(at: AppTest, node=None, depth: int = 0) -> list[tuple[int, str, str]]:
    """Every element of the main area as ``(depth, type, chart key or label)``, in page order.

    Two runs with the same layout put every element in the same container (a replayed cached section
    must not move its elements out of the columns or expanders they were drawn in).
    """
    out = []
    for child in getattr(at.main if node is None else node, "children", {}).values():
        proto = getattr(child, "proto", None)
        name = (getattr(proto, "id", "").rsplit("-", 1)[-1] if type(child).__name__ == "UnknownElement"
                else getattr(child, "label", ""))  # an emptied placeholder (a finished progress bar) has no id
        out.append((depth, type(child).__name__, str(name)))
        out += layout(at, child, depth + 1)
    return out


def assert_clean(at: AppTest) -> None:
    """No exception element, and no 'nan' in any text element of the page."""
    assert not at.exception, [e.value for e in at.exception]
    for kind in ("markdown", "caption", "text", "code", "latex", "info", "warning", "error", "success"):
        for el in getattr(at, kind):
            assert "nan" not in str(el.value).lower().replace("nano", "").split(), (kind, el.value)


def option_value(label: str):
    """A select slider's option label back as its value: ``"64"`` -> 64, ``"0.5"`` -> 0.5, text as is."""
    try:
        x = float(label)
    except ValueError:
        return label
    return int(x) if x.is_integer() else x
