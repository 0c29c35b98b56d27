"""Runs per second through HAProxy: 2 replicas against 1 replica, measured in the same run (issue 21).

Each setup is ``deploy/run_local.sh K`` (K replicas of ``streamlit run streamlit_app.py`` on loopback ports and
HAProxy in front, the policy of ``deploy/haproxy.cfg``), started on free ports, warmed up (one untimed visit per
lesson on every replica, straight to its port), then loaded through the proxy with ``bench/load.py``'s
:func:`~bench.load.run_load`: ``N`` sessions at once, each a cold run (a seed no session used before), the
browser-less websocket client of ``bench/load.py``. The setups alternate (1, 2, 1, 2, ... ``--repeats`` times),
so a change in the machine's other load touches both; each setup gets one untimed round through the proxy (the
first round after a start is slower) and ``--rounds`` timed ones; the summary takes the median runs/s per setup
and the median cores the replicas used (their CPU seconds in a round / its wall time: what they got).

Why 2x is the ideal: a Streamlit server runs its sessions' scripts in threads of one Python process, so the
NumPy-light parts (building figures, serializing them) share one GIL: one replica uses about one core at most.
Two processes can use both cores of this machine, nothing more.

    python bench/load_replicas.py                     # N = 20, 3 rounds per setup, 2 repeats
    python bench/load_replicas.py --n 30 --repeats 3 --out .benchmarks/load_replicas.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import free_port, run_load, warm_up  # noqa: E402


def start_replicas(k: int, run_dir: Path, timeout: float = 300.0) -> dict:
    """``deploy/run_local.sh k`` on free ports, logs in ``run_dir``; returns ``{"proc", "base", "replicas", "pids"}``
    once the script says it is ready. Raises ``RuntimeError`` if it stops or is not ready within ``timeout``."""
    ports = [free_port() for _ in range(k + 1)]
    env = {**os.environ, "PORT": str(ports[0]), "REPLICA_PORTS": " ".join(map(str, ports[1:])),
           "RUN_DIR": str(run_dir), "PYTHON": sys.executable}
    out = run_dir / "run_local.out"
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as log:
        proc = subprocess.Popen(["bash", str(ROOT / "deploy" / "run_local.sh"), str(k)], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    while "behind HAProxy at http://" not in out.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_replicas(proc)
            raise RuntimeError(f"run_local.sh {k} did not start:\n{out.read_text(errors='replace')[-2000:]}")
        time.sleep(0.25)
    return {"proc": proc, "base": f"http://127.0.0.1:{ports[0]}",
            "replicas": [f"http://127.0.0.1:{p}" for p in ports[1:]],
            "pids": [int((run_dir / f"replica-{i}.pid").read_text()) for i in range(1, k + 1)]}


def stop_replicas(proc: subprocess.Popen) -> None:
    """SIGTERM to run_local.sh (its trap stops the replicas and HAProxy); SIGKILL to its group if it hangs."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def cpu_seconds(pids) -> float:
    """User + system CPU time (s) the processes ``pids`` have used so far (``/proc/<pid>/stat``; threads included)."""
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measure(k: int, n: int, rounds: int, timeout: float) -> list[dict]:
    """One setup of ``k`` replicas: start, warm every replica and one untimed round through the proxy, then
    ``rounds`` timed rounds of ``n`` sessions through the proxy; stop. One result per timed round, with the CPU
    the replicas used in it (``cores_used`` = their CPU seconds / the round's wall time)."""
    out = []
    with tempfile.TemporaryDirectory(prefix=f"load-replicas-{k}-") as tmp:
        setup = start_replicas(k, Path(tmp))
        try:
            for replica in setup["replicas"]:
                warm_up(replica, timeout=timeout)
            run_load(setup["base"], n, timeout=timeout, repeat_to_cover=False)  # untimed: the first round is slower
            for _ in range(rounds):
                load_before, cpu_before = os.getloadavg()[0], cpu_seconds(setup["pids"])
                result = run_load(setup["base"], n, timeout=timeout, repeat_to_cover=False,
                                  server_pids=setup["pids"])
                result.pop("per_session")
                cpu = cpu_seconds(setup["pids"]) - cpu_before
                result.update(replicas=k, loadavg_1min_before=round(load_before, 2),
                              loadavg_1min_after=round(os.getloadavg()[0], 2), cpu_s=round(cpu, 2),
                              cores_used=round(cpu / result["wall_s"], 2) if result["wall_s"] else None)
                out.append(result)
        finally:
            stop_replicas(setup["proc"])
    return out


def table(results: list[dict]) -> str:
    rows = ["| replicas | sessions (failed) | p50 to last chart | p95 to last chart | wall | runs/s | cores used "
            "| RSS (replicas) | load avg before / after |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        rows.append(f"| {r['replicas']} | {r['sessions']} ({r['failed']}) | {r['p50_last_chart_s']} s | "
                    f"{r['p95_last_chart_s']} s | {r['wall_s']} s | {r['runs_per_s']} | {r['cores_used']} | "
                    f"{r['rss_mb']:.0f} MiB | "
                    f"{r['loadavg_1min_before']} / {r['loadavg_1min_after']} |")
    return "\n".join(rows)


def summary(results: list[dict]) -> dict:
    med = {k: round(statistics.median(r["runs_per_s"] for r in results if r["replicas"] == k), 2) for k in (1, 2)}
    cores = {k: round(statistics.median(r["cores_used"] for r in results if r["replicas"] == k), 2) for k in (1, 2)}
    return {"median_runs_per_s": med, "median_cores_used": cores,
            "ratio_2_over_1": round(med[2] / med[1], 2) if med[1] else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20, help="sessions at once per round (1..100)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per setup")
    ap.add_argument("--repeats", type=int, default=2, help="alternations of the 1-replica and 2-replica setups")
    ap.add_argument("--timeout", type=float, default=180, help="seconds one session may take")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)
    if not 1 <= args.n <= 100 or not 1 <= args.repeats <= 10 or not 1 <= args.rounds <= 20:
        ap.error("--n must be in 1..100, --rounds in 1..20 and --repeats in 1..10")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(), "n": args.n,
            "loadavg_start": os.getloadavg()}
    results = []
    for _ in range(args.repeats):
        for k in (1, 2):
            new = measure(k, args.n, args.rounds, args.timeout)
            results += new
            print("\n".join(table(new).splitlines()[2:]), flush=True)
    meta["loadavg_end"] = os.getloadavg()
    out = {"meta": meta, "results": results, "summary": summary(results)}
    print(table(results))
    print(f"median runs/s: 1 replica {out['summary']['median_runs_per_s'][1]}, 2 replicas "
          f"{out['summary']['median_runs_per_s'][2]}: {out['summary']['ratio_2_over_1']}x (ideal 2x on 2 cores); "
          f"cores used by the replicas: {out['summary']['median_cores_used']}; "
          f"machine: {meta['cpus']} cores, load average {meta['loadavg_start']} at start, {meta['loadavg_end']} at end")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
