"""Controls declared as data: a lesson lists its controls once; the shell draws, checks and links them.

A lesson's package declares ``CONTROLS = controls.declare(__name__, name=Kind(key=…, label=N_(…), …), …)``; its
page draws each control where it sits with :func:`draw`, which returns the value; other lessons link to it with
:func:`link` (how to: ``docs/lessons.md``). A declaration says everything about a control but where it sits.

The one way a control reaches the link is :meth:`Control.draw`: the link's value goes through the control's parser
(:meth:`Control.parse`), a value it cannot use is removed or corrected before the widget is seeded
(:mod:`~explorer.shell.controls.link_values`), the widget is bound to the link (or, :attr:`Control.by_hand`, the shell
writes its value there after each run), and a warning names the value.
:meth:`Control.outcome` says, without Streamlit, what the control opens at for any link value and whether it warns
(``tests/shell/test_declare.py``; ``tests/lessons/test_contract.py`` shows it on the page).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, ClassVar, NamedTuple
from urllib.parse import quote

import streamlit as st

from explorer.shell import i18n
from explorer.shell.controls.link_values import (
    _LINK_KEY,
    _canonical,
    _default_unless_set,
    _snapshot_link,
    check_link,
    correct_link,
    hold_in_range,
    kept_by_hand,
    link_number,
    link_value,
    one_of,
    refuse_unusable,
    write_link,
)
from explorer.shell.settings import LESSON_TOKENS, token_labels

_, _n = i18n.translator(__name__)

Ctx = Mapping[str, Any]
"""The run's context a control is drawn in: the page's numbers its range, options or messages depend on."""
_DRAWN_KEY = "_controls_drawn"  # {key: ctx} of the controls drawn on this run (what the contract test reads)
_NOTICE_KEY = "_controls_notice"  # {key: (old value, new value, ctx)}: a value moved because its options changed


class Outcome(NamedTuple):
    """What a control does with one link value: the ``value`` it opens at, and whether it ``warns``."""

    value: Any
    warns: bool


def _resolve(value, ctx: Ctx):
    """A declared value: itself, or a function of the context called with it."""
    return value(ctx) if callable(value) else value


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _default_kw(key: str, default) -> dict:
    """``{"value": default}`` for a widget, except on the run after code set its value (:func:`set_value`).

    Always the default, never "none once the key has state": a run started again after a widget was drawn (a link
    value refused further down the page) showed the widget's proto default (an empty sentence box) otherwise.
    """
    return {} if _default_unless_set(key, True, False) is False else {"value": default}


def _number_text(x) -> str:
    """A range end as a warning writes it: ``5``, ``-5``, ``0.01`` (``:g`` for non-integers)."""
    return str(x) if isinstance(x, numbers.Integral) else f"{x:g}"


@dataclass(frozen=True, kw_only=True)
class Control:
    """What every declared control has.

    Attributes:
        key: the link parameter and the widget's key (page-prefixed: ``mh_causal``).
        label, help: messages (``N_``) translated when drawn in :attr:`domain` and formatted with the context;
            or functions of the context returning the text.
        expected: the warning's description of a valid link value (a message formatted like ``help``, with the
            kind's own values such as ``{lo}``, ``{hi}``, ``{valid}``); ``None`` for the kind's own description.
        example: a context the control can be drawn in (the page's at its defaults); the tests use it.
        domain: the catalogue domain of the messages (set by :func:`declare` from the lesson's module).
    """

    key: str
    label: str | Callable[[Ctx], str]
    help: str | Callable[[Ctx], str] | None = None
    expected: str | Callable[[Ctx], str] | None = None
    example: Mapping[str, Any] = field(default_factory=dict)
    domain: str = i18n.SHELL_DOMAIN
    default: Any = None

    linked: ClassVar[bool] = True  # in the page's link
    by_hand: ClassVar[bool] = False  # synced to the link by the shell (write_link), not bound by Streamlit

    def say(self, message, ctx: Ctx, **values) -> str | None:
        """A declared message in the run's language, formatted with ``ctx`` and ``values`` (``None`` stays ``None``).

        Raises:
            KeyError: the message names a placeholder neither ``ctx`` nor ``values`` holds.
        """
        if message is None:
            return None
        if callable(message):
            return message(ctx)
        text = self.word(message)
        return text.format(**{**ctx, **values}) if ("{" in text) else text

    def word(self, message: str) -> str:
        """A declared option name or caption in the run's language (translated, not formatted)."""
        return i18n.catalog(i18n.current(), self.domain).gettext(message)

    def default_value(self, ctx: Ctx):
        """The value the control opens at without a usable link value."""
        return _resolve(self.default, ctx)

    def parse(self, raw: str, ctx: Ctx):
        """The value the link text ``raw`` stands for, or ``None`` when the control cannot use it as written."""
        raise NotImplementedError

    def usable(self, ctx: Ctx) -> Callable[[str], bool]:
        """Whether a link text is one the control can use as written (its parser, as a test)."""
        return lambda raw: self.parse(raw, ctx) is not None

    def fallback(self, raw: str, ctx: Ctx):
        """What a link value the control cannot use gets: its default (a :class:`Choice` may declare nearest)."""
        return self.default_value(ctx)

    def outcome(self, raw: str | None, ctx: Ctx) -> Outcome:
        """The value the control opens at for the link value ``raw`` (``None``: no value), and whether it warns."""
        if raw is None:
            return Outcome(self.default_value(ctx), False)
        value = self.parse(raw, ctx)
        if value is not None:
            return Outcome(value, False)
        return Outcome(self.fallback(raw, ctx), True)

    def text(self, value, ctx: Ctx) -> str:
        """``value`` as the link writes it."""
        return _canonical(value)

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        """``value`` (given by code, for :func:`link`) as the link writes it, made valid (the nearest valid value)
        where the kind knows how, else ``None`` (left out of the link: the page opens at its default)."""
        raise NotImplementedError

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        """Draw the widget bound to the link (see :func:`draw`); returns its value."""
        raise NotImplementedError


# --- numbers ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Number(Control):
    """A number in ``[lo, hi]`` (each a value or a function of the context), on the grid ``lo + k * step``.

    Whole numbers when ``lo``, ``hi`` and ``default`` are ``int``. A link value is taken only as the app writes it
    (:func:`~explorer.shell.controls.link_values.link_number`); anything else opens at the default. When the range is a
    function of the context (a model's layers, a sentence's tokens), the value is kept where it fits the run's range
    and moved to the nearest valid value where it does not (another model's layer: the new model's last), and the
    shell syncs it to the link by hand (:attr:`by_hand`, :func:`~explorer.shell.controls.link_values.hold_in_range`):
    Streamlit draws a bound widget whose range changed as a new one and left the value out of the link (issue 50).
    """

    lo: Any
    hi: Any
    default: Any
    step: Any = None
    format: str | None = None

    widget: ClassVar[str] = "slider"

    def bounds(self, ctx: Ctx) -> tuple[Any, Any, Any, bool]:
        """``(lo, hi, default, integer)`` in this context."""
        lo, hi, default = (_resolve(v, ctx) for v in (self.lo, self.hi, self.default))
        return lo, hi, default, all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi, default))

    def step_at(self, ctx: Ctx):
        """The step in this context (a value or a function of the context; ``None``: the widget's own)."""
        return _resolve(self.step, ctx)

    def parse(self, raw: str, ctx: Ctx):
        lo, hi, _default, integer = self.bounds(ctx)
        return link_number(raw, lo, hi, integer=integer, step=self.step_at(ctx))

    def nearest(self, x: float, ctx: Ctx):
        """The valid value nearest ``x``: clamped into the range, on the step's grid."""
        lo, hi, _default, integer = self.bounds(ctx)
        x = min(max(x, lo), hi)
        step = self.step_at(ctx)
        if step:
            k = round((x - lo) / step)
            x = min(lo + k * step, hi)
        return int(round(x)) if integer else round(float(x), 10) + 0.0  # + 0.0: no -0.0

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        if any(callable(v) for v in (self.lo, self.hi, self.step)) and ctx is None:
            raise ValueError(f"{self.key}'s range depends on the run's context: give link(..., ctx=…)")
        if not _is_number(value) or not math.isfinite(value):
            return None
        return _canonical(self.nearest(value, ctx or {}))

    @property
    def by_hand(self) -> bool:  # type: ignore[override]
        """A number whose range depends on the context (a model's layers) is synced to the link by hand."""
        return any(callable(v) for v in (self.lo, self.hi, self.step))

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        lo, hi, default, integer = self.bounds(ctx)
        step = self.step_at(ctx)
        kw = {"help": self.say(self.help, ctx), **({"format": self.format} if self.format else {}), **kwargs}
        label = self.say(self.label, ctx)
        # A number box: whole numbers, and "min" (its "no default") on the run after set_value.
        no_default, widget_step = ("min", 1) if self.widget == "number_input" else (None, step)
        widget = getattr(container, self.widget)
        if self.by_hand:  # its value held in the range before it is drawn, the link written after
            hold_in_range(self.key, (lo, hi, step), lambda raw: self.parse(raw, ctx), lambda x: self.nearest(x, ctx),
                          default)
            got = widget(label, lo, hi, no_default, widget_step, key=self.key, **kw)
        else:
            refuse_unusable({self.key: self.usable(ctx)})
            got = widget(label, lo, hi, _default_unless_set(self.key, default, no_default), widget_step, key=self.key,
                         bind="query-params", **kw)
        ends = {"lo": _number_text(lo), "hi": _number_text(hi)}
        expected = self.say(self.expected, ctx, **ends, low=ends["lo"], high=ends["hi"],
                            step=_number_text(step) if step else "1") or (
            _("a whole number from {lo} to {hi}") if integer else _("a number from {lo} to {hi}")).format(**ends)
        check_link(self.key, got, expected, inline=inline)
        got = int(got) if integer else float(got)
        if self.by_hand:
            kept_by_hand(self.key, got)
            write_link(self.key, None if got == default else _canonical(got))
        return got


