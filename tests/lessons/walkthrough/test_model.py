"""The walkthrough's arrays: weight initialisation, the √d_k switch, captions, cells, embeddings (issue #18)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import attention as A
from explorer.lessons.walkthrough import draw
from explorer.lessons.walkthrough import model as W
from explorer.shell import i18n, settings
from explorer.shell.settings import Settings


def sentence(text: str, d_model: int = 8, d_k: int = 4, seed: int = 42, embedding: str = "auto",
             positional: bool = False) -> Settings:
    tokens = settings.sentence_tokens(text).tokens
    return Settings(tokens, d_model, d_k, seed, settings.embedding_mode(embedding, tokens), positional)


def run(s: Settings, init: str = "lesson", scaled: bool = True) -> A.AttentionSteps:
    Ws = W.weight_matrices(s.d_model, s.d_k, s.d_v, s.seed, init)
    return W.steps(s.X, Ws["W_q"], Ws["W_k"], Ws["W_v"], scaled)


# --- item 1: the initialisation and the switch ------------------------------------------------------------
def test_lesson_init_is_the_lessons_layer_and_unit_variance_rescales_the_same_draws():
    layer = A.SelfAttention(8, 4, 4, seed=42)
    lesson = W.weight_matrices(8, 4, 4, 42, "lesson")
    unit = W.weight_matrices(8, 4, 4, 42, "unit-variance")
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(lesson[name], getattr(layer, name))
        np.testing.assert_allclose(unit[name], getattr(layer, name) * math.sqrt(1 / 8) / math.sqrt(2 / 12))
    with pytest.raises(ValueError, match="init"):
        W.init_std("xavier", 8, 4)


def test_switch_off_gives_the_softmax_of_the_raw_scores(golden):
    s = sentence("The cat sat on the mat")
    on, off = run(s), run(s, scaled=False)
    np.testing.assert_allclose(on.weights, golden["sentence_example"]["expected"]["attention_weights"], atol=1e-12)
    np.testing.assert_allclose(off.scaled_scores, off.scores)
    np.testing.assert_allclose(off.weights, A.softmax(off.scores), atol=1e-15)
    np.testing.assert_allclose(off.output, off.weights @ off.V, atol=1e-12)
    assert not np.allclose(on.weights, off.weights)


def test_the_caption_measures_the_variance_instead_of_asserting_it():
    """Issue #18 item 1: the lesson's initialisation at d_model 8 gives scaled scores far below variance 1,
    and raising d_k makes attention flatter; the caption must say so, with the measured numbers."""
    low = W.scale_story(run(sentence("The cat sat on the mat", d_k=128)), scaled=True)
    assert low.scaled_var < 0.01
    assert f"{low.scaled_var:.3f}" in low.variance_line() and f"{low.raw_var:.3f}" in low.variance_line()
    assert "well below 1" in low.claim_line() and "near 1" not in low.claim_line()
    at4 = W.scale_story(run(sentence("The cat sat on the mat", d_k=4)), scaled=True)
    assert low.top_scaled < at4.top_scaled  # flatter at d_k 128 than at d_k 4
    assert f"{low.top_scaled:.3f}" in low.softmax_line()
    weights = run(sentence("The cat sat on the mat", d_k=128)).weights  # the caption's row sums, as measured
    assert low.row_sum_error == float(np.abs(weights.sum(axis=-1) - 1).max()) < 1e-14


def test_unit_variance_projections_bring_the_scaled_variance_near_1_and_without_scaling_saturate():
    text = " ".join(f"w{i}" for i in range(16))
    s = sentence(text, d_model=256, d_k=128, embedding="per-token")
    story = W.scale_story(run(s, "unit-variance"), scaled=True)
    assert 0.5 < story.var_q < 2 and 0.5 < story.var_k < 2
    assert 64 < story.raw_var < 256  # ≈ d_k
    assert "near 1" in story.claim_line()
    off = W.scale_story(run(s, "unit-variance", scaled=False), scaled=False)
    assert off.top >= W.SATURATED and "saturated" in off.softmax_line()
    assert "saturated" not in story.softmax_line()


def test_one_token_has_no_variance_to_report():
    story = W.scale_story(run(sentence("hello")), scaled=True)
    assert "no spread" in story.variance_line() and story.claim_line() == "" and story.softmax_line() == ""


# --- item 2: the lesson's softmax row ---------------------------------------------------------------------
def test_softmax_check_against_the_golden_numbers(golden):
    ex = next(e for e in golden["softmax_examples"] if e["logits"] == list(W.PRINTED_LOGITS))
    check = W.softmax_check()
    np.testing.assert_allclose(check.true, ex["softmax"], atol=1e-12)
    assert f"{sum(check.printed):.2f}" == "0.90" and abs(sum(check.true) - 1) < 1e-12
    assert [f"{w:.3f}" for w in check.true] == ["0.580", "0.096", "0.079", "0.158", "0.087"]


# --- item 3: per-word embeddings for a typed sentence ------------------------------------------------------
def test_auto_embeddings_keep_the_lesson_rows_for_the_lessons_sentence_only():
    assert settings.embedding_mode("auto", ("The", "cat", "sat", "on", "the", "mat")) == "lesson"
    assert settings.embedding_mode("auto", ("the", "dog")) == "per-token"
    assert settings.embedding_mode("lesson", ("the", "dog")) == "lesson"  # an old link's explicit value
    assert settings.embedding_mode("per-token", settings.LESSON_TOKENS) == "per-token"
    quick = run(sentence("The quick brown fox jumps over the lazy dog near the river"))
    cat = run(sentence("The cat sat on the mat"))
    assert not np.allclose(quick.Q[:6], cat.Q[:6])  # issue #18: with lesson rows these were equal


@pytest.mark.parametrize("positional", [False, True])
def test_copies_of_a_word_get_identical_rows_unless_positions_are_added(positional):
    s = sentence("the dog chased the dog", positional=positional)
    assert s.embedding == "per-token"
    st = run(s)
    for M in (st.X, st.Q, st.K, st.V):
        assert np.array_equal(M[1], M[4]) != positional  # the two "dog"s
        assert np.array_equal(M[0], M[3]) != positional  # the two "the"s
    diffs = W.repeated_word_rows(s.tokens, s.X)
    assert [(w, i, j) for w, i, j, _ in diffs] == [("the", 0, 3), ("dog", 1, 4)]
    assert all((d > 0) == positional for *_, d in diffs)


# --- item 12: what a cell holds -----------------------------------------------------------------------------
@pytest.mark.parametrize(("cell", "value", "problem"), [
    ("0.5", 0.5, None), (" -2 ", -2.0, None), ("0,5", 0.5, None), (3.0, 3.0, None),
    ("", None, "is blank"), (None, None, "is blank"), ("   ", None, "is blank"),
    ("abc", None, "holds `abc`, which is not a number"), ("1,2,3", None, "which is not a number"),
    ("inf", None, "not a finite number"), ("nan", None, "not a finite number"), ("1e9", None, "beyond"),
    ("`x`", None, "holds `` `x` ``, which is not a number"),
])
def test_a_cell_is_a_number_blank_or_not_a_number(cell, value, problem):
    got, err = W.parse_cell(cell)
    assert got == value
    assert (err is None) if problem is None else (problem in err)


def test_parse_matrix_names_the_cell():
    values, problems = W.parse_matrix([["1", "x"], ["", "2"]], ["a", "b"], ["dim 0", "dim 1"], "X")
    assert problems == ["X: the cell in row a, column dim 1 holds `x`, which is not a number",
                        "X: the cell in row b, column dim 0 is blank"]
    assert values[0, 0] == 1 and values[1, 1] == 2 and np.isnan(values[0, 1])
    assert W.cell_text(0.1) == "0.1" and W.cell_text(2.0) == "2"


def test_cells_are_written_again_in_the_new_language():
    """After a switch to Portuguese the editors show 0,1 where English showed 0.1; text that is no number stays."""
    cells = [["0.1", "2", "abc"], ["", "0,25", "-1.5"]]
    with i18n.using("pt"):
        assert W.cells_in_language(cells) == [["0,1", "2", "abc"], ["", "0,25", "-1,5"]]
    assert W.cells_in_language([["0,1", "0.5", None]]) == [["0.1", "0.5", None]]


def test_the_claim_names_the_scores_the_softmax_gets_when_the_division_is_off():
    """With ÷√d_k switched off the caption speaks of QKᵀ itself (its variance), not of the scaled scores."""
    from explorer.lessons.walkthrough.model import ScaleStory

    common = dict(n=6, d_k=4, var_q=1.0, var_k=1.0, raw_var=4.2, scaled_var=1.05, top_raw=0.6, top_scaled=0.3,
                  row_sum_error=0.0)
    on, off = ScaleStory(scaled=True, **common), ScaleStory(scaled=False, **common)
    assert "scaled scores' variance is 1.050: near 1" in on.claim_line()
    assert "switched off" in off.claim_line() and "variance 4.200: well above 1" in off.claim_line()
    assert "scaled scores' variance" not in off.claim_line()


def test_computed_runs_the_sentences_layer_or_the_lessons_hand_written_example():
    s = sentence("The cat sat on the mat")
    steps, weights, labels, tokens = W.computed(s)
    np.testing.assert_array_equal(steps.output, s.layer().steps(s.X).output)  # the layer every lesson runs
    assert labels == settings.token_labels(s.tokens) and tokens == s.tokens
    np.testing.assert_array_equal(weights["W_q"], s.layer().W_q)
    raw, _, _, _ = W.computed(s, scaled=False)
    np.testing.assert_array_equal(raw.scaled_scores, raw.scores)  # nothing divided by √d_k
    other, w_unit, _, _ = W.computed(s, init="unit-variance")
    assert not np.array_equal(w_unit["W_q"], weights["W_q"])
    ex = A.PIPELINE_EXAMPLE
    lesson = W.LessonExample(ex.X, ex.W_q, ex.W_k, ex.W_v)
    got, _, _, lesson_tokens = W.computed(lesson, init="unit-variance")  # the example keeps its own weights
    np.testing.assert_allclose(got.output, A.attention_steps(ex.X, ex.W_q, ex.W_k, ex.W_v).output)
    assert lesson_tokens == tuple(ex.tokens)


def test_downloads_hold_the_pages_numbers_with_english_columns():
    import json

    ex = A.PIPELINE_EXAMPLE
    lesson = W.LessonExample(ex.X, ex.W_q, ex.W_k, ex.W_v)
    steps = A.attention_steps(ex.X, ex.W_q, ex.W_k, ex.W_v)
    with i18n.using("pt"):
        out = W.csv(lesson, "lesson", True, "output")
        data = json.loads(W.scenario_json(lesson, "lesson", True, {"n": 3}))
    assert out.splitlines()[0] == "," + ",".join(f"dim {j}" for j in range(steps.output.shape[1]))
    np.testing.assert_allclose(data["results"]["output"], steps.output)
    assert data["parameters"] == {"n": 3} and data["inputs"]["X"] == np.asarray(ex.X).tolist()
    assert i18n.scientific(1.1e-16) == "1.1e-16"
    with i18n.using("tr"):
        assert i18n.scientific(1.1e-16) == "1,1e-16"


def test_downloads_stay_machine_readable_in_every_language():
    ex = A.PIPELINE_EXAMPLE
    source = W.LessonExample(ex.X, ex.W_q, ex.W_k, ex.W_v)
    params = {"input": "lesson pipeline example", "d_model": 4, "d_k": 4, "d_v": 4}
    files = {}
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            files[lang] = (W.csv(source, "lesson", True, "output"),
                           W.scenario_json(source, "lesson", True, params))
    assert files["pt"] == files["tr"] == files["en"]
    csv, scenario = files["tr"]
    assert csv.splitlines()[0] == ",dim 0,dim 1,dim 2,dim 3" and "," in csv and re.search(r"\d\.\d", csv)
    assert set(json.loads(scenario)["results"]) >= {"attention_weights", "scaled_scores", "output"}


def test_chart_words_carry_the_languages_letters():
    """Turkish ı/ğ and Portuguese ç/õ reach the charts' titles and axes as written (Plotly escapes nothing of it)."""
    from explorer.shell import charts

    z, labels = np.eye(2), ["a (0)", "b (1)"]
    with i18n.using("tr"):
        weights = charts.heatmap(z, labels, labels, title=draw._("attention weights"))
        x = charts.heatmap(z, labels, ["dim 0", "dim 1"], kind="diverging", row_name=draw._("token"),
                           col_name=draw._("dim"), title="X")
        q_title = "Q: " + draw._("what am I looking for?")
    with i18n.using("pt"):
        scores = charts.heatmap(z, labels, labels, kind="diverging", title=draw._("scores QKᵀ"),
                                colorbar_title=draw._("score"))
    assert weights.layout.title.text == "dikkat ağırlıkları" and x.layout.xaxis.title.text == "boyut"
    assert q_title == "Q: ne arıyorum?"
    assert scores.layout.title.text == "pontuações QKᵀ" and scores.data[0].colorbar.title.text == "pontuação"


