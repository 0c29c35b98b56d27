"""The training tasks: sequences that end with a random run of tokens written twice.

``"repeat"``: each sequence of ``n`` tokens is ``filler, r, r``: a run ``r`` of ``p`` distinct random
tokens written twice at the end, after ``n - 2p`` filler tokens drawn from the rest of the vocabulary
(so each token of the second copy occurred exactly once before). The period ``p`` is drawn per
sequence from ``P_MIN .. n // 2``, so where the earlier copy starts changes from sequence to
sequence: no position can solve it, only a token-matching rule can ("the token after the earlier
occurrence of the current token": an induction head; Olsson et al. 2022, section "Definitions").

``"repeat_fixed"``: the same with ``p = n // 2`` every time (no filler): the earlier occurrence of
the token at position ``i`` is always at ``i - p``, so attending to a fixed offset solves it (the
shortcut, a head that looks like an induction head without reading the tokens).

Positions whose next token can be predicted: the queries ``i = n-p .. n-2`` (the second copy but
its last token); the token after ``i``'s earlier occurrence sits at ``i - p + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TASKS = ("repeat", "repeat_fixed")
P_MIN = 2
"""The shortest run of the random-period task (with ``n // 2 < P_MIN``, every run is ``n // 2`` long)."""


@dataclass(frozen=True)
class Batch:
    """A batch of the task.

    Attributes:
        tokens: ``[B, n]`` int64 ids.
        period: ``[B]`` the run length ``p`` of each sequence.
        predictable: ``[B, n-1]`` bool, query positions whose next token the earlier copy gives.
        source: ``[B, n-1]`` int64, for a predictable query ``i`` the key ``i - p + 1`` (the token after
            ``i``'s earlier occurrence: where an induction head looks); -1 elsewhere.
    """

    tokens: np.ndarray
    period: np.ndarray
    predictable: np.ndarray
    source: np.ndarray


def check_task(task: str, vocab: int, n: int) -> None:
    """Raise ``ValueError`` unless ``task`` is one of :data:`TASKS` and fits ``vocab`` and ``n``.

    A run of ``n // 2`` distinct tokens and at least one filler token need ``vocab > n // 2``;
    the run needs ``n >= 4`` (two tokens written twice).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if n < 4:
        raise ValueError(f"n must be at least 4 for the {task!r} task (a run of 2 tokens written twice), got {n}")
    if vocab <= n // 2:
        raise ValueError(f"vocab must be larger than n // 2 = {n // 2} (a run of distinct tokens), got {vocab}")


def make_batch(task: str, batch: int, n: int, vocab: int, rng: np.random.Generator) -> Batch:
    """``batch`` sequences of ``n`` tokens of ``task`` (see the module docstring), drawn from ``rng``.

    Raises:
        ValueError: an unknown task, ``batch < 1``, or a ``vocab`` / ``n`` the task cannot use (:func:`check_task`).
    """
    check_task(task, vocab, n)
    if isinstance(batch, bool) or not isinstance(batch, int | np.integer) or batch < 1:
        raise ValueError(f"batch must be a whole number >= 1, got {batch!r}")
    half = n // 2
    # the run length of each sequence: [B]
    period = rng.integers(min(P_MIN, half), half + 1, size=batch) if task == "repeat" else np.full(batch, half)
    perm = np.argsort(rng.random((batch, vocab)), axis=1)  # [B, vocab] a random order of the vocabulary
    # the run: perm[:, :p]; the filler: uniform over the rest perm[:, p:]
    filler_pick = period[:, None] + (rng.random((batch, n)) * (vocab - period[:, None])).astype(np.int64)  # [B, n]
    filler = np.take_along_axis(perm, filler_pick, axis=1)  # [B, n]
    pos = np.arange(n)[None, :]  # [1, n]
    start = n - 2 * period[:, None]  # [B, 1] where the first copy starts
    offset = (pos - start) % period[:, None]  # [B, n] place in the run
    run_tok = np.take_along_axis(perm, offset, axis=1)  # [B, n]
    tokens = np.where(pos >= start, run_tok, filler).astype(np.int64)  # [B, n]
    q = np.arange(n - 1)[None, :]  # [1, n-1] query positions
    predictable = q >= (n - period[:, None])  # [B, n-1]
    source = np.where(predictable, q - period[:, None] + 1, -1).astype(np.int64)  # [B, n-1]
    return Batch(tokens, period.astype(np.int64), predictable, source)
