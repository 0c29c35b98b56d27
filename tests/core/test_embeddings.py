"""Tests of ``attention.embeddings``: tokenizer, embeddings, sinusoidal positional encoding."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst

from attention import EMBEDDING_MODES, embed_tokens, sinusoidal_positional_encoding, tokenize

REPO = Path(__file__).resolve().parents[2]

# --- tokenize ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The cat sat on the mat", ["The", "cat", "sat", "on", "the", "mat"]),
        ("The cat sat on the mat.", ["The", "cat", "sat", "on", "the", "mat", "."]),
        ("Hello, World!", ["Hello", ",", "World", "!"]),
        ("Ela disse: «Olá!»", ["Ela", "disse", ":", "«", "Olá", "!", "»"]),
        ("Kedi halıya oturdu.", ["Kedi", "halıya", "oturdu", "."]),
        ("Привет мир 世界 café", ["Привет", "мир", "世界", "café"]),
        ("I ❤️ it 🙂", ["I", "❤️", "it", "🙂"]),
        ("ok 👍🏽 👨\u200d👩\u200d👧!", ["ok", "👍🏽", "👨\u200d👩\u200d👧", "!"]),
        ("<b>bold</b>", ["<", "b", ">", "bold", "<", "/", "b", ">"]),
        ("  spaced\tout\n", ["spaced", "out"]),
        ("", []),
    ],
)
def test_tokenize_keeps_case_punctuation_emoji_and_scripts(text, tokens):
    assert tokenize(text) == tokens


def test_tokenize_rejects_non_strings():
    with pytest.raises(ValueError, match=r"text must be a str, got bytes"):
        tokenize(b"abc")


# --- embed_tokens -----------------------------------------------------------------------


def test_lesson_mode_is_the_lessons_random_rows():
    X = embed_tokens(["The", "cat", "sat"], 8, 42, "lesson")
    np.testing.assert_array_equal(X, np.random.default_rng(42).normal(0, 1, (3, 8)))
    assert X.dtype == np.float64
    assert embed_tokens(["a", "b"], 8, 42).shape == (2, 8)  # lesson is the default
    assert EMBEDDING_MODES == ("lesson", "per-token")


def test_per_token_same_word_same_vector_across_sentences():
    a = embed_tokens(tokenize("The cat sat on the mat"), 8, 42, "per-token")
    b = embed_tokens(tokenize("A cat ran after the dog"), 8, 42, "per-token")
    np.testing.assert_array_equal(a[1], b[1])  # "cat"
    np.testing.assert_array_equal(a[4], b[4])  # "the"
    assert not np.array_equal(a[0], a[4])  # case is kept: "The" != "the"
    assert not np.array_equal(a[1], embed_tokens(["cat"], 8, 43, "per-token")[0])  # the seed matters


def test_per_token_scheme_is_sha256_of_seed_and_token():
    """Documented scheme: default_rng(first 8 bytes of sha256(f"{seed}\\0{token}"), little-endian)."""
    digest = hashlib.sha256("42\x00🙂".encode()).digest()
    expected = np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(0.0, 1.0, 5)
    np.testing.assert_array_equal(embed_tokens(["🙂"], 5, 42, "per-token")[0], expected)


# Computed once (numpy 2.4.6); equal in every process, whatever PYTHONHASHSEED is.
EXPECTED_PER_TOKEN = np.array([
    [-0.4395369033108494, -0.6626831887555972, -2.461564638758254, 0.6255892543528915],  # "cat"
    [-0.12580082093189193, 2.8902086389401425, 0.9368525010742718, -0.1995255738959778],  # "The"
])


def test_per_token_hard_coded_numbers():
    np.testing.assert_allclose(embed_tokens(["cat", "The"], 4, 42, "per-token"), EXPECTED_PER_TOKEN,
                               rtol=0, atol=1e-15)


def test_per_token_is_stable_across_processes():
    """Another interpreter with a different str-hash salt gives the very same vectors (as this one: above)."""
    code = ("import json; from attention import embed_tokens; "
            "print(json.dumps([hash('cat'), embed_tokens(['cat', 'The'], 4, 42, 'per-token').tolist()]))")
    hash_seed = "1" if os.environ.get("PYTHONHASHSEED") == "12345" else "12345"
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            cwd=REPO, timeout=60, check=True)
    their_hash, vectors = json.loads(result.stdout)
    assert their_hash != hash("cat")  # the other interpreter salts str hashes differently
    np.testing.assert_array_equal(np.array(vectors), EXPECTED_PER_TOKEN)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: embed_tokens([], 8), r"tokens must hold at least one token"),
        (lambda: embed_tokens(tokenize("   "), 8), r"tokens must hold at least one token"),
        (lambda: embed_tokens(["a"], 0), r"d_model must be a positive integer, got 0"),
        (lambda: embed_tokens(["a"], -3, mode="per-token"), r"d_model must be a positive integer, got -3"),
        (lambda: embed_tokens(["a"], 4, mode="random"), r"mode must be one of \('lesson', 'per-token'\)"),
        (lambda: sinusoidal_positional_encoding(0, 4), r"n must be a positive integer, got 0"),
        (lambda: sinusoidal_positional_encoding(3, 0), r"d_model must be a positive integer, got 0"),
    ],
)
def test_embedding_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- sinusoidal positional encoding (Vaswani et al. 2017, section 3.5) ------------------


@pytest.mark.parametrize(("n", "d_model"), [(1, 1), (6, 8), (5, 7), (50, 16), (3, 3)])
def test_sinusoidal_pe_matches_formula(n, d_model):
    pe = sinusoidal_positional_encoding(n, d_model)
    assert pe.shape == (n, d_model) and pe.dtype == np.float64
    for p in range(n):
        for c in range(d_model):
            i = c // 2
            angle = p / 10000 ** (2 * i / d_model)
            expected = np.sin(angle) if c % 2 == 0 else np.cos(angle)
            assert pe[p, c] == pytest.approx(expected, abs=1e-12), (p, c)


def test_sinusoidal_pe_first_position_and_odd_width():
    pe = sinusoidal_positional_encoding(4, 5)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0])  # sin(0), cos(0), ...; last column is a sin
    np.testing.assert_allclose(pe[:, 4], np.sin(np.arange(4) / 10000 ** (4 / 5)), atol=1e-15)


# --- combining marks stay in their word (any script) -------------------------------------------------

MARKED_WORDS = ["café", "naïve", "Tiếng", "Việt", "नमस्ते", "दुनिया", "ভাষা", "தமிழ்", "ไทย", "مُحَمَّد",
                "שָׁלוֹם", "ḱṓ", "Ǆemal", "a\u0308\u0301b"]


def test_a_combining_accent_stays_in_its_word():
    assert tokenize("cafe\u0301 noir") == ["café", "noir"]


@pytest.mark.parametrize("word", MARKED_WORDS)
def test_words_written_with_marks_are_one_token(word):
    assert tokenize(f"{word} x") == [unicodedata.normalize("NFC", word), "x"]


@given(hst.lists(hst.sampled_from(MARKED_WORDS + ["the", "cat", ",", "🙂", "👍🏽"]), min_size=1, max_size=8))
def test_composed_and_decomposed_forms_give_the_same_tokens(words):
    text = " ".join(words)
    assert tokenize(unicodedata.normalize("NFD", text)) == tokenize(unicodedata.normalize("NFC", text))


@given(hst.text(alphabet=hst.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_no_token_is_only_combining_marks(text):
    for token in tokenize(text):
        assert not all(unicodedata.category(ch).startswith("M") for ch in token), (text, token)
        assert not any(ch.isspace() for ch in token), (text, token)
