"""AppTest of the causal-mask page."""

import numpy as np
import pytest

from tests.apptest_utils import app_at, assert_clean, figures
from tests.lessons.test_languages import check_every_language

PAGE = "causal"


def z(at, key):
    data = figures(at)[key]["data"][0]["z"]
    return np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)


def texts(at):
    return " ".join(str(e.value) for kind in ("success", "warning", "info", "markdown", "error")
                    for e in getattr(at, kind))


@pytest.mark.slow
def test_defaults_side_by_side_masks_and_no_peeking():
    at = app_at(PAGE)
    assert_clean(at)
    figs = figures(at)
    for key in ("causal_fig_side_bidirectional", "causal_fig_side_causal", "causal_fig_bool", "causal_fig_additive",
                "causal_fig_scores", "causal_fig_weights", "causal_fig_output", "causal_fig_peek_bars",
                "causal_fig_mask_combined", "causal_fig_row_bar"):
        assert key in figs, key
    causal = z(at, "causal_fig_side_causal")
    assert np.all(np.isnan(causal[np.triu_indices(6, 1)]))  # masked cells are gaps, not 0-coloured cells
    np.testing.assert_allclose(causal[0, 0], 1.0)
    assert not np.isnan(z(at, "causal_fig_side_bidirectional")).any()
    assert np.asarray(figs["causal_fig_bool"]["data"][0]["z"]).tolist() == np.tri(6, dtype=int).tolist()
    assert "−∞" in figs["causal_fig_additive"]["data"][0]["text"][0]
    assert any("bit-for-bit unchanged" in s.value for s in at.success)
    assert any("Bidirectional" in w.value for w in at.warning)
    bars = figs["causal_fig_peek_bars"]["data"]
    assert bars[1]["text"][:3] == ["0 (exact)"] * 3 and "0 (exact)" not in bars[0]["text"][:3]


@pytest.mark.slow
def test_causal_off_shows_bidirectional_pipeline():
    at = app_at(PAGE)
    at.toggle(key="causal_on").set_value(False).run()
    assert_clean(at)
    figs = figures(at)
    assert figs["causal_fig_weights"]["layout"]["title"]["text"].startswith("bidirectional")
    assert not np.isnan(z(at, "causal_fig_weights")).any()
    assert np.all(np.asarray(figs["causal_fig_bool"]["data"][0]["z"]) == 1)


@pytest.mark.slow
def test_every_padding_amount_including_everything():
    at = app_at(PAGE)
    for p in range(7):
        at.slider(key="causal_padding").set_value(p).run()
        assert_clean(at)
        w = z(at, "causal_fig_weights")
        if p:
            assert np.all(np.isnan(w[:, 6 - p:])), p  # padded key columns are masked
        n_badges = sum("fully masked" in a["text"] for a in figures(at)["causal_fig_weights"]["layout"].get(
            "annotations", []))
        if p < 6:
            assert n_badges == 0, p
            np.testing.assert_allclose(np.nansum(w, axis=1), 1.0, atol=1e-9)
    # p = n: every query is fully masked, zero output, a badge on every row, never NaN
    assert n_badges == 6
    np.testing.assert_array_equal(z(at, "causal_fig_output"), 0.0)
    assert "fully masked: no key to attend to" in texts(at)
    at.toggle(key="causal_on").set_value(False).run()
    assert_clean(at)
    np.testing.assert_array_equal(z(at, "causal_fig_output"), 0.0)


@pytest.mark.slow
def test_query_link_holds_the_label_and_opens_without_a_warning():
    at = app_at(PAGE, query={"causal_query": "on (3)"})
    assert_clean(at)
    assert at.selectbox(key="causal_query").value == "on (3)"
    assert not [w.value for w in at.warning if "link" in w.value]
    at = app_at(PAGE, query={"causal_query": "3"})  # not a label: warned, first token
    assert any("causal_query=3" in w.value for w in at.warning)
    assert at.selectbox(key="causal_query").value == "The (0)"


@pytest.mark.slow
@pytest.mark.parametrize("t, n_pad", [(5, 0), (2, 3), (2, 6), (0, 5)])
def test_no_peeking_claims_nothing_when_nothing_could_leak(t, n_pad):
    """t at the end, or every token after t padded: an unchanged causal output is no evidence of the mask."""
    at = app_at(PAGE, query={"causal_t": str(t), "causal_padding": str(n_pad)})
    assert_clean(at)
    assert not any("Nothing leaks" in s.value for s in at.success)
    assert any("shows nothing here" in i.value for i in at.info), [i.value for i in at.info]


