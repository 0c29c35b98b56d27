"""Models of real size: random GGUFs at the shapes of Qwen2.5-0.5B and Gemma 3 270M, ours against transformers.

A plain script that prints Markdown tables, nothing is asserted. The values of the weights do not change the cost of
a forward pass, so the files are random (a fixed seed) at the models' real shapes, written once into a cache folder
(``--cache``, default ``/tmp/bench_sizes``) and reused:

* **Qwen2.5-0.5B** (``qwen2``): 24 layers, d_model 896, 14 query heads sharing 2 key/value heads, d_head 64, SwiGLU
  d_ff 4864, vocabulary 151,936, tied embeddings, RoPE base 1e6, RMSNorm eps 1e-6, context 32,768, biases on Q, K, V.
* **Gemma 3 270M** (``gemma3``): 18 layers, d_model 640, 4 query heads sharing 1 key/value head, d_head 256, GeGLU
  d_ff 2048, vocabulary 262,144, tied embeddings, sliding window 512 on 5 of every 6 layers (RoPE base 10,000 there,
  1e6 on the global ones), RMSNorm eps 1e-6, context 32,768.

Source of the shapes: the models' ``config.json`` on the Hugging Face hub (Qwen/Qwen2.5-0.5B: hidden_size 896,
intermediate_size 4864, num_hidden_layers 24, num_attention_heads 14, num_key_value_heads 2, vocab_size 151936,
rope_theta 1e6, tie_word_embeddings true; google/gemma-3-270m: hidden_size 640, intermediate_size 2048,
num_hidden_layers 18, num_attention_heads 4, num_key_value_heads 1, head_dim 256, vocab_size 262144,
sliding_window 512, layer_types 5 sliding : 1 full, rope_local_base_freq 10000, rope_theta 1e6).

The matrices are written in the type a downloaded file has (``--qtypes``: ``Q8_0``, the usual type of a 0.5B
download, and ``F16``), the norms and biases F32, with a synthetic vocabulary of the model's size (the tiny test
vocabularies of ``tests/core/llama_support.py``, padded with ``<filler…>`` tokens: the tokenizer's speed is not the
point, the prompts are token ids drawn with a fixed seed).

Every measurement runs in a fresh worker process (``--worker``, one library per process: ``bench/bench_llama.py``'s
pattern), at the app's settings (one BLAS thread, ``explorer/shell/blas.py``; ``torch.set_num_threads(1)``); the
speed workers (ours float32, transformers, ours compact) alternate their order for ``--rounds`` rounds, quiet and
with a busy core beside them (``bench/busy.py``), and each number is the minimum over the rounds, in wall time
and in CPU time (``bench_llama.time_speed``: on a shared machine the wall time counts the neighbours):

1. **Forward pass with all attention weights**, 8, 32 and 128 tokens (``model.forward(ids)`` against
   ``model(ids, output_attentions=True)``, float32, eager attention, ``torch.no_grad()``).
2. **One decoded token with the cache** after a 32-token prompt: 16 single-token steps, each fed the previous cache,
   without attention weights and with them; time per token = total / 16.
3. **Load**: a fresh process loading the file (warm page cache; ours without the SHA-256 check, which a file not
   pinned skips, with its tokenizer; transformers the model alone).
4. **Memory**: ``VmRSS`` after imports, after loading, after a 128-token forward pass with weights, and the peak
   (``VmHWM``) after a pass of ``config.max_tokens`` (256) tokens with weights: what
   :func:`attention.llama.memory.estimate_bytes` estimates (printed beside it).

    python bench/bench_sizes.py                        # both models, Q8_0, quiet and busy (about 40 minutes)
    python bench/bench_sizes.py --models qwen --rounds 1 --no-busy   # quicker
    python bench/bench_sizes.py --tasks write          # only write the files (and say how long it took)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bench_llama  # noqa: E402 (this folder is the script's: python bench/bench_sizes.py)
from bench_core import cpu_model  # noqa: E402, F401 (one home: the machine's CPU name)
from bench_llama import DECODE_STEPS, PROMPT, SIZES, WORKERS  # noqa: E402, F401 (the same tables' shapes)

SEED = 0
FILE_VERSION = 1  # bump when the written files change (the cache keeps files by name)

MODELS = {"qwen": {"label": "Qwen2.5-0.5B", "vocabulary": "qwen"}, "gemma": {"label": "Gemma 3 270M",
                                                                            "vocabulary": "sentencepiece"}}
"""The two models; their shapes are ``tests/core/llama_support``'s :data:`QWEN2_5_0_5B` and :data:`GEMMA3_270M`
(:func:`shapes`; see the module docstring for the source)."""


def shapes(model: str) -> dict:
    """The model's config (the keys of ``tests/core/llama_support.TINY``, with ``"vocab"``, the vocabulary size)."""
    from tests.core import llama_support as support

    return support.QWEN2_5_0_5B if model == "qwen" else support.GEMMA3_270M


