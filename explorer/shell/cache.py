"""The caches every lesson uses: cached sections (element replay) and cached computations.

Every section function (a lesson's ``draw.py``) is decorated with :func:`section` at import
time, so Streamlit records the elements it draws on the first call with given arguments and
replays them on every later call with equal arguments: a rerun caused by another widget (or a
second learner opening the same link) does not build or serialize the figures again. Widgets,
``st.session_state`` and ``st.stop`` stay in the page files. Pure computations that several
sections share are wrapped with :func:`cached`.

Both key on the arguments' values. A frozen dataclass argument (the shared
:class:`~explorer.shell.settings.Settings`, a lesson's own key) is hashed by its fields as a
tuple, which Streamlit does in half the time of its generic dataclass path (it deep-copies the
dataclass into a dict first); the caches are per process, shared by every session.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable

import streamlit as st

SECTION_MAX_ENTRIES = 16  # per section function; at the largest settings one entry holds up to a few MB


def _fields(obj) -> tuple:
    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))


def _dataclasses_in(hint, found: set[type]) -> None:
    """Every dataclass type named by a type hint (``Settings``, ``Settings | LessonExample``, …), and in its fields."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint in found:
            return
        found.add(hint)
        for field_hint in typing.get_type_hints(hint).values():
            _dataclasses_in(field_hint, found)
        return
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is not None:
        for arg in typing.get_args(hint):
            _dataclasses_in(arg, found)


def key_hash_funcs(func: Callable) -> dict[type, Callable]:
    """``hash_funcs`` for ``st.cache_data``: each dataclass type in ``func``'s parameter hints hashed by its fields."""
    hints = typing.get_type_hints(func)
    hints.pop("return", None)
    found: set[type] = set()
    for hint in hints.values():
        _dataclasses_in(hint, found)
    return {t: _fields for t in found}


def section(func):
    """Decorator for a page section drawn from its arguments alone (figures, tables, text; no widgets).

    The first call with given arguments runs ``func`` and Streamlit records every element
    it draws; a later call with equal arguments (any session) replays the recorded
    elements instead of building and serializing the figures again
    (``st.cache_data``'s element replay). This is what keeps a page's rerun close to a
    trivial page's when a widget elsewhere changes.

    Rules for ``func``: pure (no ``st.session_state``, no ``st.stop``, no widgets:
    Streamlit refuses widgets inside cached functions); arguments hashable by
    ``st.cache_data`` (numbers, strings, tuples, NumPy arrays, frozen dataclasses, annotated
    as such); returns ``None`` or a small value. A section must not call another section
    inside columns it created (Streamlit would replay the inner one outside them). Each
    section function keeps at most ``SECTION_MAX_ENTRIES`` argument sets (least recently
    used dropped).
    """
    return st.cache_data(max_entries=SECTION_MAX_ENTRIES, show_spinner=False, hash_funcs=key_hash_funcs(func))(func)


def cached(max_entries: int) -> Callable[[Callable], Callable]:
    """Decorator for a pure computation shared by sections: ``st.cache_data`` keeping ``max_entries`` argument
    sets, frozen dataclass arguments hashed by their fields (see the module docstring)."""

    def wrap(func: Callable) -> Callable:
        return st.cache_data(max_entries=max_entries, show_spinner=False, hash_funcs=key_hash_funcs(func))(func)

    return wrap
