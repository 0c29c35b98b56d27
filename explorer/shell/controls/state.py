"""A page's own state between runs, per session in ``st.session_state``, so that pages never write it themselves
(``tests/test_contract_files.py`` checks that a ``page.py`` writes no Session State).
"""

from __future__ import annotations

import streamlit as st


def last_valid(key: str, value, default=None):
    """``value`` when it is usable (not ``None``), kept under ``key`` for later runs; otherwise the last usable value
    kept there, or ``default`` when there never was one."""
    if value is not None:
        st.session_state[key] = value
    return st.session_state.get(key, default)


def edition(key: str) -> int:
    """The edition number stored under ``key`` (0 on a session's first run)."""
    return st.session_state.setdefault(key, 0)


def next_edition(key: str, *forget: str) -> None:
    """Start the editor of edition ``key`` over (an editor keyed ``f"{name}_{edition}"`` starts from its default data:
    Streamlit keeps an edited widget's state under its key): its edition number grows by one, the keys in ``forget``
    (values kept for it, such as its :func:`last_valid` value) are dropped, and the script reruns now."""
    st.session_state[key] = st.session_state.get(key, 0) + 1
    for name in forget:
        st.session_state.pop(name, None)
    st.rerun()


def reset(key: str, value=None) -> None:
    """Set widget ``key`` (one not bound to the link: a chooser that acts once, such as a preset menu) to ``value``,
    from its callback."""
    st.session_state[key] = value
