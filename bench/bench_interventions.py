"""What made it say that (issue 27): the interventions' cost against one forward pass measured in the same run.

A plain script that prints a Markdown table, nothing is asserted. The reference is ``model.forward(ids)``
(logits of every position, all attention weights, the KV cache: what ``bench/bench_llama.py`` times), measured
between the other measurements in every round; each number is the minimum over the rounds (so a busy core
slows the reference as much as what it is compared with).

Measured, at ``--tokens`` (32) tokens of one English text:

* **one knockout**: ``interventions.knock_out(model, ids, [(0, 0)], run=clean)`` (layer 0: every block
  recomputed, the worst case) and ``[(15, 0)]``, from the clean run's stream; and the plain
  ``model.forward(ids, ablate=[(0, 0)])`` (a whole pass, weights and all);
* **the 270-head sweep**: its 30 stacked passes of 9 copies (``interventions.knockout_layer``, what
  ``iv.knockout_sweep`` loops over), each timed: the whole sweep's time per round (the fastest round), and the
  sum over the passes of each one's fastest time (as the reference is the fastest of its calls: on a busy host a
  34-second sweep cannot dodge the other processes the way a 0.3-second call can);
* **logit lens** ``iv.logit_lens(model, ids)`` and **attribution** ``iv.logit_attribution(model, ids, token)``, each
  with its own forward pass (no ``run`` given);
* for the lesson's default patch pair ("The capital of France is" / "... Italy is", 5 tokens): the residual
  patching map and the per-head map of one layer and of all 30, against a 5-token forward.

Budgets (issue 27): one knockout <= 1x a forward; the sweep at 32 tokens <= 60x; lens and attribution <= 1.5x.

    python bench/bench_interventions.py                    # about 2-4 minutes on 2 idle cores
    python bench/bench_interventions.py --rounds 2         # BLAS threads: the app's (explorer/shell/blas.py)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEXT = ("Attention lets every token look at the tokens before it and decide how much of each to take. In a "
        "trained model, some heads follow the previous word, others find the subject of a sentence.")
CLEAN, CORRUPTED = "The capital of France is", "The capital of Italy is"


def best(fn, repeats: int) -> float:
    out = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out


def load_average() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "uptime unavailable"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="rounds (the sweep runs once per round)")
    parser.add_argument("--repeats", type=int, default=5, help="calls per round of the quick measurements")
    args = parser.parse_args()
    from explorer.shell import blas

    blas.apply()  # the app's BLAS threads (explorer/shell/blas.py)
    print(f"BLAS: {blas.current()}")

    from attention import llama
    from attention.llama import interventions as iv

    print(f"start: {load_average()}")
    model = llama.load()
    ids = model.encode(TEXT)[:args.tokens]
    if len(ids) < args.tokens:
        raise SystemExit(f"the text has only {len(ids)} tokens")
    token = int(model.forward(ids).logits[-1].argmax())
    clean = model.forward(ids, keep_activations=True)
    pair = [model.encode(CLEAN), model.encode(CORRUPTED)]
    answer, foil = model.encode(" Paris")[0], model.encode(" Rome")[0]
    runs = [model.forward(p, keep_activations=True) for p in pair]

    times: dict[str, float] = {}

    def note(name: str, seconds: float) -> None:
        times[name] = min(times.get(name, float("inf")), seconds)

    for _ in range(args.rounds):
        r = args.repeats
        note("forward", best(lambda: model.forward(ids), r))
        note("knockout L0", best(lambda: iv.knock_out(model, ids, [(0, 0)], run=clean), r))
        note("knockout L15", best(lambda: iv.knock_out(model, ids, [(15, 0)], run=clean), r))
        note("forward ablate L0", best(lambda: model.forward(ids, ablate=[(0, 0)]), r))
        note("logit lens", best(lambda: iv.logit_lens(model, ids), r))
        note("logit attribution", best(lambda: iv.logit_attribution(model, ids, token), r))
        note("forward", best(lambda: model.forward(ids), r))
        start = time.perf_counter()
        for layer in range(model.config.n_layers):  # the sweep, one stacked pass at a time, each pass timed
            note(f"pass {layer}", best(lambda layer=layer: iv.knockout_layer(model, ids, token, layer, run=clean), 1))
        note("sweep", time.perf_counter() - start)
        note("forward", best(lambda: model.forward(ids), r))
        note("forward 5", best(lambda: model.forward(pair[1]), r))
        note("patch resid", best(lambda: iv.patch_residual_sweep(model, *pair, answer, foil, clean_run=runs[0],
                                                                 corrupted_run=runs[1]), 1))
        note("patch heads L23", best(lambda: iv.patch_head_sweep(model, *pair, answer, foil, [23],
                                                                 clean_run=runs[0], corrupted_run=runs[1]), r))
        note("patch heads all", best(lambda: iv.patch_head_sweep(model, *pair, answer, foil, clean_run=runs[0],
                                                                 corrupted_run=runs[1]), 1))
        note("sweep 5", best(lambda: iv.knockout_sweep(model, pair[0], answer, run=runs[0]), 1))  # the page's default
        note("forward 5", best(lambda: model.forward(pair[1]), r))

    f, f5 = times["forward"], times["forward 5"]
    times["sweep passes"] = sum(times[f"pass {layer}"] for layer in range(model.config.n_layers))
    rows = [
        (f"forward(ids), {args.tokens} tokens (the reference)", "forward", f, None),
        ("one knockout, layer 0 (from the clean stream)", "knockout L0", f, 1.0),
        ("one knockout, layer 15 (from the clean stream)", "knockout L15", f, 1.0),
        ("forward(ids, ablate=[(0, 0)]) (a whole pass)", "forward ablate L0", f, 1.0),
        ("logit_lens(ids) (its own forward pass)", "logit lens", f, 1.5),
        ("logit_attribution(ids, token) (its own forward pass)", "logit attribution", f, 1.5),
        (f"the 270-head sweep, {args.tokens} tokens: whole sweeps (fastest round)", "sweep", f, 60.0),
        (f"the 270-head sweep, {args.tokens} tokens: sum of each pass's fastest", "sweep passes", f, 60.0),
        ("forward(ids), 5 tokens (the reference below)", "forward 5", f5, None),
        ("knockout_sweep: 270 heads, 5 tokens", "sweep 5", f5, None),
        ("patch_residual_sweep, 5 tokens (31 blocks x 2 differing positions)", "patch resid", f5, None),
        ("patch_head_sweep, layer 23 (9 heads)", "patch heads L23", f5, None),
        ("patch_head_sweep, all 30 layers (270 heads)", "patch heads all", f5, None),
    ]
    print(f"end: {load_average()}")
    print()
    print("| what | ms | / forward | budget |")
    print("|---|---:|---:|---|")
    for label, key, ref, budget in rows:
        ratio = times[key] / ref
        verdict = "" if budget is None else (f"<= {budget:g}x: **met**" if ratio <= budget else
                                             f"<= {budget:g}x: **not met**")
        print(f"| {label} | {times[key] * 1000:.1f} | {ratio:.2f}x | {verdict} |")


if __name__ == "__main__":
    main()
