"""Memory soak: the server's resident memory over many changes at the largest settings, then while idle.

Starts a real ``streamlit run streamlit_app.py`` on a free loopback port and drives it with a real
browser (Playwright + Chromium): one tab per lesson (a learner each), every tab opened with a link at
the largest settings (64 tokens, ``d_model`` 512, ``d_k`` 128, 512 heads, 8192 samples, ...), then
``--changes`` changes round-robin over the tabs (a new seed typed into a number box, or a step of a
slider: every change is a new cache entry, the worst case for memory). After each change it reads the
server's resident set size (``/proc/<pid>/status``: VmRSS) and, every ``--metrics-every`` changes,
the bytes ``st.cache_data`` holds per function (Streamlit's ``/_stcore/metrics``). Then the tabs
stay open with nothing happening for ``--idle`` seconds, sampled every ``--idle-step``.

Bounded: ``--changes`` changes (default 200) and at most ``--max-seconds`` for the changes (default
2400); the idle phase is ``--idle`` seconds (default 480). The two real-model lessons are left out
unless ``--with-real-model`` (their model's weights, 135-540 MB, are the model's budget, not the caches').

    python bench/soak.py                      # about 30 minutes here; prints tables, writes .benchmarks/soak.json
    python bench/soak.py --changes 40 --idle 60   # a quick look

Linux only (``/proc``). Results: BENCHMARKS.md, "Memory soak".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.lessons import LESSONS  # noqa: E402

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
SENTENCE = " ".join(f"w{i}" for i in range(64))  # 64 distinct tokens: the largest sentence the lessons use
SENTENCE_B = " ".join(f"v{i}" for i in range(64))
BIG = {"sentence": SENTENCE, "d_model": "512", "d_k": "128"}
# Per lesson: the link at the largest settings and the control each change moves (a number box gets a new
# value typed in, a slider one step).
PLAN = {
    "walkthrough": (BIG, "seed", "number"),
    "lookup": ({}, "lookup_qx", "slider"),
    "scaling": ({"scale_d_k": "1024", "scale_n_keys": "32", "scale_samples": "8192"}, "scale_seed", "number"),
    "multihead": ({**BIG, "n_heads": "512"}, "seed", "number"),
    "causal": ({**BIG, "causal_padding": "8"}, "seed", "number"),
    "two_sentences": ({**BIG, "two_sentence": SENTENCE_B}, "two_shuffle_seed", "number"),
    "quiz": (BIG, "seed", "number"),
    "real_model": ({}, "rm_seed", "number"),
    "kv_cache": ({}, "kv_top_k", "number"),
}
REAL_MODEL = {"real_model", "kv_cache"}

OBSERVER_JS = """
(() => {
  const s = window.__soak = {ended: 0, last: performance.now()};
  new MutationObserver((muts) => {
    for (const m of muts) { s.last = performance.now(); if (m.oldValue === 'running') s.ended += 1; }
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['data-test-script-state']});
})();
"""
SETTLED_JS = """
(before) => {
  const s = window.__soak, app = document.querySelector('[data-testid="stApp"]');
  return !!s && !!app && s.ended > before && app.getAttribute('data-test-script-state') === 'notRunning'
    && performance.now() - s.last > 300 && !document.querySelector('[data-stale="true"]');
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident set size of process ``pid`` in MiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cache_mb(base: str) -> dict[str, float]:
    """MiB that ``st.cache_data`` holds per function, from Streamlit's metrics endpoint."""
    try:
        text = urllib.request.urlopen(f"{base}/_stcore/metrics", timeout=30).read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for m in re.finditer(r'cache_memory_bytes\{cache_type="st_cache_data",cache="([^"]*)"\} (\d+)', text):
        name = m.group(1).rsplit(".", 1)[-1]
        out[name] = out.get(name, 0.0) + int(m.group(2)) / 2**20
    return out


def start_server(port: int, log_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", "--server.runOnSave", "false"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log_path.open("w"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status == 200:
                return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"the server did not start; log: {log_path}")


class Tab:
    def __init__(self, context, base: str, lesson, params: dict, key: str, how: str, timeout_s: float):
        self.page = context.new_page()
        self.name, self.key, self.how, self.timeout_ms = lesson.name, key, how, timeout_s * 1000
        self.value = 0
        query = urllib.parse.urlencode(params)
        path = "" if lesson == LESSONS[0] else lesson.url_path
        self.page.goto(f"{base}/{path}" + (f"?{query}" if query else ""), wait_until="domcontentloaded")
        self.wait(0)

    def runs(self) -> int:
        return self.page.evaluate("() => window.__soak ? window.__soak.ended : 0")

    def wait(self, before: int) -> None:
        self.page.wait_for_function(SETTLED_JS, arg=before, timeout=self.timeout_ms, polling=200)

    def change(self) -> None:
        """One change: a new value in the lesson's number box, or one step of its slider."""
        before = self.runs()
        box = self.page.locator(f".st-key-{self.key}").first
        if self.how == "number":
            self.value += 1
            field = box.locator("input").first
            field.fill(str(1000 + self.value))
            field.press("Enter")
        else:
            thumb = box.locator("input[type=range]").first
            thumb.focus()
            thumb.press("ArrowRight")
        self.wait(before)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--idle", type=float, default=480, help="seconds of idle sampling after the changes")
    ap.add_argument("--idle-step", type=float, default=30)
    ap.add_argument("--metrics-every", type=int, default=20)
    ap.add_argument("--max-seconds", type=float, default=2400, help="stop the changes after this long")
    ap.add_argument("--run-timeout", type=float, default=300, help="seconds one change may take")
    ap.add_argument("--with-real-model", action="store_true", help="also the two real-model lessons")
    ap.add_argument("--out", type=Path, default=ROOT / ".benchmarks" / "soak.json")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args.out.parent.mkdir(exist_ok=True)
    proc = start_server(port, args.out.with_suffix(".log"))
    result: dict = {"changes": [], "idle": [], "cache_mb": [], "lessons": []}
    try:
        result["baseline_mb"] = rss_mb(proc.pid)
        with sync_playwright() as pw:
            options = {"executable_path": CHROMIUM} if Path(CHROMIUM).exists() else {}
            browser = pw.chromium.launch(args=["--no-sandbox", "--disable-gpu"], **options)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_init_script(OBSERVER_JS)
            tabs = []
            for lesson in LESSONS:
                if lesson.name in REAL_MODEL and not args.with_real_model:
                    continue
                params, key, how = PLAN[lesson.name]
                t0 = time.perf_counter()
                tabs.append(Tab(context, base, lesson, params, key, how, args.run_timeout))
                result["lessons"].append(lesson.name)
                print(f"opened {lesson.name} at the largest settings in {time.perf_counter() - t0:.1f} s: "
                      f"server {rss_mb(proc.pid):.0f} MiB", flush=True)
            result["after_open_mb"] = rss_mb(proc.pid)
            started = time.monotonic()
            for i in range(1, args.changes + 1):
                if time.monotonic() - started > args.max_seconds:
                    print(f"stopped after {i - 1} changes: --max-seconds reached", flush=True)
                    break
                tab = tabs[(i - 1) % len(tabs)]
                tab.change()
                mb = rss_mb(proc.pid)
                result["changes"].append([i, tab.name, round(mb, 1), round(time.monotonic() - started, 1)])
                if i % args.metrics_every == 0 or i == args.changes:
                    caches = cache_mb(base)
                    result["cache_mb"].append([i, {k: round(v, 1) for k, v in sorted(caches.items())}])
                    print(f"{i:4d} changes: server {mb:7.0f} MiB, st.cache_data {sum(caches.values()):6.0f} MiB "
                          f"({time.monotonic() - started:.0f} s)", flush=True)
            t_idle = time.monotonic()
            while True:
                elapsed = time.monotonic() - t_idle
                held = sum(cache_mb(base).values())
                result["idle"].append([round(elapsed), round(rss_mb(proc.pid), 1), round(held, 1)])
                print(f"idle {elapsed:5.0f} s: server {result['idle'][-1][1]:7.0f} MiB, "
                      f"st.cache_data {result['idle'][-1][2]:6.0f} MiB", flush=True)
                if elapsed >= args.idle:
                    break
                time.sleep(min(args.idle_step, args.idle - elapsed))
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    changes = result["changes"]
    print("\n| changes | server RSS (MiB) |\n|---|---|")
    print(f"| 0 (server started) | {result['baseline_mb']:.0f} |")
    print(f"| 0 (every tab open at the largest settings) | {result['after_open_mb']:.0f} |")
    for i, _, mb, _ in changes:
        if i % 20 == 0 or i == len(changes):
            print(f"| {i} | {mb:.0f} |")
    print(f"| peak | {max(c[2] for c in changes):.0f} |" if changes else "")
    print("\n| idle (s) | server RSS (MiB) | st.cache_data (MiB) |\n|---|---|---|")
    for s, mb, cmb in result["idle"]:
        print(f"| {s} | {mb:.0f} | {cmb:.0f} |")
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
