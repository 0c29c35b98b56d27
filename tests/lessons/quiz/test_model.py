"""Unit tests of the check-yourself logic (explorer/lessons/quiz/model.py) and its figures (charts.py)."""

import re

import numpy as np
import pytest

import attention as A
from explorer.lessons import lesson
from explorer.lessons.quiz import charts as quiz_figures
from explorer.lessons.quiz import model as quiz
from explorer.lessons.scaling import model as scaling
from explorer.lessons.walkthrough import model as walkthrough
from explorer.shell import i18n
from explorer.shell.textviews import fmt
from tests.apptest_utils import english_sentences


@pytest.mark.parametrize("q", list(quiz.CHOICES.values()), ids=list(quiz.CHOICES))
def test_every_choice_explains_every_option(q):
    assert q.answer in q.options
    right = quiz.grade_choice(q, q.answer)
    assert right.correct and right.message.startswith("**Right.**") and q.explain(q.answer) in right.message
    for wrong in (o for o in q.options if o != q.answer):
        fb = quiz.grade_choice(q, wrong)
        assert not fb.correct and q.explain(wrong) in fb.message and q.label(q.answer) in fb.message
    with pytest.raises(ValueError):
        quiz.grade_choice(q, "not an option")


def test_fixed_answers_match_the_lessons():
    assert quiz.QK.label(quiz.QK.answer) == "The queries and the keys"  # answers are codes, shown by their labels
    assert "j > query position i" in quiz.CAUSAL.label(quiz.CAUSAL.answer) and "after" in quiz.CAUSAL.label("future")
    assert quiz.COST.label(quiz.COST.answer).startswith("Quadratically")
    assert "saturate" in quiz.SCALE.label(quiz.SCALE.answer)


def test_order_grading():
    assert quiz.grade_order(quiz.STEPS).correct
    assert quiz.STEPS_SHOWN != quiz.STEPS and sorted(quiz.STEPS_SHOWN) == sorted(quiz.STEPS)
    swapped = list(quiz.STEPS)
    swapped[3], swapped[2] = swapped[2], swapped[3]  # softmax before scaling
    fb = quiz.grade_order(swapped)
    assert not fb.correct and "Step 3 should be" in fb.message and "Step 4 should be" in fb.message
    assert "Step 1 should be" not in fb.message
    fb = quiz.grade_order([quiz.STEPS[0]] * 5)
    assert "more than once" in fb.message and "Missing" in fb.message
    with pytest.raises(ValueError):
        quiz.grade_order(quiz.STEPS[:4])
    with pytest.raises(ValueError):
        quiz.grade_order([*quiz.STEPS[:4], "dance"])


def test_head_width_is_what_split_heads_gives():
    assert quiz.head_width() == 64 == A.split_heads(np.zeros((3, 512)), 8).shape[-1]
    assert quiz.grade_head_width(64).correct
    assert "multiplies" in quiz.grade_head_width(4096).message
    assert "whole model" in quiz.grade_head_width(512).message
    assert "number of heads" in quiz.grade_head_width(8).message
    assert not quiz.grade_head_width(65).correct
    for bad in (0, -3):
        feedback = quiz.grade_head_width(bad)
        assert not feedback.correct and "positive whole number" in feedback.message
    assert quiz.head_width(12, 3) == 4
    with pytest.raises(ValueError):
        quiz.head_width(10, 3)


def test_top_key_reveal_and_grading():
    steps = A.SelfAttention(8, 4, seed=42).steps(A.embed_tokens(["The", "cat", "sat", "on", "the", "mat"], 8, 42))
    for i in range(6):
        rv = quiz.reveal_top_key(steps, i)
        assert rv.best == (int(np.argmax(steps.weights[i])),)
        np.testing.assert_array_equal(rv.weights, steps.weights[i])
        assert quiz.grade_top_key(rv, rv.best[0]).correct
        wrong = (rv.best[0] + 1) % 6
        fb = quiz.grade_top_key(rv, wrong)
        assert not fb.correct and f"position {rv.best[0]}" in fb.message


def test_top_keys_keeps_ties():
    assert quiz.top_keys([0.2, 0.4, 0.4]) == (1, 2)
    assert quiz.top_keys([1.0]) == (0,)


def test_growth_answer_is_what_the_numbers_show():
    assert quiz.growth_answer(0.5, 0.9) == "up"  # codes, shown as "It goes up" (quiz.growth_label)
    assert quiz.growth_answer(0.9, 0.5) == "down"
    assert quiz.growth_answer(0.5, 0.505) == "same"
    rv = quiz.growth_reveal(4, 6, seed=42, n_samples=256)
    stats = A.saturation_sweep([4, 64], n_keys=6, n_samples=256, seed=42)
    assert rv.d_k == (4, 64)
    np.testing.assert_allclose(rv.top_unscaled, stats.max_weight_unscaled)
    np.testing.assert_allclose(rv.top_scaled, stats.max_weight_scaled)
    assert rv.answer == quiz.growth_answer(*stats.max_weight_unscaled) == "up"
    assert rv.top_unscaled[1] > rv.top_unscaled[0] + 0.1  # the lesson's claim, visible in the numbers
    for w in (rv.example_small_unscaled, rv.example_large_unscaled, rv.example_large_scaled):
        assert w.shape == (6,) and np.isclose(w.sum(), 1) and np.all(np.diff(w) <= 0)
    right = quiz.grade_growth(rv, rv.answer)
    assert right.correct and fmt(rv.top_unscaled[1], 3) in right.message
    assert not quiz.grade_growth(rv, "down").correct
    with pytest.raises(ValueError):
        quiz.grade_growth(rv, "sideways")