class Slider(Number):
    """A :class:`Number` drawn as a slider."""


class NumberInput(Number):
    """A whole :class:`Number` drawn as a number box (``lo``, ``hi`` and ``default`` are ``int``)."""

    widget: ClassVar[str] = "number_input"


# --- switches, options, choices, text ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Toggle(Control):
    """On or off; the link holds ``true`` or ``false`` (any case)."""

    default: bool = False

    def parse(self, raw: str, ctx: Ctx):
        return {"true": True, "false": False}.get(raw.lower())

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        return _canonical(value) if isinstance(value, bool) else None

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        refuse_unusable({self.key: self.usable(ctx)})
        kw = {"help": self.say(self.help, ctx), **kwargs, **_default_kw(self.key, self.default_value(ctx))}
        got = container.toggle(self.say(self.label, ctx), key=self.key, bind="query-params", **kw)
        check_link(self.key, got, self.say(self.expected, ctx) or _("true or false"), inline=inline)
        return bool(got)


@dataclass(frozen=True, kw_only=True)
class Expander(Toggle):
    """A part of the page that opens and closes, in the link as ``true`` (open) or ``false`` (closed).

    :func:`draw` returns the expander itself (``st.expander``, rerunning the page when it opens or closes): draw its
    contents ``with`` it, and only while ``expander.open`` when they are costly.
    """

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        kw = {**({"expanded": True} if self.default_value(ctx) else {}), **kwargs}
        got = container.expander(self.say(self.label, ctx), key=self.key, on_change="rerun", bind="query-params",
                                 **kw)
        # Streamlit reads any other link value as closed: check_link says so.
        check_link(self.key, bool(got.open), self.say(self.expected, ctx) or _("true or false"), inline=inline)
        return got


