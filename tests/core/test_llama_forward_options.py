"""``LlamaModel.forward``'s interventions and options on the tiny random Llama: exact identities, an
independent float64 reference, the KV cache, and one clear ``ValueError`` per bad argument.

(The same on the real model, and against transformers with hooks: ``test_llama_interventions_real.py``.)
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from attention import llama
from attention.llama.weights import _Dense
from tests.core.llama_support import TINY, file_weights, reference_forward

TEXT = "The cat sat on the mat. The cat sat"


@pytest.fixture(scope="module")
def ids(tiny) -> list[int]:
    return tiny.encode(TEXT)


def test_no_intervention_is_the_usual_pass_bit_for_bit(tiny, ids):
    plain = tiny.forward(ids)
    for out in (tiny.forward(ids, ablate=[]), tiny.forward(ids, patch={}), tiny.forward(ids, window=None),
                tiny.forward(ids, window=len(ids)), tiny.forward(ids, window=10**6, sinks=3),
                tiny.forward(ids, keep_activations=True), tiny.forward(ids, position_offset=0)):
        np.testing.assert_array_equal(out.logits, plain.logits)
        np.testing.assert_array_equal(out.attentions, plain.attentions)


def test_keep_activations_are_the_stream_and_its_parts(tiny, ids):
    out = tiny.forward(ids, keep_activations=True)
    c, n = tiny.config, len(ids)
    assert out.residuals.shape == (c.n_layers + 1, n, c.d_model) and out.residuals.dtype == np.float32
    assert out.head_outputs.shape == (c.n_layers, c.n_heads, n, c.d_head)
    assert out.mlp_outputs.shape == (c.n_layers, n, c.d_model) and out.first_layer == 0
    np.testing.assert_array_equal(out.residuals[0], tiny._embedding.lookup(np.array(ids)))
    for layer in range(c.n_layers):
        W_o = tiny._layers[layer].o.widen()  # [H dh, d_model]
        attn = out.head_outputs[layer].transpose(1, 0, 2).reshape(n, -1) @ W_o  # [n, d_model]
        np.testing.assert_allclose(out.residuals[layer + 1], out.residuals[layer] + attn + out.mlp_outputs[layer],
                                   rtol=1e-5, atol=1e-5)
    # each head's output is its attention weights times its key/value head's values
    steps = tiny.head_steps(ids, 1, 4)
    np.testing.assert_allclose(out.head_outputs[1, 4], steps.output, rtol=1e-5, atol=1e-6)
    final = llama.blocks.rms_norm(out.residuals[-1], tiny._output_norm, c.rms_eps)
    np.testing.assert_allclose(tiny._output.logits(final), out.logits, rtol=1e-5, atol=1e-5)


def test_zero_ablation_is_zeroing_the_heads_rows_of_W_o(tiny, ids):
    layer, head, dh = 1, 4, tiny.config.d_head
    changed = copy.copy(tiny)
    changed._layers = list(tiny._layers)
    lay = copy.copy(tiny._layers[layer])
    W_o = lay.o.widen().copy()
    W_o[head * dh:(head + 1) * dh] = 0.0  # the head's 16 rows of W_o
    lay.o = _Dense(W_o)
    changed._layers[layer] = lay
    np.testing.assert_array_equal(tiny.forward(ids, ablate=[(layer, head)]).logits, changed.forward(ids).logits)


def test_zero_ablation_matches_the_independent_reference(tiny, ids):
    heads = [(0, 1), (1, 4), (1, 5)]
    out = tiny.forward(ids, ablate=heads)
    logits, attentions = reference_forward(file_weights(tiny.path), ids, TINY, ablate=tuple(heads))
    np.testing.assert_allclose(out.logits, logits, rtol=1e-4, atol=1e-4 * np.abs(logits).max())
    np.testing.assert_allclose(out.attentions, attentions, atol=2e-5)
    assert np.abs(out.logits - tiny.forward(ids).logits).max() > 1e-2  # it changed something


def test_mean_ablation_puts_the_heads_mean_over_positions(tiny, ids):
    clean = tiny.forward(ids, keep_activations=True)
    out = tiny.forward(ids, ablate=[(1, 2)], ablation="mean", keep_activations=True)
    mean = clean.head_outputs[1, 2].mean(axis=0)  # layer 1 is the first changed: its inputs are the clean ones
    np.testing.assert_allclose(out.head_outputs[1, 2], np.broadcast_to(mean, out.head_outputs[1, 2].shape),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(out.head_outputs[0], clean.head_outputs[0])
    assert np.abs(out.logits - clean.logits).max() > 1e-3


def test_patching_a_position_from_the_same_prompt_changes_nothing(tiny, ids):
    clean = tiny.forward(ids, keep_activations=True)
    for block, pos in ((0, 3), (1, len(ids) - 1), (tiny.config.n_layers, 0)):
        out = tiny.forward(ids, patch={"resid": {(block, pos): clean.residuals[block, pos]}})
        np.testing.assert_array_equal(out.logits, clean.logits)
    out = tiny.forward(ids, patch={"head": {(1, 3): clean.head_outputs[1, 3]}})
    np.testing.assert_array_equal(out.logits, clean.logits)


def test_patching_every_position_from_the_clean_run_gives_the_clean_logits(tiny):
    clean_ids, corrupt_ids = tiny.encode("The cat sat on the mat"), tiny.encode("The hat sat on the cat")
    assert len(clean_ids) == len(corrupt_ids)
    clean = tiny.forward(clean_ids, keep_activations=True)
    corrupt = tiny.forward(corrupt_ids)
    assert np.abs(clean.logits - corrupt.logits).max() > 1e-2
    for block in range(tiny.config.n_layers + 1):
        patch = {"resid": {(block, pos): clean.residuals[block, pos] for pos in range(len(clean_ids))}}
        np.testing.assert_array_equal(tiny.forward(corrupt_ids, patch=patch).logits, clean.logits)
    # one position only: it moves the answer part of the way
    where = next(i for i, (a, b) in enumerate(zip(clean_ids, corrupt_ids, strict=True)) if a != b)
    one = tiny.forward(corrupt_ids, patch={"resid": {(1, where): clean.residuals[1, where]}})
    assert not np.array_equal(one.logits, corrupt.logits)


def test_forward_from_a_given_residual_is_the_full_forward(tiny, ids):
    clean = tiny.forward(ids, keep_activations=True)
    for start in range(tiny.config.n_layers + 1):
        out = tiny.forward(ids, start_layer=start, residual=clean.residuals[start], keep_activations=True)
        np.testing.assert_array_equal(out.logits, clean.logits)
        assert out.cache is None and out.first_layer == start
        np.testing.assert_array_equal(out.attentions, clean.attentions[start:])
        np.testing.assert_array_equal(out.residuals, clean.residuals[start:])
    ablated = tiny.forward(ids, ablate=[(1, 0)])
    np.testing.assert_array_equal(
        tiny.forward(ids, ablate=[(1, 0)], start_layer=1, residual=clean.residuals[1]).logits, ablated.logits)


def test_a_batch_of_knockouts_is_the_same_as_one_at_a_time(tiny, ids):
    from attention.llama.model import _Plan

    c, layer = tiny.config, 1
    clean = tiny.forward(ids, keep_activations=True)
    mask = np.zeros((c.n_heads, c.n_layers, c.n_heads), bool)
    mask[np.arange(c.n_heads), layer, np.arange(c.n_heads)] = True  # row b knocks out head b of the layer
    plan = _Plan(batch=c.n_heads, ablate=mask, start_layer=layer, residual=clean.residuals[layer][None],
                 last_logits_only=True)
    batched = tiny._run(np.array(ids), None, False, plan)  # [9, 1, vocab]
    assert batched.shape == (c.n_heads, 1, c.vocab_size)
    for head in range(c.n_heads):
        one = tiny.forward(ids, ablate=[(layer, head)], need_weights=False).logits[-1]
        np.testing.assert_allclose(batched[head, 0], one, rtol=1e-6, atol=1e-6)


def test_window_and_sinks_match_the_independent_reference(tiny, ids):
    n = len(ids)
    p, j = np.arange(n)[:, None], np.arange(n)[None, :]
    for window, sinks in ((4, 0), (4, 2), (1, 1), (1, 0)):
        out = tiny.forward(ids, window=window, sinks=sinks)
        allowed = (j <= p) & ((j > p - window) | (j < sinks))
        logits, attentions = reference_forward(file_weights(tiny.path), ids, TINY, mask=allowed)
        np.testing.assert_allclose(out.attentions, attentions, atol=2e-5)
        np.testing.assert_allclose(out.logits, logits, rtol=1e-4, atol=1e-4 * np.abs(logits).max())
        assert (out.attentions[..., ~allowed] == 0).all()


def test_position_offset_is_the_reference_with_shifted_positions(tiny, ids):
    out = tiny.forward(ids, position_offset=20)
    np.testing.assert_array_equal(out.positions, 20 + np.arange(len(ids)))
    logits, attentions = reference_forward(file_weights(tiny.path), ids, TINY, offset=20)
    np.testing.assert_allclose(out.attentions, attentions, atol=2e-5)
    # RoPE scores depend on relative positions only: the shift changes the numbers by rounding alone
    np.testing.assert_allclose(out.logits, tiny.forward(ids).logits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("options", [{"window": 3, "sinks": 1}, {"ablate": [(0, 2), (1, 5)]},
                                     {"position_offset": 7}, {"window": 2}])
def test_a_cache_continues_with_the_options_that_made_it(tiny, ids, options):
    full = tiny.forward(ids, **options)
    prefix = tiny.forward(ids[:5], **options)
    out = prefix
    for t in ids[5:]:
        out = tiny.forward([t], cache=out.cache, **options)
        assert out.cache.options == prefix.cache.options
    np.testing.assert_allclose(out.logits[-1], full.logits[-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.attentions[..., 0, :], full.attentions[..., -1, :], atol=1e-5)
    several = tiny.forward(ids[5:], cache=prefix.cache, **options)
    np.testing.assert_allclose(several.logits, full.logits[5:], rtol=1e-5, atol=1e-5)


def test_a_patched_prefix_continues_correctly(tiny, ids):
    clean = tiny.forward(ids, keep_activations=True)
    other = tiny.forward(tiny.encode("A dog ran in the park. A dog"), keep_activations=True)
    vector = other.residuals[1, 2]
    full = tiny.forward(ids, patch={"resid": {(1, 2): vector}})
    prefix = tiny.forward(ids[:4], patch={"resid": {(1, 2): vector}})
    rest = tiny.forward(ids[4:], cache=prefix.cache)
    np.testing.assert_allclose(rest.logits, full.logits[4:], rtol=1e-5, atol=1e-5)
    # a patch of a new token's position, with a cache
    later = tiny.forward(ids[4:], cache=tiny.forward(ids[:4]).cache, patch={"resid": {(1, 6): vector}})
    np.testing.assert_allclose(later.logits, tiny.forward(ids, patch={"resid": {(1, 6): vector}}).logits[4:],
                               rtol=1e-5, atol=1e-5)
    assert not np.array_equal(later.logits, clean.logits[4:])


def test_bad_arguments_name_the_problem(tiny, ids):
    n, c = len(ids), tiny.config
    clean = tiny.forward(ids, keep_activations=True)
    cached = tiny.forward(ids[:4]).cache
    windowed = tiny.forward(ids[:4], window=2).cache
    cases = [
        ({"ablate": [(2, 0)]}, r"ablate must be a list of \(layer, head\) pairs with layer in 0\.\.1 and head in "
                               r"0\.\.5"),
        ({"ablate": [(0, 6)]}, "head in 0..5"),
        ({"ablate": [(0,)]}, "ablate must be"),
        ({"ablate": 3}, "ablate must be"),
        ({"ablate": [(True, 1)]}, "ablate must be"),
        ({"ablation": "noise"}, r"ablation must be one of \('zero', 'mean'\)"),
        ({"patch": {"stream": {}}}, "patch must be a dict with the keys 'resid' and/or 'head'"),
        ({"patch": {"resid": {(0, n): clean.residuals[0, 0]}}}, "past the prompt"),
        ({"patch": {"resid": {(3, 0): clean.residuals[0, 0]}}}, r"layer in 0\.\.2"),
        ({"patch": {"resid": {(0, 0): np.zeros(5)}}}, r"must have shape \[d_model\] = \[96\], got \[5\]"),
        ({"patch": {"resid": {(0, 0): np.full(96, np.nan)}}}, "NaN"),
        ({"patch": {"head": {(0, 0): np.zeros((n, 3))}}}, rf"must have shape \[n, d_head\] = \[{n}, 16\]"),
        ({"patch": {"head": {(0, 0): clean.head_outputs[0, 0]}}, "ablate": [(0, 0)]}, "both ablated and patched"),
        ({"window": 0}, r"window must be an integer in 1\.\."),
        ({"window": 2.5}, "window must be an integer"),
        ({"sinks": -1}, r"sinks must be an integer in 0\.\."),
        ({"position_offset": -1}, "position_offset must be an integer"),
        ({"position_offset": c.context_length}, rf"position_offset must be an integer in 0\.\.{c.context_length - n}"),
        ({"start_layer": 1}, r"start_layer = 1 needs residual, the stream entering that block, shape \[n, d_model\]"),
        ({"start_layer": 3, "residual": clean.residuals[0]}, r"start_layer must be an integer in 0\.\.2"),
        ({"start_layer": 1, "residual": np.zeros((n, 4))}, r"residual must have shape \[n, d_model\]"),
        ({"start_layer": 1, "residual": clean.residuals[1], "ablate": [(0, 1)]}, "before start_layer"),
        ({"keep_activations": "yes"}, "keep_activations must be True or False"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            tiny.forward(ids, **kwargs)
    rest = ids[4:]
    with_cache = [
        ({"cache": cached, "ablation": "mean", "ablate": [(0, 0)]}, "ablation='mean' averages"),
        ({"cache": cached, "residual": clean.residuals[0][4:]}, "residual and cache cannot be combined"),
        ({"cache": cached, "window": 2}, r"other options: window=None \(asked 2\)"),
        ({"cache": windowed}, r"other options: window=2 \(asked None\)"),
        ({"cache": cached, "position_offset": 3}, r"position_offset=0 \(asked 3\)"),
        ({"cache": cached, "ablate": [(1, 1)]}, "other options: ablate"),
        ({"cache": cached, "patch": {"resid": {(0, 1): clean.residuals[0, 1]}}}, "cached positions 0..3 cannot change"),
        ({"cache": "not a cache"}, "cache must be a KVCache"),
    ]
    for kwargs, match in with_cache:
        with pytest.raises(ValueError, match=match):
            tiny.forward(rest, **kwargs)
