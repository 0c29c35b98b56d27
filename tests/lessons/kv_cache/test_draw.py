"""The KV-cache lesson's sentences, checked against the live numbers they describe (issue 26, items 2, 6, 7).

* the text of a generation that ends inside a character shows its bytes as pending, never U+FFFD;
* the door's reading of the file's tensor table (checked here against ``gguf.GGUFReader``, an independent reader
  of the same file), and the lesson's sentence around the door's words for it;
* "the difference is not exactly 0 only because…" is said only when it is not 0;
* the view draws what one cached function returns, the full recomputation through the door.
"""

from __future__ import annotations

import collections

import gguf
import numpy as np
import pytest

from attention import llama
from attention.llama import gguf_file
from explorer.lessons.kv_cache import draw as D
from explorer.lessons.kv_cache import model as M
from explorer.shell import llm


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


# --- pending bytes (item 2) ---------------------------------------------------------------------------------


def test_pending_marker_and_note_count_the_bytes_of_the_unfinished_character():
    assert M.pending_marker(b"") == ""
    assert M.pending_marker(b"\xf0") == "⟨+1 byte pending⟩"
    assert M.pending_marker("👍".encode()[:2]) == "⟨+2 bytes pending⟩"
    note = M.pending_note("🍕".encode()[:3])
    assert note.startswith("⟨+3 bytes pending⟩") and "3 of its 4 UTF-8 bytes (`f0 9f 8d`)" in note
    assert "2 of its 3 UTF-8 bytes" in M.pending_note("日".encode()[:2])
    assert "1 of its 2 UTF-8 bytes" in M.pending_note("İ".encode()[:1])
    assert "never finished" in M.pending_note(b"\xf0\x9f", ended=True)
    assert f"stops at {M.MAX_STEPS} generated tokens" in M.pending_note(b"\xf0\x9f", at_limit=True)
    assert "\ufffd" not in note


@pytest.mark.slow
@pytest.mark.parametrize("prompt", ["Great job 👍👍👍", "I love pizza 🍕 and sushi"])
def test_a_generation_half_way_through_an_emoji_keeps_its_bytes_pending(lm, prompt):
    """The model writes these emoji over 3 tokens: after 1 and 2 of them the text has no U+FFFD, only pending
    bytes, and the bytes shown plus the pending ones are exactly the bytes of the token ids read (no re-tokenizing)."""
    ids = lm.encode(prompt)
    state = M.prefill(lm, ids, M.Sampling())
    pending_seen = 0
    for _ in range(6):
        state = M.decode_step(lm, state)
        assert state.ids == tuple(ids) + tuple(c.token_id for c in state.choices[:-1])  # the ids chosen, appended
        text = lm.decode_partial(list(state.ids))
        assert "\ufffd" not in text.text
        assert text.text.encode() + text.pending == b"".join(lm.token_bytes(list(state.ids)))
        if text.pending:
            pending_seen += 1
            assert "\ufffd" in lm.decode(list(state.ids))  # what the page showed before: a character never written
            assert M.pending_marker(text.pending) == f"⟨+{len(text.pending)} bytes pending⟩"
    assert pending_seen >= 2, "the model no longer splits an emoji over tokens after this prompt"


# --- how the weights are stored (item 6) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def file_counts() -> tuple[dict[str, int], str, int, bool]:
    """Parameters per tensor type, read with ``gguf.GGUFReader`` (not this project's reader; about 10 s)."""
    reader = gguf.GGUFReader(gguf_file.find_model_file())
    counts: collections.Counter = collections.Counter()
    embedding = None
    for tensor in reader.tensors:
        counts[tensor.tensor_type.name] += int(tensor.n_elements)
        if tensor.name == "token_embd.weight":
            embedding = tensor
    names = {t.name for t in reader.tensors}
    return dict(counts), embedding.tensor_type.name, int(embedding.n_elements), "output.weight" not in names


@pytest.mark.slow
def test_weight_storage_is_the_files_tensor_table(file_counts):
    counts, emb_type, emb_params, tied = file_counts
    storage = llm.read_weight_storage(gguf_file.find_model_file())
    assert storage.params == counts and list(storage.params) == sorted(counts, key=counts.get, reverse=True)
    assert (storage.embedding_type, storage.embedding_params, storage.tied) == (emb_type, emb_params, tied)
    assert storage.total == sum(counts.values())


def test_storage_note_frames_the_doors_words_and_says_the_weights_are_widened():
    """The lesson's sentence around the door's words (the words themselves: tests/shell/test_llm.py's
    test_the_precision_note_matches_the_file and test_the_precision_note_for_other_files)."""
    untied = llm.WeightStorage({"token_embd.weight": ("F16", (3, 10)), "output.weight": ("Q4_1", (5, 10)),
                                "blk.0.attn_q.weight": ("Q4_1", (2, 10))})
    note = M.storage_note(untied)
    assert note.startswith(f"In the weights file, {llm.precision_note(untied)}. Every weight is widened to float32")
    assert "close to, not identical with" in note
    assert "The weights are read from a quantized file." in M.storage_note(None)
    assert "close to, not identical with" in M.storage_note(None)


# --- the difference sentence (item 7) -------------------------------------------------------------------------


def test_difference_note_says_why_it_is_not_0_only_when_it_is_not():
    zero = M.difference_note(0.0, 0.0, head=3, layer=11, n_layers=30)
    assert "not exactly 0" not in zero and "bit for bit" in zero and "exact shortcut" in zero
    some = M.difference_note(6.3e-7, 1.5e-6, head=3, layer=11, n_layers=30)
    assert "The difference is not exactly 0 only because" in some and "ends at the 1.5e-06 measured here" in some
    assert "through 30 layers" in some and "bit for bit" not in some
    head_only = M.difference_note(0.0, 1.5e-6, head=3, layer=11, n_layers=30)
    assert "Head 3 of layer 11 agrees bit for bit; over all heads the difference is not exactly 0" in head_only


# --- one cached function for the view ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_cache_view_is_the_cache_and_the_comparison_the_doors_forward_pass(lm, monkeypatch):
    """Issue 30: one more generated token draws the cache's charts after one decode step; the full pass (hundreds of
    ms on this machine) runs after them, for the comparison only."""
    run = M.Run(tuple(lm.encode(M.DEFAULT_PROMPT)), M.Sampling(), 2)
    state = M.run(lm, run.prompt_ids, run.sampling, run.steps)
    with monkeypatch.context() as m:
        m.setattr(llm, "run", lambda *a, **k: pytest.fail("the cache view ran the full pass"))
        view = D.cache_view_data(lm, run, 11, 1, D.decode_state)
    assert view.heads == (3, 4, 5) and view.labels == tuple(llm.labels(lm, state.ids))
    np.testing.assert_array_equal(view.keys, state.cache.keys[11, 1])
    np.testing.assert_array_equal(view.values, state.cache.values[11, 1])
    np.testing.assert_array_equal(view.cached_rows, state.new_rows[11, 3:6])
    full_pass = D.full_pass_data(lm, run, 11, 1, D.decode_state)
    full = llm.run(lm, state.ids).attentions[:, :, -1, :]  # the door's cached pass
    np.testing.assert_array_equal(full_pass.full_rows, full[11, 3:6])
    assert full_pass.difference_all == M.max_difference(state.new_rows, full) > 0
    assert full_pass.full_rows.shape == view.cached_rows.shape == (3, len(state.ids))
