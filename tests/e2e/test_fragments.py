"""A lesson control that changes one part of its page reruns that part alone (``st.fragment``, issue 20).

Speaks Streamlit's websocket protocol to the suite's real server (``bench.load.Session``, the client of
``bench/load.py``): a full run of the page, then the rerun the browser asks for when that control moves (the
control's ``fragment_id``). The rerun must send the part's own elements and charts only: none of the page's other
charts, nor the elements named as outside the part (the lookup's table editor, the two-sentences page's sentence box
and charts above and below).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.conftest import record_timing

pytestmark = pytest.mark.e2e

LOOKUP_CHARTS = {"lookup_fig_keys", "lookup_fig_weights", "lookup_fig_values", "lookup_fig_dial", "lookup_fig_matrix",
                 "lookup_fig_hard_matrix"}  # every chart follows the query: the part is parts 2-4, not the table
SHUFFLE_CHARTS = {"two_fig_order_original", "two_fig_order_shuffled", "two_fig_order_unpermuted",
                  "two_fig_order_gap", "two_fig_repeat_rows"}  # the copies' chart sits between the test and its gaps
REAL_MODEL_HEAD_CHARTS = {"rm_grid", "rm_fig_head", "rm_fig_layer_mean", *(f"rm_fig_group_{i}" for i in range(3))}
# the grid (its open cell) and the head up close; with the six steps' expander open, their charts too
REAL_MODEL_STEP_CHARTS = REAL_MODEL_HEAD_CHARTS | {"rm_fig_x", "rm_fig_angles", "rm_fig_scores", "rm_fig_scaled",
                                                   "rm_fig_weights", "rm_fig_output", *(f"rm_fig_{m}" for m in "QKV"),
                                                   "rm_fig_Q_rope", "rm_fig_K_rope"}

# (lesson url path, link, control key, charts of its part, other keys on the page that must not be resent,
#  texts that depend on the control and must be resent with the part, or the page would show stale numbers)
CASES = [
    ("", "", "walk_query", {"walk_fig_query_bar"}, set(), ()),
    ("scaling", "", "scale_temperature", {"scale_fig_temp_bar", "scale_fig_temp_sweep"}, set(), ()),
    ("causal", "", "causal_query", {"causal_fig_row_bar"}, set(), ()),
    ("lookup", "", "lookup_qx", LOOKUP_CHARTS, {"lookup_table_0", "lookup_restore"},
     ("q = (", "Distance from the blend to the database's answer", "Each query's answer")),
    ("two-sentences", "two_shuffle=true", "two_shuffle_seed", SHUFFLE_CHARTS,
     {"two_sentence", "two_fig_weights_a", "two_fig_diff", "two_fig_pe"},
     ("Shuffled sentence A", "shuffled & put back vs original: weights")),  # the gaps table follows the seed
    ("real-model", "", "rm_head", REAL_MODEL_HEAD_CHARTS, {"rm_prompt", "rm_fig_prediction", "rm_append"},
     ("One head up close: layer 16, head 0", "The six steps of head 0")),  # issue 30: a head, not the prompt
    ("real-model", "rm_steps=true", "rm_head", REAL_MODEL_STEP_CHARTS, {"rm_prompt", "rm_fig_prediction", "rm_append"},
     ("One head up close: layer 16, head 0", "The six steps of head 0")),
]


CHART_TYPES = ("plotly_chart", "bidi_component")  # charts.show_fig's two doors


def _elements(messages: list) -> list[tuple[str, str, str, bytes]]:
    """The new elements of a run's messages: ``(element type, fragment id, widget id or "", serialized element)``."""
    items = []
    for msg in messages:
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            el = msg.delta.new_element
            t = el.WhichOneof("type")
            wid = getattr(getattr(el, t), "id", "") if t else ""
            items.append((t, msg.delta.fragment_id, wid if isinstance(wid, str) else "", el.SerializeToString()))
    return items