def rss_mib() -> dict[str, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


# --- the files ------------------------------------------------------------------------------------------------------


def vocabulary(model: str):
    """The tiny test vocabulary of the model's family padded with ``<filler…>`` tokens (normal, score 0) to its real
    size: an embedding of the real shape, and a tokenizer that reads it (no merge makes a filler)."""
    from tests.core import llama_support as support

    v = support.qwen_vocabulary() if MODELS[model]["vocabulary"] == "qwen" else support.sentencepiece_vocabulary()
    fillers = [f"<filler{i}>" for i in range(shapes(model)["vocab"] - len(v.tokens))]
    scores = None if v.scores is None else v.scores + [0.0] * len(fillers)
    return dataclasses.replace(v, tokens=v.tokens + fillers, types=v.types + [1] * len(fillers), scores=scores)


def file_path(cache: Path, model: str, qtype: str) -> Path:
    return cache / f"{model}-{qtype.lower()}-seed{SEED}-v{FILE_VERSION}.gguf"


def write_file(path: Path, model: str, qtype: str) -> float:
    """Write the random GGUF of ``model`` with its matrices in ``qtype`` (``"Q8_0"`` or ``"F16"``) to ``path``
    (through a temporary name, so a half-written file is never reused); returns the seconds it took.

    Values: ``standard_normal`` float32 (``np.random.default_rng(SEED)``), matrices scaled by ``1/sqrt(d_in)``, norm
    gains ``1 + 0.2 N(0, 1)``, biases ``0.5 N(0, 1)``: the same recipe as the tiny test files, drawn in float32.
    """
    import gguf
    import numpy as np

    from tests.core import llama_support as support

    start = time.perf_counter()
    config, v = shapes(model), vocabulary(model)
    kind = {"Q8_0": gguf.GGMLQuantizationType.Q8_0, "F16": gguf.GGMLQuantizationType.F16}[qtype]
    rng = np.random.default_rng(SEED)
    tmp = path.with_suffix(".part")
    writer = support.gguf_writer(tmp, config, v, f"random-{model}-{qtype.lower()}")
    for name, shape in support.gguf_shapes(config, len(v.tokens)).items():
        value = rng.standard_normal(shape, dtype=np.float32)
        if name.endswith(".bias"):
            value *= np.float32(0.5)
        elif len(shape) == 1:
            value = np.float32(1) + np.float32(0.2) * value
        else:
            value *= np.float32(1 / np.sqrt(shape[1]))
        if len(shape) == 2 and kind == gguf.GGMLQuantizationType.Q8_0:
            writer.add_tensor(name, gguf.quants.quantize(value, kind), raw_dtype=kind)
        elif len(shape) == 2:
            writer.add_tensor(name, value.astype(np.float16))
        else:
            writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.rename(path)
    return time.perf_counter() - start


def ensure_file(cache: Path, model: str, qtype: str) -> tuple[Path, float | None]:
    """The cached file (written if missing): ``(path, seconds to write it or None when it was there)``."""
    cache.mkdir(parents=True, exist_ok=True)
    path = file_path(cache, model, qtype)
    return (path, None) if path.exists() else (path, write_file(path, model, qtype))


def bench_ids(model: str, n: int = 256) -> list[int]:
    """``n`` token ids drawn over the whole vocabulary with a fixed seed (the same for both libraries)."""
    import numpy as np

    return np.random.default_rng(1).integers(0, shapes(model)["vocab"], n).tolist()


# --- workers (one library per process) -------------------------------------------------------------------------------


class Ours(bench_llama.Ours):
    """bench_llama's worker (its forward, prefill and step) on a file of this benchmark."""

    def __init__(self, path: Path, weights: str):
        from attention import llama
        from explorer.shell import blas

        blas.apply({blas.THREADS_ENV: "1"})  # the app's setting
        self.llama, self.path, self.weights = llama, path, weights

    def load(self):
        self.model = self.llama.load(self.path, weights=self.weights, expected_sha256=None)


class Transformers(bench_llama.Transformers):
    """bench_llama's transformers worker (its forward, prefill and step) on a file of this benchmark."""

    def __init__(self, path: Path):
        super().__init__(1)
        self.path = path

    def load(self):
        from transformers import AutoModelForCausalLM

        self.model = AutoModelForCausalLM.from_pretrained(self.path.parent, gguf_file=self.path.name,
                                                          attn_implementation="eager",
                                                          dtype=self.torch.float32).eval()


def make(name: str, path: Path):
    return Transformers(path) if name == "transformers" else Ours(path, name.removeprefix("ours-"))


def worker_speed(lib, ids_all: list[int], repeats: int) -> dict:
    lib.load()
    return bench_llama.time_speed(lib, ids_all, repeats)  # the same timing loop as SmolLM2's tables


def worker_load(name: str, path: Path) -> dict:
    start = time.perf_counter()
    lib = make(name, path)
    imported = time.perf_counter()
    lib.load()
    return {"import": imported - start, "load": time.perf_counter() - imported}


def worker_memory(lib, ids_all: list[int]) -> dict:
    after_import = rss_mib()["VmRSS"]
    lib.load()
    after_load = rss_mib()
    lib.forward(ids_all[:128])
    after_128 = rss_mib()
    lib.forward(ids_all[:256])
    after_256 = rss_mib()
    return {"import": after_import, "loaded": after_load["VmRSS"], "load_peak": after_load["VmHWM"],
            "after_forward": after_128["VmRSS"], "peak_128": after_128["VmHWM"], "peak": after_256["VmHWM"]}


def run_worker(name: str, task: str, path: Path, model: str, args) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--task", task, "--file", str(path), "--models", model,
               "--repeats", str(args.repeats)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # no idle BLAS threads anywhere
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    if result.returncode:
        raise RuntimeError(f"{name} {task} on {path.name} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- the report -------------------------------------------------------------------------------------------------------


def estimates(path: Path) -> dict[str, int]:
    """:func:`attention.llama.memory.estimate_bytes` of the file in both modes."""
    from attention.llama import gguf_file, memory
    from attention.llama.config import LlamaConfig
    from attention.llama.tokenizer import read_tokenizer

    file = gguf_file.read_gguf(path)
    config = LlamaConfig.from_metadata(file.metadata, read_tokenizer(file.metadata, 0).vocab_size)
    return {mode: memory.estimate_bytes(file.tensors, config, mode) for mode in ("float32", "compact")}


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}" if seconds >= 0.1 else f"{seconds * 1e3:.1f}"


def uptime() -> str:
    from bench.busy import load_average

    return load_average()


def report_speed(speed: dict, label: str) -> None:
    """The forward and decoding tables of one condition: wall time, then the same calls' CPU time
    (``bench_llama.time_speed``), each the minimum over the rounds."""
    def best(name, key, n):
        return min(r[key][str(n)] for r in speed[name])

    for clock, suffix in (("wall", ""), ("CPU", "_cpu")):
        print(f"#### {label}: forward pass with all attention weights (ms {clock} time, minimum)\n")
        print("| tokens | transformers | ours float32 | ratio | ours compact | ratio |")
        print("|---|---:|---:|---:|---:|---:|")
        for n in SIZES:
            hf, ours, compact = (best(w, "forward" + suffix, n) for w in ("transformers", "ours-float32",
                                                                           "ours-compact"))
            print(f"| {n} | {fmt_ms(hf)} | {fmt_ms(ours)} | **{ours / hf:.2f}x** | {fmt_ms(compact)} | "
                  f"{compact / hf:.2f}x |")
        print(f"\n#### {label}: one decoded token after {PROMPT} tokens (ms {clock} time per token, mean of "
              f"{DECODE_STEPS} steps, minimum)\n")
        print("| attention weights | transformers | ours float32 | ratio | ours compact | ratio |")
        print("|---|---:|---:|---:|---:|---:|")
        for key, text in (("decode", "not returned"), ("decode_weights", "returned")):
            hf, ours, compact = (best(w, key + suffix, PROMPT) for w in ("transformers", "ours-float32",
                                                                          "ours-compact"))
            print(f"| {text} | {fmt_ms(hf)} | {fmt_ms(ours)} | **{ours / hf:.2f}x** | {fmt_ms(compact)} | "
                  f"{compact / hf:.2f}x |")
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="qwen,gemma", help="comma-separated: qwen, gemma")
    parser.add_argument("--qtypes", default="Q8_0", help="comma-separated: Q8_0, F16 (speed runs on the first)")
    parser.add_argument("--tasks", default="speed,load,memory", help="comma-separated: write, speed, load, memory")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default=",".join(WORKERS),
                        help="comma-separated, for load and memory only (the speed tables need all three)")
    parser.add_argument("--no-busy", action="store_true", help="only quiet (no busy core beside the speed runs)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bench_sizes"))
    parser.add_argument("--json", type=Path, help="also write every raw result here")
    parser.add_argument("--worker")
    parser.add_argument("--task", choices=("speed", "load", "memory"))
    parser.add_argument("--file", type=Path)
    args = parser.parse_args()
    models, qtypes, tasks = args.models.split(","), args.qtypes.split(","), args.tasks.split(",")
    chosen = tuple(w for w in WORKERS if w in args.workers.split(","))
    if args.worker:
        ids = bench_ids(models[0])
        task = {"speed": lambda: worker_speed(make(args.worker, args.file), ids, args.repeats),
                "load": lambda: worker_load(args.worker, args.file),
                "memory": lambda: worker_memory(make(args.worker, args.file), ids)}[args.task]
        print(json.dumps(task()))
        return

    import numpy as np
    import torch
    import transformers

    from bench.busy import busy_core

    print(f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; Python {platform.python_version()}, NumPy {np.__version__}, "
          f"PyTorch {torch.__version__}, transformers {transformers.__version__}; 1 thread each (the app's setting); "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {uptime()}\n")
    raw: dict = {}
    for model in models:
        label = MODELS[model]["label"]
        files = {}
        for qtype in qtypes:
            path, took = ensure_file(args.cache, model, qtype)
            files[qtype] = path
            size = path.stat().st_size / 1e6
            print(f"- {label} {qtype}: `{path}`, {size:,.0f} MB, "
                  + (f"written in {took:.1f} s" if took is not None else "cached"))
        print()
        raw[model] = {"files": {q: str(p) for q, p in files.items()}}
        if "speed" in tasks:
            path = files[qtypes[0]]
            conditions = ("quiet",) if args.no_busy else ("quiet", "busy")
            speed = {c: {name: [] for name in WORKERS} for c in conditions}
            loads = {c: [] for c in conditions}
            for round_index in range(args.rounds):
                order = WORKERS if round_index % 2 == 0 else tuple(reversed(WORKERS))
                for condition in conditions if round_index % 2 == 0 else tuple(reversed(conditions)):
                    with busy_core(condition == "busy"):
                        loads[condition].append(uptime())
                        for name in order:
                            speed[condition][name].append(run_worker(name, "speed", path, model, args))
                            print(f"  {label} round {round_index + 1} {condition}: {name} done", file=sys.stderr)
                        loads[condition].append(uptime())
            raw[model]["speed"], raw[model]["speed_loads"] = speed, loads
            for condition in conditions:
                report_speed(speed[condition], f"{label} {qtypes[0]}, {condition} "
                             f"({'a busy core beside it; ' if condition == 'busy' else ''}"
                             f"{'; '.join(loads[condition])})")
        for qtype, path in files.items():
            if "load" in tasks:
                loads_ = {name: min((run_worker(name, "load", path, model, args) for _ in range(2)),
                                    key=lambda r: r["load"]) for name in chosen}
                raw[model].setdefault("load", {})[qtype] = loads_
            if "memory" in tasks:
                memory = {name: run_worker(name, "memory", path, model, args) for name in chosen}
                raw[model].setdefault("memory", {})[qtype] = memory
                est = estimates(path)
                raw[model].setdefault("estimate", {})[qtype] = est
                print(f"#### {label} {qtype}: load (s) and resident memory (MiB), {uptime()}\n")
                print("| | import | load | RSS after import | RSS loaded | model | peak while loading "
                      "| after a 128-token forward | peak (256 tokens) | peak - import | estimate (MiB) "
                      "| estimate / measured |")
                print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
                for name in chosen:
                    m = memory[name]
                    t = raw[model].get("load", {}).get(qtype, {}).get(name, {"import": float("nan"),
                                                                              "load": float("nan")})
                    used = m["peak"] - m["import"]
                    mode = name.removeprefix("ours-")
                    est_cell = ratio_cell = ""
                    if mode in est:
                        est_cell = f"{est[mode] / 2**20:.0f}"
                        ratio_cell = f"{est[mode] / 2**20 / used:.2f}"
                    print(f"| {name} | {t['import']:.2f} | **{t['load']:.2f}** | {m['import']:.0f} | "
                          f"{m['loaded']:.0f} | {m['loaded'] - m['import']:.0f} | {m['load_peak']:.0f} | "
                          f"{m['after_forward']:.0f} | **{m['peak']:.0f}** | {used:.0f} | {est_cell} | {ratio_cell} |")
                print()
        if args.json:  # after every model: a failure later keeps what was measured
            args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