def test_live_numbers():
    steps = A.SelfAttention(8, 4, seed=42).steps(A.embed_tokens(list("abcdef"), 8, 42))
    num = walkthrough.scale_story(steps, scaled=True)  # question 2's reveal: the walkthrough's step 4
    assert num.d_k == 4 and np.isclose(num.raw_var / num.scaled_var, 4)
    assert num.top_raw >= num.top_scaled  # dividing flattens the softmax
    dot, score = quiz.score_check(steps, 0, 1)
    assert np.isclose(dot, score)
    rows = quiz.cost_rows(6, 4)
    assert [r["score_entries"] for r in rows] == [36, 144, 576, 2304]
    assert [r["times_first"] for r in rows] == [1, 4, 16, 64]
    assert quiz.causal_counts(6) == (15, 36) and quiz.causal_counts(1) == (0, 1)
    with pytest.raises(ValueError):
        quiz.cost_rows(0, 4)


def test_clue_figure_stacks_query_over_keys_and_escapes():
    q, K = np.array([1.0, 2.0]), np.array([[3.0, 4.0], [5.0, 6.0]])
    fig = quiz_figures.query_and_keys(q, K, "<b>x (0)", ["<b>x (0)", "y (1)"])
    z = np.array(fig.data[0].z, dtype=float)
    np.testing.assert_array_equal(z, [[1, 2], [3, 4], [5, 6]])
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[0] == "query &lt;b&gt;x (0)" and ticks[2] == "key y (1)"
    assert fig.layout.yaxis.autorange == "reversed"
    with pytest.raises(ValueError):
        quiz_figures.query_and_keys(q, K.T[:1], "a", ["a", "b"])


def test_growth_bars():
    fig = quiz_figures.growth_bars([0.6, 0.4], [0.9, 0.1], [0.55, 0.45], (4, 64))
    assert [t.name for t in fig.data] == ["d_k = 4, not scaled", "d_k = 64, not scaled", "d_k = 64, scaled by 1/√d_k"]
    assert list(fig.data[1].y) == [0.9, 0.1] and list(fig.layout.yaxis.range) == [0, 1]
    with pytest.raises(ValueError):
        quiz_figures.growth_bars([0.5, 0.5], [1.0], [0.5, 0.5], (1, 16))


def growth_link(reveal) -> str:
    """The link question 8's reveal shows (``draw.py``: the scaling lesson's declared controls)."""
    import explorer.lessons.scaling
    from explorer.shell import controls
    return controls.link(explorer.lessons.scaling, **quiz.growth_link_values(reveal))


def test_growth_link_opens_the_scaling_page_with_values_it_accepts():
    rv = quiz.growth_reveal(4, 6, seed=42, n_samples=16)
    assert growth_link(rv) == "./scaling?scale_d_k=64&scale_n_keys=6&scale_seed=42"
    for d_k, n_keys in ((4, 40), (4, 33), (4, 64), (6, 1), (128, 6)):  # up to MAX_TOKENS keys, d_k up to 128
        link = growth_link(quiz.growth_reveal(d_k, n_keys, seed=7, n_samples=16))
        path, _, query = link.partition("?")
        params = dict(p.split("=") for p in query.split("&"))
        assert path == f"./{lesson('scaling').url_path}" and params["scale_seed"] == "7", link
        assert int(params["scale_d_k"]) in scaling.D_K_CHOICES, link
        assert scaling.N_KEYS_RANGE[0] <= int(params["scale_n_keys"]) <= scaling.N_KEYS_RANGE[1], link
    # a 40-token sentence: the page's largest key count, not 40 (which the scaling page rejects)
    assert "scale_n_keys=32" in growth_link(quiz.growth_reveal(4, 40, seed=7, n_samples=16))
    assert "scale_d_k=1024" in growth_link(quiz.growth_reveal(128, 6, seed=7, n_samples=16))  # 2048: too wide


def test_growth_with_one_key_stays():
    rv = quiz.growth_reveal(4, 1, seed=0, n_samples=16)
    assert rv.answer == "same" and rv.top_unscaled == (1.0, 1.0)
    assert "single key" in quiz.grade_growth(rv, rv.answer).message


@pytest.mark.parametrize("lang", ["pt", "tr"])
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