@dataclass(frozen=True, kw_only=True)
class Options(Control):
    """One of a few options named by codes: the link holds the code (``?walk_input=lesson``) in every language.

    ``options``: code -> its name (a message, translated when drawn), in display order, or a function of the
    context returning code -> the text shown (already in the run's language). ``captions``: one message per
    option (or a function of the context returning the texts). ``aliases``: link values an earlier version of the
    app wrote -> their code (old links keep opening, without a warning). ``widget``: ``"radio"``,
    ``"segmented_control"``, ``"pills"``, ``"selectbox"`` or ``"select_slider"``.
    """

    options: Mapping[str, str] | Callable[[Ctx], Mapping[str, str]]
    default: Any
    widget: str = "radio"
    captions: Sequence[str] | Callable[[Ctx], Sequence[str]] | None = None
    aliases: Mapping[str, str] | None = None
    horizontal: bool | None = None

    by_hand: ClassVar[bool] = True

    def codes(self, ctx: Ctx) -> list[str]:
        return list(_resolve(self.options, ctx))

    def parse(self, raw: str, ctx: Ctx):
        code = (self.aliases or {}).get(raw, raw)
        return code if code in self.codes(ctx) else None

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        return value if value in self.codes(ctx or {}) else None

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        # Bound with bind="query-params", the widget would write the *shown* name into the link (a link would change
        # with the language), so it is synced by hand, as Streamlit's binding does it: the link's value seeds the
        # control on its first draw (a value that is not a code leaves the link, and check_link warns), and the link
        # holds the code on every run, except the default, which is left out.
        ss, key, default = st.session_state, self.key, self.default_value(ctx)
        shown = (dict(self.options(ctx)) if callable(self.options)
                 else {code: self.word(name) for code, name in self.options.items()})
        if default not in shown:
            raise ValueError(f"default must be one of the codes {list(shown)}, got {default!r}")
        _snapshot_link()
        if key not in ss:  # its first draw in this session (or on this page again): from the link, else the default
            raw = st.query_params.get_all(key)
            code = self.parse(raw[0], ctx) if len(raw) == 1 else None
            ss[key] = default if code is None else code
            if raw and code is None:
                del st.query_params[key]
            if code is not None and code != raw[0] and ss.get(_LINK_KEY, {}).get(key):
                ss[_LINK_KEY][key] = [code]  # an old value (an alias) that still means a code: no warning
        kw = {"help": self.say(self.help, ctx),
              **({"required": True} if self.widget in ("segmented_control", "pills") else {}),
              **({"horizontal": self.horizontal} if self.horizontal is not None else {})}
        if self.captions is not None:
            kw["captions"] = self.captions(ctx) if callable(self.captions) else [self.word(c) for c in self.captions]
        value = getattr(container, self.widget)(self.say(self.label, ctx), list(shown), key=key,
                                                format_func=shown.__getitem__, **{**kw, **kwargs})
        value = value if value in shown else default
        check_link(key, value, self.say(self.expected, ctx) or one_of(shown), inline=inline)
        write_link(key, None if value == default else value)
        return value


