"""AppTest of the two-sentences page."""

import numpy as np
import pytest

from tests.apptest_utils import app_at, assert_clean, figures
from tests.lessons.test_languages import check_every_language

PAGE = "two_sentences"


def z(at, key):
    return np.array(figures(at)[key]["data"][0]["z"], dtype=float)


@pytest.mark.slow
def test_defaults_compare_cat_and_dog_with_shared_words_marked():
    at = app_at(PAGE)
    assert_clean(at)
    figs = figures(at)
    for key in ("two_fig_weights_a", "two_fig_weights_b", "two_fig_diff", "two_fig_entropy", "two_fig_pe",
                "two_fig_repeat_rows"):
        assert key in figs, key
    assert at.text_input(key="two_sentence").value == "The dog sat on the rug"
    assert any("per-token" in i.value for i in at.info)  # the sidebar says "lesson" by default
    ticks = figs["two_fig_weights_a"]["layout"]["yaxis"]["ticktext"]
    assert ticks == ["The (0) ★", "cat (1)", "sat (2) ★", "on (3) ★", "the (4) ★", "mat (5)"]
    words = at.dataframe[0].value  # ★ in the word's own cell: three columns fit a 390 px phone (issue 47: five)
    assert list(words.columns) == ["A", "B", "same word here?"]
    assert list(words["A"]) == ["The ★", "cat", "sat ★", "on ★", "the ★", "mat"] and words["B"][1] == "dog"
    np.testing.assert_allclose(z(at, "two_fig_diff"), z(at, "two_fig_weights_a") - z(at, "two_fig_weights_b"),
                               atol=1e-12)
    assert figs["two_fig_diff"]["data"][0]["zmid"] == 0.0
    assert "two_fig_order_original" not in figs  # shuffle is off
    assert any("Shuffle the words" in i.value for i in at.info)


@pytest.mark.slow
def test_same_sentence_twice_gives_exactly_zero():
    at = app_at(PAGE, query={"two_sentence": "The cat sat on the mat"})
    assert_clean(at)
    assert np.all(z(at, "two_fig_diff") == 0.0)
    assert any("exactly 0.0" in s.value for s in at.success)


@pytest.mark.slow
def test_different_lengths_compare_the_common_length():
    at = app_at(PAGE)
    at.text_input(key="two_sentence").set_value("a dog barked").run()
    assert_clean(at)
    assert z(at, "two_fig_weights_a").shape == (3, 3) and z(at, "two_fig_weights_b").shape == (3, 3)
    assert any("different lengths" in i.value and "first 3" in i.value for i in at.info)


@pytest.mark.slow
def test_empty_second_sentence_keeps_last_valid_and_empty_first_prompts():
    at = app_at(PAGE)
    at.text_input(key="two_sentence").set_value("").run()
    assert_clean(at)
    assert any("Sentence B is empty" in w.value for w in at.warning)
    assert z(at, "two_fig_weights_b").shape == (6, 6)  # the last valid B
    fresh = app_at(PAGE, query={"two_sentence": ""})
    assert_clean(fresh)
    assert "two_fig_weights_b" not in figures(fresh) and "two_fig_pe" in figures(fresh)
    first = app_at(PAGE, session={"sentence": "  "})
    assert not first.exception and any("Type a sentence" in i.value for i in first.info)


def test_shuffle_on_without_positional_encoding_puts_back_exactly():
    at = app_at(PAGE, query={"two_shuffle": "true", "two_shuffle_seed": "5"})
    assert_clean(at)
    assert not at.warning
    np.testing.assert_allclose(z(at, "two_fig_order_unpermuted"), z(at, "two_fig_order_original"), atol=1e-12)
    assert not np.allclose(z(at, "two_fig_order_shuffled"), z(at, "two_fig_order_original"))
    assert any("float rounding" in s.value for s in at.success)
    assert any("identical" in s.value for s in at.success)  # the two copies of "the" in the demo


