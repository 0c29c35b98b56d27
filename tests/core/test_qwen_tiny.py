"""The qwen2 (Qwen2.5) and qwen3 (Qwen3) architectures on tiny random GGUF files, against live ``transformers``
loading the same file (a test reference: it fails, never skips, when missing): logits and every attention map,
token ids on hard texts, greedy generation with the KV cache, the interventions' identities; and the loader's
order of checks (architecture first, then the pre-tokenizer).

One transformers load per architecture per process (a module fixture; about 1 s each after its import); the
tests that need it are marked ``slow`` and ``torch`` as ``test_llama_live.py``'s, the rest are in the fast tier.
qwen3's fixture has d_head 128: transformers' GGUF loader reads Qwen3's head width as its config default 128
whatever ``attention.key_length`` says (``llama_support.TINY_QWEN3``).
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import llama
from attention.llama.blocks import rms_norm
from tests.core.llama_support import (
    HARD_TEXTS,
    TINY,
    TINY_QWEN2,
    TINY_QWEN3,
    assert_forward_matches,
    assert_greedy_generation_matches,
    assert_intervention_identities,
    assert_token_ids_match,
    hf_reference,
    load_tiny,
    qwen_vocabulary,
    tiny_vocabulary,
    write_tiny_gguf,
)

CONFIGS = {"qwen2": TINY_QWEN2, "qwen3": TINY_QWEN3}
PROMPT = "The cat sat on the mat. The cat"


@pytest.fixture(scope="module", params=list(CONFIGS))
def qwen(request, tmp_path_factory) -> tuple[str, llama.LlamaModel]:
    """``(arch, ours)`` for one tiny random file of ``arch`` (ours.path is the file)."""
    arch = request.param
    return arch, load_tiny(tmp_path_factory, arch, CONFIGS[arch], qwen_vocabulary())


@pytest.fixture(scope="module")
def family(qwen):
    """``(arch, ours, hf_model, hf_tokenizer, loading_info)``: transformers on the same file (loaded once)."""
    arch, ours = qwen
    return (arch, ours, *hf_reference(ours.path))


def test_config_is_read_from_the_file(qwen):
    arch, ours = qwen
    c, spec = ours.config, CONFIGS[arch]
    assert c.architecture == arch and c.rope_layout == "halves" and c.rope_theta == 1e6
    assert (c.qkv_bias, c.qk_norm) == ((True, False) if arch == "qwen2" else (False, True))
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_ff) == (2, 4, 2, 64, 96)
    assert c.d_head == spec.get("d_head", 16)  # qwen3: key_length (n_heads d_head = 512, d_model 64)
    assert (c.bos_id, c.eos_id, c.vocab_size) == (0, 2, len(qwen_vocabulary().tokens))
    assert c.kv_bytes_per_token == 2 * 2 * 2 * c.d_head * 4


@pytest.mark.slow
@pytest.mark.torch
def test_the_reference_loads_every_weight(family):
    """transformers' GGUF loader skips tensors it cannot map without a word: the reference must have them all."""
    _, ours, hf, _, info = family
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert getattr(hf.config, "head_dim", None) in (None, ours.config.d_head)  # qwen3: 128, the fixture's
    params = dict(hf.named_parameters())
    layer = ours._layers[1]
    if ours.config.qkv_bias:
        b = np.concatenate([params[f"model.layers.1.self_attn.{x}_proj.bias"].detach().numpy() for x in "qkv"])
        np.testing.assert_array_equal(layer.qkv_bias, b)
    else:
        assert layer.qkv_bias is None and not any(name.endswith("_proj.bias") for name in params)
    if ours.config.qk_norm:
        np.testing.assert_array_equal(layer.q_norm, params["model.layers.1.self_attn.q_norm.weight"].detach().numpy())
        np.testing.assert_array_equal(layer.k_norm, params["model.layers.1.self_attn.k_norm.weight"].detach().numpy())
    W = np.concatenate([params[f"model.layers.1.self_attn.{x}_proj.weight"].detach().numpy() for x in "qkv"]).T
    np.testing.assert_array_equal(layer.qkv.widen(), W)  # no RoPE permutation for qwen (NEOX layout)


@pytest.mark.slow
@pytest.mark.torch
def test_logits_and_every_attention_map_match_transformers(family):
    _, ours, hf, _, _ = family
    assert_forward_matches(ours, hf, [PROMPT, HARD_TEXTS[4]])


@pytest.mark.slow
@pytest.mark.torch
def test_token_ids_match_transformers_on_hard_texts(family):
    _, ours, _, tokenizer, _ = family
    assert_token_ids_match(ours, tokenizer, HARD_TEXTS)


def test_the_pre_tokenizer_is_qwen2s(qwen):
    """Digits never merge, "'S" and "_x" are pieces, ":\n" keeps its newline (GPT-2's regex does none of these)."""
    _, ours = qwen
    merged = {t: i for i, t in enumerate(qwen_vocabulary().tokens) if i >= 259}
    assert merged["12"] not in ours.encode("x 12345") and merged["'S"] in ours.encode("I'S")
    assert merged["_x"] in ours.encode("_x = 1") and merged[":Ċ"] in ours.encode("x:\ny")
    assert ours.encode("İı")[:2] == [merged["Ä°"], merged["Ä±"]]


