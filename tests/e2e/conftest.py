"""Fixtures for the real-browser end-to-end suite: ``python -m pytest -m e2e tests/e2e``.

One ``streamlit run streamlit_app.py`` per session, i.e. per xdist worker (free localhost port, output in
``.screenshots/e2e-server.log`` or ``e2e-server-gw0.log``…, checked for warnings and tracebacks when it
stops), one Chromium (the system ``/usr/bin/chromium`` or Playwright's own), one tab the tests share, each test's
first load a new document (a new Streamlit session).
``st_app`` wraps the page with explicit waits: an action is finished when the app has completed a script run, has been
quiet for a moment, shows no stale element and every Plotly chart has drawn. ``tour(lang)`` visits every lesson once
per language in a touch context and records what it shows at 1440 px and, resized in place, 390 px
(``tests/e2e/test_tour.py`` reads the records).

A missing browser or Playwright is a failure with the reason (never a skip); leave the
suite out with ``-m "not e2e"``. Timings (server start to first chart, slider to chart,
page loads) are written to ``.screenshots/timings.json`` (``timings-gw0.json``… per xdist worker) and printed in the
terminal summary of a run without xdist.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None
    PlaywrightError = Exception

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / ".screenshots"
# Under pytest-xdist (`-n 2`; README's command runs serially: BENCHMARKS.md, "The test suite") each worker runs its own
# server, with its own log.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
SERVER_LOG = SHOTS / f"e2e-server{'-' + WORKER if WORKER else ''}.log"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SYSTEM_CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")  # or set E2E_CHROMIUM
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# The machine is shared and loaded: waits are explicit but generous.
TIMEOUT_MS = int(os.environ.get("E2E_TIMEOUT_MS", "180000"))
SERVER_START_S = float(os.environ.get("E2E_SERVER_START_S", "180"))
VIEWPORT = {"width": 1400, "height": 4000}  # Streamlit scrolls inside its own container: a tall viewport
QUIET_MS = 300  # the app counts as settled after this long without a script-state change
RUN_START_MS = 20_000  # an action that sets a value is repeated if no script run has started by then

DEFAULTS = {"sentence": "The cat sat on the mat", "embedding": "auto", "positional": False, "seed": 42,
            "d_model": 8, "d_k": 4}
WALK_WEIGHTS = "walk_fig_weights"

TIMINGS: dict = {}

# Counts finished script runs (running -> anything else) and the time of the last state change.
# Installed before any page script, so it sees every run of the document, including the first.
OBSERVER_JS = """
(() => {
  const s = window.__e2e = {ended: 0, started: 0, last: performance.now()};
  const obs = new MutationObserver((muts) => {
    for (const m of muts) {
      s.last = performance.now();
      if (m.oldValue === 'running') s.ended += 1;
      if (m.target.getAttribute('data-test-script-state') === 'running') s.started += 1;
    }
  });
  obs.observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                         attributeFilter: ['data-test-script-state']});
})();
"""

SETTLED_JS = """
({before, quiet}) => {
  const s = window.__e2e;
  const app = document.querySelector('[data-testid="stApp"]');
  if (!s || !app) return false;
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
  if (s.ended <= before) return false;
  if (performance.now() - s.last < quiet) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  // Lazily loaded element code (Plotly, dataframes, ...) shows a skeleton until it has arrived.
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  // A chart of the chart door (explorer/shell/charts/door.py, an st.components.v2 component: the app's only one)
  // shows an empty box until Streamlit has imported the component's module (a dynamic import(), after the element
  // is on the page) and the module has made its [data-testid="stPlotlyChart"]: a chart still to come.
  for (const host of document.querySelectorAll('[data-testid="stBidiComponentRegular"]')) {
    if (!host.querySelector('[data-testid="stPlotlyChart"]')) return false;
  }
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const g = c.querySelector('.js-plotly-plot');
    if (!g || !g._fullLayout || !g._fullData) return false;
  }
  return true;
}
"""

# Why SETTLED_JS is still false (reported when a wait times out).
UNSETTLED_JS = """
(before) => {
  const s = window.__e2e || {};
  const app = document.querySelector('[data-testid="stApp"]');
  const undrawn = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter((c) => {
    const g = c.querySelector('.js-plotly-plot');
    return !g || !g._fullLayout || !g._fullData;
  }).map((c) => { const b = c.closest('[class*="st-key-"]'); return b ? b.className : 'chart'; });
  const unmounted = [...document.querySelectorAll('[data-testid="stBidiComponentRegular"]')]
    .filter((h) => !h.querySelector('[data-testid="stPlotlyChart"]'))
    .map((h) => { const b = h.closest('[class*="st-key-"]'); return b ? b.className : 'component'; });
  return {
    before, ended: s.ended, started: s.started, quiet_ms: s.last ? performance.now() - s.last : null,
    script_state: app && app.getAttribute('data-test-script-state'),
    connection: app && app.getAttribute('data-test-connection-state'),
    stale: [...document.querySelectorAll('[data-stale="true"]')]
      .map((e) => e.getAttribute('data-testid') || e.className).slice(0, 10),
    skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length,
    undrawn_charts: undrawn.slice(0, 10),
    charts_not_mounted: unmounted.slice(0, 10),
  };
}
"""

# Every Plotly chart of the page: its widget key (from the st-key-<key> class), traces and axes.
CHARTS_JS = """
() => {
  const norm = (v) => {
    if (v === undefined || v === null) return null;
    if (ArrayBuffer.isView(v)) return Array.from(v);
    if (Array.isArray(v)) return v.map(norm);
    if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
    return v;
  };
  return [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c, i) => {
    const box = c.closest('[class*="st-key-"]');
    const m = box ? box.className.match(/st-key-(\\S+)/) : null;
    const g = c.querySelector('.js-plotly-plot');
    const fl = (g && g._fullLayout) || {};
    const axis = (a) => a ? {ticktext: norm(a.ticktext), tickvals: norm(a.tickvals), range: norm(a.range),
                             autorange: a.autorange} : null;
    return {
      key: m ? m[1] : 'chart-' + i,
      traces: ((g && g._fullData) || []).map((t) => ({
        type: t.type, name: t.name ?? null, x: norm(t.x), y: norm(t.y), z: norm(t.z), text: norm(t.text),
        customdata: norm(t.customdata), hovertemplate: norm(t.hovertemplate),
      })),
      xaxis: axis(fl.xaxis), yaxis: axis(fl.yaxis),
      svgText: g ? [...g.querySelectorAll('text')].map((e) => e.textContent) : [],
    };
  });
}
"""

Z_SIGNATURE_JS = """
(key) => {
  const g = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  if (!g || !g._fullData || !g._fullData.length) return null;
  const norm = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(norm) : v;
  return JSON.stringify(norm(g._fullData[0].z ?? g._fullData[0].y));
}
"""

# Page position of a heat-map cell, from Plotly's own axes (linear -> pixel).
CELL_POINT_JS = """
({key, row, col}) => {
  const g = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis;
  const r = g.getBoundingClientRect();
  return {x: r.left + xa._offset + xa.l2p(col), y: r.top + ya._offset + ya.l2p(row)};
}
"""

# The sidebar navigation's links: the path of each (without slashes) and its title.
NAV_JS = """() => [...document.querySelectorAll('[data-testid="stSidebarNav"] a')].map((a) => ({
  path: new URL(a.getAttribute('href') || '', location.href).pathname.replace(/^\\/+|\\/+$/g, ''),
  title: a.innerText.trim()}))"""

# What a loaded page shows, in one call: its title, dialogs, exception boxes, charts (their keys) and main text.
PAGE_JS = """() => ({
  h1: (document.querySelector('h1') || {innerText: ''}).innerText.trim(),
  dialogs: [...document.querySelectorAll('[role="dialog"]')].map((e) => e.innerText),
  exceptions: [...document.querySelectorAll('[data-testid="stException"]')].map((e) => e.innerText),
  charts: [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c, i) => {
    const box = c.closest('[class*="st-key-"]');
    const m = box ? box.className.match(/st-key-(\\S+)/) : null;
    return m ? m[1] : 'chart-' + i;
  }),
  text: (document.querySelector('[data-testid="stMain"]') || {innerText: ''}).innerText,
})"""

# The keys of the page's keyed elements (their st-key-<key> classes), each once, in the order of the page.
KEYS_JS = """() => [...new Set([...document.querySelectorAll('[class*="st-key-"]')]
  .map((e) => (e.className.match(/st-key-(\\S+)/) || [])[1]).filter(Boolean))]"""

WIDGET_VALUE_JS = """
(key) => {
  const box = document.querySelector('.st-key-' + key);
  if (!box) return null;
  const q = (s) => box.querySelector(s);
  if (q('[data-testid="stSlider"]')) return q('input[type=range]').value;
  if (q('[data-testid="stRadio"]')) {
    const sel = q('[data-testid="stRadioOption"][data-selected="true"]');
    return sel ? sel.innerText.trim() : null;
  }
  if (q('[data-testid="stButtonGroup"]')) {
    const sel = q('[aria-checked="true"], [data-selected="true"]');
    return sel ? sel.innerText.trim() : null;
  }
  if (q('[data-testid="stSelectbox"]')) return q('input').value;
  if (q('input[type=checkbox]')) return q('input[type=checkbox]').checked;
  const inp = q('input, textarea');
  return inp ? inp.value : null;
}
"""


def unavailable(reason: str):
    """A missing browser or Playwright fails the suite (never a skip): the suite must run to mean anything.

    ``python -m pytest -m "not e2e"`` leaves the suite out on purpose.
    """
    pytest.fail(f"{reason}. Install Chromium (apt-get install chromium) or run python -m playwright install "
                "chromium; or leave the suite out with -m 'not e2e'.", pytrace=False)


def record_timing(name: str, value) -> None:
    TIMINGS[name] = value


LEVEL = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ")  # LOG_FORMAT: date time LEVEL logger: message
TRACE = ("Traceback (most recent call last)", "Stack (most recent call last)")
# Not a fault: st.cache_data reaching the byte budget we set (.streamlit/config.toml, server.maxCacheDataSize) and
# evicting its least recently used entries is that budget doing its job (BENCHMARKS.md, "Memory soak"); Streamlit
# logs it at WARNING. Only this message of this logger is expected.
BUDGET = re.compile(r"^\S+ \S+ WARNING streamlit\.runtime\.caching\.global_cache_budget: st\.cache_data reached its "
                    r"[0-9.]+ MB serialized-size budget \(server\.maxCacheDataSize\) and is evicting ")


def server_log_problems(lines: list[str]) -> list[str]:
    """The warnings and tracebacks of a server log (each with the two lines after it), at most 10; ``[]`` if none.

    Fails when the log names no level at all (it was not written with :data:`LOG_FORMAT`: nothing could be found)."""
    if not any(" INFO " in line for line in lines):
        return [f"the log does not name levels (LOG_FORMAT): {lines[:5]}"]
    bad = [i for i, line in enumerate(lines)
           if (LEVEL.match(line) and not BUDGET.match(line)) or any(t in line for t in TRACE)]
    return ["\n".join(lines[i:i + 3]) for i in bad[:10]]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _log_tail(n: int = 40) -> str:
    try:
        return "\n".join(SERVER_LOG.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no server log)"


@pytest.fixture(scope="session")
def server():
    """``streamlit run streamlit_app.py`` on a free port; yields the base URL, stops the server at the end."""
    if sync_playwright is None:
        unavailable("the Python package playwright is not installed (pip install -r requirements-dev.txt)")
    SHOTS.mkdir(exist_ok=True)
    port = _free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py",
           "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false",
           # Other people edit this checkout while the suite runs: never rerun on a file change.
           "--server.fileWatcherType", "none", "--server.runOnSave", "false",
           # Every log line names its level, so test_zz_server_log.py can tell a warning from the banner.
           "--logger.messageFormat", LOG_FORMAT]
    log = open(SERVER_LOG, "w")  # noqa: SIM115 - closed at teardown; a file, not a pipe (a full pipe blocks)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with code {proc.returncode}:\n{_log_tail()}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit did not answer /_stcore/health within {SERVER_START_S:.0f} s:\n{_log_tail()}",
                            pytrace=False)
            time.sleep(0.25)
        record_timing("server_health_s", round(time.perf_counter() - t0, 3))
        yield {"base": base, "t0": t0}
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        log.close()
    # After this session's last test (under xdist, this worker's): the whole log holds no warning and no traceback.
    problems = server_log_problems(SERVER_LOG.read_text(errors="replace").splitlines())
    if problems:
        pytest.fail(f"the e2e server ({SERVER_LOG.name}) logged:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium: the system one when present, else Playwright's own."""
    if sync_playwright is None:
        unavailable("the Python package playwright is not installed (pip install -r requirements-dev.txt)")
    pw = sync_playwright().start()
    try:
        if Path(SYSTEM_CHROMIUM).exists():
            options = {"executable_path": SYSTEM_CHROMIUM}
        elif Path(pw.chromium.executable_path).exists():
            options = {}
        else:
            unavailable(f"no Chromium: neither {SYSTEM_CHROMIUM} nor Playwright's browser "
                        f"({pw.chromium.executable_path}; `playwright install chromium`)")
        try:
            b = pw.chromium.launch(headless=True, args=LAUNCH_ARGS, **options)
        except PlaywrightError as exc:
            unavailable(f"Chromium does not start: {exc}")
        yield b
        b.close()
    finally:
        pw.stop()


