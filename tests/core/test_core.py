"""Tests of ``attention.core``: softmax, masks, scaled dot-product attention, head split.

Masks: ``True`` = may attend (the package's convention, as PyTorch's SDPA).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attention import (
    additive_mask,
    causal_mask,
    merge_heads,
    padding_mask,
    padding_mask_from_lengths,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

FAST = settings(max_examples=40, deadline=None)
finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


def rng_arrays(seed: int, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@st.composite
def qkv(draw, batch=(), max_n=6, max_d=5):
    """Random ``(q [*batch, n_q, d_k], k [*batch, n_k, d_k], v [*batch, n_k, d_v])``, entries in [-3, 3]."""
    n_q, n_k = draw(st.integers(1, max_n)), draw(st.integers(1, max_n))
    d_k, d_v = draw(st.integers(1, max_d)), draw(st.integers(1, max_d))
    el = st.floats(-3, 3, allow_nan=False, allow_infinity=False)
    q = draw(hnp.arrays(np.float64, (*batch, n_q, d_k), elements=el))
    k = draw(hnp.arrays(np.float64, (*batch, n_k, d_k), elements=el))
    v = draw(hnp.arrays(np.float64, (*batch, n_k, d_v), elements=el))
    return q, k, v


# --- softmax ----------------------------------------------------------------------------


def test_softmax_golden_examples(golden):
    """The lessons' softmax examples, including the row one lesson illustrated wrongly."""
    for example in golden["softmax_examples"]:
        np.testing.assert_allclose(softmax(example["logits"]), example["softmax"], rtol=1e-12, atol=1e-300)


def test_softmax_lesson_example_rounded():
    np.testing.assert_array_equal(np.round(softmax([2.0, 1.0, 0.1]), 3), [0.659, 0.242, 0.099])
    np.testing.assert_array_equal(np.round(softmax([2.1, 0.3, 0.1, 0.8, 0.2]), 3), [0.580, 0.096, 0.079, 0.158, 0.087])


@FAST
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=7), elements=finite))
def test_softmax_rows_sum_to_one(x):
    w = softmax(x)
    assert w.shape == x.shape and w.dtype == np.float64
    assert (w >= 0).all() and (w <= 1).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@FAST
@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 8)),
               elements=st.floats(-50, 50, allow_nan=False)),
    st.lists(st.floats(-100, 100, allow_nan=False), min_size=5, max_size=5),
)
def test_softmax_shift_invariant(x, shifts):
    """Adding a constant to a row of scores changes nothing (up to the rounding of x + c)."""
    c = np.array(shifts[: x.shape[0]])[:, None]  # one constant per row
    np.testing.assert_allclose(softmax(x + c), softmax(x), rtol=0, atol=1e-12)


@FAST
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 8)),
                  elements=st.floats(-1e308, 1e308, allow_nan=False, allow_infinity=False)))
def test_softmax_finite_for_huge_logits(x):
    """Any finite logits (far beyond +-1e4) give finite weights summing to 1."""
    w = softmax(x)
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


def test_softmax_of_logits_a_float_range_apart_is_exact_and_silent():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning: -1e308 - 1e308 overflows to -inf on purpose
        np.testing.assert_array_equal(softmax([1e308, -1e308]), [1.0, 0.0])
        np.testing.assert_array_equal(softmax([[-1.7e308, 1.7e308, 0.0]]), [[0.0, 1.0, 0.0]])


@pytest.mark.parametrize("big", [1e4, 1e5, 1e300])
def test_softmax_extreme_rows(big):
    np.testing.assert_array_equal(softmax([big, -big]), [1.0, 0.0])
    np.testing.assert_array_equal(softmax([big, big]), [0.5, 0.5])
    np.testing.assert_array_equal(softmax([-big, -big, -big, -big]), [0.25] * 4)


def test_softmax_minus_inf_and_mask():
    np.testing.assert_array_equal(softmax([0.0, -np.inf]), [1.0, 0.0])
    np.testing.assert_array_equal(softmax([-np.inf, -np.inf]), [0.0, 0.0])  # fully masked: zeros, not NaN
    w = softmax([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], mask=[[True, False, True], [False, False, False]])
    np.testing.assert_allclose(w[0], softmax([1.0, 3.0])[[0, 0, 1]] * [1, 0, 1], atol=1e-15)
    np.testing.assert_array_equal(w[1], 0.0)


