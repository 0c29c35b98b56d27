"""The lesson contract, on each page: the controls a page draws are its declared ones, and each reads the link
through its declared parser.

Two whole-app runs (AppTest) per lesson and per state its manifest lists (``STATES``): one with an odd link value
for every declared control (the first one given twice, ``?k=v&k=v``), one with a valid value other than the default
for every declared control (the shared sidebar's on the first lesson). Then:

- the widgets bound to the link (Streamlit's ``query_param_key``) are exactly the declared controls drawn
  (those the shell syncs to the link by hand, :attr:`~explorer.shell.controls.Control.by_hand`: options, heads and
  numbers whose range depends on the run, are widgets with their keys), so no page binds a widget to the link any
  other way;
- each drawn control holds what its declaration's :meth:`~explorer.shell.controls.Control.outcome` gives for the
  link value (in the context it was drawn in), and a warning names it exactly when the outcome warns: the page's
  widget went through the parser that ``tests/shell/test_declare.py`` checks against every odd value; a value given
  twice opens at the default with a warning that says so;
- each declared control in the link is drawn at the defaults or in a listed state, in the context shape it
  declares, except those the manifest lists in ``AFTER_A_CLICK`` (drawn only after a button: no link reaches them;
  the lesson's own page test clicks to them).
"""

from __future__ import annotations

import importlib

import pytest

from explorer.lessons import LESSONS
from explorer.shell import controls
from tests.apptest_utils import app_at, assert_clean
from tests.shell.test_declare import ODD, valid_values

pytestmark = pytest.mark.slow

DECLARED = [e.name for e in LESSONS if hasattr(importlib.import_module(f"explorer.lessons.{e.name}"), "CONTROLS")]
SHARED = {c.key: c for c in controls.SHARED.values()}


def _walk(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


def widgets(at) -> tuple[set[str], set[str]]:
    """``(keys of the widgets bound to the link, keys of every widget)`` of the last run (sidebar and page)."""
    bound, keyed = set(), set()
    for root in (at.sidebar, at.main):
        for el in _walk(root):
            proto = getattr(el, "proto", None)
            if getattr(proto, "query_param_key", ""):
                bound.add(proto.query_param_key)
            if getattr(el, "key", None):
                keyed.add(el.key)
    return bound, keyed


def odd_values(keys: list[str], declared: dict, offset: int) -> dict[str, str]:
    """One odd value per key, rotating through :data:`ODD` (a text box never gets an empty value or "nan": an
    empty sentence stops the page, and "nan" would be a word on it)."""
    out = {}
    for i, key in enumerate(keys):
        pool = [v for v in ODD if v not in ("", "nan")] if isinstance(declared[key], controls.Text) else ODD
        out[key] = pool[(offset + 5 * i) % len(pool)]
    return out


def a_valid_value(control) -> str:
    """A link value ``control`` takes, other than its default (in its example context)."""
    ctx, default = control.example, control.default_value(control.example)
    codes = control.codes(ctx) if isinstance(control, controls.Options) else None
    return next(raw for raw in reversed(valid_values(control, ctx)) if control.outcome(raw, ctx).value != default
                and (codes is None or raw in codes))


@pytest.mark.parametrize("lesson", DECLARED)
def test_the_page_draws_its_declared_controls_and_reads_each_link_value_through_its_parser(lesson):
    package = importlib.import_module(f"explorer.lessons.{lesson}")
    own = {c.key: c for c in package.CONTROLS.values()}
    declared = own | SHARED
    drawn_somewhere: set[str] = set()
    problems = []
    for n, state in enumerate([{}, *package.STATES]):
        tried = [k for k, c in own.items() if c.linked and k not in state]
        if lesson == DECLARED[0] and not state:
            tried += [k for k in SHARED if k not in state]
        odd: dict[str, object] = odd_values(tried, declared, offset=len(lesson) + n)
        if tried:
            odd[tried[0]] = [a_valid_value(declared[tried[0]])] * 2  # a valid value, given twice
        valid = {k: a_valid_value(declared[k]) for k in tried}
        for values in (odd, valid):
            at = app_at(lesson, query={**state, **values}, opened_by_link=True)
            drawn_somewhere |= set(check(at, lesson, state, values, declared, own, problems))
    after_a_click = {package.CONTROLS[name].key for name in getattr(package, "AFTER_A_CLICK", ())}
    # (a control out of the link may wait for an answer: the quiz)
    linked = {k for k, c in own.items() if c.linked and k not in after_a_click}
    assert linked <= drawn_somewhere, f"declared but never drawn: {linked - drawn_somewhere}"
    assert not problems, "\n".join(problems)


def check(at, lesson: str, state: dict, values: dict, declared: dict, own: dict, problems: list[str]) -> dict:
    """The contract for one run with the link ``values``: problems are added to ``problems``; returns the controls
    drawn (``{key: context}``)."""
    where = f"{lesson} {state or 'defaults'} {values}"
    assert_clean(at)  # no exception, no "nan" on the page
    drawn = dict(at.session_state["_controls_drawn"])  # {key: the context it was drawn in}
    bound, keyed = widgets(at)
    assert set(drawn) <= set(declared), (where, set(drawn) - set(declared))
    assert bound == {k for k in drawn if declared[k].linked and not declared[k].by_hand}, \
        (where, bound ^ set(drawn))
    assert set(drawn) <= keyed, (where, set(drawn) - keyed)
    warnings = " ".join(w.value for w in at.warning)
    for key, ctx in drawn.items():
        control = declared[key]
        if not state and key in own:
            assert set(ctx) == set(control.example), (key, ctx, control.example)  # the declared shape
        if key not in values:
            continue
        raw = values[key]
        repeated = isinstance(raw, list)
        value, warns = (control.default_value(ctx), True) if repeated else control.outcome(raw, ctx)
        got = at.session_state[key]
        if got != value:
            problems.append(f"{where}: {key}={raw!r} holds {got!r}, its declaration gives {value!r}")
        said = f"`{key}` {len(raw)} times" if repeated else f"`{key}="
        if (said in warnings) != warns:
            problems.append(f"{where}: {key}={raw!r} {'warns' if not warns else 'does not warn'}, its declaration "
                            f"says {'it warns' if warns else 'no warning'}")
    return drawn
