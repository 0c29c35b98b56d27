"""``attention.llama`` on tiny random Llama GGUF files (no 98 MB file, no network): numbers against an
independent float64 reference, the KV cache, head steps, generation, tokenizer and input errors."""

from __future__ import annotations

import threading

import gguf
import numpy as np
import pytest

from attention import llama
from attention.llama import gguf_file
from attention.llama.blocks import apply_rope, swiglu
from tests.core.llama_support import TINY, file_weights, gguf_shapes, gguf_writer, reference_forward, tiny_vocabulary

TEXT = "the cat sat on the mat, 12 cats sat"


@pytest.fixture(params=["tiny", "tiny_q", "tiny_q_compact"])
def model(request) -> llama.LlamaModel:
    return request.getfixturevalue(request.param)


def test_config_is_read_from_the_file(tiny):
    c = tiny.config
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_head, c.d_ff) == (2, 6, 2, 96, 16, 128)
    assert c.group_size == 3 and c.vocab_size == 268 and c.rope_theta == 10000.0
    assert c.context_length == 48 and c.max_tokens == 48 and c.eos_id == 2 and c.bos_id == 1
    np.testing.assert_allclose(c.rms_eps, 1e-5, rtol=1e-6)
    assert c.kv_bytes_per_token == 2 * 2 * 2 * 16 * 4


def test_forward_matches_an_independent_reference(model):
    ids = model.encode(TEXT)
    out = model.forward(ids)
    logits, attentions = reference_forward(file_weights(model.path), ids, TINY)
    assert out.logits.dtype == np.float32 and out.logits.shape == (len(ids), model.config.vocab_size)
    assert out.attentions.dtype == np.float32 and out.attentions.shape == (2, 6, len(ids), len(ids))
    np.testing.assert_allclose(out.attentions, attentions, rtol=0, atol=2e-5)
    np.testing.assert_allclose(out.logits, logits, rtol=1e-4, atol=1e-4 * np.abs(logits).max())


def test_attention_rows_sum_to_one_and_nothing_above_the_diagonal(tiny):
    w = tiny.forward(tiny.encode(TEXT)).attentions
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-6)
    above = np.triu(np.ones(w.shape[-2:], bool), k=1)
    assert (w[..., above] == 0).all() and (w[..., ~above] > 0).all()


def test_weights_are_ggml_exact(tiny_q, tiny_q_compact, tiny_q_file):
    """float32 mode holds gguf's de-quantized numbers bit for bit, and compact mode widens to the same bits."""
    reader = gguf.GGUFReader(str(tiny_q_file.path))
    deq = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in reader.tensors}
    layer, compact = tiny_q._layers[1], tiny_q_compact._layers[1]
    W_qkv = np.concatenate([deq[f"blk.1.attn_{x}.weight"] for x in "qkv"], axis=0).T  # [d_model, 96 + 32 + 32]
    np.testing.assert_array_equal(layer.qkv.widen(), W_qkv)
    np.testing.assert_array_equal(compact.qkv.widen(), W_qkv)
    W_gu = np.concatenate([deq["blk.1.ffn_gate.weight"], deq["blk.1.ffn_up.weight"]], axis=0).T
    np.testing.assert_array_equal(compact.gate_up.widen(), W_gu)
    np.testing.assert_array_equal(compact.down.widen(), deq["blk.1.ffn_down.weight"].T)
    np.testing.assert_array_equal(tiny_q._embedding.ET.T, deq["token_embd.weight"])
    ids = np.array([5, 0, 267, 5])
    np.testing.assert_array_equal(tiny_q_compact._embedding.lookup(ids), deq["token_embd.weight"][ids])
    assert tiny_q_compact.nbytes < tiny_q.nbytes / 2.5


