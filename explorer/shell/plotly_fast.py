"""A faster ``go.Figure.to_dict`` for the path every chart takes to the browser (issue 20, item 3).

Every chart goes to the browser as ``plotly.io.to_json(fig)`` (the chart door, :mod:`explorer.shell.charts.door`,
either way), which calls ``fig.to_dict()``, which deep-copies the figure with :func:`copy.deepcopy` (about
1-2.5 ms for a small heat map, most of it the ~8 KB default template every figure carries) before it turns NumPy
arrays into base64 typed arrays, a walk that checks every value of that template too. :func:`to_dict` makes the
same fresh copy with a plain recursive walk (:func:`fresh_copy`) and runs Plotly's own base64 conversion on
everything but ``layout.template`` (JSON-made: never NumPy arrays). The result is equal to Plotly's, key for key
(``tests/shell/test_plotly_fast.py`` checks every lesson's figures at defaults), in about an eighth of the time
(0.28 against 2.3 ms for a 6 x 6 heat map here). Importing :mod:`explorer.shell.charts` installs it
(:func:`install`).
"""

from __future__ import annotations

import copy
import functools

import numpy as np
from _plotly_utils.utils import convert_to_base64, is_homogeneous_array, is_skipped_key, to_typed_array_spec
from plotly.basedatatypes import BaseFigure

_ATOMS = (str, int, float, bool, type(None))
_PLOTLY_TO_DICT = BaseFigure.to_dict


def fresh_copy(obj):
    """A copy of ``obj`` sharing nothing mutable with it (as ``copy.deepcopy``), for JSON-like figure data.

    dict, list and tuple are rebuilt with the same type, NumPy arrays copied, str/int/float/bool/None
    shared (immutable); anything else goes through ``copy.deepcopy``.
    """
    t = type(obj)
    if t in _ATOMS:
        return obj
    if t is dict:
        return {k: fresh_copy(v) for k, v in obj.items()}
    if t is list:
        return [fresh_copy(v) for v in obj]
    if t is tuple:
        return tuple(fresh_copy(v) for v in obj)
    if t is np.ndarray:
        return obj.copy()
    return copy.deepcopy(obj)


def to_dict(self) -> dict:
    """``BaseFigure.to_dict``, equal result: ``{"data": [...], "layout": {...}}`` (+ ``"frames"``), arrays as base64."""
    res = {"data": fresh_copy(self._data), "layout": fresh_copy(self._layout)}
    frames = [fresh_copy(frame._props) for frame in self._frame_objs]
    if frames:
        res["frames"] = frames
    convert_to_base64(res["data"])
    convert_to_base64(frames)
    layout = res["layout"]
    for key, value in layout.items():  # convert_to_base64's own step, the template left out; same key order
        if key == "template" or is_skipped_key(key):
            continue
        if is_homogeneous_array(value):
            layout[key] = to_typed_array_spec(value)
        else:
            convert_to_base64(value)
    return res


def install() -> None:
    """Use :func:`to_dict` for every Plotly figure in this process."""
    BaseFigure.to_dict = to_dict


def uninstall() -> None:
    """Back to Plotly's own ``to_dict`` (for comparisons)."""
    BaseFigure.to_dict = _PLOTLY_TO_DICT


# Lines across a plot as layout dicts, for one ``go.Figure(data=..., layout=dict(shapes=..., annotations=...))``
# call: ``fig.add_hline``/``add_vline`` after the figure is built cost several ms each. The dicts are what those
# methods put in the layout (same keys and values) for a figure without subplots.
def hline(y: float, line: dict, text: str | None = None, position: str = "top left") -> tuple[dict, list[dict]]:
    """``(shape, [annotation])`` of ``fig.add_hline(y=y, line=line, annotation_text=text,
    annotation_position=position)``; ``position`` is ``"top"``/``"bottom"`` + ``"left"``/``"right"``."""
    shape = dict(line=line, type="line", x0=0, x1=1, xref="x domain", y0=y, y1=y, yref="y")
    if text is None:
        return shape, []
    vertical, horizontal = position.split()
    if vertical not in ("top", "bottom") or horizontal not in ("left", "right"):
        raise ValueError(f"position must be 'top'/'bottom' + 'left'/'right', got {position!r}")
    note = dict(showarrow=False, text=text, x=0 if horizontal == "left" else 1, xanchor=horizontal, xref="x domain",
                y=y, yanchor="bottom" if vertical == "top" else "top", yref="y")
    return shape, [note]


def vline(x: float, line: dict, xref: str = "x", yref: str = "y domain") -> dict:
    """The shape of ``fig.add_vline(x=x, line=line)`` (``xref``/``yref`` name another subplot's axes)."""
    return dict(line=line, type="line", x0=x, x1=x, xref=xref, y0=0, y1=1, yref=yref)


@functools.lru_cache(maxsize=64)
def _subplot_layout(rows: int, cols: int, kwargs: tuple) -> dict:
    from plotly.subplots import make_subplots

    layout = make_subplots(rows=rows, cols=cols, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs})
    out = layout.layout.to_plotly_json()
    out.pop("template", None)
    return out


def subplot_layout(rows: int, cols: int, **kwargs) -> dict:
    """The layout ``make_subplots(rows, cols, **kwargs)`` makes (axes' domains and anchors, subplot titles as
    annotations), without the template, as a fresh dict: for one ``go.Figure(data=..., layout=...)`` call.

    Built once per distinct arguments (``make_subplots`` itself takes 10-40 ms); list arguments are passed as
    tuples or lists. Subplot (r, c) of a grid with ``cols`` columns uses axes ``x{k}``/``y{k}``, k = (r-1)*cols + c
    (``x``/``y`` for k = 1): a trace goes there with ``xaxis="x{k}", yaxis="y{k}"``.
    """
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))
    return fresh_copy(_subplot_layout(rows, cols, frozen))


def axis_names(k: int) -> tuple[str, str]:
    """``("x", "y")`` for subplot 1, ``("x2", "y2")`` for subplot 2, ...: a trace's ``xaxis``/``yaxis``."""
    return ("x", "y") if k == 1 else (f"x{k}", f"y{k}")
