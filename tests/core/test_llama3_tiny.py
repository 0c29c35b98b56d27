"""Llama 3.x files on tiny random GGUFs: RoPE frequency scaling and the ``llama-bpe`` pre-tokenizer.

A Llama 3.1+ file carries ``rope_freqs.weight`` (``[d_head/2]``, F32): llama.cpp divides pair ``i``'s RoPE speed by its
factor (``ggml_rope_ext``'s ``freq_factors``), what transformers computes from ``rope_scaling`` ``"llama3"``
(``_compute_llama3_parameters``). The fixture file is written as llama.cpp's converter writes one
(``llama_support.llama3_rope_factors``, Llama 3.2's scaling: factor 32, low 1, high 4, original context 8192, base
500,000; d_head 16: pairs 0-3 keep their speed, pair 4 turns 3.3 times and pairs 5-7 32 times more slowly).

transformers' GGUF loader (5.23) reads neither the ``rope_freqs`` tensor (it drops it without a word) nor a llama file's
``rope.scaling.*`` keys: its reference here is the file's weights with the scaling set explicitly in its config
(``llama_support.hf_reference(path, rope_parameters)``); loaded from the file alone it runs unscaled RoPE, and differs.

Tests that need transformers are marked ``slow`` and ``torch`` (one load of about 1 s after its import), as
``test_qwen_tiny.py``'s; the rest run in the fast tier.
"""

from __future__ import annotations

import dataclasses
import json

import gguf
import numpy as np
import pytest

from attention import llama
from attention.llama import LlamaModel, variants
from attention.llama.blocks import rope_angles, rope_frequencies
from attention.llama.config import check_rope_scaling
from tests.core.llama_support import (
    HARD_TEXTS,
    LLAMA3_WHOLE,
    LLAMA32_ROPE_SCALING,
    TINY,
    TINY_LLAMA3,
    TINY_QWEN2,
    assert_forward_matches,
    assert_greedy_generation_matches,
    assert_intervention_identities,
    assert_token_ids_match,
    hf_forward,
    hf_reference,
    llama3_rope_factors,
    llama3_vocabulary,
    load_tiny,
    qwen_vocabulary,
    rewrite_gguf,
    tiny_vocabulary,
    write_tiny_gguf,
)

PROMPT = "The cat sat on the mat. The cat sat on the mat, 12345 cats. The cat"
LLAMA3_ROPE = (("rope_type", "llama3"), ("rope_theta", TINY_LLAMA3["rope_theta"]), *LLAMA32_ROPE_SCALING.items())
"""transformers' ``rope_parameters`` for the fixture: Llama 3.2's ``config.json`` values."""


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> LlamaModel:
    return load_tiny(tmp_path_factory, "llama", TINY_LLAMA3, llama3_vocabulary())


@pytest.fixture(scope="module")
def reference(ours):
    """``(hf_model, hf_tokenizer, loading_info)``: transformers on the same file, with Llama 3.2's rope scaling."""
    return hf_reference(ours.path, LLAMA3_ROPE)


@pytest.fixture(scope="module")
def plain(ours, tmp_path_factory) -> LlamaModel:
    """The same file without its ``rope_freqs`` tensor: the same weights with plain RoPE."""
    out = rewrite_gguf(ours.path, tmp_path_factory.mktemp("plain") / "tiny-plain.gguf", drop=("rope_freqs.weight",))
    return llama.load(out, expected_sha256=None)


# --- the factors: read, checked, applied everywhere --------------------------------------------------------------


def test_the_config_records_the_files_factors(ours):
    c = ours.config
    factors = np.array(c.rope_freq_factors)
    np.testing.assert_array_equal(factors, llama3_rope_factors(16, 500000.0, LLAMA32_ROPE_SCALING))
    assert c.rope_scaling == "llama3" and c.rope_scaling_factor == 1.0 and c.rope_theta == 500000.0
    assert (factors[:4] == 1).all() and (factors[5:] == 32).all() and 3 < factors[4] < 4  # some pairs scaled, some not
    np.testing.assert_array_equal(c.rope_divisors, factors)
    assert (c.d_head, c.context_length, c.max_tokens) == (16, 131072, 256)