class App:
    """A browser tab on the app, with explicit waits for Streamlit's script runs."""

    def __init__(self, page, base: str):
        self.page = page
        self.base = base
        self.dialogs: list[str] = []
        self.page_errors: list[str] = []
        page.on("dialog", self._on_dialog)
        page.on("pageerror", self._on_page_error)
        # Runs ended, counted on the websocket too: a run quick enough (a fragment's 10-50 ms, a replay) can start and
        # end inside one React render, so the page's script state never shows 'running' and the DOM count stays.
        self.finished = 0
        self._marks: dict[int, int] = {}  # DOM count handed out by runs() -> websocket count at that moment
        page.on("websocket", self._watch)

    def _watch(self, ws) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        def received(payload) -> None:
            if isinstance(payload, bytes):
                msg = ForwardMsg()
                msg.ParseFromString(payload)
                if msg.WhichOneof("type") == "script_finished":
                    self.finished += 1
        ws.on("framereceived", received)

    def detach(self) -> None:
        """Stop listening to the tab (it goes on to another test)."""
        for event, listener in (("dialog", self._on_dialog), ("pageerror", self._on_page_error),
                                ("websocket", self._watch)):
            self.page.remove_listener(event, listener)

    def _on_page_error(self, exc) -> None:
        self.page_errors.append(str(exc))

    def _on_dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    # --- navigation and waiting -------------------------------------------------------------------
    def url(self, path: str = "", params: dict | None = None) -> str:
        query = ("?" + urlencode({k: _param(v) for k, v in params.items()})) if params else ""
        return f"{self.base}/{path.lstrip('/')}{query}"

    def open(self, path: str = "", params: dict | None = None) -> float:
        """Load ``path`` (url path of a page) with query ``params``; returns seconds until settled."""
        t0 = time.perf_counter()
        self._marks.clear()  # counts of the tab's last document: a new one counts from 0 again
        self.page.goto(self.url(path, params), wait_until="domcontentloaded")
        self.settle(before=0)
        return time.perf_counter() - t0

    def runs(self) -> int:
        """Runs ended in this document (a mark for :meth:`settle`)."""
        ended = self.page.evaluate("() => window.__e2e ? window.__e2e.ended : 0")
        self._marks[ended] = self.finished
        return ended

    def _settled(self, before: int) -> bool:
        if self.page.evaluate(SETTLED_JS, {"before": before, "quiet": QUIET_MS}):
            return True
        mark = self._marks.get(before)  # a run the page never showed as running, seen on the websocket
        return mark is not None and self.finished > mark and \
            bool(self.page.evaluate(SETTLED_JS, {"before": -1, "quiet": QUIET_MS}))

    def settle(self, before: int | None = None) -> None:
        """Wait until a script run that ended after ``before`` runs has been followed by quiet."""
        if before is None:
            before = self.runs()
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while not self._settled(before):  # polled from here, so the websocket events are delivered meanwhile
            if time.monotonic() > deadline:
                state = self.page.evaluate(UNSETTLED_JS, before)
                self.screenshot("unsettled")
                raise AssertionError(f"the app did not settle: {state}, runs seen on the websocket {self.finished}")
            self.page.wait_for_timeout(100)

    def type_in_cell(self, grid_selector: str, n_cols: int, row: int, col: int, text: str, *,
                     index_px: float = 0) -> None:
        """Type ``text`` into data cell (row, col) of the data editor under ``grid_selector`` (``n_cols`` data
        columns, an index column ``index_px`` wide), as a learner does: double-click the cell, type, Enter. The
        grid is a canvas: the cell is found from the grid's box (Streamlit 1.67's 35 px header and rows)."""
        grid = self.page.locator(f'{grid_selector} [data-testid="stDataFrame"]')
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        x = box["x"] + index_px + (box["width"] - index_px) / n_cols * (col + 0.5)
        y = box["y"] + 35 * (row + 1.5)

        def edit():
            self.page.mouse.dblclick(x, y)  # opens the cell's editor: a text box over the canvas
            field = self.page.locator("textarea.gdg-input").first
            field.wait_for(state="visible")
            field.fill(text)
            field.press("Enter")
        self.act(edit)

    def act(self, action, *, idempotent: bool = False) -> None:
        """Do ``action`` (something that makes the app rerun), then wait for the app to settle.

        ``idempotent``: the action sets a value (doing it twice is harmless), so when no script
        run has started ``RUN_START_MS`` after it (a click or key press the page swallowed,
        e.g. while it was still laying out), it is done again, up to twice.
        """
        before = self.runs()
        started = self.page.evaluate("() => window.__e2e ? window.__e2e.started : 0")
        finished = self.finished
        for attempt in range(3 if idempotent else 1):
            if attempt:
                TIMINGS["actions_repeated"] = TIMINGS.get("actions_repeated", 0) + 1  # each cost RUN_START_MS
            action()
            if not idempotent or self._run_started(before, started, finished):
                break  # (after a third attempt settle() below reports the state)
        self.settle(before)

    def _run_started(self, before: int, started: int, finished: int) -> bool:
        """Whether a script run has started (or ended) since the marks, within ``RUN_START_MS``.

        Polled from here, so the websocket's events are delivered meanwhile: a quick run (a cached page, a
        fragment) can start and end inside one React render and never show as 'running' in the page, and a wait
        on the page's counters alone took the whole ``RUN_START_MS`` and repeated the action (20 s each)."""
        deadline = time.monotonic() + RUN_START_MS / 1000
        while True:
            if self.finished > finished or self.page.evaluate(
                    "({before, started}) => { const s = window.__e2e;"
                    " return !!s && (s.started > started || s.ended > before); }",
                    {"before": before, "started": started}):
                return True
            if time.monotonic() > deadline:
                return False
            self.page.wait_for_timeout(50)

    # --- reading --------------------------------------------------------------------------------
    def charts(self) -> list[dict]:
        return self.page.evaluate(CHARTS_JS)

    def chart(self, key: str) -> dict:
        found = [c for c in self.charts() if c["key"] == key]
        assert found, f"no chart with key {key!r}; charts: {[c['key'] for c in self.charts()]}"
        return found[0]

    def z(self, key: str) -> list[list]:
        return self.chart(key)["traces"][0]["z"]

    def z_signature(self, key: str) -> str:
        return self.page.evaluate(Z_SIGNATURE_JS, key)

    def wait_chart_changed(self, key: str, old_signature: str) -> None:
        """Wait until chart ``key`` plots other numbers than ``old_signature`` (from :meth:`z_signature`)."""
        self.page.wait_for_function(f"({{key, old}}) => ({Z_SIGNATURE_JS})(key) !== old",
                                    arg={"key": key, "old": old_signature}, timeout=TIMEOUT_MS, polling="raf")

    def cell_point(self, key: str, row: int, col: int) -> dict:
        """Viewport position of heat-map cell (row, col) of chart ``key`` (scrolled into view)."""
        self.page.locator(f".st-key-{key} .js-plotly-plot").first.scroll_into_view_if_needed()
        return self.page.evaluate(CELL_POINT_JS, {"key": key, "row": row, "col": col})

    def hover(self, key: str, row: int, col: int) -> str:
        """Point the mouse at a heat-map cell and return the hover label's text once it is steady."""
        self.page.mouse.move(1, 1)  # away first: no label left over from an earlier point
        label = self.page.locator(f".st-key-{key} .hoverlayer .hovertext")
        label.first.wait_for(state="detached", timeout=30_000)
        p = self.cell_point(key, row, col)
        self.page.mouse.move(p["x"], p["y"])
        label.first.wait_for(state="attached", timeout=30_000)
        text = None
        for _ in range(50):  # Plotly throttles hover events: read until two reads 150 ms apart agree
            self.page.wait_for_timeout(150)
            now = label.first.text_content()
            if now == text:
                return now
            text = now
        return text

    def widget_value(self, key: str):
        return self.page.evaluate(WIDGET_VALUE_JS, key)

    def exceptions(self) -> list[str]:
        return self.page.locator('[data-testid="stException"]').all_inner_texts()

    def nav(self) -> list[dict]:
        """The pages the sidebar navigation shows: ``[{"path", "title"}]`` in order."""
        more = self.page.locator('[data-testid="stSidebarNavViewButton"]')
        if more.count() and "more" in (more.first.inner_text() or "").lower():
            more.first.dispatch_event("click")  # no pointer moves: on a touch screen a mouse event hides the toolbars
        return self.page.evaluate(NAV_JS)

    def go_to_page(self, path: str) -> None:
        """Click the navigation link of ``path`` (keeps the session, like a learner does)."""
        links = self.page.locator('[data-testid="stSidebarNav"] a')
        matches = [i for i in range(links.count())
                   if urlparse(links.nth(i).get_attribute("href") or "").path.strip("/") == path]
        assert matches, f"no navigation link to {path!r}: {self.nav()}"
        link = links.nth(matches[0])
        # Clicking the link of the page the browser is going to is harmless, so a click the busy page
        # swallowed (no script run started) is repeated (seen once under load, going back to the default page).
        self.act(link.click, idempotent=True)
        self.page.wait_for_function("(p) => location.pathname.replace(/^\\/+|\\/+$/g, '') === p", arg=path,
                                    timeout=TIMEOUT_MS)

    def screenshot(self, name: str, *, pointer_away: bool = True) -> Path:
        """A full-page PNG in ``.screenshots/<name>.png``; ``pointer_away``: the mouse is moved to the corner first (no
        hover label in the picture; not on a touch screen, where a mouse event hides the elements' toolbars)."""
        SHOTS.mkdir(exist_ok=True)
        out = SHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
        if pointer_away:
            self.page.mouse.move(1, 1)
        self.page.screenshot(path=str(out), full_page=True)
        return out

    # --- setting controls the way a learner does ------------------------------------------------------
    def set_widget(self, key: str, value) -> None:
        box = self.page.locator(f".st-key-{key}")
        box.first.wait_for(state="visible", timeout=TIMEOUT_MS)
        kind = box.first.evaluate("""(b) => {
            for (const t of ['stSlider', 'stNumberInput', 'stTextInput', 'stTextArea', 'stSelectbox', 'stRadio',
                             'stButtonGroup', 'stCheckbox'])
                if (b.querySelector('[data-testid="' + t + '"]')) return t;
            return b.querySelector('input[type=checkbox]') ? 'stCheckbox' : null; }""")
        if self._shows(key, value):
            return  # nothing to change: no rerun would come
        if kind == "stSlider":
            self._set_slider(key, int(value))
        elif kind in ("stNumberInput", "stTextInput", "stTextArea"):
            field = box.first.locator("input, textarea").first

            def type_it():
                field.fill(str(value))
                field.press("Enter" if kind != "stTextArea" else "Control+Enter")
            self.act(type_it, idempotent=True)
        elif kind == "stCheckbox":
            if bool(self.widget_value(key)) != bool(value):
                self.act(lambda: box.first.locator("label").first.click())
        elif kind == "stRadio":
            option = box.first.locator('[data-testid="stRadioOption"]').filter(has_text=str(value)).first
            self.act(option.click, idempotent=True)
        elif kind == "stButtonGroup":
            self.act(lambda: box.first.locator("button").filter(has_text=str(value)).first.click())
        elif kind == "stSelectbox":
            def choose():
                self.open_selectbox(key)
                self.page.get_by_role("option", name=str(value), exact=True).first.click()
            self.act(choose, idempotent=True)
        else:
            raise AssertionError(f"do not know how to set widget {key!r} (kind {kind})")
        assert self._shows(key, value), f"{key}: set {value!r}, shows {self.widget_value(key)!r}"

    def _shows(self, key: str, value) -> bool:
        got = self.widget_value(key)
        if isinstance(value, bool):
            return got is value
        # A radio shows its label, "per-token: one vector per word" for the option "per-token".
        return got == str(value) or (isinstance(got, str) and got.startswith(f"{value}:"))

    def open_selectbox(self, key: str) -> list[str]:
        """Open selectbox ``key``'s list of options; returns the options' texts.

        The box is scrolled into view first: a click that has to scroll opens the list and the scroll closes it
        again (measured: 5-6 s lost on every such box, the whole wait for the list). Should a click still open
        nothing, try again, then the keyboard.
        """
        button = self.page.locator(f'.st-key-{key} [data-testid="stSelectbox"] [role="group"] button').first
        option = self.page.get_by_role("option").first
        button.scroll_into_view_if_needed()
        for attempt in range(4):
            if attempt < 3:
                button.click()
            else:
                field = self.page.locator(f".st-key-{key} input").first
                field.focus()
                field.press("ArrowDown")
            if attempt:
                TIMINGS["selectbox_opens_repeated"] = TIMINGS.get("selectbox_opens_repeated", 0) + 1  # 5 s each
            try:
                option.wait_for(state="visible", timeout=5_000)
                return [t.strip() for t in self.page.get_by_role("option").all_inner_texts()]
            except PlaywrightError:
                continue
        raise AssertionError(f"the options of selectbox {key!r} do not open")

    def table_column(self, index: int = 1, nth: int = 0) -> list[str]:
        """Texts of column ``index`` (1 = first) of the ``nth`` visible st.dataframe, as drawn (accessible grid)."""
        self.page.wait_for_function(
            """([nth, index]) => {
                 const t = document.querySelectorAll('[data-testid="stDataFrame"] table')[nth];
                 return !!t && [...t.querySelectorAll('td[aria-colindex="' + index + '"]')].some((e) => e.textContent);
               }""", arg=[nth, index], timeout=60_000)
        table = self.page.locator('[data-testid="stDataFrame"] table').nth(nth)
        return [t for t in table.locator(f'td[aria-colindex="{index}"]').all_text_contents() if t]

    def _set_slider(self, key: str, value: int) -> None:
        """Keyboard, one step at a time (each step is a rerun, as for a learner pressing →)."""
        thumb = self.page.locator(f".st-key-{key} input[type=range]").first
        for _ in range(1000):
            current = int(thumb.input_value())
            if current == value:
                return
            arrow = "ArrowRight" if value > current else "ArrowLeft"
            self.act(lambda a=arrow: (thumb.focus(), thumb.press(a)))
        raise AssertionError(f"slider {key} did not reach {value}")

    def slider_step(self, key: str, arrow: str = "ArrowRight") -> None:
        thumb = self.page.locator(f".st-key-{key} input[type=range]").first
        thumb.focus()
        thumb.press(arrow)


