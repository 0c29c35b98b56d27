"""The fast online path (``need_weights=False``): softmax without the row max when the scores are bounded.

``attention.blocked._attend_unshifted`` takes ``exp`` of the scores as they are when Cauchy-Schwarz
bounds every scaled score within ``±log(finfo.max) / 2``; otherwise the shifted online softmax runs.
Correctness only, never speed (``bench/bench_core.py`` times it against PyTorch). Errors are measured
as in ``test_blocked.py``: relative to ``max |v|`` (each output row is a weighted average of rows of v).
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from attention import blocked, scaled_dot_product_attention
from attention._validate import prepare_attention
from attention.core import ONLINE_MIN_CELLS, _attention_plain

LIMIT32 = math.log(float(np.finfo(np.float32).max)) / 2  # about 44.4


def plain(q, k, v, attn_mask=None, *, is_causal=False, scale=None):
    q, k, v, bool_mask, float_mask, scale = prepare_attention(q, k, v, attn_mask, is_causal, scale)
    return _attention_plain(q, k, v, bool_mask, float_mask, is_causal, scale)[0]


def rel_err(out, ref, v):
    assert out.dtype == ref.dtype and out.shape == ref.shape and np.isfinite(out).all()
    return float(np.abs(out.astype(np.float64) - ref).max() / np.abs(v).max())


@pytest.fixture
def kernel_calls(monkeypatch):
    """Counts calls of the unshifted kernel (and lets them run)."""
    calls = []
    original = blocked._attend_unshifted

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(blocked, "_attend_unshifted", spy)
    return calls


@pytest.mark.parametrize("n", [128, pytest.param(512, marks=pytest.mark.slow)])
@pytest.mark.parametrize("is_causal", [False, True])
def test_benchmark_shapes_match_the_plain_path(n, is_causal, kernel_calls):
    """q, k, v ``[1, 8, n, 64]`` float32 (bench/bench_core.py): the online path, within 1e-6 of the plain one."""
    rng = np.random.default_rng(n)
    q, k, v = (rng.standard_normal((1, 8, n, 64), dtype=np.float32) for _ in range(3))
    out, weights = scaled_dot_product_attention(q, k, v, is_causal=is_causal, need_weights=False)
    assert weights is None and len(kernel_calls) == 1  # n = 128: 2**17 cells, above ONLINE_MIN_CELLS
    assert rel_err(out, plain(q, k, v, is_causal=is_causal), v) <= 1e-6


def test_several_key_blocks_and_heads_per_tile(kernel_calls):
    """Uneven query and key blocks, 3 heads per tile, broadcast keys, a boolean mask with fully masked rows."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 70, 16), dtype=np.float32)
    k = rng.standard_normal((3, 90, 16), dtype=np.float32)
    v = rng.standard_normal((2, 1, 90, 8), dtype=np.float32)
    mask = rng.random((2, 1, 70, 90)) < 0.6
    mask[:, :, 5] = False
    for kw in ({"attn_mask": mask}, {"is_causal": True}, {"attn_mask": np.where(mask, -2.0, -np.inf)}):
        out, _ = blocked.blocked_attention(q, k, v, need_weights=False, block_q=16, block_k=24, n_threads=2, **kw)
        assert rel_err(out, plain(q, k, v, **kw), v) <= 1e-6
    assert len(kernel_calls) == 3
    assert not out[:, :, 5].any()  # fully masked row: zeros, never NaN


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_scores_near_the_bound_neither_overflow_nor_underflow(sign, kernel_calls):
    """Every score of a row between ±38 and ±40 (inside the float32 bound, about 44): exp as it is."""
    q = np.ones((3, 4), np.float32)
    scores = sign * np.linspace(38.0, 40.0, 5)
    k = np.repeat(scores[:, None] / 4, 4, axis=1).astype(np.float32)  # q·k_j = scores[j] with scale 1
    v = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    assert LIMIT32 > 40
    out, _ = blocked.blocked_attention(q, k, v, scale=1.0, need_weights=False)
    assert len(kernel_calls) == 1
    assert rel_err(out, plain(q, k, v, scale=1.0), v) <= 1e-6


