"""The e2e server's log holds no traceback and no warning (issue #19, item 5).

The file's name sorts last, so in a run of the whole suite this test reads the log of every test
before it (``.screenshots/e2e-server.log``, one server per session, written by ``conftest.py``).
Run on its own it first opens the links that made Streamlit log a warning with a stack trace (a
widget's value set through the Session State API after it had a default), so it means something
alone too.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import SERVER_LOG

pytestmark = pytest.mark.e2e

LEVEL = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ")  # conftest.LOG_FORMAT: date time LEVEL logger: message
TRACE = ("Traceback (most recent call last)", "Stack (most recent call last)")
# Not a fault: st.cache_data reaching the byte budget we set (.streamlit/config.toml, server.maxCacheDataSize) and
# evicting its least recently used entries is that budget doing its job (BENCHMARKS.md, "Memory soak"); Streamlit
# logs it at WARNING. Only this message of this logger is expected.
BUDGET = re.compile(r"^\S+ \S+ WARNING streamlit\.runtime\.caching\.global_cache_budget: st\.cache_data reached its "
                    r"[0-9.]+ MB serialized-size budget \(server\.maxCacheDataSize\) and is evicting ")


def test_the_server_log_holds_no_warning_and_no_traceback(st_app):
    for path, params in [("multihead", {"n_heads": "3"}), ("multihead", {"n_heads": "4.0", "d_model": "12"}),
                         ("", {"seed": "inf", "d_k": "1e309"}), ("causal", {"causal_t": "99"})]:
        st_app.open(path, params)
        assert not st_app.exceptions(), st_app.exceptions()
    lines = SERVER_LOG.read_text(errors="replace").splitlines()
    assert any("INFO" in line for line in lines), f"the log does not name levels (conftest.LOG_FORMAT): {lines[:5]}"
    bad = [i for i, line in enumerate(lines)
           if (LEVEL.match(line) and not BUDGET.match(line)) or any(t in line for t in TRACE)]
    assert not bad, "the server logged:\n" + "\n".join("\n".join(lines[i:i + 3]) for i in bad[:10])
