"""The gemma3 (Gemma 3) architecture on a tiny random GGUF file, against live ``transformers`` loading the same file
(a test reference: it fails, never skips, when missing): logits and every attention map, token ids on hard texts,
greedy generation with the KV cache, the interventions' identities; and what is Gemma 3's own: the embedding scaled
by sqrt(d_model), norms before and after attention and MLP (stored as transformers' 1 + w), q/k norms, a GELU gated
MLP, sliding-window local layers with their own RoPE base between global ones.

The fixture (``llama_support.TINY_GEMMA3``) has 6 layers (5 local with a window of 4 keys, then 1 global) and
d_head 256, where transformers' ``query_pre_attn_scalar`` scaling agrees with 1/sqrt(d_head). Its vocabulary is
Gemma's kind (``llama_support.sentencepiece_vocabulary``: ``tokenizer.ggml.model = "llama"``, ``▁`` for a space,
``<0xNN>`` byte tokens, scores, no merges, BOS added), read by :class:`attention.llama.tokenizer.SentencePieceBPE`.
The tests that need transformers are marked ``slow`` and ``torch``; the rest are in the fast tier.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import llama
from attention.llama import interventions as iv
from attention.llama.blocks import apply_rope_half, rms_norm, rope_angles
from attention.llama.tokenizer import SentencePieceBPE, read_tokenizer
from tests.conftest import require
from tests.core.llama_support import (
    HARD_TEXTS,
    TINY_GEMMA3,
    assert_forward_matches,
    assert_greedy_generation_matches,
    assert_intervention_identities,
    assert_token_ids_match,
    hf_reference,
    load_tiny,
    qwen_vocabulary,
    sentencepiece_vocabulary,
    write_tiny_gguf,
)

PROMPT = "The cat sat on the mat. The cat"


@pytest.fixture(scope="module")
def gemma(tmp_path_factory) -> llama.LlamaModel:
    """Ours for one tiny random Gemma 3 file (``ours.path`` is the file)."""
    return load_tiny(tmp_path_factory, "gemma3", TINY_GEMMA3, sentencepiece_vocabulary())


@pytest.fixture(scope="module")
def family(gemma):
    """``(ours, hf_model, hf_tokenizer, loading_info)``: transformers on the same file (loaded once)."""
    return (gemma, *hf_reference(gemma.path))


def test_config_is_read_from_the_file(gemma):
    c = gemma.config
    assert c.architecture == "gemma3" and c.rope_layout == "halves" and c.mlp == "geglu"
    assert c.qk_norm and c.post_norms and not c.qkv_bias and c.norm == "rms"
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_head, c.d_ff) == (6, 4, 2, 64, 256, 128)
    assert c.embed_scale == 8.0 and c.sliding_window == 4 and c.local_layers == (0, 1, 2, 3, 4)
    assert (c.rope_theta, c.rope_theta_local) == (1e6, 1e4)


@pytest.mark.slow
@pytest.mark.torch
def test_the_reference_loads_every_weight(family):
    """No weight skipped; the file's norm gains are transformers' 1 + w (its loader subtracts the 1 again)."""
    ours, hf, _, info = family
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    params = {name: p.detach().numpy() for name, p in hf.named_parameters()}
    layer, h = ours._layers[5], "model.layers.5."
    for mine, theirs in ((layer.attn_norm, "input_layernorm"), (layer.post_attn_norm, "post_attention_layernorm"),
                         (layer.ffn_norm, "pre_feedforward_layernorm"),
                         (layer.post_ffn_norm, "post_feedforward_layernorm"), (layer.q_norm, "self_attn.q_norm"),
                         (layer.k_norm, "self_attn.k_norm")):
        np.testing.assert_allclose(mine, 1 + params[h + theirs + ".weight"], rtol=0, atol=1e-6)
    W = np.concatenate([params[h + f"self_attn.{x}_proj.weight"] for x in "qkv"]).T
    np.testing.assert_array_equal(layer.qkv.widen(), W)


@pytest.mark.slow
@pytest.mark.torch
def test_logits_and_every_attention_map_match_transformers(family):
    ours, hf, _, _ = family
    assert_forward_matches(ours, hf, [PROMPT, HARD_TEXTS[4]])  # longer than the window: the local layers differ


@pytest.mark.slow
@pytest.mark.torch
def test_token_ids_match_transformers_on_hard_texts(family):
    ours, _, tokenizer, _ = family
    assert_token_ids_match(ours, tokenizer, HARD_TEXTS)


@pytest.mark.slow
@pytest.mark.torch
def test_greedy_generation_with_the_cache_matches_transformers(family):
    ours, hf, _, _ = family
    assert_greedy_generation_matches(ours, hf, ours.encode(PROMPT))


def test_the_local_layers_see_only_their_window(gemma):
    ids = gemma.encode(PROMPT)
    n, c = len(ids), gemma.config
    out = gemma.forward(ids, keep_activations=True)
    p, j = np.arange(n)[:, None], np.arange(n)[None, :]
    outside = p - j >= c.sliding_window
    for layer in range(c.n_layers):
        weights = out.attentions[layer]  # [H, n, n]
        np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=0, atol=1e-5)
        if layer in c.local_layers:
            assert not weights[:, outside].any()
        else:
            assert (weights[:, outside] > 0).all()  # the global layer sees every earlier key
    np.testing.assert_array_equal(out.residuals[0], gemma._embedding.ET.T[ids] * np.float32(8.0))  # sqrt(d_model)


def test_head_steps_show_gemma3s_steps(gemma):
    ids = gemma.encode(PROMPT)
    out = gemma.forward(ids)
    c = gemma.config
    for layer, head in ((0, 1), (5, 3)):
        s = gemma.head_steps(ids, layer, head)
        np.testing.assert_allclose(s.weights, out.attentions[layer, head], rtol=0, atol=1e-6)
        local = layer in c.local_layers
        expected_mask = np.tri(len(ids), dtype=bool)
        if local:
            expected_mask &= ~np.tri(len(ids), k=-c.sliding_window, dtype=bool)
        np.testing.assert_array_equal(s.mask, expected_mask)
        base = c.rope_theta_local if local else c.rope_theta
        np.testing.assert_array_equal(s.angles, rope_angles(np.arange(len(ids)), c.d_head, base))
        np.testing.assert_allclose(s.q_before_rope, rms_norm(s.x_normed @ s.W_q, s.q_norm, c.rms_eps), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(s.q, apply_rope_half(s.q_before_rope, s.angles), rtol=0, atol=1e-6)
        np.testing.assert_allclose(s.k, out.cache.keys[layer, s.kv_head], rtol=0, atol=1e-5)


@pytest.mark.slow  # ~0.3 s of forward passes: the family's checks run in the slow tier with its parity tests
def test_the_interventions_identities(gemma):
    assert_intervention_identities(gemma, gemma.encode(PROMPT), gemma.encode("The cat sat on the cat. The cat"))


def test_the_attribution_freezes_each_post_attention_norm(gemma):
    """Gemma's attention output passes through a norm before it joins the stream: with each layer's divisor frozen
    (the last position's RMS of what its heads wrote together) the heads' shares are linear and add up to the logit;
    the divisors are those RMS values."""
    ids = gemma.encode(PROMPT)
    run = gemma.forward(ids, keep_activations=True)
    a = iv.logit_attribution(gemma, ids, 7, run=run)
    c = gemma.config
    assert a.attention_scales.shape == (c.n_layers,)
    for layer in range(c.n_layers):
        W_o = gemma._layers[layer].o.widen().astype(np.float64)
        written = run.head_outputs[layer, :, -1].astype(np.float64).reshape(-1) @ W_o
        assert a.attention_scales[layer] == pytest.approx(np.sqrt(np.mean(written ** 2) + c.rms_eps), rel=1e-12)
    assert abs(a.total - a.logit) <= 1e-4 * max(1.0, abs(a.logit))


def test_the_sentencepiece_tokenizer_spells_text_with_pieces_and_bytes(gemma):
    """BOS first (the file says so), ``▁`` read as a space, whole pieces where the vocabulary has them, and a character
    it lacks (한, Korean) as its three UTF-8 bytes' ``<0xNN>`` tokens (byte fallback); every text's tokens' bytes are
    its UTF-8, and decoding gives it back."""
    assert isinstance(gemma.tokenizer, SentencePieceBPE) and gemma.tokenizer.bos_id == 2
    ids = gemma.encode("The cat sat on the mat")
    assert gemma.token_strings(ids) == ["<bos>", "T", "he", " cat", " sat", " ", "o", "n", " the", " mat"]
    han = gemma.encode("한")
    assert [gemma.tokenizer._tokens[i] for i in han] == ["<bos>", "<0xED>", "<0x95>", "<0x9C>"]
    partial = gemma.decode_partial(han[1:3])
    assert (partial.text, partial.pending) == ("", "한".encode()[:2])
    for text in HARD_TEXTS:
        ids = gemma.encode(text)
        assert ids[0] == 2 and 2 not in ids[1:]
        assert b"".join(gemma.token_bytes(ids[1:])) == text.encode(), text
        assert gemma.decode(ids[1:]) == gemma.decode_partial(ids[1:]).text == text
    runs = gemma.encode("a  b   d   c")  # the file's "  " and "   " (stored as real spaces) are Gemma's "▁▁", "▁▁▁";
    # merges go by file position: "▁c" (an earlier piece) is made before "▁▁" + "▁"
    assert [gemma.tokenizer._tokens[i] for i in runs[1:]] == ["a", "  ", "b", "   ", "d", "  ", "▁c"]


def test_bos_follows_the_files_flag(tmp_path):
    """``tokenizer.ggml.add_bos_token`` decides: true or absent (llama.cpp's and transformers' default for a
    SentencePiece vocabulary) puts BOS first, false does not; the limit counts it."""
    metadata = {"general.architecture": "gemma3", "tokenizer.ggml.model": "llama", "tokenizer.ggml.bos_token_id": 2}
    v = sentencepiece_vocabulary()
    metadata |= {"tokenizer.ggml.tokens": v.tokens, "tokenizer.ggml.token_type": v.types,
                 "tokenizer.ggml.scores": v.scores}
    body = read_tokenizer(metadata | {"tokenizer.ggml.add_bos_token": False}, 64).encode("the cat")
    assert 2 not in body
    for flag in ({"tokenizer.ggml.add_bos_token": True}, {}):
        tokenizer = read_tokenizer(metadata | flag, 64)
        assert tokenizer.bos_id == 2 and tokenizer.encode("the cat") == [2, *body]
        assert tokenizer.count("the cat") == len(body) + 1
    with pytest.raises(ValueError, match=f"the text is {len(body) + 1} tokens, more than the 2"):
        read_tokenizer(metadata, 2).encode("the cat")
    with pytest.raises(ValueError, match="tokenizer.ggml.model is 'bert'; supported: 'gpt2', 'llama'"):
        read_tokenizer(metadata | {"tokenizer.ggml.model": "bert"}, 64)


@pytest.mark.slow
@pytest.mark.torch
def test_a_file_without_bos_matches_transformers(tmp_path):
    """A SentencePiece file whose flag says no BOS: transformers adds none either (tokenizer only)."""
    path = tmp_path / "gemma3-nobos.gguf"
    write_tiny_gguf(path, config=TINY_GEMMA3, vocabulary=sentencepiece_vocabulary(add_bos=False))
    ours = llama.load(path, expected_sha256=None)
    tokenizer = require("transformers").AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    assert ours.tokenizer.bos_id is None
    assert_token_ids_match(ours, tokenizer, HARD_TEXTS)


@pytest.mark.slow  # writes and loads two files (~0.25 s): with the family's parity tests
def test_quantized_files_in_both_weight_modes(tmp_path):
    path = tmp_path / "gemma3-q.gguf"
    write_tiny_gguf(path, config=TINY_GEMMA3, vocabulary=qwen_vocabulary(), quantized=True, seed=5)
    dense, compact = (llama.load(path, weights=mode, expected_sha256=None) for mode in ("float32", "compact"))
    ids = dense.encode(PROMPT)
    a, b = dense.forward(ids), compact.forward(ids)
    np.testing.assert_allclose(b.attentions, a.attentions, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.logits, a.logits, rtol=0, atol=1e-5)
    assert compact._layers[0].post_attn_norm is not None and compact._layers[0].q_norm is not None
