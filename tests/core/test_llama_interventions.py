"""``attention.llama.interventions`` on the tiny random Llama: the logit lens, direct logit attribution, knockouts,
the stacked sweeps and activation patching against plain ``forward`` calls, and one ``ValueError`` per bad argument.

(The same identities on SmolLM2 and against transformers with hooks: ``test_llama_interventions_real.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.llama import interventions as iv
from attention.llama.blocks import rms_norm

TEXT = "The cat sat on the mat. The cat sat"
CLEAN, CORRUPTED = "The cat sat on the mat", "The hat sat on the cat"


@pytest.fixture(scope="module")
def ids(tiny) -> list[int]:
    return tiny.encode(TEXT)


@pytest.fixture(scope="module")
def run(tiny, ids):
    return tiny.forward(ids, keep_activations=True)


@pytest.fixture(scope="module")
def pair(tiny):
    clean, corrupted = tiny.encode(CLEAN), tiny.encode(CORRUPTED)
    assert len(clean) == len(corrupted)
    return clean, corrupted, tiny.forward(clean, keep_activations=True), tiny.forward(corrupted, keep_activations=True)


def test_logit_lens_reads_every_stream_and_its_last_row_is_the_logits(tiny, ids, run):
    lens = iv.logit_lens(tiny, ids)
    c = tiny.config
    assert lens.shape == (c.n_layers + 1, c.vocab_size) and lens.dtype == np.float32
    np.testing.assert_array_equal(lens[-1], run.logits[-1])
    np.testing.assert_array_equal(iv.logit_lens(tiny, ids, run=run), lens)
    first = tiny._output.logits(rms_norm(run.residuals[0, -1:], tiny._output_norm, c.rms_eps))[0]
    np.testing.assert_allclose(lens[0], first, rtol=1e-6, atol=1e-6)  # block 0: the embedding read out
    top = iv.logit_lens_top(tiny, ids, 3, run=run)
    assert top.ids.shape == top.probabilities.shape == (c.n_layers + 1, len(ids), 3)
    np.testing.assert_array_equal(top.ids[-1, :, 0], run.logits.argmax(-1))
    np.testing.assert_array_equal(top.ids[:, -1, 0], lens.argmax(-1))
    p = np.exp(iv.log_softmax(run.logits))
    np.testing.assert_allclose(top.probabilities[-1, :, 0], p.max(-1), rtol=1e-5)
    assert (np.diff(top.probabilities, axis=-1) <= 0).all()  # most likely first


def test_attribution_parts_add_up_to_the_logit(tiny, ids, run):
    c = tiny.config
    for token in (int(run.logits[-1].argmax()), 5, c.vocab_size - 1):
        a = iv.logit_attribution(tiny, ids, token, run=run)
        assert a.heads.shape == (c.n_layers, c.n_heads) and a.mlps.shape == (c.n_layers,)
        assert a.logit == float(run.logits[-1, token])
        assert abs(a.total - a.logit) <= 1e-4 * max(1.0, abs(a.logit))
        x = run.residuals[-1, -1].astype(np.float64)
        assert a.scale == pytest.approx(np.sqrt(np.mean(x ** 2) + c.rms_eps), rel=1e-12)
    # a head's share is its output through its rows of W_o, projected on the token's direction
    a = iv.logit_attribution(tiny, ids, 7, run=run)
    dh = c.d_head
    W_o = tiny._layers[1].o.widen().astype(np.float64)
    written = run.head_outputs[1, 2, -1].astype(np.float64) @ W_o[2 * dh:3 * dh]  # [d_model]
    direction = tiny._output_norm.astype(np.float64) * tiny._embedding.lookup(np.array([7]))[0] / a.scale
    assert a.heads[1, 2] == pytest.approx(float(written @ direction), rel=1e-9, abs=1e-12)


def test_knock_out_is_the_ablated_forward(tiny, ids, run):
    for heads, ablation in (([(1, 4)], "zero"), ([(0, 1), (1, 5)], "zero"), ([(1, 2)], "mean"), ([(0, 0)], "mean")):
        full = tiny.forward(ids, ablate=heads, ablation=ablation).logits[-1]
        np.testing.assert_allclose(iv.knock_out(tiny, ids, heads, ablation=ablation, run=run), full, rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(iv.knock_out(tiny, ids, heads, ablation=ablation), full, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(iv.knock_out(tiny, ids, [], run=run), run.logits[-1])


@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_the_sweep_is_every_knockout_one_at_a_time(tiny, ids, run, ablation):
    token = int(run.logits[-1].argmax())
    seen = []
    sweep = iv.knockout_sweep(tiny, ids, token, ablation=ablation, run=run, progress=lambda d, t: seen.append((d, t)))
    c = tiny.config
    assert seen == [(layer + 1, c.n_layers) for layer in range(c.n_layers)]
    assert sweep.log_probs.shape == sweep.top_ids.shape == (c.n_layers, c.n_heads)
    assert sweep.clean_log_prob == pytest.approx(iv.log_softmax(run.logits[-1])[token], abs=1e-12)
    for layer in range(c.n_layers) if ablation == "zero" else [1]:
        for head in range(c.n_heads):
            one = tiny.forward(ids, ablate=[(layer, head)], ablation=ablation, need_weights=False).logits[-1]
            assert sweep.log_probs[layer, head] == pytest.approx(iv.log_softmax(one)[token], abs=2e-5)
            assert sweep.top_ids[layer, head] == one.argmax()
    np.testing.assert_allclose(sweep.effect, sweep.log_probs - sweep.clean_log_prob)
    assert np.abs(sweep.effect).max() > 1e-3  # the knockouts change something


def test_residual_patching_map(tiny, pair):
    clean, corrupted, clean_run, corrupted_run = pair
    answer, foil = int(clean_run.logits[-1].argmax()), int(corrupted_run.logits[-1].argmax())
    if answer == foil:
        foil = (answer + 1) % tiny.config.vocab_size
    c, n = tiny.config, len(clean)
    done = []
    out = iv.patch_residual_sweep(tiny, clean, corrupted, answer, foil, clean_run=clean_run,
                                  corrupted_run=corrupted_run, progress=lambda d, t: done.append(d))
    assert out.shape == (c.n_layers + 1, n) and done == list(range(1, c.n_layers + 2))
    for block in range(c.n_layers + 1):
        for pos in (1, n // 2, n - 1):
            patched = tiny.forward(corrupted, patch={"resid": {(block, pos): clean_run.residuals[block, pos]}})
            assert out[block, pos] == pytest.approx(iv.logit_difference(patched.logits, answer, foil), abs=2e-5)
    # the prompts' common first token: nothing to patch there (equal streams, by causality)
    assert clean[0] == corrupted[0]
    assert (out[:, 0] == iv.logit_difference(corrupted_run.logits, answer, foil)).all()
    # the same pair patched into itself changes nothing
    same = iv.patch_residual_sweep(tiny, clean, clean, answer, foil, clean_run=clean_run, corrupted_run=clean_run)
    assert (same == iv.logit_difference(clean_run.logits, answer, foil)).all()
    # without the runs given, the same map
    np.testing.assert_allclose(iv.patch_residual_sweep(tiny, clean, corrupted, answer, foil), out, atol=2e-5)


def test_head_patching_map(tiny, pair):
    clean, corrupted, clean_run, corrupted_run = pair
    answer, foil = 3, 4
    c = tiny.config
    out = iv.patch_head_sweep(tiny, clean, corrupted, answer, foil, clean_run=clean_run, corrupted_run=corrupted_run)
    assert out.shape == (c.n_layers, c.n_heads)
    for layer in range(c.n_layers):
        for head in range(c.n_heads):
            patched = tiny.forward(corrupted, patch={"head": {(layer, head): clean_run.head_outputs[layer, head]}})
            assert out[layer, head] == pytest.approx(iv.logit_difference(patched.logits, answer, foil), abs=2e-5)
    np.testing.assert_array_equal(iv.patch_head_sweep(tiny, clean, corrupted, answer, foil, [1],
                                                      clean_run=clean_run, corrupted_run=corrupted_run), out[1:])
    assert np.abs(out - iv.logit_difference(corrupted_run.logits, answer, foil)).max() > 1e-3


def test_bad_arguments_name_the_problem(tiny, ids, run, pair):
    clean, corrupted, clean_run, corrupted_run = pair
    V = tiny.config.vocab_size
    other = tiny.forward(ids[::-1], keep_activations=True)  # as long, other tokens
    assert ids[::-1] != ids
    cases = [
        (lambda: iv.knock_out(tiny, ids, [(2, 0)]),
         r"heads must be a list of \(layer, head\) pairs with layer in 0\.\.1"),
        (lambda: iv.knock_out(tiny, ids, [(0, 6)]), r"head in 0\.\.5"),
        (lambda: iv.knock_out(tiny, ids, [(0, 1)], ablation="noise"), r"ablation must be one of \('zero', 'mean'\)"),
        (lambda: iv.knock_out(tiny, ids, [(0, 1)], run=other), "run was made from other token ids"),
        (lambda: iv.knock_out(tiny, ids, [(0, 1)], run=tiny.forward(ids)), "run must be model.forward"),
        (lambda: iv.knock_out(tiny, ids, [(0, 1)], run="x"), "run must be model.forward"),
        (lambda: iv.knock_out(tiny, [], [(0, 1)]), "empty prompt"),
        (lambda: iv.logit_attribution(tiny, ids, V), rf"token_id must be an integer in 0\.\.{V - 1}"),
        (lambda: iv.logit_attribution(tiny, ids, -1), "token_id must be an integer"),
        (lambda: iv.logit_attribution(tiny, ids, 2.0), "token_id must be an integer"),
        (lambda: iv.logit_lens(tiny, ids, run=pair[2]), r"run.residuals must have shape \[n_layers \+ 1, n, d_model\]"),
        (lambda: iv.logit_lens_top(tiny, ids, 0), r"k must be an integer in 1\.\.20"),
        (lambda: iv.knockout_sweep(tiny, ids, 3, ablation="one"), "ablation must be one of"),
        (lambda: iv.knockout_sweep(tiny, ids, 3, progress=5), r"progress must be a function progress\(done, total\)"),
        (lambda: iv.patch_residual_sweep(tiny, clean, corrupted[:-1], 1, 2),
         rf"clean_ids and corrupted_ids must have the same length .* got {len(clean)} and {len(clean) - 1} tokens"),
        (lambda: iv.patch_residual_sweep(tiny, clean, corrupted, V, 2), r"answer must be an integer in 0\.\."),
        (lambda: iv.patch_residual_sweep(tiny, clean, corrupted, 1, -2), r"foil must be an integer in 0\.\."),
        (lambda: iv.patch_residual_sweep(tiny, clean, corrupted, 1, 2, clean_run=corrupted_run), "other token ids"),
        (lambda: iv.patch_head_sweep(tiny, clean, corrupted, 1, 2, [2]), r"layers must be an integer in 0\.\.1"),
        (lambda: iv.patch_head_sweep(tiny, clean, corrupted, 1, 2, 5), r"layers must be a list of layers in 0\.\.1"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
    assert clean_run is not None


def test_without_a_run_the_logits_are_forwards_bit_for_bit(tiny, ids, run):
    assert iv.logit_attribution(tiny, ids, 7).logit == float(run.logits[-1, 7])
    np.testing.assert_array_equal(iv.knock_out(tiny, ids, []), run.logits[-1])
    one = tiny.forward(ids[:1], keep_activations=True)
    assert iv.logit_attribution(tiny, ids[:1], 7).logit == float(one.logits[-1, 7])
