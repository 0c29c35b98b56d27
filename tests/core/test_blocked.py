"""The blocked path (``attention.blocked``) computes what the plain path computes.

Correctness only, never speed (benchmarks live in ``bench/bench_core.py``):
random shapes and block sizes that cut rows and keys into uneven pieces,
boolean and float masks, ``is_causal`` with ``n_q != n_k``, fully masked rows,
float32 and float64, ``need_weights=False`` (online softmax), one and two
threads; the dispatch in ``scaled_dot_product_attention``; and that the
online path for ``n = 16384`` never holds the ``n x n`` matrix (tracemalloc).
"""

from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import MultiHeadAttention, scaled_dot_product_attention
from attention._validate import prepare_attention
from attention.blocked import _openblas_thread_functions, attend_online, attend_rows, blocked_attention
from attention.core import BLOCKED_MIN_CELLS, _attention_plain

# max |blocked - plain| / scale, where scale is the natural size of the values: 1 for weights (they
# lie in [0, 1]) and max |v| for outputs (each output row is a weighted average of rows of v).
# Relative to max |output| instead, float32 outputs that average many values of both signs differ
# by ~1e-6 between ANY two summation orders: the plain path itself is that far from the exact
# (float64) result. ``test_as_accurate_as_the_plain_path`` checks the blocked path against float64.
# Weights: a score off by one rounding step moves its weight by up to about that step, and the step
# grows with |score| (float32: 1.2e-7 per unit), so the weights' tolerance scales with max(1, max |scaled score|).
TOL = {np.float32: 1e-6, np.float64: 1e-13}


def plain(q, k, v, attn_mask=None, *, is_causal=False, scale=None):
    """The plain path on the same validated inputs: ``(output, weights)``."""
    q, k, v, bool_mask, float_mask, scale = prepare_attention(q, k, v, attn_mask, is_causal, scale)
    return _attention_plain(q, k, v, bool_mask, float_mask, is_causal, scale)


def assert_close(actual, expected, dtype, scale=1.0):
    assert actual.dtype == expected.dtype == dtype
    assert actual.shape == expected.shape
    assert np.isfinite(actual).all()
    err = np.abs(actual - expected).max(initial=0.0) / scale
    assert err <= TOL[dtype], f"error {err:.3g} (relative to {scale:.3g}) > {TOL[dtype]:g}"


def make_mask(rng, kind, shape):
    """``None``, a boolean mask (``True`` = may attend) or a float mask with ``-inf`` cells, of ``shape``."""
    if kind == "none":
        return None
    allowed = rng.random(shape) < 0.7
    allowed[..., 0, :] = False  # the first query row is fully masked
    if kind == "bool":
        return allowed
    return np.where(allowed, rng.normal(0.0, 2.0, shape), -np.inf)  # float: added to the scores


def check_all_paths(q, k, v, attn_mask=None, *, is_causal=False, scale=None, block_q=None, block_k=None,
                    n_threads=1):
    """Blocked with weights and online without weights, both against the plain path."""
    dtype = np.result_type(q, k, v).type
    out, weights = plain(q, k, v, attn_mask, is_causal=is_causal, scale=scale)
    kw = dict(is_causal=is_causal, scale=scale, block_q=block_q, n_threads=n_threads)
    v_scale = float(np.abs(v).max()) or 1.0
    step = (1.0 / np.sqrt(q.shape[-1])) if scale is None else abs(scale)
    s_scale = max(1.0, float(np.abs(q.astype(np.float64) @ np.swapaxes(k, -1, -2)).max()) * step)
    out_rows, weights_rows = blocked_attention(q, k, v, attn_mask, **kw)
    assert_close(out_rows, out, dtype, v_scale)
    assert_close(weights_rows, weights, dtype, s_scale)
    out_online, none = blocked_attention(q, k, v, attn_mask, need_weights=False, block_k=block_k, **kw)
    assert none is None
    assert_close(out_online, out, dtype, v_scale)
    return out_rows, weights_rows, out_online