@dataclass(frozen=True, kw_only=True)
class Choice(Control):
    """One of a list of values (each a value or a function of the context); the link holds the option as shown.

    ``shown_as(value, ctx)`` is an option's text, on the widget and in the link (default ``str``); with
    ``translated`` it is in the run's language, a link in another language names the same option and is
    rewritten in this run's language (no warning). ``bad``: what a link value that is no option gets,
    ``"default"`` or ``"nearest"`` (a whole number given: the nearest option, ties to the smaller; anything else:
    the default). When the options are a function of the context and the value kept from an earlier run is no
    longer one, it moves to the nearest option (numbers; else the default), with ``notice`` (a message formatted
    with the context and ``current``, ``nearest``, ``valid``) shown under the control while it stands.
    ``log``: "nearest" on a log scale (for :func:`link`). ``widget``: ``"selectbox"`` (no default of its own:
    its value may be moved without Streamlit's warning), ``"select_slider"`` or ``"radio"``.
    """

    options: Sequence | Callable[[Ctx], Sequence]
    default: Any
    widget: str = "selectbox"
    shown_as: Callable[[Any, Ctx], str] | None = None
    translated: bool = False
    bad: str = "default"
    log: bool = False
    notice: str | None = None
    notice_icon: str = "⚠️"
    horizontal: bool | None = None
    captions: Callable[[Ctx], Sequence[str]] | None = None

    def __post_init__(self):
        if self.bad not in ("default", "nearest"):
            raise ValueError(f"bad must be 'default' or 'nearest', got {self.bad!r}")
        if self.widget not in ("selectbox", "select_slider", "radio"):
            raise ValueError(f"widget must be selectbox, select_slider or radio, got {self.widget!r}")

    def values(self, ctx: Ctx) -> list:
        return list(_resolve(self.options, ctx))

    def text(self, value, ctx: Ctx) -> str:
        return str(value) if self.shown_as is None else self.shown_as(value, ctx)

    def parse(self, raw: str, ctx: Ctx):
        for lang in (i18n.LANGUAGES if self.translated else (i18n.current(),)):
            with i18n.using(lang):
                for value in self.values(ctx):
                    if self.text(value, ctx) == raw:
                        return value
        return None

    def nearest(self, x, ctx: Ctx):
        """The option nearest the number ``x`` (on a log scale with ``log``); ties go to the smaller."""
        options = self.values(ctx)
        if self.log:
            smallest = min(o for o in options if o > 0)
            x = max(x, smallest)
            return min(options, key=lambda o: (abs(math.log2(o) - math.log2(x)), o))
        return min(options, key=lambda o: (abs(o - x), o))

    def _numeric(self, ctx: Ctx) -> bool:
        return all(_is_number(o) for o in self.values(ctx))

    def fallback(self, raw: str, ctx: Ctx):
        if self.bad == "nearest" and self._numeric(ctx):
            integer = all(isinstance(o, numbers.Integral) for o in self.values(ctx))
            asked = link_number(raw, -(2**63), 2**63, integer=integer)
            if asked is not None:
                return self.nearest(asked, ctx)
        return self.default_value(ctx)

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        if callable(self.options) and ctx is None:
            raise ValueError(f"{self.key}'s options depend on the run's context: give link(..., ctx=…)")
        ctx = ctx or {}
        if value in self.values(ctx) and not isinstance(value, bool):
            return self.text(value, ctx)
        if _is_number(value) and math.isfinite(value) and self._numeric(ctx):
            return self.text(self.nearest(value, ctx), ctx)
        return None

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        ss, key = st.session_state, self.key
        options, default = self.values(ctx), self.default_value(ctx)
        run_lang = i18n.current()  # Streamlit may call format_func after the run (to write the link)

        def shown(value) -> str:
            with i18n.using(run_lang):
                return self.text(value, ctx)

        given = link_value(key)  # the session's link value, until check_link below judges it
        if given is not None:
            value = self.parse(given, ctx)
            if value is None:  # removed (the default) or the nearest option written, before the widget reads it
                correct_link(key, str(shown(self.fallback(given, ctx))) if self.bad == "nearest" else None)
            elif given != shown(value):  # another language's text for the same option
                correct_link(key, shown(value))
        elif ss.get(key) is not None and ss[key] not in options:  # the options changed under the kept value
            old = ss[key]
            ss[key] = self.nearest(old, ctx) if _is_number(old) and self._numeric(ctx) else default
            if self.notice:
                ss.setdefault(_NOTICE_KEY, {})[key] = (old, ss[key], dict(ctx))
        kw = {"help": self.say(self.help, ctx), "format_func": shown, **kwargs}
        if self.horizontal is not None:
            kw["horizontal"] = self.horizontal
        if self.captions is not None:
            kw["captions"] = self.captions(ctx)
        if self.widget == "selectbox":
            # No default of its own: the value stored on the session's first run instead (a link value that is an
            # option still wins over it), so the lines above may move it without Streamlit's Session State warning.
            ss.setdefault(key, default)
        opens_at = {"selectbox": {"index": None, "required": True}, "select_slider": {"value": default}}.get(
            self.widget) or {"index": options.index(default)}  # a radio's
        got = getattr(container, self.widget)(self.say(self.label, ctx), options, key=key, bind="query-params",
                                              **opens_at, **kw)
        got = default if got is None else got  # a selectbox's None
        texts = [shown(o) for o in options]
        quoted = [f"'{t}'" for t in texts] if self.translated else texts  # words, not numbers: quoted
        expected = self.say(self.expected, ctx, valid=", ".join(quoted), lo=texts[0], hi=texts[-1]) or one_of(quoted)
        check_link(key, given if given is not None and self.parse(given, ctx) == got else shown(got), expected,
                   inline=inline)
        notice = ss.get(_NOTICE_KEY, {}).get(key)
        if notice and notice[1] == got and notice[2] == dict(ctx):
            container.warning(self.say(self.notice, ctx, current=notice[0], nearest=got, valid=", ".join(texts)),
                              icon=self.notice_icon)
        else:
            ss.get(_NOTICE_KEY, {}).pop(key, None)
        return got


