"""AppTest of the check-yourself page: right and wrong answers, feedback, score, retry, live reveals."""

import base64
import json
import re

import numpy as np
import pytest

import attention as A
from explorer.lessons.quiz import model as quiz
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figures, lesson_page
from tests.lessons.test_languages import check_every_language


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
        assert len(ok) == 1 and not bad and q.explain(q.answer) in ok[0], qid
        assert score(at) == "### Score: 1 / 1"
        at.button(key=f"quiz_{qid}_retry").click().run()
        assert feedback(at) == ([], []) and score(at) == "### Score: 0 / 0"
        assert at.radio(key=f"quiz_{qid}_answer").value is None  # the answer was cleared
        wrong = next(o for o in q.options if o != q.answer)
        answer_choice(at, qid, wrong)
        ok, bad = feedback(at)
        assert not ok and len(bad) == 1 and q.explain(wrong) in bad[0] and q.label(q.answer) in bad[0], qid
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


# --- in every language: every state a learner reaches by answering (tests/lessons/test_languages.py checks the
# manifest's states). AppTest sends a choice widget's value as the label its format_func gives in the *test's*
# thread, so the page's language is made the test's for the answer (the page formats its options in the run's
# language).

PAGE = "quiz"
LANGS = ("pt", "tr")
QIDS = ("order", "scale", "qk", "head", "causal", "cost", "topkey", "growth")
CHECKS = {qid: f"quiz_{qid}_check" for qid in QIDS}


def answer(at, lang: str, qid: str, value):
    """Answer question ``qid`` with ``value`` (a choice's code, the order's codes, a width, a key position)."""
    with i18n.using(lang):
        if qid == "order":
            for p, code in enumerate(value, start=1):
                at.selectbox(key=f"quiz_order_{p}").set_value(code)
        elif qid == "head":
            at.number_input(key="quiz_head_answer").set_value(value)
        elif qid == "topkey":
            at.selectbox(key="quiz_topkey_answer").set_value(value)
        else:
            at.radio(key=f"quiz_{qid}_answer").set_value(value)
        at.button(key=CHECKS[qid]).click().run()
    assert_clean(at)
    return at


def answer_all(at, lang: str, plan: dict):
    for qid, value in plan.items():
        answer(at, lang, qid, value)
    return at


def retry(at, lang: str, *qids: str):
    with i18n.using(lang):
        for qid in qids:
            at.button(key=f"quiz_{qid}_retry").click().run()
    assert_clean(at)
    return at


RIGHT = {"order": list(quiz.STEPS), "head": 64, "topkey": 4, "growth": "up",
         **{qid: q.answer for qid, q in quiz.CHOICES.items()}}  # the lesson's sentence: "cat" attends most to "the"


WRONG = {"order": [quiz.STEPS[0]] * 5, "head": 65, "topkey": 0, "growth": "down",  # order: repeated and missing steps
         "scale": "sum_to_one", "qk": "qv", "causal": "self", "cost": "linear"}


WRONG_OTHERS = {"order": list(quiz.STEPS_SHOWN), "head": 4096, "topkey": 5, "growth": "same",  # no repeats, multiplies
                "scale": "values", "qk": "qkv", "causal": "padding", "cost": "constant"}


def empty_checks(at, lang: str):
    """Every question's "Check" pressed with nothing chosen: each hint (one shows per press; the rest are set)."""
    with i18n.using(lang):
        at.button(key=CHECKS["scale"]).click().run()
    for qid in QIDS:
        at.session_state[f"quiz_{qid}_empty"] = True
    at.run()
    assert len(at.warning) == len(QIDS), [w.value for w in at.warning]
    return at


def changed_sidebar(at, lang: str):
    answer_all(at, lang, {"topkey": 1, "growth": "up"})
    at.session_state["seed"] = 3
    at.run()
    assert len(at.info) == 2, [i.value for i in at.info]  # "the sidebar changed" for both reveals
    return at


HOSTILE = "zebra42 **bold** :red[x] <b>y</b> 😀 [link](x)"


