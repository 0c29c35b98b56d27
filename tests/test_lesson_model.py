"""The model the lessons' door serves in tests (``tests/conftest.py``): the tiny SmolLM2 by default, the real file
with ``@pytest.mark.smollm2``; and that the tiny file carries SmolLM2's real tokenizer and architecture. The tests that
write the tiny file (about 1 s) are ``slow``, with the page tests that use it."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import streamlit as st

from attention import llama
from attention.llama import gguf_file
from explorer.lessons import LESSONS
from tests.apptest_utils import app_at, assert_clean, chart_elements
from tests.conftest import DOOR, LESSON_MODEL, SMOLLM2, TINY
from tests.core.llama_support import TINY_SMOLLM2, real_model_path, smollm2_vocabulary, write_tiny_smollm2

TEXTS = ["The capital of France is", "Ünïcødé 🐈 çay, 12345 <|im_start|>user\nhi<|im_end|>", "  two  spaces\tand tab"]


@pytest.mark.slow
def test_the_door_serves_the_tiny_smollm2_by_default(tiny_smollm2):
    door = importlib.import_module(DOOR)
    assert door.missing_weights() is None
    lm = door.load_model("float32")
    assert lm.path == tiny_smollm2 and lm is door.load_model("float32")  # loaded once
    c = lm.config
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_head, c.d_model, c.d_ff) == (30, 9, 3, 8, 72, 96)
    assert (c.context_length, c.max_tokens, c.rope_theta, c.vocab_size) == (8192, 256, 100000.0, 49152)
    assert LESSON_MODEL.served == TINY


@pytest.mark.slow
def test_the_tiny_file_has_smollm2s_tokenizer_and_architecture(tiny_smollm2):
    tiny, real = gguf_file.read_gguf(tiny_smollm2).metadata, gguf_file.read_gguf(real_model_path()).metadata
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
                "tokenizer.chat_template", "llama.block_count", "llama.attention.head_count",
                "llama.attention.head_count_kv", "llama.context_length", "llama.rope.freq_base", "llama.vocab_size"):
        assert tiny[key] == real[key], key
    assert tiny["llama.embedding_length"] == TINY_SMOLLM2["d_model"] < real["llama.embedding_length"]
    lm = LESSON_MODEL.tiny_model()
    tokens = smollm2_vocabulary().tokens
    for text in TEXTS:  # the tokenizer built from the tiny file reads text as SmolLM2's
        ids = lm.encode(text)
        assert lm.decode(ids) == text and all(0 <= i < len(tokens) for i in ids)
    assert lm.encode("The capital of France is") == [504, 3575, 282, 4649, 314]


@pytest.mark.slow
def test_a_random_model_still_gives_a_distribution_per_token():
    lm = LESSON_MODEL.tiny_model()
    out = lm.forward(lm.encode(TEXTS[0]))
    assert out.attentions.shape == (30, 9, 5, 5) and np.isfinite(out.logits).all()
    np.testing.assert_allclose(out.attentions.sum(-1), 1.0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.smollm2
def test_with_the_marker_the_door_is_the_shipped_one():
    door = importlib.import_module(DOOR)
    assert door.missing_weights() is None
    lm = door.load_model("float32")
    assert lm.path == real_model_path() and lm.config.d_model == 576  # the real file, through its SHA-256 pin
    assert LESSON_MODEL.served == SMOLLM2


def test_changing_the_model_empties_the_caches(monkeypatch):
    calls = []

    @st.cache_data
    def cached(x):
        calls.append(x)
        return x

    cached(1)
    monkeypatch.setattr(LESSON_MODEL, "served", SMOLLM2)  # as if the previous test had run the real file
    LESSON_MODEL.use(TINY)
    assert LESSON_MODEL.served is None
    cached(1)
    assert calls == [1, 1]
    LESSON_MODEL.use(TINY)  # the same model again: nothing emptied
    cached(1)
    assert calls == [1, 1]


@pytest.mark.slow
def test_the_real_file_keeps_its_pin(tiny_smollm2):
    with pytest.raises(ValueError, match="SHA-256"):
        llama.load(tiny_smollm2)  # without expected_sha256=None the loader refuses any file but the pinned one


SMALLER = {**TINY_SMOLLM2, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "d_model": 32}
"""Fewer layers than any page's default layer (16, 11), fewer heads than its default head (L23H4)."""


@pytest.fixture(scope="module")
def smaller_smollm2(tmp_path_factory) -> llama.LlamaModel:
    path = write_tiny_smollm2(tmp_path_factory.mktemp("smaller") / "smaller.gguf", config=SMALLER)
    return llama.load(path, expected_sha256=None)


@pytest.mark.slow
@pytest.mark.parametrize("page", [e.name for e in LESSONS if e.name in ("block", "real_model", "causes", "kv_cache",
                                                                        "sinks", "training")])
def test_the_real_model_pages_read_the_models_sizes_from_its_config(page, smaller_smollm2, monkeypatch):
    """Every page that runs the model opens on a 2-layer model with 4 query heads sharing 2 key/value heads: no
    default layer, head or size is SmolLM2's literal where it should be the config's."""
    monkeypatch.setattr(LESSON_MODEL, "tiny_model", lambda weights="float32", kind="tiny": smaller_smollm2)
    st.cache_data.clear()
    st.cache_resource.clear()  # the lessons' caches key on the ids, not the model
    try:
        at = app_at(page, timeout=300)
        assert_clean(at)
        assert chart_elements(at), f"{page} draws no chart"
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()


def test_every_apptest_shares_one_real_scan_of_the_installed_components():
    """``tests/conftest.py`` lets the AppTests of a process share one scan for Streamlit components: an AppTest's
    component manager gets it, and it holds what a fresh real scan of the installed packages finds."""
    from streamlit.components.v2 import manifest_scanner
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string("import streamlit as st\nst.write('hi')").run()
    assert at.markdown[0].value == "hi"
    once = manifest_scanner.scan_component_manifests
    assert getattr(once, "scans_once", False), "the AppTests scan the installed packages again each"
    assert at._bidi_component_manager is not None  # the AppTest built its manager (through the shared scan)
    fresh = once.scan()
    assert [(m.name, str(root)) for m, root in once()] == [(m.name, str(root)) for m, root in fresh]
