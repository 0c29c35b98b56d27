"""The real-model lesson's numbers: the prompt, head statistics, the induction score, the exercise's grading.

Synthetic attention maps check each statistic's definition exactly (which rows, which cells); the
real model (installed here and in CI) checks the lesson's claims on SmolLM2-135M itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import heads, llama
from explorer.lessons import real_model
from explorer.lessons.real_model import model as M
from explorer.shell import controls, i18n, llm

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
    np.testing.assert_allclose(stats.graded["broad"][0], [0, 0, 0, 1])  # uniform rows: entropy at its largest
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
    assert not stats.defined and stats.get("sink") is None and not stats.graded
    assert M.quiz_heads(stats) == ()


def test_induction_targets_and_score():
    ids = [5, 6, 7, 5, 6, 7, 7]
    # 5 at 3 -> after 0 came 1; 6 at 4 -> 2; 7 at 5 -> 3; 7 at 6 -> after 2 came 3 (after 5 came 6 = itself: left out)
    assert heads.induction_targets(ids) == {3: (1,), 4: (2,), 5: (3,), 6: (3,)}
    assert heads.induction_targets([1, 1]) == {}  # the earlier occurrence is right before: its next token is itself
    assert heads.induction_targets([1, 2, 3]) == {}
    n = len(ids)
    induction = np.zeros((n, n))
    induction[0, 0] = 1
    for i in range(1, n):
        induction[i, 0] = 1  # a sink everywhere ...
    for i, t in heads.induction_targets(ids).items():
        induction[i] = 0
        induction[i, t[0]] = 1  # ... but the repeats look at what followed their earlier occurrence
    stats = M.head_statistics(heads_of(induction, uniform(n)), ids)
    assert stats.induction_rows == (3, 4, 5, 6)
    np.testing.assert_allclose(stats.get("induction")[0], [1.0, np.mean([1 / 4, 1 / 5, 1 / 6, 1 / 7])])


def test_several_earlier_occurrences_sum():
    ids = [9, 1, 2, 9, 3, 4, 9]
    assert heads.induction_targets(ids) == {3: (1,), 6: (1, 4)}
    w = uniform(7)
    stats = M.head_statistics(heads_of(w), ids)
    np.testing.assert_allclose(stats.get("induction")[0, 0], np.mean([1 / 4, 2 / 7]))


def test_a_target_is_never_the_previous_token_or_the_query():
    """Issue 26, item 3: an earlier copy two back (j = i - 2) has its next token at i - 1, the previous token: a
    previous-token head must not earn induction credit on "one two one two", nor a self head on "the the"."""
    assert heads.induction_targets([1, 2, 1]) == {}  # the token after the 1 at 0 is the 2 at 1 = row 2's previous
    assert heads.induction_targets([7, 7, 7]) == {}
    alternating = [1, 2] * 4
    targets = heads.induction_targets(alternating)
    assert targets == {4: (1,), 5: (2,), 6: (1, 3), 7: (2, 4)}
    assert all(i - 1 not in t and i not in t for i, t in targets.items())
    n = len(alternating)
    previous = causal([[1]] + [[0] * (i - 1) + [1, 0] for i in range(1, n)])
    stats = M.head_statistics(heads_of(previous, np.eye(n)), alternating)
    np.testing.assert_array_equal(stats.get("induction")[0], [0.0, 0.0])  # neither head copies anything


def test_repeats_too_close_to_separate_induction_are_named():
    assert M.repeats_too_close([7, 7, 7]) and M.repeats_too_close([1, 2, 1]) and M.repeats_too_close([3, 1, 1, 2])
    assert not M.repeats_too_close([1, 2, 3])  # no repeat at all: another reason
    assert not M.repeats_too_close([1, 2, 3, 1]) and heads.induction_targets([1, 2, 3, 1]) == {3: (1,)}
    assert not M.repeats_too_close([1, 1, 2, 3, 1])  # one repeat is too close, another is not


def test_color_ranges():
    assert M.color_range("sink", 10) == (0.0, 1.0)
    assert M.color_range("entropy", 16) == (0.0, 4.0)
    assert M.color_range("distance", 6) == (0.0, 3.5)  # mean of rows 2..5
    for key in M.STATISTICS:
        lo, hi = M.color_range(key, 3)
        assert np.isfinite([lo, hi]).all() and hi > lo


def test_repeated_prompt_is_an_exact_repeat_of_distinct_word_tokens():
    words = llm.word_token_ids([" cat", " house", "x", " garden", " Zebra", " window", " planet", "ing", " orange"])
    assert words == (1, 3, 5, 6, 8)
    k = M.REPEAT_WORDS
    ids = heads.repeated_random_ids(list(range(100, 200)), k, 3)  # the one rule (tests/core/test_heads.py)
    assert len(ids) == 2 * k and ids[:k] == ids[k:] and len(set(ids)) == k
    assert heads.induction_rows(ids) == tuple(range(k, 2 * k))  # the second copy, each row's target i - k + 1


def test_appended_ids_are_written_and_read_back():
    assert M.parse_ids("30 198 198", 49152) == (30, 198, 198) and M.write_ids((30, 198, 198)) == "30 198 198"
    assert M.parse_ids("", 10) == () and M.parse_ids("  5 ", 10) == (5,)
    for bad in ("1,2", "1  2", "x", "-1", "01", "10", "1.5", "٣", "1e2"):
        assert M.parse_ids(bad, 10) is None, bad
    assert heads.top_heads(np.array([[0.1, 0.2], [0.9, 0.3]]))[0] == (1, 0)


def fake_stats(scores: dict[str, np.ndarray]) -> M.HeadStatistics:
    values = {k: v for k, v in scores.items() if k != "broad"}
    values.setdefault("entropy", np.zeros((2, 3)))
    values.setdefault("distance", np.zeros((2, 3)))
    rows = (5,) if "induction" in scores else tuple(range(2, 10))
    return M.HeadStatistics(10, values, (5,) if "induction" in scores else (), rows, scores)


def test_every_label_is_graded_on_the_same_rows():
    """Issue 26, item 5: a head that rests on the first token in the first copy and copies in the second is an
    induction head on the rows R where it can copy; its sink score comes from the same rows, not from all rows."""
    k = 4
    ids = [10, 11, 12, 13] * 2
    n = 2 * k
    induction = np.zeros((n, n))
    induction[:k, 0] = 1  # the first copy: all on the first token
    for i in range(k, n):
        induction[i, i - k + 1] = 1  # the second copy: the token after the earlier occurrence
    stats = M.head_statistics(heads_of(induction, uniform(n)), ids)
    assert stats.induction_rows == stats.graded_rows == (4, 5, 6, 7)
    scores = stats.graded
    assert list(scores) == ["previous", "sink", "self", "induction", "broad"]
    np.testing.assert_allclose([scores[k][0, 0] for k in scores], [0, 0, 0, 1, 0], atol=1e-12)
    rows = np.arange(4, 8)
    u = uniform(n)
    np.testing.assert_allclose(scores["sink"][0, 1], u[rows, 0].mean())
    np.testing.assert_allclose(scores["broad"][0, 1], 1.0)
    (q,) = [q for q in M.quiz_heads(stats) if (q.layer, q.head) == (0, 0)]
    assert q.answer == "induction" and q.margin == pytest.approx(1.0)
    no_repeat = M.head_statistics(heads_of(uniform(5)), [1, 2, 3, 4, 5])
    assert no_repeat.graded_rows == (2, 3, 4) and "induction" not in no_repeat.graded
    np.testing.assert_allclose(no_repeat.graded["sink"], no_repeat.get("sink"))


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
    """Links to this lesson are built from its declarations (``controls.link``), clamped to the model's sizes."""
    sizes = real_model.SIZES
    assert controls.link(real_model) == "./real-model"
    assert controls.link(real_model, sizes, layer=18, head=6, stat="induction") == \
        "./real-model?rm_stat=induction&rm_layer=18&rm_head=6"
    assert controls.link(real_model, sizes, layer=-2, head=99) == "./real-model?rm_layer=0&rm_head=8"
    url = controls.link(real_model, prompt="a (b) [c] & d")
    assert url == "./real-model?rm_prompt=a%20%28b%29%20%5Bc%5D%20%26%20d"
    assert ")" not in url and " " not in url  # safe inside a Markdown link
    assert controls.link(real_model, stat="bogus") == "./real-model"  # no such statistic: the default
    with pytest.raises(ValueError, match="context"):
        controls.link(real_model, layer=3)


