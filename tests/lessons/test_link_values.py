"""Every link-bound control of every lesson takes any link value: odd ones warn and open at the default.

The controls are discovered, not listed: each lesson of ``explorer.lessons.LESSONS`` is run
(AppTest, the whole app) and every widget bound to the link (its proto has a
``query_param_key``) is collected, in the sidebar and on the page; :data:`REVEAL` adds
states that draw a lesson's conditional controls (the head window appears beyond 16 heads).
Each control then gets a set of odd link values: non-finite, huge, negative zero, exponent,
hex, padded, empty, ``5.0``, an Arabic-Indic digit, ``1_000``. The spec the page must meet,
written here independently of the app's code:

- no exception element, no ``nan`` on screen;
- a value the control cannot use is named in a warning and the control shows its default;
  a value it can use is shown exactly, without a warning;
- a number is usable only as the app writes it (ASCII digits, an optional ``-``, for a
  non-integer control a fraction; no leading zeros, ``-0``, exponent or padding), in range
  and on the control's step; an option only as its label; a switch only as ``true``/``false``
  (any case); a text box takes any text (within its length), except a box of token ids (:data:`ID_BOXES`),
  which takes only ids as the app writes them: ASCII digits without leading zeros, single spaces between,
  each below the vocabulary's size (spaces around the whole ignored, an empty box is no ids).

A lesson's values are swept together: each non-text control gets :data:`ROUNDS` different odd
values, one per run, and the lesson's controls together get every odd value (which parser takes
which value is the unit test ``tests/shell/test_controls.py``; this test shows every control goes
through one); text boxes one at a time (an empty sentence stops the page), each the empty text and
:data:`TEXT_ROUNDS` others.
"""

from __future__ import annotations

import re

import pytest

from explorer.lessons import LESSONS
from tests.apptest_utils import app_at as _app_at
from tests.apptest_utils import assert_clean

pytestmark = pytest.mark.slow

ODD = ["nan", "inf", "-inf", "1e309", "9e18", "-0", "1e2", "0x10", " 5 ", "", "5.0", "\u0663", "1_000",
       "Infinity", "+5", "007"]
# States that draw controls the defaults do not (their keys are swept in that state).
REVEAL: dict[str, list[dict[str, str]]] = {
    "multihead": [{"d_model": "64", "n_heads": "64"}],  # more heads than one grid shows: the head window
}
TEXT_KINDS = ("TextInput", "TextArea")
RUN_TIMEOUT_S = 300  # a run of a real-model lesson on a new prompt, on 2 shared cores (no test times the app)
# Text boxes that hold token ids, not free text: {key: vocabulary size} (SmolLM2-135M's 49152 tokens).
ID_BOXES = {"rm_then": 49152}
OPTION_KINDS = ("Selectbox", "Radio", "SelectSlider", "ButtonGroup")
SWITCH_KINDS = ("Checkbox", "Toggle", "Expander")  # an expander bound to the link is open (true) or closed (false)


def app_at(page, **kwargs):
    return _app_at(page, timeout=RUN_TIMEOUT_S, **kwargs)


