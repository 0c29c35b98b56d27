"""Two replicas behind HAProxy, for real (issue 21): ``deploy/run_local.sh 2`` on free loopback ports, driven the way
a browser drives it, without one: HTTP requests and Streamlit's websocket protocol (``bench.load.Session``).

A learner's Streamlit session lives in one process (its websocket, session state, the files its download buttons
serve), so the proxy must keep a learner on one replica: HAProxy inserts a cookie (``AE_REPLICA``) on the first
response and routes by it, and adds ``X-Replica: app<i>`` to every response (which replica answered). A learner here
is a cookie jar: its page and static files (HTTP), its session (the websocket's handshake carries the cookie, as a
browser's does) and a download (a deferred file asked for over the websocket, then fetched over HTTP from
``/media/``); the ``X-Replica`` of every response and handshake is recorded.

Marked ``e2e`` (with the browser suite, not the AppTests' ``slow``): it starts servers (two ``streamlit run`` and
HAProxy) as the browser suite does, and ``.ci/run`` installs HAProxy beside Chromium for it. It needs no browser:
stickiness and failover are HTTP behaviours. Run: ``python -m pytest -m e2e tests/deploy/test_replicas.py``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import csv
import io
import os
import re
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urljoin

import pytest

from bench.load import Session
from bench.load_replicas import start_replicas, stop_replicas

pytestmark = pytest.mark.e2e

START_S = float(os.environ.get("E2E_SERVER_START_S", "180"))
RUN_S = 300.0  # one script run on 2 shared cores (generous: nothing here times the app)
COOKIE = "AE_REPLICA"


def run_async(coro):
    """``asyncio.run(coro)`` on a thread of its own: a worker that ran a browser test before (Playwright's sync API
    leaves an event loop running on the main thread) cannot start one there ("asyncio.run() cannot be called from
    a running event loop", seen with ``pytest -n 2 --dist loadfile``)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/_stcore/health", timeout=3) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """``deploy/run_local.sh 2`` (``bench.load_replicas.start_replicas``; logs in a pytest temporary folder): yields
    ``{"base", "run_dir", "proc", "pids": {"app1": pid, "app2": pid}, "haproxy_pid"}``; stops the script (SIGTERM) at
    the end and makes sure nothing it started is left."""
    run_dir = tmp_path_factory.mktemp("replicas")
    try:
        started = start_replicas(2, run_dir, timeout=START_S)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    info = {"base": started["base"], "run_dir": run_dir, "proc": started["proc"],
            "pids": {f"app{i}": pid for i, pid in enumerate(started["pids"], 1)}}
    try:
        info["haproxy_pid"] = int((run_dir / "haproxy.pid").read_text())
        assert _healthy(info["base"])
        yield info
    finally:
        processes = [*info["pids"].values(), info.get("haproxy_pid")]
        stop_replicas(info["proc"])
        left = [pid for pid in processes if pid and _alive(pid)]
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if left:
            pytest.fail(f"run_local.sh left processes running after SIGTERM: {left}", pytrace=False)


class Learner:
    """One learner's browser, without the browser: its cookies, its HTTP requests through the proxy and its sessions
    on the websocket (the handshake sends the cookies, as a browser's does). Records ``(what, status, X-Replica)`` of
    every response and handshake in :attr:`seen`."""

    def __init__(self, base: str, name: str):
        self.base, self.name = base, name
        self.cookies: dict[str, str] = {}
        self.seen: list[tuple[str, int, str | None]] = []

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}

    def get(self, path: str) -> bytes:
        """GET ``path`` through the proxy with this learner's cookies; keeps the cookies the response sets; fails on
        an error page (a status of 400 or more: HAProxy's 503 when no replica answers)."""
        url = urljoin(self.base + "/", path.lstrip("/"))
        request = urllib.request.Request(url, headers=self._cookie_header())
        try:
            with urllib.request.urlopen(request, timeout=RUN_S) as r:
                status, headers, body = r.status, r.headers, r.read()
        except urllib.error.HTTPError as err:
            self.seen.append((path, err.code, err.headers.get("X-Replica")))
            raise AssertionError(f"{self.name}: GET {path} answered {err.code}: {err.read()[:200]!r}") from None
        self.seen.append((path, status, headers.get("X-Replica")))
        for value in headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return body

    def open_app(self) -> list[str]:
        """What a browser does on opening the app: the page, then its scripts and style sheets (``/static/…``);
        returns the static paths fetched."""
        page = self.get("/").decode("utf-8", "replace")
        assets = re.findall(r'(?:src|href)="\.?/?(static/[^"]+)"', page)
        assert assets, f"{self.name}: the page names no static file: {page[:300]!r}"
        for path in assets:
            self.get("/" + path)
        return assets

    @contextlib.asynccontextmanager
    async def session(self):
        """A Streamlit session on the websocket, through the proxy, with this learner's cookies."""
        async with Session.connect(self.base, headers=self._cookie_header(), timeout=RUN_S) as s:
            self.seen.append(("/_stcore/stream", 101, s.handshake.get("x-replica")))
            yield s

    def replicas_seen(self) -> set[str | None]:
        return {replica for _, _, replica in self.seen}


