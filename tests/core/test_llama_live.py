"""``attention.llama`` against live Hugging Face ``transformers`` (a test dependency; PyTorch CPU) on the
same GGUF file: token ids, attention weights of every layer and head, logits, greedy continuations and
the de-quantized weights themselves. Also checks that transformers still produces the recorded
reference (``tests/data/llama_reference.npz``).

transformers takes about 20 s to load the file, so the model is loaded once per process.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import pytest

from attention import llama
from attention.llama.blocks import rope_gguf_to_hf
from tests.conftest import require
from tests.core.llama_support import REPO, TINY, real_model, real_model_path

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
    torch.set_num_threads(min(2, os.cpu_count() or 1))
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