def test_the_embedding_claim_checks_the_copies_of_a_word():
    plain = W.embedding_claim(sentence("the dog chased the dog"), "auto")
    assert plain.startswith("Embeddings: per-token (auto: a sentence of your own)")
    assert plain.endswith("Here `the` (0) and (3), `dog` (1) and (4): identical rows.")
    moved = W.embedding_claim(sentence("the dog chased the dog", positional=True), "per-token")
    assert "(chosen in the sidebar)" in moved and "With positional encoding added, copies differ" in moved
    s = sentence("the dog chased the dog", embedding="lesson")  # the lesson's rows: copies get different rows
    lesson, diff = W.embedding_claim(s, "lesson"), max(d for *_w, d in W.repeated_word_rows(s.tokens, s.X))
    assert lesson.startswith("Embeddings: the lesson's random rows (chosen in the sidebar)") and diff > 0
    assert lesson.endswith(f"Here `the` (0) and (3), `dog` (1) and (4) differ by up to {W.fmt(diff, 3)} per entry "
                           "of X.")
    assert W.embedding_claim(sentence("a b c"), "auto").endswith("rows of X, Q, K and V.")  # no copies: no check
    assert W.embedding_claim(sentence("The cat sat on the mat"), "auto").startswith(
        "Embeddings: the lesson's random rows (auto: this is the lesson's sentence)")
    many = W.embedding_claim(sentence("a b c d a b c d"), "auto")
    assert "(and 1 more copy)" in many and "identical rows" in many
    with i18n.using("tr"):
        assert W.embedding_claim(sentence("the dog chased the dog"), "auto") != plain
