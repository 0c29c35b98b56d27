"""AppTest of the check-yourself page: right and wrong answers, feedback, score, retry, live reveals."""

import base64
import json

import numpy as np
import pytest

import attention as A
from explorer.lessons.quiz import model as quiz
from tests.apptest_utils import app_at, assert_clean, figures, lesson_page


def array(values) -> np.ndarray:
    """A figure's data array, plain list or Plotly's base64 typed array (``{"dtype", "bdata"}``)."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
    return np.array(values, dtype=float)


def score(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("### Score"))


def feedback(at) -> tuple[list[str], list[str]]:
    return [s.value for s in at.success], [e.value for e in at.error]


def answer_choice(at, qid: str, option: str):
    at.radio(key=f"quiz_{qid}_answer").set_value(option)
    at.button(key=f"quiz_{qid}_check").click().run()
    assert_clean(at)
    return at


def core_weights(sentence: str, d_model: int, d_k: int, seed: int) -> np.ndarray:
    """The lesson's recipe, straight from the core (lesson embeddings, no positional encoding)."""
    X = A.embed_tokens(A.tokenize(sentence), d_model, seed)
    return A.SelfAttention(d_model, d_k, d_k, seed=seed).forward(X)[1]


@pytest.fixture()
def at():
    at = app_at("quiz")
    assert_clean(at)
    return at


def test_nothing_is_revealed_before_check(at):
    assert score(at) == "### Score: 0 / 0"
    assert feedback(at) == ([], [])
    assert list(figures(at)) == ["quiz_fig_clue"]  # the clue only: no weights, no reveal
    for qid in ("scale", "qk", "causal", "cost", "growth"):
        assert at.radio(key=f"quiz_{qid}_answer").value is None
    # "Check" with no answer: a hint, no grade
    at.button(key="quiz_scale_check").click().run()
    assert any("Pick an answer" in w.value for w in at.warning)
    assert score(at) == "### Score: 0 / 0" and feedback(at) == ([], [])


@pytest.mark.slow
def test_choice_right_then_retry_then_wrong(at):
    for qid, q in quiz.CHOICES.items():
        answer_choice(at, qid, q.answer)
        ok, bad = feedback(at)
        assert len(ok) == 1 and not bad and q.why[q.answer] in ok[0], qid
        assert score(at) == "### Score: 1 / 1"
        at.button(key=f"quiz_{qid}_retry").click().run()
        assert feedback(at) == ([], []) and score(at) == "### Score: 0 / 0"
        assert at.radio(key=f"quiz_{qid}_answer").value is None  # the answer was cleared
        wrong = next(o for o in q.options if o != q.answer)
        answer_choice(at, qid, wrong)
        ok, bad = feedback(at)
        assert not ok and len(bad) == 1 and q.why[wrong] in bad[0] and q.label(q.answer) in bad[0], qid
        assert score(at) == "### Score: 0 / 1"
        at.button(key=f"quiz_{qid}_retry").click().run()


def test_live_numbers_in_choice_feedback(at):
    answer_choice(at, "scale", quiz.SCALE.answer)
    text = " ".join(m.value for m in at.markdown)
    assert "./scaling?scale_d_k=256" in text and "divided by √4 = 2.000" in text
    answer_choice(at, "causal", quiz.CAUSAL.answer)
    assert any("15 of the 36" in m.value for m in at.markdown)
    fig = figures(at)["quiz_fig_causal"]
    z = array(fig["data"][0]["z"])
    assert np.all(np.isnan(np.triu(z, 1))[np.triu_indices(6, 1)])  # future keys blanked
    answer_choice(at, "cost", quiz.COST.answer)
    frame = at.dataframe[-1].value
    assert list(frame["scores n²"]) == [36, 144, 576, 2304]


