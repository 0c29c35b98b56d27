"""The memory-bounded forms of the core's vocabulary-wide and Monte Carlo computations (issue 26, item 8) give the
same numbers as the whole-array formulas they replaced, bit for bit: the next-token losses, the KL divergence, the
logit lens's top tokens (row blocks over the vocabulary), ``sample_scores`` (queries and keys drawn in blocks), the
key/value variants (each layer converted when a pass reaches it) and the latent basis (filled a layer at a time).

The reference formulas here are the code before the change, written out on the whole array.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention as A
from attention import diagnostics
from attention.llama import blocks, interventions, variants

VOCAB = 49_152  # SmolLM2's vocabulary: the real size of the rows


def _whole_log_softmax(z):
    z = np.asarray(z, dtype=np.float64)
    top = z.max(axis=-1, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=-1, keepdims=True))


def _whole_losses(logits, ids):
    z = logits[:-1].astype(np.float64)
    top = z.max(axis=1)
    log_norm = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
    return log_norm - z[np.arange(len(z)), ids[1:]]


def _whole_kl(p_log, q_log):
    z = p_log.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    z = q_log.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    q = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return np.maximum((np.exp(p) * (p - q)).sum(axis=-1), 0.0)


def _whole_top_k(logits, k):
    logp = _whole_log_softmax(logits)
    part = np.argpartition(-logp, k - 1, axis=-1)[:, :k]
    order = np.argsort(-np.take_along_axis(logp, part, -1), axis=-1, kind="stable")
    ids = np.take_along_axis(part, order, -1)
    return ids, np.exp(np.take_along_axis(logp, ids, -1)).astype(np.float32)


@pytest.fixture(scope="module")
def logits() -> np.ndarray:
    """Two float32 ``[24, vocab]`` logit arrays (3 row blocks) with SmolLM2's spread (std 3, a few large values)."""
    rng = np.random.default_rng(26)
    a = (3 * rng.standard_normal((2, 24, VOCAB))).astype(np.float32)
    a[:, :, :5] += 12
    return a


def test_row_blocks_cover_every_row_once_within_the_byte_budget():
    for n, width, budget in [(64, VOCAB, None), (63, VOCAB, None), (1, VOCAB, None), (7, 10, 8 * 10 * 3),
                             (5, 10, 1), (0, VOCAB, None)]:
        parts = blocks.row_blocks(n, width, budget)
        assert np.array_equal(np.concatenate([np.arange(n)[s] for s in parts] or [np.arange(0)]), np.arange(n))
        limit = blocks.ROW_BLOCK_BYTES if budget is None else budget
        assert all(s.stop - s.start == 1 or (s.stop - s.start) * width * 8 <= limit for s in parts)
    assert len(blocks.row_blocks(64, VOCAB)) == 7  # 10 rows of SmolLM2's vocabulary a block (4 MiB)


def test_losses_and_kl_in_row_blocks_equal_the_whole_array(logits):
    ref, other = logits
    ids = np.random.default_rng(1).integers(0, VOCAB, 24)
    np.testing.assert_array_equal(variants.next_token_losses(other, ids), _whole_losses(other, ids))
    np.testing.assert_array_equal(variants.kl_divergence(ref, other), _whole_kl(ref, other))
    np.testing.assert_array_equal(variants.kl_divergence(ref[4:], ref[4:]), np.zeros(20))


def test_top_tokens_in_row_blocks_equal_the_whole_array(logits):
    for k in (1, 5, 20):
        ids, p = interventions.top_k_log_softmax(logits[0], k)
        want_ids, want_p = _whole_top_k(logits[0], k)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(p, want_p)
    tied = np.zeros((3, VOCAB), np.float32)  # every token tied: the lowest ids first, in every block
    ids, p = interventions.top_k_log_softmax(tied, 4)
    np.testing.assert_array_equal(ids, _whole_top_k(tied, 4)[0])