# Every state a learner reaches with its own text: (session, what is done) -> the page to compare; with the English
# page's score and a few words that prove the state's branches were reached.
LANGUAGE_STATES = {
    "before answering, every hint": ({}, empty_checks),
    "all right": ({}, lambda at, lang: answer_all(at, lang, RIGHT)),
    "all wrong": ({}, lambda at, lang: answer_all(at, lang, WRONG)),
    "all wrong, the other options": ({}, lambda at, lang: answer_all(at, lang, WRONG_OTHERS)),
    "right, retried, then wrong": ({}, lambda at, lang: answer_all(
        retry(answer_all(at, lang, RIGHT), lang, *QIDS), lang, {"qk": "kv", "head": 512, "growth": "same"})),
    "retried, nothing answered": ({}, lambda at, lang: retry(answer_all(at, lang, RIGHT), lang, *QIDS)),
    "the sidebar changed after answering": ({}, changed_sidebar),
    "one token (one key, singulars)": ({"sentence": "hello"}, lambda at, lang: answer_all(
        at, lang, {"topkey": 0, "growth": "same", "head": 8, "order": list(quiz.STEPS)})),
    "tied keys, right": ({"sentence": "a a a", "embedding": "per-token"}, lambda at, lang: answer_all(
        at, lang, {"topkey": 1, "head": 0})),
    "tied keys, wrong (none wins)": ({"sentence": "a a a b", "embedding": "per-token"}, lambda at, lang: answer_all(
        at, lang, {"topkey": 3, "head": -64})),
    "no sentence": ({"sentence": ""}, lambda at, lang: at),
    "a hostile sentence": ({"sentence": HOSTILE}, lambda at, lang: answer_all(at, lang, {"topkey": 0, "qk": "qk"})),
}


REACHED = {
    "before answering, every hint": ((0, 0), ["Pick an answer first.", "Type a number first."]),
    "all right": ((8, 8), ["**Right.** The key at position 4", "**Right.** Measured over 512"]),
    "all wrong": ((0, 8), ["Chosen more than once", "Missing:", "65 is not d_model / n_heads", "goes to position 4",
                           "**Not quite** — it goes up"]),
    "all wrong, the other options": ((0, 8), ["Step 1 should be", "That multiplies", "**Not quite** — it goes up"]),
    "right, retried, then wrong": ((0, 3), ["whole model", "Keys are compared with queries"]),
    "retried, nothing answered": ((0, 0), []),
    "the sidebar changed after answering": ((1, 2), ["The sidebar changed since you answered"]),
    "one token (one key, singulars)": ((3, 4), ["With a single key", "number of heads", "1 key each"]),
    "tied keys, right": ((1, 2), ["(tied with positions", "positive whole number"]),
    "tied keys, wrong (none wins)": ((0, 2), ["(tied with positions", "positive whole number (-64 is not)"]),
    "no sentence": (None, ["Type a sentence in the sidebar"]),
    "a hostile sentence": ((1, 2), ["**Right.** The score of query i"]),
}


def score_pair(at) -> tuple[int, int]:
    """The score box's ``right / answered`` (its heading is in the page's language)."""
    text = next(m.value for m in at.markdown if m.value.startswith("### "))
    right, answered = re.fullmatch(r"### \w+: (\d+) / (\d+)", text).groups()
    return int(right), int(answered)


def grades(at) -> tuple[int, int]:
    return len(at.success), len(at.error)


def table_words(at) -> set[str]:
    """Column names and text cells of the page's tables that are words (tokens and numbers aside)."""
    out = set()
    for frame in at.main.dataframe:
        for value in [*frame.value.columns, *(v for col in frame.value.columns for v in frame.value[col])]:
            if isinstance(value, str) and re.search(r"[^\W\d_]{3,}", value) and not re.fullmatch(r".+ \(\d+\)", value):
                out.add(value)
    return out - {"d_k"}


def mark(cell: str) -> str | bool:
    """A marks column's cell: ✓ or ✗ as it is, any other text as whether there is one."""
    return cell if cell in ("✓", "✗") else bool(cell)


