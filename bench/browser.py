"""Browser latencies of the app against a trivial page, measured side by side in one run (issue 20, items 1-2).

Starts two real servers on free loopback ports, ``streamlit run bench/trivial_app.py`` (one slider, one 6 x 6
Plotly heat map) and ``streamlit run streamlit_app.py``, and drives both with one headless Chromium:

- **server start -> first chart**: from starting the server process to the first Plotly chart drawn in a tab
  opened as soon as ``/_stcore/health`` answers (each server in a fresh browser context: both download
  Plotly's bundle);
- **warm first chart**: a new tab on a page the server has served before (its caches warm, the browser's
  HTTP cache warm), from ``goto`` to the first chart drawn, and to every chart drawn and the run ended;
- **control -> chart**: a control moved the way a learner does (a slider one step with the arrow key, a new
  number typed with Enter, the next option of a select box), from the key press or click to the first chart
  whose numbers changed being drawn, and to the end of the run with every chart drawn ("settled"). On the
  trivial page its slider; on every lesson its own control (``OWN``) and the shared sidebar's ``d_k`` slider.
  Every step is a new value (nothing cached for it).

- **real-model actions** (issue 47, item 5): a new prompt, one generated token, a head, a window, each from the
  action to settled in the browser, against its own server compute time: the same action's script run (entrypoint
  and page, ``_run_seconds``) in AppTest in this process, from the same state (the lesson at its defaults, the same
  new values in the same order), after the servers stopped;
- **cold runs**: every lesson's script run in AppTest with Streamlit's data caches emptied before each run (fastest
  of ``--repeats``), against the trivial page's (``bench_pages.TRIVIAL_PAGE``: one ``st.plotly_chart``), the same way.

Ratios are against the trivial page's median in the same run. Budgets (issue 47, item 5; printed with pass/fail at
the end): a lesson's own control settles <= 2x the trivial slider; a real-model action <= 3x its own server compute
time; the first chart of every lesson on a first visit <= 3x the trivial page's; every lesson's cold run <= 5x the
trivial page's. Also shown: the shared sidebar control <= 3x, warm first chart <= 3x, server start -> first chart
<= 3x (issue 20).

    python bench/browser.py                       # about 15-30 minutes here (every lesson, the real model)
    python bench/browser.py --busy                # the same with one busy core beside it (bench/busy.py)
    python bench/browser.py --lessons walkthrough scaling --repeats 5 --out .benchmarks/browser.json

Bounded: ``--repeats`` moves per control (default 3), ``--timeout`` seconds per wait (default 90).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import start_server, stop_server  # noqa: E402
from explorer.lessons import LESSONS  # noqa: E402
from explorer.shell.charts.door import DOOR_ENV, DOORS  # noqa: E402

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# Each lesson's own control: one that changes a part of the page (None: the lesson has no such control).
OWN = {"walkthrough": "walk_query", "lookup": "lookup_qx", "scaling": "scale_temperature", "multihead": "n_heads",
       "causal": "causal_query", "two_sentences": "two_shuffle_seed", "quiz": None,
       "real_model": "rm_head", "kv_cache": "kv_steps"}  # a head change; one more generated token
SHARED = "d_k"
# Real-model actions (issue 47, item 5): (label, lesson, control key, texts typed for a text box, else None: a slider
# one step further each time).
PROMPTS = ("The capital of France is", "Once upon a time, a small robot", "def add(a, b):\n    return")
ACTIONS = (("new prompt", "real_model", "rm_prompt", PROMPTS), ("one generated token", "kv_cache", "kv_steps", None),
           ("a head", "real_model", "rm_head", None), ("a window", "sinks", "sk_window", None))
BUDGETS = {"own control settled": 2.0, "real-model action": 3.0, "first visit: first chart": 3.0, "cold run": 5.0}
# Opened with these link values, so that the own control changes a chart (two sentences' shuffle seed changes only
# a table while the shuffle is off, its default).
OPEN_WITH = {"two_sentences": "?two_shuffle=true"}

OBSERVER_JS = """
(() => {
  const s = window.__b = {last: performance.now()};  // the page's run state last changed
  new MutationObserver(() => { s.last = performance.now(); })
    .observe(document, {subtree: true, attributes: true, attributeFilter: ['data-test-script-state']});
})();
"""
FIRST_CHART_JS = "() => [...document.querySelectorAll('.js-plotly-plot')].some((g) => g._fullLayout && g._fullData)"
# The page is idle (the run's end itself is counted on the websocket: Tab.finished).
SETTLED_JS = """
() => {
  const s = window.__b, app = document.querySelector('[data-testid="stApp"]');
  if (!s || !app) return false;
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (performance.now() - s.last < 250) return false;
  if (document.querySelector('[data-stale="true"]') || document.querySelector('[data-testid="stSkeleton"]'))
    return false;
  // The chart door's component (its module imported after its element is on the page) has not made its chart yet.
  for (const host of document.querySelectorAll('[data-testid="stBidiComponentRegular"]'))
    if (!host.querySelector('[data-testid="stPlotlyChart"]')) return false;
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const g = c.querySelector('.js-plotly-plot');
    if (!g || !g._fullLayout || !g._fullData) return false;
  }
  return true;
}
"""
# One string per drawn chart: the numbers of its traces (what a control changes).
SIGNATURES_JS = """
() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c) => {
  const g = c.querySelector('.js-plotly-plot');
  if (!g || !g._fullData) return null;
  const norm = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(norm) : v;
  return JSON.stringify(g._fullData.map((t) => [norm(t.z), norm(t.y), norm(t.x)])).slice(0, 20000);
})
"""
CHANGED_JS = """
({old}) => {
  const now = (SIGNATURES)();
  const oldSet = new Set(old.filter((s) => s !== null));
  return now.some((s) => s !== null && !oldSet.has(s)) ? 'changed' : false;
}
""".replace("SIGNATURES", SIGNATURES_JS.strip())
KIND_JS = """(b) => {
  for (const t of ['stSlider', 'stNumberInput', 'stSelectbox', 'stCheckbox', 'stButtonGroup', 'stRadio', 'stTextArea'])
    if (b.querySelector('[data-testid="' + t + '"]')) return t;
  return b.querySelector('input[type=checkbox]') ? 'stCheckbox' : null; }"""


class Tab:
    """One browser tab on a Streamlit page, with the page's runs counted on its websocket.

    A run is counted by the ``script_finished`` message the server sends at its end (a fragment's run too),
    and a rerun request by the ``rerun_script`` message the browser sends: read from the protobuf frames
    themselves, not from the page's ``data-test-script-state``, which React may never set to 'running' for a
    run quick enough to start and end in one render (a fragment's 10-50 ms run).
    """

    def __init__(self, context, timeout_s: float):
        self.page = context.new_page()
        self.timeout_ms = timeout_s * 1000
        self.finished = 0  # script_finished messages received
        self.requested = 0  # rerun_script messages sent
        self.page.on("websocket", self._watch)

    def _watch(self, ws) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        def counter(proto, kind: str, attr: str):
            def count(payload) -> None:
                if isinstance(payload, bytes):
                    msg = proto()
                    msg.ParseFromString(payload)
                    if msg.WhichOneof("type") == kind:
                        setattr(self, attr, getattr(self, attr) + 1)
            return count

        ws.on("framereceived", counter(ForwardMsg, "script_finished", "finished"))
        ws.on("framesent", counter(BackMsg, "rerun_script", "requested"))

    def until(self, check, polling_s: float = 0.02):
        """Call ``check()`` every ``polling_s`` until it is truthy; its value. ``TimeoutError`` after the timeout.

        Polled from Python (``page.evaluate`` inside ``check``), not with ``page.wait_for_function``: after a
        quick fragment rerun, ``wait_for_function`` sometimes never saw a predicate that a plain ``evaluate``
        found true (walkthrough's query box, 2026-11-30). Polling also lets the websocket handlers run.
        """
        deadline = time.perf_counter() + self.timeout_ms / 1000
        while True:
            value = check()
            if value:
                return value
            if time.perf_counter() > deadline:
                raise TimeoutError(f"not true within {self.timeout_ms / 1000:.0f} s")
            self.page.wait_for_timeout(polling_s * 1000)  # lets Playwright deliver the websocket events

    def settled(self, before: int) -> bool:
        """A run ended after ``before`` runs had, and the page is idle: not running, quiet, every chart drawn."""
        return self.finished > before and bool(self.page.evaluate(SETTLED_JS))

    def open(self, url: str) -> tuple[float, float]:
        """Seconds from ``goto`` to the first chart drawn, and to every chart drawn with the run ended."""
        before = self.finished
        t0 = time.perf_counter()
        self.page.goto(url, wait_until="commit")
        self.until(lambda: self.page.evaluate(FIRST_CHART_JS))
        first = time.perf_counter() - t0
        self.until(lambda: self.settled(before), 0.05)
        return first, time.perf_counter() - t0

    def move(self, key: str, text: str | None = None) -> tuple[float, float]:
        """Move control ``key`` to a new value (a text box: ``text`` typed, then Ctrl+Enter); seconds to the first
        changed chart drawn, and to settled.

        When no chart's numbers change, the first number is the time to settled too.
        """
        box = self.page.locator(f".st-key-{key}").first
        box.wait_for(state="visible", timeout=self.timeout_ms)
        kind = box.evaluate(KIND_JS)
        old = self.page.evaluate(SIGNATURES_JS)
        before = self.finished
        if kind == "stSlider":  # a key press the page swallows (no rerun asked for within 3 s) is pressed again
            thumb = box.locator("input[type=range]").first
            for _ in range(3):
                asked = self.requested
                arrow = "ArrowLeft" if thumb.input_value() == thumb.get_attribute("max") else "ArrowRight"
                thumb.focus()
                t0 = time.perf_counter()
                thumb.press(arrow)
                deadline = time.perf_counter() + 3
                while self.requested == asked and time.perf_counter() < deadline:
                    self.page.wait_for_timeout(20)
                if self.requested > asked:
                    break
        elif kind == "stNumberInput":
            field = box.locator("input").first
            value = field.input_value()
            new = str(int(float(value)) + 1) if value else "1"
            field.fill(new)
            t0 = time.perf_counter()
            field.press("Enter")
        elif kind == "stSelectbox":  # open the list (not timed), then click the next option (timed)
            current = box.locator("input").first.input_value()
            options = self.page.get_by_role("option")
            box.scroll_into_view_if_needed()  # a click that has to scroll opens the list and the scroll closes it
            for attempt in range(4):
                if attempt < 3:
                    box.locator('[data-testid="stSelectbox"] [role="group"] button').first.click()
                else:
                    box.locator("input").first.focus()
                    box.locator("input").first.press("ArrowDown")
                try:
                    options.first.wait_for(state="visible", timeout=5_000)
                    break
                except Exception:  # noqa: BLE001 - the first click sometimes only focuses the box
                    continue
            texts = [t.strip() for t in options.all_inner_texts()]
            shown = box.inner_text()
            i = next((k for k, t in enumerate(texts) if t == current or t in shown), -1)
            target = options.nth((i + 1) % len(texts))
            t0 = time.perf_counter()
            target.click()
        elif kind == "stCheckbox":
            t0 = time.perf_counter()
            box.locator("label").first.click()
        elif kind == "stTextArea" and text is not None:
            field = box.locator("textarea").first
            field.fill(text)
            t0 = time.perf_counter()
            field.press("Control+Enter")
        else:
            raise RuntimeError(f"do not know how to move {key!r} ({kind})")
        how = self.until(lambda: self.page.evaluate(CHANGED_JS, {"old": old}) or
                         ("settled" if self.settled(before) else None))
        chart = time.perf_counter() - t0
        self.until(lambda: self.settled(before), 0.05)
        settled = time.perf_counter() - t0
        # No chart changed (the control changes none at these settings): the run's end stands for the chart.
        return (chart if how == "changed" else settled), settled


def start_to_first_chart(browser, script: str, path: str, timeout: float, env: dict | None = None,
                         port: int | None = None) -> tuple[dict, object, str]:
    """Start a server on ``script`` (with ``env``, on ``port`` or a free one); returns (timings, process, base URL).
    The process is left running."""
    t0 = time.perf_counter()
    log = Path("/tmp") / f"browser-bench-{os.getpid()}-{Path(script).stem}.log"
    proc, base = start_server(port, script=script, log_path=log, env=env)
    health = time.perf_counter() - t0
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(OBSERVER_JS)
    tab = Tab(context, timeout)
    first, settled = tab.open(f"{base}/{path}")
    out = {"health_s": health, "first_chart_s": health + first, "settled_s": health + settled}
    context.close()
    return out, proc, base


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def apptest_move(at, key: str, text: str | None) -> None:
    """In AppTest, the move :meth:`Tab.move` makes in the browser: ``text`` into text box ``key``, else slider ``key``
    one step further (back one step at its end, as the arrow key)."""
    if text is not None:
        at.text_area(key=key).input(text)
        return
    w = at.slider(key=key)
    step = w.step or 1
    w.set_value(w.value - step if w.value + step > w.max else w.value + step)


def server_compute(repeats: int) -> dict:
    """Each real-model action's script run time in AppTest (s), ``repeats`` moves from the lesson's defaults."""
    from tests.apptest_utils import app_at

    out = {}
    for label, lesson, key, texts in ACTIONS:
        at = app_at(lesson)
        runs = []
        for i in range(repeats):
            apptest_move(at, key, texts[i % len(texts)] if texts else None)
            at.run()
            if at.exception:
                raise RuntimeError(f"{label} ({lesson}): {at.exception[0].value}")
            runs.append(at.session_state["_run_seconds"])
        out[label] = runs
        print(f"server compute, {label} ({lesson}): {json.dumps([round(r, 3) for r in runs])}", flush=True)
    return out


def cold_runs(lessons: list[str], repeats: int) -> dict:
    """The trivial page's and every lesson's cold run in AppTest (s, fastest of ``repeats``, caches emptied)."""
    from bench.bench_pages import TRIVIAL_IN_APP, TRIVIAL_PAGE, Baseline, rerun_time
    from tests.apptest_utils import app_at

    out = {"trivial": rerun_time(Baseline(TRIVIAL_PAGE).at, repeats * 4, cold=True),
           "trivial_in_app": rerun_time(Baseline(TRIVIAL_IN_APP).at, repeats * 4, cold=True), "lessons": {}}
    for name in lessons:
        out["lessons"][name] = rerun_time(app_at(name), repeats, cold=True)
        print(f"cold run, {name}: {out['lessons'][name]:.3f} s (trivial {out['trivial']:.4f} s)", flush=True)
    return out


def budget_rows(result: dict) -> list[tuple[str, str, float, float, float]]:
    """``(budget, what, measured s, reference s, limit)`` of every budget of issue 47, item 5, in this run."""
    rows = []
    ref = result["reference"]
    for name, row in result["lessons"].items():
        if "failed" in row:
            rows.append(("first visit: first chart", f"{name} (failed: {row['failed'][:60]})", float("inf"),
                         ref["first_chart"], BUDGETS["first visit: first chart"]))
            continue
        rows.append(("first visit: first chart", name, row["first_visit"][0], ref["first_chart"],
                     BUDGETS["first visit: first chart"]))
        if isinstance(row.get("own"), list):
            rows.append(("own control settled", f"{name} ({OWN[name]})", median([m[1] for m in row["own"]]),
                         ref["move_settled"], BUDGETS["own control settled"]))
    for label, got in result.get("actions", {}).items():
        compute = result.get("server_compute", {}).get(label)
        if isinstance(got, list) and compute:
            rows.append(("real-model action", label, median([m[1] for m in got]), median(compute),
                         BUDGETS["real-model action"]))
    cold = result.get("cold")
    for name, t in (cold or {}).get("lessons", {}).items():
        rows.append(("cold run", name, t, cold["trivial"], BUDGETS["cold run"]))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lessons", nargs="*", default=[e.name for e in LESSONS])
    ap.add_argument("--busy", action="store_true", help="one busy core beside the whole run (bench/busy.py)")
    ap.add_argument("--no-apptest", action="store_true", help="skip the AppTest parts (cold runs, server compute)")
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--port", type=int, help="the trivial page's server port, the app's the next (default: free ports)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--door", choices=DOORS, default="component",
                    help="how charts.show_fig sends charts, on both servers (the trivial page draws through it too)")
    args = ap.parse_args(argv)
    env = {DOOR_ENV: args.door}
    from playwright.sync_api import sync_playwright

    from bench.busy import busy_core

    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg_start": os.getloadavg(),
                    "cpus": os.cpu_count(), "repeats": args.repeats, "door": args.door, "busy": args.busy}
    with busy_core(args.busy):
        measure(args, env, result, sync_playwright)
    result["loadavg_end"] = os.getloadavg()
    report(args, result)
    return 0


def measure(args, env: dict, result: dict, sync_playwright) -> None:
    """The browser part (both servers), then the AppTest part (servers stopped): fills ``result``."""
    procs = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(headless=True, args=LAUNCH_ARGS,
                                         **({"executable_path": CHROMIUM} if Path(CHROMIUM).exists() else {}))
            trivial_start, proc_t, base_t = start_to_first_chart(browser, "bench/trivial_app.py", "", args.timeout, env,
                                                                 args.port)
            procs.append(proc_t)
            app_start, proc_a, base_a = start_to_first_chart(browser, "streamlit_app.py", "", args.timeout, env,
                                                             args.port and args.port + 1)
            procs.append(proc_a)
            result["start"] = {"trivial": trivial_start, "app": app_start}
            print(f"server start -> first chart: trivial {trivial_start['first_chart_s']:.2f} s, "
                  f"app {app_start['first_chart_s']:.2f} s", flush=True)

            context = browser.new_context(viewport={"width": 1440, "height": 900})
            context.add_init_script(OBSERVER_JS)
            warm = Tab(context, args.timeout)
            warm.open(f"{base_t}/")  # the browser's cache warm for both servers' bundles (same static files)
            tab = Tab(context, args.timeout)
            t_open = [tab.open(f"{base_t}/") for _ in range(args.repeats)]
            t_move = [tab.move("trivial_k") for _ in range(args.repeats * 2)]
            result["trivial"] = {"open": t_open, "move": t_move}
            ref_first = median([o[0] for o in t_open])
            ref_settled = median([o[1] for o in t_open])
            ref_chart = median([m[0] for m in t_move])
            ref_move_settled = median([m[1] for m in t_move])
            print(f"trivial: warm first chart {ref_first:.3f} s (settled {ref_settled:.3f}), slider -> chart "
                  f"{ref_chart:.3f} s (settled {ref_move_settled:.3f})", flush=True)

            result["lessons"] = {}
            for name in args.lessons:
                lesson = next(e for e in LESSONS if e.name == name)
                url = f"{base_a}/{'' if lesson == LESSONS[0] else lesson.url_path}{OPEN_WITH.get(name, '')}"
                try:
                    first_visit = warm.open(url)  # the lesson's first visit (the real model's load included)
                    opens = [tab.open(url) for _ in range(args.repeats)]  # the server has served it: warm
                except Exception as exc:  # noqa: BLE001 - reported in the tables, the run goes on
                    result["lessons"][name] = {"failed": f"{type(exc).__name__}: {str(exc)[:200]}"}
                    print(f"{name}: {json.dumps(result['lessons'][name])}", flush=True)
                    continue
                row = {"first_visit": first_visit, "open": opens}
                for label, key in (("own", OWN.get(name)), ("shared", SHARED)):
                    if key is None or not tab.page.locator(f".st-key-{key}").count():
                        row[label] = None
                        continue
                    try:
                        row[label] = [tab.move(key) for _ in range(args.repeats)]
                    except Exception as exc:  # noqa: BLE001 - reported in the table, the run goes on
                        row[label] = f"failed: {type(exc).__name__}: {str(exc)[:200]}"
                result["lessons"][name] = row
                print(f"{name}: {json.dumps(row)}", flush=True)
            result["reference"] = {"first_chart": ref_first, "settled": ref_settled, "move_chart": ref_chart,
                                   "move_settled": ref_move_settled}
            result["actions"] = {}
            for label, name, key, texts in ACTIONS:
                if name not in args.lessons:
                    continue
                lesson = next(e for e in LESSONS if e.name == name)
                try:
                    tab.open(f"{base_a}/{lesson.url_path}")  # at its defaults, as AppTest starts (server_compute)
                    result["actions"][label] = [tab.move(key, texts[i % len(texts)] if texts else None)
                                                for i in range(args.repeats)]
                except Exception as exc:  # noqa: BLE001 - reported in the table, the run goes on
                    result["actions"][label] = f"failed: {type(exc).__name__}: {str(exc)[:200]}"
                print(f"action, {label} ({name}): {json.dumps(result['actions'][label])}", flush=True)
            browser.close()
    finally:
        for proc in procs:
            stop_server(proc)
    if not args.no_apptest:  # in this process, the servers stopped: nothing else of this run competes
        wanted = {label for label, name, *_ in ACTIONS if name in args.lessons}
        result["server_compute"] = {k: v for k, v in server_compute(args.repeats).items() if k in wanted}
        result["cold"] = cold_runs(args.lessons, args.repeats)


def report(args, result: dict) -> None:
    """Print the tables and the budgets of ``result`` (and write it to ``--out``)."""
    ref = result["reference"]
    ref_first, ref_settled, ref_chart, ref_move_settled = (ref["first_chart"], ref["settled"], ref["move_chart"],
                                                           ref["move_settled"])

    def ratio(v: float, ref: float) -> str:
        return f"{v:.2f} s = {v / ref:.1f}x"

    s = result["start"]
    print(f"\ndoor: {args.door}; {'one busy core beside it; ' if args.busy else ''}"
          f"load average {result['loadavg_start'][0]:.1f} at start, {result['loadavg_end'][0]:.1f} at end; "
          f"{result['cpus']} CPUs; medians of {args.repeats} (trivial slider: {2 * args.repeats})\n")
    print("| measure | trivial page | app |\n|---|---:|---:|")
    print(f"| server start -> first chart | {s['trivial']['first_chart_s']:.2f} s | "
          f"{ratio(s['app']['first_chart_s'], s['trivial']['first_chart_s'])} |")
    print(f"| server start -> /_stcore/health | {s['trivial']['health_s']:.2f} s | {s['app']['health_s']:.2f} s |")
    print(f"\ntrivial page: warm first chart {ref_first:.3f} s, settled {ref_settled:.3f} s; "
          f"slider -> chart {ref_chart:.3f} s, settled {ref_move_settled:.3f} s\n")
    print("| lesson | first visit: first chart | every chart | warm first chart | warm, every chart | own control "
          "| -> chart | settled | shared d_k -> chart | settled |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for name, row in result["lessons"].items():
        if "failed" in row:
            print(f"| {name} | failed: {row['failed']} |" + " - |" * 8)
            continue
        cells = [f"{row['first_visit'][0]:.2f} s", f"{row['first_visit'][1]:.2f} s",
                 ratio(median([o[0] for o in row["open"]]), ref_first),
                 ratio(median([o[1] for o in row["open"]]), ref_settled), OWN.get(name) or "-"]
        for label in ("own", "shared"):
            v = row[label]
            if isinstance(v, list):
                cells += [ratio(median([m[0] for m in v]), ref_chart),
                          ratio(median([m[1] for m in v]), ref_move_settled)]
            else:
                cells += [v or "-", "-"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if result.get("actions"):
        print("\n| real-model action | lesson | -> chart | settled | server compute (AppTest script run) | ratio |")
        print("|---|---|---:|---:|---:|---:|")
        for label, name, *_ in ACTIONS:
            got, compute = result["actions"].get(label), result.get("server_compute", {}).get(label)
            if got is None:
                continue
            if not isinstance(got, list):
                print(f"| {label} | {name} | {got} | - | - | - |")
                continue
            settled = median([m[1] for m in got])
            ratio_cell = f"{settled / median(compute):.1f}x" if compute else "-"
            compute_cell = f"{median(compute):.2f} s" if compute else "-"
            print(f"| {label} | {name} | {median([m[0] for m in got]):.2f} s | {settled:.2f} s | {compute_cell} | "
                  f"{ratio_cell} |")
    if result.get("cold"):
        print(f"\ncold runs (AppTest, caches emptied, fastest of {args.repeats}): trivial page "
              f"{result['cold']['trivial'] * 1000:.1f} ms (the budgets' reference); the same page in the app's frame "
              "(shared sidebar, link checks: bench_pages.TRIVIAL_IN_APP) "
              f"{result['cold']['trivial_in_app'] * 1000:.1f} ms, every lesson's run includes that frame")
    rows = budget_rows(result)
    print("\n| budget | what | measured | reference | ratio | limit | |\n|---|---|---:|---:|---:|---:|---|")
    for budget, what, got, reference, limit in rows:
        verdict = "pass" if got / reference <= limit else "FAIL"
        print(f"| {budget} | {what} | {got:.3f} s | {reference:.3f} s | {got / reference:.1f}x | {limit:g}x | "
              f"{verdict} |")
    failed = sum(got / reference > limit for _, _, got, reference, limit in rows)
    print(f"\n{len(rows) - failed} of {len(rows)} budgets met")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    sys.exit(main())
