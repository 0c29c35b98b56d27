"""Link values: reading, checking, correcting and warning about the values a page's link gives its controls.

Every control is bound to a query parameter, so a copied link reproduces what the sender saw. A link is a visitor's
text: every value it holds is checked before a widget reads it and is shown as text, never as Markdown. Streamlit
silently drops a link value it cannot use (``?seed=abc``) and misreads others (it overflows on ``inf``), so a value
the control's parser (:mod:`explorer.shell.controls.declare`) refuses, or one given twice, leaves the link before
the widget is seeded (:func:`refuse_unusable`) or is corrected in it (:func:`correct_link`), and
:func:`check_link` warns.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import streamlit as st
from streamlit.errors import StreamlitAPIException

from explorer.shell import i18n
from explorer.shell.textviews import code_span

_, _n = i18n.translator(__name__)

_LINK_KEY = "_link_params"  # raw query parameters of the session's first run, until check_link judges them
_WARN_KEY = "_link_warnings"  # {key: warning} of the session's link, until dismissed
_SHOWN_KEY = "_link_warnings_shown"  # keys whose warning was shown inline on this run
_RERUN_KEY = "_link_rerun_due"  # a repeated key left the link before the page was known: start the run again
_SET_KEY = "_set_by_code"  # keys of widgets whose value the page set through set_value, until they are drawn
_RANGES_KEY = "_ranges_drawn"  # {key: (lo, hi, step)} a number whose range depends on the run was last drawn in
SHOWN_CHARS = 40  # a link value longer than this is shortened in a warning
_INT_TEXT = re.compile(r"-?[0-9]+\Z")  # ASCII digits only: int() would also take " 5 ", "1_000" and "٣"
_DECIMAL_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?\Z")


def _snapshot_link(*, page_known: bool = True) -> None:
    """Keep the raw query parameters of the session's first run (before widgets clean them).

    A key given more than once is removed from the link and the run starts again, so its control opens at the
    default; :func:`check_link` warns about it. The run starts again only once the page is known
    (``page_known``: ``st.navigation`` has run): ``st.rerun`` asks for the page the run is on, and before the
    navigation that is the entrypoint, which the navigation resolves to the default page, so a link to a lesson
    landed on the walkthrough (``/transformer-block?blk_block=3&blk_block=5`` opened ``/``, Streamlit 1.67). A call
    with ``page_known=False`` leaves the rerun to the first call after the navigation.
    """
    ss = st.session_state
    if _LINK_KEY not in ss:
        ss[_LINK_KEY] = {k: st.query_params.get_all(k) for k in st.query_params}
        ss[_WARN_KEY] = {}
        repeated = [k for k, v in ss[_LINK_KEY].items() if len(v) > 1]
        if any([_remove_from_link(k) for k in repeated]):
            ss[_RERUN_KEY] = True
    if page_known and ss.pop(_RERUN_KEY, False):
        _rerun_with_the_new_link()


def _rerun_with_the_new_link() -> None:
    """Start the run again after this run changed the link, every bound widget seeded from the link afresh.

    ``st.rerun`` keeps the values Streamlit seeded from the link earlier in this run as values set through Session
    State, and then warns (with a stack trace) about every such widget that has a default; so they are forgotten
    first (only on a page's first run do the link's keys hold link-seeded values: later, a bound key cannot change).
    """
    for key in list(st.query_params):
        if not key.startswith("_") and key in st.session_state:  # widget keys; never this module's own state
            del st.session_state[key]
    st.rerun()


def _remove_from_link(key: str) -> bool:
    """Remove ``key`` from the page's link before a widget is bound to it; ``False`` if it is absent or bound."""
    if key not in st.query_params:
        return False
    try:
        del st.query_params[key]
    except StreamlitAPIException:  # already bound to a widget this session: Streamlit owns its value
        return False
    return True


