"""The real-model lesson's numbers: the prompt, head statistics, the induction score, the exercise's grading.

Synthetic attention maps check each statistic's definition exactly (which rows, which cells); the
real model (installed here and in CI) checks the lesson's claims on SmolLM2-135M itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import llama
from explorer.lessons.real_model import model as M
from explorer.shell import real_model as rm

L, H = 30, 9


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


def causal(rows: list[list[float]]) -> np.ndarray:
    """A causal map from its lower-triangular rows (row i has i + 1 weights)."""
    n = len(rows)
    w = np.zeros((n, n))
    for i, r in enumerate(rows):
        assert len(r) == i + 1
        w[i, : i + 1] = r
    return w


def heads_of(*maps: np.ndarray) -> np.ndarray:
    """``[1, len(maps), n, n]``: one layer holding the given heads."""
    return np.stack(maps)[None]


def uniform(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]


def test_statistics_follow_their_formulas_on_pure_heads():
    n = 6
    eye = np.eye(n)
    previous = causal([[1]] + [[0] * (i - 1) + [1, 0] for i in range(1, n)])
    sink = causal([[1]] + [[1] + [0] * i for i in range(1, n)])
    stats = M.head_statistics(heads_of(previous, sink, eye, uniform(n)), list(range(n)))
    get = {k: stats.get(k)[0] for k in ("sink", "previous", "self", "entropy", "distance")}
    np.testing.assert_allclose(get["previous"][:3], [1, 0, 0])
    np.testing.assert_allclose(get["previous"][3], np.mean([1 / 3, 1 / 4, 1 / 5, 1 / 6]))  # uniform rows 2..5
    np.testing.assert_allclose(get["sink"][:3], [0, 1, 0])
    np.testing.assert_allclose(get["self"][:3], [0, 0, 1])
    np.testing.assert_allclose(get["entropy"][:3], 0, atol=1e-15)
    np.testing.assert_allclose(get["entropy"][3], np.mean(np.log2([3, 4, 5, 6])))
    np.testing.assert_allclose(get["distance"][:3], [1, np.mean([2, 3, 4, 5]), 0])
    np.testing.assert_allclose(stats.breadth[0], [0, 0, 0, 1])  # uniform rows: entropy at its largest
    assert stats.get("induction") is None and stats.induction_rows == ()  # ids 0..5 repeat nothing


def test_rows_0_and_1_are_left_out():
    """Row 0 (one key) and row 1 (previous = first token) would blur sink, previous and self: not averaged."""
    n = 5
    w = uniform(n)
    w[1] = [1, 0, 0, 0, 0]  # row 1 all on the first token (= its previous token)
    base = M.head_statistics(heads_of(uniform(n)), list(range(n)))
    moved = M.head_statistics(heads_of(w), list(range(n)))
    for key in ("sink", "previous", "self", "entropy", "distance"):
        np.testing.assert_array_equal(moved.get(key), base.get(key))


@pytest.mark.parametrize("n", [1, 2])
def test_statistics_undefined_below_three_tokens(n):
    stats = M.head_statistics(np.ones((L, H, n, n)) * np.tri(n), [7] * n)
    assert not stats.defined and stats.get("sink") is None and stats.breadth is None
    assert M.quiz_heads(stats) == ()


def test_induction_targets_and_score():
    ids = [5, 6, 7, 5, 6, 7, 7]
    # 5 at 3 -> after 0 came 1; 6 at 4 -> 2; 7 at 5 -> 3; 7 at 6 -> after 2 came 3 (after 5 came 6 = itself: left out)
    assert M.induction_targets(ids) == {3: (1,), 4: (2,), 5: (3,), 6: (3,)}
    assert M.induction_targets([1, 1]) == {}  # the earlier occurrence is right before: its next token is itself
    assert M.induction_targets([1, 2, 3]) == {}
    n = len(ids)
    induction = np.zeros((n, n))
    induction[0, 0] = 1
    for i in range(1, n):
        induction[i, 0] = 1  # a sink everywhere ...
    for i, t in M.induction_targets(ids).items():
        induction[i] = 0
        induction[i, t[0]] = 1  # ... but the repeats look at what followed their earlier occurrence
    stats = M.head_statistics(heads_of(induction, uniform(n)), ids)
    assert stats.induction_rows == (3, 4, 5, 6)
    np.testing.assert_allclose(stats.get("induction")[0], [1.0, np.mean([1 / 4, 1 / 5, 1 / 6, 1 / 7])])


def test_several_earlier_occurrences_sum():
    ids = [9, 1, 9, 2, 9]
    assert M.induction_targets(ids) == {2: (1,), 4: (1, 3)}
    w = uniform(5)
    stats = M.head_statistics(heads_of(w), ids)
    np.testing.assert_allclose(stats.get("induction")[0, 0], np.mean([1 / 3, 2 / 5]))


def test_color_ranges():
    assert M.color_range("sink", 10) == (0.0, 1.0)
    assert M.color_range("entropy", 16) == (0.0, 4.0)
    assert M.color_range("distance", 6) == (0.0, 3.5)  # mean of rows 2..5
    for key in M.STATISTICS:
        lo, hi = M.color_range(key, 3)
        assert np.isfinite([lo, hi]).all() and hi > lo


def test_selected_head_reads_the_last_clicked_cell():
    assert M.selected_head([{"x": 4, "y": 3}], L, H) == (3, 4)
    assert M.selected_head([{"x": 1, "y": 1}, {"x": 8.0, "y": 29.0}], L, H) == (29, 8)
    assert M.selected_head([], L, H) is None
    assert M.selected_head([{"x": 9, "y": 0}, {"y": 2}], L, H) is None  # outside the grid, no x


def test_repeated_prompt_is_seeded_and_repeats():
    words = tuple(f"w{i:03d}" for i in range(100))
    a, b = M.repeated_prompt(words, 3), M.repeated_prompt(words, 3)
    assert a == b and a != M.repeated_prompt(words, 4)
    parts = a.split(" ")
    assert len(parts) == 2 * M.REPEAT_WORDS and parts[: M.REPEAT_WORDS] == parts[M.REPEAT_WORDS:]
    assert len(set(parts)) == M.REPEAT_WORDS
    with pytest.raises(ValueError, match="at least"):
        M.repeated_prompt(words[:3], 0)


def fake_stats(scores: dict[str, np.ndarray]) -> M.HeadStatistics:
    values = {k: v for k, v in scores.items() if k != "broad"}
    values.setdefault("entropy", np.zeros((2, 3)))
    values.setdefault("distance", np.zeros((2, 3)))
    return M.HeadStatistics(10, values, scores["broad"], (5,) if "induction" in scores else ())


def test_quiz_picks_one_clear_head_per_label_and_grades():
    z = np.zeros((2, 3))
    scores = {"sink": z.copy(), "previous": z.copy(), "self": z.copy(), "broad": z.copy()}
    scores["sink"][0, 0], scores["sink"][1, 2] = 0.9, 0.6  # two sinks: the clearer (margin 0.9) is asked
    scores["previous"][1, 1] = 0.8
    scores["self"][0, 1], scores["broad"][0, 1] = 0.5, 0.4  # margin 0.1: not a clear example
    scores["broad"][0, 2] = 0.7
    heads = M.quiz_heads(fake_stats(scores))
    assert [(q.layer, q.head, q.answer) for q in heads] == [(0, 0, "sink"), (0, 2, "broad"), (1, 1, "previous")]
    np.testing.assert_allclose([q.margin for q in heads], [0.9, 0.7, 0.8])
    assert M.grade(heads, ["sink", "self", None]) == (True, False, False)
    with pytest.raises(ValueError):
        M.grade(heads, ["sink"])


def test_link_presets_the_controls_and_encodes_the_prompt():
    assert M.link() == "./real-model"
    assert M.link(layer=18, head=6, stat="induction") == "./real-model?rm_layer=18&rm_head=6&rm_stat=induction"
    assert M.link(layer=-2, head=-1) == "./real-model?rm_layer=0&rm_head=0"
    url = M.link(prompt="a (b) [c] & d")
    assert url == "./real-model?rm_prompt=a%20%28b%29%20%5Bc%5D%20%26%20d"
    assert ")" not in url and " " not in url  # safe inside a Markdown link
    with pytest.raises(ValueError, match="stat must be one of"):
        M.link(stat="bogus")


def test_layer_mean_is_the_mean_over_heads():
    A = np.random.default_rng(0).random((3, 9, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(M.layer_mean(A, 1), A[1].astype(np.float64).mean(0))


# --- on the real model -------------------------------------------------------------------------------


@pytest.mark.slow  # loads the real model (about 1.7 s of CPU)
def test_vocabulary_words_are_single_tokens(lm):
    words = M.vocabulary_words(lm.token_strings(range(lm.config.vocab_size)))
    assert len(words) > 10_000
    for w in words[:: len(words) // 50]:
        assert len(lm.encode(" " + w)) == 1, w


@pytest.mark.slow
def test_default_prompt_statistics_match_head_steps_and_the_exercise_is_clear(lm):
    ids = lm.encode(M.DEFAULT_PROMPT)
    out = lm.forward(ids)
    stats = M.head_statistics(out.attentions, ids)
    s = lm.head_steps(ids, 16, 0)
    np.testing.assert_allclose(s.weights, out.attentions[16, 0], atol=1e-6)
    assert stats.get("previous")[16, 0] == pytest.approx(np.mean([s.weights[i, i - 1] for i in range(2, 10)]))
    assert stats.get("previous")[16, 0] > 0.7  # the page's default head is a previous-token head
    heads = M.quiz_heads(stats)
    assert {q.answer for q in heads} == {"sink", "previous", "self", "broad"}  # no repeat: no induction
    assert all(q.margin >= M.MIN_MARGIN for q in heads)
    for q in heads:
        assert dict(q.scores)[q.answer] == max(v for _, v in q.scores)
    ids_p, probs = rm.top_tokens(out.logits[-1])
    assert lm.decode([ids_p[0]]) == "." and 0 < sum(probs) <= 1


@pytest.mark.slow
def test_repeated_random_prompt_reveals_induction_heads(lm):
    words = M.vocabulary_words(lm.token_strings(range(lm.config.vocab_size)))
    text = M.repeated_prompt(words, 0)
    ids = lm.encode(text)
    k = M.REPEAT_WORDS - 1  # every word but the first is one token in both copies
    assert ids[-k:] == ids[len(ids) - M.REPEAT_WORDS - k: len(ids) - M.REPEAT_WORDS]
    stats = M.head_statistics(lm.forward(ids).attentions, ids)
    induction = stats.get("induction")
    assert induction is not None and len(stats.induction_rows) >= k - 1
    layer, head = np.unravel_index(int(induction.argmax()), induction.shape)
    assert induction.max() > 0.8 and 15 <= layer <= 20  # SmolLM2's induction heads sit in the middle layers
    assert np.median(induction) < 0.05  # most heads do not do this
    assert "induction" in {q.answer for q in M.quiz_heads(stats)}