def _param(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


# --- the tour: every lesson page once per language, measured at a desktop's width and, resized in place, a phone's ---

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
LANGS = ("en", "pt", "tr")
SLACK_PX = 2.0  # boxes that touch (a text box's line-height padding, a glyph's side bearing) do not overlap
RELAID_QUIET_MS = 300  # after a resize, the layout counts as done once it has not changed for this long

# Every text box of every Plotly chart on the page, and the pairs that overlap or leave the chart: tick labels,
# annotations, heat-map and bar cell text, the chart's title and its axis titles, colour-bar ticks and legend entries.
# A box is the text's own rectangle (getBBox) carried to the screen by its transform (getScreenCTM), so a rotated tick
# label is a rotated rectangle; two boxes overlap when they overlap on every separating axis (SAT) by more than
# `slack`, and two heat-map or bar numbers must keep a gap of `slack` (numbers that touch read as one number). A text
# box that reaches outside its chart is cut off (a cut title, a note clipped at the edge).
OVERLAPS_JS = """
(slack) => {
  const kinds = [
    ['tick', 'g.xtick > text, g.ytick > text, g[class*="xtick"] > text, g[class*="ytick"] > text'],
    ['annotation', 'g.annotation text'],
    ['cell', 'g.heatmap-label text, g.textpoint text, text.bartext'],
    ['title', 'text.gtitle, text[class*="xtitle"], text[class*="ytitle"]'],
    ['colorbar', 'g.colorbar text'],
    ['legend', 'g.legend text'],
  ];
  const visible = (e) => {
    if (!e.textContent.trim()) return false;
    for (let n = e; n && n.tagName !== 'svg'; n = n.parentNode) {
      const cs = getComputedStyle(n);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) return false;
    }
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const corners = (e) => {
    const b = e.getBBox(), m = e.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const axes = (q) => [0, 1].map((i) => {
    const dx = q[i + 1][0] - q[i][0], dy = q[i + 1][1] - q[i][1], n = Math.hypot(dx, dy) || 1;
    return [dx / n, dy / n];
  });
  const depth = (p, q) => {  // the smallest overlap of the two quads' projections over the four axes
    let d = Infinity;
    for (const [ax, ay] of [...axes(p), ...axes(q)]) {
      const pp = p.map(([x, y]) => x * ax + y * ay), qq = q.map(([x, y]) => x * ax + y * ay);
      d = Math.min(d, Math.min(Math.max(...pp), Math.max(...qq)) - Math.max(Math.min(...pp), Math.min(...qq)));
    }
    return d;
  };
  const out = [];
  document.querySelectorAll('[data-testid="stPlotlyChart"]').forEach((c, i) => {
    const host = c.closest('[class*="st-key-"]');
    const m = host ? host.className.match(/st-key-(\\S+)/) : null;
    const key = m ? m[1] : 'chart-' + i;
    const g = c.querySelector('.js-plotly-plot');
    if (!g) return;
    const frame = g.querySelector('svg.main-svg').getBoundingClientRect();
    const seen = new Set();
    const boxes = [];
    for (const [kind, sel] of kinds) {
      for (const e of g.querySelectorAll(sel)) {
        if (seen.has(e) || !visible(e)) continue;
        seen.add(e);
        boxes.push({kind, text: e.textContent.trim().slice(0, 40), q: corners(e)});
      }
    }
    const problems = [];
    for (const a of boxes) {
      const xs = a.q.map((p) => p[0]), ys = a.q.map((p) => p[1]);
      if (Math.min(...xs) < frame.left - slack || Math.max(...xs) > frame.right + slack
          || Math.min(...ys) < frame.top - slack || Math.max(...ys) > frame.bottom + slack)
        problems.push(`${a.kind} '${a.text}' is cut off (outside the chart)`);
    }
    for (let x = 0; x < boxes.length; x++) {
      for (let y = x + 1; y < boxes.length; y++) {
        const both = boxes[x].kind === 'cell' && boxes[y].kind === 'cell';
        const d = depth(boxes[x].q, boxes[y].q);
        if (d > (both ? -slack : slack))
          problems.push(`${boxes[x].kind} '${boxes[x].text}' overlaps ${boxes[y].kind} '${boxes[y].text}' `
                        + `(by ${d.toFixed(1)} px)`);
      }
    }
    out.push({key, n_boxes: boxes.length, problems, right: g.getBoundingClientRect().right});
  });
  return out;
}
"""

# Text the page lays out wider than its column (a long word that cannot wrap): the main block's elements whose right
# edge passes the main block's (a display formula scrolls inside its own box, which is checked, not its content).
WIDER_JS = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]').getBoundingClientRect();
  return [...document.querySelectorAll('[data-testid="stMainBlockContainer"] :is(p, li, h1, h2, h3, label, button)')]
    .filter((e) => !e.closest('.katex-display, [data-testid="stDataFrame"], .js-plotly-plot, details:not([open])'))
    .filter((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > main.right + 1; })
    .map((e) => e.innerText.slice(0, 60));
}"""

# Text cut short with "…" (a CSS ellipsis): a lesson's name in the sidebar, a control's label; and Streamlit's
# English "(required)" tag beside a choice box's label (app.css hides it).
ELLIPSIS_JS = """() => [...document.querySelectorAll('[data-testid="stSidebar"] *, [data-testid="stMain"] *')]
  .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1
                 && getComputedStyle(e).textOverflow === 'ellipsis' && e.textContent.trim())
  .map((e) => 'cut with …: ' + e.textContent.trim().slice(0, 60))
  .concat([...document.querySelectorAll('[data-testid="stWidgetLabelRequired"]')]
    .filter((e) => e.getBoundingClientRect().width > 0).map((e) => 'shown: ' + e.textContent))"""

# Every chart's margins: what Plotly laid it out with (``_fullLayout._size``) against what the app sent
# (``layout.margin``); a chart whose automargin grew them was laid out and drawn twice (issue 20).
MARGINS_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c) => {
  const g = c.querySelector('.js-plotly-plot');
  const key = [...(c.closest('[class*="st-key-"]')?.classList || [])].find((x) => x.startsWith('st-key-'));
  if (!g || !g._fullLayout) return {key, drawn: false};
  const s = g._fullLayout._size, m = (g.layout && g.layout.margin) || {};
  return {key: (key || '').slice(7), drawn: true, size: [s.l, s.r, s.t, s.b].map(Math.round),
          sent: [m.l, m.r, m.t, m.b]};
})"""

