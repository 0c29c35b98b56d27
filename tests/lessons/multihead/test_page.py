"""AppTest of the multi-head page (explorer/lessons/multihead.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import streamlit as st

import attention as A
from explorer.lessons.multihead import model as smh
from tests.apptest_utils import app_at, assert_clean, chart_elements, figure_array, figures, layout, lesson_page
from tests.lessons.test_languages import check_every_language

PAGE = "multihead"
TOKENS = ["The", "cat", "sat", "on", "the", "mat"]


def grid_z(at) -> list[np.ndarray]:
    """The per-head weight maps of the grid, in head order (masked cells as NaN)."""
    fig = figures(at)["mh_fig_heads"]
    return [np.array(t["z"], dtype=float) for t in fig["data"] if t["type"] == "heatmap"]


def z_of(at, key: str) -> np.ndarray:
    return np.array(figures(at)[key]["data"][0]["z"], dtype=float)


def expected(d_model: int, n_heads: int, *, seed: int = 42, is_causal: bool = False, tokens=TOKENS):
    """The page's layer: X and W_q, W_k, W_v, W_o both from the sidebar's seed (issue 18, item 5)."""
    X = A.embed_tokens(tokens, d_model, seed, "lesson")
    return A.MultiHeadAttention(d_model, n_heads, seed=seed).steps(X, is_causal=is_causal)


@pytest.mark.slow
def test_defaults():
    at = app_at(PAGE)
    assert_clean(at)
    assert not at.warning
    assert at.selectbox(key="n_heads").value == 2 and at.selectbox(key="n_heads").options == ["1", "2", "4", "8"]
    r = expected(8, 2)
    z = grid_z(at)
    assert len(z) == 2
    for h in range(2):
        np.testing.assert_allclose(z[h], r.weights[h], rtol=0, atol=1e-12)
    np.testing.assert_allclose(z_of(at, "mh_fig_mean"), r.mean_weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(z_of(at, "mh_fig_output"), r.output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(z_of(at, "mh_fig_concat"), r.concat, rtol=0, atol=1e-12)
    keys = set(figures(at))
    assert {"mh_fig_W_q", "mh_fig_W_k", "mh_fig_W_v", "mh_fig_W_o", "mh_fig_split_x", "mh_fig_split_heads",
            "mh_fig_heads", "mh_fig_mean", "mh_fig_head_outputs", "mh_fig_entropy", "mh_fig_similarity",
            "mh_fig_query_heads"} <= keys
    mean_title = figures(at)["mh_fig_mean"]["layout"]["title"]["text"]
    assert mean_title == "MEAN of 2 heads"
    assert any("average, not a head" in i.value and "average_attn_weights=True" in i.value for i in at.info)
    # named by its title, true beside the grid (desktop) and below it (phone); "right-hand" was false on a phone
    assert any(i.value.startswith("**The map titled MEAN is") for i in at.info)
    assert not any("right-hand" in i.value for i in at.info)
    assert [m.value for m in at.metric][2] == "agree"
    assert any("PyTorch" in c.value for c in at.caption)
    # one query, every head: the chosen query's row in each head, and the key each head attends to most
    at.selectbox(key="mh_query").select_index(3).run()
    assert_clean(at)
    np.testing.assert_allclose(z_of(at, "mh_fig_query_heads"), r.weights[:, 3, :], atol=1e-12)
    table = at.dataframe[-1].value
    assert list(table["attends most to"]) == [f"{TOKENS[k]} ({k})" for k in r.weights[:, 3, :].argmax(axis=-1)]


@pytest.mark.slow
def test_every_valid_head_count_for_d_model_8():
    at = app_at(PAGE)
    for n_heads in A.valid_head_counts(8):
        at.selectbox(key="n_heads").set_value(n_heads).run()
        assert_clean(at)
        r = expected(8, n_heads)
        z = grid_z(at)
        assert len(z) == n_heads
        np.testing.assert_allclose(np.stack(z), r.weights, rtol=0, atol=1e-12)
        np.testing.assert_allclose(z_of(at, "mh_fig_output"), r.output, rtol=0, atol=1e-12)
        np.testing.assert_allclose(z_of(at, "mh_fig_similarity"), smh.head_overlap(r.weights), atol=1e-12)
        bands = [s for s in figures(at)["mh_fig_W_q"]["layout"]["shapes"] if s["type"] == "rect"]
        assert len(bands) == n_heads
        assert [m.value for m in at.metric][2] == "agree"
        assert f"d_head = {8 // n_heads}" in " ".join(c.value for c in at.caption)
        if n_heads == 1:  # the mean of one head is that head
            np.testing.assert_allclose(z_of(at, "mh_fig_mean"), z[0], atol=0)
            assert any("With one head, the map titled MEAN is that head" in i.value for i in at.info)


@pytest.mark.slow
def test_d_model_512_with_16_heads_stays_light():
    at = app_at(PAGE, session={"d_model": 512}, query={"n_heads": "16"})
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == 16 and not at.warning
    figs = figures(at)
    grid = [t for t in figs["mh_fig_heads"]["data"] if t["type"] == "heatmap"]
    assert len(grid) == 16
    wq = figs["mh_fig_W_q"]["data"][0]
    assert len(wq["x"]) == 64 and wq["x"][1] == 8  # every 8th column, at its true index
    assert any("one row and column in every 8 is drawn" in c.value for c in at.caption)
    size = sum(len(json.dumps(f)) for f in figs.values())
    assert size < 1_000_000, size
    assert all(df.value.size <= 20_000 for df in at.dataframe)  # 512 × 512 weights: a download, not a table
    assert at.get("download_button"), "W_q etc. should be offered as CSV downloads"
    r = expected(512, 16)
    np.testing.assert_allclose(np.stack([np.array(t["z"], dtype=float) for t in grid]), r.weights, atol=1e-12)


@pytest.mark.slow
def test_causal_on_masks_every_head():
    at = app_at(PAGE)
    at.toggle(key="mh_causal").set_value(True).run()
    assert_clean(at)
    r = expected(8, 2, is_causal=True)
    for h, z in enumerate(grid_z(at)):
        assert np.isnan(z[np.triu_indices(6, 1)]).all()  # future keys: blank (masked), not 0
        np.testing.assert_allclose(z[np.tril_indices(6)], r.weights[h][np.tril_indices(6)], atol=1e-12)
    assert np.isnan(z_of(at, "mh_fig_mean")[0, 1])
    np.testing.assert_allclose(z_of(at, "mh_fig_output"), r.output, atol=1e-12)
    assert [m.value for m in at.metric][2] == "agree"


@pytest.mark.parametrize(("query", "shown", "words"), [
    ({"n_heads": "3", "d_model": "8"}, 2, ["`n_heads=3`", "one of 1, 2, 4, 8", "nearest", "using `n_heads=2`"]),
    ({"n_heads": "7", "d_model": "12"}, 6, ["`n_heads=7`", "one of 1, 2, 3, 4, 6, 12", "using `n_heads=6`"]),
    ({"n_heads": "abc"}, 2, ["`n_heads=abc`", "one of 1, 2, 4, 8", "using `n_heads=2`"]),
    ({"n_heads": "4.0"}, 2, ["`n_heads=4.0`", "using `n_heads=2`"]),  # a number as the app writes it, or the default
    ({"n_heads": "inf"}, 2, ["`n_heads=inf`", "using `n_heads=2`"]),
])
@pytest.mark.slow
def test_non_dividing_link_shows_nearest_and_lists_valid_counts(query, shown, words):
    at = app_at(PAGE, query=query)
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == shown
    assert len(grid_z(at)) == shown
    text = " ".join(w.value for w in at.warning)
    for word in words:
        assert word in text, (word, text)
    at.selectbox(key="n_heads").set_value(1).run()  # the learner moves on; the link note stays until dismissed
    assert_clean(at)
    assert len(grid_z(at)) == 1


@pytest.mark.slow
def test_valid_link_is_used_without_warning():
    at = app_at(PAGE, query={"n_heads": "4", "seed": "5", "mh_causal": "true"})
    assert_clean(at)
    assert not at.warning
    assert at.selectbox(key="n_heads").value == 4
    np.testing.assert_allclose(np.stack(grid_z(at))[:, 1, :2], expected(8, 4, seed=5, is_causal=True).weights[:, 1, :2],
                               atol=1e-12)


@pytest.mark.slow
def test_the_weights_use_the_sidebar_seed_and_an_old_weight_seed_link_warns():
    """Issue 18, item 5: the page's own "Weight seed" (mh_seed) beside the sidebar's seed is gone; the sidebar's seed
    seeds W_q, W_k, W_v, W_o, the sidebar says d_k is not used here, and an old link's mh_seed still opens the page
    with a warning (and leaves the link)."""
    at = app_at(PAGE, query={"mh_seed": "5", "seed": "7"})
    assert_clean(at)
    assert not [w for w in at.number_input if w.key == "mh_seed"]
    warnings = " ".join(w.value for w in at.warning)
    assert "`mh_seed` (`5`) is not used any more" in warnings and "sidebar's seed" in warnings, warnings
    assert "mh_seed" not in at.query_params
    np.testing.assert_allclose(np.stack(grid_z(at)), expected(8, 2, seed=7).weights, atol=1e-12)
    assert set(at.session_state["_not_used"]) == {"d_k"}
    assert "d_model / n_heads = 8 / 2 = 4" in at.session_state["_not_used"]["d_k"]
    assert any("Not used on this page" in c.value and "d_head" in c.value for c in at.sidebar.caption)
    at.session_state["d_k"] = 9  # the sidebar's d_k changes nothing here
    before = figures(at)
    at.run()
    assert figures(at) == before


@pytest.mark.slow
def test_changing_d_model_to_a_non_multiple_moves_to_the_nearest_count():
    at = app_at(PAGE, session={"d_model": 12})
    at.selectbox(key="n_heads").set_value(6).run()
    assert len(grid_z(at)) == 6
    at.session_state["d_model"] = 8
    at.run()
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == 4
    assert len(grid_z(at)) == 4
    assert any("n_heads = 6 does not divide the new d_model = 8" in w.value and "1, 2, 4, 8" in w.value
               for w in at.warning)


def test_empty_sentence_prompts():
    empty = app_at(PAGE, session={"sentence": "  "})
    assert not empty.exception
    assert any("Type a sentence" in i.value for i in empty.info)
    assert not chart_elements(empty)


def test_empty_sentence_keeps_the_link_warnings():
    """The empty-sentence prompt stops the page; the link's warnings must still be shown above it."""
    at = app_at(PAGE, query={"d_k": "abc"}, session={"sentence": "  "})
    assert_clean(at)
    assert any("Type a sentence" in i.value for i in at.info)
    assert any("d_k=abc" in w.value for w in at.warning), [w.value for w in at.warning]


