"""Figures of the two-sentences page: labels that mark shared words, and per-row entropy bars (the heat maps are
:func:`explorer.shell.charts.heatmap`'s)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell.charts import paired_bars
from explorer.shell.i18n import translator
from explorer.shell.plotly_fast import hline
from explorer.shell.settings import token_label, token_labels
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

SHARED_MARK = "★"  # after a label: this word also occurs in the other sentence
COLOR_A, COLOR_B = "#3b78c2", "#e07b39"


def marked_labels(tokens: Sequence[str], shared=None) -> list[str]:
    """:func:`~explorer.shell.settings.token_label` per position, with ``" ★"`` appended where ``shared[i]`` is true.

    Raises:
        ValueError: ``shared`` does not have one flag per token.
    """
    flags = [False] * len(tokens) if shared is None else [bool(s) for s in shared]
    if len(flags) != len(tokens):
        raise ValueError(f"shared must have one flag per token: {len(flags)} flags, {len(tokens)} tokens")
    return [label + (f" {SHARED_MARK}" if s else "") for label, s in zip(token_labels(tokens), flags, strict=True)]


def pair_labels(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> list[str]:
    """``"a / b (i)"`` per position, for a picture that compares the two sentences position by position."""
    if len(tokens_a) != len(tokens_b):
        raise ValueError(f"the sentences must have the same length here, got {len(tokens_a)} and {len(tokens_b)}")
    return [token_label(f"{a} / {b}", i) for i, (a, b) in enumerate(zip(tokens_a, tokens_b, strict=True))]


def entropy_bars(entropy_a, entropy_b, labels: Sequence[str], *, names: tuple[str, str] = ("A", "B"),
                 title: str = "", height: int = 320) -> go.Figure:
    """Per-row entropy (``entropy_a``, ``entropy_b``: ``[n]`` nats, one per label, e.g. :func:`pair_labels`) of two
    attention maps (legend ``names``), side by side per position, with the uniform maximum ``log n`` (words and
    numbers in the run's language). ``ValueError`` when the lengths differ."""
    a, b = (np.asarray(x, dtype=float) for x in (entropy_a, entropy_b))
    n = len(labels)  # paired_bars checks that both series have one value per label
    top = math.log(n) if n > 1 else 1.0
    shapes, notes = [], []
    if n > 1:  # the uniform maximum, as fig.add_hline would draw it (set at construction: 5x cheaper)
        shape, notes = hline(math.log(n), dict(color="grey", dash="dot"), _("uniform: log {n} = {value}").format(
            n=n, value=fmt(math.log(n), 2)))
        shapes = [shape]
    return paired_bars(
        [(name, values, [fmt(v, 3) for v in values], color)
         for name, values, color in ((names[0], a, COLOR_A), (names[1], b, COLOR_B))],
        labels, quantity=_("entropy (nats)"), x_title=_("query (position)"), y_title=_("entropy (nats)"),
        y_max=top * 1.25, title=title, height=height, shapes=shapes, annotations=notes,
    )