@pytest.mark.parametrize("kind", ["F32", "F16"])
def test_an_embedding_of_another_type_loads_in_chunks_to_the_same_bits(tmp_path, monkeypatch, kind):
    """A token embedding that is not Q8_0 is widened :attr:`_Embedding.CHUNK` rows at a time in float32 mode (no
    full-size temporaries while loading: BENCHMARKS.md, "Models of real size"), to gguf's numbers bit for bit; a
    chunk of 7 rows leaves a short last one (268 = 38 x 7 + 2)."""
    path = tmp_path / f"tiny-{kind}.gguf"
    vocabulary = tiny_vocabulary()
    writer = gguf_writer(path, TINY, vocabulary, f"tiny-{kind}")
    rng = np.random.default_rng(5)
    for name, shape in gguf_shapes(TINY, len(vocabulary.tokens)).items():
        value = rng.standard_normal(shape).astype(np.float32)
        writer.add_tensor(name, value.astype(np.float16) if kind == "F16" and value.ndim == 2 else value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    monkeypatch.setattr(llama.weights._Embedding, "CHUNK", 7)
    model = llama.load(path, weights="float32", expected_sha256=None)
    reader = gguf.GGUFReader(str(path))
    table = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert table.tensor_type == getattr(gguf.GGMLQuantizationType, kind)
    whole = gguf.quants.dequantize(table.data, table.tensor_type)
    np.testing.assert_array_equal(model._embedding.ET.T, whole)
    file = gguf_file.read_gguf(path)
    np.testing.assert_array_equal(gguf_file.dequantize(file, "token_embd.weight", slice(260, 268)), whole[260:])


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_compact_logits_widen_the_vocabulary_in_a_reused_buffer_to_float32_modes_bits(tiny_q, tiny_q_compact,
                                                                                      monkeypatch, rows):
    """Compact mode's logits widen :attr:`_Embedding.LOGITS_ROWS` vocabulary rows at a time into one reused buffer and
    write each chunk's product in place: each chunk the bits of its rows widened afresh (32 rows a chunk leave a short
    last one, 268 = 8 x 32 + 12; a chunk read after the buffer moved on would show), all within a float32 rounding
    of float32 mode's logits (OpenBLAS's sums depend on the product's shape, so no chunking gives those bits)."""
    monkeypatch.setattr(llama.weights._Embedding, "LOGITS_ROWS", 32)
    h = np.random.default_rng(rows).standard_normal((rows, tiny_q.config.d_model)).astype(np.float32)
    E = tiny_q_compact._embedding.lookup(np.arange(268))  # [vocab, d_model], ggml's numbers (test_weights_are_...)
    got = tiny_q_compact._output.logits(h)
    assert got.shape == (rows, 268) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.concatenate([h @ E[s:s + 32].T for s in range(0, 268, 32)], axis=1))
    np.testing.assert_allclose(got, tiny_q._output.logits(h), rtol=0, atol=1e-5)


def test_the_fused_mlp_is_decoder_swiglu(tiny):
    """The model multiplies W_gate | W_up in one product; the numbers are attention.llama.blocks.swiglu's."""
    layer, d_ff = tiny._layers[0], tiny.config.d_ff
    h = np.random.default_rng(0).standard_normal((5, tiny.config.d_model)).astype(np.float32)
    W = layer.gate_up.widen()
    np.testing.assert_allclose(tiny._mlp(layer, h, {}), swiglu(h, W[:, :d_ff], W[:, d_ff:], layer.down.widen()),
                               rtol=1e-5, atol=1e-6)


def test_compact_mode_computes_the_same_numbers(tiny_q, tiny_q_compact):
    ids = tiny_q.encode(TEXT)
    a, b = tiny_q.forward(ids), tiny_q_compact.forward(ids)
    np.testing.assert_allclose(b.attentions, a.attentions, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.logits, a.logits, rtol=0, atol=1e-5)
    assert tiny_q_compact.generate(ids, 6, stop_at_eos=False) == tiny_q.generate(ids, 6, stop_at_eos=False)