# ---------------------------------------------------------------------------------------------
# random shapes, masks, causal, dtypes


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.lists(st.integers(1, 3), max_size=2),
    n_q=st.integers(1, 40),
    n_k=st.integers(1, 40),
    d_k=st.integers(1, 9),
    d_v=st.integers(1, 9),
    mask_kind=st.sampled_from(["none", "bool", "float", "causal"]),
    mask_batched=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    block_q=st.integers(1, 17),
    block_k=st.integers(1, 17),
    n_threads=st.integers(1, 2),
)
def test_blocked_equals_plain(seed, batch, n_q, n_k, d_k, d_v, mask_kind, mask_batched, dtype, block_q, block_k,
                              n_threads):
    rng = np.random.default_rng(seed)
    q = rng.normal(0.0, 2.0, (*batch, n_q, d_k)).astype(dtype)
    k = rng.normal(0.0, 2.0, (n_k, d_k)).astype(dtype)  # broadcast over the batch axes
    v = rng.normal(0.0, 1.0, (*batch, n_k, d_v)).astype(dtype)
    is_causal = mask_kind == "causal"
    mask = None if is_causal else make_mask(rng, mask_kind, (*batch, n_q, n_k) if mask_batched else (n_q, n_k))
    check_all_paths(q, k, v, mask, is_causal=is_causal, block_q=block_q, block_k=block_k, n_threads=n_threads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float"])
def test_batched_masks_and_heads(dtype, mask_kind):
    """Masks ``[batch, 1, n_q, n_k]`` shared by the heads of ``[batch, heads, n, d]`` inputs."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(0.0, 1.5, (2, 3, 37, 8)).astype(dtype) for _ in range(3))
    mask = make_mask(rng, mask_kind, (2, 1, 37, 37))
    _, weights, out = check_all_paths(q, k, v, mask, block_q=8, block_k=10, n_threads=2)
    if mask is not None:
        assert not weights[:, :, 0].any() and not out[:, :, 0].any()  # fully masked first row


@pytest.mark.parametrize(("n_q", "n_k"), [(5, 50), (50, 5), (33, 33), (1, 7), (7, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_causal_upper_left_aligned(n_q, n_k, dtype):
    """``is_causal`` masks ``j > i`` also when ``n_q != n_k`` (as PyTorch), in every path."""
    rng = np.random.default_rng(n_q * 100 + n_k)
    q = rng.normal(size=(2, n_q, 6)).astype(dtype)
    k = rng.normal(size=(2, n_k, 6)).astype(dtype)
    v = rng.normal(size=(2, n_k, 4)).astype(dtype)
    _, weights, _ = check_all_paths(q, k, v, is_causal=True, block_q=4, block_k=3, n_threads=2)
    assert not np.triu(weights, k=1).any()
    assert np.allclose(weights.sum(-1), 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_rows_give_zeros_not_nan(dtype):
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(1, 20, 4)).astype(dtype) for _ in range(3))
    allowed = rng.random((20, 20)) < 0.5
    allowed[[0, 7, 19]] = False
    blocked_float = np.where(allowed, 0.0, -np.inf)
    for mask in (allowed, blocked_float):
        out, weights, out_online = check_all_paths(q, k, v, mask, block_q=3, block_k=4, n_threads=2)
        for arr in (out[:, [0, 7, 19]], weights[:, [0, 7, 19]], out_online[:, [0, 7, 19]]):
            assert not arr.any()


def test_online_softmax_rescales_when_the_max_grows():
    """Keys visited later have far larger scores; only the last key block is allowed for some rows."""
    rng = np.random.default_rng(6)
    n = 64
    q = rng.normal(size=(n, 8))
    k = rng.normal(size=(n, 8)) * np.linspace(0.1, 30.0, n)[:, None]  # scores grow with the key index
    v = rng.normal(size=(n, 5))
    allowed = np.ones((n, n), dtype=bool)
    allowed[:10, :-5] = False  # rows 0-9 see only the last 5 keys: first blocks are fully masked for them
    check_all_paths(q, k, v, allowed, block_q=16, block_k=8)
    check_all_paths(q, k, v, block_q=16, block_k=8, scale=-0.3)  # a negative scale flips the order
    check_all_paths(q, k, v, block_q=16, block_k=8, scale=-0.5)  # a power of two: applied to the queries


@pytest.mark.parametrize("mask_kind", ["none", "bool", "causal"])
def test_as_accurate_as_the_plain_path(mask_kind):
    """float32: the blocked path is as close to the exact (float64) result as the plain path is."""
    rng = np.random.default_rng(12)
    q, k, v = (rng.standard_normal((2, 300, 64), dtype=np.float32) for _ in range(3))
    mask = rng.random((300, 300)) < 0.8 if mask_kind == "bool" else None
    kw = {"is_causal": mask_kind == "causal"}
    exact_out, exact_weights = plain(*(a.astype(np.float64) for a in (q, k, v)), mask, **kw)
    out, weights = plain(q, k, v, mask, **kw)
    err_out, err_weights = np.abs(out - exact_out).max(), np.abs(weights - exact_weights).max()
    for need_weights in (True, False):
        b_out, b_weights = blocked_attention(q, k, v, mask, need_weights=need_weights, block_q=64, block_k=96, **kw)
        assert np.abs(b_out - exact_out).max() <= 2 * err_out + 1e-7
        if need_weights:
            assert np.abs(b_weights - exact_weights).max() <= 2 * err_weights + 1e-8


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sdpa_dispatch(dtype):
    """Above the threshold SDPA takes the blocked path (equal to plain); below it is the plain path, bit for bit."""
    rng = np.random.default_rng(7)
    n = int(np.sqrt(BLOCKED_MIN_CELLS / 2)) + 1  # 2 heads of n x n: just above the threshold
    q, k, v = (rng.normal(size=(2, n, 16)).astype(dtype) for _ in range(3))
    mask = rng.random((n, n)) < 0.8
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    ref_out, ref_weights = plain(q, k, v, mask)
    v_scale = float(np.abs(v).max())
    assert_close(out, ref_out, dtype, v_scale)
    assert_close(weights, ref_weights, dtype)
    out_only, none = scaled_dot_product_attention(q, k, v, is_causal=True, need_weights=False)
    assert none is None
    assert_close(out_only, plain(q, k, v, is_causal=True)[0], dtype, v_scale)

    small = rng.normal(size=(3, 6, 6, 4)).astype(dtype)  # the app's size
    for kw in ({}, {"is_causal": True}):
        out, weights = scaled_dot_product_attention(small[0], small[1], small[2], **kw)
        ref_out, ref_weights = plain(small[0], small[1], small[2], **kw)
        assert np.array_equal(out, ref_out) and np.array_equal(weights, ref_weights)
        out_only, none = scaled_dot_product_attention(small[0], small[1], small[2], need_weights=False, **kw)
        assert none is None and np.array_equal(out_only, ref_out)


def test_multi_head_attention_need_weights():
    layer = MultiHeadAttention(32, 4, seed=1)
    x = np.random.default_rng(8).normal(size=(2, 10, 32))
    out, weights = layer.forward(x, is_causal=True)
    out_only, none = layer.forward(x, is_causal=True, need_weights=False)
    assert none is None and weights.shape == (2, 4, 10, 10)
    np.testing.assert_array_equal(out_only, out)


def test_kernels_take_broadcast_views():
    """``attend_rows`` / ``attend_online`` broadcast leading axes themselves, without copying inputs."""
    rng = np.random.default_rng(9)
    q = rng.normal(size=(3, 1, 12, 4))
    k = rng.normal(size=(2, 9, 4))
    v = rng.normal(size=(1, 9, 5))
    ref_out, ref_weights = plain(q, k, v, scale=0.7)
    out, weights = attend_rows(q, k, v, scale=0.7, block_q=5)
    assert out.shape == (3, 2, 12, 5) and weights.shape == (3, 2, 12, 9)
    v_scale = float(np.abs(v).max())
    assert_close(out, ref_out, np.float64, v_scale)
    assert_close(weights, ref_weights, np.float64)
    assert_close(attend_online(q, k, v, scale=0.7, block_q=5, block_k=4), ref_out, np.float64, v_scale)


def test_workers_restore_the_blas_threads_and_run_concurrently():
    """Two blocked calls at once, each with 2 workers: right results, and the BLAS thread count comes back."""
    functions = _openblas_thread_functions()
    before = functions[0]() if functions else None
    rng = np.random.default_rng(13)
    inputs = [tuple(rng.normal(size=(2, 64, 8)) for _ in range(3)) for _ in range(4)]
    expected = [plain(*qkv, is_causal=True)[0] for qkv in inputs]
    results = [None] * len(inputs)

    def call(i):
        results[i] = blocked_attention(*inputs[i], is_causal=True, need_weights=i % 2 == 0, block_q=8, n_threads=2)[0]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for out, ref in zip(results, expected, strict=True):
        assert_close(out, ref, np.float64, float(np.abs(ref).max()))
    if functions:
        assert functions[0]() == before


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # np.errstate is per thread
def test_errors():
    rng = np.random.default_rng(10)
    q = rng.normal(size=(4, 3))
    for bad in ({"block_q": 0}, {"block_k": -1}, {"n_threads": 1.5}, {"block_q": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            blocked_attention(q, q, q, **bad)
    with pytest.raises(ValueError, match="not both"):
        blocked_attention(q, q, q, np.ones((4, 4), bool), is_causal=True)
    huge = np.full((4, 3), 3e19, dtype=np.float32)  # finite inputs, scores overflow float32
    for need_weights in (True, False):
        with pytest.raises(ValueError, match="overflow"):  # raised in a worker thread
            blocked_attention(huge, huge, huge, need_weights=need_weights, block_q=1, n_threads=2)


# ---------------------------------------------------------------------------------------------
# memory: the online path never holds n x n


@pytest.mark.slow
def test_online_path_never_holds_n_by_n():
    """n = 16384, d_head = 64, one head, float32: peak traced memory far below the 1 GiB score matrix.

    NumPy reports its array allocations to tracemalloc, from every thread.
    """
    n, d = 16384, 64
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((1, n, d), dtype=np.float32) for _ in range(3))
    io_bytes = 4 * n * d * 4  # q, k, v and the output
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out, weights = scaled_dot_product_attention(q, k, v, is_causal=True, need_weights=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert weights is None
    assert peak < n * n * 4 / 32, f"peak {peak / 2**20:.1f} MiB is not far below n*n*4 = {n * n * 4 / 2**20:.0f} MiB"
    assert peak < 2 * io_bytes, f"peak {peak / 2**20:.1f} MiB vs q, k, v, out {io_bytes / 2**20:.0f} MiB"
    rows = np.r_[0:3, 5000:5003, n - 3 : n]  # spot-check rows against the plain path on those queries
    mask = np.arange(n)[None, :] <= rows[:, None]
    ref, _ = plain(q[:, rows], k, v, mask)
    assert_close(out[:, rows], ref, np.float32, float(np.abs(v).max()))


# ---------------------------------------------------------------------------------------------
# scores that overflow: one clear error on every path, never the fully-masked answer


PATHS = {
    "plain": lambda q, k, v, m=None: scaled_dot_product_attention(q, k, v, m),
    "blocked rows": lambda q, k, v, m=None: blocked_attention(q, k, v, m),
    "blocked online": lambda q, k, v, m=None: blocked_attention(q, k, v, m, need_weights=False),
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("keys", [[[-1e20], [-2e20]], [[1e20], [2e20]]], ids=["to -inf", "to +inf"])
def test_overflowing_scores_raise_one_clear_error(path, keys):
    """float32 1e20 * -2e20 = -2e40 is -inf: every score -inf looked like a fully masked row (weights 0)."""
    q = np.array([[1e20]], np.float32)
    k = np.array(keys, np.float32)
    v = np.array([[1, 0], [0, 1]], np.float32)
    with pytest.raises(ValueError) as err:
        PATHS[path](q, k, v)
    message = str(err.value)
    assert "overflow float32" in message and "max |q|" in message and "max |k|" in message
    assert "float64" in message and "scale q and k down" in message
    out, _ = PATHS[path](q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    assert np.isfinite(out).all() and out.sum() == pytest.approx(1.0)  # float64 holds these scores


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_float_mask_that_overflows_the_scores_raises_the_same_error(path):
    q = np.array([[1e19]], np.float32)
    k = np.array([[1e19], [1.0]], np.float32)
    v = np.eye(2, dtype=np.float32)
    mask = np.array([[3e38, 0.0]], np.float32)  # 1e38 + 3e38 = +inf
    with pytest.raises(ValueError, match="overflow float32"):
        PATHS[path](q, k, v, mask)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_inputs_are_rejected_naming_the_argument(path, name, bad):
    arrays = {"q": np.ones((2, 3)), "k": np.ones((2, 3)), "v": np.ones((2, 3))}
    arrays[name][1, 2] = bad
    with pytest.raises(ValueError, match=rf"^{name} contains"):
        PATHS[path](arrays["q"], arrays["k"], arrays["v"])


@settings(max_examples=60, deadline=None)
@given(exponent=st.integers(0, 38), sign=st.sampled_from([-1.0, 1.0]), n_k=st.integers(1, 5),
       path=st.sampled_from(sorted(PATHS)))
def test_finite_inputs_give_finite_weights_or_the_overflow_error(exponent, sign, n_k, path):
    """Property: without a mask, rows always sum to 1, or the call says the scores overflowed."""
    q = np.full((1, 2), 10.0**exponent, np.float32)
    k = (sign * np.linspace(1, 2, n_k)[:, None] * np.full((n_k, 2), 10.0**exponent)).astype(np.float32)
    v = np.eye(n_k, dtype=np.float32)
    try:
        out, weights = PATHS[path](q, k, v)
    except ValueError as exc:
        assert "overflow float32" in str(exc)
        return
    assert np.isfinite(out).all() and out.sum() == pytest.approx(1.0, rel=1e-5)