# Heat-map cell text that fits only a chart at least W px wide is drawn in the font family "cells-min-W" and hidden
# by app.css while its chart (a size container) is narrower: per chart, its width and the texts shown where they do
# not fit or hidden where they do.
CELL_TEXT_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c, i) => {
  const host = c.closest('[class*="st-key-"]');
  const m = host ? host.className.match(/st-key-(\\S+)/) : null;
  const width = c.getBoundingClientRect().width;
  const wide = [...c.querySelectorAll('text')]
    .map((e) => [e, (e.getAttribute('style') || '').match(/cells-min-(\\d+)/)]).filter(([, w]) => w)
    .map(([e, w]) => ({min: +w[1], shown: getComputedStyle(e).display !== 'none'}));
  return {key: m ? m[1] : 'chart-' + i, width, wide: wide.length, shown: wide.filter((t) => t.shown).length,
          wrong: wide.filter((t) => t.shown !== (width >= t.min)).length};
})"""

# Visible toolbars on the page and what they cover: a toolbar overlaps another element container's text (its line
# boxes, not its block's width), by more than 1 px both ways; and Plotly's mode bars shown.
TOOLBARS_JS = """() => {
  const shown = (e) => e.offsetParent !== null && e.getBoundingClientRect().height > 0
                       && parseFloat(getComputedStyle(e).opacity) > 0;
  const modebars = [...document.querySelectorAll('.modebar-container')].filter(shown).length;
  const containers = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
    .filter((c) => c.getBoundingClientRect().height > 0 && !c.querySelector('[data-testid="stElementContainer"]'));
  const covered = [];
  let toolbars = 0;
  for (const t of document.querySelectorAll('[data-testid="stElementToolbar"]')) {
    if (!shown(t) || t.closest('details:not([open])')) continue;  // in a closed expander: clipped, not seen
    toolbars += 1;
    const r = t.getBoundingClientRect(), own = t.closest('[data-testid="stElementContainer"]');
    for (const c of containers) {
      if (c === own || c.contains(t) || t.contains(c)) continue;
      for (const n of c.querySelectorAll('p, li, h1, h2, h3, span.katex, [data-testid="stCaptionContainer"]')) {
        const range = document.createRange();
        range.selectNodeContents(n);
        const hit = [...range.getClientRects()].some((b) => b.width > 0
          && Math.min(r.right, b.right) - Math.max(r.left, b.left) > 1
          && Math.min(r.bottom, b.bottom) - Math.max(r.top, b.top) > 1);
        if (hit) { covered.push(n.innerText.slice(0, 60)); break; }
      }
    }
  }
  return {modebars, toolbars, covered};
}"""

# Every display formula: its width against its box, whether it scrolls, its font size against the page's body text.
FORMULAS_JS = """() => {
  const paragraphs = document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p');
  const text = Math.max(...[...paragraphs].map((p) => parseFloat(getComputedStyle(p).fontSize)));
  return [...document.querySelectorAll('.katex-display')].filter((e) => e.getBoundingClientRect().height > 0)
    .map((e) => {
      const cs = getComputedStyle(e);
      const before = e.scrollLeft;
      e.scrollLeft = e.scrollWidth;
      const scrolled = e.scrollLeft - before;
      e.scrollLeft = before;
      return {tex: (e.querySelector('annotation') || {}).textContent?.slice(0, 50),
              wide: e.scrollWidth > e.clientWidth + 1,
              right: e.getBoundingClientRect().right, overflow: cs.overflowX, scrolled, shadow: cs.backgroundImage,
              font: parseFloat(getComputedStyle(e.querySelector('.katex')).fontSize), text};
    });
}"""

# The real model's head maps: plot area (Plotly's own layout), key labels drawn, the colour bar's box against them.
HEAD_MAPS = ("rm_fig_head", "rm_fig_layer_mean", "rm_fig_group_0")
MAPS_JS = """(keys) => Object.fromEntries(keys.map((key) => {
  const g = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  if (!g) return [key, null];
  const s = g._fullLayout._size;
  const labels = [...g.querySelectorAll('g.xtick > text')].filter((t) => t.textContent.trim());
  const bar = g.querySelector('g.colorbar');
  return [key, {plot_w: s.w, width: g._fullLayout.width, keys: labels.length,
                orientation: g._fullData[0].colorbar.orientation,
                bar_top: bar ? bar.getBoundingClientRect().top : null,
                keys_bottom: Math.max(...labels.map((t) => t.getBoundingClientRect().bottom)),
                chart_bottom: g.getBoundingClientRect().bottom,
                bar_bottom: bar ? bar.getBoundingClientRect().bottom : null}];
}))"""

# What a resize changes: the window, each chart's drawn size against its box, the page's height. Laid out again once
# no chart is wider than its box (Plotly has redrawn it at the new width) and nothing has changed for a while.
LAYOUT_JS = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .filter((c) => !c.closest('details:not([open])')).map((c) => {
    const g = c.querySelector('.js-plotly-plot');
    const box = Math.round(c.getBoundingClientRect().width);
    return g && g._fullLayout ? [Math.round(g._fullLayout.width), Math.round(g._fullLayout.height), box] : [0, 0, -1];
  });
  const main = document.querySelector('[data-testid="stMain"]');
  return {fits: charts.every(([w, , box]) => w <= box + 1),
          signature: JSON.stringify([innerWidth, matchMedia('(hover: none)').matches, charts,
                                     main ? main.scrollHeight : 0])};
}"""


