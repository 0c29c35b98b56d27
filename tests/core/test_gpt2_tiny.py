"""The gpt2 (GPT-2) architecture on a tiny random GGUF file, against live ``transformers`` loading the same file (a
test reference: it fails, never skips, when missing): logits and every attention map, token ids on hard texts,
greedy generation with the KV cache, the interventions' identities; and what is GPT-2's own: learned positions
instead of RoPE, LayerNorm (in the blocks and in the logit lens), biases everywhere, the pre-tokenizer written as
``gpt-2``.

One transformers load per process (a module fixture); the tests that need it are marked ``slow`` and ``torch`` as
``test_qwen_tiny.py``'s, the rest are in the fast tier. The fixture has 1,024 position rows and d_ff = 4 d_model:
transformers' GGUF loader for GPT-2 needs both (``llama_support.TINY_GPT2``).
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import llama
from attention.llama import interventions as iv
from attention.llama import variants
from attention.llama.blocks import layer_norm, rms_norm
from tests.core.llama_support import (
    HARD_TEXTS,
    TINY_GPT2,
    assert_forward_matches,
    assert_greedy_generation_matches,
    assert_intervention_identities,
    assert_token_ids_match,
    gpt2_vocabulary,
    hf_reference,
    load_tiny,
    write_tiny_gguf,
)

PROMPT = "The cat sat on the mat. The cat"
GPT2_TEXTS = [*HARD_TEXTS, "one<|endoftext|>two 123 1234 's"]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> llama.LlamaModel:
    """Ours for one tiny random GPT-2 file (``ours.path`` is the file)."""
    return load_tiny(tmp_path_factory, "gpt2", TINY_GPT2, gpt2_vocabulary())


@pytest.fixture(scope="module")
def family(gpt2):
    """``(ours, hf_model, hf_tokenizer, loading_info)``: transformers on the same file (loaded once)."""
    return (gpt2, *hf_reference(gpt2.path))


def test_config_is_read_from_the_file(gpt2):
    c = gpt2.config
    assert c.architecture == "gpt2" and c.rope_layout is None
    assert (c.norm, c.positions, c.mlp, c.qkv_bias, c.linear_bias, c.qk_norm) == (
        "layer", "learned", "gelu", True, True, False)
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_head, c.d_ff) == (2, 4, 4, 64, 16, 256)
    assert c.context_length == 1024 and c.max_tokens == llama.MAX_TOKENS
    np.testing.assert_allclose(c.rms_eps, 1e-5, rtol=1e-6)  # attention.layer_norm_epsilon
    end = len(gpt2_vocabulary().tokens) - 1
    assert (c.bos_id, c.eos_id, c.vocab_size) == (end, end, end + 1)
    assert gpt2._position_embedding.shape == (1024, 64) and gpt2._output_norm_bias.shape == (64,)


@pytest.mark.slow
@pytest.mark.torch
def test_the_reference_loads_every_weight(family):
    """transformers' GGUF loader skips tensors it cannot map without a word: the reference must have them all."""
    ours, hf, _, info = family
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    params = {name: p.detach().numpy() for name, p in hf.named_parameters()}
    layer = ours._layers[1]
    h = "transformer.h.1."
    np.testing.assert_array_equal(layer.qkv.widen(), params[h + "attn.c_attn.weight"])  # Conv1D: [in, out]
    np.testing.assert_array_equal(layer.qkv_bias, params[h + "attn.c_attn.bias"])
    np.testing.assert_array_equal(layer.o.widen(), params[h + "attn.c_proj.weight"])
    np.testing.assert_array_equal(layer.o_bias, params[h + "attn.c_proj.bias"])
    np.testing.assert_array_equal(layer.gate_up.widen(), params[h + "mlp.c_fc.weight"])
    np.testing.assert_array_equal(layer.up_bias, params[h + "mlp.c_fc.bias"])
    np.testing.assert_array_equal(layer.down_bias, params[h + "mlp.c_proj.bias"])
    np.testing.assert_array_equal(layer.ffn_norm_bias, params[h + "ln_2.bias"])
    np.testing.assert_array_equal(ours._position_embedding, params["transformer.wpe.weight"])
    np.testing.assert_array_equal(ours._output_norm_bias, params["transformer.ln_f.bias"])


@pytest.mark.slow
@pytest.mark.torch
def test_logits_and_every_attention_map_match_transformers(family):
    ours, hf, _, _ = family
    assert_forward_matches(ours, hf, [PROMPT, HARD_TEXTS[4]])


@pytest.mark.slow
@pytest.mark.torch
def test_token_ids_match_transformers_on_hard_texts(family):
    ours, _, tokenizer, _ = family
    assert_token_ids_match(ours, tokenizer, GPT2_TEXTS)


def test_the_pre_tokenizer_is_gpt2s(gpt2):
    """``gpt-2`` (llama.cpp's spelling) is GPT-2's regex: digits stay together ("123" one token, unlike SmolLM2's
    and Qwen2's pre-tokenizers), "'s" is a piece, ``<|endoftext|>`` matches whole."""
    vocabulary = gpt2_vocabulary()
    merged = {t: i for i, t in enumerate(vocabulary.tokens) if i >= 256}
    space = vocabulary.tokens.index("Ġ")
    assert gpt2.encode("x 123") == [ord("x"), space, merged["123"]]  # " 123" a piece; "12" ranks before " 1"
    assert gpt2.encode("x 1") == [ord("x"), merged["Ġ1"]]
    assert gpt2.encode("123") == [merged["123"]] and merged["'s"] in gpt2.encode("it's")
    assert gpt2.encode("<|endoftext|>") == [gpt2.config.eos_id]