def _walk(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


def bound_widgets(at) -> dict[str, object]:
    """``{key: widget}`` of every widget of the last run bound to the link (sidebar and page)."""
    out = {}
    for root in (at.sidebar, at.main):
        for el in _walk(root):
            proto = getattr(el, "proto", None)
            key = getattr(proto, "query_param_key", "") if proto is not None else ""
            if key:
                out[key] = el
    return out


def kind(el) -> str:
    name = type(el).__name__
    if name == "SelectSlider" or (name == "Slider" and list(getattr(el.proto, "options", []))):
        return "SelectSlider"
    return name


def shown(el):
    """The widget's value as its link would spell it (an option's label, a number, a bool, a text; an expander
    bound to the link: open or not)."""
    if kind(el) == "Expander":
        return bool(el.proto.expanded)
    if kind(el) in OPTION_KINDS:
        value = el.value[0] if isinstance(el.value, list | tuple) and len(el.value) == 1 else el.value
        return str(el.format_func(value)) if value is not None else None
    return el.value


def usable(el, raw: str):
    """What the control must show for the link value ``raw``, or ``None`` when it cannot use it (the spec above)."""
    k = kind(el)
    if k in TEXT_KINDS:
        limit = el.proto.max_chars or None
        if limit is not None and len(raw) > limit:
            return None
        vocab = ID_BOXES.get(el.proto.query_param_key)
        if vocab is not None:
            ids = raw.strip()
            if ids and not (re.fullmatch(r"(0|[1-9][0-9]*)( (0|[1-9][0-9]*))*", ids, flags=re.ASCII)
                            and all(int(i) < vocab for i in ids.split(" "))):
                return None
        return raw
    if k in OPTION_KINDS:
        return raw if raw in list(el.options) else None
    if k in SWITCH_KINDS:
        return {"true": True, "false": False}.get(raw.lower())
    proto = el.proto
    integer = proto.data_type == type(proto).INT
    pattern = r"-?(0|[1-9][0-9]*)" if integer else r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?"
    if not re.fullmatch(pattern, raw, flags=re.ASCII) or raw == "-0":
        return None
    x = int(raw) if integer else float(raw)
    lo, hi, step = proto.min, proto.max, proto.step or None
    if not lo <= x <= hi:
        return None
    if step and abs((x - lo) / step - round((x - lo) / step)) > 1e-6:
        return None
    return x


def a_valid_value(el, default) -> str:
    """A link value the control can use, other than its default (the top of its range, or its last option)."""
    k = kind(el)
    if k in TEXT_KINDS:
        return "30 198 198" if el.proto.query_param_key in ID_BOXES else "a b c"
    if k in OPTION_KINDS:
        return next(o for o in reversed(list(el.options)) if o != default)
    if k in SWITCH_KINDS:
        return "false" if default else "true"
    proto = el.proto
    integer = proto.data_type == type(proto).INT
    top = int(proto.max) if integer else proto.max
    value = top if top != default else (int(proto.min) if integer else proto.min)
    return str(value) if integer or value != int(value) else str(int(value))


def discover() -> list[tuple[str, dict[str, str], dict[str, object], dict[str, object]]]:
    """``(lesson, state, {key: widget}, {key: value shown at that state})`` for each lesson and revealing state.

    A key is swept in the first state that draws it (the shared sidebar's controls once, on the first lesson)."""
    seen: set[str] = set()
    out = []
    for entry in LESSONS:
        for state in [{}, *REVEAL.get(entry.name, [])]:
            at = app_at(entry.name, query=state)
            assert_clean(at)
            widgets = {k: w for k, w in bound_widgets(at).items() if k not in seen and k not in state}
            seen |= widgets.keys()
            if widgets:
                out.append((entry.name, state, widgets, {k: shown(w) for k, w in widgets.items()}))
    return out


@pytest.fixture(scope="module")
def controls_by_lesson():
    found = discover()
    keys = {k for *_, widgets, _ in found for k in widgets}
    # The walk must find what it is meant to (so a test that finds nothing cannot pass): the shared controls and
    # the numbers issue #19 named.
    assert {"sentence", "seed", "d_model", "d_k", "scale_seed", "two_shuffle_seed", "n_heads",
            "mh_head_window", "rm_steps"} <= keys, sorted(keys)
    return found


def _warned(at, key: str) -> list[str]:
    return [w.value for w in at.warning if key in w.value]


def check(at, widgets: dict, defaults: dict, values: dict[str, str], where: str) -> list[str]:
    """The spec for every key of ``values`` after a run with those link values."""
    problems = []
    if at.exception:
        return [f"{where}: exception {[e.value for e in at.exception]}"]
    if not any(kind(widgets[k]) in TEXT_KINDS for k in values):  # a text box may hold "nan" as a word
        try:
            assert_clean(at)
        except AssertionError as e:
            problems.append(f"{where}: {e}")
    now = bound_widgets(at)
    for key, raw in values.items():
        el = widgets[key]
        want = usable(el, raw)
        if key not in now:
            problems.append(f"{where}: {key}={raw!r}: the control is not drawn")
            continue
        got = shown(now[key])
        warned = _warned(at, key)
        if want is None:
            if not warned:
                problems.append(f"{where}: {key}={raw!r} cannot be used but no warning names it")
            if got != defaults[key]:
                problems.append(f"{where}: {key}={raw!r} shows {got!r}, not the default {defaults[key]!r}")
        else:
            if warned:
                problems.append(f"{where}: {key}={raw!r} is valid but warned: {warned}")
            if got != want:
                problems.append(f"{where}: {key}={raw!r} shows {got!r}, expected {want!r}")
    return problems


def rotations(keys: list[str], rounds: int) -> list[dict[str, str]]:
    """``rounds`` sets of link values for ``keys``: in round ``r`` the ``i``-th key gets ``ODD[(i·rounds + r) % 16]``.

    Each key gets ``rounds`` different odd values; together a lesson's keys cover every value of :data:`ODD` once
    they are ``16 / rounds`` or more. (Each value against each parser is the unit test
    ``tests/shell/test_controls.py``; here every control of every lesson is shown to go through one.)"""
    return [{k: ODD[(i * rounds + r) % len(ODD)] for i, k in enumerate(keys)} for r in range(rounds)]


ROUNDS = 3  # odd values per non-text control
TEXT_ROUNDS = 2  # odd values per text box, besides the empty text


def test_odd_values_cover_every_odd_value_and_give_each_key_different_ones():
    keys = [f"k{i}" for i in range(6)]
    runs = rotations(keys, ROUNDS)
    assert {v for run in runs for v in run.values()} == set(ODD)
    assert all(len({run[k] for run in runs}) == ROUNDS for k in keys)


def test_odd_numbers_in_every_link_value_warn_and_open_at_the_default(controls_by_lesson):
    problems, tried, boxes = [], set(), 0
    for lesson, state, widgets, defaults in controls_by_lesson:
        others = [k for k, el in widgets.items() if kind(el) not in TEXT_KINDS]
        texts = [k for k, el in widgets.items() if kind(el) in TEXT_KINDS]
        for values in rotations(others, ROUNDS) if others else []:
            tried |= set(values.values())
            at = app_at(lesson, query={**state, **values})
            problems += check(at, widgets, defaults, values, f"{lesson} {state or ''}")
        for key in texts:  # one at a time: an empty sentence stops the page; each box other odd values
            boxes += 1
            for values in [{key: ""}, *rotations([key], TEXT_ROUNDS * boxes)[-TEXT_ROUNDS:]]:
                at = app_at(lesson, query={**state, **values})
                problems += check(at, widgets, defaults, values, f"{lesson} {state or ''}")
    assert tried == set(ODD), f"odd values never tried: {set(ODD) - tried}"
    assert not problems, "\n".join(problems)


def test_a_valid_link_value_is_shown_exactly_without_a_warning(controls_by_lesson):
    problems = []
    for lesson, state, widgets, defaults in controls_by_lesson:
        for key, el in widgets.items():
            raw = a_valid_value(el, defaults[key])
            assert usable(el, raw) is not None, (lesson, key, raw)
            at = app_at(lesson, query={**state, key: raw})
            problems += check(at, widgets, defaults, {key: raw}, f"{lesson} {state or ''}")
    assert not problems, "\n".join(problems)


def test_a_repeated_parameter_warns_and_opens_at_the_default(controls_by_lesson):
    """``?seed=1&seed=2``: a link holds one value per control; two (even valid ones) are refused, not the last used."""
    problems = []
    for lesson, state, widgets, defaults in controls_by_lesson:
        repeated = {key: [a_valid_value(el, defaults[key])] * 2 for key, el in widgets.items()
                    if kind(el) not in TEXT_KINDS}
        at = app_at(lesson, query={**state, **repeated})
        if at.exception:
            problems.append(f"{lesson}: exception {[e.value for e in at.exception]}")
            continue
        now = bound_widgets(at)
        for key in repeated:
            if not any("2 times" in w for w in _warned(at, key)):
                problems.append(f"{lesson}: {key} given twice: no warning says so ({_warned(at, key)})")
            if key in now and shown(now[key]) != defaults[key]:
                problems.append(f"{lesson}: {key} given twice shows {shown(now[key])!r}, not {defaults[key]!r}")
    for key in ("sentence",):  # a text box too
        at = app_at(LESSONS[0].name, query={key: ["one two", "three four"]})
        assert_clean(at)
        assert any("2 times" in w for w in _warned(at, key)), [w.value for w in at.warning]
        assert shown(bound_widgets(at)[key]) == "The cat sat on the mat"
    assert not problems, "\n".join(problems)