@pytest.mark.slow
def test_markup_tokens_are_escaped():
    at = app_at(PAGE, session={"sentence": "<b>bold</b> & x"})
    assert_clean(at)
    for key in ("mh_fig_mean", "mh_fig_heads", "mh_fig_query_heads"):
        xaxis = figures(at)[key]["layout"]["xaxis"]  # every key named, or named as Plotly picks ticks (issue 18)
        ticks = xaxis.get("ticktext") or [xaxis["labelalias"][str(i)]
                                   for i in range(sum(k.isdigit() for k in xaxis["labelalias"]))]
        assert ticks[0] == "&lt; (0)" and "<" not in "".join(ticks)
        assert "&amp; (8)" in json.dumps(figures(at)[key]["data"][0]["customdata"])  # every token in the hover


@pytest.mark.slow
def test_many_heads_show_a_window_of_16_and_skip_the_overlap_matrix():
    at = app_at(PAGE, session={"d_model": 128}, query={"n_heads": "128"})
    assert_clean(at)
    window = at.selectbox(key="mh_head_window")
    assert len(window.options) == 8 and window.value == 0
    window.set_value(112).run()
    assert_clean(at)
    fig = figures(at)["mh_fig_heads"]
    assert len([t for t in fig["data"] if t["type"] == "heatmap"]) == 16
    assert fig["layout"]["annotations"][0]["text"] == "head 112"  # short titles on a grid (issue 18)
    assert "mh_fig_similarity" not in figures(at)
    assert any("head-to-head matrix is not computed" in i.value for i in at.info)
    assert len(figures(at)["mh_fig_entropy"]["data"][0]["x"]) == 128  # diagnostics cover every head


