"""``attention.llama.variants`` on a tiny random model of every other family (qwen2: Q/K/V biases and split-half
RoPE; qwen3: per-head q/k norms; gemma3: q/k norms, norms after the sub-layers, local sliding-window layers with their
own RoPE base; gpt2: learned positions, no RoPE; llama3: Llama 3.2's scaled RoPE frequencies), against the model's
plain forward pass where a variant is exact: MHA is the model, the full-rank latent cache is the model, MQA's keys and
values are the mean of the heads' (where no per-head norm sits between), the window pass without renumbering is
``forward(window, sinks)`` and StreamingLLM's numbering changes only the kept tokens' scores; gpt2 refuses the
numbering, naming why."""

from __future__ import annotations

import numpy as np
import pytest

from attention.llama import variants
from tests.core.llama_support import (
    TINY_GEMMA3,
    TINY_GPT2,
    TINY_LLAMA3,
    TINY_QWEN2,
    TINY_QWEN3,
    gpt2_vocabulary,
    llama3_vocabulary,
    load_tiny,
    qwen_vocabulary,
    sentencepiece_vocabulary,
)

pytestmark = pytest.mark.slow  # 4-6 s for the families (gemma3's d_head 256): the fast tier is at its budget
FAMILIES = {"qwen2": (TINY_QWEN2, qwen_vocabulary), "qwen3": (TINY_QWEN3, qwen_vocabulary),
            "gemma3": (TINY_GEMMA3, sentencepiece_vocabulary), "gpt2": (TINY_GPT2, gpt2_vocabulary),
            "llama3": (TINY_LLAMA3, llama3_vocabulary)}
TEXT = "The cat sat on the mat. The cat sat on the hat, the cat"


@pytest.fixture(scope="module", params=list(FAMILIES))
def model(request, tmp_path_factory):
    config, vocabulary = FAMILIES[request.param]
    return load_tiny(tmp_path_factory, request.param, config, vocabulary())


@pytest.fixture(scope="module")
def ids(model) -> list[int]:
    out = model.encode(TEXT)[:24]
    assert len(out) >= 16
    return out


def test_mha_is_the_model(model, ids):
    """Every query head its own copy of the key/value head it shared (biases too): the same logits."""
    mha = variants.kv_variant(model, "mha")
    c = model.config
    assert mha.config.n_kv_heads == c.n_heads and mha.config.kv_bytes_per_token == \
        c.kv_bytes_per_token * c.group_size
    np.testing.assert_allclose(mha.forward(ids).logits, model.forward(ids).logits, rtol=1e-5, atol=1e-5)


def test_full_rank_latent_is_the_model_and_lower_ranks_differ(model, ids):
    full = variants.latent_full_rank(model.config)
    plain = model.forward(ids).logits
    np.testing.assert_allclose(variants.kv_variant(model, ("latent", full)).forward(ids).logits, plain, rtol=1e-4,
                               atol=1e-4 * np.abs(plain).max())
    low = variants.kv_variant(model, ("latent", 2)).forward(ids).logits
    assert np.abs(low - plain).max() > 1e-3
    with pytest.raises(ValueError, match=rf"rank in 1\.\.{full}"):
        variants.kv_variant(model, ("latent", full + 1))


def test_mqa_keeps_the_mean_of_the_key_value_heads(model, ids):
    """One key/value head whose projection (and bias) is the mean of the model's. Without a per-head norm between
    (qwen2, gpt2) its keys and values are the mean of the model's, before and after RoPE (linear); with one (qwen3,
    gemma3) the norm acts on the mean projection, so only the values are the mean. Layer 0's: later layers read a
    stream the conversion already changed."""
    c = model.config
    mqa = variants.kv_variant(model, "mqa")
    assert mqa.config.n_kv_heads == 1
    ours, theirs = mqa.forward(ids).cache, model.forward(ids).cache
    np.testing.assert_allclose(ours.values[0, 0], theirs.values[0].mean(axis=0), rtol=1e-4, atol=1e-5)
    if not c.qk_norm:
        np.testing.assert_allclose(ours.keys[0, 0], theirs.keys[0].mean(axis=0), rtol=1e-4, atol=1e-5)
    assert np.isfinite(mqa.forward(ids).logits).all()


def test_the_window_pass_is_the_models_windowed_forward(model, ids):
    """Without renumbering, the window pass is the model's own block under ``forward(window, sinks)``'s mask (its
    biases, norms, RoPE layout and local layers); gpt2 has no RoPE position to renumber: refused, naming why."""
    if model.config.positions != "rope":
        with pytest.raises(ValueError, match="no RoPE.*no position in the cache to renumber"):
            variants.renumbered_logits(model, ids, window=4, sinks=1)
        return
    for window, sinks in ((4, 2), (5, 0), (3, 1)):
        usual = model.forward(ids, window=window, sinks=sinks).logits
        np.testing.assert_allclose(variants._window_pass(model, np.array(ids), window, sinks, False), usual,
                                   rtol=1e-5, atol=1e-5)
        ours = variants.renumbered_logits(model, ids, window=window, sinks=sinks)
        np.testing.assert_allclose(ours[:sinks + window], usual[:sinks + window], rtol=1e-5, atol=1e-5)
        if sinks == 0:  # without sinks the numbering changes nothing
            np.testing.assert_allclose(ours, usual, rtol=1e-5, atol=1e-5)
        elif model.config.local_layers != tuple(range(model.config.n_layers)):
            assert np.abs(ours - usual).max() > 1e-4  # later queries see the sinks closer (in a global layer)
