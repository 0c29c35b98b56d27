"""RMSNorm, RoPE (both pair layouts) and SwiGLU: ``attention.llama.blocks``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attention.llama.blocks import (
    apply_rope,
    apply_rope_half,
    rms_norm,
    rope_angles,
    rope_frequencies,
    rope_gguf_to_hf,
    rope_hf_to_gguf,
    silu,
    swiglu,
)
from tests.core.llama_support import unpermute

RNG = np.random.default_rng(0)


def test_rms_norm_formula_and_dtype():
    x = RNG.standard_normal((3, 5, 8)).astype(np.float32)
    w = RNG.standard_normal(8).astype(np.float32)
    y = rms_norm(x, w, 1e-5)
    assert y.dtype == np.float32 and y.shape == x.shape
    x64 = x.astype(np.float64)
    expected = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    unit = rms_norm(x.astype(np.float64), np.ones(8), 1e-12)
    np.testing.assert_allclose(np.sqrt((unit**2).mean(-1)), 1.0, rtol=1e-9)  # RMS 1 with unit gain
    np.testing.assert_allclose(rms_norm(7.0 * x64, w, 1e-12), rms_norm(x64, w, 1e-12), rtol=1e-9)  # scale-free


@pytest.mark.parametrize(("weight", "eps", "match"), [(np.ones(7), 1e-5, "weight must have shape"),
                                                      (np.ones(8), 0.0, "eps must be > 0")])
def test_rms_norm_errors(weight, eps, match):
    with pytest.raises(ValueError, match=match):
        rms_norm(np.ones((2, 8)), weight, eps)


def test_rope_frequencies_and_angles():
    theta = rope_frequencies(64, 100000.0)
    assert theta.shape == (32,) and theta[0] == 1.0
    np.testing.assert_allclose(theta[31], 100000.0 ** (-62 / 64), rtol=1e-15)
    assert np.all(np.diff(theta) < 0)
    angles = rope_angles(np.arange(5), 64, 100000.0)
    assert angles.shape == (5, 32) and angles.dtype == np.float64
    assert (angles[0] == 0).all()
    np.testing.assert_allclose(angles[3], 3 * theta, rtol=1e-15)
    for bad in (0, 7, -2, 2.0, True):
        with pytest.raises(ValueError, match="d_head"):
            rope_frequencies(bad, 10000.0)
    with pytest.raises(ValueError, match="base"):
        rope_frequencies(8, 1.0)
    with pytest.raises(ValueError, match="positions"):
        rope_angles(np.array([0, -1]), 8, 10000.0)
    with pytest.raises(ValueError, match="positions"):
        rope_angles(np.array([0.5]), 8, 10000.0)


def test_apply_rope_rotates_adjacent_pairs():
    x = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    angles = rope_angles(np.arange(4), 8, 10000.0)
    y = apply_rope(x, angles)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_array_equal(y[:, 0], x[:, 0])  # position 0: angle 0, unchanged
    pair_norm = lambda a: np.hypot(a[..., 0::2], a[..., 1::2])  # noqa: E731
    np.testing.assert_allclose(pair_norm(y), pair_norm(x), rtol=1e-5)  # a rotation keeps each pair's length
    a = angles[2, 1]  # pair 1 at position 2, by hand
    x0, x1 = x[0, 2, 2], x[0, 2, 3]
    np.testing.assert_allclose(y[0, 2, 2:4], [x0 * np.cos(a) - x1 * np.sin(a), x0 * np.sin(a) + x1 * np.cos(a)],
                               rtol=1e-5)


def test_rope_scores_depend_only_on_the_distance():
    """RoPE's point (Su et al. 2021, eq. 16): q_m . k_n depends on m - n only."""
    q, k = RNG.standard_normal(16), RNG.standard_normal(16)
    angles = rope_angles(np.arange(40), 16, 10000.0)

    def score(m, n):
        return apply_rope(q[None], angles[m:m + 1])[0] @ apply_rope(k[None], angles[n:n + 1])[0]

    np.testing.assert_allclose(score(5, 2), score(35, 32), rtol=1e-9)
    np.testing.assert_allclose(score(9, 9), q @ k, rtol=1e-9)


def test_the_two_layouts_are_one_permutation_apart():
    d = 16
    perm, inv = rope_gguf_to_hf(d), rope_hf_to_gguf(d)
    np.testing.assert_array_equal(perm[:4], [0, 2, 4, 6])
    np.testing.assert_array_equal(perm[inv], np.arange(d))
    x_gguf = RNG.standard_normal((3, 5, d))
    angles = rope_angles(np.arange(5), d, 10000.0)
    np.testing.assert_allclose(apply_rope(x_gguf, angles)[..., perm], apply_rope_half(x_gguf[..., perm], angles),
                               rtol=1e-12, atol=1e-12)
    # transformers un-permutes a GGUF head's rows the same way (its _reverse_permute_weights)
    W = RNG.standard_normal((2 * d, 4))  # two heads of rows in the file's order
    np.testing.assert_array_equal(unpermute(W, 2)[:d], W[:d][perm])
    np.testing.assert_array_equal(unpermute(W, 2)[d:], W[d:][perm])


def test_rope_shape_errors():
    with pytest.raises(ValueError, match="angles must have shape"):
        apply_rope(np.ones((4, 8)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="angles must have shape"):
        apply_rope_half(np.ones((4, 8)), np.ones((5, 4)))


def test_silu():
    x = np.linspace(-30, 30, 121)
    np.testing.assert_allclose(silu(x), x / (1 + np.exp(-x)), rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning far left
        y = silu(np.array([-1000.0, 1000.0], dtype=np.float32))
    assert y.dtype == np.float32 and y[0] == 0 and y[1] == 1000


def test_swiglu():
    x = RNG.standard_normal((3, 8))
    Wg, Wu, Wd = RNG.standard_normal((8, 12)), RNG.standard_normal((8, 12)), RNG.standard_normal((12, 8))
    g = x @ Wg
    np.testing.assert_allclose(swiglu(x, Wg, Wu, Wd), (g / (1 + np.exp(-g)) * (x @ Wu)) @ Wd, rtol=1e-12)
    with pytest.raises(ValueError, match="W_gate and W_up"):
        swiglu(x, Wg, Wu[:, :5], Wd)
