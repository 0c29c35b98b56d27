"""AppTest of the entrypoint and the walkthrough page."""

import ast
import re

import numpy as np
import pytest

import attention as A
from explorer.lessons import LESSONS, lesson
from explorer.lessons.walkthrough import model as W
from explorer.shell import settings
from explorer.shell.settings import Settings
from tests.apptest_utils import ROOT, app_at, assert_clean, chart_elements, english_left, figures
from tests.lessons.test_languages import check_every_language


def weights_z(at):
    return np.array(figures(at)["walk_fig_weights"]["data"][0]["z"], dtype=float)


def _runs_the_real_model(entry) -> bool:
    """Whether the lesson's page imports the shell's door to the real model (its first run loads the model)."""
    imported = set()
    for node in ast.walk(ast.parse((ROOT / entry.page).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{a.name}" for a in node.names}
    return "explorer.shell.llm" in imported


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name, marks=[pytest.mark.slow] if _runs_the_real_model(e)
                                                else []) for e in LESSONS])
def test_every_page_in_navigation_renders(entry):
    """Every page of the navigation, reached from the default page the way its sidebar link does, draws its charts
    at the defaults (the real model's pages load the model on their first run: slow)."""
    at = app_at()
    assert_clean(at)
    at.switch_page(entry.page)
    at.run()
    assert not at.exception, (entry.page, [e.value for e in at.exception])
    assert chart_elements(at), f"{entry.page} draws no chart at defaults"
    # Its end links to the next lesson in LESSONS' order (issue 30); the last lesson's has no such link.
    i = LESSONS.index(entry)
    links = [e.proto for e in at.main.get("page_link") if e.proto.label.startswith("Next lesson")]
    if i + 1 == len(LESSONS):
        assert links == []
    else:
        nxt = LESSONS[i + 1]
        assert [(p.label, p.page.strip("/")) for p in links] == [(f"Next lesson: {nxt.title}", nxt.url_path)]
    # Under its title, the earlier lessons it builds on, each a link that opens that lesson (issue 49).
    first = {LESSONS[0].url_path: ""}  # the default page is served at "/"
    shown = [(e.proto.label, e.proto.page.strip("/")) for e in at.main.get("page_link")][:len(entry.needs)]
    assert shown == [(n.title, first.get(n.url_path, n.url_path)) for n in map(lesson, entry.needs)]


def test_the_real_models_pages_are_found():
    """The check above finds the pages that run the real model (else their runs would land in the fast tier)."""
    assert {e.name for e in LESSONS if _runs_the_real_model(e)} >= {"real_model", "kv_cache"}


