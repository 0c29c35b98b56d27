"""Tests of ``attention.layers``: the lessons' worked examples, SelfAttention and MultiHeadAttention."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import (
    PIPELINE_EXAMPLE,
    SENTENCE_EXAMPLE,
    MultiHeadAttention,
    SelfAttention,
    attention_steps,
    embed_tokens,
    scaled_dot_product_attention,
    tokenize,
)

GOLDEN_TOL = {"rtol": 0, "atol": 1e-9}


# --- the lessons' worked examples (shared/golden/lesson_examples.json) -----------------


def test_pipeline_example_inputs_match_golden(golden):
    inputs = golden["pipeline_example"]["inputs"]
    for name in ("X", "W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(getattr(PIPELINE_EXAMPLE, name), inputs[name])


@pytest.mark.parametrize(
    ("field", "key"),
    [("Q", "Q"), ("K", "K"), ("V", "V"), ("scores", "scores"), ("scaled_scores", "scaled_scores"),
     ("weights", "attention_weights"), ("output", "output")],
)
def test_pipeline_example_every_step(golden, field, key):
    ex = PIPELINE_EXAMPLE
    steps = attention_steps(ex.X, ex.W_q, ex.W_k, ex.W_v)
    np.testing.assert_allclose(getattr(steps, field), golden["pipeline_example"]["expected"][key], **GOLDEN_TOL)


def test_pipeline_example_tie_in_second_row():
    """The lesson's noteworthy tie: query 2 weighs keys 2 and 3 equally (0.349564)."""
    ex = PIPELINE_EXAMPLE
    w = attention_steps(ex.X, ex.W_q, ex.W_k, ex.W_v).weights
    assert w[1, 1] == pytest.approx(w[1, 2], abs=1e-15)
    assert round(w[1, 1], 6) == 0.349564


def test_sentence_example_params_match_golden(golden):
    params = golden["sentence_example"]["params"]
    ex = SENTENCE_EXAMPLE
    assert tokenize(ex.sentence) == params["tokens"]
    assert (ex.d_model, ex.d_k, ex.d_v, ex.seed) == (params["d_model"], params["d_k"], params["d_v"], params["seed"])


def test_sentence_example_every_step(golden):
    ex = SENTENCE_EXAMPLE
    expected = golden["sentence_example"]["expected"]
    layer = SelfAttention(ex.d_model, ex.d_k, ex.d_v, seed=ex.seed)
    X = embed_tokens(tokenize(ex.sentence), ex.d_model, ex.seed, "lesson")
    np.testing.assert_allclose(X, expected["X"], **GOLDEN_TOL)
    np.testing.assert_allclose(layer.W_q, expected["W_q"], **GOLDEN_TOL)
    np.testing.assert_allclose(layer.W_k, expected["W_k"], **GOLDEN_TOL)
    np.testing.assert_allclose(layer.W_v, expected["W_v"], **GOLDEN_TOL)
    output, weights = layer.forward(X)
    np.testing.assert_allclose(weights, expected["attention_weights"], **GOLDEN_TOL)
    np.testing.assert_allclose(output, expected["output"], **GOLDEN_TOL)
    assert output.shape == (6, 4) and weights.shape == (6, 6)


# --- attention_steps / SelfAttention ----------------------------------------------------


def test_attention_steps_are_consistent():
    rng = np.random.default_rng(0)
    X, W_q, W_k, W_v = (rng.normal(size=s) for s in ((5, 6), (6, 3), (6, 3), (6, 2)))
    s = attention_steps(X, W_q, W_k, W_v, is_causal=True)
    np.testing.assert_allclose(s.scaled_scores, s.Q @ s.K.T / math.sqrt(3), atol=1e-15)
    out, w = scaled_dot_product_attention(s.Q, s.K, s.V, is_causal=True)
    np.testing.assert_array_equal(s.weights, w)
    np.testing.assert_array_equal(s.output, out)
    np.testing.assert_array_equal(s.mask, np.tri(5, dtype=bool))
    assert attention_steps(X, W_q, W_k, W_v).mask is None


