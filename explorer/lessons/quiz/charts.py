"""Figures of the check-yourself page: the clue before a prediction and the picture after it (arrays in,
``go.Figure`` out; tokens escaped by the base builders; words and decimal marks in the run's language)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.shell import i18n
from explorer.shell.charts import heatmap
from explorer.shell.i18n import translator
from explorer.shell.textviews import dim_labels, fmt

_, _n = translator(__name__)

GROWTH_COLORS = ("#9ab8de", "#c2413b", "#3b78c2")


def query_and_keys(q, K, query_label: str, key_labels: Sequence[str]) -> go.Figure:
    """The clue for "which key will this query attend to most?": a diverging heat map ``[1 + n_k, d_k]``, the query
    ``q [d_k]`` in row 0 above the keys ``K [n_k, d_k]`` (labels ``"tok (i)"``, escaped by :func:`heatmap`); the
    score of key j is the dot product of row 0 with row 1 + j.

    Raises:
        ValueError: ``q`` is not ``[d_k]`` or ``K`` not ``[n_k, d_k]`` with one label per key.
    """
    q, K = (np.asarray(a, dtype=float) for a in (q, K))
    if q.ndim != 1 or K.ndim != 2 or K.shape[1] != q.shape[0] or K.shape[0] != len(key_labels):
        raise ValueError(f"need q [d_k] and K [n_k, d_k] with one label per key, got {q.shape}, {K.shape}, "
                         f"{len(key_labels)} labels")
    z = np.vstack([q[None, :], K])  # [1, d_k] + [n_k, d_k] -> [1 + n_k, d_k]
    rows = [_("query {token}").format(token=query_label)] + [_("key {token}").format(token=lab) for lab in key_labels]
    return heatmap(z, rows, dim_labels(q.shape[0]), kind="diverging", row_name=_("vector"), col_name=_("dim"),
                   title=_("the query and every key (score = q · k)"), colorbar_title=_("value"),
                   height=int(min(620, max(240, 30 * len(rows) + 110))))


def growth_bars(small_unscaled, large_unscaled, large_scaled, d_k: tuple[int, int]) -> go.Figure:
    """One sampled query's weights, largest first, at two widths: grouped bars.

    Args:
        small_unscaled: weights ``[n_k]`` at ``d_k[0]`` without the division by √d_k.
        large_unscaled: weights ``[n_k]`` at ``d_k[1]`` without the division.
        large_scaled: weights ``[n_k]`` at ``d_k[1]`` with the division.
        d_k: ``(small, large)``.

    Raises:
        ValueError: the three rows are not 1-D of one length.
    """
    rows = [np.asarray(r, dtype=float) for r in (small_unscaled, large_unscaled, large_scaled)]
    if any(r.ndim != 1 for r in rows) or len({r.shape[0] for r in rows}) != 1:
        raise ValueError(f"need three [n_k] rows of one length, got {[r.shape for r in rows]}")
    names = (_("d_k = {d_k}, not scaled").format(d_k=d_k[0]), _("d_k = {d_k}, not scaled").format(d_k=d_k[1]),
             _("d_k = {d_k}, scaled by 1/√d_k").format(d_k=d_k[1]))
    hover = _("rank {rank}: {weight}").format(rank="%{x}", weight="%{customdata}")
    n = rows[0].shape[0]
    fig = go.Figure()
    for name, w, color in zip(names, rows, GROWTH_COLORS, strict=True):
        fig.add_trace(go.Bar(
            x=list(range(1, n + 1)), y=w, name=name, marker_color=color,
            customdata=[fmt(v, 4) for v in w], hovertemplate=f"{name}<br>{hover}<extra></extra>",
        ))
    fig.update_xaxes(title_text=_("keys ranked by weight (1 = largest)"), tickmode="array",
                     tickvals=list(range(1, n + 1)) if n <= 32 else None)
    fig.update_yaxes(range=[0, 1], title_text=_("weight"))
    fig.update_layout(barmode="group", height=320, title=dict(text=_("one sampled query's weights")),
                      separators=i18n.plotly_separators(),
                      legend=dict(orientation="h", y=-0.3), margin=dict(l=10, r=10, t=40, b=10))
    return fig
