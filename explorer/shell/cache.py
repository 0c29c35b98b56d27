"""Page sections: the figures, tables and text a page draws from its arguments alone.

One module per page. Every section function is decorated with :func:`section` at
import time, so Streamlit records the elements it draws on the first call with given
arguments and replays them on every later call with equal arguments: a rerun caused by
another widget (or a second learner opening the same link) does not build or serialize
the figures again. Widgets, ``st.session_state`` and ``st.stop`` stay in the page files.
"""

from __future__ import annotations

import streamlit as st

SECTION_MAX_ENTRIES = 16  # per section function; at the largest settings one entry holds up to a few MB


def section(func):
    """Decorator for a page section drawn from its arguments alone (figures, tables, text; no widgets).

    The first call with given arguments runs ``func`` and Streamlit records every element
    it draws; a later call with equal arguments (any session) replays the recorded
    elements instead of building and serializing the figures again
    (``st.cache_data``'s element replay). This is what keeps a page's rerun close to a
    trivial page's when a widget elsewhere changes.

    Rules for ``func``: pure (no ``st.session_state``, no ``st.stop``, no widgets:
    Streamlit refuses widgets inside cached functions); arguments hashable by
    ``st.cache_data`` (numbers, strings, tuples, NumPy arrays); returns ``None`` or a
    small value. Each section function keeps at most ``SECTION_MAX_ENTRIES`` argument
    sets (least recently used dropped).
    """
    return st.cache_data(max_entries=SECTION_MAX_ENTRIES, show_spinner=False)(func)