def test_order_right_and_wrong(at):
    for p, step in enumerate(quiz.STEPS, start=1):
        at.selectbox(key=f"quiz_order_{p}").set_value(step)
    at.button(key="quiz_order_check").click().run()
    assert_clean(at)
    ok, bad = feedback(at)
    assert len(ok) == 1 and not bad and score(at) == "### Score: 1 / 1"
    assert any("weight" in str(d.value.columns) for d in at.dataframe)  # the word's own numbers
    at.button(key="quiz_order_retry").click().run()
    assert at.selectbox(key="quiz_order_1").value is None
    for p, step in enumerate(quiz.STEPS_SHOWN, start=1):
        at.selectbox(key=f"quiz_order_{p}").set_value(step)
    at.button(key="quiz_order_check").click().run()
    ok, bad = feedback(at)
    assert not ok and "Step 1 should be" in bad[0] and score(at) == "### Score: 0 / 1"
    # an incomplete order is not graded
    at.button(key="quiz_order_retry").click().run()
    at.selectbox(key="quiz_order_1").set_value(quiz.STEPS[0])
    at.button(key="quiz_order_check").click().run()
    assert any("every position" in w.value for w in at.warning) and score(at) == "### Score: 0 / 0"


def test_head_width_right_and_wrong(at):
    at.number_input(key="quiz_head_answer").set_value(64)
    at.button(key="quiz_head_check").click().run()
    ok, bad = feedback(at)
    assert "512 / 8 = 64" in ok[0] and not bad
    at.button(key="quiz_head_retry").click().run()
    at.number_input(key="quiz_head_answer").set_value(4096)
    at.button(key="quiz_head_check").click().run()
    ok, bad = feedback(at)
    assert not ok and "multiplies" in bad[0] and score(at) == "### Score: 0 / 1"


def test_head_width_negative_answer_is_explained(at):
    at.number_input(key="quiz_head_answer").set_value(-64)
    at.button(key="quiz_head_check").click().run()
    ok, bad = feedback(at)
    assert not ok and "positive whole number" in bad[0]
    assert_clean(at)


@pytest.mark.parametrize("session, query", [
    ({}, 1),  # the lesson's sentence, query "cat"
    # a typed sentence gets per-token embeddings by default (issue #18 item 3): ask for the lesson's rows
    ({"sentence": "a dog chased the red ball home", "seed": 7, "d_model": 12, "d_k": 6, "embedding": "lesson"}, 4),
])
@pytest.mark.slow
def test_top_key_answer_is_what_the_core_computes(session, query):
    at = app_at("quiz", session=session)
    sentence = session.get("sentence", "The cat sat on the mat")
    w = core_weights(sentence, session.get("d_model", 8), session.get("d_k", 4), session.get("seed", 42))
    best = int(np.argmax(w[query]))
    at.selectbox(key="quiz_topkey_query").select_index(query).run()
    clue = array(figures(at)["quiz_fig_clue"]["data"][0]["z"])
    assert clue.shape == (1 + len(w), session.get("d_k", 4))
    at.selectbox(key="quiz_topkey_answer").set_value(best)
    at.button(key="quiz_topkey_check").click().run()
    assert_clean(at)
    ok, bad = feedback(at)
    assert len(ok) == 1 and not bad and f"position {best}" in ok[0]
    bars = figures(at)["quiz_fig_topkey"]["data"][0]
    np.testing.assert_allclose(array(bars["y"]), w[query], atol=1e-12)
    at.button(key="quiz_topkey_retry").click().run()
    assert "quiz_fig_topkey" not in figures(at)
    wrong = (best + 1) % len(w)
    at.selectbox(key="quiz_topkey_answer").set_value(wrong)
    at.button(key="quiz_topkey_check").click().run()
    ok, bad = feedback(at)
    assert not ok and f"goes to position {best}" in bad[0]


