"""Sections of the multi-head page: the split, every head's weights, the rest of the path, the diagnostics, the check.

Every section takes the page's :class:`~explorer.lessons.multihead.model.MultiHead` (a frozen dataclass: it keys the
caches); the per-head sections also take ``window``, the heads ``(first, last + 1)`` shown in the grids. Each draws a
:class:`~explorer.lessons.multihead.model.View` of the cached :func:`scenario`.

A table too big for the page is a CSV download (:func:`explorer.shell.tables.too_big`), a widget, which no section
may draw: the page draws it where :func:`table` would draw the table. So parts 2 to 4 are written once, in
:func:`heads_to_diagnostics`, with the way a table is drawn as an argument: the page runs it with its downloads when
a table is too big, and otherwise calls :func:`heads`, which runs it inside one section (a rerun replays parts 2 to
4 in one cached call instead of eight, each about 0.4 ms).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons import real_model
from explorer.lessons.multihead import charts as mhfig
from explorer.lessons.multihead import model as smh
from explorer.lessons.multihead.model import MultiHead, View, Window, diff_text, numbers_title
from explorer.shell import charts, controls, tables
from explorer.shell.cache import cached, section
from explorer.shell.i18n import translator
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import dim_labels, fmt, head_labels, latex_words

_, _n = translator(__name__)
_shell = translator("explorer.shell")[0]  # the shell's own words shown here (its colour scales' meanings, embeddings)


@cached(max_entries=3)  # 26 MiB an entry at 512 heads and 64 tokens: a few learners' current settings
def scenario(mh: MultiHead) -> smh.MultiHeadScenario:
    """:func:`~explorer.lessons.multihead.model.multihead_scenario` for ``mh``, cached."""
    return smh.multihead_scenario(mh.settings, mh.n_heads, mh.seed, mh.is_causal)


@section
def matrix_table(mh: MultiHead, name: str) -> None:
    """Weight matrix ``name`` (``W_q``, ``W_k``, ``W_v`` or ``W_o``) as a bare table (the page's expander holds it)."""
    dataframe(smh.frame(View(mh, scenario(mh)), name), width="stretch")


@section
def table(mh: MultiHead, name: str, window: Window | None = None) -> None:
    """Table ``name`` (see :func:`~explorer.lessons.multihead.model.table_size`) in its "Numbers" expander
    (:func:`~explorer.lessons.multihead.model.numbers_title`); ``window`` matters for ``head_weights`` only."""
    numbers(smh.frame(View(mh, scenario(mh), window), name), label=numbers_title(name, mh.n_heads))


# --- the page's sections, in page order --------------------------------------------------------------------


@section
def intro(mh: MultiHead) -> None:
    """The settings caption and part 1's weight matrices with their head bands."""
    sc, s = scenario(mh), mh.settings
    d_model, n_heads, d_head = mh.d_model, mh.n_heads, mh.d_head
    line = _n("{n} token · d_model = {d_model} · n_heads = {n_heads} · d_head = {d_head} · embeddings: {embedding}",
              "{n} tokens · d_model = {d_model} · n_heads = {n_heads} · d_head = {d_head} · embeddings: {embedding}",
              s.n).format(n=s.n, d_model=d_model, n_heads=n_heads, d_head=d_head, embedding=_shell(s.embedding))
    line += _shell(" + positional encoding") if s.positional else ""
    line += " · " + _("seed {seed} (X and W_q, W_k, W_v, W_o)").format(seed=sc.seed)
    line += (" · " + _("causal")) if sc.is_causal else ""
    st.caption(line + ". " + _("The sidebar's d_k is not used here: every head's width is d_model / n_heads."))
    st.header(_("1 · How the split works"))
    st.latex(rf"d_\text{{head}} = \frac{{d_\text{{model}}}}{{n_\text{{heads}}}} = \frac{{{d_model}}}{{{n_heads}}} "
             rf"= {d_head}, \qquad Q = X W_q,\ \ Q_i = Q[:,\ {d_head} i : {d_head}(i+1)]")
    if d_head > 1:
        owns = _("`W_q`, `W_k` and `W_v` are ordinary `[d_model, d_model]` = `[{d_model}, {d_model}]` matrices. Head "
                 "*i* simply owns **columns {d_head}·i to {d_head}·i + {last}** of each (the coloured bands). The "
                 "matrices do not change with `n_heads` — only how their columns are grouped does.")
    else:
        owns = _("`W_q`, `W_k` and `W_v` are ordinary `[d_model, d_model]` = `[{d_model}, {d_model}]` matrices. Head "
                 "*i* simply owns **column i** of each (the coloured bands). The matrices do not change with "
                 "`n_heads` — only how their columns are grouped does.")
    st.markdown(owns.format(d_model=d_model, d_head=d_head, last=d_head - 1))
    st.caption(_("Bands above each matrix: the columns each head owns; black lines: head boundaries. "
                 "Rows = input dimension, columns = output dimension.") + mhfig.sample_note(d_model))
    for col, name, W in zip(st.columns(3), ("W_q", "W_k", "W_v"), (sc.W_q, sc.W_k, sc.W_v), strict=True):
        with col:
            charts.show_fig(mhfig.blocked_heatmap(W, n_heads, title=f"{name} [{d_model}, {d_model}]", height=360),
                            key=f"mh_fig_{name}")


@section
def split(d_model: int, n_heads: int, is_causal: bool) -> None:
    """``split_heads`` on readable numbers and the classic reshape mistake, then part 2's header and formula
    (one section: on the page, the head-window select box comes right after them)."""
    ex = smh.split_example(d_model, n_heads)
    st.subheader(_("`split_heads` on readable numbers"))
    st.markdown(
        _("Below, entry `[i, j]` of a `[{n}, {d_model}]` matrix is `100·i + j` — the hundreds give the row (token), "
          "the rest the column — so you can see where every number lands. Colour = the head that owns the "
          "column.").format(n=ex.x.shape[0], d_model=ex.d_model)
        + (" " + _n("(A small stand-in with {n_heads} head of width {d_head}; the page's d_model = {d_model} is too "
                    "wide to print.)",
                    "(A small stand-in with {n_heads} heads of width {d_head}; the page's d_model = {d_model} is too "
                    "wide to print.)", ex.n_heads).format(n_heads=ex.n_heads, d_head=ex.d_head, d_model=d_model)
           if ex.stand_in else "")
    )
    st.code(f"x                                              # [n, d_model]         = {list(ex.x.shape)}\n"
            f"x.reshape(n, n_heads, d_head)                  # [n, n_heads, d_head] = "
            f"{[ex.x.shape[0], ex.n_heads, ex.d_head]}\n"
            f"x.reshape(n, n_heads, d_head).swapaxes(0, 1)   # [n_heads, n, d_head] = {list(ex.heads.shape)}\n"
            "# = attention.split_heads(x, n_heads); attention.merge_heads undoes it", language="python")
    s1, s2 = st.columns([1, 2])
    with s1:
        charts.show_fig(mhfig.split_panels(ex.x[None], ex.owner[None], tokens=(ex.x // 100)[None],
                                           titles=[f"x: [{ex.x.shape[0]}, {ex.d_model}]"]), key="mh_fig_split_x")
    with s2:
        charts.show_fig(mhfig.split_panels(ex.heads, ex.heads_owner, tokens=ex.heads // 100,
                                           titles=head_labels(range(ex.n_heads))),  # short: phones
                        key="mh_fig_split_heads")
    if ex.n_heads > 1:
        with st.expander(_("The classic mistake: reshaping straight to [n_heads, n, d_head]")):
            st.markdown(_("`x.reshape(n_heads, n, d_head)` has the right shape but the wrong content: it cuts the "
                          "flattened matrix into equal pieces, so a 'head' holds columns of **different tokens** and "
                          "other heads' columns (the colours mix). Reshape to `[n, n_heads, d_head]` first, then swap "
                          "the first two axes."))
            charts.show_fig(mhfig.split_panels(ex.wrong, ex.wrong_owner, tokens=ex.wrong // 100,
                                               titles=[_("'head' {h}").format(h=h) for h in range(ex.n_heads)]),
                            key="mh_fig_split_wrong")
    d_head = d_model // n_heads
    st.header(_("2 · Every head's attention weights"))
    st.latex(r"W^{(i)} = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_\text{head}}}"
             + (r" + M_\text{causal}" if is_causal else "") + r"\right),\qquad "
             rf"\sqrt{{d_\text{{head}}}} = \sqrt{{{d_head}}} = {np.sqrt(d_head):.4g}")


@section
def head_grid(mh: MultiHead, window: Window, color_scale: str = "fixed") -> None:
    """The heads in the window side by side, their mean, and the note that the mean is not a head (weights
    coloured on ``color_scale``, :data:`explorer.shell.charts.COLOR_SCALES`)."""
    v, labels, n = View(mh, scenario(mh), window), mh.settings.labels, mh.settings.n
    sc, r, n_heads, shown, grid_cols = v.sc, v.sc.result, mh.n_heads, v.shown, v.grid_cols
    a, b = window
    maps = _n("{k} heat map, each [n_q, n_k] = [{n}, {n}], all on one colour range ({scale}); rows = queries (top to "
              "bottom), columns = keys; each row sums to 1.",
              "{k} heat maps, each [n_q, n_k] = [{n}, {n}], all on one colour range ({scale}); rows = queries (top to "
              "bottom), columns = keys; each row sums to 1.", len(shown)).format(
        k=len(shown), n=n, scale=_shell(charts.COLOR_SCALES[color_scale]))
    entropy = (_("Title: the head's mean row entropy H (0 = every query looks at one key, {log_n} = log n = spread "
                 "evenly).") if grid_cols == 1 else
               _("Section 4: each head's mean row entropy H (0 = every query looks at one key, {log_n} = log n = "
                 "spread evenly).")).format(log_n=fmt(float(np.log(n)), 2))
    st.caption(maps + " " + entropy)
    grid = mhfig.head_weights_grid(r.weights[a:b], labels, shown, n_cols=grid_cols, entropy=sc.head_entropy[a:b],
                                   mask=sc.mask, show_text=n * grid_cols <= 12,  # cell text while a panel is wide
                                   color_scale=color_scale)
    g1, g2 = st.columns([grid_cols, max(1.15, grid_cols / 1.5)])  # the mean map wide enough for its labels
    with g1:
        charts.show_fig(grid, key="mh_fig_heads")
    with g2:
        single_row = len(shown) <= grid_cols
        charts.show_fig(charts.heatmap(r.mean_weights, labels, labels, mask=sc.mask, max_xticks=8,
                                       show_text=n <= 6 and grid_cols <= 2,
                                       title=_("MEAN of {n} heads").format(n=n_heads) if n_heads > 1 else
                                       _("MEAN = head 0"),
                                       colorbar_title=_("mean"), height=grid.layout.height if single_row else None,
                                       color_scale=color_scale),
                        key="mh_fig_mean")
        st.caption(_("⬆ the **average** of all heads, cell by cell — not a head of its own.") if n_heads > 1 else
                   _("⬆ the average over heads: with one head, head 0 itself."))
    if n_heads > 1:
        st.info(_("**The map titled MEAN is an average, not a head.** Each cell is the mean of the {n} heads' "
                  "weights there, which is what `torch.nn.MultiheadAttention` returns by default "
                  "(`average_attn_weights=True`). No head computes it, and the output is *not* this matrix times "
                  "V.").format(n=n_heads), icon="➗")
    else:
        st.info(_("**With one head, the map titled MEAN is that head.** `torch.nn.MultiheadAttention` returns the "
                  "mean of the heads' weights by default (`average_attn_weights=True`); the mean of one head is the "
                  "head itself, and the output is this matrix times V, then `W_o`. Choose more heads to see them "
                  "differ."), icon="➗")


@section
def path(mh: MultiHead, window: Window) -> None:
    """Part 3's header and formulas, and every shown head's output."""
    v = View(mh, scenario(mh), window)
    st.header(_("3 · The rest of the path"))
    st.markdown(_("Each head blends its own slice of the values; the slices are glued back side by side and "
                  "`W_o` mixes them into the final output."))
    st.latex(r"\mathrm{head}_i = W^{(i)} V_i \in \mathbb{R}^{n \times d_\text{head}},\qquad "
             r"C = [\mathrm{head}_0 \,|\, \cdots \,|\, \mathrm{head}_{h-1}] \in \mathbb{R}^{n \times d_\text{model}}")
    st.latex(latex_words(_("output")) + r" = C\, W_o = \sum_i \mathrm{head}_i\, W_o["
             + latex_words(_("rows of head {i}"), i=" i") + r",\ :]")
    st.subheader(_("Per-head outputs"))
    n, d_head = mh.settings.n, mh.d_head
    heads_line = _n("{k} head, each [n, d_head] = [{n}, {d_head}], one diverging colour range centred on 0",
                    "{k} heads, each [n, d_head] = [{n}, {d_head}], one diverging colour range centred on 0",
                    len(v.shown)).format(k=len(v.shown), n=n, d_head=d_head)
    if d_head > 16:
        heads_line += "; " + _("each head's {d_head} columns are drawn on a sample of {k}").format(
            d_head=d_head, k=len(mhfig.sample_indices(d_head, 16)))
    st.caption(heads_line + ".")
    charts.show_fig(mhfig.head_output_panels(v.sc.result.head_outputs[window[0]:window[1]], mh.settings.labels, v.shown,
                                             d_head=d_head), key="mh_fig_head_outputs")


def _concat(v: View) -> None:
    st.subheader(_("Concatenation C"))
    st.caption(_("[n, d_model] = [{n}, {d_model}]: head i's output fills the columns head i owns.").format(
        n=v.mh.settings.n, d_model=v.mh.d_model) + mhfig.sample_note(v.mh.d_model))
    charts.show_fig(mhfig.blocked_heatmap(v.sc.result.concat, v.mh.n_heads, row_labels=v.mh.settings.labels,
                                          row_name=_("token"), col_name=_("dim"), title=_("C = concat(heads)")),
                    key="mh_fig_concat")


def _w_o(v: View) -> None:
    st.subheader(_("Output projection W_o"))
    st.caption(_("[d_model, d_model] = [{d_model}, {d_model}]: the rows of head i (band on the right) multiply "
                 "head i's output.").format(d_model=v.mh.d_model) + mhfig.sample_note(v.mh.d_model))
    charts.show_fig(mhfig.blocked_heatmap(v.sc.W_o, v.mh.n_heads, block_axis="rows", title="W_o"), key="mh_fig_W_o")


@section
def columns(mh: MultiHead) -> None:
    """The concatenation C with its numbers on the left, the output projection W_o on the right."""
    v = View(mh, scenario(mh))
    p1, p2 = st.columns(2)
    with p1:
        _concat(v)
        numbers(smh.frame(v, "concat"), label=numbers_title("concat", mh.n_heads))
    with p2:
        _w_o(v)


@section
def concat(mh: MultiHead) -> None:
    """The concatenation C alone: the left column when the page offers its numbers as a download."""
    _concat(View(mh, scenario(mh)))


@section
def w_o(mh: MultiHead) -> None:
    """The output projection W_o alone: the right column beside :func:`concat`."""
    _w_o(View(mh, scenario(mh)))


@section
def output(mh: MultiHead) -> None:
    """The final output C W_o."""
    st.subheader(_("Final output"))
    st.caption(_("output = C W_o, [n, d_model] = [{n}, {d_model}]: every output dimension mixes every head.").format(
        n=mh.settings.n, d_model=mh.d_model) + mhfig.sample_note(mh.d_model))
    out_cols = mhfig.sample_indices(mh.d_model)
    charts.show_fig(charts.heatmap(scenario(mh).result.output[:, out_cols], mh.settings.labels,
                                   dim_labels(out_cols), kind="diverging", row_name=_("token"), col_name=_("dim"),
                                   title=_("output = C W_o"), show_text=False), key="mh_fig_output")


@section
def diagnostics(mh: MultiHead) -> None:
    """Part 4: entropy per head, head-to-head overlap, and the title of the one-query table."""
    sc, n, n_heads = scenario(mh), mh.settings.n, mh.n_heads
    st.header(_("4 · What each head does"))
    d1, d2 = st.columns(2)
    with d1:
        st.subheader(_("Entropy per head"))
        st.latex(r"H^{(i)} = \frac{1}{n}\sum_q \Big(-\sum_k W^{(i)}_{qk} \ln W^{(i)}_{qk}\Big)")
        st.caption(_("Low = the head's queries focus on few keys; the dashed line is attention spread evenly."))
        charts.show_fig(mhfig.entropy_bars(sc.head_entropy, n, is_causal=sc.is_causal), key="mh_fig_entropy")
    with d2:
        st.subheader(_("How alike are the heads?"))
        st.latex(latex_words(_("overlap")) + r"(a, b) = "
                 r"\frac{1}{n}\sum_q \sum_k \min\big(W^{(a)}_{qk},\, W^{(b)}_{qk}\big)")
        st.caption(_("The attention mass two heads put on the same keys, averaged over queries: 1 = identical "
                     "patterns, 0 = no key in common."))
        if sc.overlap is not None:
            heads_all = head_labels(range(n_heads))
            charts.show_fig(charts.heatmap(sc.overlap, heads_all, heads_all, row_name=_("head"), col_name=_("head"),
                                           title=_("head-to-head overlap"), colorbar_title=_("overlap"),
                                           show_text=n_heads <= 8), key="mh_fig_similarity")
        else:
            st.info(_("With {n_heads} heads (d_head = {d_head}) the head-to-head matrix is not computed: it would "
                      "be {n_heads} × {n_heads} and cost ~n_heads²·n² operations. Choose at most {most} heads to "
                      "see it.").format(n_heads=n_heads, d_head=mh.d_head, most=smh.OVERLAP_MAX_HEADS))
    st.info(smh.random_weights_note(sc.head_entropy, sc.overlap, n, is_causal=sc.is_causal,
                                    link=controls.link(real_model)), icon="🎲")
    st.subheader(_("One query, every head"))


def heads_to_diagnostics(mh: MultiHead, window: Window, numbers: Callable[[str], None],
                         color_scale: str = "fixed") -> None:
    """Parts 2 to 4 from the head grid on, in page order; ``numbers(name)`` draws the numbers of table
    ``name`` (one of :data:`~explorer.lessons.multihead.model.TABLES`): :func:`table`, or the page's CSV
    download for a table too big for it.

    Inside :func:`heads` the sections here are called from another section, and on a replay
    Streamlit puts what such a nested section drew where the outer one was called, not in a
    container the outer one made: so none is called inside a container made here, except when
    the concatenation's numbers are a download (never inside :func:`heads`).
    """
    head_grid(mh, window, color_scale)
    numbers("head_weights")
    numbers("mean_weights")
    path(mh, window)
    if tables.too_big(*smh.table_size(mh, "concat")):  # the download is a widget: the columns are made here, around it
        p1, p2 = st.columns(2)
        with p1:
            concat(mh)
            numbers("concat")
        with p2:
            w_o(mh)
    else:
        columns(mh)
    output(mh)
    numbers("output")
    diagnostics(mh)


@section
def heads(mh: MultiHead, window: Window, color_scale: str = "fixed") -> None:
    """:func:`heads_to_diagnostics` with every table on the page, in one cached call (the page's usual case)."""
    heads_to_diagnostics(mh, window, lambda name: table(mh, name, window if name == "head_weights" else None),
                         color_scale)


# --- one query, and the check ------------------------------------------------------------------------------


@section
def query_and_check(mh: MultiHead, qi: int, color_scale: str = "fixed") -> None:
    """Query ``qi`` in every head (table and map), then part 5: the vectorised layer against a plain loop."""
    sc, labels, n, n_heads = scenario(mh), mh.settings.labels, mh.settings.n, mh.n_heads
    r = sc.result
    top, top_w = sc.top_keys(qi)  # [n_heads] each
    q1, q2 = st.columns([1, 1])
    with q1:
        dataframe(pd.DataFrame({
            _("head"): head_labels(range(n_heads)),
            _("attends most to"): [labels[k] for k in top],
            _("weight"): top_w,
            _("entropy of this row (nats)"): sc.row_entropy[:, qi],
        }), hide_index=True, width="stretch", height=min(400, 38 + 35 * n_heads))
    with q2:
        charts.show_fig(charts.heatmap(r.weights[:, qi, :], head_labels(range(n_heads)), labels,
                                       row_name=_("head"), col_name=_("key"),
                                       mask=None if sc.mask is None else sc.mask[qi],
                                       show_text=n <= 12 and n_heads <= 16,
                                       title=_("weights of query {token} in each head").format(token=labels[qi]),
                                       color_scale=color_scale),
                        key="mh_fig_query_heads")

    st.header(_("5 · Check: vectorised vs a plain loop"))
    st.markdown(_("The page's numbers come from `MultiHeadAttention.steps`: all heads at once with "
                  "`split_heads`, one batched matrix product and `merge_heads`. Right here, the same layer is also "
                  "computed **one head at a time** with a plain loop (below) — they must agree."))
    v1, v2, v3 = st.columns(3)
    v1.metric(_("max |vectorised − loop|, output"), diff_text(sc.max_diff_output))
    v2.metric(_("max |vectorised − loop|, per-head weights"), diff_text(sc.max_diff_weights))
    verdict, kind, text, icon = smh.loop_check(sc.max_diff_output, sc.max_diff_weights)
    v3.metric(_("verdict"), verdict)
    getattr(st, kind)(text, icon=icon)
    with st.expander(_("The loop, as run")):
        st.code(smh.LOOP_SOURCE, language="python")
    st.caption(_("The test suite also checks this code against PyTorch: `MultiHeadAttention.from_torch` loads the "
                 "parameters of a `torch.nn.MultiheadAttention`, and the per-head weights "
                 "(`average_attn_weights=False`), the averaged weights and the output are compared with PyTorch's "
                 "recorded numbers (`tests/data/torch_reference.npz`, `tests/lessons/multihead/test_model.py`)."))
