"""The lessons' one door to the real model (``explorer.shell.real_model``): the prompt and its limits, the cached
forward pass, token labels, the model described from its config, the weights mode.

The fast tests need no model; the ``slow`` ones run SmolLM2-135M-Instruct (installed here and in CI).
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import llama
from explorer.shell import real_model as rm

SMOLLM2 = llama.LlamaConfig(n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64, d_ff=1536,
                            vocab_size=49152, rope_theta=100000.0, rms_eps=1e-5, context_length=8192, max_tokens=256,
                            bos_id=1, eos_id=2, name="SmolLM2-135M")


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


def test_describe_reads_the_config():
    assert rm.describe(SMOLLM2) == ("30 layers, 9 query heads of d_head 64 sharing 3 key/value heads, d_model 576")
    other = llama.LlamaConfig(**{**SMOLLM2.__dict__, "n_layers": 2, "n_heads": 6, "n_kv_heads": 2, "d_head": 8,
                                 "d_model": 48})
    assert rm.describe(other) == "2 layers, 6 query heads of d_head 8 sharing 2 key/value heads, d_model 48"


def test_visible_pieces_and_labels():
    assert [rm.visible_piece(p) for p in (" cat", "\n\n", "\t", "\x0b", "", "<b>")] == \
        ["␣cat", "↵↵", "⇥", "\\x0b", "∅", "<b>"]
    assert rm.piece_labels(["The", " the", " the"]) == ["The (0)", "␣the (1)", "␣the (2)"]  # unique


def test_top_tokens_are_a_softmax_in_float64():
    logits = np.array([1.0, 3.0, 3.0, -2.0, 0.5], dtype=np.float32)
    ids, p = rm.top_tokens(logits, k=3)
    assert ids == (1, 2, 0)  # a tie keeps the lower id first
    full = np.exp(logits.astype(np.float64) - 3.0) / np.exp(logits.astype(np.float64) - 3.0).sum()
    np.testing.assert_allclose(p, full[[1, 2, 0]], rtol=1e-12)


def test_weights_mode_follows_the_memory_limit(monkeypatch):
    monkeypatch.delenv(llama.WEIGHTS_ENV, raising=False)
    monkeypatch.setattr(rm, "memory_limit_bytes", lambda: rm.COMPACT_BELOW_BYTES - 1)
    assert rm.weights_mode() == "compact"
    monkeypatch.setattr(rm, "memory_limit_bytes", lambda: rm.COMPACT_BELOW_BYTES)
    assert rm.weights_mode() == "float32"
    monkeypatch.setenv(llama.WEIGHTS_ENV, " Compact ")
    assert rm.weights_mode() == "compact"


@pytest.mark.slow
def test_the_prompt_its_one_limit_and_its_true_length(lm):
    p = rm.encode_prompt(lm, "The cat sat on the mat because it was tired")
    assert p.pieces == ("The", " cat", " sat", " on", " the", " mat", " because", " it", " was", " tired")
    assert p.labels == tuple(rm.labels(lm, p.ids)) and p.labels[1] == "␣cat (1)"
    assert p.n == p.n_total == 10 and not p.is_cut and p.kept_text == "The cat sat on the mat because it was tired"
    long = " ".join(["cat"] * 100)
    p = rm.encode_prompt(lm, long)
    assert p.n == rm.PROMPT_MAX_TOKENS and p.n_total == 100 and p.is_cut and long.startswith(p.kept_text)
    p = rm.encode_prompt(lm, "7" * 288)  # one token per digit: more than the model's 256, counted all the same
    assert p.n == rm.PROMPT_MAX_TOKENS and p.n_total == 288 and p.is_cut
    p = rm.encode_prompt(lm, long, 32)  # a lesson's own smaller limit, the same mechanism
    assert p.n == 32 and p.n_total == 100
    with pytest.raises(ValueError, match="empty"):
        rm.encode_prompt(lm, "")
    with pytest.raises(ValueError, match="max_tokens must be in 1..256"):
        rm.encode_prompt(lm, "x", 0)


@pytest.mark.slow
def test_one_forward_pass_keeps_what_the_lessons_read(lm):
    ids = tuple(lm.encode("The capital of France is"))
    f = rm.forward_pass(lm, ids)
    out = lm.forward(list(ids))
    c = lm.config
    assert f.attentions.shape == (c.n_layers, c.n_heads, 5, 5) and f.attentions.dtype == np.float32
    np.testing.assert_array_equal(f.attentions, out.attentions)
    np.testing.assert_array_equal(f.last_logits, out.logits[-1])
    assert f.top_ids[0] == 7042 and f.top_pieces[0] == " Paris" and len(f.top_ids) == rm.TOP_K
    assert f.top_probabilities == tuple(sorted(f.top_probabilities, reverse=True))