def test_growth_answer_is_what_the_core_computes(at):
    stats = A.saturation_sweep([4, 64], n_keys=6, n_samples=512, seed=42)
    expected = quiz.growth_answer(*stats.max_weight_unscaled)
    assert expected == "up"  # the option's code (shown as "It goes up")
    answer_choice(at, "growth", expected)
    ok, bad = feedback(at)
    assert len(ok) == 1 and not bad
    frame = at.dataframe[-1].value
    np.testing.assert_allclose(frame["mean top weight, not scaled"], stats.max_weight_unscaled)
    assert {t["name"] for t in figures(at)["quiz_fig_growth"]["data"]} >= {"d_k = 64, not scaled"}
    assert any("(./scaling?scale_d_k=64&scale_n_keys=6&scale_seed=42)" in m.value for m in at.markdown)
    at.button(key="quiz_growth_retry").click().run()
    assert "quiz_fig_growth" not in figures(at)
    answer_choice(at, "growth", "down")
    ok, bad = feedback(at)
    assert not ok and "goes up" in bad[0]


@pytest.mark.slow
@pytest.mark.parametrize("n_tokens", [1, 33, 40, 64])  # 6: test_growth_answer_is_what_the_core_computes
def test_growth_link_opens_the_scaling_page_without_a_warning(n_tokens):
    """The reveal's link holds values the scaling page accepts (it once gave scale_n_keys=40: "2 to 32")."""
    at = app_at("quiz", session={"sentence": " ".join(f"w{i}" for i in range(n_tokens))})
    answer_choice(at, "growth", "up")
    links = [m.value for m in at.markdown if "Sweep d_k yourself" in m.value]
    assert len(links) == 1
    query = links[0].split("(./scaling?", 1)[1].split(")", 1)[0]
    params = dict(p.split("=") for p in query.split("&"))
    assert params["scale_n_keys"] == str(min(max(n_tokens, 2), 32)) and params["scale_d_k"] == "64"
    page = app_at("scaling", query=params)
    assert_clean(page)
    assert not page.warning, [w.value for w in page.warning]
    assert page.slider(key="scale_n_keys").value == int(params["scale_n_keys"])


@pytest.mark.slow
def test_score_is_kept_across_pages_and_reset(at):
    answer_choice(at, "qk", quiz.QK.answer)
    answer_choice(at, "cost", "linear")
    assert score(at) == "### Score: 1 / 2"
    at.switch_page(lesson_page("walkthrough")).run()
    at.switch_page(lesson_page("quiz")).run()
    assert score(at) == "### Score: 1 / 2"
    at.button(key="quiz_reset").click().run()
    assert score(at) == "### Score: 0 / 0" and feedback(at) == ([], [])


@pytest.mark.slow
def test_changed_settings_keep_the_reveal_and_say_so():
    at = app_at("quiz")
    at.selectbox(key="quiz_topkey_answer").set_value(0)
    at.button(key="quiz_topkey_check").click().run()
    at.session_state["seed"] = 3
    at.run()
    assert_clean(at)
    assert any("sidebar changed" in i.value for i in at.info)
    assert "quiz_fig_topkey" in figures(at)


@pytest.mark.slow
def test_tokens_never_reach_markdown():
    at = app_at("quiz", session={"sentence": "zebra42 **bold** :red[x] <b>y</b>"})
    assert_clean(at)
    answer_choice(at, "qk", quiz.QK.answer)
    at.selectbox(key="quiz_topkey_answer").set_value(0)
    at.button(key="quiz_topkey_check").click().run()
    assert_clean(at)
    for kind in ("markdown", "success", "error", "info", "warning", "caption"):
        for el in getattr(at, kind):
            assert "zebra42" not in el.value and "red[" not in el.value, (kind, el.value)
    fig = figures(at)["quiz_fig_topkey"]  # ticks thinned to what a phone holds (issue 18); the hover has every key
    assert "<" not in "".join(fig["layout"]["xaxis"]["ticktext"])
    assert "&lt;" in json.dumps(fig["data"][0]["customdata"]) and "<b>" not in json.dumps(fig["data"][0]["customdata"])


def test_empty_sentence_prompts():
    at = app_at("quiz", session={"sentence": ""})
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)
