"""The SentencePiece-style tokenizer outside Gemma, and the BOS flag on a byte-level file, against live
``transformers`` (a test reference: it fails, never skips, when missing) reading the same tiny GGUF: token ids on the
hard texts and decoding. Gemma's own (the gemma3 model on it) is in ``test_gemma3_tiny.py``.

A ``llama`` file with a SentencePiece vocabulary (Llama 2, TinyLlama, Mistral's files) is read as transformers'
``LlamaTokenizer``: one ``▁`` before the text (none when it starts with a space), one space dropped again when
decoding (so a text that starts with a space loses one), merges sorted by the file's scores.
"""

from __future__ import annotations

import pytest

from attention import llama
from tests.conftest import require
from tests.core.llama_support import (
    HARD_TEXTS,
    TINY,
    assert_token_ids_match,
    qwen_vocabulary,
    sentencepiece_vocabulary,
    write_tiny_gguf,
)

WIDE = {**TINY, "context_length": 128}  # room for the longest hard text


def _tokenizer(path):
    return require("transformers").AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.mark.slow
@pytest.mark.torch
def test_a_llama_file_with_a_sentencepiece_vocabulary_matches_transformers(tmp_path):
    path = tmp_path / "llama-sp.gguf"
    write_tiny_gguf(path, config=WIDE, vocabulary=sentencepiece_vocabulary(add_bos=None))  # flag absent: BOS
    ours = llama.load(path, expected_sha256=None)
    assert ours.tokenizer.bos_id == 2 and ours.tokenizer.prefix_space
    assert ours.token_strings(ours.encode("the cat"))[:2] == ["<bos>", " the"]  # the ▁ put before the text
    tokenizer = _tokenizer(path)
    leading = [text for text in HARD_TEXTS if text.startswith(" ")] + ["  two leading spaces"]
    assert_token_ids_match(ours, tokenizer, [text for text in HARD_TEXTS if text not in leading] + ["x"])
    for text in leading:  # a text that starts with a space gets no second ▁; decoding drops one: one space lost
        ids = ours.encode(text)
        assert ids == tokenizer(text)["input_ids"], text
        assert ours.decode(ids[1:]) == tokenizer.decode(ids[1:]) == text[1:]
    for text in HARD_TEXTS:
        ids = ours.encode(text)[1:]
        assert ours.decode_partial(ids).text == ours.decode(ids)


@pytest.mark.slow
@pytest.mark.torch
def test_a_byte_level_file_that_asks_for_bos_matches_transformers(tmp_path):
    path = tmp_path / "qwen-bos.gguf"
    vocabulary = qwen_vocabulary()
    write_tiny_gguf(path, config=WIDE, vocabulary=type(vocabulary)(**{**vocabulary.__dict__, "add_bos": True}))
    ours = llama.load(path, expected_sha256=None)
    assert ours.tokenizer.bos_id == vocabulary.bos_id
    assert ours.encode("the cat")[0] == vocabulary.bos_id
    assert_token_ids_match(ours, _tokenizer(path), HARD_TEXTS)