def test_softmax_axis():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(softmax(x, axis=0), softmax(x.T).T, atol=1e-15)
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), 1.0, atol=1e-15)


# --- masks ------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_q", "n_k"), [(1, 1), (4, 4), (3, 5), (5, 3)])
def test_causal_mask_upper_left_aligned(n_q, n_k):
    m = causal_mask(n_q, n_k)
    assert m.dtype == np.bool_ and m.shape == (n_q, n_k)
    i, j = np.indices((n_q, n_k))
    np.testing.assert_array_equal(m, j <= i)


def test_causal_mask_default_square():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


def test_padding_masks():
    m = padding_mask_from_lengths([3, 1, 0], 4)
    assert m.shape == (3, 1, 4)
    np.testing.assert_array_equal(m[:, 0], [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(padding_mask(np.array([True, False])), [[True, False]])
    assert padding_mask_from_lengths(2, 3).shape == (1, 3)


def test_additive_mask_equals_boolean_mask():
    q, k, v = rng_arrays(0, (2, 4, 3), (2, 5, 3), (2, 5, 2))
    mask = np.random.default_rng(1).random((4, 5)) < 0.5
    mask[2] = False  # one fully masked row
    out_b, w_b = scaled_dot_product_attention(q, k, v, mask)
    out_f, w_f = scaled_dot_product_attention(q, k, v, additive_mask(mask))
    np.testing.assert_array_equal(additive_mask(np.array([True, False])), [0.0, -np.inf])
    np.testing.assert_array_equal(w_b, w_f)
    np.testing.assert_array_equal(out_b, out_f)


# --- scaled dot-product attention -------------------------------------------------------


def test_sdpa_matches_formula():
    """softmax(q kᵀ / sqrt(d_k)) v, written out (Vaswani et al. eq. 1)."""
    q, k, v = rng_arrays(2, (4, 3), (6, 3), (6, 2))
    s = q @ k.T / math.sqrt(3)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    out, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(weights, w, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out, w @ v, rtol=0, atol=1e-14)


def test_sdpa_explicit_scale():
    q, k, v = rng_arrays(3, (4, 3), (6, 3), (6, 2))
    out_a, w_a = scaled_dot_product_attention(q, k, v, scale=0.25)
    out_b, w_b = scaled_dot_product_attention(q * 0.25, k, v, scale=1.0)
    np.testing.assert_allclose(w_a, w_b, atol=1e-15)
    np.testing.assert_allclose(out_a, out_b, atol=1e-15)


def test_sdpa_float_mask_is_added():
    q, k, v = rng_arrays(4, (3, 2), (4, 2), (4, 2))
    bias = np.random.default_rng(5).normal(size=(3, 4))
    _, w = scaled_dot_product_attention(q, k, v, bias)
    np.testing.assert_allclose(w, softmax(q @ k.T / math.sqrt(2) + bias), atol=1e-15)


@pytest.mark.slow
@FAST
@given(qkv(), st.data())
def test_sdpa_unmasked_rows_sum_to_one_and_masked_rows_are_zero(arrays, data):
    q, k, v = arrays
    mask = data.draw(hnp.arrays(np.bool_, (q.shape[0], k.shape[0])))
    out, w = scaled_dot_product_attention(q, k, v, mask)
    dead = ~mask.any(axis=-1)
    np.testing.assert_allclose(w[~dead].sum(axis=-1), 1.0, atol=1e-12)
    assert (w[~mask] == 0).all()  # a blocked key gets exactly 0
    assert (w[dead] == 0).all() and (out[dead] == 0).all()  # fully masked row: zeros, never NaN
    assert np.isfinite(out).all()


@FAST
@given(qkv())
def test_sdpa_equals_explicit_double_loop(arrays):
    """The vectorised output equals out_i = sum_j w_ij v_j, computed one term at a time."""
    q, k, v = arrays
    out, w = scaled_dot_product_attention(q, k, v)
    expected = np.zeros_like(out)
    for i in range(q.shape[0]):
        for j in range(k.shape[0]):
            expected[i] += w[i, j] * v[j]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@FAST
@given(qkv(batch=(3,)), st.booleans())
def test_sdpa_batch_equals_loop(arrays, causal):
    q, k, v = arrays
    if causal:
        out, w = scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        out, w = scaled_dot_product_attention(q, k, v)
    for b in range(q.shape[0]):
        out_b, w_b = scaled_dot_product_attention(q[b], k[b], v[b], is_causal=causal)
        np.testing.assert_allclose(w[b], w_b, rtol=0, atol=1e-15)
        np.testing.assert_allclose(out[b], out_b, rtol=0, atol=1e-14)


def test_sdpa_broadcasts_leading_axes():
    q, k, v = rng_arrays(6, (2, 3, 4, 5), (1, 3, 6, 5), (2, 1, 6, 2))
    mask = np.random.default_rng(7).random((4, 6)) < 0.7
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (2, 3, 4, 2) and w.shape == (2, 3, 4, 6)
    for b in range(2):
        for h in range(3):
            out_bh, w_bh = scaled_dot_product_attention(q[b, h], k[0, h], v[b, 0], mask)
            np.testing.assert_allclose(out[b, h], out_bh, atol=1e-15)
            np.testing.assert_allclose(w[b, h], w_bh, atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_sdpa_causal_prefix_is_bit_exact(n_q, n_k, data):
    """Changing any token after position i leaves output rows <= i unchanged, bit for bit.

    The blocked scores become exactly -inf, exp(-inf) is exactly 0, and a 0 weight times
    any finite value adds an exact 0, so the prefix rows are computed from identical
    numbers in an identical order: equality holds exactly, no tolerance needed.
    """
    i = data.draw(st.integers(0, n_q - 1))
    q, k, v = rng_arrays(data.draw(st.integers(0, 2**32 - 1)), (n_q, 3), (n_k, 3), (n_k, 2))
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    q2[i + 1:] = -7.0 * q2[i + 1:] + 1.0
    k2[i + 1:] = 5.0 * k2[i + 1:] - 3.0
    v2[i + 1:] = 11.0
    out, w = scaled_dot_product_attention(q, k, v, is_causal=True)
    out2, w2 = scaled_dot_product_attention(q2, k2, v2, is_causal=True)
    np.testing.assert_array_equal(out2[: i + 1], out[: i + 1])
    np.testing.assert_array_equal(w2[: i + 1], w[: i + 1])


def test_sdpa_causal_weights_are_lower_triangular():
    q, k, v = rng_arrays(8, (5, 3), (5, 3), (5, 2))
    _, w = scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (np.triu(w, 1) == 0).all()
    assert w[0, 0] == 1.0
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, atol=1e-15)


# --- heads ------------------------------------------------------------------------------


@FAST
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.data())
def test_merge_split_roundtrip(batch, n, n_heads, d_head, data):
    x = data.draw(hnp.arrays(np.float64, (batch, n, n_heads * d_head), elements=finite))
    heads = split_heads(x, n_heads)
    assert heads.shape == (batch, n_heads, n, d_head)
    np.testing.assert_array_equal(merge_heads(heads), x)


def test_split_heads_takes_column_blocks():
    x = np.arange(2 * 6, dtype=float).reshape(2, 6)
    heads = split_heads(x, 3)  # head h = columns 2h, 2h+1
    np.testing.assert_array_equal(heads[1], x[:, 2:4])


# --- bad input --------------------------------------------------------------------------

Q, K, V = rng_arrays(9, (3, 4), (5, 4), (5, 2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": np.ones((5, 3))}, r"q and k must share d_k"),
        ({"v": np.ones((4, 2))}, r"k and v must have the same number of keys"),
        ({"attn_mask": np.ones((3, 4), dtype=bool)}, r"attn_mask of shape \(3, 4\) is not broadcastable"),
        ({"attn_mask": np.ones((2, 3, 5), dtype=bool), "q": np.ones((3, 3, 4))}, r"not broadcastable"),
        ({"attn_mask": np.ones((3, 5), dtype=bool), "is_causal": True}, r"either attn_mask or is_causal"),
        ({"q": np.ones((0, 4))}, r"^q must have shape .* no empty axis"),
        ({"k": np.ones((0, 4)), "v": np.ones((0, 2))}, r"^k must have shape .* no empty axis"),
        ({"v": np.ones((5, 0))}, r"^v must have shape .* no empty axis"),
        ({"q": np.ones(4)}, r"^q must have at least 2 axes"),
        ({"q": np.array([[1.0, np.nan, 0, 0]] * 3)}, r"^q contains NaN at index \(0, 1\)"),
        ({"k": np.full((5, 4), np.inf)}, r"^k contains \+-inf"),
        ({"v": -np.full((5, 2), np.inf)}, r"^v contains \+-inf"),
        ({"q": np.ones((2, 3, 4)), "k": np.ones((3, 5, 4)), "v": np.ones((3, 5, 2))}, r"do not broadcast"),
        ({"attn_mask": np.full((3, 5), np.nan)}, r"attn_mask \(float\) may hold"),
        ({"scale": np.inf}, r"scale must be finite"),
        ({"q": np.array([["a"] * 4] * 3)}, r"^q must be a numeric array"),
        ({"q": np.ones((3, 4), dtype=bool)}, r"^q must be a numeric array"),
    ],
)
def test_sdpa_bad_input(kwargs, match):
    args = {"q": Q, "k": K, "v": V, **kwargs}
    with pytest.raises(ValueError, match=match):
        scaled_dot_product_attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: softmax([1.0, np.nan]), r"x contains NaN"),
        (lambda: softmax([1.0, np.inf]), r"x contains \+inf"),
        (lambda: softmax([1.0, 2.0], mask=[1, 0]), r"mask must be boolean"),
        (lambda: softmax([1.0, 2.0], mask=[True, False, True]), r"not broadcastable"),
        (lambda: causal_mask(0), r"n_q must be a positive integer, got 0"),
        (lambda: causal_mask(3, -1), r"n_k must be a positive integer, got -1"),
        (lambda: causal_mask(2.5), r"n_q must be a positive integer"),
        (lambda: causal_mask(True), r"n_q must be a positive integer"),
        (lambda: padding_mask_from_lengths([5], 4), r"lengths must lie in 0..n_k=4"),
        (lambda: padding_mask_from_lengths([-1], 4), r"lengths must lie in"),
        (lambda: padding_mask(np.array([1, 0])), r"valid must be a boolean"),
        (lambda: additive_mask(np.array([1.0, 0.0])), r"mask must be boolean"),
        (lambda: split_heads(np.ones((2, 10)), 3),
         r"d_model=10 is not divisible by n_heads=3; valid n_heads for d_model=10: \[1, 2, 5, 10\]"),
        (lambda: split_heads(np.ones((2, 4)), 0), r"n_heads must be a positive integer, got 0"),
        (lambda: split_heads(np.ones(4), 2), r"x must have shape \[\.\.\., n, d_model\]"),
        (lambda: merge_heads(np.ones((2, 4))), r"x must have shape \[\.\.\., n_heads, n, d_head\]"),
    ],
)
def test_core_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- dtypes -----------------------------------------------------------------------------


