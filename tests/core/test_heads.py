"""attention.heads: the one home of the head statistics (fast tier; hypothesis ties the definitions together)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import heads

SETTINGS = settings(max_examples=60, deadline=None)


def causal(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    """Random causal attention ``[*shape, n, n]``: each row a softmax over its keys ``0 .. i``."""
    scores = rng.normal(size=(*shape, n, n)) * 2
    scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return w / w.sum(-1, keepdims=True)


def previous_head(n: int) -> np.ndarray:
    """A pure previous-token head (row 0 on itself)."""
    w = np.zeros((n, n))
    w[0, 0] = 1.0
    w[np.arange(1, n), np.arange(n - 1)] = 1.0
    return w


def one_hot(n: int, key) -> np.ndarray:
    w = np.zeros((n, n))
    w[np.arange(n), [key(i) for i in range(n)]] = 1.0
    return w


# --- the definitions on hand-made heads ------------------------------------------------------------------------


def test_each_statistic_on_a_head_made_for_it():
    n = 8
    r = np.arange(2, n)
    sink, prev, self_ = one_hot(n, lambda i: 0), previous_head(n), np.eye(n)
    u = heads.uniform(n)
    stacked = np.stack([sink, prev, self_, u])  # [4, n, n]
    s = heads.statistics(stacked)
    assert list(s) == ["sink", "previous", "self", "entropy", "distance"]  # no ids: no induction
    np.testing.assert_allclose(s["sink"], [1, 0, 0, np.mean(1 / (r + 1))])
    np.testing.assert_allclose(s["previous"], [0, 1, 0, np.mean(1 / (r + 1))])
    np.testing.assert_allclose(s["self"], [0, 0, 1, np.mean(1 / (r + 1))])
    np.testing.assert_allclose(s["entropy"], [0, 0, 0, np.mean(np.log2(r + 1))])
    np.testing.assert_allclose(s["distance"], [np.mean(r), 1, 0, np.mean(r / 2)])
    assert all(v.dtype == np.float64 and v.shape == (4,) for v in s.values())


def test_last_row_reads_only_the_last_query():
    rng = np.random.default_rng(0)
    w = causal(rng, (2, 3), 6)
    last = heads.statistics(w, rows="last")
    np.testing.assert_allclose(last["sink"], w[..., 5, 0])
    np.testing.assert_allclose(last["previous"], w[..., 5, 4])
    np.testing.assert_allclose(last["distance"], (w[..., 5, :] * (5 - np.arange(6))).sum(-1))
    ids = [3, 4, 5, 6, 7, 3]  # the last token occurred at 0: its target is 1
    np.testing.assert_allclose(heads.statistics(w, ids, rows="last")["induction"], w[..., 5, 1])
    assert "induction" not in heads.statistics(w, [1, 2, 3, 4, 5, 6], rows="last")


def test_induction_targets_skip_the_query_and_the_previous_token():
    assert heads.induction_targets([1, 2, 3, 1, 2, 3, 3]) == {3: (1,), 4: (2,), 5: (3,), 6: (3,)}
    assert heads.induction_targets([1, 1]) == {}  # the token after the earlier 1 is the query itself
    assert heads.induction_targets([1, 2, 1]) == {}  # ... is the previous token
    assert heads.induction_targets([1, 2, 3, 1, 2, 3, 1]) == {3: (1,), 4: (2,), 5: (3,), 6: (1, 4)}
    assert heads.repeats_too_close([7, 7, 7]) and heads.repeats_too_close([1, 2, 1])
    assert not heads.repeats_too_close([1, 2, 3]) and not heads.repeats_too_close([1, 1, 2, 3, 1])
    mask = heads.induction_mask(np.array([[1, 2, 3, 1], [5, 5, 5, 5]]))  # a batch: one mask per sequence
    assert mask.shape == (2, 4, 4) and mask[0, 3, 1] and mask.sum() == 1 + 1  # [5 5 5 5]: row 3, target 1


def test_induction_sums_every_target_and_averages_over_rows_with_one():
    ids = [1, 2, 3, 1, 2, 3, 1]
    w = np.zeros((7, 7))
    w[np.arange(7), 0] = 1.0
    w[6] = 0
    w[6, [1, 4]] = [0.25, 0.5]  # row 6 has two targets: 0.75 on them
    w[6, 0] = 0.25
    w[3] = 0
    w[3, 1] = 1.0
    assert heads.induction(w, ids) == pytest.approx((1.0 + 0 + 0 + 0.75) / 4)
    assert heads.induction(w, ids, rows=[3, 6]) == pytest.approx((1.0 + 0.75) / 2)
    with pytest.raises(ValueError, match="rows"):
        heads.induction(w, ids, rows=[2])  # row 2 has no target
    with pytest.raises(ValueError, match="ids"):
        heads.induction(w, [1, 2, 1, 2, 3, 4, 5])  # repeats too close: undefined, never 0


def test_formulas_share_one_row_formula():
    for key in heads.KEYS:
        assert heads.FORMULAS[key] in heads.formula(key) and heads.FORMULAS[key] in heads.formula(key, "last")
    assert heads.formula("sink") == r"\frac{1}{n-2}\sum_{i=2}^{n-1} w_{i,0}"
    with pytest.raises(ValueError, match="key"):
        heads.formula("peak")
    with pytest.raises(ValueError, match="which"):
        heads.formula("sink", "first")


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="attentions"):
        heads.score("sink", np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="attentions"):
        heads.score("sink", np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="attentions"):
        heads.score("sink", np.tri(2))  # n = 2: no row from FIRST_ROW on
    with pytest.raises(ValueError, match="key"):
        heads.score("peak", np.tri(4))
    with pytest.raises(ValueError, match="ids"):
        heads.score("induction", np.tri(4) / 4)
    with pytest.raises(ValueError, match="ids"):
        heads.score("induction", np.tri(4) / 4, [1, 2, 3])
    with pytest.raises(ValueError, match="ids"):
        heads.induction_targets([0.5, 1.0])
    with pytest.raises(ValueError, match="rows"):
        heads.score("sink", np.tri(4) / 4, rows=[4])
    with pytest.raises(ValueError, match="rows"):
        heads.score("previous", np.tri(4) / 4, rows=[0, 3])
    with pytest.raises(ValueError, match="candidates"):
        heads.repeated_random_ids([1, 2, 2], 3, 0)
    with pytest.raises(ValueError, match="k"):
        heads.repeated_random_ids([1, 2, 3], 0, 0)
    with pytest.raises(ValueError, match="seed"):
        heads.repeated_random_ids([1, 2, 3], 2, -1)
    with pytest.raises(ValueError, match="n"):
        heads.uniform(0)


def test_repeated_random_ids_is_one_seeded_draw_written_twice():
    ids = heads.repeated_random_ids(list(range(100, 200)), 7, 3)
    chosen = [100 + int(i) for i in np.random.default_rng(3).choice(100, size=7, replace=False)]
    assert ids == tuple(chosen + chosen) and len(set(ids[:7])) == 7
    assert ids == heads.repeated_random_ids(range(100, 200), 7, 3) != heads.repeated_random_ids(range(100, 200), 7, 4)


def test_batch_pools_every_sequence_and_row():
    rng = np.random.default_rng(1)
    ids = np.array([[1, 2, 3, 1, 2, 3], [4, 5, 6, 7, 8, 4]])  # rows 3, 4, 5 and row 5
    w = causal(rng, (2, 3), 6)  # [B, H, n, n]
    pooled = heads.induction(w, ids, batch=True)
    by_hand = (w[0, :, 3, 1] + w[0, :, 4, 2] + w[0, :, 5, 3] + w[1, :, 5, 1]) / 4
    np.testing.assert_allclose(pooled, by_hand)
    np.testing.assert_allclose(heads.score("previous", w, batch=True), w[:, :, np.arange(2, 6), np.arange(1, 5)]
                               .mean(axis=(0, 2)))
    np.testing.assert_allclose(heads.induction(w, np.array([[1, 1, 2, 2, 3, 3]] * 2), batch=True),
                               0.0)  # no target anywhere: 0, documented


# --- properties that tie the definitions together --------------------------------------------------------------


@SETTINGS
@given(k=st.integers(3, 12), layers=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_general_induction_equals_the_repeated_prompt_formula(k, layers, seed):
    rng = np.random.default_rng(seed)
    ids = heads.repeated_random_ids(range(50), k, seed)
    w = causal(rng, (layers, 2), 2 * k)
    assert heads.induction_rows(ids) == tuple(range(k, 2 * k))
    second = np.arange(k, 2 * k)
    np.testing.assert_allclose(heads.induction(w, ids), w[..., second, second - k + 1].mean(-1), atol=1e-12)


@SETTINGS
@given(k=st.integers(3, 12), seed=st.integers(0, 10_000))
def test_a_previous_token_head_or_a_self_head_scores_zero_on_induction(k, seed):
    ids = heads.repeated_random_ids(range(40), k, seed)
    n = 2 * k
    both = np.stack([previous_head(n), np.eye(n)])
    np.testing.assert_array_equal(heads.induction(both, ids), [0.0, 0.0])
    assert heads.score("previous", both)[0] == 1.0


@SETTINGS
@given(ids=st.lists(st.integers(0, 3), min_size=3, max_size=14), seed=st.integers(0, 10_000))
def test_targets_are_never_the_query_the_previous_token_or_the_first(ids, seed):
    for i, targets in heads.induction_targets(ids).items():
        assert all(1 <= t <= i - 2 and ids[t - 1] == ids[i] for t in targets)
    # an induction score is a sum of weights on keys other than 0, i - 1, i: with sink, previous and self it is <= 1
    n = len(ids)
    w = causal(np.random.default_rng(seed), (2,), n)
    if heads.induction_rows(ids):
        r = list(heads.induction_rows(ids))
        total = sum(heads.score(k, w, ids if k == "induction" else None, r) for k in ("sink", "previous", "self",
                                                                                         "induction"))
        assert np.all(total <= 1 + 1e-12)


@SETTINGS
@given(n=st.integers(3, 12), seed=st.integers(0, 10_000), cut=st.integers(3, 12))
def test_rows_are_causal_a_rows_value_never_reads_a_later_token(n, seed, cut):
    """Row i's statistics read only w[i, :i+1] and ids[:i+1]: the first rows' values do not change when tokens are
    appended (a prompt extended keeps its earlier rows)."""
    cut = min(cut, n)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 3, size=n)
    w = causal(rng, (2,), n)
    part = w[..., :cut, :cut] / w[..., :cut, :cut].sum(-1, keepdims=True)  # the same rows, renormalised: equal
    np.testing.assert_allclose(part, w[..., :cut, :cut])
    for key in heads.KEYS:
        full, defined = heads.per_row(key, w, ids)
        short, short_defined = heads.per_row(key, part, ids[:cut])
        np.testing.assert_allclose(short, full[..., :cut], atol=1e-12)
        np.testing.assert_array_equal(short_defined, defined[..., :cut])


@SETTINGS
@given(n=st.integers(3, 16), seed=st.integers(0, 10_000))
def test_uniform_attention_is_the_baseline_each_statistic_states(n, seed):
    u = heads.uniform(n)
    r = heads.rows(n)
    s = heads.statistics(u)
    np.testing.assert_allclose(u.sum(-1), 1.0)
    for key in ("sink", "previous", "self"):
        assert s[key] == pytest.approx(np.mean(1 / (r + 1)))
    assert s["entropy"] == pytest.approx(np.mean(np.log2(r + 1)))  # the largest entropy a row may have
    w = causal(np.random.default_rng(seed), (3,), n)
    assert np.all(heads.score("entropy", w) <= s["entropy"] + 1e-9)


def test_key_weight_is_the_sink_on_key_0_and_reads_rows_that_see_the_key():
    w = causal(np.random.default_rng(2), (2, 3), 7)
    np.testing.assert_array_equal(heads.key_weight(w, 0), heads.score("sink", w))
    np.testing.assert_allclose(heads.key_weight(w, 3), w[..., 4:, 3].mean(-1))
    with pytest.raises(ValueError, match="attentions"):
        heads.key_weight(w, 6)
    with pytest.raises(ValueError, match="key"):
        heads.key_weight(w, -1)


def test_top_heads_order_ties_and_bad_input():
    v = np.zeros((3, 4))
    v[2, 1], v[0, 3], v[1, 0] = 5, 4, 4
    assert heads.top_heads(v, 3) == [(2, 1), (0, 3), (1, 0)]  # the tie: lower layer first
    assert heads.top_heads(-v, 1, largest=False) == [(2, 1)]
    assert heads.top_heads(v) == [(2, 1)] and heads.top_heads(np.array([[0.1, 0.2], [0.9, 0.3]])) == [(1, 0)]
    assert heads.top_heads(v.astype(np.float32), 20) == heads.top_heads(v, 12)  # at most every head
    for bad in (np.zeros(4), np.zeros((0, 3)), np.zeros((2, 2, 2)), [["a", "b"]]):
        with pytest.raises(ValueError, match="values"):
            heads.top_heads(bad)
    for k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="k must"):
            heads.top_heads(v, k)
