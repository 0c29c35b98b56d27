"""Speed and memory of ``attention.training`` (the lesson "Watch attention learn"): steps per second, time to
emergence, memory, each against one full forward+backward step measured in the same run.

A plain script that prints tables:

1. the reference: one forward + backward pass (``AttentionOnly.backward``) on one batch at the lesson's defaults
   (2 layers x 2 heads, d_model 32, d_head 16, vocab 64, n 32, batch 32, float32), median of many;
2. training speed (``train``: batch, forward, backward, measurements, Adam) at the defaults and at other sizes,
   in steps per second and in reference steps per training step;
3. time to emergence (the first step whose prefix-match passes 0.4) for seeds 0-4 at the defaults, in seconds
   and in reference steps (goal: <= 15 s on this machine when it is quiet);
4. memory: the peak of Python's traced allocations during one default run, and the bytes a finished run keeps
   in the page's shared cache (``RunResult.nbytes``) at the defaults and at the page's largest settings;
5. a class of 30 sessions asking the page's shared runs for one link at once: how many trainings, and the wall
   time against one run alone.

Run: ``python bench/bench_training.py`` (``--quick`` for fewer repeats and seeds).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import threading
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attention import training  # noqa: E402
from attention.training.loop import one_blas_thread  # noqa: E402
from explorer.lessons.training import model as M  # noqa: E402

DEFAULT = M.RunSpec()
SIZES = [  # (label, spec) for the speed table
    ("defaults", DEFAULT),
    ("one layer", replace(DEFAULT, n_layers=1)),
    ("n 16", replace(DEFAULT, n_ctx=16)),
    ("n 64", replace(DEFAULT, n_ctx=64)),
    ("d_head 64 (÷√d_k experiment)", replace(DEFAULT, d_head=64)),
    ("largest: 3 x 4 heads, d_model 64, d_head 64, n 64", replace(DEFAULT, n_layers=3, n_heads=4, d_model=64,
                                                                  d_head=64, n_ctx=64)),
]
LARGEST = replace(SIZES[-1][1], steps=M.STEPS_RANGE[1])


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


class Reference:
    """One forward + backward pass at the defaults (``AttentionOnly.backward`` on one batch), timed in blocks
    between the measured work, so that a ratio compares times taken under the same load."""

    def __init__(self) -> None:
        self.model = training.AttentionOnly(DEFAULT.config())
        self.batch = training.make_batch("repeat", DEFAULT.batch, DEFAULT.n_ctx, DEFAULT.vocab,
                                         np.random.default_rng(0))
        self.times: list[float] = []
        self.block(5)

    def block(self, n: int) -> float:
        """Time ``n`` passes; returns the median of this block (every pass is kept in :attr:`times`)."""
        out = []
        with one_blas_thread():
            for _ in range(n):
                t = time.perf_counter()
                self.model.backward(self.batch.tokens, loss_mask=self.batch.predictable)
                out.append(time.perf_counter() - t)
        self.times += out
        return statistics.median(out)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def quiet(self) -> float:
        """The 10th percentile of every pass: what a pass costs when the shared machine leaves the core alone."""
        return p10(self.times)


def p10(times) -> float:
    return float(np.percentile(times, 10))


def step_times(spec: M.RunSpec, steps: int, ref: Reference, blocks: int = 4) -> list[float]:
    """The seconds of every training step (``blocks`` blocks of ``steps // blocks`` steps, each followed by a block
    of reference passes)."""
    gen = training.train(spec.config(), steps=steps, batch=spec.batch, lr=spec.lr, task=spec.task, seed=spec.seed)
    next(gen)
    per_block = max(1, steps // blocks)
    out = []
    for _ in range(blocks):
        for _ in range(per_block):
            t = time.perf_counter()
            if next(gen, None) is None:
                break
            out.append(time.perf_counter() - t)
        ref.block(10)
    return out


def emergence(seed: int, budget: int = 1000) -> tuple[int | None, float]:
    """(step, seconds) until the best prefix-match of layer 1 passes 0.4 at the defaults with ``seed``."""
    cfg = replace(DEFAULT, seed=seed).config()
    t = time.perf_counter()
    for rec in training.train(cfg, steps=budget, seed=seed):
        if float(rec.prefix_match[1:].max()) > training.EMERGENCE_THRESHOLD:
            return rec.step, time.perf_counter() - t
    return None, time.perf_counter() - t


def result_bytes(spec: M.RunSpec) -> int:
    """What a finished run of ``spec`` keeps (:attr:`RunResult.nbytes`), from the shapes (no training)."""
    S, L, H, n = spec.steps + 1, spec.n_layers, spec.n_heads, spec.n_ctx
    per_step = S * 8 * (1 + 1 + 1 + 2 * L * H + 2 * L)  # step, loss, accuracy, scores, score_grad, max_weight
    snapshots = len(spec.snapshot_steps) * (8 + L * H * n * n * 4)
    params = sum(int(np.prod(s)) for s in training.param_shapes(spec.config()).values()) * 4
    return per_step + snapshots + params + n * 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 3 seeds")
    args = parser.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from explorer.shell import blas

    blas.apply()  # the app's BLAS threads (explorer/shell/blas.py); the training loop pins one while it runs
    repeats, seeds, steps = (50, 3, 100) if args.quick else (100, 5, 300)
    print(f"# bench_training: Python {platform.python_version()}, NumPy {np.__version__}, {os.cpu_count()} CPUs, "
          f"load average {load():.1f} at the start, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    ref = Reference()
    ref.block(repeats)
    print("# reference: one forward + backward pass at the defaults (2 layers x 2 heads, d_model 32, d_head 16, "
          "vocab 64, n 32, batch 32, float32), timed in blocks between the measurements")
    print()
    print("Per step: the median (as measured, under this load) and the 10th percentile (the quiet estimate: a step "
          "the other processes left alone); ratios against the reference's 10th percentile over the whole run.")
    print()
    print("| model | steps/s (median) | ms per step (median) | ms per step (quiet) | reference passes per step "
          "(quiet) |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for label, spec in SIZES:
        times = step_times(spec, steps if "largest" not in label else max(20, steps // 10), ref)
        rows.append((label, statistics.median(times), p10(times)))
    default_quiet = rows[0][2]
    for label, med, quiet in rows:
        print(f"| {label} | {1 / med:.0f} | {med * 1e3:.2f} | {quiet * 1e3:.2f} | {quiet / ref.quiet:.2f} |")
    print()
    print("| seed | steps to prefix-match > 0.4 | seconds (as measured) | quiet estimate: steps x quiet step (s) |")
    print("|---:|---:|---:|---:|")
    times, quiet_times = [], []
    for seed in range(seeds):
        step, secs = emergence(seed)
        ref.block(20)
        times.append(secs)
        quiet_times.append((step or 1000) * default_quiet)
        print(f"| {seed} | {step if step is not None else '> 1000'} | {secs:.2f} | {quiet_times[-1]:.2f} |",
              flush=True)
    print(f"\nreference pass: median {ref.median * 1e3:.2f} ms, quiet {ref.quiet * 1e3:.2f} ms ({len(ref.times)} "
          f"passes). Median time to emergence: {statistics.median(times):.2f} s as measured, "
          f"{statistics.median(quiet_times):.2f} s quiet = {statistics.median(quiet_times) / ref.quiet:.0f} "
          "reference passes")
    print()
    t = time.perf_counter()
    M.train_run(DEFAULT)
    run_s = time.perf_counter() - t
    tracemalloc.start()
    result = M.train_run(DEFAULT)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"one default run (600 steps, with the page's snapshots and mechanism check): {run_s:.2f} s as measured "
          f"({run_s / ref.median:.0f} median reference passes); peak traced allocations {peak / 2**20:.1f} MiB; the "
          f"finished run keeps {result.nbytes / 2**20:.2f} MiB "
          f"(from the shapes: {result_bytes(DEFAULT) / 2**20:.2f} MiB)")
    print(f"a finished run at the page's largest settings (3 layers x 4 heads, d_model 64, d_head 64, n 64, "
          f"{LARGEST.steps} steps) keeps {result_bytes(LARGEST) / 2**20:.2f} MiB")
    print()
    import streamlit  # noqa: F401  (configures its loggers; quiet them before the lesson's caches are made)

    for name in ("streamlit", "streamlit.runtime.caching.cache_data_api"):  # "no runtime" notices
        logging.getLogger(name).setLevel(logging.ERROR)
    from explorer.shell import jobs

    t = time.perf_counter()
    M.train_run(replace(DEFAULT, seed=98))
    alone = time.perf_counter() - t
    runs = jobs.Jobs(M.train_run)
    spec = replace(DEFAULT, seed=99)
    t = time.perf_counter()
    entries = []
    threads = [threading.Thread(target=lambda: entries.append(runs.request(spec))) for _ in range(30)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    while entries[0].state != "done":
        runs.wait(0.5)
    wall = time.perf_counter() - t
    print(f"30 sessions requesting one run at once: {runs.trained} training, {len({id(e) for e in entries})} shared "
          f"entry, {wall:.2f} s wall ({wall / alone:.2f}x one run alone just before: {alone:.2f} s)")
    print(f"\nload average at the end: {load():.1f}")


if __name__ == "__main__":
    main()