def test_defaults_reproduce_lesson_sentence_example(golden):
    at = app_at()
    assert_clean(at)
    expected = np.array(golden["sentence_example"]["expected"]["attention_weights"])
    np.testing.assert_allclose(weights_z(at), expected, rtol=0, atol=1e-9)
    out = np.array(figures(at)["walk_fig_output"]["data"][0]["z"], dtype=float)
    np.testing.assert_allclose(out, golden["sentence_example"]["expected"]["output"], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_lesson_example_equals_golden(golden):
    at = app_at(session={"walk_input": "lesson"})
    assert_clean(at)
    exp = golden["pipeline_example"]["expected"]
    np.testing.assert_allclose(weights_z(at), exp["attention_weights"], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_editing_a_cell_changes_the_result_and_blank_keeps_last_valid():
    at = app_at(session={"walk_input": "lesson"})
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
    assert "last valid" in message and "X: the cell in row word 0, column dim 0" in message
    np.testing.assert_allclose(weights_z(at), after)


@pytest.mark.slow
def test_restore_button_brings_back_the_lesson_values(golden):
    at = app_at(session={"walk_input": "lesson"})
    at.session_state["walk_edit_X_0"] = {"edited_rows": {1: {"dim 2": 5.0}}, "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key="walk_restore").click().run()
    np.testing.assert_allclose(weights_z(at), golden["pipeline_example"]["expected"]["attention_weights"],
                               atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("query", [{"seed": "abc"}, {"d_model": "-3"}, {"d_k": "100000"},
                                   {"embedding": "zzz", "positional": "maybe"}])
def test_bad_link_values_warn_and_use_defaults(query, golden):
    at = app_at(query=query)
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    for key in query:
        assert f"`{key}=" in text
    np.testing.assert_allclose(weights_z(at), golden["sentence_example"]["expected"]["attention_weights"], atol=1e-9)


@pytest.mark.slow
def test_good_link_values_are_used_without_warning():
    at = app_at(query={"seed": "7", "d_model": "16", "d_k": "8", "sentence": "a b c"})
    assert not at.warning
    z = weights_z(at)
    assert z.shape == (3, 3)
    assert at.session_state["seed"] == 7 and at.session_state["d_model"] == 16


@pytest.mark.slow
def test_empty_sentence_prompts():
    at = app_at(session={"sentence": "   "})
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)
    assert not chart_elements(at)


@pytest.mark.slow
def test_long_sentence_is_truncated_with_a_note():
    at = app_at(session={"sentence": " ".join(f"w{i}" for i in range(80))})
    assert_clean(at)
    assert any("first 64" in i.value and "16 dropped" in i.value for i in at.info)
    assert weights_z(at).shape == (64, 64)


@pytest.mark.slow
def test_markup_tokens_are_escaped_in_charts():
    at = app_at(session={"sentence": "<b>bold</b> & \"q\""})
    assert_clean(at)
    fig = figures(at)["walk_fig_weights"]
    xaxis = fig["layout"]["xaxis"]  # every key named, or named as Plotly picks ticks (labelalias, issue 18)
    ticks = xaxis.get("ticktext") or [xaxis["labelalias"][str(i)]
                                   for i in range(sum(k.isdigit() for k in xaxis["labelalias"]))]
    assert "&lt;" in ticks[0] and "<" not in "".join(ticks)


@pytest.mark.slow
def test_repeated_tokens_stay_distinct_rows():
    at = app_at()
    fig = figures(at)["walk_fig_weights"]
    assert fig["layout"]["yaxis"]["ticktext"] == ["The (0)", "cat (1)", "sat (2)", "on (3)", "the (4)", "mat (5)"]
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"


# --- issue #18 -------------------------------------------------------------------------------------------------
def z(at, key):
    return np.array(figures(at)[key]["data"][0]["z"], dtype=float)


def captions(at) -> str:
    return "\n".join(c.value for c in at.main.caption)


@pytest.mark.slow
@pytest.mark.parametrize(("query", "init", "scaled"), [
    ({}, "lesson", True),
    ({"d_k": "128"}, "lesson", True),
    ({"d_k": "64", "walk_init": "unit-variance"}, "unit-variance", True),
    ({"d_k": "64", "walk_init": "unit-variance", "walk_scale": "false"}, "unit-variance", False),
])
def test_scaling_captions_state_what_is_measured_for_the_current_settings(query, init, scaled):
    """Item 1: the step-4/5 captions give the measured variances and top weights of exactly what is drawn."""
    at = app_at(query=query)
    assert_clean(at)
    assert not at.warning
    s = Settings(("The", "cat", "sat", "on", "the", "mat"), 8, int(query.get("d_k", 4)), 42, "lesson", False)
    Ws = W.weight_matrices(8, s.d_k, s.d_v, 42, init)
    steps = W.steps(s.X, Ws["W_q"], Ws["W_k"], Ws["W_v"], scaled)
    np.testing.assert_allclose(weights_z(at), steps.weights, atol=1e-12)
    np.testing.assert_allclose(z(at, "walk_fig_scaled"), steps.scaled_scores, atol=1e-12)
    story = W.scale_story(steps, scaled)
    text = captions(at)
    for line in (story.variance_line(), story.claim_line(), story.softmax_line()):
        assert line in text
    assert "keeps the scores' variance near 1" not in text  # the old, unmeasured claim
    if query.get("d_k") == "128":
        assert "well below 1" in text
    assert ("switched off" in text) != scaled


@pytest.mark.slow
def test_softmax_step_checks_the_lessons_printed_row():
    """Item 2: the printed row, the true softmax and why a row sums to 1, at the softmax step."""
    at = app_at()
    expander = next(e for e in at.main.expander if "Check yourself" in e.label)
    text = " ".join(m.value for m in expander.markdown)
    assert "softmax([2.1, 0.3, 0.1, 0.8, 0.2]) = [0.52, 0.09, 0.07, 0.14, 0.08]" in text
    assert "sums to **0.90**" in text and "[0.580, 0.096, 0.079, 0.158, 0.087], which sums to 1.000000" in text
    assert "must sum to 1" in text
    table = expander.dataframe[0].value
    np.testing.assert_allclose(table["true softmax"], A.softmax(np.array(W.PRINTED_LOGITS)), atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("positional", [False, True])
def test_a_typed_sentence_gets_one_vector_per_word(positional):
    """Item 3: "the dog chased the dog": the two dogs' rows of X, Q, K, V are equal without positions."""
    at = app_at(session={"sentence": "the dog chased the dog", "positional": positional})
    assert_clean(at)
    for key in ("walk_fig_X", "walk_fig_Q_proj", "walk_fig_K_proj", "walk_fig_V_proj"):
        M = z(at, key)
        assert np.array_equal(M[1], M[4]) != positional, key
    line = next(c.value for c in at.main.caption if c.value.startswith("Embeddings:"))
    assert "per-token (auto" in line
    assert ("identical rows." in line) != positional
    assert ("differ by their positions' encodings" in line) == positional


@pytest.mark.slow
@pytest.mark.parametrize(("embedding", "same"), [("lesson", False), ("per-token", True), ("auto", True)])
def test_embedding_link_values_keep_their_meaning(embedding, same):
    """Old links name 'lesson' or 'per-token' and still get it; 'auto' is the new default."""
    at = app_at(query={"embedding": embedding, "sentence": "the dog chased the dog"})
    assert_clean(at)
    assert not at.warning
    X = z(at, "walk_fig_X")
    np.testing.assert_array_equal(X, settings.embeddings(("the", "dog", "chased", "the", "dog"), 8, 42,
                                                         "lesson" if not same else "per-token", False))
    assert np.array_equal(X[1], X[4]) == same


@pytest.mark.slow
def test_text_typed_in_a_number_cell_is_reported_as_not_a_number():
    """Item 12: text in a number cell is named as such (not as a blank); the last valid result is kept."""
    at = app_at(session={"walk_input": "lesson"})
    at.session_state["walk_edit_X_0"] = {"edited_rows": {0: {"dim 0": "3"}}, "added_rows": [], "deleted_rows": []}
    at.run()
    edited = weights_z(at)
    at.session_state["walk_edit_X_0"] = {"edited_rows": {0: {"dim 0": "3"}, 1: {"dim 1": "abc"}},
                                         "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    message = " ".join(e.value for e in at.error)
    assert "X: the cell in row word 1, column dim 1 holds `abc`, which is not a number" in message, message
    np.testing.assert_allclose(weights_z(at), edited)


@pytest.mark.slow
def test_lesson_example_edits_survive_a_visit_to_your_sentence():
    """Item 12: the lesson example's edits are still there (in the tables and the results) after "Your sentence"."""
    at = app_at(session={"walk_input": "lesson"})
    at.session_state["walk_edit_X_0"] = {"edited_rows": {0: {"dim 0": 3.0}}, "added_rows": [], "deleted_rows": []}
    at.run()
    edited = weights_z(at)
    at.session_state["walk_input"] = "sentence"
    at.run()
    assert weights_z(at).shape == (6, 6)
    at.session_state["walk_input"] = "lesson"
    at.run()
    assert_clean(at)
    np.testing.assert_allclose(weights_z(at), edited)
    editor = next(d for d in at.main.dataframe if "walk_edit_X" in (d.proto.id or ""))
    assert float(editor.value.iloc[0, 0]) == 3.0


# --- in every language: the branches no manifest state reaches (tests/lessons/test_languages.py checks the rest) ---

LANGUAGE_STATES = {  # every branch of the page with its own text
    "not divided": {"walk_scale": "false"},
    "wide keys (variance well below 1)": {"d_k": "128"},
    "unit variance, saturated": {"d_k": "64", "walk_init": "unit-variance", "walk_scale": "false"},
    "repeated words, positions": {"sentence": "the dog chased the dog", "positional": "true"},
    "repeated words, per-token": {"sentence": "a a a a a b", "embedding": "per-token"},
    "one token": {"sentence": "hello"},
}


@pytest.mark.slow
@pytest.mark.parametrize("state", list(LANGUAGE_STATES))
def test_every_branch_is_written_in_every_language(state):
    runs = check_every_language("walkthrough", LANGUAGE_STATES[state])
    assert not [w.value for at in runs.values() for w in at.warning]


MATRICES = ("X", "W_q", "W_k", "W_v")
LANGS = ("pt", "tr")


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_a_bad_cell_is_reported_in_the_language(lang):
    at = app_at(query={"walk_input": "lesson", "lang": lang})
    at.session_state["walk_edit_X_0"] = {"edited_rows": {1: {"dim 1": "abc"}, 2: {"dim 0": None}},
                                         "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    en = app_at(query={"walk_input": "lesson"})
    en.session_state["walk_edit_X_0"] = at.session_state["walk_edit_X_0"]
    en.run()
    assert "abc" in at.error[0].value and "`abc`" in en.error[0].value
    assert english_left(en, at) == []
    problem = {"pt": "X: a célula na linha word 1, coluna dim 1 contém `abc`, que não é um número",
               "tr": "X: word 1 satırı, boyut 1 sütunundaki hücre `abc` içeriyor, bu bir sayı değil"}[lang]
    assert problem in at.error[0].value


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_captions_write_numbers_with_a_decimal_comma(lang):
    at = app_at(query={"lang": lang})
    text = captions(at)
    assert re.search(r"\d,\d{3}", text), text  # the measured variances
    assert not re.search(r"\d\.\d", text), text  # never a decimal point in a sentence
    check = next(e for e in at.main.expander if "✋" in e.label)
    markdown = " ".join(m.value for m in check.markdown)
    assert "softmax([2,1; 0,3; 0,1; 0,8; 0,2]) = [0,52; 0,09; 0,07; 0,14; 0,08]" in markdown
    assert "**0,90**" in markdown and "1,000000" in markdown
    assert list(check.dataframe[0].value.iloc[:, 2]) == ["0,580", "0,096", "0,079", "0,158", "0,087"]
    formulas = " ".join(x.value for x in at.latex)
    assert re.search(r"\d\.\d", formulas) and not re.search(r"\d,\d", formulas)  # formulas keep the point


def editor(at, name: str):
    """What the matrix editor ``name`` (X, W_q, W_k, W_v) shows: its cells' text, ``[rows, columns]``."""
    found = [d for d in at.dataframe if d.proto.editing_mode and f"-walk_edit_{name}_" in d.proto.id]
    assert len(found) == 1, [d.proto.id for d in at.dataframe]
    return found[0].value.to_numpy().tolist()


@pytest.mark.slow
def test_the_matrix_editors_write_the_languages_decimal_mark_after_a_switch():
    """Switching from English to Portuguese redraws the lesson's matrices with ``0,1`` (every other number on the page
    has a decimal comma); a cell the learner typed keeps its value, a cell that is no number keeps its text."""
    at = app_at(query={"walk_input": "lesson"})
    assert "0.3" in sum(editor(at, "W_v"), []) and "0.1" in sum(editor(at, "W_q"), [])
    at.session_state["walk_edit_X_0"] = {"edited_rows": {1: {"dim 1": "0.75"}, 2: {"dim 0": "abc"}},
                                         "added_rows": [], "deleted_rows": []}
    at.run()
    before = z(at, "walk_fig_weights")
    at.selectbox(key="_lang_choice").set_value("pt").run()
    assert_clean(at)
    cells = {m: sum(editor(at, m), []) for m in MATRICES}
    assert not any(re.search(r"\d\.\d", c) for m in MATRICES for c in cells[m]), cells
    assert "0,3" in cells["W_v"] and "0,1" in cells["W_q"] and "0,75" in cells["X"] and "abc" in cells["X"]
    np.testing.assert_array_equal(z(at, "walk_fig_weights"), before)  # the last valid values, as before
    at.selectbox(key="_lang_choice").set_value("en").run()
    assert "0.75" in sum(editor(at, "X"), []) and "abc" in sum(editor(at, "X"), [])