def test_small_blocks_change_no_number(logits, monkeypatch):
    """One row a block (the smallest budget) against the whole array."""
    monkeypatch.setattr(blocks, "ROW_BLOCK_BYTES", 1)
    ref, other = logits[0, :9], logits[1, :9]
    ids = np.arange(9) * 1000
    assert len(blocks.row_blocks(9, VOCAB)) == 9
    np.testing.assert_array_equal(variants.next_token_losses(other, ids), _whole_losses(other, ids))
    np.testing.assert_array_equal(variants.kl_divergence(ref, other), _whole_kl(ref, other))
    np.testing.assert_array_equal(interventions.top_k_log_softmax(ref, 3)[0], _whole_top_k(ref, 3)[0])


def _one_draw_scores(d_k, n_keys, n_samples, seed):
    rng = np.random.default_rng([seed, d_k])
    n_mat = math.ceil(n_samples / n_keys)
    q = rng.standard_normal((n_mat, n_keys, d_k))
    k = rng.standard_normal((n_mat, n_keys, d_k))
    return q @ np.swapaxes(k, -1, -2)


@pytest.mark.slow
@pytest.mark.parametrize("d_k, n_keys, n_samples, seed", [(1024, 6, 8192, 0), (1024, 16, 8192, 3), (64, 6, 2048, 0)])
def test_sample_scores_in_blocks_equal_one_draw(d_k, n_keys, n_samples, seed):
    np.testing.assert_array_equal(A.sample_scores(d_k, n_keys, n_samples, seed),
                                  _one_draw_scores(d_k, n_keys, n_samples, seed))


def test_sample_scores_in_tiny_blocks_equal_one_draw(monkeypatch):
    monkeypatch.setattr(diagnostics, "SAMPLE_BLOCK_BYTES", 8 * 3 * 8 * 2)  # two matrices a block, one left over
    np.testing.assert_array_equal(A.sample_scores(8, 3, 13, 4), _one_draw_scores(8, 3, 13, 4))
    monkeypatch.setattr(diagnostics, "SAMPLE_BLOCK_BYTES", 4 * 2**10)  # 4 KiB: 5 matrices of d_k 32 x 3 keys
    np.testing.assert_array_equal(A.sample_scores(32, 3, 600, 9), _one_draw_scores(32, 3, 600, 9))


@pytest.mark.slow
def test_sample_scores_at_d_k_1024_holds_a_few_blocks():
    import tracemalloc

    tracemalloc.start()
    try:
        A.sample_scores(1024, 6, 8192, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak / 2**20  # q and k whole: 128 MiB


def test_a_kv_variant_holds_no_weights_and_converts_each_layer_as_before(tiny):
    for kind in ("mha", "mqa", ("latent", 8)):
        variant = variants.kv_variant(tiny, kind)
        kind_name, rank = variants._check_kind(tiny.config, kind)
        basis = variants.latent_basis(tiny) if kind_name == "latent" else None
        for index, (layer, original) in enumerate(zip(variant._layers, tiny._layers, strict=True)):
            want = variants._converted_qkv(tiny, original.qkv.widen(), kind_name, rank,
                                           None if basis is None else basis[index])
            got = layer.qkv.widen()
            assert got.shape == layer.qkv.shape and got.flags.c_contiguous and got.dtype == np.float32
            np.testing.assert_array_equal(got, want)
        assert variant.nbytes == tiny.nbytes - sum(layer.qkv.nbytes for layer in tiny._layers)


def test_latent_basis_filled_a_layer_at_a_time_is_the_stack_of_eigenvectors(tiny):
    c = tiny.config
    want = []
    for layer in tiny._layers:
        W_kv = layer.qkv.widen()[:, c.n_heads * c.d_head:].astype(np.float64)
        want.append(np.linalg.eigh(W_kv.T @ W_kv)[1][:, ::-1])
    np.testing.assert_array_equal(variants.latent_basis(tiny), np.stack(want).astype(np.float32))