@pytest.mark.slow
def test_answers_given_in_portuguese_keep_their_grades_in_turkish():
    plan = {"scale": "spread", "qk": "qv", "order": list(quiz.STEPS), "head": 4096, "topkey": 0, "growth": "up"}
    at = answer_all(app_at(PAGE, query={"lang": "pt"}), "pt", plan)
    assert at.query_params["lang"] == "pt"
    pt_score, pt_grades = score_pair(at), grades(at)
    assert pt_score == (3, 6) and pt_grades == (3, 3)
    at.selectbox(key="_lang_choice").set_value("tr").run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.title[0].value == "Kendini sına"
    assert score_pair(at) == pt_score and grades(at) == pt_grades
    tr = answer_all(app_at(PAGE, query={"lang": "tr"}), "tr", plan)  # the same answers given in Turkish
    assert [s.value for s in at.success] == [s.value for s in tr.success]
    assert [e.value for e in at.error] == [e.value for e in tr.error]  # feedback in Turkish now, same grades
    assert "**Sorgular (queries) ve değerler (values)** ← yanıtınız" in " ".join(m.value for m in at.markdown)
    assert any(m.value == "Tahmininiz: **Artar**" for m in at.markdown)
    portuguese = answer_all(app_at(PAGE, query={"lang": "pt"}), "pt", plan)
    assert english_left(portuguese, at) == []  # no Portuguese sentence left after the switch (the same checker)
    answer(at, "tr", "causal", "future")  # a question still open is answered in the new language
    assert score_pair(at) == (4, 7)
    at.button(key="quiz_qk_retry").click().run()
    assert score_pair(at) == (4, 6) and at.radio(key="quiz_qk_answer").value is None  # qk was the wrong one


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_sidebar():
    at = app_at(PAGE, query={"lang": "tr", "seed": "7", "d_k": "8"})
    assert_clean(at)
    assert not at.warning and at.query_params["lang"] == "tr" and at.query_params["seed"] == "7"
    answer(at, "tr", "growth", "up")
    assert at.query_params["lang"] == "tr" and at.query_params["d_k"] == "8"
    assert any("d_k = 8" in m.value and "**128**" in m.value for m in at.markdown)  # question 8, from the link's d_k


@pytest.mark.slow
@pytest.mark.parametrize("state", list(LANGUAGE_STATES))
def test_every_state_is_written_in_every_language_with_the_same_grades(state):
    session, act = LANGUAGE_STATES[state]
    runs = check_every_language(PAGE, session=session, act=act)
    en = runs["en"]
    expected_score, words = REACHED[state]
    text = "\n".join(e.value for kind in ("markdown", "success", "error", "warning", "info") for e in getattr(en, kind))
    assert expected_score is None or score_pair(en) == expected_score, score_pair(en)
    assert [w for w in words if w not in text] == []  # the state's branches were reached
    for lang in LANGS:
        at = runs[lang]
        assert not table_words(en) & table_words(at)  # table headers and text cells are translated too
        for kind in ("markdown", "success", "error", "info", "warning", "caption"):  # a visitor's text stays text
            assert not [e.value for e in getattr(at, kind) if "zebra42" in e.value or ":red[x]" in e.value], kind
        if state == "no sentence":
            assert len(at.info) == 1 and "*The cat sat on the mat*" in at.info[0].value
            continue
        assert score_pair(at) == score_pair(en) and grades(at) == grades(en)  # the same grade, by code
        for table_en, table in zip(en.main.dataframe, at.main.dataframe, strict=True):
            for col_en, col in zip(table_en.value.columns, table.value.columns, strict=True):
                if col_en == "":  # the order's ✓/✗ marks, or the row of the learner's prediction
                    assert [mark(v) for v in table.value[col]] == [mark(v) for v in table_en.value[col_en]]


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_answered_numbers_have_a_decimal_comma_and_formulas_a_point(lang):
    at = answer_all(app_at(PAGE, query={"lang": lang}), lang, RIGHT)
    markdown = " ".join(m.value for m in at.main.markdown)
    assert "√4 = 2,000" in markdown  # question 2's reveal, on the lesson's sentence
    feedback = " ".join(s.value for s in at.success)
    assert re.search(r"\d,\d{4}", feedback) and re.search(r"\d,\d{3}", feedback)  # weights and scaled scores
    assert re.search(r"\d\.\d", " ".join(x.value for x in at.main.latex))  # the weighted sum written out
    frame = at.main.dataframe[-1].value  # question 8's table: the language's decimal comma
    assert all(re.fullmatch(r"\d,\d{4}", v) for v in frame.iloc[:, 1])