# Open every closed expander that holds a chart and is not bound to the link (a bound one, keyed, reruns the page: the
# real model's six steps): a chart in a closed expander is drawn at the width its box had when the page loaded and is
# not drawn again when the window changes (Plotly redraws it when it opens), so the tour reads it open.
OPEN_CHART_EXPANDERS_JS = """() => {
  let opened = 0;
  for (const d of document.querySelectorAll('details:not([open])')) {
    const wrapper = d.closest('[data-testid="stLayoutWrapper"]');
    const keyed = wrapper && [...wrapper.classList].some((c) => c.startsWith('st-key-'));
    if (keyed || !d.querySelector('[data-testid="stPlotlyChart"]')) continue;
    d.querySelector('summary').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));
    opened += 1;
  }
  return opened;
}"""


def wait_laid_out(app: App) -> None:
    """Wait until every chart has been drawn at its box's width and the layout has been still for
    ``RELAID_QUIET_MS`` (after a resize: Plotly redraws each chart once its box has the new width)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    last, since = None, time.monotonic()
    while True:
        now = app.page.evaluate(LAYOUT_JS)
        if now["signature"] != last or not now["fits"]:
            last, since = now["signature"], time.monotonic()
        elif time.monotonic() - since >= RELAID_QUIET_MS / 1000:
            return
        if time.monotonic() > deadline:
            app.screenshot("not-laid-out")
            raise AssertionError(f"the page was not laid out again within {TIMEOUT_MS} ms: {now}")
        app.page.wait_for_timeout(100)


def to_phone(app: App) -> None:
    """Resize the page in place (no reload, no rerun) to a phone's width, then wait for the charts to be drawn again.

    Touch cannot be switched on in place: Chromium's touch emulation (``Emulation.setTouchEmulationEnabled``) makes
    ``hover: none`` match at once, but Streamlit decides at render time whether an element's toolbar is shown without a
    hover (its data frames read ``pointer: coarse`` once), so a page must be a touch screen from its first load: the
    tour's tabs are (:func:`tour_context`, ``has_touch``)."""
    app.page.set_viewport_size(PHONE)
    wait_laid_out(app)


