"""Load: N learners open the app at once, each with their own seed and lesson (issue 20, item 4).

Browser-less: each session speaks Streamlit's own websocket protocol (``/_stcore/stream``, protobuf
``BackMsg``/``ForwardMsg``), as the browser does when it opens a link: it connects, asks for a run of
its lesson with its link (``?seed=...``), and reads the server's messages until the run has finished.
No Chromium draws anything, so the 2 cores go to the server, and what is measured is the server's
side: connect -> the last Plotly chart's message (``time to last chart``) and -> the end of the run.

For every N of ``--n`` (default 1 10 30), ``N`` sessions start together; session ``i`` opens lesson
``i mod L`` (the lessons of :data:`explorer.lessons.LESSONS`, the two real-model lessons left out
unless ``--with-real-model``) with a seed no earlier session used (so every run is a cold run: new
settings, nothing cached for it). When ``N < L`` the round is repeated, one after the other, until
every lesson has been opened once (N = 1: each lesson alone, one at a time: the single-session
reference). Before the rounds, one untimed warm-up visit per lesson (imports, compiled pages).

Reported per N: p50/p95/max time to the last chart, p50 time to the run's end, runs per second
(sessions / wall time of the round), the server's resident memory (``VmRSS``) after the round, and
p95 / the N = 1 p50 (goal: <= 4x at N = 30).

Bounded: at most ``--max-seconds`` in all (default 600), ``--timeout`` per session (default 120 s),
N at most 100, loopback or a given URL only.

    python bench/load.py                        # starts its own `streamlit run` on a free loopback port
    python bench/load.py --n 1 10 30 --out .benchmarks/load.json
    python bench/load.py --n 1 --cold-vs-trivial 5   # budget 3: each lesson's cold run vs the trivial page's
    python bench/load.py --n 30 --url http://127.0.0.1:8501 --server-pid 1234   # an already running server/proxy

Import: ``from bench.load import run_load`` (``run_load(base_url, n) -> dict``); ``start_server``
and ``stop_server`` start and stop a server as this script does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import types
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.lessons import LESSONS  # noqa: E402

REAL_MODEL = {"real_model", "kv_cache"}
# Each lesson's own seed control, besides the shared sidebar seed (``seed``) every lesson reads.
OWN_SEED = {"scaling": "scale_seed", "two_sentences": "two_shuffle_seed",
            "real_model": "rm_seed"}  # the KV-cache lesson samples with the shared seed
SEED_MAX = 2**31 - 1
MAX_N = 100
_SEEDS = itertools.count(random.SystemRandom().randrange(10**6, 10**9))  # fresh seeds in every run of the script


def lessons(with_real_model: bool = False) -> list:
    return [e for e in LESSONS if with_real_model or e.name not in REAL_MODEL]


def link(lesson, seed: int) -> str:
    """The query string of a link to ``lesson`` with ``seed`` (the shared one and the lesson's own)."""
    params = {"seed": seed}
    if lesson.name in OWN_SEED:
        params[OWN_SEED[lesson.name]] = seed
    return urllib.parse.urlencode(params)


def _page_name(lesson) -> str:
    return "" if lesson == LESSONS[0] else lesson.url_path


def _ws_url(base_url: str) -> str:
    parts = urllib.parse.urlsplit(base_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream"


class Session:
    """A learner's session without a browser: one websocket on ``/_stcore/stream`` speaking Streamlit's own protocol
    (protobuf ``BackMsg`` out, ``ForwardMsg`` in), as the browser's page does.

        async with Session.connect("http://127.0.0.1:8501") as s:
            messages, status = await s.run("multihead", "seed=7")

    ``headers`` (e.g. a ``Cookie``) go with the handshake; :attr:`handshake` holds its response's headers (what a
    proxy in front added), :attr:`bytes` the bytes received so far. Used by :func:`open_session` and by the tests
    that speak the protocol (``tests/e2e/test_fragments.py``, ``tests/deploy/test_replicas.py``).
    """

    def __init__(self, ws):
        self.ws = ws
        self.bytes = 0
        self.session_id = ""  # the server's id of this session (its first run's ``new_session`` names it)
        self._requests = itertools.count(1)

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, base_url: str, *, headers: dict[str, str] | None = None, timeout: float = 120.0):
        import websockets

        async with websockets.connect(_ws_url(base_url), subprotocols=["streamlit"], max_size=None, compression=None,
                                      open_timeout=timeout, additional_headers=headers) as ws:
            yield cls(ws)

    @property
    def handshake(self) -> dict[str, str]:
        """The handshake response's headers, names in lower case."""
        return {k.lower(): v for k, v in self.ws.response.headers.raw_items()}

    async def receive(self):
        """The next ``ForwardMsg``; raises ``websockets.ConnectionClosed`` when the server has closed."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        data = await self.ws.recv()
        self.bytes += len(data)
        msg = ForwardMsg()
        msg.ParseFromString(data)
        if msg.WhichOneof("type") == "new_session" and msg.new_session.initialize.session_id:
            self.session_id = msg.new_session.initialize.session_id
        return msg

    async def run(self, page: str = "", query: str = "", fragment_id: str = "", *, on_message=None) -> tuple[list, int]:
        """Ask for a run of ``page`` (its url path; ``""`` the default page) with the link's ``query`` (the part
        ``fragment_id`` alone, if given), and read until the run ends; a run that ends early for a rerun (a link the
        app corrects) is followed into the next one. ``on_message(msg)`` is called as each message arrives.

        Returns ``(messages, status)``: every ``ForwardMsg`` received, in order, and the last ``script_finished``
        status (``ForwardMsg.FINISHED_SUCCESSFULLY``, ``FINISHED_FRAGMENT_RUN_SUCCESSFULLY``, or an error's)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        back = BackMsg()
        back.rerun_script.page_name = page
        back.rerun_script.query_string = query
        back.rerun_script.fragment_id = fragment_id
        await self.ws.send(back.SerializeToString())
        messages = []
        while True:
            msg = await self.receive()
            messages.append(msg)
            if on_message is not None:
                on_message(msg)
            if msg.WhichOneof("type") == "script_finished" \
                    and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return messages, msg.script_finished

    async def deferred_file(self, file_id: str) -> str:
        """The address (``/media/…``, served by this session's server) of a download button's file made on request
        (``st.download_button`` with a callable: the proto's ``deferred_file_id``), as a click asks for it (after a
        run: the request names the session). Raises ``RuntimeError`` with the server's message if it could not make
        the file."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        back = BackMsg()
        request = back.backend_operation_request
        request.request_id = f"deferred-{next(self._requests)}"
        request.session_id = self.session_id
        request.deferred_file.file_id = file_id
        await self.ws.send(back.SerializeToString())
        while True:
            msg = await self.receive()
            if msg.WhichOneof("type") == "backend_operation_response" \
                    and msg.backend_operation_response.request_id == request.request_id:
                answer = msg.backend_operation_response
                if answer.error_msg:
                    raise RuntimeError(f"deferred file {file_id}: {answer.error_msg}")
                return answer.deferred_file.url


async def open_session(base_url: str, lesson, seed: int, timeout: float) -> dict:
    """One learner opens ``lesson`` at ``seed``: connect, one run, until the run ends successfully.

    Returns ``{"lesson", "seed", "ok", "error", "connect_s", "first_chart_s", "last_chart_s", "end_s",
    "charts", "runs", "bytes"}`` (seconds from the start of the connection). A run that ends early for
    a rerun (a link the app corrects) is followed into the next run; only a successful end counts.
    """
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    out = {"lesson": lesson.name, "seed": seed, "ok": False, "error": None, "connect_s": None,
           "first_chart_s": None, "last_chart_s": None, "end_s": None, "charts": 0, "runs": 0, "bytes": 0}
    t0 = time.perf_counter()
    charts_this_run = 0

    def seen(msg) -> None:
        nonlocal charts_this_run
        now = time.perf_counter() - t0
        kind = msg.WhichOneof("type")
        if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            if element.WhichOneof("type") in ("plotly_chart", "bidi_component"):  # charts.show_fig's two doors
                charts_this_run += 1
                out["first_chart_s"] = out["first_chart_s"] or now
                out["last_chart_s"] = now
            elif element.WhichOneof("type") == "exception":
                out["error"] = f"exception: {element.exception.message[:200]}"
        elif kind == "script_finished":
            out["runs"] += 1
            if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                out["end_s"], out["charts"] = now, charts_this_run
            elif msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                charts_this_run = 0
        elif kind == "session_event" and msg.session_event.WhichOneof("type") == "script_compilation_exception":
            out["error"] = "script compilation exception"

    session = None
    try:
        async with asyncio.timeout(timeout):
            async with Session.connect(base_url, timeout=timeout) as session:
                out["connect_s"] = time.perf_counter() - t0
                _, status = await session.run(_page_name(lesson), link(lesson, seed), on_message=seen)
                if status == ForwardMsg.FINISHED_SUCCESSFULLY:
                    out["ok"] = True
                elif out["error"] is None:
                    out["error"] = f"run ended with status {status}"
    except TimeoutError:
        out["error"] = f"no successful end within {timeout:.0f} s"
    except Exception as exc:  # noqa: BLE001 - a failed session is reported, not raised
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["bytes"] = session.bytes if session is not None else 0
    if out["ok"] and out["error"]:  # an exception box in a run that ended: not a good run
        out["ok"] = False
    return out


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def rss_mb(pids) -> float | None:
    """Summed resident set size (VmRSS, MiB) of ``pids``; ``None`` when there are none or /proc lacks them."""
    total, found = 0.0, False
    for pid in pids or ():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
                    found = True
        except OSError:
            pass
    return round(total, 1) if found else None


def run_load(base_url: str, n: int, *, with_real_model: bool = False, timeout: float = 120.0,
             repeat_to_cover: bool = True, server_pids=(), lesson_names=None) -> dict:
    """Open ``n`` sessions at once against ``base_url`` (the app, or a proxy in front of it).

    Session ``i`` opens lesson ``i mod L`` with a seed no session used before (a cold run). With
    ``repeat_to_cover`` and ``n`` smaller than the number of lessons L, the round is repeated one after
    the other until every lesson was opened once. ``lesson_names`` picks the lessons (default: all but the
    real-model ones unless ``with_real_model``). ``server_pids``: processes whose summed RSS is reported.

    Returns ``{"n", "rounds", "sessions", "ok", "failed", "p50_last_chart_s", "p95_last_chart_s",
    "max_last_chart_s", "p50_end_s", "p95_end_s", "runs_per_s", "wall_s", "rss_mb", "per_session"}``;
    times in seconds from each session's connect; ``runs_per_s`` = successful sessions / summed wall time of
    the rounds. Raises ``ValueError`` for ``n`` outside 1..100.
    """
    if not 1 <= n <= MAX_N:
        raise ValueError(f"n must be in 1..{MAX_N}, got {n}")
    chosen = [e for e in lessons(with_real_model) if lesson_names is None or e.name in lesson_names]
    if not chosen:
        raise ValueError(f"no lesson among {lesson_names!r}")
    rounds = -(-len(chosen) // n) if repeat_to_cover else 1
    sessions, wall = [], 0.0
    for r in range(rounds):
        plan = [(chosen[(r * n + i) % len(chosen)], next(_SEEDS) % SEED_MAX) for i in range(n)]

        async def round_(plan=plan):
            return await asyncio.gather(*(open_session(base_url, lesson, seed, timeout) for lesson, seed in plan))

        t0 = time.perf_counter()
        sessions += asyncio.run(round_())
        wall += time.perf_counter() - t0
    good = [s for s in sessions if s["ok"]]
    last = [s["last_chart_s"] if s["last_chart_s"] is not None else s["end_s"] for s in good]
    ends = [s["end_s"] for s in good]

    def r3(v):
        return None if v is None else round(v, 3)

    return {
        "n": n, "rounds": rounds, "sessions": len(sessions), "ok": len(good), "failed": len(sessions) - len(good),
        "p50_last_chart_s": r3(_pct(last, 0.5)), "p95_last_chart_s": r3(_pct(last, 0.95)),
        "max_last_chart_s": r3(max(last) if last else None),
        "p50_end_s": r3(_pct(ends, 0.5)), "p95_end_s": r3(_pct(ends, 0.95)),
        "runs_per_s": round(len(good) / wall, 2) if wall else None, "wall_s": round(wall, 3),
        "rss_mb": rss_mb(server_pids),
        "per_session": [{k: (r3(v) if isinstance(v, float) else v) for k, v in s.items()} for s in sessions],
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int | None = None, *, log_path: Path | None = None, env: dict | None = None,
                 script: str = "streamlit_app.py", timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """``streamlit run script`` on loopback (a free port unless ``port``); returns (process, base URL).

    ``env``: extra environment variables (e.g. ``{"ATTENTION_BLAS_THREADS": "default"}``: OpenBLAS's own thread
    count instead of the app's one). Raises ``RuntimeError`` (the server stopped) if ``/_stcore/health`` does not
    answer within ``timeout``.
    """
    port = port or free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", "--server.runOnSave", "false"]
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path or os.devnull, "w")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **(env or {})})
    log.close()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode} (log: {log_path})")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.25)
    stop_server(proc)
    raise RuntimeError(f"streamlit did not answer /_stcore/health within {timeout:.0f} s (log: {log_path})")


def stop_server(proc: subprocess.Popen) -> None:
    """Stop a server from :func:`start_server` (its whole process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass


def warm_up(base_url: str, *, with_real_model: bool = False, timeout: float = 120.0) -> dict[str, float | None]:
    """One untimed visit per lesson, one at a time (imports, compiled pages); seconds to the end per lesson."""
    out = {}
    for lesson in lessons(with_real_model):
        s = asyncio.run(open_session(base_url, lesson, next(_SEEDS) % SEED_MAX, timeout))
        if not s["ok"]:
            raise RuntimeError(f"warm-up of {lesson.name} failed: {s['error']}")
        out[lesson.name] = round(s["end_s"], 3)
    return out


TRIVIAL = types.SimpleNamespace(name="trivial", url_path="")  # bench/trivial_app.py's one page


def cold_vs_trivial(base_url: str, trivial_url: str, *, repeats: int = 5, timeout: float = 120.0,
                    with_real_model: bool = False) -> dict:
    """Budget 3 from the server's side: each lesson's cold run against the trivial page's, one session at a time.

    Alternates, ``repeats`` times: every lesson once at a new seed (a cold run), then the trivial app
    (``bench/trivial_app.py``, one slider and one 6 x 6 heat map: nothing of it is cached, so every run is
    a full run) once per lesson. Time = connect -> the run's end, as a learner's browser would see it
    (session setup, the script, Streamlit's sending and its work after the run included).

    Returns ``{"trivial_s": median, "lessons": {name: {"median_s", "ratio", "runs"}}}``. Raises
    ``RuntimeError`` if a session fails.
    """
    chosen = lessons(with_real_model)
    times: dict[str, list[float]] = {e.name: [] for e in chosen}
    trivial: list[float] = []
    for _ in range(repeats):
        for lesson in chosen:
            for url, target, into in ((base_url, lesson, times[lesson.name]), (trivial_url, TRIVIAL, trivial)):
                s = asyncio.run(open_session(url, target, next(_SEEDS) % SEED_MAX, timeout))
                if not s["ok"]:
                    raise RuntimeError(f"{target.name} failed: {s['error']}")
                into.append(s["end_s"])
    ref = statistics.median(trivial)
    return {"trivial_s": round(ref, 4), "lessons": {
        name: {"median_s": round(statistics.median(v), 4), "ratio": round(statistics.median(v) / ref, 2),
               "runs": [round(x, 4) for x in v]} for name, v in times.items()}}


def table(results: list[dict]) -> str:
    ref = next((r["p50_last_chart_s"] for r in results if r["n"] == 1), None)
    rows = ["| N | sessions (failed) | p50 to last chart | p95 to last chart | max | p50 to run end | runs/s "
            "| server RSS | p95 / single p50 | p95 / (N x single p50) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        ratio = f"{r['p95_last_chart_s'] / ref:.1f}x" if ref and r["p95_last_chart_s"] else "-"
        # One process runs its sessions' scripts under one GIL: N runs at once cannot all end before about N
        # single runs one after the other. Near 1 = the server wastes nothing; the rest is the machine's cores.
        serial = f"{r['p95_last_chart_s'] / (r['n'] * ref):.2f}" if ref and r["p95_last_chart_s"] else "-"
        rss = f"{r['rss_mb']:.0f} MiB" if r["rss_mb"] is not None else "-"
        rows.append(f"| {r['n']} | {r['sessions']} ({r['failed']}) | {r['p50_last_chart_s']} s | "
                    f"{r['p95_last_chart_s']} s | {r['max_last_chart_s']} s | {r['p50_end_s']} s | {r['runs_per_s']} "
                    f"| {rss} | {ratio} | {serial} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 10, 30], help="sessions at once, one round each")
    ap.add_argument("--url", help="drive this running server (or proxy) instead of starting one")
    ap.add_argument("--server-pid", type=int, action="append", default=[],
                    help="with --url: a server process whose RSS to report (repeat for replicas)")
    ap.add_argument("--max-seconds", type=float, default=600, help="stop starting new rounds after this long")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one session may take")
    ap.add_argument("--with-real-model", action="store_true", help="also the two real-model lessons")
    ap.add_argument("--no-warm-up", action="store_true", help="skip the untimed visit per lesson")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment of the server this script starts (e.g. ATTENTION_BLAS_THREADS=default)")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--cold-vs-trivial", type=int, default=0, metavar="REPEATS",
                    help="also start bench/trivial_app.py and compare each lesson's cold run with its run "
                         "(budget 3), REPEATS rounds (without --url)")
    args = ap.parse_args(argv)
    if any(not 1 <= n <= MAX_N for n in args.n):
        ap.error(f"every N must be in 1..{MAX_N}")
    if args.url and args.env:
        ap.error("--env applies to the server this script starts, not to --url")

    t_start = time.monotonic()
    proc = None
    if args.url:
        base, pids = args.url.rstrip("/"), args.server_pid
    else:
        env = dict(e.split("=", 1) for e in args.env)
        log = (args.out.with_suffix(".log") if args.out else Path("/tmp") / f"load-{os.getpid()}.log")
        proc, base = start_server(log_path=log, env=env)
        pids = [proc.pid]
    results: list[dict] = []
    meta = {"url": base, "started_server": proc is not None, "env": args.env, "cpus": os.cpu_count(),
            "loadavg_start": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "rss_start_mb": rss_mb(pids)}
    try:
        if not args.no_warm_up:
            meta["warm_up_s"] = warm_up(base, with_real_model=args.with_real_model, timeout=args.timeout)
            meta["rss_after_warm_up_mb"] = rss_mb(pids)
            print(f"warm-up (s to run end, one lesson at a time): {meta['warm_up_s']}", flush=True)
        for n in args.n:
            if time.monotonic() - t_start > args.max_seconds:
                print(f"stopped before N = {n}: --max-seconds reached", flush=True)
                break
            r = run_load(base, n, with_real_model=args.with_real_model, timeout=args.timeout, server_pids=pids)
            results.append(r)
            errors = sorted({s["error"] for s in r["per_session"] if s["error"]})
            print(f"N = {n}: p50 {r['p50_last_chart_s']} s, p95 {r['p95_last_chart_s']} s to last chart, "
                  f"{r['runs_per_s']} runs/s, RSS {r['rss_mb']} MiB, failed {r['failed']}"
                  + (f" ({errors[:3]})" if errors else ""), flush=True)
        if args.cold_vs_trivial and not args.url:
            t_proc, t_base = start_server(script="bench/trivial_app.py", env=env,
                                          log_path=Path("/tmp") / f"load-trivial-{os.getpid()}.log")
            try:
                asyncio.run(open_session(t_base, TRIVIAL, 0, args.timeout))  # its imports, untimed
                meta["cold_vs_trivial"] = cold_vs_trivial(base, t_base, repeats=args.cold_vs_trivial,
                                                          timeout=args.timeout, with_real_model=args.with_real_model)
            finally:
                stop_server(t_proc)
    finally:
        if proc is not None:
            stop_server(proc)
    meta["loadavg_end"] = os.getloadavg()
    print()
    print(table(results))
    print(f"\nload average at start {meta['loadavg_start'][0]:.2f}, at end {meta['loadavg_end'][0]:.2f}; "
          f"{meta['cpus']} CPUs; server RSS at start {meta['rss_start_mb']} MiB")
    if "cold_vs_trivial" in meta:
        c = meta["cold_vs_trivial"]
        print(f"\nBudget 3, one session at a time, connect -> run end (median of {args.cold_vs_trivial}): "
              f"trivial page {c['trivial_s'] * 1000:.1f} ms\n\n| lesson | cold run | x trivial |\n|---|---:|---:|")
        for name, v in c["lessons"].items():
            print(f"| {name} | {v['median_s'] * 1000:.1f} ms | {v['ratio']:.1f}x |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
        print(f"written: {args.out}")
    return 0 if results and all(r["failed"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