@pytest.mark.slow
def test_page_controls_come_from_the_link():
    """The query token, the numbers' matrix and the head window are in the link like the other controls."""
    # Select boxes with labels keep the label in the link, as the browser writes it.
    at = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_query": "on (3)",
                                                      "mh_numbers_matrix": "W_o", "mh_head_window": "heads 16-31"})
    assert_clean(at)
    assert at.selectbox(key="mh_query").value == "on (3)"
    assert at.radio(key="mh_numbers_matrix").value == "W_o"
    assert at.selectbox(key="mh_head_window").value == 16
    assert figures(at)["mh_fig_heads"]["layout"]["annotations"][0]["text"] == "head 16"
    assert not [w.value for w in at.warning if "link" in w.value]


@pytest.mark.slow
def test_bad_page_control_link_values_warn():
    at = app_at(PAGE, query={"mh_query": "dog (9)", "mh_numbers_matrix": "W_z"})
    assert_clean(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "mh_query=dog (9)" in warnings and "mh_numbers_matrix=W_z" in warnings, warnings
    expander = next(e for e in at.expander if e.label.startswith("Numbers of W_q"))
    assert not [w for w in expander.warning], "a link warning inside a closed expander is not seen"
    assert at.selectbox(key="mh_query").value == "The (0)"


@pytest.mark.slow
def test_fewer_heads_keep_the_last_window_that_exists():
    at = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "64"})
    at.selectbox(key="mh_head_window").set_value(48).run()
    at.selectbox(key="n_heads").set_value(32).run()
    assert_clean(at)
    assert at.selectbox(key="mh_head_window").value == 16


