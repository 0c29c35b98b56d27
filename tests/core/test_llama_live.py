"""``attention.llama`` against live Hugging Face ``transformers`` (a test dependency; PyTorch CPU) on the
same GGUF file: token ids, attention weights of every layer and head, logits, greedy continuations and
the de-quantized weights themselves. Also checks that transformers still produces the recorded
reference (``tests/data/llama_reference.npz``).

transformers takes about 20 s to load the file (most of it parsing the GGUF), so every test that needs its model is
in this file and the model is loaded once per process: with ``--dist loadfile`` one worker loads it once. That includes
the perplexities with sinks, windows and converted caches (``test_llama_variants_real.py``'s subjects) and one
knockout's and patches' logits with hooks (``test_llama_interventions_real.py``'s).
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytest

from attention import llama
from attention.llama import interventions as iv
from attention.llama import variants
from attention.llama.blocks import rope_gguf_to_hf
from tests.conftest import require
from tests.core.llama_support import REPO, TINY, real_model, real_model_path
from tests.core.test_llama_interventions_real import CLEAN, CORRUPTED
from tests.core.test_llama_variants_real import TEXTS

pytestmark = [pytest.mark.slow, pytest.mark.torch]


def _tools():
    spec = importlib.util.spec_from_file_location("make_llama_reference", REPO / "tools" / "make_llama_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _hf(path):
    torch = require("torch")
    require("transformers")
    # One thread: the suite runs two workers on two cores, and PyTorch's OpenMP threads spin while they wait for a
    # core, so two threads beside a busy worker ran these tests 10x slower (3 forward passes: 14.5 s vs 1.4 s).
    torch.set_num_threads(1)
    return _tools().load_transformers(path)


@pytest.fixture(scope="module")
def hf():
    return _hf(real_model_path())


def _hf_forward(model, ids):
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return out.logits[0].numpy(), np.stack([a[0].numpy() for a in out.attentions])


@pytest.mark.parametrize("case", list(_tools().CASES))
def test_live_parity(hf, case):
    model, tokenizer = hf
    ours = real_model()
    text, n_keep = _tools().CASES[case]
    ids = tokenizer(text)["input_ids"]
    assert ours.encode(text) == ids
    ids = ids[:n_keep] if n_keep else ids
    logits, attentions = _hf_forward(model, ids)
    out = ours.forward(ids)
    np.testing.assert_allclose(out.attentions, attentions, rtol=0, atol=1e-4)  # every layer and head
    row_max = np.abs(logits).max(axis=-1, keepdims=True)
    assert (np.abs(out.logits - logits) <= 1e-3 * row_max).all()
    # greedy continuations: ours equal the recorded ones (test_llama_real.py), which transformers
    # reproduces live (test_transformers_reproduces_the_recorded_reference, 16 tokens per case)


def test_tokenizer_parity_on_awkward_text(hf):
    _, tokenizer = hf
    ours = real_model()
    for text in ["  two  spaces", "tab\tand\nnewline\n\n", " 2024-12-31 12:00", "x=1e-5;y=3.14159", "ÀÉÎÕÜ ß",
                 "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n", "日本語のテキスト",
                 "emoji 👩‍👩‍👧 flags 🇫🇷", "don't you'll we've", "   "]:
        assert ours.encode(text) == tokenizer(text)["input_ids"], text


def test_weights_equal_transformers_bit_for_bit(hf):
    """Our de-quantized float32 weights are transformers', W_q/W_k rows un-permuted per head."""
    model, _ = hf
    ours = real_model()
    c = ours.config
    perm = rope_gguf_to_hf(c.d_head)
    q_cols = np.concatenate([h * c.d_head + perm for h in range(c.n_heads)])
    k_cols = np.concatenate([h * c.d_head + perm for h in range(c.n_kv_heads)])
    for index in (0, 17, 29):
        theirs = model.model.layers[index]
        layer = ours._layers[index]
        W = layer.qkv.widen()  # [576, 576 + 192 + 192], GGUF layout
        q, k, v = W[:, :576], W[:, 576:768], W[:, 768:]
        np.testing.assert_array_equal(q[:, q_cols], theirs.self_attn.q_proj.weight.detach().numpy().T)
        np.testing.assert_array_equal(k[:, k_cols], theirs.self_attn.k_proj.weight.detach().numpy().T)
        np.testing.assert_array_equal(v, theirs.self_attn.v_proj.weight.detach().numpy().T)
        np.testing.assert_array_equal(layer.o.widen(), theirs.self_attn.o_proj.weight.detach().numpy().T)
        gate_up = layer.gate_up.widen()
        np.testing.assert_array_equal(gate_up[:, :1536], theirs.mlp.gate_proj.weight.detach().numpy().T)
        np.testing.assert_array_equal(gate_up[:, 1536:], theirs.mlp.up_proj.weight.detach().numpy().T)
        np.testing.assert_array_equal(layer.down.widen(), theirs.mlp.down_proj.weight.detach().numpy().T)
        np.testing.assert_array_equal(layer.attn_norm, theirs.input_layernorm.weight.detach().numpy())
    np.testing.assert_array_equal(ours._embedding.ET.T, model.model.embed_tokens.weight.detach().numpy())


