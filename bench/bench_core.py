"""Core attention vs PyTorch on the CPU, and the memory of the online (need_weights=False) path.

A plain script that prints tables (Markdown), nothing is asserted:

1. ``scaled_dot_product_attention`` (with weights, and ``need_weights=False``), the
   plain path, and ``MultiHeadAttention.forward`` against
   ``torch.nn.functional.scaled_dot_product_attention`` (and ``torch.nn.MultiheadAttention``
   for the layer): q, k, v ``[1, 8, n, 64]`` (batch, heads, n, d_head), float32, n in
   {128, 512, 2048}, the same arrays for both; PyTorch gets the same thread count
   (``torch.set_num_threads``). The 4-D layout matters: with 3-D ``[8, n, 64]`` input
   PyTorch's CPU SDPA skips its flash kernel and is several times slower. Times are the minimum over
   ``--repeats`` calls, in ``--rounds`` rounds that alternate NumPy and PyTorch phases
   (a pause between phases lets the other library's spinning threads go to sleep).
   Ratio = our time / PyTorch's time. GFLOP/s counts the two matmuls,
   ``4 * heads * n_q * n_k * d_head`` flop, against this run's own NumPy float32
   matmul rate (2048 x 2048 @ 2048 x 2048).
2. n = 16384, d_head 64, one head, float32, ``need_weights=False``: peak memory traced
   by tracemalloc during the call (NumPy reports its allocations to it) against the
   bytes of q, k, v and the output, and the ``n x n`` float32 matrix it never holds.

The PyTorch part is skipped, with a printed line, when torch is not installed.

Run: ``python bench/bench_core.py`` (``--repeats N --rounds N``, ``--quick`` skips n = 16384).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from attention import MultiHeadAttention, scaled_dot_product_attention  # noqa: E402
from attention.blocked import BLAS_THREAD_VARIABLES, _openblas_thread_functions, default_threads  # noqa: E402
from attention.core import BLOCKED_MIN_CELLS, _attention_plain  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is a bench/test dependency only
    torch = None

SIZES = (128, 512, 2048)
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
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="skip the n = 16384 memory row")
    args = parser.parse_args()

    threads = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# bench_core: {cpu_model()}, {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"# Python {platform.python_version()}, NumPy {np.__version__}, "
          f"PyTorch {torch.__version__ if torch is not None else 'not installed'}")
    print(f"# NumPy BLAS: {blas_info()}")
    env = ", ".join(f"{name}={os.environ[name]}" for name in BLAS_ENV if name in os.environ)
    print(f"# BLAS environment: {env or 'none of ' + ', '.join(BLAS_ENV) + ' set'}")
    if torch is None:
        print("# PyTorch is not installed: the PyTorch columns are skipped (pip install torch to compare).")
    else:
        torch.set_num_threads(threads)
        print(f"# torch.set_num_threads({threads})")
    env_pinned = any(os.environ.get(name) == "1" for name in BLAS_THREAD_VARIABLES)
    workers = default_threads()
    pins = workers > 1 and _openblas_thread_functions() is not None
    print(f"# NumPy's BLAS: {'1 thread (set in the environment)' if env_pinned else f'{threads} threads (default)'}; "
          f"blocked path: {workers} worker thread(s)"
          + ("; NumPy's OpenBLAS on 1 thread while they run" if pins else ""))
    print()
    core_vs_torch(args)
    if not args.quick:
        memory_row(args)
    if hasattr(os, "getloadavg"):
        print()
        print(f"# load average at the end: {os.getloadavg()[0]:.1f} (other processes share the cores: "
              "re-run when it stays below 0.5)")


if __name__ == "__main__":
    main()