def test_self_attention_weight_draw_follows_lesson():
    rng = np.random.default_rng(7)
    layer = SelfAttention(6, 3, 2, seed=7)
    np.testing.assert_array_equal(layer.W_q, rng.normal(0, math.sqrt(2 / 9), (6, 3)))
    np.testing.assert_array_equal(layer.W_k, rng.normal(0, math.sqrt(2 / 9), (6, 3)))
    np.testing.assert_array_equal(layer.W_v, rng.normal(0, math.sqrt(2 / 8), (6, 2)))
    assert SelfAttention(6, 3).d_v == 3


def test_same_instance_two_sentences():
    """Lesson exercise 3: one SelfAttention, two sentences of the same length, different patterns."""
    layer = SelfAttention(8, 4, 4, seed=42)
    a = embed_tokens(tokenize("The cat sat on the mat"), 8, 42, "per-token")
    b = embed_tokens(tokenize("A dog ran in the park"), 8, 42, "per-token")
    _, w_a = layer(a)
    _, w_b = layer(b)
    assert w_a.shape == w_b.shape == (6, 6)
    assert not np.allclose(w_a, w_b)


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(6)), st.integers(0, 2**32 - 1))
def test_self_attention_permutation_equivariant(perm, seed):
    """Without positional encoding, permuting the tokens permutes the output rows (and the weights)."""
    perm = np.array(perm)
    layer = SelfAttention(8, 4, 3, seed=1)
    X = np.random.default_rng(seed).normal(size=(6, 8))
    out, w = layer(X)
    out_p, w_p = layer(X[perm])
    np.testing.assert_allclose(out_p, out[perm], rtol=0, atol=1e-13)
    np.testing.assert_allclose(w_p, w[perm][:, perm], rtol=0, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 7), st.data())
def test_self_attention_causal_prefix_is_bit_exact(n, data):
    """Changing tokens after position i leaves output rows <= i exactly unchanged (see test_core)."""
    i = data.draw(st.integers(0, n - 1))
    layer = SelfAttention(8, 4, 4, seed=3)
    X = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).normal(size=(n, 8))
    X2 = X.copy()
    X2[i + 1:] = np.random.default_rng(99).normal(size=(n - i - 1, 8)) * 10
    out, w = layer(X, is_causal=True)
    out2, w2 = layer(X2, is_causal=True)
    np.testing.assert_array_equal(out2[: i + 1], out[: i + 1])
    np.testing.assert_array_equal(w2[: i + 1], w[: i + 1])


def test_self_attention_batch_equals_loop():
    layer = SelfAttention(8, 4, 4, seed=5)
    X = np.random.default_rng(5).normal(size=(3, 5, 8))
    out, w = layer(X)
    for b in range(3):
        out_b, w_b = layer(X[b])
        np.testing.assert_allclose(out[b], out_b, rtol=0, atol=1e-14)
        np.testing.assert_allclose(w[b], w_b, rtol=0, atol=1e-15)


# --- MultiHeadAttention ----------------------------------------------------------------


def _mha_by_hand(layer: MultiHeadAttention, x: np.ndarray, mask=None):
    """Lesson exercise 2 written as loops: per head, slice columns, attend, concatenate, project."""
    q, k, v = x @ layer.W_q, x @ layer.W_k, x @ layer.W_v
    heads, weights = [], []
    for h in range(layer.n_heads):
        cols = slice(h * layer.d_head, (h + 1) * layer.d_head)
        s = q[:, cols] @ k[:, cols].T / math.sqrt(layer.d_head)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        heads.append(w @ v[:, cols])
        weights.append(w)
    return np.concatenate(heads, axis=1) @ layer.W_o, np.stack(weights)


@pytest.mark.parametrize("causal", [False, True])
def test_mha_matches_per_head_loop(causal):
    layer = MultiHeadAttention(12, 3, seed=4)
    x = np.random.default_rng(4).normal(size=(5, 12))
    out, w = layer(x, is_causal=causal)
    out_ref, w_ref = _mha_by_hand(layer, x, np.tri(5, dtype=bool) if causal else None)
    assert out.shape == (5, 12) and w.shape == (3, 5, 5)
    np.testing.assert_allclose(out, out_ref, rtol=0, atol=1e-14)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-15)