@dataclass(frozen=True, kw_only=True)
class Text(Control):
    """A text box (``widget="text_input"``) or area (``"text_area"``) of at most ``max_chars`` characters.

    ``valid(text, ctx)``: a further test a link value must pass (a box of token ids); a value that fails it, or
    is too long, opens at the default with a warning. ``default`` may be a function of the context.
    """

    default: Any = ""
    max_chars: int
    widget: str = "text_input"
    valid: Callable[[str, Ctx], bool] | None = None
    placeholder: str | None = None
    height: int | None = None

    def parse(self, raw: str, ctx: Ctx):
        ok = len(raw) <= self.max_chars and (self.valid is None or self.valid(raw, ctx))
        return raw if ok else None

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        return value if isinstance(value, str) and value and self.parse(value, ctx or {}) is not None else None

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        refuse_unusable({self.key: self.usable(ctx)})  # a link can carry more
        kw = {"help": self.say(self.help, ctx),
              **({"placeholder": self.say(self.placeholder, ctx)} if self.placeholder else {}),
              **({"height": self.height} if self.height else {}), **kwargs,
              **_default_kw(self.key, self.default_value(ctx))}
        got = getattr(container, self.widget)(self.say(self.label, ctx), key=self.key, bind="query-params",
                                              max_chars=self.max_chars, **kw)
        check_link(self.key, got, self.say(self.expected, ctx)
                   or _("text of at most {n} characters").format(n=self.max_chars), inline=inline)
        return got


