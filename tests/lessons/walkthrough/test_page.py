"""AppTest of the entrypoint and the walkthrough page."""


import numpy as np
import pytest

from explorer.lessons import LESSONS
from tests.apptest_utils import app_at, assert_clean, figures


def weights_z(at):
    return np.array(figures(at)["walk_fig_weights"]["data"][0]["z"], dtype=float)


def test_every_page_in_navigation_renders():
    at = app_at()
    assert_clean(at)
    for page in (entry.page for entry in LESSONS):
        at.switch_page(page)
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert at.get("plotly_chart"), f"{page} draws no chart at defaults"


def test_defaults_reproduce_lesson_sentence_example(golden):
    at = app_at()
    assert_clean(at)
    expected = np.array(golden["sentence_example"]["expected"]["attention_weights"])
    np.testing.assert_allclose(weights_z(at), expected, rtol=0, atol=1e-9)
    out = np.array(figures(at)["walk_fig_output"]["data"][0]["z"], dtype=float)
    np.testing.assert_allclose(out, golden["sentence_example"]["expected"]["output"], rtol=0, atol=1e-9)


def test_lesson_example_equals_golden(golden):
    at = app_at(session={"walk_input": "Lesson example"})
    assert_clean(at)
    exp = golden["pipeline_example"]["expected"]
    np.testing.assert_allclose(weights_z(at), exp["attention_weights"], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_editing_a_cell_changes_the_result_and_blank_keeps_last_valid():
    at = app_at(session={"walk_input": "Lesson example"})
    before = weights_z(at)
    editors = [d.proto.id for d in at.dataframe if "walk_edit" in (d.proto.id or "")]
    assert len(editors) == 4, editors  # X, W_q, W_k, W_v
    # AppTest has no data_editor API: set the editor's edit state the way the frontend sends it.
    at.session_state["walk_edit_X_0"] = {"edited_rows": {0: {"dim 0": 3.0}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert_clean(at)
    after = weights_z(at)
    assert not np.allclose(before, after)
    at.session_state["walk_edit_X_0"] = {"edited_rows": {0: {"dim 0": None}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    message = " ".join(e.value for e in at.error)
    assert "last valid" in message and "X: the cell in row word 1, column dim 0" in message
    np.testing.assert_allclose(weights_z(at), after)


def test_restore_button_brings_back_the_lesson_values(golden):
    at = app_at(session={"walk_input": "Lesson example"})
    at.session_state["walk_edit_X_0"] = {"edited_rows": {1: {"dim 2": 5.0}}, "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key="walk_restore").click().run()
    np.testing.assert_allclose(weights_z(at), golden["pipeline_example"]["expected"]["attention_weights"],
                               atol=1e-9)


@pytest.mark.parametrize("query", [{"seed": "abc"}, {"d_model": "-3"}, {"d_k": "100000"},
                                   {"embedding": "zzz", "positional": "maybe"}])
def test_bad_link_values_warn_and_use_defaults(query, golden):
    at = app_at(query=query)
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    for key in query:
        assert f"`{key}=" in text
    np.testing.assert_allclose(weights_z(at), golden["sentence_example"]["expected"]["attention_weights"], atol=1e-9)


def test_good_link_values_are_used_without_warning():
    at = app_at(query={"seed": "7", "d_model": "16", "d_k": "8", "sentence": "a b c"})
    assert not at.warning
    z = weights_z(at)
    assert z.shape == (3, 3)
    assert at.session_state["seed"] == 7 and at.session_state["d_model"] == 16


def test_empty_sentence_prompts():
    at = app_at(session={"sentence": "   "})
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_long_sentence_is_truncated_with_a_note():
    at = app_at(session={"sentence": " ".join(f"w{i}" for i in range(80))})
    assert_clean(at)
    assert any("first 64" in i.value and "16 dropped" in i.value for i in at.info)
    assert weights_z(at).shape == (64, 64)


def test_markup_tokens_are_escaped_in_charts():
    at = app_at(session={"sentence": "<b>bold</b> & \"q\""})
    assert_clean(at)
    fig = figures(at)["walk_fig_weights"]
    ticks = fig["layout"]["xaxis"]["ticktext"]
    assert "&lt;" in ticks[0] and "<" not in "".join(ticks)


def test_repeated_tokens_stay_distinct_rows():
    at = app_at()
    fig = figures(at)["walk_fig_weights"]
    assert fig["layout"]["yaxis"]["ticktext"] == ["The (0)", "cat (1)", "sat (2)", "on (3)", "the (4)", "mat (5)"]
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"
