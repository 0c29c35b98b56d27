"""Inject plausible bugs, one at a time, into a throwaway copy of the repository and show that the suite catches each
(issue 46, "Nothing lost": "inject at least ten plausible bugs of your own … into a throwaway copy and show that the
new suite fails on each").

Usage::

    python tools/inject_bugs.py [CHECKOUT] [--only N[,N…]] [--keep]

``CHECKOUT`` defaults to the repository this file sits in. Its committed tree (``git archive HEAD``; a directory
without git is copied with ``cp -r``) is unpacked into a temporary directory; the checkout itself is never touched.
For each bug in :data:`BUGS`: the one file is edited by an exact ``old`` -> ``new`` replacement (``old`` must occur
exactly once, otherwise the row says the string moved), the named pytest node ids run in the copy
(``python -m pytest -p no:cacheprovider -q -x``, narrow ones, fast tier where the subject has one), a failure is
expected, and the file is restored. Prints a Markdown table ``# | bug (file: what changed) | failing test |
result`` with the commit it ran on; the exit code is 1 when a bug is NOT CAUGHT or a string was not found, else 0.

Translations: the app compiles no ``.mo`` file; ``explorer.shell.i18n.catalog`` reads each ``.po`` with babel's
``read_po`` and writes the ``.mo`` in memory (``write_mo``) when the process first needs it (README, "tools/" and
``explorer/shell/i18n.py``'s docstring), so an edited ``.po`` in the copy is what the tests read; nothing to build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bug:
    """One slip: in ``path`` (relative to the checkout), ``old`` (occurring exactly once) becomes ``new``;
    ``tests`` are the pytest node ids expected to fail on it."""

    what: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


BUGS: tuple[Bug, ...] = (
    Bug("a scale: the default SDPA scale 1/√d_k becomes 1/d_k",
        "attention/_validate.py",
        "scale = 1.0 / math.sqrt(d_k)", "scale = 1.0 / d_k",
        ("tests/core/test_core.py::test_sdpa_matches_formula",)),
    Bug("a mask: the causal mask off by one (query i also sees key i + 1)",
        "attention/core.py",
        "return np.tri(n_q, n_k, dtype=bool)", "return np.tri(n_q, n_k, k=1, dtype=bool)",
        ("tests/core/test_core.py::test_causal_mask_default_square",
         "tests/core/test_core.py::test_causal_mask_upper_left_aligned")),
    Bug("RoPE: the rotation's sign flipped in the even component (x cos + y sin)",
        "attention/llama/blocks.py",
        "out[..., 0::2] = even * cos - odd * sin", "out[..., 0::2] = even * cos + odd * sin",
        ("tests/core/test_llama_parts.py::test_apply_rope_rotates_adjacent_pairs",)),
    Bug("RoPE: theta base's exponent over d_head/2 instead of d_head (the speeds of the pairs)",
        "attention/llama/blocks.py",
        "(-np.arange(0, d_head, 2, dtype=np.float64) / d_head)",
        "(-np.arange(0, d_head, 2, dtype=np.float64) / (d_head // 2))",
        ("tests/core/test_llama_parts.py::test_rope_frequencies_and_angles",)),
    Bug("the GQA head mapping: query head h reads kv head h % n_kv instead of h // group (head steps)",
        "attention/llama/model.py",
        "kv_head = len(ids), c.n_heads, c.n_kv_heads, c.d_head, head // c.group_size",
        "kv_head = len(ids), c.n_heads, c.n_kv_heads, c.d_head, head % c.n_kv_heads",
        ("tests/core/test_llama_tiny.py::test_head_steps_are_the_forward_pass_step_by_step",)),
    Bug("the KV cache's positions: each step's RoPE positions restart at 0 instead of after the cached tokens",
        "attention/llama/model.py",
        "positions = plan.position_offset + np.arange(start, start + n)",
        "positions = plan.position_offset + np.arange(n)",
        ("tests/core/test_llama_tiny.py::test_cache_token_by_token_equals_one_full_pass",)),
    Bug("an attribution part: the embedding's share of the logit left out of the split",
        "attention/llama/interventions.py",
        "embedding = float(run.residuals[0, -1].astype(np.float64) @ direction)",
        "embedding = 0.0",
        ("tests/core/test_llama_interventions.py::test_attribution_parts_add_up_to_the_logit",)),
    Bug("a backward term: the trainer's softmax backward without its subtraction (ds = a ⊙ da)",
        "attention/training/model.py",
        "ds = a * (da - (a * da).sum(axis=-1, keepdims=True))", "ds = a * da",
        ("tests/core/test_training_grads.py::test_every_gradient_matches_finite_differences",)),
    Bug("a head statistic: the induction target is the earlier copy itself (t with ids[t] == ids[i]), "
        "not the token after it",
        "attention/heads.py",
        "same = before[..., None, :] == a[..., :, None]", "same = a[..., None, :] == a[..., :, None]",
        ("tests/core/test_heads.py::test_induction_targets_skip_the_query_and_the_previous_token",
         "tests/core/test_heads.py::test_each_statistic_on_a_head_made_for_it")),
    Bug("a head statistic: the previous-token score reads two back (i - 2) instead of i - 1",
        "attention/heads.py",
        "values[..., 1:] = w[..., i[1:], i[1:] - 1]", "values[..., 1:] = w[..., i[1:], i[1:] - 2]",
        ("tests/core/test_heads.py::test_each_statistic_on_a_head_made_for_it",)),
    Bug("a link parser: a declared number (slider / number box) accepts hi + 1 from a link",
        "explorer/shell/controls/declare.py",
        "return link_number(raw, lo, hi, integer=integer, step=self.step_at(ctx))",
        "return link_number(raw, lo, hi + 1, integer=integer, step=self.step_at(ctx))",
        ("tests/shell/test_declare.py::test_a_number_one_step_outside_its_range_or_off_its_grid_opens_at_the_default",
         )),
    Bug("a catalogue placeholder: pt shell.po's translation of 'text of at most {n} characters' says {m}",
        "explorer/locale/pt/LC_MESSAGES/shell.po",
        'msgstr "um texto de no máximo {n} caracteres"', 'msgstr "um texto de no máximo {m} caracteres"',
        ("tests/test_catalogues.py::test_every_translation_keeps_its_markup_agrees_with_cldr_and_is_not_left_in_"
         "english[pt-shell]",)),
    Bug("an on-screen claim: the scaling verdict's comparison flipped (r <= 1.05 says 'smaller')",
        "explorer/lessons/scaling/model.py",
        "if r >= 1.05:", "if r <= 1.05:",
        ("tests/lessons/scaling/test_model.py::test_verdict_says_larger_when_unscaled_passes_more_gradient",)),
    Bug("a chart's array: the attention heat map's z transposed (keys down, queries across)",
        "explorer/shell/charts/heatmaps.py",
        "z_plot = np.where(np.isfinite(shown), shown, None)", "z_plot = np.where(np.isfinite(shown), shown, None).T",
        ("tests/shell/charts/test_heatmaps.py",)),
    Bug("a chart's array: the heat map's key (token) axis labels reversed",
        "explorer/shell/charts/heatmaps.py",
        "cols = [escape_label(s) for s in col_labels]", "cols = [escape_label(s) for s in col_labels][::-1]",
        ("tests/shell/charts/test_heatmaps.py",)),
    Bug("the softmax without its max subtraction (overflows on large logits)",
        "attention/core.py",
        "e = np.exp(x - row_max)", "e = np.exp(x)",
        ("tests/core/test_core.py::test_softmax_finite_for_huge_logits",
         "tests/core/test_core.py::test_softmax_extreme_rows")),
    Bug("RMSNorm's eps outside the square root (x / (√mean(x²) + eps))",
        "attention/llama/blocks.py",
        "return x * (1 / np.sqrt(mean_square + x.dtype.type(eps))) * weight",
        "return x * (1 / (np.sqrt(mean_square) + x.dtype.type(eps))) * weight",
        ("tests/core/test_llama_parts.py::test_rms_norm_formula_and_dtype",)),
)


def head_commit(checkout: Path) -> str:
    """The checkout's commit (short), ``+ uncommitted changes`` when its tree differs, or ``(no git)``."""
    try:
        sha = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(no git)"
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return f"{sha} (its committed tree; the checkout has uncommitted changes, not used)" if dirty else sha


