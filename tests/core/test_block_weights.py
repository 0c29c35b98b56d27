"""``LlamaModel.block_weights`` and ``head_steps`` on every family: a block recomputed from its weights (and the heads'
outputs the forward pass kept) reproduces the core's writes into the stream; the head steps carry the RoPE base and
GPT-2's learned position vectors (tiny random files of each family)."""

from __future__ import annotations

import numpy as np
import pytest

from attention.llama.blocks import gelu_tanh, layer_norm, rms_norm, silu
from tests.core.llama_support import (
    TINY_GEMMA3,
    TINY_GPT2,
    TINY_QWEN2,
    TINY_QWEN3,
    gpt2_vocabulary,
    load_tiny,
    qwen_vocabulary,
    sentencepiece_vocabulary,
)

PROMPT = "The cat sat on the mat. The cat"
FAMILIES = {"qwen2": (TINY_QWEN2, qwen_vocabulary), "qwen3": (TINY_QWEN3, qwen_vocabulary),
            "gpt2": (TINY_GPT2, gpt2_vocabulary), "gemma3": (TINY_GEMMA3, sentencepiece_vocabulary)}


@pytest.fixture(scope="module", params=["llama", *FAMILIES])
def family_model(request, tmp_path_factory):
    if request.param == "llama":
        return request.getfixturevalue("tiny")
    config, vocabulary = FAMILIES[request.param]
    return load_tiny(tmp_path_factory, request.param, config, vocabulary())


def recompute(model, w, x: np.ndarray, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The attention's and the MLP's writes of one block from its :class:`BlockWeights`, written out here for each
    family: ``x [n, d_model]`` entering it, ``heads [n_heads, n, d_head]`` each head's weights · V."""
    c = model.config

    def norm(v, gain, bias):
        return rms_norm(v, gain, c.rms_eps) if c.norm == "rms" else layer_norm(v, gain, bias, c.rms_eps)

    a = heads.transpose(1, 0, 2).reshape(len(x), -1) @ w.W_o
    if w.o_bias is not None:
        a = a + w.o_bias
    if w.post_attn_norm is not None:
        a = rms_norm(a, w.post_attn_norm, c.rms_eps)
    u = norm(x + a, w.ffn_norm, w.ffn_norm_bias)
    if c.mlp == "gelu":
        m = gelu_tanh(u @ w.W_up + w.up_bias) @ w.W_down + w.down_bias
    else:
        m = ((gelu_tanh if c.mlp == "geglu" else silu)(u @ w.W_gate) * (u @ w.W_up)) @ w.W_down
    if w.post_ffn_norm is not None:
        m = rms_norm(m, w.post_ffn_norm, c.rms_eps)
    return a, m


def test_a_block_recomputed_from_its_weights_writes_what_the_core_writes(family_model):
    model, c = family_model, family_model.config
    out = model.forward(model.encode(PROMPT), keep_activations=True)
    for layer in range(c.n_layers):
        w = model.block_weights(layer)
        x = out.residuals[layer]
        a, m = recompute(model, w, x, out.head_outputs[layer])
        np.testing.assert_allclose(m, out.mlp_outputs[layer], rtol=0, atol=2e-5)
        np.testing.assert_allclose(x + a + m, out.residuals[layer + 1], rtol=0, atol=2e-5)
    w = model.block_weights(0)
    gpt2, gemma3 = c.architecture == "gpt2", c.architecture == "gemma3"
    assert (w.W_gate is None) == gpt2 and w.W_up.shape == (c.d_model, c.d_ff) and w.W_down.shape == (c.d_ff, c.d_model)
    assert all((v is not None) == gpt2 for v in (w.attn_norm_bias, w.ffn_norm_bias, w.o_bias, w.up_bias, w.down_bias))
    assert (w.post_attn_norm is not None) == gemma3 and (w.post_ffn_norm is not None) == gemma3
    with pytest.raises(ValueError, match=rf"layer must be an integer in 0\.\.{c.n_layers - 1}, got {c.n_layers}"):
        model.block_weights(c.n_layers)


def test_head_steps_carry_the_rope_base_and_the_learned_positions(family_model):
    model, c = family_model, family_model.config
    ids = model.encode(PROMPT)
    for layer in range(c.n_layers):
        s = model.head_steps(ids, layer, 0)
        if c.positions == "learned":
            assert s.rope_base is None and s.angles is None
            out = model.forward(ids, keep_activations=True)
            np.testing.assert_array_equal(s.position_embedding, model._position_embedding[:len(ids)])
            np.testing.assert_allclose(out.residuals[0] - s.position_embedding, model._embedding.lookup(ids),
                                       rtol=0, atol=1e-6)
        else:
            assert s.position_embedding is None
            assert s.rope_base == (c.rope_theta_local if layer in c.local_layers else c.rope_theta)
    if c.local_layers:
        assert {model.head_steps(ids, layer, 0).rope_base for layer in range(c.n_layers)} == {10000.0, 1e6}