async def _run(session: Session, page: str = "", query: str = "") -> list:
    """A run of ``page`` that must end well and draw charts and no exception; returns its messages."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    messages, status = await asyncio.wait_for(session.run(page, query), RUN_S)
    assert status == ForwardMsg.FINISHED_SUCCESSFULLY, f"/{page}?{query}: the run ended with status {status}"
    kinds = [m.delta.new_element.WhichOneof("type") for m in messages
             if m.WhichOneof("type") == "delta" and m.delta.WhichOneof("type") == "new_element"]
    charts = {"plotly_chart", "bidi_component"}  # charts.show_fig's two doors
    assert charts & set(kinds) and "exception" not in kinds, (page, query, sorted(set(kinds)))
    return messages


def _download_file_id(messages: list, key: str) -> str:
    """The deferred file of the download button ``key`` among a run's messages."""
    for m in messages:
        if m.WhichOneof("type") == "delta" and m.delta.WhichOneof("type") == "new_element" \
                and m.delta.new_element.WhichOneof("type") == "download_button" \
                and m.delta.new_element.download_button.id.endswith(f"-{key}"):
            return m.delta.new_element.download_button.deferred_file_id
    raise AssertionError(f"no download button {key!r} in the run")


def test_a_session_keeps_its_replica_across_reruns_page_changes_and_a_download(replicas):
    a = Learner(replicas["base"], "a")
    a.open_app()
    replica = a.seen[0][2]
    assert replica in replicas["pids"], f"the first response names no replica: {a.seen[:3]}"
    assert a.cookies.get(COOKIE), f"HAProxy set no stickiness cookie: {a.seen[:3]}"

    async def learn() -> str:
        async with a.session() as s:
            await _run(s)  # the default page
            await _run(s, "", "seed=7")  # a rerun (a shared control)
            await _run(s, "multihead", "seed=7")  # another page, and another rerun on it
            await _run(s, "multihead", "seed=8")
            messages = await _run(s, "", "seed=8")  # back to the default page: the walkthrough
            # A download: the file is made in the session's process and served from /media/ by that replica only.
            return await asyncio.wait_for(s.deferred_file(_download_file_id(messages, "walk_dl_weights")), RUN_S)

    url = run_async(learn())
    rows = list(csv.reader(io.StringIO(a.get(url).decode("utf-8"))))
    assert len(rows) == 1 + 6 and all(len(r) == 1 + 6 for r in rows), rows  # the 6x6 weights, labelled
    assert abs(sum(float(x) for x in rows[1][1:]) - 1) < 1e-9, rows[1]  # a row of attention weights sums to 1
    assert a.replicas_seen() == {replica}, f"the learner was served by {a.replicas_seen()}: {a.seen}"
    # HAProxy's log names the replica of every request: the download went through the proxy to the same one.
    log = (replicas["run_dir"] / "haproxy.log").read_text(errors="replace")
    media = [line for line in log.splitlines() if "/media/" in line]
    assert media and all(f"replicas/{replica} " in line for line in media), media or log[-2000:]


def test_killing_a_replica_moves_new_sessions_to_the_other(replicas):
    a = Learner(replicas["base"], "a")
    a.open_app()

    async def opens(learner: Learner) -> None:
        async with learner.session() as s:
            await _run(s)

    run_async(opens(a))
    dead = a.seen[0][2]
    (alive,) = set(replicas["pids"]) - {dead}
    t0 = time.perf_counter()
    os.kill(replicas["pids"][dead], signal.SIGKILL)  # a crash: no goodbye to the proxy
    # New learners, one after the other from the moment of the crash: none may get an error; all land on the
    # replica that is left (a refused connection is retried on it, then the health check marks the dead one).
    for i in range(2):
        b = Learner(replicas["base"], f"new{i}")
        b.open_app()
        run_async(opens(b))
        assert b.replicas_seen() == {alive}, f"{b.name}: served by {b.replicas_seen()}: {b.seen}"
        print(f"{b.name} served {time.perf_counter() - t0:.1f} s after the crash")
    # The learner whose replica died (its cookie names it): opening the app again brings it back from the other.
    a.seen.clear()
    a.open_app()
    run_async(opens(a))
    assert a.replicas_seen() == {alive}, a.seen
    assert _alive(replicas["haproxy_pid"]) and _alive(replicas["pids"][alive])


def test_stopping_run_local_stops_every_process_it_started(replicas):
    proc = replicas["proc"]
    started = [*replicas["pids"].values(), replicas["haproxy_pid"]]
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in started if _alive(p)], "processes left after run_local.sh stopped"
    assert not _healthy(replicas["base"])