@pytest.mark.slow
def test_no_peeking_verdict_when_the_mask_is_tested():
    at = app_at(PAGE, query={"causal_t": "2", "causal_padding": "2"})  # tokens 3 and 4 replaced, not padded
    assert_clean(at)
    assert any("Nothing leaks" in s.value for s in at.success)
    assert not any("shows nothing here" in i.value for i in at.info)


@pytest.mark.parametrize("t", [0, 5])
def test_t_at_both_ends(t):
    at = app_at(PAGE, query={"causal_t": str(t)})
    assert_clean(at)
    assert not at.warning or all("link" not in w.value for w in at.warning)
    bars = figures(at)["causal_fig_peek_bars"]["data"]
    assert bars[1]["text"][: t + 1] == ["0 (exact)"] * (t + 1)
    if t == 5:
        assert any("nothing was replaced" in i.value for i in at.info)


@pytest.mark.slow
def test_bad_link_value_warns():
    at = app_at(PAGE, query={"causal_t": "99", "causal_padding": "x"})
    assert not at.exception
    shown = " ".join(w.value for w in at.warning)
    assert "`causal_t=99`" in shown and "`causal_padding=x`" in shown


@pytest.mark.slow
def test_shorter_sentence_after_large_padding_and_one_token():
    at = app_at(PAGE)
    at.slider(key="causal_padding").set_value(6).run()
    at.slider(key="causal_t").set_value(5).run()
    at.selectbox(key="causal_query").select_index(5).run()
    at.session_state["sentence"] = "a b"
    at.run()
    assert_clean(at)
    assert z(at, "causal_fig_weights").shape == (2, 2)
    assert not at.warning or all("link" not in w.value for w in at.warning)
    at.session_state["sentence"] = "solo"
    at.run()
    assert_clean(at)
    assert z(at, "causal_fig_weights").shape == (1, 1)


@pytest.mark.slow
def test_empty_sentence_prompts_and_markup_is_escaped():
    at = app_at(PAGE, session={"sentence": " "})
    assert not at.exception and any("Type a sentence" in i.value for i in at.info)
    at = app_at(PAGE, session={"sentence": "<b>x</b> **y**"})
    assert_clean(at)
    ticks = figures(at)["causal_fig_bool"]["layout"]["yaxis"]["ticktext"]
    assert ticks[0].startswith("&lt;") and "<b>" not in "".join(ticks)


@pytest.mark.slow
def test_one_token_asks_for_a_longer_sentence_not_an_impossible_move():
    at = app_at("causal", session={"sentence": "a"})
    assert_clean(at)
    text = " ".join(str(e.value) for e in [*at.info, *at.success, *at.warning])
    assert "Move t to the left" not in text and "two or more tokens" in text, text


# --- in every language: the branches no manifest state reaches (tests/lessons/test_languages.py checks the rest) ---

LANGUAGE_STATES = {  # each with its own text (the English words that prove the branch was reached)
    "off-padded": ({"causal_on": "false", "causal_padding": "3"}, None, "in the bidirectional weights"),
    "pad-1-t-0": ({"causal_padding": "1", "causal_t": "0"}, None, "last 1 token is padding"),
    "pad-2": ({"causal_padding": "2"}, None, "Padded key columns"),
    "pad-all": ({"causal_padding": "6"}, None, "every row is fully masked"),
    "t-last": ({"causal_t": "5"}, None, "Move t to the left"),
    "t-0-pad-5": ({"causal_t": "0", "causal_padding": "5"}, None, "Reduce the padding"),
    "empty": ({}, {"sentence": " "}, "Type a sentence"),
}


@pytest.mark.slow
@pytest.mark.parametrize("state", list(LANGUAGE_STATES))
def test_every_branch_is_written_in_every_language(state):
    query, session, english = LANGUAGE_STATES[state]
    runs = check_every_language(PAGE, query, session)
    en = runs["en"]
    shown = texts(en) + " ".join(str(e.value) for kind in ("caption", "text") for e in getattr(en, kind))
    assert english in shown
    if state == "pad-1-t-0":  # numbers inside code spans (the checks) keep the machine-readable point
        assert all(any("`0.0`" in m.value for m in runs[lang].markdown) for lang in ("pt", "tr"))
