"""``attention.llama.variants`` on the tiny random Llama (fast): perplexity and its scored positions, the key/value
conversions (MHA exact, MQA the mean of the heads, latent at full rank the original), byte counts, StreamingLLM's
numbering against an independent token-by-token rolling cache, and one ValueError per bad value.

(The same on SmolLM2 and against transformers: ``test_llama_variants_real.py``.)
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attention.llama import variants
from tests.core.llama_support import TINY, file_weights, unpermute

TEXT = "The cat sat on the mat. The cat sat on the hat, the cat"


@pytest.fixture(scope="module")
def ids(tiny) -> list[int]:
    out = tiny.encode(TEXT)
    assert 20 <= len(out) <= TINY["context_length"]
    return out


def test_perplexity_is_exp_of_the_mean_loss_over_the_named_positions(tiny, ids):
    logits = tiny.forward(ids).logits.astype(np.float64)
    log_p = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - logits.max(1, keepdims=True)
    losses = -log_p[np.arange(len(ids) - 1), ids[1:]]  # [n - 1]
    assert variants.perplexity(tiny, ids) == pytest.approx(np.exp(losses.mean()), rel=1e-9)
    assert variants.perplexity(tiny, ids, score_from=5) == pytest.approx(np.exp(losses[5:].mean()), rel=1e-9)
    windowed = tiny.forward(ids, window=6, sinks=1).logits
    expected = np.exp(variants.next_token_losses(windowed, ids)[6:].mean())  # the positions after the window
    assert variants.perplexity(tiny, ids, window=6, sinks=1) == pytest.approx(expected, rel=1e-12)
    # a window as long as the text is full attention, exactly
    n = len(ids)
    assert variants.perplexity(tiny, ids, window=n, score_from=0) == variants.perplexity(tiny, ids)
    np.testing.assert_array_equal(tiny.forward(ids, window=n, sinks=2).logits, tiny.forward(ids).logits)


def test_compare_measures_kl_and_top1_against_the_reference(tiny, ids):
    ref = tiny.forward(ids).logits
    same = variants.compare(ref, ref, ids, 3)
    assert same.kl == 0.0 and same.top1 == 1.0 and same.score_from == 3 and same.n_scored == len(ids) - 4
    assert same.perplexity == pytest.approx(variants.perplexity(tiny, ids, score_from=3), rel=1e-12)
    other = tiny.forward(ids, window=2).logits
    agreement = variants.compare(ref, other, ids, 3)
    p = np.exp(variants._log_softmax(ref[3:-1]))
    kl = (p * (variants._log_softmax(ref[3:-1]) - variants._log_softmax(other[3:-1]))).sum(1)
    assert agreement.kl == pytest.approx(kl.mean(), rel=1e-9) and agreement.kl > 0
    assert agreement.top1 == np.mean(ref[3:-1].argmax(1) == other[3:-1].argmax(1))


def test_mha_repeats_the_key_value_heads_and_changes_no_number(tiny, ids):
    mha = variants.kv_variant(tiny, "mha")
    c = tiny.config
    assert mha.config.n_kv_heads == c.n_heads and mha.config.group_size == 1
    assert mha.config.kv_bytes_per_token == 2 * c.n_layers * c.n_heads * c.d_head * 4
    assert mha.config.kv_bytes_per_token == c.group_size * c.kv_bytes_per_token
    out, plain = mha.forward(ids), tiny.forward(ids)
    np.testing.assert_array_equal(out.logits, plain.logits)
    np.testing.assert_array_equal(out.attentions, plain.attentions)
    assert out.cache.keys.shape[1] == c.n_heads  # the cache really is 3x wider
    for h in range(c.n_heads):
        np.testing.assert_array_equal(out.cache.keys[:, h], plain.cache.keys[:, h // c.group_size])
    assert variants.perplexity(mha, ids) == variants.perplexity(tiny, ids)


def test_mqa_is_the_mean_of_the_key_value_heads(tiny, ids):
    mqa = variants.kv_variant(tiny, "mqa")
    c = tiny.config
    assert mqa.config.n_kv_heads == 1 and mqa.config.group_size == c.n_heads
    assert mqa.config.kv_bytes_per_token == 2 * c.n_layers * c.d_head * 4
    out, keep = mqa.forward(ids), tiny.forward(ids, keep_activations=True)
    # block 0 sees the same input: its one key/value head is the mean of the original heads (RoPE is linear)
    np.testing.assert_allclose(out.cache.keys[0, 0], keep.cache.keys[0].mean(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.cache.values[0, 0], keep.cache.values[0].mean(axis=0), rtol=1e-5, atol=1e-5)
    assert np.abs(out.logits - keep.logits).max() > 1e-2  # a real change
    # the query projection, the MLP and the norms are shared, not copied
    assert mqa._layers[0].gate_up is tiny._layers[0].gate_up and mqa._embedding is tiny._embedding


@pytest.mark.slow
def test_full_rank_latent_is_the_original_and_lower_ranks_are_the_best_approximation(tiny, ids):
    c = tiny.config
    width = 2 * c.n_kv_heads * c.d_head
    full = variants.kv_variant(tiny, ("latent", width))
    np.testing.assert_allclose(full.forward(ids).logits, tiny.forward(ids).logits, rtol=1e-4, atol=1e-4)
    assert full.config.kv_latent_rank == width and full.config.n_kv_heads == c.n_kv_heads
    assert full.config.kv_bytes_per_token == tiny.config.kv_bytes_per_token
    H, dh = c.n_heads, c.d_head
    for rank in (1, 5, 17):
        latent = variants.kv_variant(tiny, ("latent", rank))
        assert latent.config.kv_bytes_per_token == c.n_layers * rank * 4
        assert latent.config.kv_floats_per_token_per_layer == rank
        for index in (0, c.n_layers - 1):
            W_kv = tiny._layers[index].qkv.widen()[:, H * dh:].astype(np.float64)
            W_r = latent._layers[index].qkv.widen()[:, H * dh:].astype(np.float64)
            assert np.linalg.matrix_rank(W_r, tol=1e-4 * np.abs(W_r).max()) == rank
            U, S, Vt = np.linalg.svd(W_kv, full_matrices=False)
            np.testing.assert_allclose(W_r, (U[:, :rank] * S[:rank]) @ Vt[:rank], atol=1e-5)  # Eckart-Young
            np.testing.assert_array_equal(latent._layers[index].qkv.widen()[:, :H * dh],
                                          tiny._layers[index].qkv.widen()[:, :H * dh])  # W_q untouched


def test_variants_from_compact_weights_equal_those_from_float32(tiny_q, tiny_q_compact, ids):
    for kind in ("mha", "mqa", ("latent", 7)):
        a, b = variants.kv_variant(tiny_q, kind), variants.kv_variant(tiny_q_compact, kind)
        assert b.weights_mode == "compact" and a.config == b.config
        np.testing.assert_array_equal(a._layers[1].qkv.widen(), b._layers[1].qkv.widen())
        np.testing.assert_allclose(a.forward(ids).logits, b.forward(ids).logits, rtol=1e-5, atol=1e-5)


def test_byte_counts_follow_their_formulas(tiny):
    c = tiny.config
    assert c.kv_bytes_per_token == 2 * c.n_layers * c.n_kv_heads * c.d_head * 4 == c.n_layers * 2 * 2 * 16 * 4
    smol = dataclasses.replace(c, n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64)
    assert smol.kv_bytes_per_token == 46_080
    assert dataclasses.replace(smol, n_kv_heads=9).kv_bytes_per_token == 138_240
    assert dataclasses.replace(smol, n_kv_heads=1).kv_bytes_per_token == 15_360
    assert dataclasses.replace(smol, kv_latent_rank=128).kv_bytes_per_token == 15_360 == 30 * 128 * 4
    assert dataclasses.replace(smol, kv_latent_rank=384).kv_bytes_per_token == 46_080
    for kind in ("mha", "mqa", ("latent", 3)):
        assert variants.converted_config(c, kind) == variants.kv_variant(tiny, kind).config
    assert variants.converted_config(c, None) is c
    out = variants.kv_variant(tiny, "mqa").forward([5, 6, 7])
    assert out.cache.nbytes == 3 * variants.kv_variant(tiny, "mqa").config.kv_bytes_per_token


def _streaming_reference(weights, ids, cfg, window, sinks):
    """StreamingLLM's decoding, token by token, written from its code (``StartRecentKVCache`` + ``pos_shift``):
    keys cached before RoPE, rotated at their index in the cache, the query at the cache's length; after each
    step the cache keeps the first ``sinks`` and the last ``window - 1`` tokens. float64, transformers' layout."""
    H, KV, d = cfg["n_heads"], cfg["n_kv_heads"], cfg["d_model"]
    dh, L = d // H, cfg["n_layers"]
    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, dh, 2) / dh)

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg["rms_eps"]) * w

    def rope(x, positions):  # x [h, m, dh]
        ang = np.asarray(positions)[:, None] * inv[None]
        cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
        return x * cos + np.concatenate([-x[..., dh // 2:], x[..., :dh // 2]], -1) * sin

    cache_k = [np.zeros((KV, 0, dh)) for _ in range(L)]
    cache_v = [np.zeros((KV, 0, dh)) for _ in range(L)]
    logits = []
    for token in ids:
        x = weights["token_embd.weight"][[token]]  # [1, d]
        for i in range(L):
            p = f"blk.{i}."
            h = norm(x, weights[p + "attn_norm.weight"])
            q = (h @ unpermute(weights[p + "attn_q.weight"], H).T).reshape(1, H, dh).transpose(1, 0, 2)
            k = (h @ unpermute(weights[p + "attn_k.weight"], KV).T).reshape(1, KV, dh).transpose(1, 0, 2)
            v = (h @ weights[p + "attn_v.weight"].T).reshape(1, KV, dh).transpose(1, 0, 2)
            cache_k[i] = np.concatenate([cache_k[i], k], axis=1)
            cache_v[i] = np.concatenate([cache_v[i], v], axis=1)
            m = cache_k[i].shape[1]
            keys = np.repeat(rope(cache_k[i], np.arange(m)), H // KV, axis=0)  # [H, m, dh]
            values = np.repeat(cache_v[i], H // KV, axis=0)
            s = rope(q, [m - 1]) @ keys.transpose(0, 2, 1) / np.sqrt(dh)  # [H, 1, m]
            w = np.exp(s - s.max(-1, keepdims=True))
            o = (w / w.sum(-1, keepdims=True)) @ values  # [H, 1, dh]
            x = x + o.transpose(1, 0, 2).reshape(1, d) @ weights[p + "attn_output.weight"].T
            h = norm(x, weights[p + "ffn_norm.weight"])
            g, u = h @ weights[p + "ffn_gate.weight"].T, h @ weights[p + "ffn_up.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ weights[p + "ffn_down.weight"].T
            if m > sinks + window - 1:  # evict: the first `sinks` and the last `window - 1`
                keep = np.r_[0:sinks, m - (window - 1):m]
                cache_k[i], cache_v[i] = cache_k[i][:, keep], cache_v[i][:, keep]
        logits.append(norm(x, weights["output_norm.weight"]) @ weights["token_embd.weight"].T)
    return np.concatenate(logits)


@pytest.mark.parametrize(("window", "sinks"), [(4, 2), (3, 1), (5, 0), (1, 1)])
def test_renumbered_positions_are_streaming_llms_rolling_cache(tiny, ids, window, sinks):
    ours = variants.renumbered_logits(tiny, ids, window=window, sinks=sinks)
    reference = _streaming_reference(file_weights(tiny.path), ids, TINY, window, sinks)
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-4 * np.abs(reference).max())
    usual = tiny.forward(ids, window=window, sinks=sinks).logits
    if sinks == 0:  # without sinks the numbering changes nothing
        np.testing.assert_allclose(ours, usual, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(ours[:sinks + window], usual[:sinks + window], rtol=1e-5, atol=1e-5)
        assert np.abs(ours - usual).max() > 1e-3  # later queries see the sinks closer
    # the same pass without renumbering is the windowed forward
    np.testing.assert_allclose(variants._window_pass(tiny, np.array(ids), window, sinks, False), usual,
                               rtol=1e-5, atol=1e-5)


def test_generate_with_a_window_continues_its_cache(tiny, ids):
    prompt = ids[:10]
    new = variants.generate(tiny, prompt, 6, stop_at_eos=False, window=4, sinks=1)
    assert len(new) == 6
    # each new token is the argmax of a whole windowed pass over everything before it
    seq = list(prompt)
    for token in new:
        assert token == int(tiny.forward(seq, window=4, sinks=1).logits[-1].argmax())
        seq.append(token)
    assert variants.generate(tiny, prompt, 6, stop_at_eos=False) == tiny.generate(prompt, 6, stop_at_eos=False)
    out = tiny.forward(prompt, window=4, sinks=1, need_weights=False)  # a pass made anyway, then continued
    assert variants.continue_greedy(tiny, out, 6, stop_at_eos=False, window=4, sinks=1) == new
    with pytest.raises(ValueError, match="other options"):
        variants.continue_greedy(tiny, out, 2, stop_at_eos=False)  # the cache was made with a window


def test_bad_values_raise_one_value_error(tiny, ids):
    n, width = len(ids), 2 * tiny.config.n_kv_heads * tiny.config.d_head
    cases = [
        (lambda: variants.perplexity(tiny, ids, window=0), r"window must be an integer in 1\.\."),
        (lambda: variants.perplexity(tiny, ids, window=4, sinks=-1), r"sinks must be an integer in 0\.\."),
        (lambda: variants.perplexity(tiny, ids, window=n - 1), r"leaves no position after it"),
        (lambda: variants.perplexity(tiny, ids, score_from=n - 1), rf"score_from must be an integer in 0\.\.{n - 2}"),
        (lambda: variants.perplexity(tiny, ids[:1]), "at least 2 tokens"),
        (lambda: variants.perplexity(tiny, ids, need_weights=True), "neither need_weights nor cache"),
        (lambda: variants.kv_variant(tiny, ("latent", 0)), rf"rank in 1\.\.{width}"),
        (lambda: variants.kv_variant(tiny, ("latent", width + 1)), rf"rank in 1\.\.{width}"),
        (lambda: variants.kv_variant(tiny, ("latent", 2.5)), "rank in"),
        (lambda: variants.kv_variant(tiny, ("latent", True)), "rank in"),
        (lambda: variants.kv_variant(tiny, "gqa2"), r"kind must be 'mha', 'mqa' or \('latent', rank\)"),
        (lambda: variants.kv_variant(tiny, ("latent",)), "kind must be"),
        (lambda: variants.kv_variant(tiny, None), "kind must be"),
        (lambda: variants.kv_variant(variants.kv_variant(tiny, ("latent", 4)), "mqa"), "already a latent variant"),
        (lambda: variants.renumbered_logits(tiny, ids, window=0, sinks=1), "window must be"),
        (lambda: variants.renumbered_logits(tiny, ids, window=3, sinks=-2), "sinks must be"),
        (lambda: variants.generate(tiny, ids, 0), "max_new_tokens must be a positive integer"),
        (lambda: variants.continue_greedy(tiny, tiny.forward(ids, start_layer=1, residual=tiny.forward(
            ids, keep_activations=True).residuals[1]), 2), "a forward pass with its cache"),
        (lambda: variants.compare(np.zeros((3, 5)), np.zeros((3, 4)), [1, 2, 3]), "one shape"),
        (lambda: variants.kl_divergence(np.zeros((2, 3)), np.full((2, 3), np.nan)), "finite"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