def test_mha_steps_agrees_with_forward():
    layer = MultiHeadAttention(8, 2, seed=1, bias=True)
    layer.b_q = layer.b_q + 0.1  # make the biases matter
    layer.b_o = layer.b_o - 0.2
    x = np.random.default_rng(1).normal(size=(2, 4, 8))
    kpm = np.array([[True, True, True, False], [True, True, False, False]])
    r = layer.steps(x, key_padding_mask=kpm, is_causal=True)
    out, w = layer.forward(x, key_padding_mask=kpm, is_causal=True)
    np.testing.assert_array_equal(r.output, out)
    np.testing.assert_array_equal(r.weights, w)
    np.testing.assert_array_equal(r.mean_weights, w.mean(axis=1))
    np.testing.assert_allclose(r.q, x @ layer.W_q + layer.b_q, atol=1e-15)
    np.testing.assert_array_equal(r.concat, r.head_outputs.transpose(0, 2, 1, 3).reshape(2, 4, 8))
    np.testing.assert_allclose(r.scaled_scores, r.q_heads @ r.k_heads.swapaxes(-1, -2) / 2.0, atol=1e-15)
    assert (w[1, :, :, 2:] == 0).all()  # padded keys get no weight in any head
    assert (np.triu(w, 1) == 0).all()


def test_mha_attn_mask_combines_with_padding():
    layer = MultiHeadAttention(4, 2, seed=2)
    x = np.random.default_rng(2).normal(size=(3, 4))
    attn = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
    kpm = np.array([True, False, True])
    _, w = layer(x, attn_mask=attn, key_padding_mask=kpm)
    _, w_ref = _mha_by_hand(layer, x, attn & kpm)
    np.testing.assert_allclose(w, w_ref, atol=1e-15)


def test_mha_fully_masked_row_is_bias_only():
    """A query that may attend to nothing: zero weights, zero head output, output = b_o (never NaN)."""
    layer = MultiHeadAttention(4, 2, seed=3, bias=True)
    layer.b_o = np.array([1.0, -2.0, 3.0, 0.5])
    x = np.random.default_rng(3).normal(size=(3, 4))
    kpm = np.array([False, True, True])  # key 0 is padding, so causal query 0 sees nothing
    r = layer.steps(x, key_padding_mask=kpm, is_causal=True)
    assert (r.weights[:, 0] == 0).all() and (r.concat[0] == 0).all()
    np.testing.assert_array_equal(r.output[0], layer.b_o)
    assert np.isfinite(r.output).all()


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 6), st.data())
def test_mha_causal_prefix_is_bit_exact(n, data):
    i = data.draw(st.integers(0, n - 1))
    layer = MultiHeadAttention(8, 4, seed=6, bias=True)
    X = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).normal(size=(n, 8))
    X2 = X.copy()
    X2[i + 1:] = -X2[i + 1:] * 3 + 1
    out, w = layer(X, is_causal=True)
    out2, w2 = layer(X2, is_causal=True)
    np.testing.assert_array_equal(out2[: i + 1], out[: i + 1])
    np.testing.assert_array_equal(w2[..., : i + 1, :], w[..., : i + 1, :])


def test_mha_batch_equals_loop():
    layer = MultiHeadAttention(8, 2, seed=8)
    X = np.random.default_rng(8).normal(size=(3, 5, 8))
    out, w = layer(X)
    for b in range(3):
        out_b, w_b = layer(X[b])
        np.testing.assert_allclose(out[b], out_b, rtol=0, atol=1e-14)
        np.testing.assert_allclose(w[b], w_b, rtol=0, atol=1e-15)


def test_mha_float32_in_float32_out():
    layer = MultiHeadAttention(8, 2, seed=9, bias=True)
    x = np.random.default_rng(9).normal(size=(2, 5, 8))
    out64, w64 = layer(x, is_causal=True)
    out32, w32 = layer(x.astype(np.float32), is_causal=True)
    assert out32.dtype == np.float32 and w32.dtype == np.float32
    np.testing.assert_allclose(out32, out64, rtol=0, atol=2e-6)
    np.testing.assert_allclose(w32, w64, rtol=0, atol=2e-6)
    out_int, _ = layer(np.ones((3, 8), dtype=int))
    assert out_int.dtype == np.float64