def layout_record(app: App, *, phone: bool) -> dict:
    """What the page shows at its present width: the charts' text boxes (overlaps, cut text), text wider than the
    column or cut with "…", the charts' cell texts; on a desktop also the charts' margins (what
    ``test_charts_keep_the_margins_they_were_sent`` reads); on a phone also whether it is a touch screen, the toolbars,
    the display formulas and the real model's head maps (what the tests read at that width only)."""
    out = {"charts": app.page.evaluate(OVERLAPS_JS, SLACK_PX), "wider": app.page.evaluate(WIDER_JS),
           "cut": app.page.evaluate(ELLIPSIS_JS), "cells": app.page.evaluate(CELL_TEXT_JS),
           "width": app.page.evaluate("() => innerWidth")}
    if phone:
        out |= {"toolbars": app.page.evaluate(TOOLBARS_JS), "formulas": app.page.evaluate(FORMULAS_JS),
                "maps": app.page.evaluate(MAPS_JS, list(HEAD_MAPS)),
                "touch": app.page.evaluate("() => matchMedia('(hover: none)').matches")}
    else:  # the margins a chart was laid out with are read at the width the page loaded at
        out["margins"] = app.page.evaluate(MARGINS_JS)
    return out


def layout_problems(record: dict, where: str) -> list[str]:
    """The layout faults in one :func:`layout_record`: overlapping or cut chart text, text wider than the column, text
    cut with "…", a chart wider than the window."""
    problems = []
    if record["wider"]:
        problems.append(f"{where}: wider than the screen: {record['wider'][:3]}")
    if record["cut"]:
        problems.append(f"{where}: {record['cut'][:3]}")
    for chart in record["charts"]:
        problems += [f"{where}, chart {chart['key']}: {p}" for p in chart["problems"][:5]]
        if len(chart["problems"]) > 5:
            problems.append(f"{where}, chart {chart['key']}: … and {len(chart['problems']) - 5} more")
        if chart["right"] > record["width"] + 1:
            problems.append(f"{where}, chart {chart['key']}: reaches {chart['right']:.0f} px, past the window's "
                            f"{record['width']} px")
    return problems


