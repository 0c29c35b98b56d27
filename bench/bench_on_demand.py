"""What a first visit to each real-model lesson computes, and what its switched-off sections would cost (issue 47,
item 2): a plain script that prints one Markdown table, nothing is asserted.

Each section's work is timed at the lesson's defaults through the lesson's own ``model.py`` functions on SmolLM2-135M
(the real file), as a ratio to the lesson's main pass timed in the same run (the pass the page's estimates are
derived from: :attr:`explorer.shell.llm.Run.seconds`), beside the page's own estimate in forward passes. NumPy's BLAS
is set as the app sets it (:func:`explorer.shell.blas.apply`). Run from the repository root, with the weights
installed:

    python bench/bench_on_demand.py    # about a minute on 2 cores, quiet
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    from attention import llama
    from explorer.lessons.causes import model as causes
    from explorer.lessons.kv_cache import model as kv
    from explorer.lessons.sinks import model as sinks
    from explorer.shell import blas, llm

    blas.apply()
    lm = llama.load()
    rows = []

    ids = tuple(lm.encode(causes.DEFAULT_PROMPT))
    main_pass = llm.forward(lm, ids, activations=True)
    main_pass = llm.forward(lm, ids, activations=True).seconds  # the second: the first also warms up
    clean, corrupted = (tuple(lm.encode(t)) for t in (causes.DEFAULT_CLEAN, causes.DEFAULT_CORRUPTED))
    answer = llm.forward(lm, clean).top_ids[0]
    foil = llm.forward(lm, corrupted).top_ids[0]
    words = llm.repeat_words(lm, causes.REPEAT_TOKENS)
    rows += [
        ("causes", f"main pass ({len(ids)} tokens, activations)", main_pass, 1, "on screen"),
        ("causes", "induction experiment", timed(lambda: causes.induction_experiment(lm, 0, 3, "zero")),
         causes.INDUCTION_PASSES * llm.pass_seconds(1, len(ids), 2 * words), "switch"),
        ("causes", "patching (residual map + one layer's heads)",
         timed(lambda: (llm.patch_residual_sweep(lm, clean, corrupted, answer, foil),
                        llm.patch_head_layer(lm, clean, corrupted, answer, foil, 23))),
         causes.patch_passes(lm.config, len(clean)) * llm.pass_seconds(1, len(ids), len(clean)), "switch"),
    ]
    ids = tuple(lm.encode(sinks.DEFAULT_PROMPT))
    summary = sinks.sink_summary(lm, ids)
    summary = sinks.sink_summary(lm, ids)
    rows += [
        ("sinks", f"main pass ({len(ids)} tokens, weights)", summary.seconds, 1, "on screen"),
        ("sinks", "another token first", timed(lambda: sinks.first_token_experiment(lm, ids, summary, "newline")), 1,
         "switch"),
        ("sinks", "shift", timed(lambda: sinks.shift_experiment(lm, ids, sinks.DEFAULT_OFFSET)), 2, "switch"),
        ("sinks", f"four caches, {sinks.DEFAULT_NEW_TOKENS} tokens each",
         timed(lambda: [sinks.streamed(lm, ids, min(sinks.DEFAULT_WINDOW, sinks.window_max(len(ids))), k,
                                       sinks.DEFAULT_NEW_TOKENS) for k in (*sinks.SINK_COUNTS, None)]),
         sinks.stream_passes(lm.config, sinks.DEFAULT_NEW_TOKENS), "switch"),
    ]
    ids = tuple(lm.encode(kv.DEFAULT_PROMPT))
    state = kv.prefill(lm, ids, kv.Sampling("greedy", 1.0, 0, 0))
    state = kv.prefill(lm, ids, kv.Sampling("greedy", 1.0, 0, 0))
    steps = 8  # the page opens at 0 steps (the recomputation is then the prefill again); 8, as after 8 clicks
    full = ids
    for _ in range(steps):
        full = full + (state.next_choice.token_id,)
        state = kv.decode_step(lm, state)
    rows += [
        ("kv_cache", f"prefill ({len(ids)} tokens)", state.seconds, 1, "on screen"),
        ("kv_cache", f"full recomputation ({len(full)} tokens)", timed(lambda: llm.forward(lm, full)),
         llm.pass_seconds(1, len(ids), len(full)), "switch"),
    ]
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}\n")
    print("| lesson | section | time / main pass | the page's estimate (passes) | first visit |")
    print("|---|---|---:|---:|---|")
    ref = {}
    for lesson, name, seconds, passes, where in rows:
        ref.setdefault(lesson, seconds)
        print(f"| {lesson} | {name} | {seconds / ref[lesson]:.1f}x | {passes:.0f} | {where} |")


if __name__ == "__main__":
    main()
