"""Two replicas behind HAProxy, for real (issue 21): ``deploy/run_local.sh 2`` on free loopback ports.

A learner's Streamlit session lives in one process (its websocket, session state, the files its download
buttons serve), so the proxy must keep a browser on one replica: HAProxy inserts a cookie (``AE_REPLICA``) on
the first response and routes by it, and adds ``X-Replica: app<i>`` to every response (which replica answered).
The tests read that header on every HTTP response of a browser context and, through the Chrome DevTools
Protocol, on the websocket's handshake (the connection every rerun and page change travels on).

The module starts its own replicas and proxy (not the suite's ``server`` fixture) and a new browser context per
learner (its own cookies). Run: ``python -m pytest -m e2e tests/e2e/test_replicas.py``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from bench.load_replicas import stop_replicas
from tests.e2e.conftest import OBSERVER_JS, ROOT, TIMEOUT_MS, VIEWPORT, App, _free_port, record_timing

pytestmark = pytest.mark.e2e

START_S = float(os.environ.get("E2E_SERVER_START_S", "180"))
COOKIE = "AE_REPLICA"


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
    """``deploy/run_local.sh 2``: yields ``{"base", "run_dir", "proc", "pids": {"app1": pid, "app2": pid},
    "haproxy_pid"}``; stops the script (SIGTERM) at the end and makes sure nothing it started is left."""
    run_dir = tmp_path_factory.mktemp("replicas")
    proxy_port, port1, port2 = _free_port(), _free_port(), _free_port()
    env = {**os.environ, "PORT": str(proxy_port), "REPLICA_PORTS": f"{port1} {port2}", "RUN_DIR": str(run_dir),
           "HAPROXY_COOKIE_KEY": "e2e"}
    log_path = run_dir / "run_local.out"
    log = open(log_path, "w")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(["bash", str(ROOT / "deploy" / "run_local.sh"), "2"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{proxy_port}"
    info = {"base": base, "run_dir": run_dir, "proc": proc}
    try:
        deadline = time.monotonic() + START_S
        while "behind HAProxy at http://" not in log_path.read_text(errors="replace"):
            if proc.poll() is not None:
                pytest.fail(f"run_local.sh exited with {proc.returncode}:\n{log_path.read_text()}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"run_local.sh 2 not ready within {START_S:.0f} s:\n{log_path.read_text()}",
                            pytrace=False)
            time.sleep(0.25)
        assert _healthy(base)
        info["pids"] = {f"app{i}": int((run_dir / f"replica-{i}.pid").read_text()) for i in (1, 2)}
        info["haproxy_pid"] = int((run_dir / "haproxy.pid").read_text())
        yield info
    finally:
        started = [*info.get("pids", {}).values(), info.get("haproxy_pid")]
        stop_replicas(proc)
        left = [pid for pid in started if pid and _alive(pid)]
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        log.close()
        if left:
            pytest.fail(f"run_local.sh left processes running after SIGTERM: {left}", pytrace=False)


class Learner:
    """A browser context of its own (own cookies: own replica) with one tab on the app, recording the
    ``X-Replica`` header of every HTTP response and of every websocket handshake."""

    def __init__(self, browser, base: str, name: str):
        self.name = name
        self.context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
        self.context.add_init_script(OBSERVER_JS)
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.app = App(self.page, base)
        self.http: list[tuple[str, int, str | None]] = []  # (url, status, X-Replica)
        self.sockets: list[str | None] = []  # X-Replica of each websocket handshake
        self.page.on("response", lambda r: self.http.append((r.url, r.status, r.headers.get("x-replica"))))
        cdp = self.context.new_cdp_session(self.page)
        cdp.send("Network.enable")
        cdp.on("Network.webSocketHandshakeResponseReceived", self._on_handshake)

    def _on_handshake(self, event: dict) -> None:
        headers = {k.lower(): v for k, v in event["response"]["headers"].items()}
        self.sockets.append(headers.get("x-replica"))

    def replicas_seen(self) -> set[str | None]:
        return {r for _, _, r in self.http} | set(self.sockets)

    def cookie(self) -> str | None:
        return next((c["value"] for c in self.context.cookies() if c["name"] == COOKIE), None)

    def shows_the_app(self) -> None:
        """The page is the app, settled, with charts, no exception box, no error page, no dialog."""
        assert self.page.locator('[data-testid="stPlotlyChart"]').count() > 0, "no chart"
        assert not self.app.exceptions(), self.app.exceptions()
        assert not self.app.dialogs, self.app.dialogs
        body = self.page.inner_text("body")
        for bad in ("503 Service Unavailable", "502 Bad Gateway", "No server is available", "Connection error",
                    "Page not found"):
            assert bad not in body, f"{self.name}: the page shows {bad!r}"
        errors = [(u, s) for u, s, _ in self.http if s >= 500]
        assert not errors, f"{self.name}: server errors {errors}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def learners(browser, replicas):
    made: list[Learner] = []

    def make(name: str) -> Learner:
        made.append(Learner(browser, replicas["base"], name))
        return made[-1]

    yield make
    for learner in made:
        learner.close()


def test_a_session_keeps_its_replica_across_reruns_page_changes_and_a_download(learners, replicas):
    a = learners("a")
    a.app.open()
    replica = a.http[0][2]
    assert replica in replicas["pids"], f"the first response names no replica: {a.http[:3]}"
    assert a.cookie(), "HAProxy set no stickiness cookie"
    # A rerun (a shared control), a page change and back, another rerun on the other page.
    a.app.set_widget("seed", 7)
    a.app.go_to_page("multihead")
    a.app.set_widget("seed", 8)
    a.app.go_to_page("")  # the default page: the walkthrough
    a.shows_the_app()
    # A download: the file lives in the session's process (served from /media/ by that replica only).
    with a.page.expect_download() as download:
        a.page.locator(".st-key-walk_dl_weights button").click()
    path = download.value.path()
    rows = list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
    assert len(rows) == 1 + 6 and all(len(r) == 1 + 6 for r in rows), rows  # the 6x6 weights, labelled
    assert abs(sum(float(x) for x in rows[1][1:]) - 1) < 1e-9, rows[1]  # a row of attention weights sums to 1
    a.app.screenshot("replicas_sticky_session")
    assert a.sockets, "no websocket handshake was seen"
    assert a.replicas_seen() == {replica}, f"the session was served by {a.replicas_seen()}: {a.http}"
    # HAProxy's log names the replica of every request: the download went through the proxy to the same one.
    log = (replicas["run_dir"] / "haproxy.log").read_text(errors="replace")
    media = [line for line in log.splitlines() if "/media/" in line]
    assert media and all(f"replicas/{replica} " in line for line in media), media or log[-2000:]


def test_killing_a_replica_moves_new_sessions_to_the_other(learners, replicas):
    a = learners("a")
    a.app.open()
    dead = a.http[0][2]
    (alive,) = set(replicas["pids"]) - {dead}
    t0 = time.perf_counter()
    os.kill(replicas["pids"][dead], signal.SIGKILL)  # a crash: no goodbye to the proxy
    # New learners, one after the other from the moment of the crash: none may see an error page; all land on
    # the replica that is left (a refused connection is retried on it, then the health check marks the dead one).
    for i in range(2):
        b = learners(f"new{i}")
        b.app.open()
        b.shows_the_app()
        assert b.replicas_seen() == {alive}, f"{b.name}: served by {b.replicas_seen()}"
        record_timing(f"replicas_crash_to_{b.name}_settled_s", round(time.perf_counter() - t0, 1))
    b.app.screenshot("replicas_after_a_crash")
    # The learner whose replica died: reloading the page brings the app back from the other replica.
    a.http.clear()
    a.app.open()
    a.shows_the_app()
    record_timing("replicas_crash_to_reload_settled_s", round(time.perf_counter() - t0, 1))
    assert a.http[0][2] == alive, a.http[:3]
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