def test_unbounded_scores_take_the_shifted_path(kernel_calls):
    """Scores beyond the bound (or a -1e9 float mask) must keep the row max: exp(100) overflows float32."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 40, 8)).astype(np.float32) * 6
    k = rng.standard_normal((2, 50, 8)).astype(np.float32) * 6  # |q_i||k_j| / sqrt(8) well above 44
    v = rng.standard_normal((2, 50, 4)).astype(np.float32)
    assert not blocked._no_shift_needed(q, k, v, None, 1 / 8**0.5)
    out, _ = blocked.blocked_attention(q, k, v, need_weights=False, block_q=16, block_k=16)
    assert rel_err(out, plain(q, k, v), v) <= 1e-6
    small = q / 6, k / 6
    padding = np.where(rng.random((40, 50)) < 0.7, 0.0, -1e9).astype(np.float32)  # the usual "-1e9" mask
    padding[3] = -1e9  # a row of -1e9 only: the plain path gives uniform weights, never zeros
    out, _ = blocked.blocked_attention(*small, v, padding, need_weights=False, block_q=16, block_k=16)
    assert rel_err(out, plain(*small, v, padding), v) <= 1e-6
    assert not kernel_calls


def test_the_bound_covers_v_and_the_number_of_keys():
    """``exp(bound) * n_k * max |v|`` must stay below finfo.max / 4, else the row sums could overflow."""
    q = np.full((1, 1), 6.0, np.float32)
    k = np.full((3, 1), 6.0, np.float32)  # score 36 = exp(36) ≈ 4.3e15 per key
    assert blocked._no_shift_needed(q, k, np.ones((3, 1), np.float32), None, 1.0)
    assert not blocked._no_shift_needed(q, k, np.full((3, 1), 1e23, np.float32), None, 1.0)
    assert not blocked._no_shift_needed(q, k, np.ones((3, 1), np.float32), None, 2.0)  # 72 > LIMIT32
    assert blocked._no_shift_needed(q.astype(np.float64), k.astype(np.float64), np.ones((3, 1)), None, 2.0)


def test_sdpa_takes_the_online_path_from_online_min_cells(kernel_calls):
    """need_weights=False: the plain path below ONLINE_MIN_CELLS (bit for bit), the online one from there."""
    rng = np.random.default_rng(4)
    n = int(math.isqrt(ONLINE_MIN_CELLS // 4))  # 4 heads of n x n: exactly ONLINE_MIN_CELLS
    q, k, v = (rng.standard_normal((4, n, 32), dtype=np.float32) for _ in range(3))
    below = scaled_dot_product_attention(q[:, :-1], k, v, need_weights=False)[0]
    assert not kernel_calls and np.array_equal(below, plain(q[:, :-1], k, v))
    out = scaled_dot_product_attention(q, k, v, need_weights=False)[0]
    assert len(kernel_calls) == 1 and rel_err(out, plain(q, k, v), v) <= 1e-6


def test_workers_are_reused_across_calls():
    """The blocked path keeps its worker threads (starting threads cost about 0.1 ms per call); the caller is one."""
    names = []
    calls = 20
    meet = [threading.Barrier(2, timeout=30) for _ in range(calls)]

    def work(task):
        call, i = task
        names.append((call, threading.current_thread().name))
        if i < 2:  # each worker's first task waits for the other one: both workers take part
            meet[call].wait()

    for call in range(calls):
        blocked._run([(call, i) for i in range(4)], work, n_threads=2)
    for call in range(calls):
        assert {name for c, name in names if c == call} >= {threading.current_thread().name}
    assert len({name for _, name in names}) <= blocked.MAX_THREADS  # a fixed pool, not new threads per call
