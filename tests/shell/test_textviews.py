"""Unit tests of the shared text views (explorer/shell/textviews.py; no Streamlit)."""

import re

import numpy as np
import pytest

from explorer.shell import i18n
from explorer.shell.textviews import (
    ascii_heatmap,
    dim_labels,
    fmt,
    head_labels,
    integer_formula,
    latex_text,
    layer_labels,
    md_code,
    weighted_sum_latex,
)


def test_text_views():
    assert fmt(-0.00001) == "0.0000" and fmt(float("nan")) == "—"
    art = ascii_heatmap(np.array([[1.0, 0.0], [0.5, 0.5]]), ["a", "bb"])
    assert art.splitlines()[1] == " a █  " and art.splitlines()[2] == "bb ▒ ▒"
    assert latex_text("a_b$&{}") == r"a\_b\$\&\{\}"
    tex = weighted_sum_latex("x", np.array([0.25, 0.75]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.25, 0.75]))
    assert "0.250" in tex and "0.750" in tex and tex.startswith(r"\begin{aligned}")


def test_a_formulas_whole_number_is_grouped_by_thin_spaces_in_every_language():
    # a comma is the decimal mark in pt and tr, so "46,080" in a formula read as 46.08 there
    from explorer.shell import i18n

    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            assert integer_formula(46_080) == r"46\,080"
            assert integer_formula(1_382_400) == r"1\,382\,400"
            assert integer_formula(576) == "576"


def test_md_code_shows_any_text_literally():
    """One home for a visitor's text as a Markdown code span (it was in four lessons' model.py)."""
    assert md_code("**x**") == "`**x**`"
    assert md_code("a`b") == "``a`b``"
    assert md_code("``x") == "``` ``x ```"  # a leading backtick is padded off the fence
    assert md_code("x" * 50).endswith("…`") and len(md_code("x" * 50)) == 30 + 3
    assert md_code("x" * 50, limit=None) == "`" + "x" * 50 + "`"
    assert md_code("a \n\t b") == "`a b`" and md_code("") == "`  `"  # padded: an empty span would not be code


@pytest.mark.parametrize(("lang", "word"), [("en", "dim"), ("pt", "dim"), ("tr", "boyut")])
def test_dim_labels_name_a_vectors_components_in_each_language(lang, word):
    """One home for the component labels (causal, quiz, two_sentences and the walkthrough had their own)."""
    with i18n.using(lang):
        assert dim_labels(3) == [f"{word} 0", f"{word} 1", f"{word} 2"]
        assert dim_labels(np.array([0, 8, 16])) == [f"{word} 0", f"{word} 8", f"{word} 16"]  # a sampled axis
    assert dim_labels(0) == []


def test_a_weighted_sums_left_out_terms_are_counted_in_the_language():
    """The note under a long weighted sum (more keys than the 8 terms shown) is a sentence: translated, plural by
    CLDR (it was English on every page)."""

    def formula(n_keys: int, lang: str) -> str:
        w = np.full(n_keys, 1 / n_keys)
        with i18n.using(lang):
            return weighted_sum_latex("x", w, np.eye(n_keys, 2), w @ np.eye(n_keys, 2), max_terms=8)

    def left_out(n_keys: int, lang: str) -> str:
        return re.search(r"\\dots\\ \(\\text\{([^}]*)\}\)", formula(n_keys, lang))[1]

    assert "dots" not in formula(8, "en")
    assert left_out(9, "en") == "1 smaller term" and left_out(10, "en") == "2 smaller terms"
    assert left_out(9, "pt") == "1 termo menor" and left_out(10, "pt") == "2 termos menores"
    assert left_out(9, "tr") == "1 küçük terim daha" and left_out(10, "tr") == "2 küçük terim daha"


@pytest.mark.parametrize(("lang", "layer", "head"), [("en", "layer", "head"), ("pt", "camada", "cabeça"),
                                                     ("tr", "katman", "kafa")])
def test_layer_and_head_labels_name_a_head_tables_rows_and_columns_in_each_language(lang, layer, head):
    """One home for a layer × head table's labels (causes, sinks, real_model and multihead had their own)."""
    with i18n.using(lang):
        assert layer_labels(2) == [f"{layer} 0", f"{layer} 1"]
        assert head_labels([3, np.int64(15)]) == [f"{head} 3", f"{head} 15"]  # a window of heads
