"""The e2e server's log holds no traceback and no warning (issue #19, item 5).

The whole log is checked when the server stops, after a session's (an xdist worker's) last test
(``conftest.server``: an error at that teardown fails the run). This test checks the log so far, after first
opening the links that made Streamlit log a warning with a stack trace (a widget's value set through the
Session State API after it had a default), so it means something run on its own too.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SERVER_LOG, server_log_problems

pytestmark = pytest.mark.e2e


def test_server_log_problems_finds_a_warning_and_a_traceback_and_allows_the_cache_budget():
    info = "2026-12-04 10:00:00.000 INFO streamlit: Local URL"
    budget = ("2026-12-04 10:00:01.000 WARNING streamlit.runtime.caching.global_cache_budget: st.cache_data reached "
              "its 400 MB serialized-size budget (server.maxCacheDataSize) and is evicting 3 entries")
    warning = "2026-12-04 10:00:02.000 WARNING streamlit.elements: a widget was set twice"
    assert server_log_problems([info, budget]) == []
    assert server_log_problems([info, warning]) == [warning]
    assert server_log_problems([info, "Traceback (most recent call last):", "  File x"]) != []
    assert server_log_problems(["no level here"]) != []


def test_the_server_log_holds_no_warning_and_no_traceback(st_app):
    for path, params in [("multihead", {"n_heads": "3"}), ("multihead", {"n_heads": "4.0", "d_model": "12"}),
                         ("", {"seed": "inf", "d_k": "1e309"}), ("causal", {"causal_t": "99"})]:
        st_app.open(path, params)
        assert not st_app.exceptions(), st_app.exceptions()
    problems = server_log_problems(SERVER_LOG.read_text(errors="replace").splitlines())
    assert not problems, f"the server ({SERVER_LOG.name}) logged:\n" + "\n".join(problems)
