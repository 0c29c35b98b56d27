"""The lessons' one door to the real model (``explorer.shell.llm``): the prompt and its limits, the cached run and
the uncached forward pass, the interventions and variants through the door, token labels, the model described from
its config, the "not used" notes, how the file stores the weights, the weights mode.

The fast tests run the door on a tiny random Llama GGUF written by ``gguf``'s own writer and read by the same loader
(:func:`tests.core.llama_support.write_tiny_gguf`: byte-level BPE, GQA, SmolLM2's tensor names); the ``slow`` ones
run SmolLM2-135M-Instruct (installed here and in CI).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from attention import llama
from attention.llama import interventions as iv
from attention.llama import variants
from explorer.shell import i18n, llm
from tests.core.llama_support import write_tiny_gguf

SMOLLM2 = llama.LlamaConfig(n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64, d_ff=1536,
                            vocab_size=49152, rope_theta=100000.0, rms_eps=1e-5, context_length=8192, max_tokens=256,
                            bos_id=1, eos_id=2, name="SmolLM2-135M")


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("door") / "tiny.gguf")


@pytest.fixture(scope="module")
def tiny(tiny_file) -> llama.LlamaModel:
    return llama.load(tiny_file.path, weights="float32", expected_sha256=None)


@pytest.fixture(scope="module")
def tiny_q(tmp_path_factory) -> llama.LlamaModel:
    """Another tiny model (quantized as the real file, other weights): the same ids give other numbers."""
    path = write_tiny_gguf(tmp_path_factory.mktemp("door") / "tiny-q.gguf", quantized=True, seed=1).path
    return llama.load(path, weights="float32", expected_sha256=None)


def test_describe_reads_the_config():
    assert llm.describe(SMOLLM2) == ("30 layers, 9 query heads of d_head 64 sharing 3 key/value heads, d_model 576")
    other = llama.LlamaConfig(**{**SMOLLM2.__dict__, "n_layers": 2, "n_heads": 6, "n_kv_heads": 2, "d_head": 8,
                                 "d_model": 48})
    assert llm.describe(other) == "2 layers, 6 query heads of d_head 8 sharing 2 key/value heads, d_model 48"
    mha = llama.LlamaConfig(**{**SMOLLM2.__dict__, "n_layers": 12, "n_heads": 12, "n_kv_heads": 12, "d_model": 768})
    assert llm.describe(mha) == "12 layers, 12 heads of d_head 64, each with its own keys and values, d_model 768"
    mqa = llama.LlamaConfig(**{**SMOLLM2.__dict__, "n_kv_heads": 1})
    assert llm.describe(mqa) == "30 layers, 9 query heads of d_head 64 sharing one key/value head, d_model 576"
    gpt2 = llama.LlamaConfig(**{**mha.__dict__, "norm": "layer", "mlp": "gelu", "positions": "learned",
                                "rope_layout": None})
    assert (llm.norm_name(SMOLLM2), llm.mlp_name(SMOLLM2), llm.norm_name(gpt2), llm.mlp_name(gpt2)) == \
        ("RMSNorm", "SwiGLU", "LayerNorm", "GELU")
    assert llm.mlp_name(llama.LlamaConfig(**{**SMOLLM2.__dict__, "mlp": "geglu"})) == "GEGLU"


def test_the_not_used_notes_name_the_models_sizes_and_the_lessons_own_seed():
    notes = llm.not_used(SMOLLM2)
    assert list(notes) == ["sentence", "embedding", "positional", "d_model", "d_k"]  # a lesson using the seed
    assert notes["d_model"] == "the model's own width, d_model = 576."
    assert notes["d_k"] == "the model's heads are d_head = 64 wide."
    assert notes["positional"] == "the model's own positions (RoPE rotates its queries and keys)."
    learned = llm.not_used(llama.LlamaConfig(**{**SMOLLM2.__dict__, "positions": "learned", "rope_layout": None}))
    assert learned["positional"] == ("the model's own learned position embeddings (a trained vector per position, "
                                     "added to the token's embedding).")
    other = llama.LlamaConfig(**{**SMOLLM2.__dict__, "d_model": 48, "d_head": 8})
    seeded = llm.not_used(other, seed="the page's own seed picks the words.")
    assert list(seeded) == ["sentence", "embedding", "positional", "seed", "d_model", "d_k"]  # the sidebar's order
    assert seeded["seed"] == "the page's own seed picks the words." and "d_model = 48" in seeded["d_model"]
    with i18n.using("pt"):
        pt = llm.not_used(SMOLLM2)
    assert pt["sentence"] == "o modelo lê o prompt digitado nesta página."  # the door's catalogue (shell)
    assert pt["d_k"] == "as cabeças do modelo têm d_head = 64 de largura."


def test_visible_pieces_and_labels():
    assert [llm.visible_piece(p) for p in (" cat", "\n\n", "\t", "\x0b", "", "<b>")] == \
        ["␣cat", "↵↵", "⇥", "\\x0b", "∅", "<b>"]
    assert llm.piece_labels(["The", " the", " the"]) == ["The (0)", "␣the (1)", "␣the (2)"]  # unique


def test_top_tokens_are_a_softmax_in_float64():
    logits = np.array([1.0, 3.0, 3.0, -2.0, 0.5], dtype=np.float32)
    ids, p = llm.top_tokens(logits, k=3)
    assert ids == (1, 2, 0)  # a tie keeps the lower id first
    full = np.exp(logits.astype(np.float64) - 3.0) / np.exp(logits.astype(np.float64) - 3.0).sum()
    np.testing.assert_allclose(p, full[[1, 2, 0]], rtol=1e-12)
    rows = llm.probabilities(np.stack([logits, -logits]))  # over the last axis, every row
    assert rows.dtype == np.float64 and rows.shape == (2, 5)
    np.testing.assert_allclose(rows.sum(-1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(rows[0], full, rtol=1e-12)


def test_weights_mode_follows_the_memory_limit(monkeypatch):
    monkeypatch.delenv(llama.WEIGHTS_ENV, raising=False)
    monkeypatch.setattr(llm, "memory_limit_bytes", lambda: llm.COMPACT_BELOW_BYTES - 1)
    assert llm.weights_mode() == "compact"
    monkeypatch.setattr(llm, "memory_limit_bytes", lambda: llm.COMPACT_BELOW_BYTES)
    assert llm.weights_mode() == "float32"
    monkeypatch.setenv(llama.WEIGHTS_ENV, " Compact ")
    assert llm.weights_mode() == "compact"


def test_available_model_is_the_model_or_none(monkeypatch):
    monkeypatch.setattr(llm, "missing_weights", lambda: "no file")
    assert llm.available_model() is None
    monkeypatch.setattr(llm, "missing_weights", lambda: None)
    monkeypatch.setattr(llm, "load_model", lambda weights: f"the model ({weights})")
    monkeypatch.setenv(llama.WEIGHTS_ENV, "compact")
    assert llm.available_model() == "the model (compact)"

    def damaged(weights):
        raise ValueError("not a GGUF file")

    monkeypatch.setattr(llm, "load_model", damaged)
    assert llm.available_model() is None


def test_weight_storage_is_the_files_tensor_table(tmp_path):
    tied = llm.read_weight_storage(write_tiny_gguf(tmp_path / "q.gguf", quantized=True).path)
    assert tied.tied and tied.embedding_type == "Q8_0" and tied.embedding_params == 268 * 96
    assert list(tied.params) == ["Q4_1", "Q8_0", "F32"]  # most parameters first
    assert tied.total == sum(int(np.prod(shape)) for _, shape in tied.tensors.values())
    assert tied.tensors["blk.0.attn_norm.weight"] == ("F32", (96,))
    untied = llm.read_weight_storage(write_tiny_gguf(tmp_path / "u.gguf", tied=False).path)
    assert not untied.tied and set(untied.params) == {"F32"}
    (tmp_path / "not.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(ValueError):
        llm.read_weight_storage(tmp_path / "not.gguf")


def test_weight_storage_of_a_file_moved_since_the_load_is_none(tmp_path):
    path = tmp_path / "moving.gguf"
    write_tiny_gguf(path)
    model = llama.load(path, weights="float32", expected_sha256=None)
    llm.weight_storage.clear()
    try:
        assert llm.weight_storage(model).embedding_type == "F32"
        llm.weight_storage.clear()
        shutil.move(path, tmp_path / "moved.gguf")
        assert llm.weight_storage(model) is None  # the intro says the file's name instead
    finally:
        llm.weight_storage.clear()


def test_the_precision_note_for_other_files():
    untied = llm.WeightStorage({"token_embd.weight": ("F16", (3, 10)), "output.weight": ("Q4_1", (5, 10)),
                                "blk.0.attn_q.weight": ("Q4_1", (2, 10))})  # Q4_1 70, F16 30 (the embedding)
    note = llm.precision_note(untied)
    assert note == ("the token embedding (the input) is float16 (F16, 30% of the parameters); the output matrix behind "
                    "every logit is 4-bit (Q4_1, 50%); every other matrix is 4-bit (Q4_1, 20%)") and "tied" not in note
    one_type = llm.WeightStorage({"token_embd.weight": ("F32", (2, 2)), "blk.0.attn_norm.weight": ("F32", (6,))})
    assert llm.precision_note(one_type) == ("the token embedding (also the tied output matrix behind every logit) is "
                                            "float32 (F32, 40% of the parameters); the norms are float32 (F32, 60%)")
    tiny_norm = llm.WeightStorage({"token_embd.weight": ("Q8_0", (100, 1000)), "blk.0.attn_norm.weight": ("F32", (3,))})
    assert "the norms are float32 (F32, under 0.01%)" in llm.precision_note(tiny_norm)
    assert tiny_norm.quantized and not one_type.quantized and not one_type.has_biases
    with_biases = llm.WeightStorage({"token_embd.weight": ("F16", (2, 2)), "blk.0.attn_norm.weight": ("F32", (3,)),
                                     "blk.0.attn_norm.bias": ("F32", (3,))})
    assert with_biases.has_biases and not with_biases.quantized
    assert llm.precision_note(with_biases).endswith("; the norms and biases are float32 (F32, 60%)")
    with pytest.raises(ValueError, match="storage"):
        llm.precision_note(llm.WeightStorage({"blk.0.attn_q.weight": ("Q4_1", (2, 10))}))


def test_the_precision_note_keeps_the_languages_letters_and_decimal_mark():
    storage = llm.WeightStorage({"token_embd.weight": ("Q8_0", (576, 49152)),
                                 "blk.0.attn_q.weight": ("Q4_1", (576, 576)),
                                 "blk.0.attn_norm.weight": ("F32", (576,))})
    with i18n.using("tr"):
        note = llm.precision_note(storage)
    assert note.startswith("token gömmesi (aynı zamanda her logitin arkasındaki paylaşılan çıktı matrisi) 8 bit (Q8_0, "
                           "parametrelerin %")
    assert "%0,0" in note or "%0,1" in note


@pytest.mark.slow
def test_the_precision_note_matches_the_file(lm):
    """Issue 26, item 6: the tensor types and shares are those of the file (read here by gguf's own reader); every
    type is named with its share; the door's reading of the file says the same."""
    import gguf

    reader = gguf.GGUFReader(lm.path)
    types = {t.name: (t.tensor_type.name, tuple(int(d) for d in t.shape)) for t in reader.tensors}
    counts: dict[str, int] = {}
    for kind, shape in types.values():
        counts[kind] = counts.get(kind, 0) + int(np.prod(shape))
    total = sum(counts.values())
    emb_type, emb_shape = types["token_embd.weight"]
    emb_params = int(np.prod(emb_shape))
    note = llm.precision_note(llm.WeightStorage(types))
    assert "output.weight" not in types  # tied: the embedding is also the output matrix
    assert emb_type == "Q8_0" and round(100 * emb_params / total) == 21
    assert note.startswith(f"the token embedding (also the tied output matrix behind every logit) is 8-bit "
                           f"({emb_type}, {emb_params / total:.0%} of the parameters)")
    assert "21% of the parameters" in note  # issue 26: ~21%
    rest = {t: n - (emb_params if t == emb_type else 0) for t, n in counts.items()}
    for t, n in rest.items():
        if n:
            share = 100 * n / total
            assert f"({t}, {share:.0f}%)" in note or f"({t}, {share:.2f}%)" in note, (t, note)
    others = {k for name, (k, s) in types.items() if name != "token_embd.weight" and len(s) == 2}
    assert others == {"Q4_1"} and "every other matrix is 4-bit (Q4_1, 79%)" in note
    assert "the norms are float32" in note
    storage = llm.read_weight_storage(lm.path)  # the door's reading of the same file: what the pages show
    assert {n: (t, int(np.prod(shape))) for n, (t, shape) in storage.tensors.items()} == \
        {n: (t, int(np.prod(shape))) for n, (t, shape) in types.items()}
    assert llm.precision_note(storage) == note


def test_tokens_pieces_text_and_labels(tiny):
    ids = llm.token_ids(tiny, "the cat 👍")
    assert llm.pieces(tiny, ids)[:4] == ["t", "he", " cat", " "] and len(ids) == 4 + 4  # the emoji: its 4 bytes
    assert llm.labels(tiny, ids)[:3] == ["t (0)", "he (1)", "␣cat (2)"]
    assert llm.visible_pieces(tiny, ids)[:4] == ["t", "he", "␣cat", "␣"]
    assert llm.visible_pieces(tiny, ids) == [llm.visible_piece(p) for p in llm.pieces(tiny, ids)]
    assert llm.text(tiny, ids).text == "the cat 👍" and llm.text(tiny, ids).pending == b""
    cut = llm.text(tiny, ids[:-1])  # three bytes of four: pending, never U+FFFD
    assert cut.text == "the cat " and cut.pending == "👍".encode()[:3]
    with pytest.raises(ValueError, match="empty"):
        llm.token_ids(tiny, "")


def test_a_prompt_cut_inside_a_character_ends_on_a_whole_character(tiny):
    """A cut at the token limit that falls inside an emoji or a CJK character: the kept text (shown under the
    warning) ends with the last whole character, never with the replacement character U+FFFD."""
    for text, limit, kept in (("a 👍 b", 3, "a "), ("a 👍 b", 5, "a "), ("a 👍 b", 6, "a 👍"), ("猫が", 2, "")):
        p = llm.encode_prompt(tiny, text, limit)
        assert p.is_cut and p.n == limit
        assert "\ufffd" in tiny.decode(list(p.ids)) or p.kept_text == tiny.decode(list(p.ids))
        assert p.kept_text == kept and "\ufffd" not in p.kept_text, (text, limit, p.kept_text)


def test_the_prompt_is_cut_at_its_limit_and_counts_every_token(tiny):
    text = "the cat sat " * 8
    p = llm.encode_prompt(tiny, text, 10)
    assert p.n == 10 and p.n_total == len(tiny.encode(text)) and p.is_cut and text.startswith(p.kept_text)
    assert p.pieces == tuple(llm.pieces(tiny, p.ids)) and p.labels == tuple(llm.labels(tiny, p.ids))
    whole = llm.encode_prompt(tiny, "the cat sat", 40)
    assert not whole.is_cut and whole.kept_text == "the cat sat" and whole.n == whole.n_total
    with pytest.raises(ValueError, match="max_tokens must be in 1..48"):
        llm.encode_prompt(tiny, "x", 0)
    assert llm.prompt(tiny, "the cat sat", 8) == llm.encode_prompt(tiny, "the cat sat", 8)  # cached, the same


def test_extend_appends_ids_as_ids_up_to_the_limit(tiny):
    p = llm.encode_prompt(tiny, "the cat", 40)
    assert p.extend(tiny, ()) is p
    thumbs = tiny.encode("👍")  # 4 byte tokens
    half = p.extend(tiny, thumbs[:2])
    assert half.ids == p.ids + tuple(thumbs[:2]) and half.n_total == p.n_total + 2 and not half.is_cut
    assert half.kept_text == "the cat" and half.labels[-1] == f"\\x9f ({half.n - 1})"  # the pending bytes left out
    assert p.extend(tiny, thumbs).kept_text == "the cat👍"
    full = p.extend(tiny, thumbs * 3, max_tokens=8)
    assert full.n == 8 and full.n_total == p.n_total + 12 and full.is_cut and "\ufffd" not in full.kept_text


def test_run_is_the_forward_pass_kept_and_cached_per_model(tiny, tiny_q):
    ids = tuple(tiny.encode("the cat sat on the mat"))
    out = tiny.forward(list(ids))
    r = llm.run(tiny, ids)
    np.testing.assert_array_equal(r.attentions, out.attentions)
    np.testing.assert_array_equal(r.last_logits, out.logits[-1])
    assert r.logits.shape == (1, tiny.config.vocab_size) and r.cache is None and r.residuals is None
    assert (r.top_ids, r.top_probabilities) == llm.top_tokens(out.logits[-1]) and len(r.top_ids) == llm.TOP_K
    assert r.top_pieces == tuple(tiny.token_strings(list(r.top_ids))) and r.ids == ids
    other = llm.run(tiny_q, ids)  # the same ids on another model: its own entry, its own numbers
    np.testing.assert_array_equal(other.attentions, tiny_q.forward(list(ids)).attentions)
    assert not np.array_equal(other.attentions, r.attentions)
    assert llm.model_key(tiny) != llm.model_key(tiny_q)
    np.testing.assert_array_equal(llm.run(tiny, ids).attentions, out.attentions)  # still tiny's


def test_run_and_forward_take_the_cores_options(tiny):
    ids = tiny.encode("the cat sat on the mat")
    for options in (dict(ablate=[(0, 1), (1, 5)]), dict(ablate=[(1, 2)], ablation="mean"), dict(window=3, sinks=1),
                    dict(position_offset=7), dict(patch={"resid": {(1, 2): np.ones(96, np.float32)}})):
        want = tiny.forward(ids, **options)
        np.testing.assert_array_equal(llm.run(tiny, ids, **options).last_logits, want.logits[-1])
        got = llm.forward(tiny, ids, **options)
        np.testing.assert_array_equal(got.logits, want.logits)
        np.testing.assert_array_equal(got.attentions, want.attentions)
    mqa = llm.forward(tiny, ids, variant="mqa", weights=False)
    np.testing.assert_array_equal(mqa.logits, variants.kv_variant(tiny, "mqa").forward(ids).logits)
    assert mqa.attentions is None and mqa.cache.keys.shape[1] == 1  # one key/value head
    a = llm.run(tiny, ids, activations=True)
    want = tiny.forward(ids, keep_activations=True)
    for name in ("residuals", "head_outputs", "mlp_outputs", "attentions"):
        np.testing.assert_array_equal(getattr(a, name), getattr(want, name))
    with pytest.raises(ValueError, match="window must be"):
        llm.run(tiny, ids, window=0)


def test_forward_continues_a_kv_cache(tiny):
    ids = tiny.encode("the cat sat on")
    first = llm.forward(tiny, ids[:-1])
    step = llm.forward(tiny, ids[-1:], cache=first.cache)
    whole = tiny.forward(ids)
    assert step.ids == (ids[-1],) and step.cache.keys.shape[2] == len(ids)
    np.testing.assert_allclose(step.last_logits, whole.logits[-1], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(step.attentions[:, :, 0], whole.attentions[:, :, -1], atol=1e-5)


def test_the_interventions_through_the_door_are_the_cores(tiny):
    ids = tiny.encode("the cat sat on the mat")
    token = 7
    np.testing.assert_array_equal(llm.from_prompt(iv.logit_lens, tiny, ids), iv.logit_lens(tiny, ids))
    top, want = llm.from_prompt(iv.logit_lens_top, tiny, ids, 2), iv.logit_lens_top(tiny, ids, 2)
    np.testing.assert_array_equal(top.ids, want.ids)
    a, b = llm.from_prompt(iv.logit_attribution, tiny, ids, token), iv.logit_attribution(tiny, ids, token)
    assert a.logit == b.logit and a.total == pytest.approx(b.total)
    np.testing.assert_array_equal(a.heads, b.heads)
    np.testing.assert_array_equal(llm.from_prompt(iv.knock_out, tiny, ids, [(1, 3)], ablation="mean"),
                                  iv.knock_out(tiny, ids, [(1, 3)], ablation="mean"))
    seen = []
    sweep = llm.knockout_sweep(tiny, ids, token, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 2), (1, 2)]  # before each layer's pass
    core = iv.knockout_sweep(tiny, ids, token)
    np.testing.assert_allclose(sweep.effect, core.effect, atol=1e-6)
    np.testing.assert_array_equal(sweep.top_ids, core.top_ids)
    assert sweep.clean_log_prob == pytest.approx(core.clean_log_prob, abs=1e-9)
    clean, corrupted = tiny.encode("a cat sat"), tiny.encode("a sat cat")  # 3 tokens each
    seen.clear()
    grid = llm.patch_residual_sweep(tiny, clean, corrupted, 5, 6, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(0, 3), (1, 3), (2, 3)]
    np.testing.assert_allclose(grid, iv.patch_residual_sweep(tiny, clean, corrupted, 5, 6), atol=1e-5)
    np.testing.assert_allclose(llm.patch_head_layer(tiny, tuple(clean), tuple(corrupted), 5, 6, 1),
                               iv.patch_head_layer(tiny, clean, corrupted, 5, 6, 1), atol=1e-5)


def test_variants_and_one_heads_steps_through_the_door(tiny):
    ids = tiny.encode("the cat sat on the mat")
    np.testing.assert_array_equal(llm.renumbered_logits(tiny, ids, window=4, sinks=1),
                                  variants.renumbered_logits(tiny, ids, window=4, sinks=1))
    r = llm.forward(tiny, ids, window=4, sinks=1, weights=False)
    assert llm.continue_greedy(tiny, r, 3, window=4, sinks=1) == variants.generate(tiny, ids, 3, window=4, sinks=1)
    assert llm.kv_variant(tiny, ("latent", 8)).config.kv_latent_rank == 8
    steps = llm.head_steps(tiny, tuple(ids), 1, 4)
    assert steps.kv_head == 1
    np.testing.assert_array_equal(steps.weights, tiny.head_steps(ids, 1, 4).weights)


def test_word_token_ids_are_whole_lowercase_words():
    pieces = ["The", " cat", " house", " Paris", " maison", " x", " abcdefghij", " word"]
    assert llm.word_token_ids(pieces) == (2, 4, 7)


def test_letters_pattern_takes_words_of_any_script_and_case():
    pieces = [" cat", " İstanbul", " 日本", " x", "cat", " a1", " ı", " snake_case", " Paris"]
    assert llm.word_token_ids(pieces, llm.LETTERS_PATTERN) == (0, 1, 2, 3, 6, 8)


@pytest.mark.parametrize("family, words", [
    pytest.param("qwen2", [" t", " the", " c", " cat"], marks=pytest.mark.lesson_model("qwen2")),
    pytest.param("gpt2", [" t", " the", " c", " cat"], marks=pytest.mark.lesson_model("gpt2")),
    pytest.param("gemma3", [" t", " the", " c", " cat", " s", " sat", " m", " mat", " i", " İ", " f", " ı", " x"],
                 marks=pytest.mark.lesson_model("gemma3")),  # " on" is a piece, but the text " on" is 3 tokens
])
def test_a_small_vocabulary_draws_its_own_words(door_model, family, words):
    """A tiny vocabulary has no WORD_PATTERN words: the draw takes its space-and-letters pieces (SentencePiece's ▁
    read as the space) that tokenize back to themselves, and the repeat is as long as they allow."""
    got = llm.word_ids(door_model)
    assert llm.pieces(door_model, got) == words
    bos = [] if family != "gemma3" else [door_model.tokenizer.bos_id]  # Gemma's file adds BOS to every text
    assert all(door_model.encode(w) == bos + [i] for w, i in zip(words, got, strict=True))
    assert llm.repeat_words(door_model, 20) == len(words) and llm.repeat_words(door_model, 3) == 3


@pytest.mark.slow
def test_word_ids_tokenize_back_to_themselves(lm):
    words = llm.word_ids(lm)
    assert len(words) == 15_873 and words == tuple(sorted(words))
    for i in words[::500]:
        assert lm.encode(lm.token_strings([i])[0]) == [i]


@pytest.mark.slow
def test_the_prompt_its_one_limit_and_its_true_length(lm):
    p = llm.encode_prompt(lm, "The cat sat on the mat because it was tired")
    assert p.pieces == ("The", " cat", " sat", " on", " the", " mat", " because", " it", " was", " tired")
    assert p.labels == tuple(llm.labels(lm, p.ids)) and p.labels[1] == "␣cat (1)"
    assert p.n == p.n_total == 10 and not p.is_cut and p.kept_text == "The cat sat on the mat because it was tired"
    long = " ".join(["cat"] * 100)
    p = llm.encode_prompt(lm, long)
    assert p.n == llm.PROMPT_MAX_TOKENS and p.n_total == 100 and p.is_cut and long.startswith(p.kept_text)
    p = llm.encode_prompt(lm, "7" * 288)  # one token per digit: more than the model's 256, counted all the same
    assert p.n == llm.PROMPT_MAX_TOKENS and p.n_total == 288 and p.is_cut
    p = llm.encode_prompt(lm, long, 32)  # a lesson's own smaller limit, the same mechanism
    assert p.n == 32 and p.n_total == 100
    with pytest.raises(ValueError, match="empty"):
        llm.encode_prompt(lm, "")
    with pytest.raises(ValueError, match="max_tokens must be in 1..256"):
        llm.encode_prompt(lm, "x", 0)


@pytest.mark.slow
def test_one_run_keeps_what_the_lessons_read(lm):
    ids = tuple(lm.encode("The capital of France is"))
    r = llm.run(lm, ids)
    out = lm.forward(list(ids))
    c = lm.config
    assert r.attentions.shape == (c.n_layers, c.n_heads, 5, 5) and r.attentions.dtype == np.float32
    np.testing.assert_array_equal(r.attentions, out.attentions)
    np.testing.assert_array_equal(r.last_logits, out.logits[-1])
    assert r.top_ids[0] == 7042 and r.top_pieces[0] == " Paris" and len(r.top_ids) == llm.TOP_K
    assert r.top_probabilities == tuple(sorted(r.top_probabilities, reverse=True))
    storage = llm.weight_storage(lm)
    assert storage.tied and storage.embedding_type == "Q8_0" and list(storage.params) == ["Q4_1", "Q8_0", "F32"]


def test_model_name_is_the_builtin_name_or_the_files_own(door_model, tmp_path):
    from attention import llama
    from tests.core.llama_support import write_tiny_gguf

    path = tmp_path / "some-file.gguf"
    write_tiny_gguf(path, name="Tiny Llama")
    assert llm.model_name(llama.load(path, expected_sha256=None)) == "Tiny Llama"
    write_tiny_gguf(path, name="  ")
    assert llm.model_name(llama.load(path, expected_sha256=None)) == "some-file"


def test_a_file_of_float_tensors_widens_exactly():
    floats = llm.WeightStorage({"token_embd.weight": ("F16", (3, 10)), "blk.0.attn_q.weight": ("BF16", (10, 10)),
                                "blk.0.attn_norm.weight": ("F32", (10,))})
    assert llm.widened_exactly(floats)
    assert not llm.widened_exactly(llm.WeightStorage({**floats.tensors, "blk.0.attn_k.weight": ("Q4_1", (5, 10))}))


# --- the door's two models and the free-memory check ---------------------------------------------------------------


@pytest.fixture
def three_files(tmp_path):
    """Three tiny GGUF files the door loads, and a door with no model loaded (each test starts from an empty cache)."""
    import streamlit as st

    paths = []
    for name in ("a", "b", "c"):
        write_tiny_gguf(tmp_path / f"{name}.gguf", name=name)
        paths.append(str(tmp_path / f"{name}.gguf"))
    st.cache_resource.clear()
    llm._LOADED.clear()
    yield paths
    st.cache_resource.clear()
    llm._LOADED.clear()


def test_a_third_model_is_loaded_when_the_least_recent_one_s_memory_makes_room(three_files, monkeypatch):
    """The door holds two models; a third one's free-memory check counts the memory the model it evicts frees: the
    evicted model is gone before the core reads what is free (with the cache evicting after the load, it was still
    held, and a third model that fits once it is gone was refused: "too big for this server's memory")."""
    import weakref

    from attention.llama import memory

    a_path, b_path, c_path = three_files
    a = llm.load_model("float32", a_path)
    llm.load_model("float32", b_path)
    a_alive = weakref.ref(a)
    del a
    free = 10**12  # what the memory holds for the third model once a's weights are freed; nothing while a holds them
    monkeypatch.setattr(memory, "available_bytes", lambda: free if a_alive() is None else 0)
    c = llm.load_model("float32", c_path)
    assert a_alive() is None and c.config.n_layers == 2
    assert list(llm._LOADED) == [("float32", b_path), ("float32", c_path)]
    assert llm.load_model("float32", b_path) is llm.load_model("float32", b_path)  # still cached: no reload


def test_the_least_recently_used_model_is_the_one_evicted(three_files, monkeypatch):
    a_path, b_path, c_path = three_files
    a = llm.load_model("float32", a_path)
    llm.load_model("float32", b_path)
    assert llm.load_model("float32", a_path) is a  # a used again: b is now the least recent
    llm.load_model("float32", c_path)
    assert llm.load_model("float32", a_path) is a
    assert list(llm._LOADED) == [("float32", c_path), ("float32", a_path)]