def test_cache_token_by_token_equals_one_full_pass(model):
    ids = model.encode(TEXT)
    full = model.forward(ids)
    out = model.forward(ids[:1])
    for i in range(1, len(ids)):
        out = model.forward([ids[i]], cache=out.cache)
        assert out.attentions.shape == (2, 6, 1, i + 1) and out.positions.tolist() == [i]
        np.testing.assert_allclose(out.logits[0], full.logits[i], rtol=0, atol=1e-5)
        np.testing.assert_allclose(out.attentions[:, :, 0], full.attentions[:, :, i, :i + 1], rtol=0, atol=1e-5)
    np.testing.assert_allclose(out.cache.keys, full.cache.keys, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.cache.values, full.cache.values, rtol=1e-5, atol=1e-5)


def test_cache_several_new_tokens_at_once(tiny):
    """Several new queries against a cache: the causal mask is aligned bottom-right."""
    ids = tiny.encode(TEXT)
    full = tiny.forward(ids)
    first = tiny.forward(ids[:4])
    rest = tiny.forward(ids[4:11], cache=first.cache)
    np.testing.assert_allclose(rest.logits, full.logits[4:11], rtol=0, atol=1e-5)
    np.testing.assert_allclose(rest.attentions, full.attentions[:, :, 4:11, :11], rtol=0, atol=1e-5)
    assert (rest.attentions[:, :, 0, 5:] == 0).all() and (rest.attentions[:, :, 0, :5] > 0).all()


def test_cache_is_never_changed_by_a_later_call(tiny):
    ids = tiny.encode(TEXT)
    base = tiny.forward(ids[:5])
    keys_before = base.cache.keys.copy()
    a = tiny.forward([ids[5]], cache=base.cache)
    b = tiny.forward([7], cache=base.cache)  # a branch from the same cache
    c = tiny.forward([ids[6]], cache=a.cache)
    np.testing.assert_array_equal(base.cache.keys, keys_before)
    np.testing.assert_allclose(b.logits[0], tiny.forward(ids[:5] + [7]).logits[-1], rtol=0, atol=1e-5)
    np.testing.assert_allclose(c.logits[0], tiny.forward(ids[:7]).logits[-1], rtol=0, atol=1e-5)
    assert len(base.cache) == 5 and len(c.cache) == 7
    assert base.cache.nbytes == 5 * tiny.config.kv_bytes_per_token
    assert base.cache.keys.shape == (2, 2, 5, 16) and not base.cache.keys.flags.writeable


def test_one_model_serves_threads(tiny):
    ids = tiny.encode(TEXT)
    base = tiny.forward(ids[:6])
    expected = {t: tiny.forward(ids[:6] + [t]).logits[-1] for t in (3, 4, 5, 6)}
    results = {}

    def work(t):
        results[t] = tiny.forward([t], cache=base.cache).logits[0]

    threads = [threading.Thread(target=work, args=(t,)) for t in expected]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for t, logits in expected.items():
        np.testing.assert_allclose(results[t], logits, rtol=0, atol=1e-5)


