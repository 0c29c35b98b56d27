"""Memory soak: the server's resident memory over many changes at the largest settings, then while idle.

Starts a real ``streamlit run streamlit_app.py`` on a free loopback port and drives it with a real
browser (Playwright + Chromium): one tab per lesson (a learner each, every lesson of
``explorer.lessons.LESSONS``, the real-model lessons included), every tab opened with a link at the largest
settings (64 tokens, ``d_model`` 512, ``d_k`` 128, 512 heads, 8192 samples; for the real model a prompt past the
lessons' token limits, 32 generated tokens, every cache variant measured, the 270-head sweep; training's largest
maps), then ``--changes`` changes round-robin over the tabs (a new seed typed into a number box, a step of a
slider, or a new prompt typed into the prompt box; some lessons then press their buttons again: every change is
a new cache entry, the worst case for memory). After each change it reads the server's resident set size
(``/proc/<pid>/status``: VmRSS) and, every ``--metrics-every`` changes, the bytes ``st.cache_data`` holds per
function (Streamlit's ``/_stcore/metrics``). Then the tabs stay open with nothing happening for ``--idle``
seconds, sampled every ``--idle-step``. The peak is the kernel's ``VmHWM`` (between samples too).

Bounded: ``--changes`` changes (default 200) and at most ``--max-seconds`` for the changes (default
2400); the idle phase is ``--idle`` seconds (default 480). ``--without-real-model`` leaves out the lessons that
run SmolLM2-135M (a quicker look at the caches alone). The model's weights mode is the server's own choice
(``explorer.shell.llm.weights_mode``: float32 here); ``ATTENTION_MODEL_WEIGHTS=compact`` in the
environment forces the compact one.

    python bench/soak.py                      # about an hour here with the real model; writes .benchmarks/soak.json
    python bench/soak.py --changes 36 --idle 360   # three changes per lesson, then 6 idle minutes

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
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.lessons import LESSONS  # noqa: E402

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
SENTENCE = " ".join(f"w{i}" for i in range(64))  # 64 distinct tokens: the largest sentence the lessons use
SENTENCE_B = " ".join(f"v{i}" for i in range(64))
BIG = {"sentence": SENTENCE, "d_model": "512", "d_k": "128"}
# Prompts for the real-model lessons: common words, a new order for every change, about 70 tokens (past every
# lesson's limit: 64 tokens for real_model and sinks, 32 for causes and kv_cache, so each reads its largest).
STORY = ("the cat sat on a mat because it was tired and then the dog ran to the old house near river where many "
         "people lived in small boats with blue sails every summer before storm came over hill")
WORDS = tuple(STORY.split())


def prompt_text(i: int) -> str:
    """The ``i``-th soak prompt: 70 of :data:`WORDS`, a different sequence for every ``i``."""
    n = len(WORDS)
    return f"Story {i}: " + " ".join(WORDS[(i * 7 + j * (3 + i % 5)) % n] for j in range(70))


HEADS_27 = ",".join(f"L{layer}H{head}" for layer in range(3) for head in range(9))  # causes' MAX_HEADS heads
TRAIN_BIG = {"tr_layers": "3", "tr_heads": "4", "tr_d_model": "64", "tr_d_head": "64", "tr_n_ctx": "64",
             "tr_vocab": "128", "tr_batch": "8", "tr_steps": "100"}  # the largest maps; the fewest steps (CPU)


@dataclass(frozen=True)
class Plan:
    """One lesson's tab: the link at the largest settings, the control each change moves (``how``: a number box
    gets a new value typed in, a slider one step, a prompt box a new :func:`prompt_text`), and the buttons pressed
    once the tab is open and again after every change (each waits for the run it starts, a training run too)."""

    params: dict
    key: str
    how: str
    open_clicks: tuple[str, ...] = ()
    change_clicks: tuple[str, ...] = ()


PLAN = {
    "walkthrough": Plan(BIG, "seed", "number"),
    "lookup": Plan({}, "lookup_qx", "slider"),
    "scaling": Plan({"scale_d_k": "1024", "scale_n_keys": "32", "scale_samples": "8192"}, "scale_seed", "number"),
    "multihead": Plan({**BIG, "n_heads": "512"}, "seed", "number"),
    "causal": Plan({**BIG, "causal_padding": "8"}, "seed", "number"),
    "two_sentences": Plan({**BIG, "two_sentence": SENTENCE_B}, "two_shuffle_seed", "number"),
    "training": Plan(TRAIN_BIG, "tr_seed", "number", ("tr_train", "tr_real"), ("tr_train",)),
    "real_model": Plan({"rm_prompt": prompt_text(0), "rm_stat": "induction"}, "rm_prompt", "prompt"),
    # The 270-head sweep once (minutes of CPU here; its cached layers are under 1 kB each, its passes transient).
    "causes": Plan({"ca_prompt": prompt_text(0), "ca_heads": HEADS_27, "ca_ind_k": "9"}, "ca_prompt", "prompt",
                   ("ca_reveal",)),
    "kv_cache": Plan({"kv_prompt": prompt_text(0), "kv_steps": "32", "kv_sampling": "sample", "kv_top_k": "0",
                      "kv_temperature": "1.0"}, "kv_prompt", "prompt"),
    # Every cache variant measured once (13 runs of the model: 15 minutes here at load 20); each change then shifts
    # the positions one step (two more forward passes at 64 tokens).
    "sinks": Plan({"sk_prompt": prompt_text(0), "sk_new": "32", "sk_measure": "true"}, "sk_offset", "slider"),
    "quiz": Plan(BIG, "seed", "number"),
    "block": Plan({"blk_prompt": prompt_text(0), "blk_block": "29"}, "blk_prompt", "prompt"),
}
REAL_MODEL = {"block", "real_model", "causes", "kv_cache", "sinks"}  # the lessons that run SmolLM2-135M

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


def hwm_mb(pid: int) -> float:
    """Peak resident set size of process ``pid`` in MiB (VmHWM: the kernel's high-water mark, between samples too)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def weights() -> str:
    """The weights mode the server picks (``explorer.shell.llm.weights_mode``, the same environment)."""
    from explorer.shell.llm import weights_mode

    return weights_mode()


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
    def __init__(self, context, base: str, lesson, plan: Plan, timeout_s: float):
        self.page = context.new_page()
        self.name, self.plan, self.timeout_ms = lesson.name, plan, timeout_s * 1000
        self.value = 0
        query = urllib.parse.urlencode(plan.params)
        path = "" if lesson == LESSONS[0] else lesson.url_path
        self.page.goto(f"{base}/{path}" + (f"?{query}" if query else ""), wait_until="domcontentloaded")
        self.wait(0)
        self.click(plan.open_clicks)

    def runs(self) -> int:
        return self.page.evaluate("() => window.__soak ? window.__soak.ended : 0")

    def wait(self, before: int) -> None:
        self.page.wait_for_function(SETTLED_JS, arg=before, timeout=self.timeout_ms, polling=200)

    def click(self, keys: tuple[str, ...]) -> None:
        """Press each button in turn and wait for the run it starts (and any run it asks for) to settle."""
        for key in keys:
            before = self.runs()
            self.page.locator(f".st-key-{key} button").first.click(timeout=self.timeout_ms)
            self.wait(before)

    def change(self) -> None:
        """One change: a new value in the lesson's number box, one step of its slider, or a new prompt; then the
        plan's buttons."""
        before = self.runs()
        box = self.page.locator(f".st-key-{self.plan.key}").first
        self.value += 1
        if self.plan.how == "number":
            field = box.locator("input").first
            field.fill(str(1000 + self.value))
            field.press("Enter")
        elif self.plan.how == "prompt":
            field = box.locator("textarea").first
            field.fill(prompt_text(self.value))
            field.press("Control+Enter")
        else:
            thumb = box.locator("input[type=range]").first
            thumb.focus()
            thumb.press("ArrowRight")
        self.wait(before)
        self.click(self.plan.change_clicks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--idle", type=float, default=480, help="seconds of idle sampling after the changes")
    ap.add_argument("--idle-step", type=float, default=30)
    ap.add_argument("--metrics-every", type=int, default=20)
    ap.add_argument("--max-seconds", type=float, default=2400, help="stop the changes after this long")
    ap.add_argument("--run-timeout", type=float, default=300, help="seconds one change may take")
    ap.add_argument("--without-real-model", action="store_true",
                    help=f"leave out the lessons that run the model ({', '.join(sorted(REAL_MODEL))})")
    ap.add_argument("--out", type=Path, default=ROOT / ".benchmarks" / "soak.json")
    args = ap.parse_args()
    missing = [lesson.name for lesson in LESSONS if lesson.name not in PLAN]
    if missing:
        raise SystemExit(f"no soak plan for the lessons {', '.join(missing)}: add them to PLAN")

    from playwright.sync_api import sync_playwright

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args.out.parent.mkdir(exist_ok=True)
    proc = start_server(port, args.out.with_suffix(".log"))
    result: dict = {"changes": [], "idle": [], "cache_mb": [], "lessons": [], "weights": weights(),
                    "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": [os.getloadavg()]}
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; the model's weights: {result['weights']}",
          flush=True)
    try:
        result["baseline_mb"] = rss_mb(proc.pid)
        with sync_playwright() as pw:
            options = {"executable_path": CHROMIUM} if Path(CHROMIUM).exists() else {}
            browser = pw.chromium.launch(args=["--no-sandbox", "--disable-gpu"], **options)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_init_script(OBSERVER_JS)
            tabs = []
            for lesson in LESSONS:
                if lesson.name in REAL_MODEL and args.without_real_model:
                    continue
                t0 = time.perf_counter()
                tabs.append(Tab(context, base, lesson, PLAN[lesson.name], args.run_timeout))
                result["lessons"].append(lesson.name)
                print(f"opened {lesson.name} at the largest settings in {time.perf_counter() - t0:.1f} s: "
                      f"server {rss_mb(proc.pid):.0f} MiB, peak {hwm_mb(proc.pid):.0f} MiB", flush=True)
            result["after_open_mb"] = rss_mb(proc.pid)
            result["after_open_hwm_mb"] = hwm_mb(proc.pid)
            result["load"].append(os.getloadavg())
            started = time.monotonic()
            for i in range(1, args.changes + 1):
                if time.monotonic() - started > args.max_seconds:
                    print(f"stopped after {i - 1} changes: --max-seconds reached", flush=True)
                    break
                tab = tabs[(i - 1) % len(tabs)]
                t0 = time.monotonic()
                tab.change()
                mb = rss_mb(proc.pid)
                result["changes"].append([i, tab.name, round(mb, 1), round(time.monotonic() - started, 1)])
                print(f"  change {i:3d} ({tab.name}, {time.monotonic() - t0:.1f} s): server {mb:.0f} MiB, "
                      f"peak {hwm_mb(proc.pid):.0f} MiB", flush=True)
                if i % args.metrics_every == 0 or i == args.changes:
                    caches = cache_mb(base)
                    result["cache_mb"].append([i, {k: round(v, 1) for k, v in sorted(caches.items())}])
                    print(f"{i:4d} changes: server {mb:7.0f} MiB, st.cache_data {sum(caches.values()):6.0f} MiB "
                          f"({time.monotonic() - started:.0f} s)", flush=True)
            result["peak_mb"] = hwm_mb(proc.pid)  # VmHWM: the largest resident set so far
            result["load"].append(os.getloadavg())
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
            result["load"].append(os.getloadavg())
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
    print(f"| peak (`VmHWM`) | {result.get('peak_mb', 0):.0f} |")
    by_lesson: dict[str, float] = {}
    for _, name, mb, _ in changes:
        by_lesson[name] = max(by_lesson.get(name, 0.0), mb)
    print("\n| lesson | changes | largest RSS after one of its changes (MiB) |\n|---|---:|---:|")
    for name, mb in by_lesson.items():
        print(f"| {name} | {sum(c[1] == name for c in changes)} | {mb:.0f} |")
    print("\nload average (1, 5, 15 min) at the start, every tab open, the last change, the end: "
          + "; ".join(" ".join(f"{x:.1f}" for x in load) for load in result["load"]))
    print("\n| idle (s) | server RSS (MiB) | st.cache_data (MiB) |\n|---|---|---|")
    for s, mb, cmb in result["idle"]:
        print(f"| {s} | {mb:.0f} | {cmb:.0f} |")
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