def test_self_attention_dtypes():
    layer = SelfAttention(4, 2, seed=0)
    out, w = layer(np.arange(12).reshape(3, 4))
    assert out.dtype == np.float64 and w.dtype == np.float64


# --- bad input --------------------------------------------------------------------------


def test_mha_head_count_error_names_both_numbers_and_valid_counts():
    with pytest.raises(ValueError, match=r"d_model=12 is not divisible by n_heads=5") as err:
        MultiHeadAttention(12, 5)
    assert "[1, 2, 3, 4, 6, 12]" in str(err.value)
    with pytest.raises(ValueError, match=r"valid n_heads for d_model=8: \[1, 2, 4, 8\]"):
        MultiHeadAttention.from_torch(np.ones((24, 8)), None, np.ones((8, 8)), None, n_heads=3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: SelfAttention(0, 4), r"d_model must be a positive integer, got 0"),
        (lambda: SelfAttention(8, -1), r"d_k must be a positive integer, got -1"),
        (lambda: SelfAttention(8, 4, 0), r"d_v must be a positive integer, got 0"),
        (lambda: SelfAttention(8.0, 4), r"d_model must be a positive integer"),
        (lambda: MultiHeadAttention(0, 1), r"d_model must be a positive integer, got 0"),
        (lambda: MultiHeadAttention(8, 0), r"n_heads must be a positive integer, got 0"),
        (lambda: MultiHeadAttention(8, -2), r"n_heads must be a positive integer, got -2"),
    ],
)
def test_layer_sizes_must_be_positive(call, match):
    with pytest.raises(ValueError, match=match):
        call()


LAYER = SelfAttention(4, 2, seed=0)
MHA = MultiHeadAttention(4, 2, seed=0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: LAYER(np.ones((3, 5))), r"W_q must have shape \[d_model=5, width\], got \(4, 2\)"),
        (lambda: LAYER(np.ones((0, 4))), r"no empty axis"),
        (lambda: LAYER(np.array([[1.0, 2.0, np.nan, 0.0]])), r"^X contains NaN at index \(0, 2\)"),
        (lambda: LAYER(np.array([[1.0, np.inf, 0.0, 0.0]])), r"^X contains \+-inf"),
        (lambda: LAYER(np.ones((3, 4)), attn_mask=np.ones((3, 3)), is_causal=False), r"attn_mask must be boolean"),
        (lambda: LAYER(np.ones((3, 4)), attn_mask=np.ones((3, 3), dtype=bool), is_causal=True),
         r"either attn_mask or is_causal"),
        (lambda: LAYER(np.ones((3, 4)), attn_mask=np.ones((2, 2), dtype=bool)), r"not broadcastable"),
        (lambda: attention_steps(np.ones((3, 4)), np.ones((4, 2)), np.ones((4, 3)), np.ones((4, 2))),
         r"must have the same width d_k"),
        (lambda: MHA(np.ones((3, 5))), r"x must have shape \[\.\.\., n, d_model=4\]"),
        (lambda: MHA(np.ones((0, 4))), r"x must have shape"),
        (lambda: MHA(np.full((3, 4), np.nan)), r"^x contains NaN"),
        (lambda: MHA(np.ones((3, 4)), attn_mask=np.ones((3, 3))), r"attn_mask must be boolean \[\.\.\., n, n\]"),
        (lambda: MHA(np.ones((3, 4)), key_padding_mask=np.ones(4, dtype=bool)), r"key_padding_mask must be boolean"),
        (lambda: MultiHeadAttention.from_torch(np.ones((12, 3)), None, np.ones((4, 4)), None, 2),
         r"in_proj_weight must have shape \[3E, E\]"),
        (lambda: MultiHeadAttention.from_torch(np.ones((12, 4)), np.ones(4), np.ones((4, 4)), None, 2),
         r"in_proj_bias must have shape \[3E\]"),
        (lambda: MultiHeadAttention.from_torch(np.ones((12, 4)), None, np.ones((4, 3)), None, 2),
         r"out_proj_weight must have shape \[E, E\]"),
        (lambda: MultiHeadAttention.from_torch(np.ones((12, 4)), None, np.ones((4, 4)), np.ones(3), 2),
         r"out_proj_bias must have shape \[E\]"),
    ],
)
def test_layer_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
