"""Shared controls (the sidebar), link (query-parameter) checks, and the widgets every lesson repeats.

The shared controls are drawn once, in the entrypoint's sidebar, and bound to
query parameters (``bind="query-params"``), so they keep their values across
pages and a copied link reproduces what the sender saw. Streamlit silently
drops a link value it cannot use (``?seed=abc``) and falls back to the default;
:func:`check_link` turns that into a visible warning.

A link is a visitor's text: every value it holds is checked before a widget reads it
and is shown as text, never as Markdown. Numbers go through :func:`number_input` and
:func:`slider`, which take only a number written as the app writes it (``42``, ``0.25``:
ASCII digits, no exponent, sign of zero, padding or hex), in range and on the control's
step; anything else (``inf``, ``1e309``, ``5.0``, ``٣``, an empty value) is removed from
the link before Streamlit parses it (Streamlit's own parsing overflows on ``inf``), so the
control opens at its default and :func:`check_link` warns. A parameter given more than
once (``?seed=1&seed=2``) is refused the same way. A link value that must be corrected
(the nearest valid head count) is corrected in the link with :func:`correct_link`, so
Streamlit seeds the widget from it as from any link.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st
from streamlit.errors import StreamlitAPIException

from explorer.shell import cache, i18n
from explorer.shell import settings as shared_settings
from explorer.shell.cache import cached
from explorer.shell.charts import COLOR_SCALES
from explorer.shell.i18n import N_
from explorer.shell.settings import Settings

_, _n = i18n.translator(__name__)

DEFAULTS = {
    "sentence": "The cat sat on the mat",
    "embedding": "auto",
    "positional": False,
    "seed": 42,
    "d_model": 8,
    "d_k": 4,
}
SEED_MAX = 2**31 - 1
D_MODEL_RANGE = (1, 512)
D_K_RANGE = (1, 128)
SENTENCE_MAX_CHARS = 1000
COLOR_SCALE_DEFAULT = "fixed"  # the first of COLOR_SCALES: the radio's default
# The sidebar's shared controls, in two kinds. Numbers (number_input / slider, which leave their default out of the
# state and the link) with their ranges; and the rest, drawn without a default once they have state. One table
# for the link checks and for the values kept across a page change.
NUMBER_RANGES = {"seed": (0, SEED_MAX), "d_model": D_MODEL_RANGE, "d_k": D_K_RANGE}
SHOWN_FROM_STATE = {"sentence": DEFAULTS["sentence"], "positional": DEFAULTS["positional"],
                    "embedding": DEFAULTS["embedding"], "color_scale": COLOR_SCALE_DEFAULT}
EMBEDDING_LABELS = {  # option (also its value in the link) -> caption; the first is the default
    "auto": N_("per word for your sentence; the lesson's rows for the lesson's sentence"),
    "lesson": N_("random rows, as in the lesson"),
    "per-token": N_("one vector per word"),
}
EMBEDDING_NAMES = {"auto": N_("auto"), "lesson": N_("lesson"), "per-token": N_("per-token")}  # what the radio shows
COLOR_SCALE_NAMES = {"fixed": N_("fixed"), "map": N_("map"), "row": N_("row")}  # the radio's options, shown
SENTENCE_TWINS = {"pt": "O gato sentou no tapete", "tr": "Kedi paspasın üzerine oturdu"}
"""The lesson's sentence in the learner's language, one click away (the default stays the lesson's English
sentence, whose numbers are the lesson's)."""

_PAGE_KEY = "_shown_page"  # the URL path of the page the session's last run showed
_LINK_KEY = "_link_params"  # raw query parameters of the session's first run, until check_link judges them
_WARN_KEY = "_link_warnings"  # {key: warning} of the session's link, until dismissed
_SHOWN_KEY = "_link_warnings_shown"  # keys whose warning was shown inline on this run
_SLOTS_KEY = "_sidebar_note_slots"  # {shared control: st.empty() under it in the sidebar}, drawn on every run
_NOT_USED_KEY = "_not_used"  # {shared control: why this page does not use it}, set by not_used on this run
_SET_KEY = "_set_by_code"  # keys of widgets whose value the page set through set_value, until they are drawn
REPEATABLE: frozenset[str] = frozenset()
"""Link keys that may be given more than once (a bound multiselect's); any other repeated key is refused."""
SHOWN_CHARS = 40  # a link value longer than this is shortened in a warning
_INT_TEXT = re.compile(r"-?[0-9]+\Z")  # ASCII digits only: int() would also take " 5 ", "1_000" and "٣"
_DECIMAL_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?\Z")


@dataclass(frozen=True)
class Shared:
    """The raw values of the shared controls for this run (the sentence untokenized; ``d_v = d_k``).

    Lessons that work on the sentence use :func:`lesson_settings` instead, which tokenizes it.
    """

    sentence: str
    embedding: str
    positional: bool
    seed: int
    d_model: int
    d_k: int

    @property
    def d_v(self) -> int:
        return self.d_k


def _snapshot_link() -> None:
    """Keep the raw query parameters of the session's first run (before widgets clean them).

    A key given more than once (not in :data:`REPEATABLE`) is removed from the link and the
    run starts again, so its control opens at the default; :func:`check_link` warns about it.
    """
    ss = st.session_state
    if _LINK_KEY in ss:
        return
    ss[_LINK_KEY] = {k: st.query_params.get_all(k) for k in st.query_params}
    ss[_WARN_KEY] = {}
    repeated = [k for k, v in ss[_LINK_KEY].items() if len(v) > 1 and k not in REPEATABLE]
    if any([_remove_from_link(k) for k in repeated]):
        _rerun_with_the_new_link()


def _show_kept_values_after_a_page_change(page: str | None) -> None:
    """After a page change, make the browser show (and link) the shared controls' values the server kept.

    Measured (issue 30): opened with ``/?seed=9`` and a sidebar page link clicked before that first run ended, the
    next page used seed 9 (the server kept the widget's state) while its Seed box showed 42 and its address had no
    ``seed=9`` (the browser had not yet reported the box, so it drew it anew at its default), and a copied link
    opened at 42. On the first run of a new page, a shared control whose kept value is not its default and is
    missing from the link is given that value again through Session State, which the browser shows and the link
    then holds. Nothing the learner chose is replaced: the value given is the one the page already uses.
    """
    ss = st.session_state
    moved = ss.get(_PAGE_KEY) not in (None, page)
    ss[_PAGE_KEY] = page
    if not moved:
        return
    for key in NUMBER_RANGES:
        if key in ss and key not in st.query_params and ss[key] != DEFAULTS[key]:
            set_value(key, ss[key])
    for key, default in SHOWN_FROM_STATE.items():
        if key in ss and key not in st.query_params and ss[key] != default:
            ss[key] = ss[key]


def _rerun_with_the_new_link() -> None:
    """Start the run again after this run changed the link, every bound widget seeded from the link afresh.

    ``st.rerun`` keeps the values Streamlit seeded from the link earlier in this run as values
    set through Session State, and then warns (with a stack trace) about every such widget that
    has a default; so they are forgotten first (only on a session's first run, or the first
    run of a page, do the link's keys hold link-seeded values: later, a bound key cannot change).
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
    """Make the link hold ``value`` for ``key`` (``None``: no value) before its bound widget is drawn.

    Streamlit seeds a bound widget from the link when a session starts; this is how a link value
    the page corrects (the nearest valid head count) reaches the widget the supported way,
    through the link, instead of through ``st.session_state`` (which Streamlit warns about for
    a widget with a default). When the link changes, the run starts again (``st.rerun``), so
    the widget reads the corrected link. Nothing happens once the widget is bound (then the
    learner's value, not the link, is the widget's).
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


def _canonical(value) -> str:
    """A widget value as Streamlit writes it into the link (``True`` -> ``true``, ``5.0`` -> ``5``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    return str(value)


def link_number(raw: str, lo: float, hi: float, *, integer: bool, step: float | None = None) -> int | float | None:
    """The number a link value stands for, or ``None`` if the control cannot use it.

    Valid: the number written as the app writes it (:func:`_canonical`): ASCII digits, an
    optional ``-``, for a non-integer control an optional fraction; no padding, exponent,
    hex, ``_``, ``+``, leading zeros or ``-0``; within ``[lo, hi]`` and, with ``step``, on the
    grid ``lo + k * step``. ``link_number("8", 1, 512, integer=True) == 8``;
    ``"inf"``, ``"1e2"``, ``"5.0"``, ``" 5 "``, ``"٣"`` give ``None``.
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


def refuse_unusable(key: str, usable: Callable[[str], bool]) -> None:
    """Before ``key``'s bound widget is drawn: unless the link's value for it is one ``usable`` accepts, remove it
    from the link and start the run again, so the widget opens at its default (:func:`check_link` then warns).

    For values Streamlit would misread rather than drop: a number it would parse leniently or
    overflow on, an empty value a segmented control takes as "nothing selected". A value
    given more than once is removed too. Nothing happens once the widget is bound.
    """
    _snapshot_link()
    raw = st.query_params.get_all(key)
    if not raw or (len(raw) == 1 and usable(raw[0])):
        return
    if _remove_from_link(key):
        _rerun_with_the_new_link()


def _refuse_unusable_number(key: str, lo: float, hi: float, *, integer: bool, step: float | None) -> None:
    """:func:`refuse_unusable` with :func:`link_number` as the test."""
    refuse_unusable(key, lambda raw: link_number(raw, lo, hi, integer=integer, step=step) is not None)


def _code(text: str) -> str:
    """``text`` as one Markdown code span: shown literally (no link, image, heading, HTML, LaTeX or emoji).

    The fence is one backtick longer than the longest run of backticks in ``text``, so no
    backtick inside can end the span early; a space pads a leading or trailing backtick.
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _shown(value: str) -> str:
    """A link value as a warning shows it: shortened, and quoted (``repr``) when it is empty, padded or holds
    characters that do not print (a newline, a bidi override), so the learner sees exactly what the link held."""
    s = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"
    return repr(s) if not s or s != s.strip() or not s.isprintable() else s


def link_value(key: str) -> str | None:
    """The raw value the session's link gave for ``key``, or ``None`` (none, given more than once, or judged).

    Read from the snapshot of the session's first run, so it survives the widgets cleaning
    the address bar; a page run without the entrypoint takes the snapshot here. It does not
    consume the value: :func:`check_link` still warns about it (and after that this returns ``None``).
    """
    _snapshot_link()
    raw = st.session_state[_LINK_KEY].get(key)
    return raw[0] if raw and len(raw) == 1 else None


def check_link(key: str, value, expected: str) -> None:
    """Warn once if the link's raw value for ``key`` did not become the widget's value as given.

    Call right after the bound widget with its returned ``value``; ``expected``
    says what a valid value looks like (``"a whole number from 1 to 128"``). The
    warning shows right there on this run (next to the control; the sidebar's
    controls put it on top of the page) and, until dismissed, above every page
    on later runs (:func:`show_link_warnings`). Values are shown as text (a code
    span that nothing in them can end), never as Markdown.
    """
    link = st.session_state.get(_LINK_KEY, {})
    raw = link.pop(key, None)
    if not raw:
        return
    used = _canonical(value)
    if len(raw) == 1:
        given = raw[0]
        if given == used or (isinstance(value, bool) and given.strip().lower() == used):
            return
        message = _("The link's {given} is not valid ({key} must be {expected}); using {used}.").format(
            given=_code(f"{key}={_shown(given)}"), key=key, expected=expected, used=_code(f"{key}={_shown(used)}"))
    else:
        values = ", ".join(_code(_shown(v)) for v in raw[:5]) + (", …" if len(raw) > 5 else "")
        message = _("The link gives {key} {n} times ({values}), which is not valid (one value per control; {key} "
                    "must be {expected}); using {used}.").format(key=_code(key), n=len(raw), values=values,
                                                                 expected=expected, used=_code(f"{key}={_shown(used)}"))
    st.session_state.setdefault(_WARN_KEY, {})[key] = message
    st.session_state.setdefault(_SHOWN_KEY, set()).add(key)
    st.warning(message, icon="⚠️")


def retired_link_key(key: str, instead: str) -> None:
    """A link key an earlier version of the app wrote and no control reads now (``mh_seed``): warn, drop it.

    The warning (shown like :func:`check_link`'s: here on this run, then above the page until
    dismissed) says the link's value is not used and ``instead`` what is; the key is removed
    from the address bar, so a copied link no longer carries it. Old links keep opening.
    """
    _snapshot_link()
    raw = st.session_state[_LINK_KEY].pop(key, None)
    if raw:
        values = ", ".join(_code(_shown(v)) for v in raw[:5])
        message = _("The link's {key} ({values}) is not used any more: {instead}").format(
            key=_code(key), values=values, instead=instead)
        st.session_state.setdefault(_WARN_KEY, {})[key] = message
        st.session_state.setdefault(_SHOWN_KEY, set()).add(key)
        st.warning(message, icon="⚠️")
    _remove_from_link(key)


def show_link_warnings() -> None:
    """Above the page, the session's link warnings not shown inline on this run, with a Dismiss button.

    The entrypoint calls it after the page ran (a page that stops early calls it before
    ``st.stop()``). A warning shows inline on the run that read the link, and here on every
    later run until dismissed; a run that started again (a link value removed, ``st.rerun``)
    shows here what its first attempt had found.
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


def number_input(label: str, min_value: int, max_value: int, value: int, *, key: str, expected: str | None = None,
                 container=None, **kwargs) -> int:
    """A whole-number ``st.number_input`` bound to the link, with the link checks (see the module docstring).

    ``expected`` is the warning's description of a valid value (default: ``"a whole number
    from {min_value} to {max_value}"``); ``container`` is where to draw it (default ``st``,
    e.g. ``st.sidebar``); ``kwargs`` go to Streamlit (``help``…). Returns the value as ``int``.
    """
    _refuse_unusable_number(key, min_value, max_value, integer=True, step=1)
    got = (container or st).number_input(label, min_value, max_value, _default_unless_set(key, value, "min"),
                                         step=1, key=key, bind="query-params", **kwargs)
    check_link(key, got, expected or _("a whole number from {lo} to {hi}").format(lo=min_value, hi=max_value))
    return int(got)


def slider(label: str, min_value: float, max_value: float, value: float, step: float | None = None, *, key: str,
           expected: str | None = None, container=None, **kwargs):
    """A number ``st.slider`` bound to the link, with the link checks (see the module docstring).

    Whole numbers when ``min_value``, ``max_value`` and ``value`` are ``int`` (returns ``int``),
    else numbers on the grid ``min_value + k * step`` (returns ``float``). ``expected``,
    ``container``, ``kwargs``: as :func:`number_input`.
    """
    integer = all(isinstance(v, int) and not isinstance(v, bool) for v in (min_value, max_value, value))
    _refuse_unusable_number(key, min_value, max_value, integer=integer, step=step)
    got = (container or st).slider(label, min_value, max_value, _default_unless_set(key, value, None), step, key=key,
                                   bind="query-params", **kwargs)
    lo, hi = f"{min_value:g}", f"{max_value:g}"
    check_link(key, got, expected or (_("a whole number from {lo} to {hi}") if integer
                                      else _("a number from {lo} to {hi}")).format(lo=lo, hi=hi))
    return int(got) if integer else float(got)


def choice(label: str, options: Sequence, value, *, key: str, expected: str | None = None, **kwargs):
    """``st.selectbox`` bound to the link whose value the page sets through ``st.session_state`` (no default).

    Streamlit warns when a widget with a default also gets its value through Session State;
    this one has none: ``value`` is stored for the key on the session's first run instead
    (``setdefault``), a link value that is one of ``options`` wins over it, and the page may
    move it later (a valid choice after the options changed) without a warning. The link
    always holds the choice. ``expected``: as :func:`number_input` (default: ``"one of …"``).
    """
    st.session_state.setdefault(key, value)
    got = st.selectbox(label, options, index=None, key=key, bind="query-params", required=True, **kwargs)
    got = value if got is None else got
    check_link(key, got, expected or one_of(options))
    return got


def option_control(widget: str, label: str, options: Mapping[str, str], *, key: str, default: str,
                   container=None, aliases: Mapping[str, str] | None = None, **kwargs) -> str:
    """A radio, segmented control, pills or selectbox whose link value is the option's code, shown by its label.

    ``options`` maps each code (what the page reads and the link holds: ``?walk_input=lesson``) to the
    label the learner reads, already in the run's language. A widget bound with ``bind="query-params"``
    would write the *shown label* into the link, so a link would change with the language; this one is
    synced by hand instead, as Streamlit's binding does it: the link's value seeds the control on its
    first draw (a value that is not a code leaves the link, and :func:`check_link` warns), and the link
    holds the code on every run, except the default, which is left out.

    Args:
        widget: ``"radio"``, ``"segmented_control"``, ``"pills"`` or ``"selectbox"``.
        label: the widget's label (in the run's language).
        options: code -> label, in display order. default: a code.
        container: where to draw (``st.sidebar``, a column); default the page.
        aliases: link values an earlier version of the app wrote -> their code (old links keep opening).
        kwargs: passed on (``help``, ``captions``, ``horizontal``, ``disabled``, ``on_change``, …).

    Returns:
        the chosen code (``default`` when nothing usable is chosen).
    """
    if default not in options:
        raise ValueError(f"default must be one of the codes {list(options)}, got {default!r}")
    _snapshot_link()
    ss = st.session_state
    if key not in ss:  # its first draw in this session (or on this page again): from the link, else the default
        raw = [(aliases or {}).get(v, v) for v in st.query_params.get_all(key)]
        usable = len(raw) == 1 and raw[0] in options
        ss[key] = raw[0] if usable else default
        if raw and not usable:
            del st.query_params[key]
        if usable and aliases and ss.get(_LINK_KEY, {}).get(key):
            ss[_LINK_KEY][key] = raw  # an old value that still means a code: no warning
    extra = {"required": True} if widget in ("segmented_control", "pills") else {}
    value = getattr(container or st, widget)(label, list(options), key=key, format_func=options.__getitem__,
                                             **extra, **kwargs)
    value = value if value in options else default
    check_link(key, value, one_of(options))
    if value == default:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != value:
        st.query_params[key] = value
    return value


def one_of(options) -> str:
    """``one of a, b, c``: what a link value for a choice must be (the warning's description), in the run's language."""
    return _("one of {options}").format(options=", ".join(map(str, options)))


def _note_slot(key: str) -> None:
    """An empty place under the sidebar's control ``key`` (nothing shows until :func:`not_used` fills it)."""
    st.session_state.setdefault(_SLOTS_KEY, {})[key] = st.sidebar.empty()


def not_used(notes: dict[str, str]) -> None:
    """Say, under each shared control in ``notes`` (a key of :data:`DEFAULTS` -> why), that this lesson does not use it.

    For a lesson that has its own version of a shared control (the scaling lesson's own ``d_k``)
    or no use for it (the lookup's fixed table): the sidebar shows, right under the control,
    "Not used on this page: …" with what the lesson uses instead and its current value, so
    moving the control and seeing nothing change is never a surprise (issue 18, item 5). The
    notes also go to ``st.session_state["_not_used"]`` (what tests read). Without the
    entrypoint's sidebar (a page run alone) they go to the bottom of the sidebar.
    """
    shared = [*DEFAULTS, "color_scale"]
    unknown = set(notes) - set(shared)
    if unknown:
        raise ValueError(f"not shared controls: {sorted(unknown)}; shared: {', '.join(shared)}")
    slots = st.session_state.get(_SLOTS_KEY, {})
    st.session_state[_NOT_USED_KEY] = dict(notes)
    for key, why in notes.items():
        slot = slots.get(key)
        (st.sidebar if slot is None else slot).caption(_("↳ Not used on this page: {why}").format(why=why))


_LANG_WIDGET = "_lang_choice"  # the language selectbox (its link parameter is written by this module: see below)


def language_control() -> str:
    """The sidebar's language control (entrypoint only, before the navigation): returns and activates the run's
    language (:mod:`explorer.shell.i18n`).

    In the link as ``?lang=en|pt|tr``; without it, the browser's language (``st.context.locale``) picks,
    English otherwise. The selectbox shows each language's own name, and its label names itself in the
    three languages, so a learner finds it whatever the page's language. (A bound selectbox would write
    the shown name into the link, so this one is not bound: the code is written to the link on every run
    once chosen or linked.) Changing it keeps every other control: each has its own key and link parameter.
    """
    _snapshot_link()
    ss = st.session_state
    codes = list(i18n.LANGUAGES)
    if _LANG_WIDGET not in ss:  # the session's first run: the link's language, else the browser's
        raw = st.query_params.get_all(i18n.KEY)
        linked = raw[0] if len(raw) == 1 and raw[0] in i18n.LANGUAGES else None
        ss[_LANG_WIDGET] = linked or i18n.from_locale(getattr(st.context, "locale", None))
        ss["_lang_in_link"] = linked is not None
        if raw and linked is None:  # a value the app cannot use leaves the link (check_link below says so)
            del st.query_params[i18n.KEY]
    lang = st.sidebar.selectbox("🌐 Language · Idioma · Dil", codes, key=_LANG_WIDGET,
                                format_func=i18n.LANGUAGES.__getitem__, on_change=_language_chosen)
    i18n.activate(lang)
    check_link(i18n.KEY, lang, one_of(codes))
    if ss.get("_lang_in_link") and st.query_params.get(i18n.KEY) != lang:
        st.query_params[i18n.KEY] = lang
    return lang


def fragment(func: Callable) -> Callable:
    """``st.fragment``, in the language of the run that drew the part: use it for every fragment of the app.

    A fragment's rerun runs ``func`` alone, in a context where the language the entrypoint chose
    (:func:`explorer.shell.i18n.activate`, a context variable) is back at its default, English: after a click, the
    real model's head grid and two sentences' shuffle part were drawn in English on a Portuguese or Turkish page
    (issue 30). The full run's language goes to the fragment as its first argument (Streamlit keeps a fragment's
    arguments for its reruns) and is activated before ``func`` runs. The fragment keeps ``func``'s name, so its id
    (module and qualified name) is the one ``st.fragment`` gives ``func``.
    """
    @st.fragment
    @functools.wraps(func)
    def in_language(lang: str, *args, **kwargs):
        i18n.activate(lang)
        return func(*args, **kwargs)

    @functools.wraps(func)
    def call(*args, **kwargs):
        return in_language(i18n.current(), *args, **kwargs)
    return call


def _language_chosen() -> None:
    """The learner chose a language: from now on it is in the link."""
    st.session_state["_lang_in_link"] = True


def sidebar_controls(page: str | None = None) -> Shared:
    """Draw the shared controls in the sidebar (entrypoint only) and return their values.

    ``page``: the URL path of the page this run shows (``st.navigation``'s page), to know a page change.
    """
    cache.note_activity()  # every run passes here: the idle sweep (explorer.shell.cache) waits for a quiet server
    _snapshot_link()
    _show_kept_values_after_a_page_change(page)
    st.session_state[_SHOWN_KEY] = set()
    st.session_state[_SLOTS_KEY] = {}
    st.session_state[_NOT_USED_KEY] = {}
    # The numbers' link values first: a value a control cannot use is removed from the link (and the run starts
    # again) before any of the sidebar's widgets is seeded from it, so one bad link costs one extra run, not three.
    for key, (lo, hi) in NUMBER_RANGES.items():
        _refuse_unusable_number(key, lo, hi, integer=True, step=1)
    sb = st.sidebar
    sb.header(_("Shared controls"))
    sentence = sb.text_input(
        _("Sentence"), key="sentence", bind="query-params", max_chars=SENTENCE_MAX_CHARS,
        help=_("Split into words and punctuation; at most {n} tokens are used.").format(n=shared_settings.MAX_TOKENS),
        **({} if "sentence" in st.session_state else {"value": DEFAULTS["sentence"]}),
    )
    check_link("sentence", sentence, _("text of at most {n} characters").format(n=SENTENCE_MAX_CHARS))
    twin = SENTENCE_TWINS.get(i18n.current())
    if twin and sentence != twin:
        sb.button(_("↳ Try it in Portuguese: {sentence}").format(sentence=twin) if i18n.current() == "pt"
                  else _("↳ Try it in Turkish: {sentence}").format(sentence=twin),
                  key="sentence_twin", type="tertiary", on_click=st.session_state.__setitem__, args=("sentence", twin),
                  help=_("The lesson's own numbers are for its English sentence; any sentence works."))
    _note_slot("sentence")
    embedding = option_control(
        "radio", _("Embeddings"), {code: _(name) for code, name in EMBEDDING_NAMES.items()}, key="embedding",
        default=DEFAULTS["embedding"], container=sb, captions=[_(c) for c in EMBEDDING_LABELS.values()],
        help=_("auto: per-token for a sentence you type, lesson for the lesson's 'The cat sat on the mat'. "
               "lesson: X = default_rng(seed).normal(0, 1, (n, d_model)), one random row per position "
               "(the lesson's example; a row belongs to its position, not its word). per-token: each distinct "
               "word gets its own fixed vector, so the same word has the same embedding in every sentence."),
    )
    _note_slot("embedding")
    positional = sb.toggle(_("Add sinusoidal positional encoding"), key="positional",
                           **({} if "positional" in st.session_state else {"value": DEFAULTS["positional"]}),
                           bind="query-params", help=_("X + PE with PE[p, 2i] = sin(p / 10000^(2i/d_model)), "
                                                       "PE[p, 2i+1] = cos(…) (Vaswani et al. 2017, §3.5)."))
    check_link("positional", positional, _("true or false"))
    _note_slot("positional")
    seed = number_input(_("Seed"), 0, SEED_MAX, DEFAULTS["seed"], key="seed", container=sb,
                        help=_("Seeds the embeddings and the weight matrices W_q, W_k, W_v. As in the lesson, "
                               "the 'lesson' embeddings and the weights each start their own default_rng(seed), "
                               "so with the same seed W_q repeats the first numbers of X, scaled."))
    _note_slot("seed")
    d_model = number_input(_("d_model (embedding width)"), *D_MODEL_RANGE, DEFAULTS["d_model"], key="d_model",
                           container=sb, help=_("Width of each token's embedding row in X."))
    _note_slot("d_model")
    d_k = slider(_("d_k (query/key width, d_v = d_k)"), *D_K_RANGE, DEFAULTS["d_k"], key="d_k", container=sb,
                 help=_("Width of the queries and keys; the scores are divided by √d_k."))
    _note_slot("d_k")
    option_control(
        "radio", _("Colour scale of attention weights"), {code: _(COLOR_SCALE_NAMES[code]) for code in COLOR_SCALES},
        key="color_scale",
        default=COLOR_SCALE_DEFAULT, container=sb, captions=[_(c) for c in COLOR_SCALES.values()], horizontal=False,
        help=_("fixed compares maps with each other; map and row make near-uniform attention (many tokens) visible. "
               "The colour bar marks the uniform level 1/n (every key weighted equally), an orange outline marks "
               "each row's largest weight, and hovering a cell always shows the true weight."),
    )
    _note_slot("color_scale")
    sb.caption(_("Every control is in the page's link: copy the address bar to share exactly what you see."))
    return Shared(sentence, embedding, bool(positional), int(seed), int(d_model), int(d_k))


def color_scale() -> str:
    """The sidebar's colour scale for attention-weight maps, one of :data:`~explorer.shell.charts.COLOR_SCALES`.

    Pages pass it to their cached sections as an argument (it is part of the sections' cache key) and on to
    :func:`explorer.shell.charts.heatmap` as ``color_scale``.
    """
    value = st.session_state.get("color_scale")
    return value if value in COLOR_SCALES else COLOR_SCALE_DEFAULT


def lesson_settings(purpose: str | None = None) -> Settings:
    """The shared settings for a lesson on the sidebar's sentence, with the app's two friendly notes.

    An empty sentence shows a prompt (ending with ``purpose``, an infinitive clause in the run's language such as
    ``_("to see attention at work")``, the default) and the link's warnings, then stops the page; more than
    ``MAX_TOKENS`` tokens are truncated with a note.
    """
    sh = shared()
    inp = sentence_input(purpose)
    embedding = shared_settings.embedding_mode(sh.embedding, inp.tokens)  # "auto" resolved for this sentence
    return Settings(inp.tokens, int(sh.d_model), int(sh.d_k), int(sh.seed), embedding, bool(sh.positional))


def sentence_input(purpose: str | None = None) -> shared_settings.SentenceInput:
    """The sidebar sentence's tokens, with :func:`lesson_settings`' notes (an empty sentence stops the page)."""
    purpose = purpose or _("to see attention at work")
    inp = shared_settings.sentence_tokens(shared().sentence)
    if not inp.tokens:
        st.info(_("✍️ Type a sentence in the sidebar (for example *The cat sat on the mat*) {purpose}.").format(
            purpose=purpose))
        show_link_warnings()  # st.stop() ends the run before the entrypoint would show them
        st.stop()
    if inp.n_dropped:
        st.info(_("Your sentence has {n} tokens; the first {kept} are used ({dropped} dropped) to keep the pictures "
                  "readable.").format(n=len(inp.tokens) + inp.n_dropped, kept=shared_settings.MAX_TOKENS,
                                      dropped=inp.n_dropped))
    return inp


def shared() -> Shared:
    """The shared controls' current values (for pages; the entrypoint draws the widgets)."""
    ss = st.session_state
    return Shared(**{k: ss.get(k, v) for k, v in DEFAULTS.items()})



def set_value(key: str, value) -> None:
    """Set the value of the widget ``key`` from code (a preset, a clamp), in a callback or before it is drawn.

    The value goes through ``st.session_state``, the way Streamlit supports for a widget bound
    to the link (the link follows). Streamlit warns (with a stack trace) when a widget that
    has a default also gets its value through Session State, so the widget, drawn with
    :func:`number_input` or :func:`slider`, leaves its default out on this one run; on later
    runs it has its default again (which decides when the link omits the value).
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


def keep_in_range(key: str, lo: int, hi: int) -> None:
    """Clamp a widget's stored value into ``[lo, hi]`` before it is drawn (a shorter sentence, fewer heads…).

    Through :func:`set_value`: draw the widget with :func:`slider` or :func:`number_input`, which
    leave their default out on that run, or without a default.
    """
    value = st.session_state.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and not lo <= value <= hi:
        set_value(key, min(max(value, lo), hi))


def token_picker(label: str, labels: list[str], key: str, *, default: int = 0, link: bool = True,
                 disabled: bool = False, help: str | None = None) -> int:
    """A select box of the sentence's tokens; returns the chosen position ``0 … len(labels) - 1``.

    The options are the labels themselves (:func:`explorer.shell.settings.token_label`,
    ``"cat (1)"``; unique, as they carry the position), so the box and the link always show a
    label of the current sentence. When the sentence changes, the chosen position is kept where
    it still exists, else the last token is chosen. With ``link`` the choice is in the page's
    link, as its label, and a link value that is not one of the labels is warned about
    (:func:`check_link`).
    """
    n = len(labels)
    last = f"_{key}_position"  # the position chosen on the last run (this helper's own key)
    current = st.session_state.get(key)
    if current is not None and current not in labels:  # a new sentence (or an invalid value)
        st.session_state[key] = labels[min(max(st.session_state.get(last, default), 0), n - 1)]
    # The default only matters on the first run; once the key holds a value pass index 0, or Streamlit
    # logs that a widget with a default also had its value set through Session State.
    index = 0 if key in st.session_state else min(max(default, 0), n - 1)
    choice = st.selectbox(label, labels, index=index, key=key, bind="query-params" if link else None,
                          disabled=disabled, help=help)
    pos = labels.index(choice) if choice in labels else 0
    st.session_state[last] = pos
    if link:
        check_link(key, labels[pos], _("one of the sentence's tokens, as 'token (position)'"))
    return pos


# Cached computations: bounded caches, pure functions underneath.
@cached(max_entries=32)  # up to 0.6 MiB an entry (64 tokens, d_model 512, d_k 128)
def sentence_steps(settings: Settings, is_causal: bool = False):
    """:meth:`Settings.steps`, cached per process (shared by every lesson on the sentence)."""
    return settings.steps(is_causal=is_causal)