# --- on the real model -------------------------------------------------------------------------------


@pytest.mark.slow  # loads the real model (about 1.7 s of CPU)
def test_word_tokens_are_single_tokens(lm):
    words = llm.word_ids(lm)  # the door's: whole words that tokenize back to themselves
    assert len(words) > 10_000
    for i in words[:: len(words) // 50]:
        assert lm.encode(lm.decode([i])) == [i], i


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
    ids_p, probs = llm.top_tokens(out.logits[-1])
    assert lm.decode([ids_p[0]]) == "." and 0 < sum(probs) <= 1


def graded_by_hand(A: np.ndarray, ids, layer: int, head: int) -> dict[str, float]:
    """Every label's score of one head, recomputed from its map on the rows whose token occurred 3+ positions back."""
    w = A[layer, head].astype(np.float64)
    first = {}
    rows, targets = [], {}
    for i, t in enumerate(ids):
        earlier = [j + 1 for j in range(i) if ids[j] == t and j + 1 < i - 1]
        if earlier:
            rows.append(i)
            targets[i] = earlier
        first.setdefault(t, i)
    out = {"previous": np.mean([w[i, i - 1] for i in rows]), "sink": np.mean([w[i, 0] for i in rows]),
           "self": np.mean([w[i, i] for i in rows]), "induction": np.mean([w[i, targets[i]].sum() for i in rows])}
    out["broad"] = np.mean([-(w[i, : i + 1] * np.log2(np.maximum(w[i, : i + 1], 1e-300))).sum() / np.log2(i + 1)
                            for i in rows])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_repeated_random_prompt_reveals_induction_heads(lm, seed):
    words = llm.word_ids(lm)
    ids = list(heads.repeated_random_ids(words, M.REPEAT_WORDS, seed))
    k = M.REPEAT_WORDS
    assert lm.encode(lm.decode(ids)) == ids and ids[:k] == ids[k:]  # the text holds the exact repeat
    out = lm.forward(ids)
    stats = M.head_statistics(out.attentions, ids)
    induction = stats.get("induction")
    assert induction is not None and stats.induction_rows == tuple(range(k, 2 * k))
    layer, head = heads.top_heads(induction)[0]
    assert induction.max() > 0.8 and 15 <= layer <= 20  # SmolLM2's induction heads sit in the middle layers
    assert np.median(induction) < 0.05  # most heads do not do this
    quiz = M.quiz_heads(stats)
    assert "induction" in {q.answer for q in quiz}
    for q in quiz:  # "each one clearly does one thing", on the rows graded, recomputed from its map
        by_hand = graded_by_hand(out.attentions, ids, q.layer, q.head)
        np.testing.assert_allclose([v for _, v in q.scores], [by_hand[k] for k, _ in q.scores], rtol=1e-6, atol=1e-9)
        best, second = sorted(by_hand.values())[-1], sorted(by_hand.values())[-2]
        assert by_hand[q.answer] == best and best - second >= M.MIN_MARGIN, (q, by_hand)
    induction_head = next(q for q in quiz if q.answer == "induction")  # (moved from test_page.py: a SmolLM2 fact)
    w = out.attentions[induction_head.layer, induction_head.head]
    assert w[2:k, 0].mean() > 0.5  # on its own map the first copy does rest on the first token ...
    assert graded_by_hand(out.attentions, ids, induction_head.layer, induction_head.head)["sink"] < 0.25  # not graded


@pytest.mark.slow
def test_alternating_words_give_previous_token_heads_no_induction_credit(lm):
    """Issue 26, item 3: on "one two one two …" the top induction heads were previous-token heads."""
    ids = lm.encode("one two one two one two one two one two one two")
    stats = M.head_statistics(lm.forward(ids).attentions, ids)
    induction, previous = stats.get("induction"), stats.get("previous")
    for flat in np.argsort(-induction, axis=None)[:3]:
        layer, head = np.unravel_index(flat, induction.shape)
        assert previous[layer, head] < 0.5, (layer, head, previous[layer, head], induction[layer, head])
    assert previous[16, 0] > 0.7 and induction[16, 0] < 0.1  # the page's previous-token head
    the = lm.encode("the the the")
    assert M.repeats_too_close(the) and "induction" not in M.head_statistics(lm.forward(the).attentions, the).values


def test_the_causal_check_states_the_mask_and_the_row_sums_with_the_languages_decimal_mark():
    w = np.array([[1.0, 0.0], [0.25, 0.75]], dtype=np.float32)
    assert M.causal_check(w) == ("largest weight above the diagonal = 0.0 (exactly 0: the causal mask) · largest "
                                 "|row sum − 1| = 0.0e+00")
    w[0, 1] = 0.5
    with i18n.using("pt"):
        said = M.causal_check(w)
    assert "0,5" in said and "5,0e-01" in said and "largest" not in said


def test_grade_claim_praises_only_a_full_score():
    assert M.grade_claim((True, True, True)) == ("success", "**3 of 3 right.** Every head read correctly.")
    assert M.grade_claim((True, False, True)) == ("info", "**2 of 3 right.**")
    assert M.grade_claim((False,)) == ("info", "**0 of 1 right.**")
    with i18n.using("pt"):
        kind, text = M.grade_claim((True, True))
    assert kind == "success" and text != "**2 of 2 right.** Every head read correctly." and "2" in text


def test_layer_mean_is_the_mean_over_that_layers_heads():
    a = np.random.default_rng(0).random((3, 4, 5, 5)).astype(np.float32)
    mean = M.layer_mean(a, 2)
    assert mean.dtype == np.float64 and mean.shape == (5, 5)
    np.testing.assert_allclose(mean, a[2].astype(np.float64).sum(axis=0) / 4)


# --- this architecture's steps: every sentence decided from the config (synthetic configs of each family) -------

SMOL = llama.LlamaConfig(n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64, d_ff=1536, vocab_size=49152,
                         rope_theta=100000.0, rms_eps=1e-5, context_length=8192, max_tokens=256, bos_id=1, eos_id=2,
                         name="SmolLM2")
QWEN2 = llama.LlamaConfig(**{**SMOL.__dict__, "architecture": "qwen2", "qkv_bias": True, "rope_layout": "halves",
                             "rope_theta": 1e6})
QWEN3 = llama.LlamaConfig(**{**SMOL.__dict__, "architecture": "qwen3", "qk_norm": True, "rope_layout": "halves",
                             "d_head": 128})
GPT2 = llama.LlamaConfig(**{**SMOL.__dict__, "architecture": "gpt2", "n_layers": 12, "n_heads": 12, "n_kv_heads": 12,
                            "d_model": 768, "qkv_bias": True, "rope_layout": None, "norm": "layer",
                            "positions": "learned", "mlp": "gelu", "linear_bias": True, "context_length": 1024})
GEMMA3 = llama.LlamaConfig(**{**SMOL.__dict__, "architecture": "gemma3", "n_layers": 12, "n_heads": 4, "n_kv_heads": 1,
                              "d_model": 640, "d_head": 256, "qk_norm": True, "rope_layout": "halves", "mlp": "geglu",
                              "embed_scale": 640 ** 0.5, "post_norms": True, "sliding_window": 4,
                              "local_layers": (0, 1, 2, 3, 4, 6, 7, 8, 9, 10), "rope_theta": 1e6,
                              "rope_theta_local": 10000.0})


LLAMA3 = llama.LlamaConfig(**{**SMOL.__dict__, "rope_theta": 500000.0, "n_heads": 32, "n_kv_heads": 8,
                              "d_model": 2048, "rope_freq_factors": (1.0,) * 20 + (3.5, 9.25) + (32.0,) * 10})
"""Llama 3.2 1B's RoPE (d_head 64, base 500,000) with per-pair factors of its shape (1 for the fast pairs, 32 for
the slow ones, a step between); the values are the config's, not claimed to be the real file's."""


def test_step_three_says_when_the_file_scales_the_speeds():
    """One sentence, from the config: Llama 3's per-pair factors (their smallest and largest) or a linear factor; the
    formula divides theta_i by them; plain RoPE says nothing of it. In Portuguese and Turkish too."""
    text = M.rope_text(LLAMA3, 3)
    assert ("**Scaled speeds:** this file divides each pair's θᵢ by its own factor, between 1 and 32 (Llama 3's RoPE "
            "scaling), so those pairs turn more slowly.") in text
    assert M.rope_latex(LLAMA3, 500000.0)[1] == r"\theta_i = 500000^{-2i/64} / f_i,\quad i = 0 \dots 31"
    linear = llama.LlamaConfig(**{**SMOL.__dict__, "rope_scaling_factor": 2.5})
    assert ("**Scaled speeds:** this file divides every θᵢ by 2.5 (linear RoPE scaling), as if the positions were "
            "2.5 times closer.") in M.rope_text(linear, 0)
    assert M.rope_latex(linear, 100000.0)[1].startswith(r"\theta_i = 100000^{-2i/64} / 2.5,")
    both = llama.LlamaConfig(**{**LLAMA3.__dict__, "rope_scaling_factor": 2.0})
    assert M.rope_latex(both, 500000.0)[1].startswith(r"\theta_i = 500000^{-2i/64} / (2\, f_i),")
    assert M.rope_text(both, 0).count("**Scaled speeds:**") == 2
    for plain in (SMOL, QWEN2, GEMMA3):
        assert "Scaled" not in M.rope_text(plain, 0) and "f_i" not in M.rope_latex(plain, 1e4)[1]
    with i18n.using("pt"):
        pt = M.rope_text(LLAMA3, 3), M.rope_text(linear, 0)
    with i18n.using("tr"):
        tr = M.rope_text(LLAMA3, 3), M.rope_text(linear, 0)
    assert "entre 1 e 32" in pt[0] and "por 2,5" in pt[1] and "1 ile 32" in tr[0] and "2,5 ile" in tr[1]


def test_layer_ranges_and_which_layers_are_local():
    assert M.layer_ranges((0, 1, 2, 3, 4, 6, 7, 8, 9, 10)) == "0–4 and 6–10"
    assert M.layer_ranges((5, 11)) == "5 and 11" and M.layer_ranges((3,)) == "3" and M.layer_ranges(()) == ""
    assert M.layer_ranges((0, 2, 3, 7)) == "0, 2–3 and 7"
    assert M.local_layers_text(SMOL) is None and M.layer_kind(SMOL, 3) is None
    assert M.local_layers_text(GEMMA3) == (
        "Layers 0–4 and 6–10 are local: each query sees only the keys in a window of size 4 that ends at itself (RoPE "
        "base 10,000). Layers 5 and 11 are global: each query sees every earlier key (RoPE base 1,000,000).")
    six = llm.LlamaConfig(**{**GEMMA3.__dict__, "n_layers": 6, "local_layers": (0, 1, 2, 3, 4)})
    assert M.local_layers_text(six).endswith("Layer 5 is global: each query sees every earlier key (RoPE base "
                                             "1,000,000).")
    assert M.local_layers_text(llm.LlamaConfig(**{**GEMMA3.__dict__, "n_layers": 2, "local_layers": (0, 1)})) == (
        "Layers 0–1 are local: each query sees only the keys in a window of size 4 that ends at itself (RoPE base "
        "10,000).")
    assert M.layer_kind(GEMMA3, 0) == ("Layer 0 is local: each query sees only its last 4 keys (itself included), so "
                                       "the map is a band along the diagonal once the prompt is longer than that.")
    assert M.layer_kind(GEMMA3, 5) == "Layer 5 is global: each query sees every earlier key."
    mask = M.attention_mask(GEMMA3, 0, 6)
    assert mask[5].tolist() == [False, False, True, True, True, True] and not mask[0, 1]  # the last 4 keys, causal
    np.testing.assert_array_equal(M.attention_mask(GEMMA3, 5, 6), np.tri(6, dtype=bool))
    np.testing.assert_array_equal(M.attention_mask(SMOL, 0, 6), np.tri(6, dtype=bool))


def test_the_parts_and_the_glossary_follow_the_architecture():
    assert M.parts_text(SMOL) == "RoPE positions, RMSNorm, SwiGLU MLP"
    assert M.parts_text(QWEN2) == "RoPE positions, RMSNorm, biases on Q, K and V, SwiGLU MLP"
    assert M.parts_text(QWEN3) == "RoPE positions, RMSNorm, an RMSNorm on each head's query and key, SwiGLU MLP"
    assert M.parts_text(GPT2) == "learned absolute positions instead of RoPE, LayerNorm, biases on every projection, " \
                                 "GELU MLP"
    assert M.parts_text(GEMMA3) == (
        "RoPE positions, RMSNorm before and after attention and the MLP, an RMSNorm on each head's query and key, "
        "GEGLU MLP, the token embedding scaled by √d_model = 25.3, 10 of its 12 layers local (sliding window of 4 "
        "keys)")
    assert M.norm_sentence(GPT2).startswith("**LayerNorm** subtracts the mean")
    assert "again on what each of them writes" in M.norm_sentence(GEMMA3)
    assert M.norm_sentence(SMOL) == ("**RMSNorm** divides a token's vector by its root mean square, √(mean(x²) + ε), "
                                     "times a learned gain, before each attention and MLP.")
    assert M.position_sentence(GPT2) == ("**Learned positions**: the model adds a trained vector per position to each "
                                         "token's embedding before block 0 (step 3 below); it has no RoPE.")
    assert M.position_sentence(QWEN2).startswith("**RoPE** turns each query and key")


def test_the_steps_overview_and_the_chart_count():
    assert M.steps_overview(SMOL) == (
        "The same steps as the walkthrough, now with the model's trained weights: normalise (RMSNorm), project to Q, "
        "K, V, rotate Q and K by position (RoPE, new here), score, scale and mask, softmax, blend the values.")
    assert "project to Q, K, V and add their biases, rotate" in M.steps_overview(QWEN2)
    assert "project to Q, K, V, normalise each head's Q and K (RMSNorm), rotate" in M.steps_overview(QWEN3)
    assert M.steps_overview(GPT2) == (
        "The same steps as the walkthrough, now with the model's trained weights: normalise (LayerNorm), project to "
        "Q, K, V and add their biases, no rotation (the positions were added to the embeddings: step 3 says how), "
        "score, scale and mask, softmax, blend the values.")
    assert (M.step_charts(SMOL), M.step_charts(GPT2)) == (11, 9)


def test_step_one_is_the_models_norm_and_what_enters_the_layer():
    assert M.norm_latex(SMOL) == (r"\hat x_i = \frac{x_i}{\sqrt{\frac{1}{576}\sum_k x_{ik}^2 + \varepsilon}} "
                                  r"\odot g,\qquad \varepsilon = 10^{-5}")
    assert M.norm_latex(GPT2).startswith(r"\hat x_i = \frac{x_i - \mu_i}{\sqrt{\sigma_i^2 + \varepsilon}} \odot g + b")
    assert M.norm_caption(SMOL, 1, 10) == (
        "x: the residual stream entering layer 1 (the token embeddings after 1 block), shape [n, d_model] = [10, 576]. "
        "g: the layer's learned gain. No mean subtraction, no bias. Every head of the layer starts from this x̂.")
    assert M.norm_caption(SMOL, 0, 10).startswith(
        "x: the residual stream entering layer 0, the token embeddings, shape")
    assert M.norm_caption(GPT2, 0, 3) == (
        "x: the residual stream entering layer 0, each token's embedding plus its position's learned vector (step 3), "
        "shape [n, d_model] = [3, 768]. μ, σ²: the mean and variance of each token's 768 numbers; g, b: the layer's "
        "learned gain and bias. Every head of the layer starts from this x̂.")
    assert M.norm_caption(GEMMA3, 0, 3).startswith(
        "x: the residual stream entering layer 0, the token embeddings times √d_model = 25.3, shape")


def test_step_two_has_the_biases_and_the_head_norms_the_model_has():
    assert M.qkv_latex(SMOL, 4, 1) == [r"Q = \hat x\, W_q^{(4)},\quad K = \hat x\, W_k^{(1)},\quad "
                                       r"V = \hat x\, W_v^{(1)}"]
    assert M.qkv_latex(QWEN2, 4, 1) == [r"Q = \hat x\, W_q^{(4)} + b_q^{(4)},\quad K = \hat x\, W_k^{(1)} + b_k^{(1)},"
                                        r"\quad V = \hat x\, W_v^{(1)} + b_v^{(1)}"]
    assert M.qkv_latex(QWEN3, 0, 0)[1] == (r"q_i \leftarrow \mathrm{RMSNorm}(q_i) \odot g_q,\quad k_i \leftarrow "
                                           r"\mathrm{RMSNorm}(k_i) \odot g_k")
    assert M.qkv_caption(SMOL) == "Q and K before RoPE."
    assert M.qkv_caption(QWEN2) == "b_q, b_k, b_v: the heads' learned biases, added before RoPE. Q and K before RoPE."
    assert M.qkv_caption(GPT2) == ("b_q, b_k, b_v: the heads' learned biases. No rotation follows: these Q and K are "
                                   "the ones the scores use.")
    assert M.qkv_caption(QWEN3) == ("Then each head's q and k rows are RMS-normalised over their 128 numbers, with "
                                    "learned gains g_q and g_k (before RoPE): the charts show them after it. Q and K "
                                    "before RoPE.")


def test_step_three_names_the_pair_layout_the_base_and_the_learned_positions():
    adjacent, halves = M.rope_latex(SMOL, 100000.0), M.rope_latex(QWEN2, 1e6)
    assert r"q'_{2i} \\ q'_{2i+1}" in adjacent[0] and adjacent[1] == r"\theta_i = 100000^{-2i/64},\quad i = 0 \dots 31"
    assert r"q'_{i} \\ q'_{i+32}" in halves[0] and halves[1] == r"\theta_i = 1000000^{-2i/64},\quad i = 0 \dots 31"
    assert "a pair is two *adjacent* coordinates (2i, 2i+1)" in M.rope_text(SMOL, 0)
    assert ("this model's file pairs coordinate i with i + 32 (*split halves*, as Hugging Face `transformers`' "
            "“rotate_half”)") in M.rope_text(QWEN2, 0)
    assert M.rope_text(GEMMA3, 0).endswith("Layer 0 is a local layer: its RoPE base is 10,000 (the global layers use "
                                           "1,000,000).")
    assert M.rope_text(GEMMA3, 5).endswith("Layer 5 is a global layer: its RoPE base is 1,000,000 (the local layers "
                                           "use 10,000).")
    assert "Layer" not in M.rope_text(QWEN2, 0)
    assert M.learned_positions_text(GPT2, "GPT-2").startswith(
        "GPT-2 has no RoPE: Q and K are not rotated. Its positions are learned: a trained vector P[p] per position p "
        "(a row of the file's position_embd, [1,024, 768]) is added to each token's embedding before block 0")


def test_step_five_masks_the_window_of_a_local_layer():
    assert M.mask_title(SMOL, 3) == "5 · ÷ √64, causal mask, softmax"
    assert M.mask_title(GEMMA3, 0) == "5 · ÷ √256, causal and sliding-window mask, softmax"
    assert M.mask_title(GEMMA3, 5) == "5 · ÷ √256, causal mask, softmax"
    assert M.mask_latex(SMOL, 0) == (r"M_{ij} = -\infty \text{ for } j > i \text{ (the future), else } 0")
    assert M.mask_latex(GEMMA3, 0) == (r"M_{ij} = -\infty \text{ for } j > i \text{ (the future) or } i - j \ge 4 "
                                       r"\text{ (outside the window), else } 0")
    assert (M.keys_seen(SMOL, 0), M.keys_seen(GEMMA3, 0, "k"), M.keys_seen(GEMMA3, 5)) == \
        (r"j \le i", r"i - 4 < k \le i", r"j \le i")
    assert M.masked_caption(SMOL, 0, 9) == "masked cells (the future) are grey: −∞ before the softmax"
    assert M.masked_caption(GEMMA3, 2, 9) == ("masked cells (the future, and keys 4 or more positions back: layer 2 is "
                                              "local, a window of 4 keys) are grey: −∞ before the softmax")


def test_the_key_value_sharing_is_the_models():
    assert M.gqa_title(SMOL) == "Grouped-query attention: 3 query heads, one key/value head"
    assert M.gqa_title(GPT2) == "Multi-head attention: each query head has its own key/value head"
    assert M.gqa_text(SMOL, 4, "SmolLM2").startswith(
        "SmolLM2 has 9 query heads but only 3 key/value heads (Ainslie et al. 2023): query head *h* reads key/value "
        "head *h* // 3. Head 4 shares **key/value head 1** with heads 3 and 5: the same K and V rows")
    assert M.gqa_text(GPT2, 7, "GPT-2").startswith(
        "GPT-2 gives each of its 12 query heads its own key and value projections (multi-head attention, no "
        "grouping): head 7 reads key/value head 7 alone, and the KV cache holds 12 heads' keys and values per layer.")
    assert M.gqa_text(GEMMA3, 2, "Gemma").startswith(
        "Gemma has 4 query heads but a single key/value head (multi-query attention): every query head reads it. "
        "Head 2 shares **key/value head 0** with heads 0, 1 and 3:")
    assert "(1/4 of the memory)" in M.gqa_text(GEMMA3, 2, "Gemma")
    assert M.groups_caption(GPT2) is None
    assert M.groups_caption(SMOL) == ("The thin dark lines part the columns into the 3 key/value groups: heads 0 … 2 "
                                      "read key/value head 0, and so on (3 query heads per key/value head).")


def test_the_tokens_and_the_logits_follow_the_file():
    assert M.tokens_caption("3 tokens", "49,152", False, False) == (
        "3 tokens (byte-level BPE, 49,152 pieces; ␣ = a space, ↵ = a new line, \\xNN = one byte of a character split "
        "over two or more tokens: UTF-8 writes a character in 1 to 4 bytes, 👍 in 4, and BPE may cut between any "
        "two). No BOS token is added, as the model file says. (BOS: a “beginning of sequence” token some models put "
        "before every text.)")
    gemma = M.tokens_caption("4 tokens", "262", True, True)
    assert gemma.startswith("4 tokens (SentencePiece-style BPE with byte fallback, 262 pieces;")
    assert "A BOS token is put first, as the model file says." in gemma
    assert M.logits_latex(SMOL, True) == r"\text{logits}_{n-1} = \mathrm{RMSNorm}(x^{(30)}_{n-1})\, E^\top"
    assert M.logits_latex(GPT2, False) == r"\text{logits}_{n-1} = \mathrm{LayerNorm}(x^{(12)}_{n-1})\, W_U^\top"
    assert M.logits_caption("49,152", True, 5, "40%") == (
        "The last position's logits over all 49,152 tokens (the output projection is the embedding matrix E, tied), "
        "softmax in float64. The top 5 hold 40% of the probability.")
    assert "(the output projection W_U is the file's own matrix, not tied to E)" in M.logits_caption("9", False, 5, "")


def test_the_repeated_prompt_needs_enough_whole_word_tokens(monkeypatch):
    monkeypatch.setattr(llm, "word_ids", lambda _model: tuple(range(15)) + (3,))
    assert not M.can_repeat(None)
    assert M.no_repeat_reason(None) == ("This model's vocabulary has 15 whole-word tokens (a space and 4 to 9 "
                                        "lowercase letters); the repeated random prompt needs 16.")
    monkeypatch.setattr(llm, "word_ids", lambda _model: tuple(range(16)))
    assert M.can_repeat(None) and M.no_repeat_reason(None) is None


def test_the_honest_note_follows_how_the_file_stores_the_weights():
    assert M.honest_note("4-bit", True).startswith("**An honest note.** The weights are the model's quantized release "
                                                   "(GGUF): 4-bit. They are widened to float32 here, so the numbers "
                                                   "are close to, not identical with, the full-precision model's.")
    assert M.honest_note("float32", False).startswith(
        "**An honest note.** The weights are read from the model's GGUF file: float32. They are widened to float32 "
        "here exactly as stored (no quantization). Every number on this page")
