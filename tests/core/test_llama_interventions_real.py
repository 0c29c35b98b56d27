"""The interventions on SmolLM2-135M itself: the issue's exact identities, the measured facts the lesson states, the
KV cache with a patch or a knockout. One knockout's and one patch's logits against transformers with hooks are in
``test_llama_live.py`` (the one file that loads transformers' model).

All ``slow`` (the real model).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from attention.llama import interventions as iv
from attention.llama.weights import _Dense
from tests.core.llama_support import real_model

pytestmark = pytest.mark.slow

CLEAN, CORRUPTED = "The capital of France is", "The capital of Italy is"
TEXT = "The cat sat on the mat because it was tired, and the dog watched the cat"


@pytest.fixture(scope="module")
def model():
    return real_model()


@pytest.fixture(scope="module")
def ids(model):
    return model.encode(TEXT)


@pytest.fixture(scope="module")
def run(model, ids):
    return model.forward(ids, keep_activations=True)


@pytest.fixture(scope="module")
def pair(model):
    clean, corrupted = model.encode(CLEAN), model.encode(CORRUPTED)
    paris, rome = model.encode(" Paris")[0], model.encode(" Rome")[0]
    return (clean, corrupted, paris, rome, model.forward(clean, keep_activations=True),
            model.forward(corrupted, keep_activations=True))


# --- exact identities ------------------------------------------------------------------------------------------


def test_ablating_or_patching_nothing_is_forward(model, ids, run):
    plain = model.forward(ids)
    for out in (model.forward(ids, ablate=[]), model.forward(ids, patch={}), model.forward(ids, ablate=[], patch={}),
                run):
        np.testing.assert_array_equal(out.logits, plain.logits)
        np.testing.assert_array_equal(out.attentions, plain.attentions)


def test_zero_ablating_a_head_is_zeroing_its_64_rows_of_W_o(model, ids):
    layer, head, dh = 17, 4, model.config.d_head
    changed = copy.copy(model)
    changed._layers = list(model._layers)
    lay = copy.copy(model._layers[layer])
    W_o = lay.o.widen().copy()
    W_o[head * dh:(head + 1) * dh] = 0.0  # [576, 576]: the head's 64 rows
    lay.o = _Dense(W_o)
    changed._layers[layer] = lay
    ablated = model.forward(ids, ablate=[(layer, head)])
    np.testing.assert_array_equal(ablated.logits, changed.forward(ids).logits)
    assert np.abs(ablated.logits - model.forward(ids).logits).max() > 1e-2


def test_patching_from_the_same_prompt_changes_nothing(model, ids, run):
    n = len(ids)
    for block, pos in ((0, 0), (5, n // 2), (23, n - 1), (model.config.n_layers, n - 1)):
        out = model.forward(ids, patch={"resid": {(block, pos): run.residuals[block, pos]}})
        np.testing.assert_array_equal(out.logits, run.logits)
    out = model.forward(ids, patch={"head": {(18, 6): run.head_outputs[18, 6], (3, 0): run.head_outputs[3, 0]}})
    np.testing.assert_array_equal(out.logits, run.logits)


def test_patching_every_position_of_a_block_gives_the_clean_logits(model, pair):
    clean, corrupted, _, _, clean_run, corrupted_run = pair
    assert np.abs(clean_run.logits - corrupted_run.logits).max() > 1
    for block in (0, 12, 23, 24, model.config.n_layers):
        patch = {"resid": {(block, p): clean_run.residuals[block, p] for p in range(len(clean))}}
        np.testing.assert_array_equal(model.forward(corrupted, patch=patch).logits, clean_run.logits)


def test_logit_lens_last_row_is_the_logits(model, ids, run):
    lens = iv.logit_lens(model, ids)
    assert lens.shape == (model.config.n_layers + 1, model.config.vocab_size) and lens.dtype == np.float32
    np.testing.assert_array_equal(lens[-1], run.logits[-1])
    np.testing.assert_array_equal(iv.logit_lens(model, ids, run=run), lens)


def test_attribution_parts_sum_to_the_logit(model, ids, run, pair):
    clean, _, paris, rome, clean_run, _ = pair
    cases = [(ids, run, int(run.logits[-1].argmax())), (ids, run, 0), (clean, clean_run, paris),
             (clean, clean_run, rome)]
    for prompt, prompt_run, token in cases:
        a = iv.logit_attribution(model, prompt, token, run=prompt_run)
        assert abs(a.total - a.logit) <= 1e-4 * abs(a.logit), (token, a.total, a.logit)
    a = iv.logit_attribution(model, clean, paris)
    assert a.logit == pytest.approx(17.37126, abs=1e-4)
    assert np.unravel_index(np.argmax(a.heads), a.heads.shape) == (23, 4)  # the head the patching finds


def test_forward_from_a_cached_residual_is_the_full_forward(model, ids, run):
    for start in (1, 15, 29, model.config.n_layers):
        out = model.forward(ids, start_layer=start, residual=run.residuals[start])
        np.testing.assert_array_equal(out.logits, run.logits)
        np.testing.assert_array_equal(out.attentions, run.attentions[start:])
    np.testing.assert_array_equal(
        model.forward(ids, ablate=[(20, 3)], start_layer=20, residual=run.residuals[20]).logits,
        model.forward(ids, ablate=[(20, 3)]).logits)


def test_one_stacked_layer_of_the_sweep_is_nine_knockouts(model, pair):
    clean, _, paris, _, clean_run, _ = pair
    sweep = iv.knockout_sweep(model, clean, paris, run=clean_run)
    for layer in (0, 23):
        for head in range(model.config.n_heads):
            one = model.forward(clean, ablate=[(layer, head)], need_weights=False).logits[-1]
            assert sweep.log_probs[layer, head] == pytest.approx(iv.log_softmax(one)[paris], abs=1e-4)
    assert np.unravel_index(np.argmin(sweep.effect), sweep.effect.shape) == (23, 4)


def test_a_patched_prefix_or_a_knocked_out_head_continues_with_the_cache(model, ids, pair):
    _, _, _, _, clean_run, _ = pair
    vector = clean_run.residuals[10, 3]
    full = model.forward(ids, patch={"resid": {(10, 3): vector}})
    prefix = model.forward(ids[:6], patch={"resid": {(10, 3): vector}})
    rest = model.forward(ids[6:], cache=prefix.cache)
    np.testing.assert_allclose(rest.logits, full.logits[6:], rtol=1e-4, atol=1e-4)
    heads = [(18, 6), (17, 4)]
    full = model.forward(ids, ablate=heads)
    out = model.forward(ids[:6], ablate=heads)
    for t in ids[6:]:
        out = model.forward([t], cache=out.cache, ablate=heads)
    np.testing.assert_allclose(out.logits[-1], full.logits[-1], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="ablation='mean' averages"):
        model.forward(ids[6:], cache=prefix.cache, ablate=heads, ablation="mean")
    with pytest.raises(ValueError, match="other options: ablate"):
        model.forward(ids[6:], cache=prefix.cache, ablate=heads)


# --- the facts the lesson states -------------------------------------------------------------------------------


def test_the_capital_fact_moves_between_layers_23_and_24_and_one_head_carries_it(model, pair):
    clean, corrupted, paris, rome, clean_run, corrupted_run = pair
    assert iv.logit_difference(clean_run.logits, paris, rome) == pytest.approx(7.31, abs=0.01)
    assert iv.logit_difference(corrupted_run.logits, paris, rome) == pytest.approx(-6.02, abs=0.01)
    grid = iv.patch_residual_sweep(model, clean, corrupted, paris, rome, clean_run=clean_run,
                                   corrupted_run=corrupted_run)
    france, last = 3, len(clean) - 1
    assert (grid[:24, france] > 7).all() and (grid[24:, france] < -6).all()
    assert (grid[:24, last] < -5).all() and (grid[24:, last] > 7).all()
    heads = iv.patch_head_sweep(model, clean, corrupted, paris, rome, [23], clean_run=clean_run,
                                corrupted_run=corrupted_run)[0]
    assert heads[4] == pytest.approx(6.44, abs=0.01) and int(np.argmax(heads)) == 4
    one = model.forward(corrupted, patch={"head": {(23, 4): clean_run.head_outputs[23, 4]}})
    assert iv.logit_difference(one.logits, paris, rome) == pytest.approx(heads[4], abs=1e-4)