@pytest.mark.slow
def test_positional_encoding_breaks_both_facts():
    at = app_at(PAGE, query={"two_shuffle": "true", "positional": "true"})
    assert_clean(at)
    gap = np.abs(z(at, "two_fig_order_unpermuted") - z(at, "two_fig_order_original")).max()
    assert gap > 1e-2
    assert sum("With positional encoding" in w.value for w in at.warning) == 2
    rows = z(at, "two_fig_repeat_rows")
    assert np.abs(rows[0] - rows[1]).max() > 1e-3
    pe = z(at, "two_fig_pe")
    assert pe.shape == (6, 8) and pe[0].tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


@pytest.mark.slow
def test_bad_link_values_warn_and_markup_is_escaped():
    at = app_at(PAGE, query={"two_shuffle_seed": "-4", "two_shuffle": "maybe"})
    assert not at.exception
    shown = " ".join(w.value for w in at.warning)
    assert "`two_shuffle_seed=-4`" in shown and "`two_shuffle=maybe`" in shown
    at = app_at(PAGE, query={"two_sentence": "<b>x</b> **y** dog"})
    assert_clean(at)
    ticks = figures(at)["two_fig_weights_b"]["layout"]["xaxis"]["ticktext"]
    assert ticks[0].startswith("&lt;") and "<b>" not in "".join(ticks)


# --- in every language: the branches no manifest state reaches (tests/lessons/test_languages.py checks the rest) ---

LONG_B = " ".join(f"w{i}" for i in range(70))  # more than settings.MAX_TOKENS (64) tokens
LANGUAGE_STATES = {  # each with the English words that prove it was reached
    "changed-b": ({"two_sentence": "a dog barked"}, "The sentences have different lengths"),
    "same-sentence": ({"two_sentence": "The cat sat on the mat"}, "Same sentence twice"),
    "shuffled": ({"two_shuffle": "true", "two_shuffle_seed": "5"}, "equals the original to float rounding"),
    "positional": ({"two_shuffle": "true", "positional": "true"}, "Each word now carries its position"),
    "empty-b": ({"two_sentence": ""}, "Sentence B is empty"),
    "long-b": ({"two_sentence": LONG_B}, "Sentence B has 70 tokens"),
}


def all_text(at) -> str:
    return " ".join(str(e.value).replace("*", "") for kind in ("markdown", "caption", "info", "warning", "success",
                                                               "text") for e in getattr(at, kind))


@pytest.mark.slow
@pytest.mark.parametrize("state", list(LANGUAGE_STATES))
def test_every_branch_is_written_in_every_language(state):
    query, english = LANGUAGE_STATES[state]
    runs = check_every_language(PAGE, query)
    assert english in all_text(runs["en"])
    if state == "same-sentence":  # exactly zero, in the language's words
        for lang, word in (("pt", "exatamente 0,0"), ("tr", "tam olarak 0,0")):
            assert any(word in s.value for s in runs[lang].success), lang


TWINS = {"pt": ("O gato sentou no tapete", "O cachorro sentou no tapete"),
         "tr": ("Kedi paspasın üzerine oturdu", "Köpek paspasın üzerine oturdu")}


@pytest.mark.slow
def test_sentence_b_has_a_translated_twin_one_click_away_and_the_english_default_stays():
    en = app_at(PAGE)
    assert not [b for b in en.main.button if b.key == "two_sentence_twin"]  # English: the lesson's sentences only
    for lang, (twin_a, twin_b) in TWINS.items():
        at = app_at(PAGE, query={"lang": lang, "sentence": twin_a})
        assert_clean(at)
        assert at.text_input(key="two_sentence").value == "The dog sat on the rug"  # the default is the lesson's
        assert twin_b in at.button(key="two_sentence_twin").label
        at.button(key="two_sentence_twin").click().run()
        assert_clean(at)
        assert at.text_input(key="two_sentence").value == twin_b
        assert not [b for b in at.main.button if b.key == "two_sentence_twin"]  # shown only while it would change B
        ticks = figures(at)["two_fig_weights_b"]["layout"]["yaxis"]["ticktext"]
        shared = [t for t in ticks if t.endswith("★")]  # the words the twins share, with their letters
        assert shared and all(t.split(" (")[0] in twin_a.split() for t in shared), ticks
        assert len(shared) == len(twin_b.split()) - 1  # every word but the animal