@dataclass(frozen=True, kw_only=True)
class Heads(Control):
    """Several heads of a model, by their codes (``options(ctx)``: ``["L0H0", …]``), drawn as a multiselect; the link
    holds them as one text, joined by commas (``?ca_heads=L18H6,L17H4``), in every language.

    A link value is taken when it is empty (no heads) or every code in it is an option, none twice, at most
    ``max_selections``; anything else opens at ``default`` (codes, or a function of the context) with a warning. The
    widget's value (its key is :attr:`key`) is the list of codes; it is written to the link by the shell on every run
    (a multiselect bound by Streamlit would repeat the parameter, one per head).
    """

    options: Callable[[Ctx], Sequence[str]]
    default: Any = ()
    max_selections: int

    by_hand: ClassVar[bool] = True

    def default_value(self, ctx: Ctx):
        return list(_resolve(self.default, ctx))

    def parse(self, raw: str, ctx: Ctx):
        if raw == "":
            return []
        codes, valid = raw.split(","), set(self.options(ctx))
        ok = all(c in valid for c in codes) and len(set(codes)) == len(codes) and len(codes) <= self.max_selections
        return codes if ok else None

    def text(self, value, ctx: Ctx) -> str:
        return ",".join(value)

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        if ctx is None:
            raise ValueError(f"{self.key}'s options are the model's heads: give link(..., ctx=…)")
        if not isinstance(value, str) and not all(isinstance(code, str) for code in value):
            return None
        text = value if isinstance(value, str) else ",".join(value)
        return text if text and self.parse(text, ctx) is not None else None

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        ss, key = st.session_state, self.key
        _snapshot_link()
        if key not in ss:  # its first draw in this session: from the link, else the default
            raw = st.query_params.get_all(key)
            codes = self.parse(raw[0], ctx) if len(raw) == 1 else None
            ss[key] = self.default_value(ctx) if codes is None else codes
        kw = {"help": self.say(self.help, ctx), **kwargs}
        got = container.multiselect(self.say(self.label, ctx), list(self.options(ctx)), key=key,
                                    max_selections=self.max_selections, **kw)
        text = self.text(got, ctx)
        check_link(key, text, self.say(self.expected, ctx, n=self.max_selections) or one_of(["L0H0", "…"]),
                   inline=inline)
        write_link(key, text or None)
        return list(got)