def test_every_rope_angle_is_divided_by_its_pairs_factor(ours):
    """The head steps' angles are ``p * theta_i / factor_i`` (llama.cpp's ``theta / ff``), and plain RoPE's differ."""
    ids = ours.encode(PROMPT)
    s = ours.head_steps(ids, 1, 2)
    c = ours.config
    theta = c.rope_theta ** (-np.arange(0, 16, 2) / 16)
    np.testing.assert_allclose(s.angles, np.arange(len(ids))[:, None] * theta / np.array(c.rope_freq_factors),
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(s.angles, rope_angles(np.arange(len(ids)), 16, c.rope_theta, c.rope_divisors))
    assert np.abs(s.angles - rope_angles(np.arange(len(ids)), 16, c.rope_theta)).max() > 0.03  # pair 4
    np.testing.assert_allclose(s.weights, ours.forward(ids).attentions[1, 2], rtol=0, atol=1e-6)


def test_scaled_rope_changes_the_model(ours, plain):
    """Dropping the factors changes the logits by far more than the 1e-4 the parity tests allow."""
    assert plain.config.rope_scaling is None and plain.config.rope_divisors is None
    ids = ours.encode(PROMPT)
    assert np.abs(ours.forward(ids).logits - plain.forward(ids).logits).max() > 1e-2


def test_the_cache_continues_the_scaled_forward_pass(ours):
    """Token by token with the KV cache (the decode path's own angles) gives the full pass's logits."""
    ids = ours.encode(PROMPT)
    full = ours.forward(ids)
    out = ours.forward(ids[:5])
    for p in range(5, len(ids)):
        out = ours.forward([ids[p]], cache=out.cache)
        np.testing.assert_allclose(out.logits[0], full.logits[p], rtol=0, atol=1e-5)


def test_the_interventions_identities(ours):
    assert_intervention_identities(ours, ours.encode(PROMPT), ours.encode(PROMPT.replace("mat", "hat")))


def test_streaming_renumbering_uses_the_scaled_speeds(ours):
    """StreamingLLM's pass without sinks renumbers nothing: it is the windowed forward pass (its angles come from the
    same place as the forward pass's); with sinks it differs."""
    ids = ours.encode(PROMPT)[:24]
    usual = ours.forward(ids, window=5, sinks=0).logits
    np.testing.assert_allclose(variants.renumbered_logits(ours, ids, window=5, sinks=0), usual, rtol=1e-5, atol=1e-5)
    sinks = variants.renumbered_logits(ours, ids, window=4, sinks=2)
    assert np.abs(sinks - ours.forward(ids, window=4, sinks=2).logits).max() > 1e-4


def test_rope_frequencies_checks_its_divisors():
    np.testing.assert_allclose(rope_frequencies(8, 1e4, [1, 2, 4, 8]), 1e4 ** (-np.arange(0, 8, 2) / 8) / [1, 2, 4, 8])
    for bad in ([1, 2, 3], [1, 2, 0, 4], [1, np.nan, 1, 1], [[1, 1, 1, 1]]):
        with pytest.raises(ValueError, match=r"divisors must be \[d_head/2\] = \[4\] finite numbers > 0"):
            rope_frequencies(8, 1e4, bad)


@pytest.mark.parametrize(("value", "message"), [
    (np.ones(7, np.float32), r"tensor 'rope_freqs.weight' has shape \[7\], expected \[d_head/2\] = \[8\]"),
    (np.ones(16, np.float32), r"tensor 'rope_freqs.weight' has shape \[16\], expected \[d_head/2\] = \[8\]"),
    (np.array([1, 1, 1, np.inf, 1, 1, 1, 1], np.float32), r"'rope_freqs.weight' holds NaN or infinite values"),
    (np.array([1, 1, 1, 0, 1, 1, 1, 1], np.float32), r"tensor 'rope_freqs.weight' holds a factor <= 0"),
])
def test_a_bad_rope_freqs_tensor_is_refused_by_name(ours, tmp_path, value, message):
    out = rewrite_gguf(ours.path, tmp_path / "bad.gguf", tensors={"rope_freqs.weight": value})
    with pytest.raises(ValueError, match=message):
        llama.load(out, expected_sha256=None)


def test_qwen2_files_take_no_rope_freqs(tmp_path):
    """llama.cpp's qwen2 graph passes no frequency factors to its RoPE: a qwen2 file with the tensor is refused."""
    path = tmp_path / "qwen2.gguf"
    write_tiny_gguf(path, config=TINY_QWEN2, vocabulary=qwen_vocabulary())
    out = rewrite_gguf(path, tmp_path / "qwen2-freqs.gguf", tensors={"rope_freqs.weight": np.ones(8, np.float32)})
    with pytest.raises(ValueError, match=r"tensor 'rope_freqs.weight' is not part of the qwen2 architecture"):
        llama.load(out, expected_sha256=None)


@pytest.fixture(scope="module")
def linear(tmp_path_factory) -> LlamaModel:
    """:data:`TINY` (base 10,000, d_head 16) with ``rope.scaling.type = "linear"``, factor 4 (context 256: the hard
    texts fit)."""
    path = tmp_path_factory.mktemp("linear") / "tiny-linear.gguf"
    write_tiny_gguf(path, config={**TINY, "rope_linear": 4.0, "context_length": 256}, seed=4, name="tiny-linear")
    return llama.load(path, expected_sha256=None)


def test_linear_scaling_divides_every_speed(linear):
    c = linear.config
    assert (c.rope_scaling, c.rope_scaling_factor, c.rope_freq_factors) == ("linear", 4.0, None)
    ids = linear.encode("The cat sat on the mat")
    s = linear.head_steps(ids, 0, 0)
    np.testing.assert_allclose(s.angles, rope_angles(np.arange(len(ids)), 16, 10000.0) / 4, rtol=1e-15, atol=0)


@pytest.mark.parametrize(("keys", "message"), [
    ({"llama.rope.scaling.type": ("yarn", gguf.GGUFValueType.STRING)},
     r"llama.rope.scaling.type is 'yarn'; supported: 'none', 'linear' \(and Llama 3's per-pair factors"),
    ({"llama.rope.scaling.type": ("longrope", gguf.GGUFValueType.STRING)}, r"is 'longrope'; supported: 'none'"),
    ({"llama.rope.scaling.type": ("linear", gguf.GGUFValueType.STRING)},
     r"llama.rope.scaling.factor must be a finite number > 0 with linear scaling, got None"),
    ({"llama.rope.scaling.type": ("linear", gguf.GGUFValueType.STRING),
      "llama.rope.scaling.factor": (0.0, gguf.GGUFValueType.FLOAT32)}, r"got 0.0"),
])
def test_other_scalings_are_refused_by_name(tiny_file, tmp_path, keys, message):
    out = rewrite_gguf(tiny_file.path, tmp_path / "scaled.gguf", keys=keys)
    with pytest.raises(ValueError, match=message):
        llama.load(out, expected_sha256=None)


def test_linear_scaling_is_read_on_the_families_that_rotate_alike():
    """Linear scaling on llama, qwen2, qwen3; refused on gemma3 (not implemented: its local and global layers turn by
    their own bases) and gpt2 (no RoPE)."""
    for arch in ("llama", "qwen2", "qwen3"):
        assert check_rope_scaling({"general.architecture": arch, f"{arch}.rope.scaling.type": "linear",
                                   f"{arch}.rope.scaling.factor": 8.0}) == 8.0
        assert check_rope_scaling({"general.architecture": arch}) == 1.0
    for arch in ("gemma3", "gpt2"):
        with pytest.raises(ValueError, match=rf"{arch}.rope.scaling.type is 'linear'; linear RoPE scaling is supported "
                                             r"on 'llama', 'qwen2', 'qwen3' files"):
            check_rope_scaling({"general.architecture": arch, f"{arch}.rope.scaling.type": "linear",
                                f"{arch}.rope.scaling.factor": 8.0})


# --- against transformers ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.torch
def test_logits_and_every_attention_map_match_transformers(ours, reference):
    hf, _, info = reference
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert hf.config.rope_parameters["rope_type"] == "llama3"
    assert_forward_matches(ours, hf, [PROMPT, HARD_TEXTS[4]])


@pytest.mark.slow
@pytest.mark.torch
def test_transformers_gguf_loader_alone_runs_unscaled_rope(ours, plain):
    """Why the reference sets the scaling: from the file alone transformers' config is plain RoPE, and its logits are
    those of our model without the factors, not ours."""
    hf, _, _ = hf_reference(ours.path)
    assert hf.config.rope_parameters["rope_type"] == "default"
    ids = ours.encode(PROMPT)
    logits, _ = hf_forward(hf, ids)
    np.testing.assert_allclose(plain.forward(ids).logits, logits, rtol=0, atol=1e-4)
    assert np.abs(ours.forward(ids).logits - logits).max() > 1e-2


@pytest.mark.slow
@pytest.mark.torch
def test_greedy_generation_with_the_cache_matches_transformers(ours, reference):
    hf, _, _ = reference
    assert_greedy_generation_matches(ours, hf, ours.encode(PROMPT))


@pytest.mark.slow
@pytest.mark.torch
def test_linear_scaling_matches_transformers(linear):
    hf, _, _ = hf_reference(linear.path, (("rope_type", "linear"), ("rope_theta", 10000.0), ("factor", 4.0)))
    assert_forward_matches(linear, hf, ["The cat sat on the mat. The cat sat on the mat. The cat", HARD_TEXTS[4]])


# --- the tokenizer: Llama 3's pre-tokenizer ------------------------------------------------------------------------


def test_the_pre_tokenizer_is_llama3s(ours):
    """Digits in runs of up to three ("12345" is "123" then "45", never " 1"), Qwen2's other rules (contractions in
    any case, "_x", ":\n" whole), a BOS first, and a piece that is a token taken whole although no merge makes it."""
    vocab = llama3_vocabulary()
    index = {t: i for i, t in enumerate(vocab.tokens)}
    bos = vocab.bos_id
    assert ours.encode("12345") == [bos, index["123"], index["45"]]
    assert ours.encode(" 12") == [bos, index["Ġ"], index["12"]] and index["Ġ1"] not in ours.encode(" 1 12")
    assert index["'S"] in ours.encode("I'S") and index["_x"] in ours.encode("_x = 1")
    assert index[":Ċ"] in ours.encode("x:\ny")
    assert ours.encode(" cats") == [bos, index[LLAMA3_WHOLE]]  # llama.cpp's ignore_merges; merges give " cat" + "s"
    assert ours.decode(ours.encode(" cats 12345")[1:]) == " cats 12345"


@pytest.mark.parametrize(("pre", "add_bos"), [("llama3", True), ("llama-v3", True), ("llama-bpe", None),
                                             ("llama-bpe", False)])
def test_llama_cpps_other_names_and_its_bos(tmp_path, pre, add_bos):
    """``llama3`` and ``llama-v3`` are the same pre-tokenizer; without ``add_bos_token`` a BOS is added, as llama.cpp
    does for them (transformers' GGUF loader adds none: this follows llama.cpp and Meta's tokenizer.json); a file
    saying false gets none."""
    vocabulary = dataclasses.replace(llama3_vocabulary(), pre=pre, add_bos=add_bos)
    path = tmp_path / f"{pre}.gguf"
    write_tiny_gguf(path, config=TINY, vocabulary=vocabulary)
    model = llama.load(path, expected_sha256=None)
    index = {t: i for i, t in enumerate(vocabulary.tokens)}
    assert model.encode("12345") == [vocabulary.bos_id] * (add_bos is not False) + [index["123"], index["45"]]


@pytest.mark.slow
@pytest.mark.torch
def test_token_ids_match_transformers_on_hard_texts(ours, reference):
    _, tokenizer, _ = reference
    assert_token_ids_match(ours, tokenizer, [*HARD_TEXTS, "12345 1234567 ١٢٣٤"])


def meta_tokenizer_json(vocabulary) -> str:
    """A ``tokenizer.json`` laid out as Meta's for Llama 3.2 (meta-llama/Llama-3.2-1B): BPE with ``ignore_merges``,
    its ``Split`` regex (copied from that file, not from the code under test) then ``ByteLevel`` without a regex, BOS
    added by a ``TemplateProcessing``, the control tokens as special added tokens."""
    split = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    normal = {t: i for i, (t, kind) in enumerate(zip(vocabulary.tokens, vocabulary.types, strict=True)) if kind == 1}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": kind == 3} for i, (t, kind) in enumerate(zip(vocabulary.tokens, vocabulary.types, strict=True))
             if kind in (3, 4)]
    bos = vocabulary.tokens[vocabulary.bos_id]

    def first(type_id):
        return {"SpecialToken": {"id": bos, "type_id": type_id}}

    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing", "single": [first(0), {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [first(0), {"Sequence": {"id": "A", "type_id": 0}}, first(1),
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {bos: {"id": bos, "ids": [vocabulary.bos_id], "tokens": [bos]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": normal, "merges": [m.split(" ") for m in vocabulary.merges]},
    })