def test_head_steps_are_the_forward_pass_step_by_step(model):
    ids = model.encode(TEXT)
    out = model.forward(ids)
    for layer, head in [(0, 0), (1, 4), (1, 5)]:
        s = model.head_steps(ids, layer, head)
        n = len(ids)
        assert s.kv_head == head // 3 and s.tokens == tuple(ids) and s.q.shape == (n, 16)
        np.testing.assert_allclose(s.weights, out.attentions[layer, head], rtol=0, atol=1e-6)
        np.testing.assert_allclose(s.q_before_rope, s.x_normed @ s.W_q, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s.k_before_rope, s.x_normed @ s.W_k, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(s.q, apply_rope(s.q_before_rope, s.angles))
        np.testing.assert_allclose(s.scores, s.q @ s.k.T, rtol=1e-6)
        np.testing.assert_allclose(s.scaled_scores, s.scores * 0.25, rtol=1e-6)
        assert s.scale == 0.25 and (s.mask == np.tri(n, dtype=bool)).all()
        assert (s.weights[~s.mask] == 0).all()
        np.testing.assert_allclose(s.output, s.weights @ s.v, rtol=1e-5, atol=1e-6)
        # the key/value cache of the forward pass holds this head's k (after RoPE) and v
        np.testing.assert_allclose(s.k, out.cache.keys[layer, s.kv_head], rtol=0, atol=1e-6)
        np.testing.assert_allclose(s.v, out.cache.values[layer, s.kv_head], rtol=0, atol=1e-6)
    a, b = model.head_steps(ids, 1, 3), model.head_steps(ids, 1, 5)  # heads 3..5 share kv head 1
    np.testing.assert_array_equal(a.k, b.k)
    assert not np.array_equal(a.q, b.q)


def test_generate(tiny):
    ids = tiny.encode(TEXT)
    greedy = tiny.generate(ids, 5, stop_at_eos=False)
    manual = list(ids)
    for _ in range(5):
        manual.append(int(tiny.forward(manual).logits[-1].argmax()))
    assert greedy == manual[len(ids):]
    assert tiny.generate(ids, 5, temperature=0.8, top_k=1, seed=3, stop_at_eos=False) == greedy
    one = tiny.generate(ids, 8, temperature=1.5, seed=7, stop_at_eos=False)
    assert one == tiny.generate(ids, 8, temperature=1.5, seed=7, stop_at_eos=False)
    assert len(one) == 8 and all(0 <= t < tiny.config.vocab_size for t in one)
    rng = np.random.default_rng(0)
    assert {llama.sample_next(np.array([0.0, 5.0, 5.0, -1.0]), temperature=1.0, top_k=2, rng=rng)
            for _ in range(50)} == {1, 2}  # ties at the k-th value are kept, the rest never drawn
    assert llama.sample_next(np.array([1.0, 3.0, 3.0])) == 1  # greedy: the lowest id wins a tie


def test_a_tiny_temperature_is_the_greedy_limit(tiny):
    """``temperature=1e-310`` used to crash with NumPy's "Probabilities contain NaN" (inf - inf)."""
    logits = np.array([1.0, 3.0, 2.0, 3.0 - 1e-9])
    rng = np.random.default_rng(0)
    assert {llama.sample_next(logits, temperature=1e-310, rng=rng) for _ in range(20)} == {1}
    np.testing.assert_array_equal(llama.sampling_distribution(logits, temperature=1e-310), [0, 1, 0, 0])
    tie = np.array([3.0, 3.0, -1.0])  # the T -> 0 limit shares the top logit equally
    np.testing.assert_array_equal(llama.sampling_distribution(tie, temperature=1e-310), [0.5, 0.5, 0])
    ids = tiny.encode(TEXT)
    assert tiny.generate(ids, 4, temperature=1e-310, seed=1, stop_at_eos=False) == tiny.generate(
        ids, 4, stop_at_eos=False)
    p = llama.sampling_distribution(np.array([0.0, 5.0, 5.0, -1.0]), temperature=2.0, top_k=2)
    np.testing.assert_allclose(p, [0, 0.5, 0.5, 0]) and np.testing.assert_allclose(p.sum(), 1)
    for bad in (-1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
            llama.sampling_distribution(logits, temperature=bad)
    with pytest.raises(ValueError, match="logits must be one finite row"):
        llama.sampling_distribution(np.array([1.0, np.inf]), temperature=1.0)


def test_text_with_a_character_split_over_tokens_keeps_its_bytes_pending(tiny):
    ids = tiny.encode("ok 🍕")  # the tiny vocabulary has no merge for it: one token per byte
    assert len(ids) == 7
    assert tiny.decode(ids[:5]) == "ok \ufffd"  # what transformers' decoding shows half-way
    part = tiny.decode_partial(ids[:5])
    assert part == llama.PartialText("ok ", b"\xf0\x9f") and part.pending_escaped == "\\xf0\\x9f"
    assert tiny.decode_partial(ids) == llama.PartialText("ok 🍕", b"")
    assert tiny.decode_partial(ids[:3]) == llama.PartialText("ok ", b"")
    stray = tiny.decode_partial(tiny.encode("é")[1:])  # a continuation byte alone can begin no character
    assert stray == llama.PartialText("\\xa9", b"") and "\ufffd" not in stray.text
    assert tiny.decode_partial([]) == llama.PartialText("", b"")


def test_generate_stops_at_eos(tiny, monkeypatch):
    eos, vocab = tiny.config.eos_id, tiny.config.vocab_size

    class EndsEverything:  # an output layer whose every next token is <|im_end|>
        def logits(self, h):
            out = np.zeros((len(h), vocab), np.float32)
            out[:, eos] = 1
            return out

    monkeypatch.setattr(tiny, "_output", EndsEverything())
    assert tiny.generate([5, 6], 4) == [eos]
    assert tiny.generate([5, 6], 3, stop_at_eos=False) == [eos] * 3


def test_tokenizer(tiny):
    ids = tiny.encode(" the cat<|im_start|>user<think>é 12")
    assert ids[:2] == [261, 264] and 1 in ids and 267 in ids  # merges, control and user-defined tokens whole
    assert tiny.decode(ids) == " the cat<|im_start|>user<think>é 12"
    assert tiny.decode(ids, skip_special_tokens=True) == " the catuser<think>é 12"
    assert tiny.encode("12") == [52, 53] and tiny.encode(" 34") == [35, 54, 55]  # digits one by one
    pieces = tiny.token_strings(tiny.encode("é🙂"))
    assert pieces[0] == "\\xc3" and "".join(pieces).startswith("\\xc3\\xa9")  # partial characters escaped
    assert b"".join(tiny.token_bytes(tiny.encode("é🙂 ok"))) == "é🙂 ok".encode()
    assert tiny.token_strings(tiny.encode(" the<|im_end|>")) == [" the", "<|im_end|>"]
    assert tiny.decode([]) == ""
    limit = tiny.config.max_tokens  # encode refuses more; count counts every token
    assert tiny.tokenizer.count("a " * 40) == 80 > limit and tiny.tokenizer.count("") == 0
    assert tiny.tokenizer.count(" the cat<|im_start|>user") == len(tiny.encode(" the cat<|im_start|>user"))


def test_bad_input_names_the_problem(tiny, monkeypatch, tiny_q_file):
    limit = tiny.config.max_tokens
    cases = [
        (lambda: tiny.encode(""), ValueError, "empty prompt"),
        (lambda: tiny.encode(b"bytes"), TypeError, "must be a string"),
        (lambda: tiny.forward([]), ValueError, "empty prompt"),
        (lambda: tiny.forward([5, 268]), ValueError, r"token id 268 at position 1 is out of range.*0\.\.267"),
        (lambda: tiny.forward([-1]), ValueError, "out of range"),
        (lambda: tiny.forward([[1, 2]]), ValueError, "1-D"),
        (lambda: tiny.forward([1.5]), ValueError, "integers"),
        (lambda: tiny.forward([True]), ValueError, "integers"),
        (lambda: tiny.forward([5] * (limit + 1)), ValueError, f"more than the {limit}"),
        (lambda: tiny.forward([5], cache=tiny.forward([5] * limit, need_weights=False).cache), ValueError,
         f"{limit} cached \\+ 1 new"),
        (lambda: tiny.forward([5], cache="cache"), ValueError, "KVCache"),
        (lambda: tiny.encode("a " * 40), ValueError, r"80 tokens, more than the 48 .* cut at character 48"),
        (lambda: tiny.head_steps([5, 6], 2, 0), ValueError, r"layer must be an integer in 0\.\.1"),
        (lambda: tiny.head_steps([5, 6], 0, 6), ValueError, r"head must be an integer in 0\.\.5"),
        (lambda: tiny.generate([5], 0), ValueError, "max_new_tokens"),
        (lambda: tiny.generate([5] * 40, 9), ValueError, "40 prompt tokens \\+ 9 new"),
        (lambda: tiny.generate([5], 2, temperature=-1), ValueError, "temperature"),
        (lambda: tiny.generate([5], 2, temperature=1, top_k=0), ValueError, "top_k"),
        (lambda: llama.sample_next(np.zeros(3), temperature=1.0), ValueError, "needs rng"),
        (lambda: llama.load(tiny_q_file.path, weights="int4", expected_sha256=None), ValueError, "weights must be"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
    assert len(tiny.encode("a " * 40, truncate=True)) == limit
    monkeypatch.setenv(llama.WEIGHTS_ENV, "compact")
    assert llama.load(tiny_q_file.path, expected_sha256=None).weights_mode == "compact"
    monkeypatch.setenv(llama.WEIGHTS_ENV, "float64")
    with pytest.raises(ValueError, match=r"\$ATTENTION_MODEL_WEIGHTS must be one of"):
        llama.load(tiny_q_file.path, expected_sha256=None)


def test_missing_or_misshaped_tensors(tmp_path, tiny_file):
    """A file whose tensors do not fit its metadata is refused, naming the tensor."""
    reader = gguf.GGUFReader(str(tiny_file.path))
    for drop, match in [("blk.1.ffn_up.weight", "'blk.1.ffn_up.weight' is missing"),
                        ("blk.0.attn_k.weight", r"'blk.0.attn_k.weight' has shape \[16, 96\], expected \[32, 96\]")]:
        path = tmp_path / "broken.gguf"
        writer = gguf.GGUFWriter(str(path), "llama")
        for key, field in reader.fields.items():
            if key.startswith("GGUF.") or key == "general.architecture":
                continue
            value_type = field.types[0]
            value = field.contents()
            if value_type == gguf.GGUFValueType.ARRAY:
                writer.add_key_value(key, value, value_type, sub_type=field.types[-1])
            else:
                writer.add_key_value(key, value, value_type)
        for t in reader.tensors:
            data = np.array(t.data).reshape(tuple(int(s) for s in reversed(t.shape)))
            if t.name == drop:
                if "ffn_up" in drop:
                    continue
                data = data[:16]
            writer.add_tensor(t.name, data)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        with pytest.raises(ValueError, match=match):
            llama.load(path, expected_sha256=None)
    assert gguf_file.MODEL_FILENAME.endswith(".gguf")


@pytest.mark.parametrize("weights", ["float32", "compact"])
def test_weights_that_are_not_finite_are_refused_naming_the_tensor(tmp_path, tiny_file, tiny_q_file, weights):
    """A NaN or an infinity anywhere in the weights (an F32 value, a Q4_1 / Q8_0 block's float16 scale) is refused at
    load in both modes, naming the tensor, instead of reaching every activation after it."""
    nan32, inf16, nan16 = np.float32("nan").tobytes(), np.float16("inf").tobytes(), np.float16("nan").tobytes()
    for source, name, bad in [(tiny_file, "blk.0.attn_q.weight", nan32), (tiny_file, "output_norm.weight", nan32),
                              (tiny_file, "token_embd.weight", np.float32("-inf").tobytes()),
                              (tiny_q_file, "blk.1.ffn_down.weight", nan16),  # Q4_1: d
                              (tiny_q_file, "blk.0.attn_v.weight", b"\0\0" + inf16),  # Q4_1: m
                              (tiny_q_file, "token_embd.weight", inf16)]:  # Q8_0: d
        data = bytearray(source.path.read_bytes())
        info = gguf_file.read_gguf(source.path).tensors[name]
        offset = info.offset + 2 * gguf.GGML_QUANT_SIZES[info.ggml_type][1]  # the third block (F32: value)
        data[offset:offset + len(bad)] = bad
        path = tmp_path / "damaged.gguf"
        path.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=rf"^tensor '{name}' holds NaN or infinite values: the file is damaged$"):
            llama.load(path, weights=weights, expected_sha256=None)
