"""Helpers for the AppTests: start the app on a page, read its Plotly figures back."""

from __future__ import annotations

import base64
import functools
import json
import re
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from explorer.lessons import lesson
from explorer.shell.charts.door import COMPONENT_NAME

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = str(ROOT / "streamlit_app.py")


def lesson_page(name: str) -> str:
    """The page file of lesson ``name`` as ``AppTest.switch_page`` wants it."""
    return lesson(name).page


def app_at(page: str | None = None, *, session: dict | None = None, query: dict | None = None,
           timeout: float = 60, opened_by_link: bool = False) -> AppTest:
    """Run the whole app (entrypoint + navigation) on lesson ``page`` (its package name) and return the AppTest.

    Shared controls are driven through ``session`` (``at.session_state``) or ``query``
    (``at.query_params``): AppTest drops the entrypoint's sidebar widgets on a rerun
    after a page switch (Streamlit 1.67), a real browser keeps them.

    By default the app runs twice: on its default page, then switched to ``page``. With ``opened_by_link=True`` it
    runs once, on ``page``, the way a browser opens a link to the lesson (``/causes?...``): AppTest can only switch
    to a page the app has registered in an earlier run, so the page's script hash is the one Streamlit resolved for
    it the first time (:func:`page_hash`), and the run must finish on that page (checked here). It saves the default
    page's run (0.04-0.06 s a run at load ~10, measured).
    """
    at = AppTest.from_file(ENTRYPOINT, default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (session or {}).items():
        at.session_state[k] = v
    if page is not None and opened_by_link:
        at._page_hash = page_hash(page)  # what switch_page sets (Streamlit 1.67)
        at.run()
        assert at._finished_page_script_hash == page_hash(page), f"the run did not open {page}"
        return at
    at.run()
    if page is not None:
        at.switch_page(lesson_page(page))
        at.run()
    return at


@functools.cache
def page_hash(page: str) -> str:
    """The script hash of lesson ``page`` in the app's navigation, as ``AppTest.switch_page`` resolves it after a run
    of the app (the default lesson's hash is its "-home" path's: ``streamlit_app.py``)."""
    at = AppTest.from_file(ENTRYPOINT, default_timeout=60).run()
    at.switch_page(lesson_page(page)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at._finished_page_script_hash


def chart_elements(at: AppTest) -> list:
    """Every chart element of the last run, in page order: ``charts.show_fig``'s component (``bidi_component`` of
    :data:`~explorer.shell.charts.door.COMPONENT_NAME`) or ``st.plotly_chart`` (the door's other way)."""
    out = [el for el in at.get("bidi_component") if el.proto.component_name == COMPONENT_NAME]
    return out + list(at.get("plotly_chart"))


def chart_spec(el) -> str:
    """A chart element's figure as Plotly JSON (``plotly.io.to_json``), whichever way it was sent."""
    if getattr(el.proto, "component_name", None) == COMPONENT_NAME:
        return json.loads(el.proto.json)["spec"]
    return el.proto.spec


def figures(at: AppTest) -> dict[str, dict]:
    """Every Plotly chart of the last run as ``{widget key suffix: figure dict}``."""
    out = {}
    for i, el in enumerate(chart_elements(at)):
        key = el.proto.id.rsplit("-", 1)[-1] if el.proto.id else str(i)
        out[key] = json.loads(chart_spec(el))
    return out


def figure_array(values) -> np.ndarray:
    """A figure's data array, plain list or Plotly's base64 typed array (``{"dtype", "bdata", "shape"}``)."""
    if isinstance(values, dict):
        out = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).astype(float)
        shape = values.get("shape")
        return out.reshape([int(k) for k in str(shape).split(",")]) if shape else out
    return np.array(values, dtype=float)


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


# --- languages -------------------------------------------------------------------------------------------

_TEXT_KINDS = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success",
               "text", "button", "expander", "tab")
_CODE_SPAN = re.compile(r"`+[^`]*`+|\$[^$]*\$|\\\([^)]*\\\)")
_SENTENCE_END = re.compile(r"(?<=[.!?:;…])\s+|\n+|\s+[·—–]\s+")
_WORD = re.compile(r"[^\W\d_]{2,}")


def page_texts(at: AppTest, *, sidebar: bool = False) -> list[str]:
    """Every piece of text a learner reads in the page's main area (and the sidebar with ``sidebar=True``):
    headings, Markdown, captions, notes, text, widget labels, help and option labels, button and expander labels,
    and each Plotly chart's titles, axis titles, legend names, annotations and hover templates (formulas, code and
    tables are left out)."""
    out: list[str] = []
    root = at if sidebar else at.main
    for kind in _TEXT_KINDS:
        for el in getattr(root, kind, []):
            for attr in ("value", "label", "body"):
                value = getattr(el, attr, None) if attr != "body" else getattr(getattr(el, "proto", None), "body", None)
                if isinstance(value, str) and value:
                    out.append(value)
    for kind in ("radio", "selectbox", "multiselect", "select_slider", "slider", "number_input", "text_input",
                 "text_area", "toggle", "checkbox", "button_group"):
        for el in getattr(root, kind, []):
            proto = getattr(el, "proto", None)
            for field in ("label", "help", "placeholder"):
                value = getattr(proto, field, "")
                if isinstance(value, str) and value:
                    out.append(value)
            for field in ("options", "captions"):
                out += [str(getattr(o, "content", o)) for o in getattr(proto, field, [])]
    for fig in figures(at).values():
        layout_ = fig.get("layout", {})

        def title(obj):
            t = obj.get("title") if isinstance(obj, dict) else None
            return t.get("text") if isinstance(t, dict) else t

        for key, value in layout_.items():
            if key.startswith(("xaxis", "yaxis")) or key in ("coloraxis",):
                out.append(title(value) or "")
        out.append(title(layout_) or "")
        out += [a.get("text", "") for a in layout_.get("annotations", [])]
        for trace in fig.get("data", []):
            out += [str(trace.get("name") or ""), str(trace.get("hovertemplate") or "")]
            out.append(title(trace.get("colorbar", {})) or "")
    return [t for t in out if t]


def english_sentences(texts: list[str], allowed: tuple[str, ...] = ()) -> set[str]:
    """The sentences of ``texts`` that carry words: code spans, formulas and ``allowed`` text (the learner's
    sentence, token labels, the model's text) removed; at least 3 words of 2+ letters left."""
    out = set()
    for text in texts:
        text = _CODE_SPAN.sub(" ", re.sub(r"<[^>]+>", " ", text))
        for allowed_text in allowed:
            text = text.replace(allowed_text, " ")
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip(" *_#>-•()[]\"'“”")
            if len(_WORD.findall(sentence)) >= 3:
                out.add(sentence)
    return out


def english_left(at_en: AppTest, at_other: AppTest, allowed: tuple[str, ...] = (), *, sidebar: bool = False
                 ) -> list[str]:
    """The English page's sentences still found word for word on the same page in another language: what was not
    translated (each a sentence of at least 3 words; technical terms, tokens and numbers alone never count).
    The main area by default (a lesson's own text); ``sidebar=True`` adds the shared sidebar."""
    other = "\n".join(page_texts(at_other, sidebar=sidebar))
    return sorted(s for s in english_sentences(page_texts(at_en, sidebar=sidebar), allowed) if s in other)
