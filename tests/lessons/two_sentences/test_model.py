"""Two sentences through one SelfAttention: same-sentence difference, permutation equivariance, positions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention as A
from explorer.lessons.two_sentences import charts as F
from explorer.lessons.two_sentences import model as T
from explorer.shell.settings import Settings
from explorer.shell.textviews import tokens_count

CAT = ("The", "cat", "sat", "on", "the", "mat")
DOG = ("The", "dog", "sat", "on", "the", "rug")


def run(tokens, positional=False, seed=42, d_model=8, d_k=4):
    X = A.embed_tokens(tokens, d_model, seed, "per-token")
    if positional:
        X = X + A.sinusoidal_positional_encoding(len(tokens), d_model)
    return A.SelfAttention(d_model, d_k, d_k, seed=seed).steps(X)


def test_permuting_tokens_permutes_weights_and_outputs_without_positional_encoding():
    perm = np.array([3, 0, 5, 1, 4, 2])
    a, b = run(CAT), run(tuple(CAT[i] for i in perm))
    np.testing.assert_allclose(b.weights, a.weights[np.ix_(perm, perm)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.output, a.output[perm], rtol=0, atol=1e-12)


def test_with_positional_encoding_the_permuted_result_differs():
    perm = np.array([3, 0, 5, 1, 4, 2])
    a, b = run(CAT, True), run(tuple(CAT[i] for i in perm), True)
    assert np.abs(b.weights - a.weights[np.ix_(perm, perm)]).max() > 1e-2
    assert np.abs(b.output - a.output[perm]).max() > 1e-2


def test_identical_tokens_give_identical_rows_only_without_positional_encoding():
    tokens = ("the", "dog", "saw", "the", "cat")
    plain, pe = run(tokens), run(tokens, True)
    assert np.array_equal(plain.weights[0], plain.weights[3])  # bit-for-bit
    assert np.array_equal(plain.output[0], plain.output[3])
    assert np.abs(pe.weights[0] - pe.weights[3]).max() > 1e-3


@pytest.mark.parametrize("positional", [False, True])
def test_same_sentence_twice_difference_is_exactly_zero(positional):
    cmp = T.two_sentences_scenario(CAT, CAT, T.LayerSettings(8, 4, 7, positional)).comparison
    assert cmp.identical
    assert np.all(cmp.diff == 0.0)
    np.testing.assert_array_equal(cmp.entropy_a, cmp.entropy_b)


def test_shared_words_have_the_same_vector_and_flags():
    cmp = T.compare(CAT, DOG, A.SelfAttention(8, 4, 4, seed=42), 42, False)
    assert cmp.shared_a.tolist() == [True, False, True, True, True, False]
    assert cmp.shared_b.tolist() == [True, False, True, True, True, False]
    np.testing.assert_array_equal(cmp.steps_a.X[2], cmp.steps_b.X[2])  # "sat" in both
    assert not np.array_equal(cmp.steps_a.X[1], cmp.steps_b.X[1])  # cat vs dog
    assert np.abs(cmp.diff).max() > 0
    np.testing.assert_allclose(cmp.entropy_a, A.entropy(cmp.steps_a.weights))


def test_different_lengths_compare_the_common_length_and_empty_b_is_none():
    sc = T.two_sentences_scenario(CAT, ("a", "b"), T.LayerSettings(8, 4, 42, False))
    assert sc.comparison.m == 2 and sc.comparison.n_a == 6 and sc.comparison.n_b == 2
    assert sc.comparison.steps_a.weights.shape == (2, 2)
    assert T.two_sentences_scenario(CAT, (), T.LayerSettings(8, 4, 42, False)).comparison is None
    with pytest.raises(ValueError):
        T.two_sentences_scenario((), CAT, T.LayerSettings(8, 4, 42, False))
    with pytest.raises(ValueError):
        T.compare(CAT, (), A.SelfAttention(8, 4), 42, False)


def test_order_check_at_both_settings():
    sc = T.two_sentences_scenario(CAT, DOG, T.LayerSettings(8, 4, 42, False), shuffle_seed=3)
    assert sc.order is sc.order_plain
    assert sc.order_plain.weight_gap < 1e-12 and sc.order_plain.output_gap < 1e-12
    assert sc.order_positional.weight_gap > 1e-2 and sc.order_positional.output_gap > 1e-2
    o = sc.order_plain
    assert sorted(o.shuffled_tokens) == sorted(CAT) and o.shuffled_tokens == tuple(CAT[i] for i in o.perm)
    assert T.two_sentences_scenario(CAT, DOG, T.LayerSettings(8, 4, 42, True), 3).order.positional


def test_repeat_check_uses_the_sentence_or_the_demo():
    layer = A.SelfAttention(8, 4, 4, seed=42)
    r = T.repeat_check(CAT, layer, 42)  # "The" and "the" differ: no repeat
    assert r.demo and r.tokens == T.REPEAT_DEMO and r.positions == (0, 3)
    assert r.row_gap(False) == 0.0 and r.row_gap(True) > 1e-3
    r = T.repeat_check(("a", "b", "a", "a"), layer, 42)
    assert not r.demo and r.positions == (0, 2, 3) and r.row_gap(False) == 0.0


def test_shuffle_permutation_is_seeded_and_never_the_identity():
    for n in range(2, 8):
        for seed in range(20):
            p = T.shuffle_permutation(n, seed)
            assert sorted(p.tolist()) == list(range(n)) and not np.array_equal(p, np.arange(n))
            np.testing.assert_array_equal(p, T.shuffle_permutation(n, seed))
    assert T.shuffle_permutation(1, 0).tolist() == [0]


@settings(max_examples=20, deadline=None)
@given(words=st.lists(st.sampled_from(["a", "b", "c", "dog", "<b>"]), min_size=1, max_size=8),
       seed=st.integers(0, 1000), shuffle_seed=st.integers(0, 1000))
def test_permutation_equivariance_for_random_sentences(words, seed, shuffle_seed):
    o = T.order_check(tuple(words), A.SelfAttention(6, 3, 3, seed=seed), seed, False, shuffle_seed)
    np.testing.assert_allclose(o.unpermuted_weights, o.original.weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(o.unpermuted_output, o.original.output, rtol=0, atol=1e-12)
    w = o.original.weights
    for i, t in enumerate(words):  # identical tokens, identical rows
        j = words.index(t)
        assert np.array_equal(w[i], w[j])


def test_figure_helpers_mark_shared_words_and_escape():
    assert F.marked_labels(["a", "b"], [True, False]) == ["a (0) ★", "b (1)"]
    assert F.pair_labels(["a"], ["b"]) == ["a / b (0)"]
    with pytest.raises(ValueError):
        F.marked_labels(["a"], [True, False])
    fig = F.entropy_bars([0.1, 0.5], [0.2, 0.3], ["<b>x (0)", "y (1)"])
    assert fig.layout.xaxis.ticktext[0] == "&lt;b&gt;x (0)"
    assert [tr.name for tr in fig.data] == ["A", "B"] and list(fig.data[0].y) == [0.1, 0.5]
    with pytest.raises(ValueError):
        F.entropy_bars([0.1], [0.2, 0.3], ["a", "b"])


def test_layer_settings_keep_what_the_page_uses_and_not_the_embedding_choice():
    lesson = Settings(CAT, 8, 4, 42, "lesson", True)
    layer = T.LayerSettings.of(lesson)
    assert layer == T.LayerSettings(d_model=8, d_k=4, seed=42, positional=True)
    # the sentences travel on their own and the embedding choice is not used: one cache key
    assert T.LayerSettings.of(Settings(DOG, 8, 4, 42, "per-token", True)) == layer
    assert hash(layer) == hash(T.LayerSettings(8, 4, 42, True))


@pytest.mark.parametrize(("lang", "zero", "gap", "one", "six"), [
    ("en", "0 (exact)", "1.23e-16", "1 token", "6 tokens"),
    ("pt", "0 (exato)", "1,23e-16", "1 token", "6 tokens"),
    ("tr", "0 (tam)", "1,23e-16", "1 token", "6 token"),
])
def test_gaps_and_token_counts_read_right_in_each_language(lang, zero, gap, one, six):
    from explorer.shell import i18n
    with i18n.using(lang):
        assert (T.gap_text(0.0), T.gap_text(1.234e-16)) == (zero, gap)
        assert (tokens_count(1), tokens_count(6)) == (one, six)


def order_with(weight_gap, output_gap, positional):
    """A 2-token OrderCheck, built from arrays, whose put-back weights and outputs differ from the original's by the
    gaps given (outputs up to 4 in size)."""
    def steps(weights, output):
        return A.AttentionSteps(*[np.zeros((2, 2))] * 6, None, weights, output)
    w, out = np.array([[0.25, 0.75], [0.5, 0.5]]), np.array([[2.0, -4.0], [1.0, 3.0]])
    back_w, back_out = w + np.array([[0.0, weight_gap], [0.0, 0.0]]), out + np.array([[0.0, 0.0], [output_gap, 0.0]])
    perm = np.array([1, 0])  # its own inverse
    return T.OrderCheck(("a", "b"), ("b", "a"), perm, perm, steps(w, out),
                        steps(back_w[np.ix_(perm, perm)], back_out[perm]), positional)


@pytest.mark.parametrize("positional", [False, True])
def test_order_claim_says_equal_only_when_both_measured_gaps_are_float_rounding(positional):
    same, text = T.order_claim(order_with(0.0, 4e-12, positional))  # outputs: 1e-12 of their largest |value| 4
    assert same and "to float rounding" in text and ("Even with" in text) == positional
    assert text.endswith("(largest |difference| 0 (exact) in the weights, 4.00e-12 in the outputs).")
    for gaps in ((2e-12, 0.0), (0.0, 5e-12), (0.25, 0.5)):
        same, text = T.order_claim(order_with(*gaps, positional))
        assert not same and "float rounding" not in text, (gaps, text)
    assert "differ by up to 0.25, the outputs by up to 0.5" in text
    assert text.startswith("With positional encoding the un-shuffled map is **not**" if positional else
                           "Without positional encoding the un-shuffled map should equal the original, but")


@pytest.mark.parametrize("positional", [False, True])
def test_repeat_claim_says_identical_only_when_the_measured_gap_is_float_rounding(positional):
    same, text = T.repeat_claim(1e-12, positional)
    assert same and text == ("Even with positional encoding the copies' rows are identical here (largest difference "
                             "1.00e-12)." if positional else
                             "Without positional encoding the copies' rows are identical (largest difference "
                             "1.00e-12).")
    same, text = T.repeat_claim(2e-12, positional)
    assert not same and text == ("With positional encoding the copies' rows differ by up to 2e-12." if positional else
                                 "Without positional encoding the copies' rows should be identical, but they differ "
                                 "by up to 2e-12.")


def test_new_claims_are_translated():
    from explorer.shell import i18n
    english = [T.order_claim(order_with(*g, p))[1] for g in ((0.0, 0.0), (1.0, 1.0)) for p in (False, True)]
    english += [T.repeat_claim(g, p)[1] for g in (0.0, 1.0) for p in (False, True)]
    for lang in ("pt", "tr"):
        with i18n.using(lang):
            shown = [T.order_claim(order_with(*g, p))[1] for g in ((0.0, 0.0), (1.0, 1.0)) for p in (False, True)]
            shown += [T.repeat_claim(g, p)[1] for g in (0.0, 1.0) for p in (False, True)]
        assert all(a != b for a, b in zip(shown, english, strict=True)), lang


def test_largest_difference_of_two_sentences_is_measured():
    cmp = T.compare(CAT, DOG, A.SelfAttention(8, 4, 4, seed=42), 42, False)
    assert cmp.gap == float(np.abs(cmp.steps_a.weights - cmp.steps_b.weights).max()) > 0