def record_both_widths(app: App, shot: str) -> dict:
    """The loaded page, its expanders that hold charts opened (:data:`OPEN_CHART_EXPANDERS_JS`), measured at
    :data:`DESKTOP` (the tab's width when it loaded), then resized in place to :data:`PHONE` and measured again; a
    screenshot at each width: ``.screenshots/layout-<width>-<shot>.png``."""
    if app.page.viewport_size != DESKTOP:
        app.page.set_viewport_size(DESKTOP)
    app.page.evaluate(OPEN_CHART_EXPANDERS_JS)
    wait_laid_out(app)
    desktop = layout_record(app, phone=False)
    app.screenshot(f"layout-{DESKTOP['width']}-{shot}", pointer_away=False)
    to_phone(app)
    phone = layout_record(app, phone=True)
    app.screenshot(f"layout-{PHONE['width']}-{shot}", pointer_away=False)
    return {"desktop": desktop, "phone": phone}


def new_tab(context, base: str) -> App:
    """A new tab (its own Streamlit session) at :data:`DESKTOP`'s width."""
    page = context.new_page()
    page.set_viewport_size(DESKTOP)
    return App(page, base)


def visit(app: App, path: str, params: dict | None, shot: str) -> dict:
    """Load ``path`` with ``params`` as a new document in ``app``'s tab (a tab of :func:`tour_context`) at a desktop's
    width, record what the page shows (title, address, dialogs, exceptions, charts, navigation) and its layout at both
    widths (:func:`record_both_widths`).

    A new document is a first load: a new Streamlit session (nothing kept from the tab's last page: a control set on
    one page shows its default after a load in the same tab, seen in the browser 2026-12-07), the page script's first
    run, and the touch screen read at render time (Streamlit's toolbars, ``hover: none``). The window is put back to
    the desktop's width before the load, so the page is first laid out at 1440 px. The dialogs and JavaScript errors
    recorded are this load's. A page that does not load is recorded with its ``error`` (the tests that read the tour
    report it)."""
    rec = {"path": path, "params": params or {}, "error": None}
    dialogs, errors = len(app.dialogs), len(app.page_errors)
    try:
        if app.page.viewport_size != DESKTOP:
            app.page.set_viewport_size(DESKTOP)
        rec["load_s"] = round(app.open(path, params), 3)
        rec |= app.page.evaluate(PAGE_JS) | {"url": app.page.url, "address": urlparse(app.page.url).path.strip("/"),
                                             "nav": app.nav()}
        t0 = time.perf_counter()
        rec |= record_both_widths(app, shot)
        rec["measure_s"] = round(time.perf_counter() - t0, 3)
    except Exception as exc:  # noqa: BLE001 - reported by the tests that read the record, with the others
        rec["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        with contextlib.suppress(Exception):
            app.screenshot(f"tour-failed-{shot}")
    finally:
        rec["browser_dialogs"], rec["page_errors"] = app.dialogs[dialogs:], app.page_errors[errors:]
    return rec


def visit_all(context, base: str, pages: list[tuple[str, dict | None, str]]) -> list[dict]:
    """:func:`visit` each ``(path, params, shot)`` of ``pages`` in order, in one tab of ``context``: each page a new
    document (a first load and a new session, as in a new tab) without a new tab's cost (measured 2026-12-07, load
    4-5, the same pages alternately: 2.5-11 s from the script run's end to the charts drawn in a new tab, 1.4-3.9 s in
    the same tab, which has Streamlit's and Plotly's code compiled already). After a page that did not load, the
    next page gets a new tab (the old one may be stuck or crashed)."""
    out, app = [], new_tab(context, base)
    try:
        for path, params, shot in pages:
            out.append(visit(app, path, params, shot))
            if out[-1]["error"]:
                with contextlib.suppress(Exception):
                    app.page.close()
                app = new_tab(context, base)
    finally:
        with contextlib.suppress(Exception):
            app.page.close()
    return out


def take_tour(context, base: str, lang: str) -> dict[str, dict]:
    """One visit of every lesson (``explorer.lessons.LESSONS``, each at its own path, the default one included) in
    ``lang`` at its defaults: ``{lesson name: record}`` (:func:`visit_all`)."""
    from explorer.lessons import LESSONS

    t0 = time.perf_counter()
    params = {} if lang == "en" else {"lang": lang}
    records = visit_all(context, base, [(e.url_path, params, e.name if lang == "en" else f"{e.name}-{lang}")
                                        for e in LESSONS])
    out = {e.name: r for e, r in zip(LESSONS, records, strict=True)}
    record_timing(f"tour_{lang}_s", round(time.perf_counter() - t0, 1))
    record_timing(f"tour_{lang}_page_load_s", {k: r.get("load_s") for k, r in out.items()})
    record_timing(f"tour_{lang}_measure_s", {k: r.get("measure_s") for k, r in out.items()})
    return out


@pytest.fixture(scope="session")
def tour_context(browser):
    """The tour's browser context: a touch screen (``has_touch``: no hover, CSS ``@media (hover: none)``, Streamlit's
    toolbars shown without a hover) from each page's first load, at a desktop's width, then a phone's.

    The desktop is measured as a touch screen too (one load per page serves both widths): Plotly's mode bar is hidden
    and the element toolbars are shown, and no desktop check reads either (chart text, margins, cell text and the
    column's width are the same with a mouse)."""
    ctx = browser.new_context(viewport=DESKTOP, has_touch=True)
    ctx.add_init_script(OBSERVER_JS)
    ctx.set_default_timeout(TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def tour(ready, tour_context):
    """``tour(lang)``: the records of :func:`take_tour` in ``lang``, taken once per session on first use."""
    taken: dict[str, dict] = {}

    def get(lang: str) -> dict[str, dict]:
        if lang not in taken:
            taken[lang] = take_tour(tour_context, ready["base"], lang)
        return taken[lang]
    return get


@pytest.fixture(scope="session")
def context(browser):
    """One browser context for the session: its HTTP cache keeps Plotly's 4 MB bundle between tests.

    Every test's first load is a new document, and a document is its own Streamlit session (own session_state):
    the tests share one tab (:func:`st_app`), a test that needs a second session at once opens a tab of its own.
    """
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.add_init_script(OBSERVER_JS)
    ctx.set_default_timeout(TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def ready(context, server, _tab):
    """The app is up: the tests' tab (:func:`_tab`) has loaded the default page and drawn a chart (timed from server
    start), and is back at about:blank.

    Yields ``{"base", "nav", "default_charts", "default_values", "default_keys", "root_h1"}``: the navigation's pages,
    the default walkthrough's charts, the shared controls' values at defaults, the widget and element keys its page
    shows (:data:`KEYS_JS`, in the order of the page) and the title of the page at "/".
    """
    page = _tab["page"]
    app = App(page, server["base"])
    page.goto(server["base"] + "/", wait_until="domcontentloaded")
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(g => g._fullLayout)",
                           timeout=TIMEOUT_MS, polling=50)
    record_timing("server_start_to_first_chart_s", round(time.perf_counter() - server["t0"], 3))
    app.settle(before=0)
    info = {"base": server["base"], "nav": app.nav(), "default_charts": app.charts(),
            "default_values": {k: app.widget_value(k) for k in DEFAULTS}, "default_keys": page.evaluate(KEYS_JS),
            "root_h1": page.locator("h1").first.inner_text().strip()}
    record_timing("pages_in_navigation", [p["path"] or "(default)" for p in info["nav"]])
    app.detach()
    page.goto("about:blank")
    assert not app.dialogs, f"dialogs opened: {app.dialogs}"
    yield info


@pytest.fixture(scope="session")
def _tab(context):
    """The tab :func:`ready` and then the tests' :func:`st_app` use, one after the other: ``{"page": page}`` (a new one
    after a test that left its tab unusable)."""
    tab = {"page": context.new_page()}
    yield tab
    with contextlib.suppress(PlaywrightError):
        tab["page"].close()


@pytest.fixture
def st_app(ready, context, _tab):
    """A tab on the running app, at about:blank like a new tab: the test's first load is a new document, a new
    Streamlit session (nothing kept from the test before: seen in the browser 2026-12-07, a control set before a load
    in the same tab shows its default after it) and a first run. The tab is shared by the session's tests (a new tab
    compiles Streamlit's and Plotly's code again: :func:`visit_all`); after the test it goes back to about:blank (the
    session ends) at :data:`VIEWPORT`, with the test's listeners removed. Fails the test if a dialog opened."""
    app = App(_tab["page"], ready["base"])
    yield app
    app.detach()
    try:
        app.page.goto("about:blank", timeout=30_000)
        app.page.set_viewport_size(VIEWPORT)
    except PlaywrightError:  # stuck or crashed: the next test gets a new tab
        with contextlib.suppress(PlaywrightError):
            app.page.close()
        _tab["page"] = context.new_page()
    assert not app.dialogs, f"dialogs opened: {app.dialogs}"


@pytest.fixture
def phone(browser, ready):
    """A touch phone's browser context (:data:`PHONE`, ``has_touch``, ``is_mobile``: no hover, taps), on the app."""
    ctx = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    ctx.add_init_script(OBSERVER_JS)
    ctx.set_default_timeout(TIMEOUT_MS)
    yield App(ctx.new_page(), ready["base"])
    ctx.close()


@pytest.fixture
def nav_pages(ready) -> list[dict]:
    return ready["nav"]


def numbers_equal(a, b, rel: float = 1e-9) -> bool:
    """Deep equality of chart data with a relative tolerance on floats."""
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(numbers_equal(x, y, rel) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(numbers_equal(a[k], b[k], rel) for k in a)
    return a == b


def chart_numbers(charts: list[dict]) -> dict:
    """``{key: [trace data]}`` without the drawn text (comparable between two sessions)."""
    return {c["key"]: [{k: t[k] for k in ("type", "x", "y", "z", "customdata")} for t in c["traces"]]
            for c in charts}


def pytest_sessionfinish(session):
    if TIMINGS:
        SHOTS.mkdir(exist_ok=True)
        name = f"timings{'-' + WORKER if WORKER else ''}.json"
        (SHOTS / name).write_text(json.dumps(TIMINGS, indent=1, ensure_ascii=False) + "\n")


def pytest_terminal_summary(terminalreporter):
    if not TIMINGS:
        return
    terminalreporter.section("e2e timings (also in .screenshots/timings.json)")
    for k, v in TIMINGS.items():
        terminalreporter.write_line(f"{k}: {v}")