def test_float32_in_float32_out():
    q, k, v = rng_arrays(10, (2, 4, 8), (2, 6, 8), (2, 6, 3))
    mask = causal_mask(4, 6)
    out64, w64 = scaled_dot_product_attention(q, k, v, mask)
    out32, w32 = scaled_dot_product_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), mask)
    assert out32.dtype == np.float32 and w32.dtype == np.float32
    np.testing.assert_allclose(out32, out64, rtol=0, atol=2e-6)
    np.testing.assert_allclose(w32, w64, rtol=0, atol=2e-6)
    # float mask in float64 does not promote float32 inputs
    out32f, _ = scaled_dot_product_attention(*(a.astype(np.float32) for a in (q, k, v)), additive_mask(mask))
    assert out32f.dtype == np.float32
    s32 = softmax(np.array([2.0, 1.0, 0.1], dtype=np.float32))
    assert s32.dtype == np.float32
    np.testing.assert_allclose(s32, softmax([2.0, 1.0, 0.1]), atol=1e-7)


def test_int_inputs_promote_to_float64():
    q = np.array([[1, 0], [0, 1]])
    out, w = scaled_dot_product_attention(q, q, np.array([[1, 2], [3, 4]]))
    assert out.dtype == np.float64 and w.dtype == np.float64
    assert softmax([1, 2, 3]).dtype == np.float64
    np.testing.assert_allclose(w[0], softmax([1 / math.sqrt(2), 0.0]), atol=1e-15)
    # lists work too
    out_l, _ = scaled_dot_product_attention([[1.0, 0.0]], [[1.0, 0.0]], [[2.0]])
    np.testing.assert_array_equal(out_l, [[2.0]])


def test_mixed_float32_float64_computes_in_float64():
    q, k, v = rng_arrays(11, (3, 4), (5, 4), (5, 2))
    out, _ = scaled_dot_product_attention(q.astype(np.float32), k, v)
    assert out.dtype == np.float64
