"""Sinks, windows, position shifts and smaller KV caches on SmolLM2-135M itself (slow: about 20 forward passes).
The same perplexities from transformers with the same 4-D attention mask and the same converted weights are in
``test_llama_live.py``, the one file that loads transformers' model (about 20 s), so one worker loads it once."""

from __future__ import annotations

import numpy as np
import pytest

from attention.llama import variants
from tests.core.llama_support import real_model

TEXTS = (
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk. He lit the great lamp, wound the "
    "clockwork that turned the lens, and wrote the weather in his logbook. Ships passing in the night never saw him, "
    "but they trusted his light to guide them safely past the rocks.",
    "Photosynthesis is the process by which green plants use sunlight to turn water and carbon dioxide into sugar and "
    "oxygen. It takes place mostly in the leaves, inside small structures called chloroplasts, which contain the "
    "green pigment chlorophyll that absorbs red and blue light.",
    "To make a simple loaf of bread, mix flour, water, salt and a little yeast into a soft dough. Knead it for ten "
    "minutes, let it rise in a warm place for an hour, shape it, let it rise again, and bake it in a hot oven until "
    "the crust is brown.",
)


@pytest.fixture(scope="module")
def model():
    return real_model()


@pytest.mark.slow
def test_a_window_as_long_as_the_text_is_full_attention_exactly(model):
    ids = model.encode(TEXTS[0])
    full = model.forward(ids)
    for window, sinks in ((len(ids), 0), (len(ids) + 5, 4)):
        out = model.forward(ids, window=window, sinks=sinks)
        np.testing.assert_array_equal(out.logits, full.logits)
        np.testing.assert_array_equal(out.attentions, full.attentions)
    assert variants.perplexity(model, ids, window=len(ids), score_from=0) == variants.perplexity(model, ids)


@pytest.mark.slow
def test_shifting_every_position_changes_no_logit(model):
    ids = model.encode(TEXTS[1])
    full = model.forward(ids)
    for offset in (1, 1000, 5000):
        out = model.forward(ids, position_offset=offset)
        assert np.abs(out.logits - full.logits).max() <= 1e-4
        assert np.abs(out.attentions - full.attentions).max() <= 1e-4
        np.testing.assert_array_equal(out.positions, offset + np.arange(len(ids)))


@pytest.mark.slow
@pytest.mark.parametrize("text", TEXTS)
def test_four_sinks_beat_no_sink_in_a_window_of_16(model, text):
    ids = model.encode(text)
    assert len(ids) >= 40
    none = variants.perplexity(model, ids, window=16, sinks=0)
    four = variants.perplexity(model, ids, window=16, sinks=4)
    full = variants.perplexity(model, ids, score_from=16)  # the same tokens: positions 16 .. n - 2
    assert none / four >= 1.5
    assert full <= four < none


@pytest.mark.slow
def test_mha_is_exact_and_full_rank_latent_is_the_original(model):
    ids = model.encode(TEXTS[2])
    plain = model.forward(ids)
    mha = variants.kv_variant(model, "mha")
    assert mha.config.kv_bytes_per_token == 138_240 == 3 * model.config.kv_bytes_per_token
    out = mha.forward(ids)
    np.testing.assert_array_equal(out.logits, plain.logits)
    np.testing.assert_array_equal(out.attentions, plain.attentions)
    del mha, out
    full = variants.kv_variant(model, ("latent", 384))
    assert full.config.kv_bytes_per_token == 46_080 == model.config.kv_bytes_per_token
    assert np.abs(full.forward(ids).logits - plain.logits).max() <= 1e-4
    assert variants.kv_variant(model, "mqa").config.kv_bytes_per_token == 15_360 == 30 * 128 * 4
    assert variants.kv_variant(model, ("latent", 128)).config.kv_bytes_per_token == 15_360


@pytest.mark.slow
@pytest.mark.parametrize("text", TEXTS)
def test_at_an_equal_budget_latent_beats_mqa(model, text):
    """The budgets a latent cache shares with a head-sharing one: 128 floats per token per layer (MQA's one key and
    one value of 64) and 384 (the model's GQA, which latent 384 reproduces)."""
    ids = model.encode(text)
    ref = model.forward(ids, need_weights=False).logits
    mqa = variants.compare(ref, variants.kv_variant(model, "mqa").forward(ids, need_weights=False).logits, ids)
    latent_logits = variants.kv_variant(model, ("latent", 128)).forward(ids, need_weights=False).logits
    latent = variants.compare(ref, latent_logits, ids)
    assert variants.kv_variant(model, "mqa").config.kv_floats_per_token_per_layer == 128
    assert latent.perplexity < mqa.perplexity and latent.kl < mqa.kl
    assert mqa.perplexity > 2 * variants.perplexity(model, ids)  # before any uptraining, MQA costs a lot
