"""The check-yourself page in Português and Türkçe (issue 31): nothing of the English page is left in any state a
learner reaches (before answering, right, wrong, retried, every question type and feedback branch), an answer gets
the same grade and the same numbers in every language (numbers in sentences with a decimal comma, formulas with a
point), and answers given in one language keep their grades when the learner switches to another."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from explorer.lessons.quiz import charts as quiz_figures
from explorer.lessons.quiz import model as quiz
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, english_sentences, figures
from tests.lessons.quiz.test_page import array

PAGE = "quiz"
LANGS = ("pt", "tr")
QIDS = ("order", "scale", "qk", "head", "causal", "cost", "topkey", "growth")
CHECKS = {qid: f"quiz_{qid}_check" for qid in QIDS}


# --- answering, in the page's language ----------------------------------------------------------------------------
# AppTest sends a choice widget's value as the label its format_func gives in the *test's* thread, so the page's
# language is made the test's for the answer (the page formats its options in the run's language).

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
STATES = {
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
ALLOWED = ("The cat sat on the mat",)  # the sidebar's example sentence, quoted in the empty-sentence prompt

_english: dict[str, object] = {}


def english(state: str):
    """The English page in ``state`` (run once per test module)."""
    if state not in _english:
        session, act = STATES[state]
        at = _english[state] = act(app_at(PAGE, session=session), "en")
        expected_score, words = REACHED[state]
        kinds = ("markdown", "success", "error", "warning", "info")
        text = "\n".join(e.value for kind in kinds for e in getattr(at, kind))
        assert expected_score is None or score(at) == expected_score, score(at)
        assert [w for w in words if w not in text] == []
    return _english[state]


def in_language(state: str, lang: str):
    session, act = STATES[state]
    at = act(app_at(PAGE, session=session, query={"lang": lang}), lang)
    assert_clean(at)
    return at


def score(at) -> tuple[int, int]:
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


def as_number(value) -> float:
    """A table cell as a number: English floats as they are, pt/tr floats as the text with the decimal comma."""
    return float(value.replace(",", ".")) if isinstance(value, str) else float(value)


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("state", list(STATES))
def test_no_english_is_left_and_the_grades_and_numbers_are_the_same(state, lang):
    en, at = english(state), in_language(state, lang)
    assert english_left(en, at, allowed=ALLOWED) == []
    words_en, words = table_words(en), table_words(at)
    assert not words_en & words, words_en & words  # table headers and text cells are translated too
    for kind in ("markdown", "success", "error", "info", "warning", "caption"):  # a visitor's text stays text
        assert not [e.value for e in getattr(at, kind) if "zebra42" in e.value or ":red[x]" in e.value], kind
    if state == "no sentence":
        assert len(at.info) == 1 and "*The cat sat on the mat*" in at.info[0].value
        return
    assert score(at) == score(en) and grades(at) == grades(en)  # the same grade, by code, in every language
    figs_en, figs = figures(en), figures(at)
    assert set(figs) == set(figs_en)
    for key, fig_en in figs_en.items():
        for trace_en, trace in zip(fig_en["data"], figs[key]["data"], strict=True):
            for axis in ("y", "z"):
                if trace_en.get(axis) is not None:
                    np.testing.assert_array_equal(array(trace_en[axis]), array(trace[axis]), err_msg=f"{key} {axis}")
    assert len(at.main.dataframe) == len(en.main.dataframe)
    for table_en, table in zip(en.main.dataframe, at.main.dataframe, strict=True):
        frame_en, frame = table_en.value, table.value
        assert frame.shape == frame_en.shape
        for col_en, col in zip(frame_en.columns, frame.columns, strict=True):
            if pd.api.types.is_numeric_dtype(frame_en[col_en]):
                np.testing.assert_allclose([as_number(v) for v in frame[col]], frame_en[col_en], atol=5e-5)
            elif col_en == "":  # the order's ✓/✗ marks, or the row of the learner's prediction
                assert [mark(v) for v in frame[col]] == [mark(v) for v in frame_en[col_en]]


@pytest.mark.parametrize("lang", LANGS)
def test_every_feedback_branch_is_written_in_the_language(lang):
    """The grader's every sentence (each option of each question, right and wrong, every head-width hint, the order's
    repeats and omissions, ties, each growth outcome) has its own translation: no English sentence is left."""
    gettext = i18n.translator(quiz.__name__)[0]
    tied = quiz.TopKeyReveal(0, np.zeros(3), np.array([0.5, 0.5, 0.1]), np.array([0.4, 0.4, 0.2]), (0, 1))
    three = quiz.TopKeyReveal(0, np.zeros(4), np.array([0.5, 0.5, 0.5, 0.1]), np.array([0.3, 0.3, 0.3, 0.1]),
                              (0, 1, 2))

    def growth(answer_code: str, n_keys: int = 6, scaled=(0.3, 0.31)) -> quiz.GrowthReveal:
        top = {"up": (0.5, 0.9), "down": (0.9, 0.5), "same": (0.5, 0.5)}[answer_code]
        w = np.array([1.0])
        return quiz.GrowthReveal((4, 64), n_keys, 512, 42, (1.97, 7.97), top, scaled, w, w, w, answer_code)

    def feedback() -> list[str]:
        out = []
        for q in quiz.CHOICES.values():
            out += [quiz.grade_choice(q, code).message for code in q.options]
            out.append(gettext(q.prompt))
            out += [q.label(code) for code in q.options]
        out += [quiz.grade_order(order).message for order in (quiz.STEPS, quiz.STEPS_SHOWN, [quiz.STEPS[0]] * 5,
                                                               [*quiz.STEPS[:4], quiz.STEPS[3]])]
        out += [quiz.step_label(code) for code in quiz.STEPS]
        out += [quiz.grade_head_width(x).message for x in (64, 0, -3, 4096, 512, 8, 65, 64.5)]
        out += [quiz.grade_top_key(rv, p).message for rv in (tied, three) for p in (0, 1, 2, 3) if p < len(rv.weights)]
        out += [quiz.grade_growth(growth(a, n), p).message for a in quiz.GROWTH_OPTIONS for n in (1, 6)
                for p in quiz.GROWTH_OPTIONS]
        out += [quiz.grade_growth(growth("up", scaled=(0.1, 0.9)), "up").message]  # the scaled weights move as much
        out += [quiz.growth_label(code) for code in quiz.GROWTH_OPTIONS]
        return out

    english_texts = feedback()
    with i18n.using(lang):
        texts = feedback()
    assert len(texts) == len(english_texts) and len(set(texts)) == len(set(english_texts))
    other = "\n".join(texts)
    assert sorted(s for s in english_sentences(english_texts) if s in other) == []
    assert [quiz.grade_growth(growth(a), p).correct for a in quiz.GROWTH_OPTIONS for p in quiz.GROWTH_OPTIONS] == [
        a == p for a in quiz.GROWTH_OPTIONS for p in quiz.GROWTH_OPTIONS]  # graded by code, whatever the language
    with i18n.using(lang):
        tie = quiz.grade_top_key(three, 2).message
        assert re.search(r"0,3000", tie) and "1; 2" not in tie  # positions are whole numbers: a comma list
        assert "64,5" in quiz.grade_head_width(64.5).message  # a non-integer answer with the decimal comma


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_numbers_in_sentences_have_a_decimal_comma_and_formulas_a_point(lang):
    at = answer_all(app_at(PAGE, query={"lang": lang}), lang, RIGHT)
    markdown = " ".join(m.value for m in at.main.markdown)
    assert "√4 = 2,000" in markdown  # question 2's reveal, on the lesson's sentence
    feedback = " ".join(s.value for s in at.success)
    assert re.search(r"\d,\d{4}", feedback) and re.search(r"\d,\d{3}", feedback)  # weights and scaled scores
    sentences = re.sub(r"`[^`]*`|\]\([^)]*\)", " ", " ".join([markdown, feedback, *(c.value for c in at.main.caption)]))
    assert not re.search(r"\d\.\d", sentences), sentences  # never a decimal point in a sentence
    formulas = " ".join(x.value for x in at.main.latex)
    assert re.search(r"\d\.\d", formulas) and not re.search(r"\d,\d", formulas)  # the weighted sum written out
    growth = figures(at)["quiz_fig_growth"]
    assert growth["layout"]["separators"] == ",."
    assert all(re.fullmatch(r"\d,\d{4}", v) for v in growth["data"][0]["customdata"])  # the hover's weights
    frame = at.main.dataframe[-1].value  # question 8's table: the language's decimal comma, same numbers
    assert all(re.fullmatch(r"\d,\d{4}", v) for v in frame.iloc[:, 1])


@pytest.mark.slow
def test_answers_given_in_portuguese_keep_their_grades_in_turkish():
    plan = {"scale": "spread", "qk": "qv", "order": list(quiz.STEPS), "head": 4096, "topkey": 0, "growth": "up"}
    at = answer_all(app_at(PAGE, query={"lang": "pt"}), "pt", plan)
    assert at.query_params["lang"] == "pt"
    pt_score, pt_grades = score(at), grades(at)
    assert pt_score == (3, 6) and pt_grades == (3, 3)
    at.selectbox(key="_lang_choice").set_value("tr").run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.title[0].value == "Kendini sına"
    assert score(at) == pt_score and grades(at) == pt_grades
    tr = answer_all(app_at(PAGE, query={"lang": "tr"}), "tr", plan)  # the same answers given in Turkish
    assert [s.value for s in at.success] == [s.value for s in tr.success]
    assert [e.value for e in at.error] == [e.value for e in tr.error]  # feedback in Turkish now, same grades
    assert "**Sorgular (queries) ve değerler (values)** ← yanıtınız" in " ".join(m.value for m in at.markdown)
    assert any(m.value == "Tahmininiz: **Artar**" for m in at.markdown)
    portuguese = answer_all(app_at(PAGE, query={"lang": "pt"}), "pt", plan)
    assert english_left(portuguese, at) == []  # no Portuguese sentence left after the switch (the same checker)
    answer(at, "tr", "causal", "future")  # a question still open is answered in the new language
    assert score(at) == (4, 7)
    at.button(key="quiz_qk_retry").click().run()
    assert score(at) == (4, 6) and at.radio(key="quiz_qk_answer").value is None  # qk was the wrong one


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_sidebar():
    at = app_at(PAGE, query={"lang": "tr", "seed": "7", "d_k": "8"})
    assert_clean(at)
    assert not at.warning and at.query_params["lang"] == "tr" and at.query_params["seed"] == "7"
    answer(at, "tr", "growth", "up")
    assert at.query_params["lang"] == "tr" and at.query_params["d_k"] == "8"
    assert any("d_k = 8" in m.value and "**128**" in m.value for m in at.markdown)  # question 8, from the link's d_k


def test_the_charts_words_keep_their_letters():
    with i18n.using("tr"):
        clue = quiz_figures.query_and_keys(np.ones(2), np.ones((2, 2)), "İpek (0)", ["İpek (0)", "ılık (1)"])
        bars = quiz_figures.growth_bars([0.6, 0.4], [0.9, 0.1], [0.55, 0.45], (4, 64))
    assert clue.layout.title.text == "sorgu ve her anahtar (skor = q · k)"
    assert list(clue.layout.yaxis.ticktext) == ["sorgu İpek (0)", "anahtar İpek (0)", "anahtar ılık (1)"]
    assert list(clue.layout.xaxis.ticktext)[0] == "boyut 0" and clue.data[0].colorbar.title.text == "değer"
    assert bars.layout.xaxis.title.text == "ağırlığa göre sıralı anahtarlar (1 = en büyük)"  # ğ, ı, ü
    assert bars.layout.yaxis.title.text == "ağırlık" and bars.layout.title.text == "örneklenen bir sorgunun ağırlıkları"
    assert [t.name for t in bars.data] == ["d_k = 4, ölçeklenmemiş", "d_k = 64, ölçeklenmemiş",
                                           "d_k = 64, 1/√d_k ile ölçekli"]
    assert "%{x}. sıra: %{customdata}" in bars.data[0].hovertemplate and bars.layout.separators == ",."
    assert list(bars.data[0].customdata) == ["0,6000", "0,4000"]
    with i18n.using("pt"):
        clue = quiz_figures.query_and_keys(np.ones(2), np.ones((1, 2)), "ação (0)", ["ação (0)"])
        bars = quiz_figures.growth_bars([0.6, 0.4], [0.9, 0.1], [0.55, 0.45], (4, 64))
    assert clue.layout.title.text == "a consulta e cada chave (pontuação = q · k)"  # ç, ã
    assert list(clue.layout.yaxis.ticktext) == ["consulta ação (0)", "chave ação (0)"]
    assert [t.name for t in bars.data][0] == "d_k = 4, sem escala" and bars.layout.separators == ",."
