"""SmolLM2-135M-Instruct in ``attention.llama`` (float32 and compact weights) against Hugging Face transformers.

A plain script that prints Markdown tables, nothing is asserted. Every measurement runs in a fresh
worker process (``--worker``), so neither library's threads, allocator or caches disturb the other;
the speed workers alternate (ours, transformers, compact, then the reverse order) for ``--rounds``
rounds and each number is the minimum over the rounds.

1. **Forward pass with all attention weights**, prompts of 8, 32 and 128 tokens (the same ids for
   both): ``model.forward(ids)`` (logits ``[n, 49152]``, attentions ``[30, 9, n, n]``, KV cache) against
   transformers' ``model(ids, output_attentions=True)`` (float32, ``attn_implementation="eager"``,
   ``torch.no_grad()``, its default cache on). Minimum over ``--repeats`` calls.
2. **Decoding with the cache**: after a 32-token prompt (not timed), 16 single-token steps, each
   fed the previous cache, as generation does; time per token = total / 16. Without attention
   weights (``need_weights=False`` / transformers' default) and with them.
3. **Load**: a fresh process importing the library and loading the file (warm page cache; ours
   includes the SHA-256 check and the tokenizer; transformers loads model and tokenizer).
4. **Resident memory** (``VmRSS`` from ``/proc/self/status``) after imports, after loading, and
   after one 128-token forward pass with weights; peak (``VmHWM``).

Threads: PyTorch ``torch.set_num_threads(--threads)``, NumPy's OpenBLAS set the way the app sets it
(:func:`explorer.shell.blas.apply` with ``ATTENTION_BLAS_THREADS=--threads``); the default ``--threads`` is the
app's own setting (1: ``explorer/shell/blas.py``), and the numbers are only comparable at the same count. Run
from the repository root, with the test dependencies and the weights installed:

    python bench/bench_llama.py            # about 5 minutes on 2 cores (transformers loads for ~20 s, 3 times)
    python bench/bench_llama.py --rounds 1 --repeats 3   # quicker, noisier
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = (8, 32, 128)
PROMPT = 32
DECODE_STEPS = 16
WORKERS = ("ours-float32", "transformers", "ours-compact")
TEXT = (
    "Attention lets every token look at the tokens before it and decide how much of each to take. "
    "In a trained model, some heads follow the previous word, others find the subject of a sentence, "
    "and a few copy names they have seen before. The cat sat on the mat because it was tired, and then "
    "it fell asleep in the warm afternoon sun while the dog watched from the garden. "
) * 4


def rss_mib() -> dict[str, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --- workers (one library per process) -------------------------------------------------------------


class Ours:
    def __init__(self, weights: str, threads: int):
        from attention import llama
        from explorer.shell import blas

        blas.apply({blas.THREADS_ENV: str(threads)})  # as the app's server does (default: its own setting)

        self.llama, self.weights = llama, weights

    def load(self):
        self.model = self.llama.load(weights=self.weights)

    def forward(self, ids):
        return self.model.forward(ids)

    def prefill(self, ids):
        return self.model.forward(ids, need_weights=False).cache

    def step(self, token, cache, weights: bool):
        return self.model.forward([token], cache=cache, need_weights=weights).cache


class Transformers:
    def __init__(self, threads: int):
        os.environ["HF_HUB_OFFLINE"] = "1"
        import torch
        import transformers  # noqa: F401 - timed with the import

        torch.set_num_threads(threads)
        self.torch = torch

    def load(self):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from attention.llama import gguf_file

        path = gguf_file.find_model_file(download=False)
        self.tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        self.model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                          attn_implementation="eager",
                                                          dtype=self.torch.float32).eval()

    def forward(self, ids):
        with self.torch.no_grad():
            return self.model(self.torch.tensor([ids]), output_attentions=True)

    def prefill(self, ids):
        with self.torch.no_grad():
            return self.model(self.torch.tensor([ids]), use_cache=True).past_key_values

    def step(self, token, cache, weights: bool):
        with self.torch.no_grad():
            return self.model(self.torch.tensor([[token]]), past_key_values=cache, use_cache=True,
                              output_attentions=weights).past_key_values


def make(name: str, threads: int):
    return Transformers(threads) if name == "transformers" else Ours(name.removeprefix("ours-"), threads)


def bench_ids() -> list[int]:
    """The prompt's ids, by our tokenizer (transformers' gives the same: tests/core/test_llama_live.py).

    Computed once by the parent and handed to the workers (``$BENCH_LLAMA_IDS``), so a transformers
    worker never starts NumPy's BLAS threads next to PyTorch's (on 2 cores, two spinning thread
    pools made transformers up to 20x slower here).
    """
    if os.environ.get("BENCH_LLAMA_IDS"):
        return json.loads(os.environ["BENCH_LLAMA_IDS"])
    from attention import llama

    return llama.load(weights="compact").encode(TEXT, truncate=True)


def time_speed(lib, ids_all: list[int], repeats: int) -> dict:
    """The speed tables' numbers for a loaded library wrapper (``forward``, ``prefill``, ``step``): the forward pass at
    each of :data:`SIZES` tokens (minimum of ``repeats`` calls, half as many at 128), then :data:`DECODE_STEPS`
    decoded tokens after a :data:`PROMPT`-token prompt without and with attention weights (seconds per token, minimum
    over runs). Shared with ``bench/bench_sizes.py``.

    Each key also has a ``_cpu`` twin: the same calls' process CPU time (``time.process_time``, every thread of the
    worker), minimum over the same runs. On a shared machine wall time counts the minutes other processes held the
    core; CPU time does not (it still pays for caches and memory bandwidth they share)."""
    out = {key: {} for key in ("forward", "decode", "decode_weights", "forward_cpu", "decode_cpu",
                               "decode_weights_cpu")}
    lib.forward(ids_all[:8])  # warm-up
    for n in SIZES:
        ids = ids_all[:n]
        best = best_cpu = float("inf")
        for _ in range(repeats if n < 128 else max(2, repeats // 2)):
            start, cpu = time.perf_counter(), time.process_time()
            lib.forward(ids)
            best, best_cpu = min(best, time.perf_counter() - start), min(best_cpu, time.process_time() - cpu)
        out["forward"][n], out["forward_cpu"][n] = best, best_cpu
    steps = ids_all[PROMPT:PROMPT + DECODE_STEPS]
    for key, weights in (("decode", False), ("decode_weights", True)):
        best = best_cpu = float("inf")
        for _ in range(max(2, repeats // 2)):
            cache = lib.prefill(ids_all[:PROMPT])
            start, cpu = time.perf_counter(), time.process_time()
            for token in steps:
                cache = lib.step(token, cache, weights)
            best = min(best, (time.perf_counter() - start) / len(steps))
            best_cpu = min(best_cpu, (time.process_time() - cpu) / len(steps))
        out[key][PROMPT], out[key + "_cpu"][PROMPT] = best, best_cpu
    return out


def worker_speed(name: str, threads: int, repeats: int) -> dict:
    lib = make(name, threads)
    lib.load()
    return time_speed(lib, bench_ids(), repeats)


def worker_load(name: str, threads: int) -> dict:
    start = time.perf_counter()
    lib = make(name, threads)
    imported = time.perf_counter()
    lib.load()
    return {"import": imported - start, "load": time.perf_counter() - imported}


def worker_memory(name: str, threads: int) -> dict:
    lib = make(name, threads)
    after_import = rss_mib()["VmRSS"]
    lib.load()
    after_load = rss_mib()["VmRSS"]
    lib.forward(bench_ids()[:128])
    status = rss_mib()
    return {"import": after_import, "loaded": after_load, "after_forward": status["VmRSS"], "peak": status["VmHWM"]}


def run_worker(name: str, task: str, args) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--task", task, "--threads", str(args.threads),
               "--repeats", str(args.repeats)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT,
                            env={**os.environ, "BENCH_LLAMA_IDS": json.dumps(args.ids)})
    if result.returncode:
        raise RuntimeError(f"{name} {task} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- the report -----------------------------------------------------------------------------------


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    from explorer.shell import blas

    parser.add_argument("--threads", type=int, default=blas.wanted() or os.cpu_count() or 1,
                        help="threads of both libraries (default: the app's BLAS setting, explorer/shell/blas.py)")
    parser.add_argument("--worker")
    parser.add_argument("--task", choices=("speed", "load", "memory"))
    args = parser.parse_args()
    if args.worker:
        task = {"speed": lambda: worker_speed(args.worker, args.threads, args.repeats),
                "load": lambda: worker_load(args.worker, args.threads),
                "memory": lambda: worker_memory(args.worker, args.threads)}[args.task]
        print(json.dumps(task()))
        return

    import numpy as np
    import torch
    import transformers

    args.ids = bench_ids()

    print(f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; Python {platform.python_version()}, NumPy {np.__version__}, "
          f"PyTorch {torch.__version__}, transformers {transformers.__version__}; {args.threads} threads each; "
          f"{time.strftime('%Y-%m-%d')}\n")
    speed: dict[str, list[dict]] = {name: [] for name in WORKERS}
    for round_index in range(args.rounds):
        order = WORKERS if round_index % 2 == 0 else tuple(reversed(WORKERS))
        for name in order:
            speed[name].append(run_worker(name, "speed", args))
            print(f"  round {round_index + 1}: {name} done", file=sys.stderr)

    def best(name, key, n):
        return min(r[key][str(n)] for r in speed[name])

    print("### Forward pass with all attention weights (ms, minimum)\n")
    print("| tokens | transformers | ours float32 | ratio | ours compact | ratio |")
    print("|---|---|---|---|---|---|")
    for n in SIZES:
        hf, ours, compact = best("transformers", "forward", n), best("ours-float32", "forward", n), \
            best("ours-compact", "forward", n)
        print(f"| {n} | {fmt_ms(hf)} | {fmt_ms(ours)} | **{ours / hf:.2f}x** | {fmt_ms(compact)} | "
              f"{compact / hf:.2f}x |")
    print(f"\n### One decoded token with the cache, after {PROMPT} tokens (ms per token, mean of {DECODE_STEPS} steps, "
          "minimum)\n")
    print("| attention weights | transformers | ours float32 | ratio | ours compact | ratio |")
    print("|---|---|---|---|---|---|")
    for key, label in (("decode", "not returned"), ("decode_weights", "returned")):
        hf, ours, compact = best("transformers", key, PROMPT), best("ours-float32", key, PROMPT), \
            best("ours-compact", key, PROMPT)
        print(f"| {label} | {fmt_ms(hf)} | {fmt_ms(ours)} | **{ours / hf:.2f}x** | {fmt_ms(compact)} | "
              f"{compact / hf:.2f}x |")

    loads = {name: min((run_worker(name, "load", args) for _ in range(2)), key=lambda r: r["load"])
             for name in WORKERS}
    memory = {name: run_worker(name, "memory", args) for name in WORKERS}
    print("\n### Load (s, fresh process, warm page cache) and resident memory (MiB)\n")
    print("| | import | load | RSS after import | RSS loaded | model (loaded - import) | ratio to transformers "
          "| RSS after a 128-token forward | peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    hf_model = memory["transformers"]["loaded"] - memory["transformers"]["import"]
    for name in WORKERS:
        m, t = memory[name], loads[name]
        model, total = m["loaded"] - m["import"], m["loaded"] / memory["transformers"]["loaded"]
        print(f"| {name} | {t['import']:.2f} | **{t['load']:.2f}** | {m['import']:.0f} | {m['loaded']:.0f} | "
              f"{model:.0f} | **{model / hf_model:.2f}x** (total {total:.2f}x) "
              f"| {m['after_forward']:.0f} | {m['peak']:.0f} |")


if __name__ == "__main__":
    main()