def copy_tree(checkout: Path, dest: Path) -> None:
    """The committed tree of ``checkout`` (``git archive HEAD``) unpacked into ``dest``; ``cp -r`` without git."""
    if (checkout / ".git").exists():
        archive = subprocess.run(["git", "-C", str(checkout), "archive", "HEAD"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        shutil.copytree(checkout, dest, dirs_exist_ok=True)


def run_bug(root: Path, bug: Bug) -> tuple[str, float]:
    """Apply ``bug`` in ``root``, run its tests, restore the file: ``(result, seconds)``."""
    path = root / bug.path
    if not path.is_file():
        return f"NOT APPLIED: {bug.path} is gone", 0.0
    original = path.read_bytes()
    text = original.decode("utf-8")
    count = text.count(bug.old)
    if count != 1:
        return f"NOT APPLIED: the old string occurs {count} times in {bug.path} (moved?)", 0.0
    path.write_text(text.replace(bug.old, bug.new), encoding="utf-8")
    try:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", *bug.tests],
                              cwd=root, env=env, capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - start
    except subprocess.TimeoutExpired:
        return "NOT CAUGHT (timed out after 600 s)", 600.0
    finally:
        path.write_bytes(original)
    if proc.returncode == 1:  # pytest: tests were collected and ran, and some failed
        failed = [line.split(" ", 1)[1].split(" - ", 1)[0] for line in proc.stdout.splitlines()
                  if line.startswith("FAILED ")]
        return "fails as it should" + (f": `{failed[0].split('::', 1)[-1]}`" if failed else ""), seconds
    if proc.returncode == 0:
        return "NOT CAUGHT", seconds
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
    return f"NOT CAUGHT (pytest exit {proc.returncode}: {tail[0][:120]})", seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", type=Path, default=HERE, help="repository checkout (default: this one)")
    parser.add_argument("--only", default="", help="comma-separated bug numbers (1-based) to run")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway copy (its path is printed)")
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    chosen = {int(n) for n in args.only.split(",") if n.strip()} or set(range(1, len(BUGS) + 1))
    tmp = Path(tempfile.mkdtemp(prefix="inject_bugs_"))
    failures = 0
    try:
        copy_tree(checkout, tmp)
        print(f"Injected bugs, run on commit {head_commit(checkout)} ({checkout}), in a copy at {tmp}.\n")
        print("| # | bug (file: what changed) | failing test | result |")
        print("| --- | --- | --- | --- |")
        for number, bug in enumerate(BUGS, 1):
            if number not in chosen:
                continue
            result, seconds = run_bug(tmp, bug)
            failures += not result.startswith("fails as it should")
            tests = "<br>".join(f"`{t}`" for t in bug.tests)
            print(f"| {number} | `{bug.path}`: {bug.what} | {tests} | {result} ({seconds:.0f} s) |", flush=True)
    finally:
        if args.keep:
            print(f"\nkept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{len(chosen) - failures} of {len(chosen)} caught.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