@dataclass(frozen=True, kw_only=True)
class TokenPicker(Control):
    """One of the sentence's tokens, by its label ``"cat (1)"`` (the context's ``labels``); returns its position.

    ``default``: the position chosen at first (clamped to the sentence). ``link=False``: not in the link (a
    question's word, chosen after answering).
    """

    default: int = 0
    link: bool = True
    example: Mapping[str, Any] = field(default_factory=lambda: {"labels": tuple(token_labels(LESSON_TOKENS))})

    @property
    def linked(self) -> bool:  # type: ignore[override]
        return self.link

    def default_value(self, ctx: Ctx):
        labels = ctx["labels"]
        return labels[min(max(self.default, 0), len(labels) - 1)]

    def parse(self, raw: str, ctx: Ctx):
        return raw if raw in ctx["labels"] else None

    def link_text(self, value, ctx: Ctx | None) -> str | None:
        if ctx is None:
            raise ValueError(f"{self.key}'s options are the sentence's tokens: give link(..., ctx={{'labels': …}})")
        return value if self.link and value in ctx["labels"] else None

    def draw(self, ctx: Ctx, container, inline: bool, kwargs: dict):
        # The options are the labels themselves (explorer.shell.settings.token_label: unique, as they carry the
        # position), so the box and the link always show a label of the current sentence. When the sentence
        # changes, the chosen position is kept where it still exists, else the last token is chosen.
        ss, key, labels = st.session_state, self.key, list(ctx["labels"])
        n = len(labels)
        last = f"_{key}_position"  # the position chosen on the last run (this control's own key)
        if self.link:
            refuse_unusable({key: labels.__contains__})
        current = ss.get(key)
        if current is not None and current not in labels:  # a new sentence
            ss[key] = labels[min(max(ss.get(last, self.default), 0), n - 1)]
        # The default only matters on the first run; once the key holds a value pass index 0, or Streamlit
        # logs that a widget with a default also had its value set through Session State.
        index = 0 if key in ss else min(max(self.default, 0), n - 1)
        kw = {"help": self.say(self.help, ctx), **kwargs}
        got = container.selectbox(self.say(self.label, ctx), labels, index=index, key=key,
                                  bind="query-params" if self.link else None, **kw)
        pos = labels.index(got) if got in labels else 0
        ss[last] = pos
        if self.link:
            check_link(key, labels[pos], _("one of the sentence's tokens, as 'token (position)'"), inline=inline)
        return pos


