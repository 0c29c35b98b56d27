"""The walkthrough in a real browser: the weights map as drawn (its top left is the first token attending to the
first token; what pointing at a cell reads), the downloads' files, and text typed into the data editor.

Expected numbers come from the app's own pure code (``explorer.shell.settings``), computed here in the test process,
so the browser's chart is checked against an independent run. What the page computes for other settings (a moved
``d_k`` among them) is checked by the AppTests of ``tests/lessons/walkthrough/test_page.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import attention as A
from explorer.shell import settings
from explorer.shell.textviews import fmt
from tests.e2e.conftest import DEFAULTS, WALK_WEIGHTS

pytestmark = pytest.mark.e2e


def expected_weights(sentence: str = DEFAULTS["sentence"], d_model: int = DEFAULTS["d_model"],
                     d_k: int = DEFAULTS["d_k"], seed: int = DEFAULTS["seed"],
                     embedding: str = DEFAULTS["embedding"], positional: bool = DEFAULTS["positional"]) -> np.ndarray:
    tokens = settings.sentence_tokens(sentence).tokens
    return settings.Settings(tokens, d_model, d_k, seed, embedding, positional).steps().weights


def test_the_weights_map_reads_queries_down_and_keys_across_and_the_downloads_hold_its_numbers(st_app):
    """At ``d_k = 6`` (not the default, so the numbers are this run's): the map's top left is the first token attending
    to the first token (rows are queries, columns keys, the y axis downwards), pointing at a cell reads its query,
    key and weight; and the download buttons, which make their files only on click (deferred data), hold the same
    numbers without rerunning the page."""
    import json
    from pathlib import Path

    import pandas as pd

    st_app.open(params={"d_k": 6})
    chart = st_app.chart(WALK_WEIGHTS)
    z = np.array(chart["traces"][0]["z"], dtype=float)
    w = expected_weights(d_k=6)
    tokens = settings.sentence_tokens(DEFAULTS["sentence"]).tokens
    labels = [f"{t} ({i})" for i, t in enumerate(tokens)]
    n = len(tokens)
    assert not np.allclose(w, w.T), "test needs a non-symmetric matrix"
    # Data: row i = query i, column j = key j (not transposed).
    np.testing.assert_allclose(z, w, rtol=1e-9)
    # Axes: first token labels the top row and the left column; the y axis runs downwards.
    assert chart["yaxis"]["ticktext"][0] == labels[0] and chart["xaxis"]["ticktext"][0] == labels[0]
    top_left, bottom_right = st_app.cell_point(WALK_WEIGHTS, 0, 0), st_app.cell_point(WALK_WEIGHTS, n - 1, n - 1)
    assert top_left["y"] < bottom_right["y"], "row 0 (first query) is not at the top"
    assert top_left["x"] < bottom_right["x"], "column 0 (first key) is not at the left"
    # What the learner reads when pointing at the top-left cell, and one off-diagonal cell.
    label = st_app.hover(WALK_WEIGHTS, 0, 0)
    assert label == f"query {labels[0]} → key {labels[0]}: {fmt(w[0, 0], 3)}", label
    label = st_app.hover(WALK_WEIGHTS, 0, n - 1)
    assert label == f"query {labels[0]} → key {labels[-1]}: {fmt(w[0, n - 1], 3)}", label

    runs = st_app.runs()
    with st_app.page.expect_download() as info:
        st_app.page.locator(".st-key-walk_dl_weights button").click()
    download = info.value
    assert download.suggested_filename == "attention_weights.csv"
    frame = pd.read_csv(download.path(), index_col=0)
    assert list(frame.index) == labels and list(frame.columns) == labels
    np.testing.assert_allclose(frame.to_numpy(), w, rtol=1e-12)
    with st_app.page.expect_download() as info:
        st_app.page.locator(".st-key-walk_dl_json button").click()
    scenario = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert scenario["parameters"]["d_k"] == 6 and scenario["parameters"]["tokens"] == list(tokens)
    np.testing.assert_allclose(np.array(scenario["results"]["attention_weights"]), w, rtol=1e-12)
    # A download does not rerun the page: a rerun drops the deferred files of the previous run, and a
    # second click landing after it would never get its file.
    st_app.page.wait_for_timeout(500)
    assert st_app.runs() == runs, "a download click reran the page"
    assert not st_app.exceptions()


def _type_in_cell(st_app, key: str, row: int, col: int, text: str) -> None:
    """The walkthrough's 4-column data editor ``key`` (its index column 59 px wide)."""
    st_app.type_in_cell(f".st-key-{key}", 4, row, col, text, index_px=59)


def test_text_in_a_number_cell_is_not_a_number_and_edits_outlive_your_sentence(st_app):
    """Issue #18 item 12 in the browser: the grid hands typed text to the page (a number column blanked it),
    and the lesson example's edits are still there after a visit to "Your sentence"."""
    st_app.open(params={"walk_input": "Lesson example"})
    _type_in_cell(st_app, "walk_edit_X_0", 1, 1, "abc")
    alerts = " ".join(st_app.page.locator('[data-testid="stAlert"]').all_inner_texts())
    word = A.PIPELINE_EXAMPLE.tokens[1]
    assert f"row {word}, column dim 1 holds abc, which is not a number" in alerts, alerts
    _type_in_cell(st_app, "walk_edit_X_0", 1, 1, "3")
    assert "cannot be used" not in " ".join(st_app.page.locator('[data-testid="stAlert"]').all_inner_texts())
    edited = np.array(st_app.z(WALK_WEIGHTS), dtype=float)
    st_app.set_widget("walk_input", "Your sentence")
    st_app.set_widget("walk_input", "Lesson example")
    np.testing.assert_allclose(np.array(st_app.z(WALK_WEIGHTS), dtype=float), edited, rtol=1e-12)
    shown = "".join(st_app.page.locator(".st-key-walk_edit_X_0 table").inner_text().split())
    assert f"{word}0302".replace(" ", "") in shown, f"the edited cell is not shown after coming back: {shown}"
    assert not st_app.exceptions()