def test_transformers_reproduces_the_recorded_reference(hf):
    tools = _tools()
    live = tools.build_reference(real_model_path(), model_and_tokenizer=hf)
    with np.load(tools.OUT) as data:
        for case in tools.CASES:
            for field in ("ids", "layers", "greedy", "top_ids"):
                np.testing.assert_array_equal(live[case][field], data[f"{case}/{field}"], err_msg=f"{case}/{field}")
            np.testing.assert_allclose(live[case]["attentions"], data[f"{case}/attentions"], rtol=1e-5, atol=1e-5,
                                       err_msg=f"{case}/attentions")
            # float32 logits after 30 layers depend on the CPU's kernels (their order of summation): recorded on an
            # AMD EPYC (AVX2), on an Intel Xeon (AVX-512) PyTorch's differ by up to 5.4e-5 for logits up to 38 in
            # size (attentions: 5e-6). A tolerance of 1e-5 of the largest logit: 4x that, and far below any real
            # error (a wrong RoPE pairing or norm moves logits by whole units).
            for field in ("last_logits", "top_logits"):
                recorded = data[f"{case}/{field}"]
                np.testing.assert_allclose(live[case][field], recorded, rtol=0, atol=1e-5 * np.abs(recorded).max(),
                                           err_msg=f"{case}/{field}")


def test_tiny_gguf_through_transformers(tiny_q_file, tiny_file):
    """transformers reads our test files (written with gguf's writer) as the same model."""
    for file in (tiny_file, tiny_q_file):
        model, tokenizer = _tools().load_transformers(file.path)
        ours = llama.load(file.path, expected_sha256=None)
        text = "the cat sat on the mat <think> 12 3 héllo<|im_end|>"
        ids = ours.encode(text)
        assert ids == tokenizer(text)["input_ids"]
        logits, attentions = _hf_forward(model, ids)
        out = ours.forward(ids)
        np.testing.assert_allclose(out.attentions, attentions, rtol=0, atol=2e-5)
        np.testing.assert_allclose(out.logits, logits, rtol=0, atol=1e-4 * np.abs(logits).max())
    assert TINY["n_layers"] == 2


# --- sinks, windows and converted caches (test_llama_variants_real.py's subjects) -------------------------------------


def _hf_perplexity(hf_model, ids, *, window=None, sinks=0, offset=0, score_from=0):
    import torch

    n = len(ids)
    p, j = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = j <= p
    if window is not None:
        allowed &= (j > p - window) | (j < sinks)
    mask = torch.where(torch.tensor(allowed), 0.0, torch.finfo(torch.float32).min)[None, None]  # [1, 1, n, n]
    with torch.no_grad():
        logits = hf_model(torch.tensor([ids]), attention_mask=mask,
                          position_ids=torch.arange(offset, offset + n)[None]).logits[0].numpy()
    return float(np.exp(variants.next_token_losses(logits, ids)[score_from:].mean()))


def test_perplexity_equals_transformers_with_the_same_4d_mask(hf):
    hf_model, _ = hf
    model = real_model()
    ids = model.encode(TEXTS[0])
    for options in ({}, {"window": 16, "sinks": 0}, {"window": 16, "sinks": 4}, {"window": 8, "sinks": 1},
                    {"window": 16, "sinks": 4, "position_offset": 1000}):
        ours = variants.perplexity(model, ids, score_from=16, **options)
        theirs = _hf_perplexity(hf_model, ids, window=options.get("window"), sinks=options.get("sinks", 0),
                                offset=options.get("position_offset", 0), score_from=16)
        assert abs(ours - theirs) <= 1e-3 * theirs, (options, ours, theirs)


