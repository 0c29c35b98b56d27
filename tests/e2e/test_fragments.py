"""A lesson control that changes one part of its page reruns that part alone (``st.fragment``, issue 20).

Speaks Streamlit's websocket protocol to the suite's real server (as ``bench/load.py`` does): a full run of the
page, then the rerun the browser asks for when that control moves (the control's ``fragment_id``). The rerun
must send the part's own elements and charts only, none of the page's other charts.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.e2e.conftest import record_timing

pytestmark = pytest.mark.e2e

# (lesson url path, control key, charts of its part)
CASES = [
    ("", "walk_query", {"walk_fig_query_bar"}),
    ("scaling", "scale_temperature", {"scale_fig_temp_bar", "scale_fig_temp_sweep"}),
    ("causal", "causal_query", {"causal_fig_row_bar"}),
]


async def _runs(base: str, page: str, key: str) -> tuple[list, list, float]:
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from bench.load import _ws_url

    done = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
    async with websockets.connect(_ws_url(base), subprotocols=["streamlit"], max_size=None) as ws:
        async def run(fragment_id: str = "") -> list[tuple[str, str, str]]:
            back = BackMsg()
            back.rerun_script.page_name = page
            back.rerun_script.fragment_id = fragment_id
            await ws.send(back.SerializeToString())
            items = []
            async for data in ws:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                kind = msg.WhichOneof("type")
                if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                    el = msg.delta.new_element
                    t = el.WhichOneof("type")
                    wid = getattr(getattr(el, t), "id", "") if t else ""
                    items.append((t, msg.delta.fragment_id, wid if isinstance(wid, str) else ""))
                elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    assert msg.script_finished in done, f"run ended with status {msg.script_finished}"
                    return items
            raise AssertionError("the connection closed before the run ended")

        full = await run()
        fragment = next((f for t, f, wid in full if wid.endswith(f"-{key}")), None)
        assert fragment is not None, f"no widget {key!r} on the page"
        assert fragment, f"{key!r} is not inside a fragment: moving it reruns the whole page"
        t0 = time.perf_counter()
        part = await run(fragment)
        return full, part, time.perf_counter() - t0


@pytest.mark.parametrize(("page", "key", "charts"), CASES, ids=[c[1] for c in CASES])
def test_control_reruns_only_its_part(server, page, key, charts):
    full, part, seconds = asyncio.run(_runs(server["base"], page, key))
    sent = {wid.rsplit("-", 1)[-1] for t, _, wid in part if t == "plotly_chart"}
    page_charts = {wid.rsplit("-", 1)[-1] for t, _, wid in full if t == "plotly_chart"}
    assert sent == charts, f"the rerun of {key}'s part sent charts {sorted(sent)}, expected {sorted(charts)}"
    assert len(page_charts) > len(charts)  # the rest of the page was not resent
    assert len(part) < len(full) / 2
    record_timing(f"fragment_rerun_{key}_s", round(seconds, 3))
