"""The shared widgets of explorer.shell.controls, driven through a lesson page (AppTest)."""

from __future__ import annotations

import pytest

from tests.apptest_utils import app_at, assert_clean


@pytest.mark.slow
def test_token_picker_follows_a_new_sentence():
    """The picker's options are the current sentence's labels: after a new sentence it shows (and the link holds)
    one of them, keeping the position where it exists, else the last token; never a stale label."""
    at = app_at("walkthrough")
    at.selectbox(key="walk_query").select_index(2).run()
    assert at.selectbox(key="walk_query").value == "sat (2)"
    at.session_state["sentence"] = "one two three four"
    at.run()
    assert_clean(at)
    assert at.selectbox(key="walk_query").value == "three (2)"
    assert at.selectbox(key="walk_query").options == ["one (0)", "two (1)", "three (2)", "four (3)"]
    at.session_state["sentence"] = "a b"
    at.run()
    assert at.selectbox(key="walk_query").value == "b (1)"  # position 2 is gone: the last token
    assert not at.warning, [w.value for w in at.warning]


def test_token_picker_warns_about_a_label_the_sentence_does_not_have():
    at = app_at("walkthrough", query={"walk_query": "dog (9)"})
    assert_clean(at)
    assert any("walk_query=dog (9)" in w.value for w in at.warning)
    assert at.selectbox(key="walk_query").value == "The (0)"
