"""Tests of ``attention.lookup``: the hard lookup, the soft lookup and the sharpness dial."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attention import (
    hard_lookup,
    hard_lookup_batch,
    nearest_value,
    scaled_dot_product_attention,
    sharpness_sweep,
    similarities,
    soft_lookup,
    soft_lookup_batch,
)

# Countries (2-D keys) -> capitals (longitude, latitude): the page's default table.
KEYS = np.array([[1.73, 1.0], [1.0, 1.73], [2.0, 0.0], [-0.35, 1.97], [-1.88, -0.68], [0.35, -1.97]])
VALUES = np.array([[2.4, 48.9], [13.4, 52.5], [-3.7, 40.4], [12.5, 41.9], [139.7, 35.7], [-47.9, -15.8]])

tables = st.integers(1, 8).flatmap(lambda m: st.integers(1, 4).flatmap(lambda d: st.tuples(
    hnp.arrays(np.float64, (d,), elements=st.floats(-5, 5)),
    hnp.arrays(np.float64, (m, d), elements=st.floats(-5, 5)),
    hnp.arrays(np.float64, (m, 3), elements=st.floats(-100, 100)),
)))
sharpness = st.one_of(st.just(0.0), st.just(1e6), st.floats(0, 1e6))


def test_capital_of_france_finds_paris():
    hard = hard_lookup(KEYS[0], KEYS, VALUES)
    assert hard.indices == (0,) and not hard.is_tie
    np.testing.assert_array_equal(hard.value, VALUES[0])
    np.testing.assert_array_equal(hard.weights, [1, 0, 0, 0, 0, 0])
    w, blend = soft_lookup(KEYS[0], KEYS, VALUES, 1 / math.sqrt(2))
    assert np.argmax(w) == 0 and 0.3 < w[0] < 0.5  # the best key, but far from all of the weight
    assert nearest_value(blend, VALUES) == 0  # the blend still lands nearest to Paris


def test_similarities_are_dot_products():
    np.testing.assert_allclose(similarities([1.0, 2.0], [[1, 2], [3, -4], [0, 0]]), [5, -5, 0])


@pytest.mark.parametrize("query", [KEYS[0], KEYS[4], [0.3, -0.2], [0.0, 0.0]])
def test_sharpness_zero_gives_uniform_weights_and_the_mean(query):
    w, blend = soft_lookup(query, KEYS, VALUES, 0.0)
    np.testing.assert_array_equal(w, np.full(6, 1 / 6))
    np.testing.assert_allclose(blend, VALUES.mean(axis=0), rtol=0, atol=1e-12)


def test_zero_query_is_uniform_at_any_sharpness():
    for s in (0.0, 1.0, 1e6):
        np.testing.assert_allclose(soft_lookup([0.0, 0.0], KEYS, VALUES, s).weights, 1 / 6, atol=1e-15)


@pytest.mark.parametrize("query", [*KEYS, [0.3, -0.2], [-4.0, 4.0]])
def test_huge_sharpness_equals_the_hard_lookup(query):
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # no overflow or NaN on the way
        w, blend = soft_lookup(query, KEYS, VALUES, 1e6)
    hard = hard_lookup(query, KEYS, VALUES)
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(blend))
    np.testing.assert_allclose(blend, hard.value, rtol=0, atol=1e-6)
    np.testing.assert_allclose(w, hard.weights, rtol=0, atol=1e-12)


def test_huge_sharpness_with_huge_scores_does_not_overflow():
    keys = KEYS * 1e3
    w, blend = soft_lookup(keys[1] * 1e3, keys, VALUES, 1e300)  # scores ~1e12, times 1e300
    assert np.all(np.isfinite(w))
    np.testing.assert_array_equal(w, hard_lookup(keys[1], keys, VALUES).weights)
    np.testing.assert_array_equal(blend, VALUES[1])


def test_tie_is_reported_and_split_evenly():
    query = [1.365, 1.365]  # halfway between France and Germany, whose keys are equally long
    hard = hard_lookup(query, KEYS, VALUES)
    assert hard.is_tie and hard.indices == (0, 1)
    np.testing.assert_array_equal(hard.weights, [0.5, 0.5, 0, 0, 0, 0])
    np.testing.assert_allclose(hard.value, (VALUES[0] + VALUES[1]) / 2)
    for s in (0.0, 0.7, 10.0, 1e6):
        w, blend = soft_lookup(query, KEYS, VALUES, s)
        assert w[0] == pytest.approx(w[1], rel=1e-12)  # symmetric: the tied keys get the same weight
    np.testing.assert_allclose(blend, hard.value, atol=1e-6)  # and the huge-sharpness blend is the even split


def test_tie_tolerance_absorbs_rounding_but_not_a_real_difference():
    keys = np.array([[0.1 + 0.2, 0.0], [0.3, 0.0], [0.0, 1.0]])  # 0.1 + 0.2 != 0.3 in floating point
    assert hard_lookup([1.0, 0.0], keys, np.eye(3)).is_tie
    keys[1, 0] = 0.3 - 1e-6
    assert hard_lookup([1.0, 0.0], keys, np.eye(3)).indices == (0,)


def test_soft_lookup_is_symmetric_under_swapping_rows():
    perm = np.array([1, 0, 2, 3, 5, 4])
    for s in (0.3, 5.0):
        w, blend = soft_lookup([0.5, 1.5], KEYS, VALUES, s)
        w2, blend2 = soft_lookup([0.5, 1.5], KEYS[perm], VALUES[perm], s)
        np.testing.assert_allclose(w2, w[perm], rtol=1e-14)
        np.testing.assert_allclose(blend2, blend, rtol=1e-13)


@settings(max_examples=40, deadline=None)
@given(tables, sharpness)
def test_weights_sum_to_one_and_blend_is_a_convex_combination(table, s):
    q, K, V = table
    w, blend = soft_lookup(q, K, V, s)
    assert np.all(w >= 0) and np.all(np.isfinite(w))
    assert math.isclose(w.sum(), 1.0, rel_tol=0, abs_tol=1e-12)
    assert np.all(blend >= V.min(axis=0) - 1e-9) and np.all(blend <= V.max(axis=0) + 1e-9)
    hard = hard_lookup(q, K, V)
    assert math.isclose(hard.weights.sum(), 1.0, abs_tol=1e-15) and len(hard.indices) >= 1


@settings(max_examples=40, deadline=None)
@given(tables)
def test_huge_sharpness_matches_hard_lookup_when_the_best_key_is_clear(table):
    q, K, V = table
    scores = K @ q
    top2 = np.sort(scores)[-2:] if len(scores) > 1 else np.array([-np.inf, scores[0]])
    assume(top2[1] - top2[0] > 1e-4)  # a clear winner (exact ties are tested above)
    _, blend = soft_lookup(q, K, V, 1e6)
    np.testing.assert_allclose(blend, hard_lookup(q, K, V).value, rtol=0, atol=1e-6)


def test_batch_is_the_attention_matrix():
    Q = np.vstack([[0.4, 1.1], KEYS])
    for s in (0.0, 1 / math.sqrt(2), 3.0):
        w, out = soft_lookup_batch(Q, KEYS, VALUES, s)
        ref_out, ref_w = scaled_dot_product_attention(Q, KEYS, VALUES, scale=s)
        np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(out, ref_out, rtol=1e-12)
        np.testing.assert_allclose(w[1], soft_lookup(KEYS[0], KEYS, VALUES, s).weights)
    _, ref_w = scaled_dot_product_attention(Q, KEYS, VALUES)  # default scale 1/sqrt(d_k)
    np.testing.assert_allclose(soft_lookup_batch(Q, KEYS, VALUES, 1 / math.sqrt(2))[0], ref_w, rtol=1e-12)
    hw, hout = hard_lookup_batch(Q, KEYS, VALUES)
    np.testing.assert_array_equal(hw[1:], np.eye(6))  # every key finds itself
    np.testing.assert_array_equal(hout[1:], VALUES)


def test_sweep_runs_from_the_mean_to_the_hard_lookup():
    s = np.array([0.0, 0.1, 1.0, 10.0, 1e6])
    w, blends = sharpness_sweep(KEYS[2], KEYS, VALUES, s)
    assert w.shape == (5, 6) and blends.shape == (5, 2)
    np.testing.assert_allclose(w[0], 1 / 6)
    np.testing.assert_allclose(blends[-1], VALUES[2], atol=1e-6)
    np.testing.assert_allclose(w[2], soft_lookup(KEYS[2], KEYS, VALUES, 1.0).weights, rtol=1e-14)
    assert np.all(np.diff(w[:, 2]) >= 0)  # the best key only gains weight as the sharpness grows


def test_a_single_row_table():
    w, blend = soft_lookup([1.0], [[2.0]], [[7.0, 8.0]], 3.0)
    np.testing.assert_array_equal(w, [1.0])
    np.testing.assert_array_equal(blend, [7.0, 8.0])


def test_nearest_value_picks_the_closest_row():
    assert nearest_value([3.0, 47.0], VALUES) == 0  # (longitude, latitude): near Paris
    assert nearest_value([100.0, 40.0], VALUES) == 4  # nearest to Tokyo


@pytest.mark.parametrize(("args", "message"), [
    (([1.0, 2.0], [], [[1.0]], 1.0), "at least one row"),
    (([1.0, 2.0], [[1.0, 2.0], [1.0, 2.0, 3.0]], [[1.0], [2.0]], 1.0), "keys: row 1 has 3 numbers but row 0 has 2"),
    (([1.0, 2.0, 3.0], KEYS, VALUES, 1.0), "queries rows have 3 numbers but each key has 2"),
    (([1.0, 2.0], KEYS, VALUES[:5], 1.0), "6 keys, 5 values"),
    (([1.0, np.nan], KEYS, VALUES, 1.0), "NaN"),
    (([1.0, 2.0], KEYS, VALUES, -1.0), "sharpness"),
    (([1.0, 2.0], KEYS, VALUES, math.inf), "sharpness"),
    (([1.0, 2.0], KEYS, VALUES, "sharp"), "sharpness"),
    (([1.0, 2.0], [["a", "b"]], [[1.0]], 1.0), "numeric"),
    (([1e200, 1e200], [[1e200, 1e200]], [[1.0]], 1.0), "overflow"),
])
def test_bad_input_is_a_clear_value_error(args, message):
    with pytest.raises(ValueError, match=message):
        soft_lookup(*args)


def test_hard_lookup_and_sweep_validate_too():
    with pytest.raises(ValueError, match="row 1 has 1 numbers"):
        hard_lookup([1.0, 2.0], [[1.0, 2.0], [3.0]], [[1.0], [2.0]])
    with pytest.raises(ValueError, match="sharpnesses"):
        sharpness_sweep(KEYS[0], KEYS, VALUES, [1.0, -2.0])
    with pytest.raises(ValueError, match="query must be a vector"):
        similarities([[1.0, 2.0]], KEYS)
