"""The sinks lesson's sweeps against one forward pass of the same text, in the same run.

A plain script that prints Markdown tables, nothing is asserted. One process, the lesson's default text (59
tokens), the model in ``--weights`` mode. Every row is the minimum over ``--repeats`` calls of the lesson's own
functions (:mod:`explorer.lessons.sinks.model`, :mod:`attention.llama.variants`), uncached (the page caches each
result per prompt: a second visit costs none of this), divided by the reference measured in the same run, one
forward pass without attention weights (``model.forward(ids, need_weights=False)``):

1. the pieces: a forward pass with weights, StreamingLLM's numbering (:func:`variants.renumbered_logits`), one
   greedy token with a windowed cache, building each converted model (``kv_variant``; the latent factorisation
   of all 30 layers once, then a rank from it), and each variant's bytes of its own;
2. the page's sections as the page computes them the first time a prompt is seen: the sink (one pass with
   weights), another token first, every position shifted (two passes), the streaming section (0, 1, 4 kept first
   tokens and full attention, each a windowed pass, StreamingLLM's numbering and ``--new`` greedy tokens), and,
   when the learner asks for it (``sk_measure``), the sweep over every cache variant (the model's logits, then 13
   rows: MHA, GQA, MQA, 7 latent ranks, 3 windows).

Run from the repository root with the weights installed:

    python bench/bench_variants.py                 # about 3 minutes on 2 quiet cores
    python bench/bench_variants.py --repeats 1     # quicker, noisier
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attention import llama  # noqa: E402
from attention.llama import variants  # noqa: E402
from explorer.lessons.sinks import model as M  # noqa: E402


def best(fn, repeats: int) -> float:
    """The minimum wall time of ``repeats`` calls of ``fn`` (seconds)."""
    out = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--weights", default="float32", choices=llama.WEIGHT_MODES)
    parser.add_argument("--new", type=int, default=M.DEFAULT_NEW_TOKENS, help="generated tokens per streaming run")
    args = parser.parse_args()
    from explorer.shell import blas

    blas.apply()  # the app's BLAS threads (explorer/shell/blas.py)
    print(f"BLAS: {blas.current()}")
    model = llama.load(weights=args.weights)
    ids = tuple(model.encode(M.DEFAULT_PROMPT))
    n, r = len(ids), args.repeats
    model.forward(list(ids), need_weights=False)  # warm-up
    ref = best(lambda: model.forward(list(ids), need_weights=False), max(r, 5))

    def clear_basis():
        variants.latent_basis.cache_clear()

    pieces = [
        ("forward pass with attention weights", lambda: model.forward(list(ids))),
        ("StreamingLLM's numbering (window 16, 4 sinks)",
         lambda: variants.renumbered_logits(model, ids, window=16, sinks=4)),
        (f"greedy continuation, window 16 + 4 sinks, {args.new} tokens",
         lambda: variants.generate(model, ids, args.new, stop_at_eos=False, window=16, sinks=4)),
        ("kv_variant('mha')", lambda: variants.kv_variant(model, "mha")),
        ("kv_variant('mqa')", lambda: variants.kv_variant(model, "mqa")),
        ("latent factorisation of 30 layers (once per model)", lambda: (clear_basis(), variants.latent_basis(model))),
        ("kv_variant(('latent', 128)), factorisation kept", lambda: variants.kv_variant(model, ("latent", 128))),
    ]
    rows = [(name, best(fn, r)) for name, fn in pieces]

    reference = M.reference_logits(model, ids)
    todo = M.cache_variants(model.config, n)
    score_from = M.sweep_score_from(todo)

    def sink():
        return M.sink_summary(model, ids)

    summary = sink()

    def streaming():
        for sinks in (*M.SINK_COUNTS, None):
            M.streamed(model, ids, M.DEFAULT_WINDOW, sinks, args.new)

    def sweep():
        logits = M.reference_logits(model, ids)
        return [M.measure(model, ids, v, logits, score_from) for v in todo]

    def cold_sweep():
        clear_basis()
        return sweep()

    sections = [
        ("1 · the sink (sink_summary)", sink),
        ("2 · another token first (one choice)", lambda: M.first_token_experiment(model, ids, summary, "newline")),
        ("3 · every position shifted", lambda: M.shift_experiment(model, ids, M.DEFAULT_OFFSET)),
        (f"4 · streaming: 0, 1, 4 kept tokens + full, {args.new} new tokens each", streaming),
        (f"5 · the cache sweep, {len(todo)} variants (factorisation kept)", sweep),
        (f"5 · the cache sweep, {len(todo)} variants, first time in the process", cold_sweep),
    ]
    section_rows = [(name, best(fn, r)) for name, fn in sections]
    own = {kind: sum(layer.qkv.nbytes for layer in variants.kv_variant(model, kind)._layers)
           for kind in ("mha", "mqa", ("latent", 128))}
    defaults = sum(t for name, t in section_rows if not name.startswith("5 ·"))  # the page opens with sections 1-4
    asked = dict(section_rows)[f"5 · the cache sweep, {len(todo)} variants, first time in the process"]

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {platform.processor() or platform.machine()} · "
          f"{os.cpu_count()} cores · load average {os.getloadavg()[0]:.2f} at the end · weights {args.weights} · "
          f"{n} tokens · minimum of {r} calls")
    print(f"\nReference: one forward pass without attention weights, {ref * 1000:.1f} ms.\n")
    print("| piece | ms | x one forward |\n|---|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t * 1000:.1f} | {t / ref:.1f}x |")
    print("\n| the page's section, first visit of a prompt | s | x one forward |\n|---|---:|---:|")
    for name, t in section_rows:
        print(f"| {name} | {t:.2f} | {t / ref:.0f}x |")
    print(f"| **first visit of a prompt at the defaults (sections 1-4)** | **{defaults:.2f}** | "
          f"**{defaults / ref:.0f}x** |")
    print(f"| **and the sweep when asked (sk_measure), first time in the process** | **{defaults + asked:.2f}** | "
          f"**{(defaults + asked) / ref:.0f}x** |")
    print("\nA variant's own memory (its float32 W_q | W_k | W_v; everything else shared with the model): "
          + ", ".join(f"{k if isinstance(k, str) else 'latent'} {b / 1e6:.0f} MB" for k, b in own.items())
          + f"; the reference logits of the sweep {reference.nbytes / 1e6:.1f} MB.")


if __name__ == "__main__":
    main()
