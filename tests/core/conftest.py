"""Fixtures for the core tests: tiny random Llama GGUF files and models built from them (session-scoped).

The real SmolLM2 model is loaded through ``tests.core.llama_support.real_model`` (cached per process).
"""

from __future__ import annotations

import pytest

from attention import llama
from tests.core import llama_support


@pytest.fixture(scope="session")
def tiny_file(tmp_path_factory) -> llama_support.TinyFile:
    """A random 2-layer Llama GGUF in F32 (GQA: 6 query heads, 2 key/value heads, d_head 16)."""
    return llama_support.write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-f32.gguf")


@pytest.fixture(scope="session")
def tiny_q_file(tmp_path_factory) -> llama_support.TinyFile:
    """The same architecture with Q4_1 matrices and a Q8_0 embedding, as the real file."""
    return llama_support.write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-q.gguf", quantized=True, seed=1)


@pytest.fixture(scope="session")
def tiny(tiny_file) -> llama.LlamaModel:
    return llama.load(tiny_file.path, weights="float32", expected_sha256=None)


@pytest.fixture(scope="session")
def tiny_q(tiny_q_file) -> llama.LlamaModel:
    return llama.load(tiny_q_file.path, weights="float32", expected_sha256=None)


@pytest.fixture(scope="session")
def tiny_q_compact(tiny_q_file) -> llama.LlamaModel:
    return llama.load(tiny_q_file.path, weights="compact", expected_sha256=None)
