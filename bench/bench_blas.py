"""BLAS threads (issue 47, item 1): the real model's and the training lesson's waits on the app's setting (one
OpenBLAS thread per call, :mod:`explorer.shell.blas`) against OpenBLAS's default (one thread per core), on a quiet
machine and with a busy core beside.

A plain script that prints a Markdown table, nothing is asserted. Every cell runs in a fresh worker process, which
sets its threads the way the app does (``blas.apply`` with ``ATTENTION_BLAS_THREADS``) and loads the model; the
settings alternate within each round, and each number is the median and the minimum over ``--repeats`` calls,
best of ``--rounds`` rounds. Measured:

* ``forward``: SmolLM2-135M's forward pass over 32 tokens (all attention weights, as every real-model page);
* ``decode``: one generated token with the KV cache after a 32-token prompt (the KV cache and sinks pages);
* ``sweep``: the 270-head knockout sweep of "What made it say that?" at its default prompt (5 tokens);
* ``window``: the sinks page's perplexity with a 16-token window and 4 sinks over 64 tokens;
* ``train``: 50 steps of "Watch attention learn" at its defaults (the training loop pins its own BLAS to one
  thread while it runs; measured for completeness).

    python bench/bench_blas.py                 # about 5 minutes on 2 cores
    python bench/bench_blas.py --rounds 1 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.busy import busy_core, load_average  # noqa: E402

SETTINGS = ("1", "default")  # ATTENTION_BLAS_THREADS: the app's default, then OpenBLAS's own
TEXT = ("Attention lets every token look at the tokens before it and decide how much of each to take. In a "
        "trained model, some heads follow the previous word, others find the subject of a sentence, and a few copy "
        "names they have seen before. The cat sat on the mat because it was tired.")
TASKS = ("forward", "decode", "sweep", "window", "train")


def worker(setting: str, repeats: int) -> dict:
    from explorer.shell import blas

    os.environ[blas.THREADS_ENV] = setting  # as an operator would set it for the server
    applied = blas.apply()
    from attention import llama
    from attention.llama import interventions, variants
    from attention.training import train
    from explorer.lessons.training import model as T

    model = llama.load()
    ids = model.encode(TEXT)
    ids32, ids64 = ids[:32], ids[:64]
    prompt = model.encode("The capital of France is")
    paris = model.encode(" Paris")[0]
    prefill = model.forward(ids32, need_weights=False).cache
    spec = T.RunSpec()

    def timed(fn) -> list[float]:
        out = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
        return out

    def train_50():
        for _ in train(spec.config(), steps=50, batch=spec.batch, lr=spec.lr, task=spec.task, seed=spec.seed):
            pass

    model.forward(ids32)  # warm-up
    return {"threads": blas.current(), "applied": applied, "times": {
        "forward": timed(lambda: model.forward(ids32)),
        "decode": timed(lambda: model.forward([ids[32]], cache=prefill)),  # a cache is never changed by a call
        "sweep": timed(lambda: interventions.knockout_sweep(model, prompt, paris)),
        "window": timed(lambda: variants.perplexity(model, ids64, window=16, sinks=4)),
        "train": timed(train_50),
    }}


def run_worker(setting: str, repeats: int) -> dict:
    command = [sys.executable, __file__, "--worker", setting, "--repeats", str(repeats)]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                            "MKL_NUM_THREADS", "ATTENTION_BLAS_THREADS")}
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    if result.returncode:
        raise RuntimeError(f"worker {setting} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeats)))
        return

    results: dict[tuple[str, bool], list[dict]] = {}
    threads: dict[str, str] = {}
    print(f"start: {load_average()}; {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
          file=sys.stderr)
    for round_index in range(args.rounds):
        for busy in (False, True):
            order = SETTINGS if round_index % 2 == 0 else tuple(reversed(SETTINGS))
            for setting in order:
                with busy_core(busy):
                    out = run_worker(setting, args.repeats)
                threads[setting] = out["threads"]
                results.setdefault((setting, busy), []).append(out["times"])
                print(f"  round {round_index + 1}, busy={busy}, {setting}: {load_average()}", file=sys.stderr)
    print(f"end: {load_average()}", file=sys.stderr)
    for setting in SETTINGS:
        print(f"- `ATTENTION_BLAS_THREADS={setting}`: {threads[setting]}")
    print("\n| what | beside | app (1 thread): median / min | default: median / min | default / app (median) |")
    print("|---|---|---:|---:|---:|")
    for task in TASKS:
        for busy in (False, True):
            cells = {}
            for setting in SETTINGS:
                rounds = results[(setting, busy)]
                best_round = min(rounds, key=lambda r: statistics.median(r[task]))
                cells[setting] = (statistics.median(best_round[task]), min(min(r[task]) for r in rounds))
            app, default = cells["1"], cells["default"]
            print(f"| {task} | {'a busy core' if busy else 'quiet'} | {app[0] * 1e3:.0f} / {app[1] * 1e3:.0f} ms | "
                  f"{default[0] * 1e3:.0f} / {default[1] * 1e3:.0f} ms | {default[0] / app[0]:.1f}x |")


if __name__ == "__main__":
    main()
