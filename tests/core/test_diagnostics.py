"""Tests of ``attention.diagnostics``: entropy, softmax Jacobian and the saturation sweep."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attention import (
    effective_keys,
    entropy,
    jacobian_frobenius_norm,
    sample_scores,
    saturation_sweep,
    softmax,
    softmax_jacobian,
)

logits = hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 8)),
                    elements=st.floats(-8, 8, allow_nan=False))

# --- entropy ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 64])
def test_entropy_one_hot_and_uniform(n):
    one_hot = np.eye(n)
    np.testing.assert_array_equal(entropy(one_hot), 0.0)
    np.testing.assert_array_equal(effective_keys(one_hot), 1.0)
    uniform = np.full((2, n), 1 / n)
    np.testing.assert_allclose(entropy(uniform), math.log(n), rtol=0, atol=1e-14)
    np.testing.assert_allclose(effective_keys(uniform), n, rtol=1e-13)


def test_entropy_fully_masked_row_and_axis():
    np.testing.assert_array_equal(entropy(np.zeros((2, 3))), 0.0)
    p = np.array([[0.5, 1.0], [0.5, 0.0]])
    np.testing.assert_allclose(entropy(p, axis=0), [math.log(2), 0.0], atol=1e-15)


@pytest.mark.parametrize("bad", [[0.5, -0.1], [np.nan, 1.0], [np.inf, 0.0]])
def test_diagnostics_reject_bad_weights(bad):
    with pytest.raises(ValueError, match=r"finite, non-negative"):
        entropy(bad)
    with pytest.raises(ValueError, match=r"finite, non-negative"):
        softmax_jacobian(bad)


def test_diagnostics_reject_empty():
    with pytest.raises(ValueError, match=r"shape \[\.\.\., n\] with n >= 1"):
        jacobian_frobenius_norm(np.zeros((2, 0)))


# --- softmax Jacobian -------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(logits)
def test_softmax_jacobian_equals_closed_form_and_finite_differences(z):
    p = softmax(z)
    J = softmax_jacobian(p)  # [rows, n, n], J[r, i, j] = d p_i / d z_j
    assert J.shape == (*z.shape, z.shape[-1])
    for r in range(z.shape[0]):
        np.testing.assert_allclose(J[r], np.diag(p[r]) - np.outer(p[r], p[r]), rtol=0, atol=1e-15)
        h = 1e-6
        fd = np.empty_like(J[r])
        for j in range(z.shape[1]):
            dz = np.zeros(z.shape[1])
            dz[j] = h
            fd[:, j] = (softmax(z[r] + dz) - softmax(z[r] - dz)) / (2 * h)  # central difference
        np.testing.assert_allclose(J[r], fd, rtol=0, atol=1e-8)
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, atol=1e-15)  # softmax ignores a common shift


@settings(max_examples=30, deadline=None)
@given(logits)
def test_jacobian_frobenius_norm_equals_numpy_norm(z):
    """Agreement with ``np.linalg.norm`` of the full matrix.

    rtol 1e-9: the matrix's own diagonal ``p - p*p`` loses relative precision
    ~eps / (1 - p_max) on nearly one-hot rows (logit gaps up to 16 here); the exact
    comparison is the next test.
    """
    p = softmax(z)
    np.testing.assert_allclose(jacobian_frobenius_norm(p), np.linalg.norm(softmax_jacobian(p), axis=(-2, -1)),
                               rtol=1e-9, atol=0)


def _exact_jacobian_norm(p: np.ndarray) -> float:
    """||diag(p) - p pᵀ||_F of the given float64 ``p``, in exact rational arithmetic."""
    P = [Fraction(float(x)) for x in p]
    return math.sqrt(sum(((P[i] if i == j else 0) - P[i] * P[j]) ** 2 for i in range(len(P)) for j in range(len(P))))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-40, 40, allow_nan=False)))
def test_jacobian_frobenius_norm_is_accurate_on_saturated_rows(z):
    """Full relative precision even when the row is nearly one-hot (logit gaps up to 80)."""
    p = softmax(z)
    np.testing.assert_allclose(jacobian_frobenius_norm(p), _exact_jacobian_norm(p), rtol=1e-13, atol=0)


@pytest.mark.parametrize("gap", [7.0, 18.0, 25.0, 40.0])
def test_jacobian_frobenius_norm_two_keys(gap):
    """Two keys: ||J||_F = 2 p0 p1 exactly; a closed form with cancellation gave 0 from gap ~19 on."""
    p = softmax(np.array([0.0, gap]))
    assert jacobian_frobenius_norm(p) == pytest.approx(2 * p[0] * p[1], rel=1e-14)


def test_jacobian_vanishes_when_saturated():
    np.testing.assert_array_equal(softmax_jacobian(np.array([0.0, 1.0, 0.0])), 0.0)
    assert jacobian_frobenius_norm(softmax(np.array([60.0, 0.0, 0.0]))) < 1e-20
    n = 16  # uniform rows are not saturated, but their Jacobian is small too: sqrt(1/n - 1/n^2)
    assert jacobian_frobenius_norm(np.full(n, 1 / n)) == pytest.approx(math.sqrt(1 / n - 1 / n**2), abs=1e-15)


# --- saturation sweep (lesson: "why scale by sqrt(d_k)") --------------------------------

D_K = [1, 4, 16, 64, 256, 1024]


@pytest.fixture(scope="module")
def sweep():
    return saturation_sweep(D_K, n_keys=16, n_samples=2048, seed=0)


def test_sample_scores_shape_and_reproducible():
    s = sample_scores(8, 4, 10, seed=3)
    assert s.shape == (3, 4, 4)  # ceil(10 / 4) matrices
    np.testing.assert_array_equal(s, sample_scores(8, 4, 10, seed=3))
    assert not np.array_equal(s, sample_scores(8, 4, 10, seed=4))


def test_sweep_fields(sweep):
    np.testing.assert_array_equal(sweep.d_k, D_K)
    assert (sweep.n_keys, sweep.n_samples, sweep.seed) == (16, 2048, 0)
    np.testing.assert_allclose(sweep.effective_keys_scaled, np.exp(sweep.entropy_scaled), rtol=0.1)


def test_raw_score_variance_is_d_k(sweep):
    """q·k of unit-variance d_k-vectors has variance d_k (within 10%, d_k >= 16, 2048 rows)."""
    big = sweep.d_k >= 16
    np.testing.assert_allclose(sweep.score_std_unscaled[big] ** 2, sweep.d_k[big], rtol=0.10)


def test_scaled_score_variance_is_one(sweep):
    np.testing.assert_allclose(sweep.score_std_scaled**2, 1.0, rtol=0.10)


def test_unscaled_softmax_saturates(sweep):
    """Without 1/sqrt(d_k): the largest weight rises toward 1 and the gradient dies.

    The Jacobian norm is not monotonic from d_k = 1: at d_k = 1 the raw scores have
    variance 1, the rows are close to uniform, and a near-uniform softmax also has a small
    Jacobian (sqrt(1/n - 1/n^2) = 0.242 for n = 16). Measured (seed 0): 0.284 at d_k = 1,
    0.323 at d_k = 4, then 0.280, 0.179, 0.095, 0.050. It falls monotonically from d_k = 4 on.
    """
    assert (np.diff(sweep.max_weight_unscaled) > 0).all()
    assert (np.diff(sweep.entropy_unscaled) < 0).all()
    assert (np.diff(sweep.jacobian_norm_unscaled[1:]) < 0).all()
    assert sweep.max_weight_unscaled[-1] > 0.9
    assert sweep.jacobian_norm_unscaled[-1] < 0.2 * sweep.jacobian_norm_scaled[-1]


def test_scaled_softmax_stays_in_a_narrow_band(sweep):
    """With 1/sqrt(d_k) the statistics hardly move with d_k.

    Measured over seeds 0-5: mean max weight 0.201-0.249, Jacobian norm 0.281-0.306
    (d_k = 1 is the low end: a product of two normals is not Gaussian), against
    0.20 -> 0.96 and 0.32 -> 0.05 unscaled. The bands below leave ~0.02 of Monte Carlo
    slack on each side and are still ~10x narrower than the unscaled ranges.
    """
    assert (sweep.max_weight_scaled > 0.18).all() and (sweep.max_weight_scaled < 0.27).all()
    assert np.ptp(sweep.max_weight_scaled) < 0.07
    assert (sweep.jacobian_norm_scaled > 0.26).all() and (sweep.jacobian_norm_scaled < 0.33).all()
    assert np.ptp(sweep.jacobian_norm_scaled) < 0.04
    unscaled_range = np.ptp(sweep.max_weight_unscaled)
    assert np.ptp(sweep.max_weight_scaled) < unscaled_range / 10


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: saturation_sweep([]), r"d_k_values must hold at least one d_k"),
        (lambda: saturation_sweep([4, 0]), r"d_k must be a positive integer, got 0"),
        (lambda: saturation_sweep([4], n_keys=0), r"n_keys must be a positive integer, got 0"),
        (lambda: saturation_sweep([4], n_samples=-1), r"n_samples must be a positive integer, got -1"),
    ],
)
def test_sweep_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