def test_converted_perplexities_equal_transformers_with_its_own_conversion(hf):
    """MQA as the mean of transformers' own k_proj/v_proj heads, latent as torch's SVD of its [k_proj; v_proj],
    written into transformers' model (and restored): the same perplexities as our variants."""
    import torch

    hf_model, _ = hf
    model = real_model()
    ids = model.encode(TEXTS[1])
    c = model.config
    attns = [layer.self_attn for layer in hf_model.model.layers]
    saved = [(a.k_proj.weight.detach().clone(), a.v_proj.weight.detach().clone()) for a in attns]
    try:
        with torch.no_grad():
            for a, (k, v) in zip(attns, saved, strict=True):  # [KV dh, d_model] each
                for proj, w in ((a.k_proj, k), (a.v_proj, v)):
                    mean = w.reshape(c.n_kv_heads, c.d_head, -1).double().mean(0, keepdim=True)
                    proj.weight.copy_(mean.expand(c.n_kv_heads, -1, -1).reshape(w.shape).float())
        theirs_mqa = _hf_perplexity(hf_model, ids)
        with torch.no_grad():
            for a, (k, v) in zip(attns, saved, strict=True):
                U, S, Vh = torch.linalg.svd(torch.cat([k, v]).double(), full_matrices=False)  # [2 KV dh, d_model]
                low = (U[:, :128] * S[:128]) @ Vh[:128]
                a.k_proj.weight.copy_(low[:len(k)].float())
                a.v_proj.weight.copy_(low[len(k):].float())
        theirs_latent = _hf_perplexity(hf_model, ids)
    finally:
        with torch.no_grad():
            for a, (k, v) in zip(attns, saved, strict=True):
                a.k_proj.weight.copy_(k)
                a.v_proj.weight.copy_(v)
    ours_mqa = variants.perplexity(variants.kv_variant(model, "mqa"), ids)
    ours_latent = variants.perplexity(variants.kv_variant(model, ("latent", 128)), ids)
    assert abs(ours_mqa - theirs_mqa) <= 1e-3 * theirs_mqa
    assert abs(ours_latent - theirs_latent) <= 1e-3 * theirs_latent
    ours = variants.perplexity(model, ids)
    assert abs(_hf_perplexity(hf_model, ids) - ours) <= 1e-3 * ours  # restored


# --- interventions with hooks (test_llama_interventions_real.py's subjects) -------------------------------------------


def _hooked_logits(hf_model, ids, *, zero_heads=(), resid=None, head_values=None):
    """transformers' logits with hooks: the named heads' inputs to ``o_proj`` zeroed or replaced (``[n, 64]``
    per head), or the stream entering decoder layer ``block`` at ``pos`` replaced (``resid = (block, pos, v)``)."""
    import torch

    layers = hf_model.model.layers
    dh = hf_model.config.head_dim
    handles = []
    by_layer: dict[int, list] = {}
    for layer, head in zero_heads:
        by_layer.setdefault(layer, []).append((head, None))
    for (layer, head), value in (head_values or {}).items():
        by_layer.setdefault(layer, []).append((head, torch.tensor(value)))

    def o_proj_hook(changes):
        def hook(module, args):
            z = args[0].clone()  # [1, n, n_heads * d_head]: the heads' weights @ V, head-major
            for head, value in changes:
                z[0, :, head * dh:(head + 1) * dh] = 0.0 if value is None else value
            return (z,) + args[1:]
        return hook

    for layer, changes in by_layer.items():
        handles.append(layers[layer].self_attn.o_proj.register_forward_pre_hook(o_proj_hook(changes)))
    if resid is not None:
        block, pos, vector = resid
        target = layers[block] if block < len(layers) else hf_model.model.norm

        def resid_hook(module, args, kwargs):
            if args:
                x = args[0].clone()
                x[0, pos] = torch.tensor(vector)
                return (x,) + args[1:], kwargs
            x = kwargs["hidden_states"].clone()
            x[0, pos] = torch.tensor(vector)
            return args, {**kwargs, "hidden_states": x}

        handles.append(target.register_forward_pre_hook(resid_hook, with_kwargs=True))
    try:
        with torch.no_grad():
            return hf_model(torch.tensor([list(ids)])).logits[0].numpy()
    finally:
        for handle in handles:
            handle.remove()


def test_knockout_and_patches_match_transformers_with_hooks(hf):
    hf_model, _ = hf
    model = real_model()
    clean, corrupted = model.encode(CLEAN), model.encode(CORRUPTED)
    paris, rome = model.encode(" Paris")[0], model.encode(" Rome")[0]
    clean_run = model.forward(clean, keep_activations=True)

    def close(ours, theirs):
        scale = np.abs(theirs).max(axis=-1, keepdims=True)
        assert (np.abs(ours - theirs) <= 1e-4 * scale).all(), np.abs(ours - theirs).max()

    plain = _hooked_logits(hf_model, clean)
    heads = [(18, 6), (23, 4), (0, 2)]
    knocked = _hooked_logits(hf_model, clean, zero_heads=heads)
    assert np.abs(knocked - plain).max() > 0.5  # the hooks did something
    close(model.forward(clean, ablate=heads).logits, knocked)
    # one residual patch: the clean run's stream entering block 23 at " France" copied into the corrupted run
    vector = clean_run.residuals[23, 3]
    close(model.forward(corrupted, patch={"resid": {(23, 3): vector}}).logits,
          _hooked_logits(hf_model, corrupted, resid=(23, 3, vector)))
    # one head patch: layer 23, head 4 of the clean run into the corrupted one (the lesson's flip)
    value = clean_run.head_outputs[23, 4]
    theirs = _hooked_logits(hf_model, corrupted, head_values={(23, 4): value})
    close(model.forward(corrupted, patch={"head": {(23, 4): value}}).logits, theirs)
    assert iv.logit_difference(theirs, paris, rome) > 6