@pytest.mark.slow
@pytest.mark.torch
def test_token_ids_match_metas_tokenizer_json(ours):
    """Against transformers' tokenizer built from a ``tokenizer.json`` laid out as Meta's (``ignore_merges`` on, as
    llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_LLAMA3``): the hard texts and the whole-token piece, which transformers' GGUF
    loader (no ``ignore_merges``) cuts as the merges do."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    meta = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(meta_tokenizer_json(llama3_vocabulary())))
    texts = [*HARD_TEXTS, " cats", "cats cats, 12345"]
    assert_token_ids_match(ours, meta, texts)
    _, gguf_tokenizer, _ = hf_reference(ours.path, LLAMA3_ROPE)
    assert gguf_tokenizer(" cats")["input_ids"] != ours.encode(" cats")


def test_an_unknown_pre_tokenizer_lists_llama3s(tmp_path):
    weird = dataclasses.replace(tiny_vocabulary(), pre="no-such-pre")
    path = tmp_path / "pre.gguf"
    write_tiny_gguf(path, vocabulary=weird)
    with pytest.raises(ValueError, match=r"known: 'smollm', 'gpt2', 'gpt-2', 'default', 'qwen2', 'llama-bpe', "
                                         r"'llama3', 'llama-v3'"):
        llama.load(path, expected_sha256=None)