@pytest.mark.slow
@pytest.mark.torch
def test_greedy_generation_with_the_cache_matches_transformers(family):
    ours, hf, _, _ = family
    assert_greedy_generation_matches(ours, hf, ours.encode(PROMPT))


def test_learned_positions_enter_the_stream(gpt2):
    """Block 0's input is E[token] + P[position]; ``position_offset`` picks later rows of P (no RoPE anywhere)."""
    ids = gpt2.encode(PROMPT)
    n, E, P = len(ids), gpt2._embedding.ET.T, gpt2._position_embedding
    run = gpt2.forward(ids, keep_activations=True)
    np.testing.assert_array_equal(run.residuals[0], E[ids] + P[:n])
    shifted = gpt2.forward(ids, keep_activations=True, position_offset=700)
    np.testing.assert_array_equal(shifted.residuals[0], E[ids] + P[700:700 + n])
    assert np.abs(shifted.logits - run.logits).max() > 1e-3  # absolute positions: the offset matters
    with pytest.raises(ValueError, match=f"position_offset must be an integer in 0..{1024 - n}, got {1025 - n}"):
        gpt2.forward(ids, position_offset=1025 - n)


def test_head_steps_show_gpt2s_steps(gpt2):
    ids = gpt2.encode(PROMPT)
    out = gpt2.forward(ids, keep_activations=True)
    c, lay = gpt2.config, gpt2._layers[1]
    for layer, head in ((0, 1), (1, 3)):
        s = gpt2.head_steps(ids, layer, head)
        np.testing.assert_allclose(s.weights, out.attentions[layer, head], rtol=0, atol=1e-6)
        lay = gpt2._layers[layer]
        np.testing.assert_array_equal(s.x_normed, layer_norm(out.residuals[layer], lay.attn_norm, lay.attn_norm_bias,
                                                             c.rms_eps))
        assert s.angles is None and s.q_norm is None
        np.testing.assert_array_equal(s.q, s.q_before_rope)  # no RoPE
        np.testing.assert_allclose(s.q, s.x_normed @ s.W_q + s.b_q, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s.k, out.cache.keys[layer, s.kv_head], rtol=0, atol=1e-5)
        np.testing.assert_allclose(s.v, out.cache.values[layer, s.kv_head], rtol=0, atol=1e-5)


def test_the_interventions_identities(gpt2):
    assert_intervention_identities(gpt2, gpt2.encode(PROMPT), gpt2.encode("The cat sat on the rat. The cat"))


def test_the_logit_lens_and_attribution_use_the_final_layernorm(gpt2):
    """Every row of the logit lens is LayerNorm (mean, variance, bias) then E.T, not an RMSNorm; the attribution's
    bias part holds the W_o biases and the norm's bias, and its parts still sum to the logit."""
    ids = gpt2.encode(PROMPT)
    run = gpt2.forward(ids, keep_activations=True)
    c, E = gpt2.config, gpt2._embedding.ET.T
    lens = iv.logit_lens(gpt2, ids, run=run)
    expected = layer_norm(run.residuals[:, -1], gpt2._output_norm, gpt2._output_norm_bias, c.rms_eps) @ E.T
    np.testing.assert_allclose(lens, expected, rtol=0, atol=1e-5)
    wrong = rms_norm(run.residuals[:, -1], gpt2._output_norm, c.rms_eps) @ E.T
    assert np.abs(lens - wrong).max() > 1e-2
    token = int(run.logits[-1].argmax())
    a = iv.logit_attribution(gpt2, ids, token, run=run)
    final = run.residuals[-1, -1].astype(np.float64)
    assert a.scale == pytest.approx(np.sqrt(final.var() + c.rms_eps), rel=1e-12)
    bias = float(gpt2._output_norm_bias @ E[token])
    u = gpt2._output_norm * E[token]
    direction = (u - u.mean()) / a.scale
    bias += sum(float(layer.o_bias @ direction) for layer in gpt2._layers)
    assert a.bias == pytest.approx(bias, rel=1e-5) and abs(a.bias) > 1e-3
    assert a.total == pytest.approx(a.logit, rel=1e-5, abs=1e-5)


def test_what_gpt2_refuses_names_it(gpt2):
    """StreamingLLM's numbering needs RoPE (tests/core/test_variants_families.py)."""
    with pytest.raises(ValueError, match="renumbers the RoPE positions of the cached keys; this model is 'gpt2'"):
        variants.renumbered_logits(gpt2, gpt2.encode(PROMPT), window=4, sinks=1)


def test_a_separate_output_matrix_and_quantized_files(tmp_path):
    """An untied ``output.weight`` is the unembedding (not E); Q4_1 matrices and Q8_0 embeddings give the same
    numbers in float32 and compact modes, the biases and LayerNorms read either way."""
    path = tmp_path / "gpt2-q.gguf"
    tiny = write_tiny_gguf(path, config=TINY_GPT2, vocabulary=gpt2_vocabulary(), quantized=True, tied=False, seed=5)
    dense, compact = (llama.load(path, weights=mode, expected_sha256=None) for mode in ("float32", "compact"))
    assert dense._output is not dense._embedding
    ids = dense.encode(PROMPT)
    a, b = dense.forward(ids, keep_activations=True), compact.forward(ids)
    np.testing.assert_allclose(b.attentions, a.attentions, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.logits, a.logits, rtol=0, atol=1e-5)
    final = layer_norm(a.residuals[-1], dense._output_norm, dense._output_norm_bias, dense.config.rms_eps)
    np.testing.assert_allclose(a.logits, final @ dense._output.ET, rtol=0, atol=1e-5)
    assert np.abs(dense._output.ET.T - tiny.weights["output.weight"]).max() < 0.05  # Q8_0 of the written matrix
    assert compact.nbytes < dense.nbytes / 2
    assert compact._layers[0].o_bias is not None and compact._output_norm_bias is not None