async def _runs(base: str, page: str, query: str, key: str) -> tuple[list, list, float]:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from bench.load import Session

    done = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
    async with Session.connect(base) as session:
        messages, status = await session.run(page, query)
        assert status in done, f"run ended with status {status}"
        full = _elements(messages)
        fragment = next((f for t, f, wid, _ in full if wid.endswith(f"-{key}")), None)
        assert fragment is not None, f"no widget {key!r} on the page"
        assert fragment, f"{key!r} is not inside a fragment: moving it reruns the whole page"
        t0 = time.perf_counter()
        messages, status = await session.run(page, query, fragment)
        assert status in done, f"the part's run ended with status {status}"
        return full, _elements(messages), time.perf_counter() - t0


@pytest.mark.parametrize(("page", "query", "key", "charts", "outside", "texts"), CASES, ids=[c[2] for c in CASES])
def test_control_reruns_only_its_part(server, page, query, key, charts, outside, texts):
    # A thread of its own: the suite's sync Playwright keeps an event loop running on the main thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        full, part, seconds = pool.submit(asyncio.run, _runs(server["base"], page, query, key)).result()
    sent = {wid.rsplit("-", 1)[-1] for t, _, wid, _ in part if t in CHART_TYPES}
    page_charts = {wid.rsplit("-", 1)[-1] for t, _, wid, _ in full if t in CHART_TYPES}
    assert sent == charts, f"the rerun of {key}'s part sent charts {sorted(sent)}, expected {sorted(charts)}"
    elsewhere = (page_charts - charts) | outside  # the rest of the page: drawn by the full run, not resent
    assert elsewhere and elsewhere <= {wid.rsplit("-", 1)[-1] for _, _, wid, _ in full if wid}
    assert not elsewhere & {wid.rsplit("-", 1)[-1] for _, _, wid, _ in part if wid}
    assert {f for _, f, _, _ in part} == {next(f for _, f, wid, _ in full if wid.endswith(f"-{key}"))}
    assert len(part) < len(full)
    resent = b"".join(raw for *_, raw in part)
    missing = [text for text in texts if text.encode() not in resent]
    assert not missing, f"shown outside {key}'s part, so stale after a move: {missing}"
    record_timing(f"fragment_rerun_{key}_s", round(seconds, 3))


def _words(raw: bytes):
    """An element as the learner reads it: a widget's label, help and options (its value and whether the run set it
    differ between a first run and a rerun), any other element whole."""
    from streamlit.proto.Element_pb2 import Element

    el = Element.FromString(raw)
    w = getattr(el, el.WhichOneof("type"))
    if not getattr(w, "id", ""):
        return raw
    options = getattr(w, "options", [])
    return (getattr(w, "label", ""), getattr(w, "help", ""), [str(o).strip() for o in options])


# One fragment of every page that has one (the training page's needs a trained run: its own e2e test), in a
# language other than English.
LANGUAGE_CASES = [("", "lang=pt", "walk_query"), ("scaling", "lang=tr", "scale_temperature"),
                  ("causal", "lang=pt", "causal_query"), ("lookup", "lang=tr", "lookup_qx"),
                  ("two-sentences", "lang=pt&two_shuffle=true", "two_shuffle_seed"),
                  ("real-model", "lang=pt", "rm_head"), ("real-model", "lang=tr", "rm_head")]


@pytest.mark.parametrize(("page", "query", "key"), LANGUAGE_CASES, ids=[f"{c[2]}-{c[1]}" for c in LANGUAGE_CASES])
def test_a_parts_rerun_keeps_the_pages_language(server, page, query, key):
    """Issue 30: a fragment's rerun ran in English on a Portuguese or Turkish page (the entrypoint sets the language
    once per full run). At unchanged settings the part's rerun must send exactly what the full run drew there."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        full, part, _seconds = pool.submit(asyncio.run, _runs(server["base"], page, query, key)).result()
    fragment = {f for _, f, _, _ in part}
    drawn = [_words(raw) for _, f, _, raw in full if f in fragment]
    resent = [_words(raw) for *_, raw in part]
    assert len(resent) == len(drawn)
    changed = [i for i, (a, b) in enumerate(zip(drawn, resent, strict=True)) if a != b]
    assert not changed, (f"{len(changed)} of the part's {len(drawn)} elements differ from the full run's, e.g. "
                         f"{resent[changed[0]][:300]!r} (was {drawn[changed[0]][:300]!r})")