@pytest.mark.slow
def test_page_run_without_the_entrypoint_still_explains_a_bad_link():
    """Without the entrypoint's link snapshot (e.g. a page run on its own) the page still reads the link."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest_utils import ROOT

    at = AppTest.from_file(str(ROOT / lesson_page(PAGE)), default_timeout=60)
    at.query_params["n_heads"] = "6"
    at.run()
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == 4
    assert any("`n_heads=6`" in w.value and "one of 1, 2, 4, 8" in w.value and "using `n_heads=4`" in w.value
               for w in at.warning)


@pytest.mark.slow
def test_a_replayed_page_keeps_its_layout():
    """A rerun replays parts 2-4 from one cached section; every element must land in the same container as when
    drawn (Streamlit replays a section called from another section at the outer one's top level)."""
    at = app_at(PAGE)
    st.cache_data.clear()
    at.run()
    fresh = layout(at)
    assert (1, "Column", "") in fresh and any(d == 2 and key == "mh_fig_concat" for d, _, key in fresh)
    at.run()
    assert layout(at) == fresh


def _entropy(w: np.ndarray) -> np.ndarray:
    logs = np.log(np.where(w > 0, w, 1.0))
    return -(w * logs).sum(axis=-1).mean(axis=-1)


@pytest.mark.parametrize("is_causal", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_part_4_says_the_weights_are_random_with_this_runs_numbers(is_causal):
    """Issue 30: "What each head does" runs on random weights and says so, with the live entropy share and overlap,
    and points to the real model's heads."""
    at = app_at(PAGE, query={"mh_causal": "true"} if is_causal else None)
    assert_clean(at)
    (note,) = [i.value for i in at.info if "random weights" in i.value]
    figs = figures(at)  # the numbers the note must agree with: the entropy bars and the overlap map beside it
    entropy = figure_array(figs["mh_fig_entropy"]["data"][0]["y"])
    overlap_map = figure_array(figs["mh_fig_similarity"]["data"][0]["z"])
    n = len(TOKENS)
    ceiling = np.mean(np.log(np.arange(1, n + 1))) if is_causal else np.log(n)
    share = 100 * entropy.mean() / ceiling
    overlap = overlap_map[~np.eye(len(overlap_map), dtype=bool)].mean()
    assert f"averages {share:.0f}% of the uniform level" in note
    assert f"overlap {overlap:.2f} on average" in note
    assert "](./real-model" in note


def test_the_random_weights_note_with_one_token_and_one_head():
    note = smh.random_weights_note(np.array([0.0]), np.ones((1, 1)), 1, is_causal=False, link="./real-model")
    assert "random weights" in note and "%" not in note and "overlap" not in note


# --- in every language: the branches no manifest state reaches (tests/lessons/test_languages.py checks the rest) ---

@pytest.mark.slow
def test_one_head_with_the_causal_mask_is_written_in_every_language():
    runs = check_every_language(PAGE, {"n_heads": "1", "mh_causal": "true"})
    shown = " ".join(str(e.value) for kind in ("markdown", "caption", "info") for e in getattr(runs["en"], kind))
    assert "With one head, the map titled MEAN is that head" in shown


@pytest.mark.slow
def test_the_random_weights_note_writes_its_numbers_in_the_language():
    en = app_at(PAGE)
    (note_en,) = [i.value for i in en.info if "random weights" in i.value]
    share, overlap = re.search(r"averages (\d+)% .* overlap (\d\.\d\d) on average", note_en).groups()
    for lang, words, shown in (("pt", "pesos aleatórios", f"{share}%"), ("tr", "rastgele ağırlıklarla", f"%{share}")):
        at = app_at(PAGE, query={"lang": lang})
        (note,) = [i.value for i in at.info if words in i.value]
        assert shown in note and overlap.replace(".", ",") in note and overlap not in note
        assert f"lang={lang}" in note  # the link to the real model's lesson keeps the language


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_head_window():
    # An English link's head window opens in Portuguese on the same heads, with no warning; the link then holds the
    # Portuguese label, and a Turkish page opened from it shows the same window.
    at = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_head_window": "heads 16-31", "lang": "pt"})
    assert_clean(at)
    assert at.selectbox(key="mh_head_window").value == 16
    assert list(at.selectbox(key="mh_head_window").options) == ["cabeças 0-15", "cabeças 16-31"]
    assert not at.warning, [w.value for w in at.warning]
    assert figures(at)["mh_fig_heads"]["layout"]["annotations"][0]["text"] == "cabeça 16"
    assert at.query_params["mh_head_window"] == "cabeças 16-31" and at.query_params["lang"] == "pt"
    at.selectbox(key="n_heads").set_value(16).run()
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == 16 and at.query_params["lang"] == "pt"
    assert at.title[0].value == "Atenção multi-cabeça"  # the page stays in Portuguese
    tr = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_head_window": "cabeças 16-31",
                                                      "mh_causal": "true", "lang": "tr"})
    assert_clean(tr)
    assert tr.selectbox(key="mh_head_window").value == 16 and tr.toggle(key="mh_causal").value is True
    assert not tr.warning, [w.value for w in tr.warning]
    assert tr.query_params["mh_head_window"] == "kafalar 16-31"
    # a window no language names is warned about in the run's language, and the first window is shown
    bad = app_at(PAGE, session={"d_model": 64}, query={"n_heads": "32", "mh_head_window": "kafalar 5-9", "lang": "tr"})
    assert_clean(bad)
    assert bad.selectbox(key="mh_head_window").value == 0
    assert any("mh_head_window" in w.value and "geçerli değil" in w.value for w in bad.warning)