# --- the manifest, drawing and links --------------------------------------------------------------------------


def declare(module: str, **controls: Control) -> dict[str, Control]:
    """A lesson's ``CONTROLS``: ``name -> control``, each given the catalogue domain of ``module`` (the lesson
    package's ``__name__``), in page order.

    Raises:
        ValueError: two controls share a link key.
    """
    keys = [c.key for c in controls.values()]
    if len(set(keys)) != len(keys):
        raise ValueError(f"link keys must differ, got {keys}")
    domain = i18n.domain_of(module)
    return {name: replace(control, domain=domain) for name, control in controls.items()}


def draw(control: Control, ctx: Ctx | None = None, *, container=None, inline_warning: bool = True, **kwargs):
    """Draw ``control`` from its declaration where the page is (or in ``container``) and return its value.

    ``ctx``: the run's context (what the declaration's functions and messages read: ``{"d_model": 8}``, a token
    picker's ``{"labels": …}``). ``inline_warning=False``: a bad link value is warned about on top of the page,
    not under the control (a control inside an expander that may be closed). ``kwargs`` go to the widget for this
    run (``disabled``, ``on_change``; ``help`` replaces the declared help).

    Returns:
        the control's value: a number, a bool, an option's code (:class:`Options`), an option
        (:class:`Choice`), a text, or a token's position (:class:`TokenPicker`).
    """
    ctx = dict(ctx or {})
    st.session_state.setdefault(_DRAWN_KEY, {})[control.key] = ctx
    return control.draw(ctx, container or st, inline_warning, kwargs)


def value(control: Control, ctx: Ctx | None = None):
    """The value ``control`` has on this run before it is drawn (for a part drawn above it: a grid that outlines the
    heads a multiselect further down holds): its widget's, else what the session's link gives it (its
    :meth:`Control.outcome`), else its default. :func:`draw` then draws it at that value."""
    ss, ctx = st.session_state, dict(ctx or {})
    if control.key in ss:
        return ss[control.key]
    return control.outcome(link_value(control.key), ctx).value


def link(lesson: ModuleType, ctx: Ctx | None = None, **values) -> str:
    """A link to ``lesson`` (its package: ``explorer.lessons.scaling``) with its controls preset from its
    declarations: ``link(scaling, d_k=100, n_keys=40)`` -> ``./scaling?scale_d_k=128&scale_n_keys=32``.

    ``values`` are the lesson's ``CONTROLS`` names; each is written as its control's link writes it, made valid
    (a number clamped into its range and onto its step, the nearest of numeric options), or left out when it
    cannot be (an unknown code): the page then opens that control at its default. ``None`` leaves a control out.
    Texts are percent-encoded, so nothing of them can be read as Markdown. ``ctx``: the context for controls whose
    range or options depend on it. The link keeps the run's language (:func:`explorer.shell.i18n.with_lang`).

    Raises:
        ValueError: a name ``lesson`` does not declare, or a control that needs ``ctx`` without it.
    """
    from explorer.lessons import lesson as lesson_entry  # the navigation's table (no Streamlit)

    declared: Mapping[str, Control] = getattr(lesson, "CONTROLS", {})
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise ValueError(f"{lesson.__name__} declares no control {unknown}; it declares {sorted(declared)}")
    params = [f"{control.key}={quote(text, safe='')}" for name, control in declared.items()
              if values.get(name) is not None and (text := control.link_text(values[name], ctx)) is not None]
    path = f"./{lesson_entry(lesson.__name__.rsplit('.', 1)[-1]).url_path}"
    return i18n.with_lang(path + (f"?{'&'.join(params)}" if params else ""))
