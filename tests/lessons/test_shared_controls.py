"""Issue 18, item 5: every shared control does something on every lesson, or the sidebar says why not.

For each lesson and each of the sidebar's shared controls, the control is moved (one run of the
whole app per move) and the page's figures are compared with the page at the defaults. A control
that changes no figure must be named by the lesson's :func:`explorer.shell.controls.not_used` (its
note shows under the control, in the sidebar); a control the lesson says it does not use must
change no figure (the note must be true).
"""

from __future__ import annotations

import json

import pytest

from explorer.lessons import LESSONS
from explorer.shell import controls
from tests.apptest_utils import app_at, assert_clean, figures

MOVED = {  # a valid value other than the default for every shared control
    "sentence": "A dog ran far away fast",
    "embedding": "per-token",
    "positional": True,
    "seed": 7,
    "d_model": 16,
    "d_k": 8,
}
# The walkthrough's default input is the lesson's hand-written example; its owner (the √d_k work) decides how
# it says so. Every other lesson is checked here.
CHECKED = [lesson.name for lesson in LESSONS if lesson.name != "walkthrough"]


def _numbers(at) -> str:
    """The page's figures without their layout (what a control changes when it is used)."""
    return json.dumps({k: f["data"] for k, f in sorted(figures(at).items())}, sort_keys=True, default=str)


def test_every_shared_control_is_moved():
    assert set(MOVED) == set(controls.DEFAULTS)
    assert all(MOVED[k] != v for k, v in controls.DEFAULTS.items())


@pytest.mark.slow
@pytest.mark.parametrize("lesson", CHECKED)
def test_a_shared_control_changes_the_lesson_or_the_sidebar_says_it_is_not_used(lesson):
    base = app_at(lesson, opened_by_link=True)
    assert_clean(base)
    not_used = dict(base.session_state["_not_used"]) if "_not_used" in base.session_state else {}
    sidebar = " ".join(c.value for c in base.sidebar.caption)
    for key, why in not_used.items():
        assert why in sidebar and "Not used on this page" in sidebar, (key, sidebar)
    before = _numbers(base)
    problems = []
    for key, value in MOVED.items():
        at = app_at(lesson, session={key: value}, opened_by_link=True)
        assert_clean(at)
        changed = _numbers(at) != before
        if not changed and key not in not_used:
            problems.append(f"{key}: moving it changes nothing, and the sidebar does not say it is not used here")
        if changed and key in not_used:
            problems.append(f"{key}: the sidebar says it is not used here, but moving it changes the figures")
    assert not problems, f"{lesson}: " + "; ".join(problems)
