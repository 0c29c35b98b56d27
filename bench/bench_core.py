"""Core attention vs PyTorch on the CPU (issue 20, budget 5), and the memory of the online path.

A plain script that prints Markdown tables, nothing is asserted.

The budget table: ``scaled_dot_product_attention(q, k, v, need_weights=False)`` against
``torch.nn.functional.scaled_dot_product_attention(q, k, v)``, q, k, v ``[1, 8, n, 64]``
(batch, heads, n, d_head) float32, the same arrays for both, n in {128, 512, 2048, 8192}. The
4-D layout matters: with 3-D ``[8, n, 64]`` input PyTorch's CPU SDPA skips its flash kernel and
is several times slower. Both get the same thread count: PyTorch ``torch.set_num_threads(T)``,
ours ``T`` worker threads (``attention.blocked.default_threads()``, the number of cores).

Interleaved paired runs: for each n, ``pairs`` pairs of one call each, the order alternating
(ours first, then PyTorch first), with a pause before every call so that the other library's
idle threads have stopped spinning. Ratio = the median over the pairs of ours / PyTorch's
(the two calls of a pair see the same machine load); the ms columns are the medians of each
side. The load column is the 1-minute load average (``/proc/loadavg``) at the start and the end
of that row's pairs: other processes share the cores, re-run when it is well above 0.

``--all`` adds the older tables: SDPA with weights and the plain path (minimum times),
``MultiHeadAttention.forward`` against ``torch.nn.MultiheadAttention``, and the n = 16384
memory row (peak traced by tracemalloc, against the ``n x n`` float32 matrix never held).

Run: ``python bench/bench_core.py`` (about 2 minutes; ``--pairs-scale 0.5`` halves the pairs,
``--pause S`` sets the pause, ``--all`` for the rest). PyTorch is required for the ratio column.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from attention import MultiHeadAttention, scaled_dot_product_attention  # noqa: E402
from attention.blocked import _openblas_thread_functions, default_threads  # noqa: E402
from attention.core import BLOCKED_MIN_CELLS, _attention_plain  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is a bench/test dependency only
    torch = None

SIZES = (128, 512, 2048)
BUDGET_SIZES = (128, 512, 2048, 8192)
PAIRS = {128: 41, 512: 31, 2048: 15, 8192: 7}
HEADS, D_HEAD = 8, 64
N_MEMORY = 16384
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        try:
            blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            return f"{blas.get('name')} {blas.get('version')} (threads: library default; threadpoolctl not installed)"
        except Exception as exc:  # noqa: BLE001 - informational only
            return f"unknown ({exc})"
    return "; ".join(f"{p['internal_api']} {p.get('version')} {p['num_threads']} threads"
                     for p in threadpool_info() if p["user_api"] == "blas")


def best_time(fn, repeats: int) -> float:
    """Minimum wall time of ``repeats`` calls, after one warm-up call."""
    fn()
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def matmul_gflops(repeats: int) -> float:
    a, b = (np.random.default_rng(i).standard_normal((2048, 2048), dtype=np.float32) for i in (1, 2))
    return 2 * 2048**3 / best_time(lambda: a @ b, repeats) / 1e9


def numpy_phase(cases, layers, repeats: int) -> dict:
    times = {}
    scale = 1.0 / math.sqrt(D_HEAD)
    for n, (q, k, v, x) in cases.items():
        times[n, "sdpa"] = best_time(lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v), repeats)
        times[n, "sdpa_nw"] = best_time(
            lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v, need_weights=False), repeats)
        times[n, "plain"] = best_time(lambda q=q, k=k, v=v: _attention_plain(q, k, v, None, None, False, scale),
                                      repeats)
        times[n, "mha"] = best_time(lambda x=x: layers[0].forward(x), repeats)
        times[n, "mha_nw"] = best_time(lambda x=x: layers[0].forward(x, need_weights=False), repeats)
    return times


def torch_phase(cases, layers, repeats: int) -> dict:
    times = {}
    sdpa = torch.nn.functional.scaled_dot_product_attention
    with torch.inference_mode():
        for n, (q, k, v, x) in cases.items():
            tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
            tx = torch.from_numpy(x)
            times[n, "sdpa"] = best_time(lambda tq=tq, tk=tk, tv=tv: sdpa(tq, tk, tv), repeats)
            times[n, "mha"] = best_time(lambda tx=tx: layers[1](tx, tx, tx, need_weights=False), repeats)
    return times


def separator(header: str) -> str:
    """The Markdown rule under a table header."""
    return "|" + "---|" * (header.count("|") - 1)


def merge_min(into: dict, new: dict) -> None:
    for key, value in new.items():
        into[key] = min(into.get(key, math.inf), value)


def load_average() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan


def paired_row(n: int, threads: int, pairs: int, pause: float) -> dict:
    """Interleaved paired runs at one n: medians, the median ratio and the load at start and end."""
    rng = np.random.default_rng(n)
    q, k, v = (rng.standard_normal((1, HEADS, n, D_HEAD), dtype=np.float32) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def ours() -> None:
        scaled_dot_product_attention(q, k, v, need_weights=False)

    def theirs() -> None:
        with torch.inference_mode():
            sdpa(tq, tk, tv)

    def timed(fn) -> float:
        time.sleep(pause)
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    load_start = load_average()
    for fn in (ours, theirs, ours, theirs):  # warm-up: first-call costs, the worker threads, page faults
        fn()
    t_ours, t_torch = [], []
    for i in range(pairs):
        if i % 2 == 0:
            a = timed(ours)
            b = timed(theirs)
        else:
            b = timed(theirs)
            a = timed(ours)
        t_ours.append(a)
        t_torch.append(b)
    ratios = [a / b for a, b in zip(t_ours, t_torch, strict=True)]
    return {"n": n, "ours": statistics.median(t_ours), "torch": statistics.median(t_torch),
            "ratio": statistics.median(ratios), "q1": statistics.quantiles(ratios, n=4)[0],
            "q3": statistics.quantiles(ratios, n=4)[2], "pairs": pairs, "threads": threads,
            "load": (load_start, load_average())}


def budget_table(args, threads: int) -> None:
    print("SDPA need_weights=False vs torch SDPA, q, k, v [1, 8, n, 64] float32: median of interleaved "
          f"paired runs (pause {args.pause:g} s before each call)")
    print()
    head = "| n | ours ms | torch ms | ratio | threads | machine load |"
    print(head)
    print(separator(head))
    for n in BUDGET_SIZES:
        pairs = max(3, round(PAIRS[n] * args.pairs_scale))
        row = paired_row(n, threads, pairs, args.pause)
        print(f"| {n} | {1e3 * row['ours']:.2f} | {1e3 * row['torch']:.2f} | **{row['ratio']:.2f}x** "
              f"(IQR {row['q1']:.2f}-{row['q3']:.2f}, {pairs} pairs) | {threads} / {threads} "
              f"| {row['load'][0]:.2f} → {row['load'][1]:.2f} |", flush=True)


def core_vs_torch(args) -> None:
    rng = np.random.default_rng(0)
    d_model = HEADS * D_HEAD
    cases = {n: (*(rng.standard_normal((1, HEADS, n, D_HEAD), dtype=np.float32) for _ in range(3)),
                 rng.standard_normal((1, n, d_model), dtype=np.float32)) for n in SIZES}
    ours = MultiHeadAttention(d_model, HEADS, seed=0)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        setattr(ours, name, getattr(ours, name).astype(np.float32))
    layers = [ours, None]
    if torch is not None:
        theirs = torch.nn.MultiheadAttention(d_model, HEADS, bias=False, batch_first=True).eval()
        with torch.no_grad():  # the same parameters (PyTorch stores the transposes)
            theirs.in_proj_weight.copy_(torch.from_numpy(np.concatenate([ours.W_q.T, ours.W_k.T, ours.W_v.T])))
            theirs.out_proj.weight.copy_(torch.from_numpy(ours.W_o.T.copy()))
        layers[1] = theirs

    mm, t_np, t_torch = 0.0, {}, {}
    for _ in range(args.rounds):
        mm = max(mm, matmul_gflops(args.repeats))
        merge_min(t_np, numpy_phase(cases, layers, args.repeats))
        if torch is not None:
            time.sleep(0.5)
            merge_min(t_torch, torch_phase(cases, layers, args.repeats))
            time.sleep(0.5)

    print(f"NumPy float32 matmul (2048 x 2048 @ 2048 x 2048): {mm:.1f} GFLOP/s (best of the run)")
    print(f"Blocked path from {BLOCKED_MIN_CELLS} score cells (batch * n_q * n_k); "
          f"below that the plain path. Times: ms, min over {args.rounds} x {args.repeats} calls.")
    print()
    print("SDPA, q, k, v [1, 8, n, 64] float32")
    print()
    head = "| n | torch SDPA | ours SDPA (weights) | ratio | ours need_weights=False | ratio | plain path | ratio " \
           "| ours GFLOP/s (need_weights=False) | % of matmul |"
    print(head)
    print(separator(head))
    for n in SIZES:
        flop = 4 * HEADS * n * n * D_HEAD
        ref = t_torch.get((n, "sdpa"), math.nan)
        cells = [f"{n}", f"{1e3 * ref:.2f}" if torch is not None else "-"]
        for key in ("sdpa", "sdpa_nw", "plain"):
            cells += [f"{1e3 * t_np[n, key]:.2f}", f"{t_np[n, key] / ref:.2f}x" if torch is not None else "-"]
        gf = flop / t_np[n, "sdpa_nw"] / 1e9
        cells += [f"{gf:.1f}", f"{100 * gf / mm:.0f}%"]
        print("| " + " | ".join(cells) + " |")
    if torch is not None:
        print()
        print("PyTorch SDPA GFLOP/s: " + ", ".join(
            f"n={n}: {4 * HEADS * n * n * D_HEAD / t_torch[n, 'sdpa'] / 1e9:.1f}" for n in SIZES))
    print()
    print("MultiHeadAttention.forward, x [1, n, 512] float32, 8 heads (projections included)")
    print()
    head = "| n | torch nn.MultiheadAttention | torch SDPA | ours forward (weights) | / torch MHA | / torch SDPA " \
           "| ours forward(need_weights=False) | / torch MHA | / torch SDPA |"
    print(head)
    print(separator(head))
    for n in SIZES:
        if torch is None:
            cells = [f"{n}", "-", "-", f"{1e3 * t_np[n, 'mha']:.2f}", "-", "-",
                     f"{1e3 * t_np[n, 'mha_nw']:.2f}", "-", "-"]
        else:
            t_mha, t_sdpa = t_torch[n, "mha"], t_torch[n, "sdpa"]
            cells = [f"{n}", f"{1e3 * t_mha:.2f}", f"{1e3 * t_sdpa:.2f}"]
            for key in ("mha", "mha_nw"):
                cells += [f"{1e3 * t_np[n, key]:.2f}", f"{t_np[n, key] / t_mha:.2f}x", f"{t_np[n, key] / t_sdpa:.2f}x"]
        print("| " + " | ".join(cells) + " |")


def memory_row(args) -> None:
    n, d = N_MEMORY, D_HEAD
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 1, n, d), dtype=np.float32) for _ in range(3))
    io = 4 * q.nbytes  # q, k, v and the output
    tracemalloc.start()
    tracemalloc.reset_peak()
    out, _ = scaled_dot_product_attention(q, k, v, need_weights=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    elapsed = best_time(lambda: scaled_dot_product_attention(q, k, v, need_weights=False), 2)
    t_torch = "-"
    if torch is not None:
        time.sleep(0.5)
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        with torch.inference_mode():
            t_torch = f"{best_time(lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv), 2):.2f}"
    mib = 2**20
    print()
    print(f"Memory: n = {n}, d_head = {d}, 1 head, float32, need_weights=False (peak traced by tracemalloc "
          "during the call; q, k, v allocated before)")
    print()
    print("| n | q, k, v + output | peak during the call | peak / (q, k, v + output) | n x n float32 (never held) "
          "| ours (s, min of 2) | torch SDPA (s, min of 2) |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {n} | {io / mib:.1f} MiB | {peak / mib:.1f} MiB | {peak / io:.2f} | {n * n * 4 / mib:.0f} MiB "
          f"| {elapsed:.2f} | {t_torch} |")
    del out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs-scale", type=float, default=1.0, help="multiply the number of pairs per n")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds of pause before every timed call")
    parser.add_argument("--all", action="store_true", help="also the older tables and the memory row")
    parser.add_argument("--repeats", type=int, default=7, help="--all: calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="--all: rounds")
    args = parser.parse_args()
    from explorer.shell import blas

    blas.apply()  # the app's BLAS threads (explorer/shell/blas.py); the blocked path pins its own meanwhile

    threads = default_threads()
    print(f"# bench_core: {cpu_model()}, {os.cpu_count()} CPUs, load average {load_average():.2f}")
    print(f"# Python {platform.python_version()}, NumPy {np.__version__}, "
          f"PyTorch {torch.__version__ if torch is not None else 'not installed'}")
    print(f"# NumPy BLAS: {blas_info()}")
    env = ", ".join(f"{name}={os.environ[name]}" for name in BLAS_ENV if name in os.environ)
    print(f"# BLAS environment: {env or 'none of ' + ', '.join(BLAS_ENV) + ' set'}")
    if torch is None:
        sys.exit("PyTorch is not installed: the budget table needs it (pip install torch).")
    torch.set_num_threads(threads)
    pins = threads > 1 and _openblas_thread_functions() is not None
    print(f"# threads: torch.set_num_threads({threads}); ours {threads} worker thread(s) "
          f"(attention.blocked.default_threads)" + ("; NumPy's OpenBLAS on 1 thread while they run" if pins else ""))
    print()
    budget_table(args, threads)
    if args.all:
        print()
        core_vs_torch(args)
        memory_row(args)
    print()
    print(f"# load average at the end: {load_average():.2f} (other processes share the cores: "
          "re-run when it stays well above 0)")


if __name__ == "__main__":
    main()