def correct_link(key: str, value: str | None) -> None:
    """Make the link hold ``value`` for ``key`` (``None``: no value) before its bound widget is drawn, and start the
    run again if it changed, so the widget is seeded from the corrected link (the nearest valid head count) the
    supported way: through ``st.session_state`` Streamlit warns about a widget with a default. Nothing happens once
    the widget is bound (then the learner's value, not the link, is the widget's).
    """
    if st.query_params.get_all(key) == ([] if value is None else [value]):
        return
    try:
        if value is None:
            del st.query_params[key]
        else:
            st.query_params[key] = value
    except (StreamlitAPIException, KeyError):
        return
    _rerun_with_the_new_link()


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _canonical(value) -> str:
    """A widget value as Streamlit writes it into the link (``True`` -> ``true``, ``5.0`` -> ``5``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    return str(value)


def link_number(raw: str, lo: float, hi: float, *, integer: bool, step: float | None = None) -> int | float | None:
    """The number a link value stands for, or ``None`` if the control cannot use it.

    Valid: the number written as the app writes it (:func:`_canonical`): ASCII digits, an optional ``-``, for a
    non-integer control an optional fraction; no padding, exponent, hex, ``_``, ``+``, leading zeros or ``-0``;
    within ``[lo, hi]`` and, with ``step``, on the grid ``lo + k * step``. ``link_number("8", 1, 512, integer=True)
    == 8``; ``"inf"``, ``"1e2"``, ``"5.0"``, ``" 5 "``, ``"٣"`` give ``None``.
    """
    if not (_INT_TEXT if integer else _DECIMAL_TEXT).match(raw):
        return None
    x = int(raw) if integer else float(raw)
    if not lo <= x <= hi or _canonical(x) != raw:
        return None
    if step:
        k = (x - lo) / step
        if abs(k - round(k)) > 1e-9 * max(1.0, abs(k)):
            return None
    return x


def refuse_unusable(tests: Mapping[str, Callable[[str], bool]]) -> None:
    """Before the bound widgets of ``tests`` (``{key: usable}``) are drawn: every link value ``usable`` does not
    accept leaves the link, then the run starts again once, so each such widget opens at its default
    (:func:`check_link` then warns).

    For values Streamlit would misread rather than drop: a number it would parse leniently or overflow on, an empty
    value a segmented control takes as "nothing selected". Nothing happens once the widget is bound.
    """
    _snapshot_link()
    bad = [key for key, usable in tests.items() if (raw := st.query_params.get_all(key))
           and not (len(raw) == 1 and usable(raw[0]))]
    if any([_remove_from_link(key) for key in bad]):
        _rerun_with_the_new_link()


def _shown(value: str) -> str:
    """A link value as a warning shows it: shortened, and quoted (``repr``) when it is empty, padded or holds
    characters that do not print (a newline, a bidi override), so the learner sees exactly what the link held."""
    s = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"
    return repr(s) if not s or s != s.strip() or not s.isprintable() else s


def link_value(key: str) -> str | None:
    """The raw value the session's link gave for ``key``, or ``None`` (none, given more than once, or judged).

    Read from the snapshot of the session's first run, so it survives the widgets cleaning the address bar. It does
    not consume the value: :func:`check_link` still warns about it (and after that this returns ``None``).
    """
    _snapshot_link()
    raw = st.session_state[_LINK_KEY].get(key)
    return raw[0] if raw and len(raw) == 1 else None


def check_link(key: str, value, expected: str, *, inline: bool = True) -> None:
    """Warn once if the link's raw value for ``key`` did not become the widget's value as given.

    Call right after the bound widget with its returned ``value``; ``expected`` says what a valid value looks like
    (``"a whole number from 1 to 128"``). The warning shows right there on this run (``inline=False``, for a control
    in a closed expander: on top of the page) and, until dismissed, above every page on later runs
    (:func:`show_link_warnings`). Values are shown as text (a code span that nothing in them can end).
    """
    raw = st.session_state.get(_LINK_KEY, {}).pop(key, None)
    if not raw:
        return
    used = _canonical(value)
    if len(raw) == 1:
        given = raw[0]
        if given == used or (isinstance(value, bool) and given.strip().lower() == used):
            return
        message = _("The link's {given} is not valid ({key} must be {expected}); using {used}.").format(
            given=code_span(f"{key}={_shown(given)}"), key=key, expected=expected,
            used=code_span(f"{key}={_shown(used)}"))
    else:
        values = ", ".join(code_span(_shown(v)) for v in raw[:5]) + (", …" if len(raw) > 5 else "")
        message = _("The link gives {key} {n} times ({values}), which is not valid (one value per control; {key} "
                    "must be {expected}); using {used}.").format(key=code_span(key), n=len(raw), values=values,
                                                                 expected=expected,
                                                                 used=code_span(f"{key}={_shown(used)}"))
    st.session_state.setdefault(_WARN_KEY, {})[key] = message
    if inline:
        st.session_state.setdefault(_SHOWN_KEY, set()).add(key)
        st.warning(message, icon="⚠️")


def retired_link_key(key: str, instead: str) -> None:
    """A link key an earlier version of the app wrote and no control reads now (``mh_seed``): warn as
    :func:`check_link` does that its value is not used and ``instead`` what is, and drop it from the address bar (old
    links keep opening; a copied link no longer carries it)."""
    _snapshot_link()
    raw = st.session_state[_LINK_KEY].pop(key, None)
    if raw:
        values = ", ".join(code_span(_shown(v)) for v in raw[:5])
        message = _("The link's {key} ({values}) is not used any more: {instead}").format(
            key=code_span(key), values=values, instead=instead)
        st.session_state.setdefault(_WARN_KEY, {})[key] = message
        st.session_state.setdefault(_SHOWN_KEY, set()).add(key)
        st.warning(message, icon="⚠️")
    _remove_from_link(key)


def show_link_warnings() -> None:
    """Above the page, the session's link warnings not shown inline on this run, with a Dismiss button.

    The entrypoint calls it after the page ran (a page that stops early, before ``st.stop()``); a run that started
    again (a link value removed, ``st.rerun``) shows here what its first attempt had found.
    """
    shown = st.session_state.pop(_SHOWN_KEY, set())
    warnings = [w for k, w in st.session_state.get(_WARN_KEY, {}).items() if k not in shown]
    if not warnings:
        return
    st.warning(_("**The link you opened had values the app cannot use.**") + "\n\n"
               + "\n\n".join(f"- {w}" for w in warnings), icon="⚠️")
    if st.button(_("Dismiss"), key="link_warnings_dismiss"):
        st.session_state[_WARN_KEY] = {}
        st.rerun()


def one_of(options) -> str:
    """``one of a, b, c``: what a link value for a choice must be (the warning's description), in the run's language."""
    return _("one of {options}").format(options=", ".join(map(str, options)))


def set_value(key: str, value) -> None:
    """Set the value of the widget ``key`` from code (a preset, a clamp), in a callback or before it is drawn.

    The value goes through ``st.session_state``, the way Streamlit supports for a widget bound to the link (the link
    follows). Streamlit warns (with a stack trace) when a widget that has a default also gets its value through
    Session State, so the declared control leaves its default out on this one run (:func:`_default_unless_set`).
    """
    st.session_state[key] = value
    st.session_state.setdefault(_SET_KEY, set()).add(key)


def _default_unless_set(key: str, value, none):
    """``value``, or ``none`` (the widget's "no default") on the run after :func:`set_value` set ``key``."""
    pending = st.session_state.get(_SET_KEY)
    if pending and key in pending:
        pending.discard(key)
        return none
    return value


def write_link(key: str, text: str | None) -> None:
    """Make the link hold ``text`` for ``key`` (``None``: leave it out), for a control the shell syncs to the link by
    hand (one Streamlit does not bind: :attr:`~explorer.shell.controls.declare.Control.by_hand`), after it is drawn."""
    if text is None:
        st.query_params.pop(key, None)
    elif st.query_params.get(key) != text:
        st.query_params[key] = text


def hold_in_range(key: str, bounds: tuple, parse: Callable[[str], float | None], nearest: Callable[[float], float],
                  default) -> None:
    """Before a number whose range depends on the run (a model's layers, a sentence's tokens) is drawn: its value in
    ``st.session_state[key]``, in this run's range ``bounds`` (``(lo, hi, step)``).

    On its first draw (in the session, or back on its page): the link's value when ``parse`` takes it (one it does
    not take leaves the link, :func:`check_link` warns and the default opens), else the value it had when last drawn in
    this session, else ``default``. Afterwards: its value, kept where it fits the range and moved to ``nearest(value)``
    where it does not (another model's layer: the new model's last). The widget is drawn without a default of its own
    and is not bound to the link (a bound widget whose range changes is a new widget to Streamlit, which showed a value
    code gave it but left it out of the link, or kept the old one there: issue 50); :func:`write_link` writes it.
    """
    ss = st.session_state
    _snapshot_link()
    set_by_code = key in ss.get(_SET_KEY, ())
    ss.get(_SET_KEY, set()).discard(key)  # a value set_value gave it is in ss[key]: taken below
    value, first = ss.get(key), not _is_number(ss.get(key))
    if first:
        raw = st.query_params.get_all(key)
        value = parse(raw[0]) if len(raw) == 1 else None
        if raw and value is None:
            _remove_from_link(key)
        if value is None:
            value = ss.get(_kept(key), default)
    moved, ranges = nearest(value), ss.setdefault(_RANGES_KEY, {})
    if first or set_by_code or moved != value or ranges.get(key) != bounds:
        ss[key] = moved  # a range that changed makes the widget a new one to Streamlit: it takes this value
    ranges[key] = bounds


def kept_by_hand(key: str, value) -> None:
    """Keep ``value`` for :func:`hold_in_range`'s next first draw of ``key`` (the learner comes back to the page)."""
    st.session_state[_kept(key)] = value


def _kept(key: str) -> str:
    return f"_{key}_kept"