@pytest.mark.slow
@pytest.mark.torch
def test_greedy_generation_with_the_cache_matches_transformers(family):
    _, ours, hf, _, _ = family
    assert_greedy_generation_matches(ours, hf, ours.encode(PROMPT))


def test_head_steps_show_this_architectures_steps(qwen):
    arch, ours = qwen
    ids = ours.encode(PROMPT)
    out = ours.forward(ids)
    c = ours.config
    for layer, head in ((0, 1), (1, 3)):
        s = ours.head_steps(ids, layer, head)
        np.testing.assert_allclose(s.weights, out.attentions[layer, head], rtol=0, atol=1e-6)
        q = s.x_normed @ s.W_q
        if arch == "qwen2":
            q = q + s.b_q
            assert s.q_norm is None
        else:
            assert s.b_q is None and s.b_k is None and s.b_v is None
            q = rms_norm(q, s.q_norm, c.rms_eps)
        np.testing.assert_allclose(s.q_before_rope, q, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(s.hf_order, np.arange(c.d_head))
        np.testing.assert_allclose(s.k, out.cache.keys[layer, s.kv_head], rtol=0, atol=1e-5)
        np.testing.assert_allclose(s.v, out.cache.values[layer, s.kv_head], rtol=0, atol=1e-5)


def test_the_interventions_identities(qwen):
    _, ours = qwen
    assert_intervention_identities(ours, ours.encode(PROMPT), ours.encode("The cat sat on the rat. The cat"))


def test_the_architecture_is_checked_before_the_tokenizer(tmp_path):
    """An unsupported architecture names itself and the supported ones, even with a pre-tokenizer nobody knows;
    an unknown pre-tokenizer on a supported architecture names itself and the known ones."""
    weird = tiny_vocabulary()
    weird = type(weird)(**{**weird.__dict__, "pre": "no-such-pre"})
    path = tmp_path / "phi3.gguf"
    write_tiny_gguf(path, config={**TINY, "arch": "phi3"}, vocabulary=weird)
    with pytest.raises(ValueError, match=r"unsupported model architecture: general.architecture is 'phi3'; "
                                         r"supported: 'llama', 'qwen2', 'qwen3', 'gpt2', 'gemma3'"):
        llama.load(path, expected_sha256=None)
    path = tmp_path / "pre.gguf"
    write_tiny_gguf(path, vocabulary=weird)
    with pytest.raises(ValueError, match=r"unknown pre-tokenizer: tokenizer.ggml.pre is 'no-such-pre'; "
                                         r"known: 'smollm', 'gpt2', 'gpt-2', 'default', 'qwen2'"):
        llama.load(path, expected_sha256=None)


def test_a_tensor_the_architecture_does_not_use_is_refused(tmp_path):
    """A llama file carrying qwen2's biases would run without them: refused, naming the tensor."""
    path = tmp_path / "llama-with-bias.gguf"
    write_tiny_gguf(path, config={**TINY_QWEN2, "arch": "qwen2"}, vocabulary=qwen_vocabulary())
    import gguf

    reader = gguf.GGUFReader(str(path))
    assert any(t.name == "blk.0.attn_q.bias" for t in reader.tensors)
    out = tmp_path / "relabelled.gguf"
    writer = gguf.GGUFWriter(str(out), "llama")
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        key = key.replace("qwen2.", "llama.", 1)
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, field.contents(), field.types[0], sub_type=field.types[-1])
        else:
            writer.add_key_value(key, field.contents(), field.types[0])
    for t in reader.tensors:
        writer.add_tensor(t.name, np.array(t.data).reshape(tuple(int(s) for s in reversed(t.shape))))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match=r"tensor 'blk.0.attn_k.bias' is not part of the llama architecture \(6 "):
        llama.load(out, expected_sha256=None)


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_quantized_files_in_both_weight_modes(arch, tmp_path):
    """Q4_1 matrices and a Q8_0 embedding (as the SmolLM2 file): compact mode computes float32 mode's numbers, and
    the biases and q/k norms (float32 vectors) are read either way."""
    path = tmp_path / f"{arch}-q.gguf"
    write_tiny_gguf(path, config=CONFIGS[arch], vocabulary=qwen_vocabulary(), quantized=True, seed=5)
    dense, compact = (llama.load(path, weights=mode, expected_sha256=None) for mode in ("float32", "compact"))
    ids = dense.encode(PROMPT)
    a, b = dense.forward(ids), compact.forward(ids)
    np.testing.assert_allclose(b.attentions, a.attentions, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.logits, a.logits, rtol=0, atol=1e-5)
    assert compact.nbytes < dense.nbytes / 2.5
    layer = compact._layers[0]
    assert (layer.qkv_bias is not None) == (arch == "qwen2") and (layer.q_norm is not None) == (arch == "qwen3")
