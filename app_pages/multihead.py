"""Page: multi-head attention — split Q, K, V into heads, attend in each, concatenate, project with W_o."""

import inspect

import numpy as np
import pandas as pd
import streamlit as st

import attention as A
from app import figures, state
from app import scenarios_multihead as smh
from app.figures import multihead as mhfig
from app.textviews import fmt

compute = st.cache_data(max_entries=16, show_spinner=False)(smh.multihead_scenario)

SEED_MAX = state.SEED_MAX
GRID_MAX = 16  # heads drawn at once in the per-head grids
NOTICE = "mh_heads_notice"

st.title("Multi-head attention")
st.markdown(
    "One attention is one way of comparing tokens. **Multi-head attention** runs several in parallel: "
    "it splits the queries, keys and values into `n_heads` narrower parts, attends in each part on its own, "
    "glues the results back together and mixes them with one more matrix, `W_o` (the lesson's second exercise)."
)
st.latex(r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_0, \dots, \mathrm{head}_{h-1})\, W_o,"
         r"\qquad \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_\text{head}}}\right) V_i")

sh = state.shared()
inp = state.sentence_input("to see the heads at work")
labels, n, d_model = inp.labels, len(inp.tokens), sh.d_model

# --- the head count: only divisors of d_model; a bad link value or a changed d_model -> nearest valid ---
valid = A.valid_head_counts(d_model)
valid_text = ", ".join(map(str, valid))
default_heads = smh.default_head_count(d_model)
# The raw link value, read before the bound widget silently drops an invalid one: from the session's
# first-run snapshot (app.state; state.check_link below consumes it and warns), or straight from the URL on
# this page's first run when there is no snapshot (the page ran without the entrypoint).
snapshot = st.session_state.get("_link_params")
from_url = snapshot is None and "mh_link_read" not in st.session_state
if snapshot is not None:
    raw_link = snapshot.get("n_heads")
else:
    raw_link = (st.query_params.get_all("n_heads") or None) if from_url else None
st.session_state["mh_link_read"] = True
current = st.session_state.get("n_heads")
if raw_link:
    given = raw_link[-1]
    asked = smh.parse_head_count(given)
    target = default_heads if asked is None else smh.nearest_head_count(d_model, asked)
    if asked is None or asked not in valid or given.strip() != str(asked):  # "4.0" -> 4 too
        st.session_state["n_heads"] = target
        if from_url:  # no snapshot, so check_link cannot see the link: say it here
            shown = given if len(given) <= 20 else given[:20] + "…"
            st.session_state[NOTICE] = (f"The link's `n_heads={shown}` is not a head count for d_model = {d_model}: "
                                        f"n_heads must divide d_model, one of {valid_text}. Showing the nearest, "
                                        f"n_heads = {target}.", target, d_model)
elif current is not None and current not in valid:
    nearest = smh.nearest_head_count(d_model, int(current))
    st.session_state["n_heads"] = nearest
    st.session_state[NOTICE] = (f"n_heads = {current} does not divide the new d_model = {d_model} (every head needs "
                                f"the same whole width d_model / n_heads). The valid counts are {valid_text}; "
                                f"showing the nearest, n_heads = {nearest}.", nearest, d_model)

c1, c2, c3 = st.columns([2, 1, 1])
with c1:
    n_heads = st.selectbox(
        f"Number of heads n_heads (divisors of d_model = {d_model})", valid, index=valid.index(default_heads),
        key="n_heads", bind="query-params",
        help="Each head gets d_head = d_model / n_heads columns of Q, K and V, so n_heads must divide d_model. "
             "Change d_model in the sidebar for other choices.",
    )
    state.check_link("n_heads", n_heads, f"a divisor of d_model = {d_model}, one of {valid_text}; "
                                         "the nearest valid count is shown")
with c2:
    mh_seed = st.number_input(
        "Weight seed", 0, SEED_MAX, smh.DEFAULT_SEED, step=1, key="mh_seed", bind="query-params",
        help="Seeds W_q, W_k, W_v, W_o of MultiHeadAttention(d_model, n_heads, seed). The embeddings X use the "
             "sidebar's seed. The default, 3, gives heads with visibly different patterns at d_model = 8; "
             "many seeds give flatter ones at this small size.",
    )
    state.check_link("mh_seed", mh_seed, f"a whole number from 0 to {SEED_MAX}")
with c3:
    mh_causal = st.toggle("Causal mask (every head)", False, key="mh_causal", bind="query-params",
                          help="Query i may only look at keys j ≤ i, in every head.")
    state.check_link("mh_causal", mh_causal, "true or false")
n_heads, mh_seed = int(n_heads), int(mh_seed)
notice = st.session_state.get(NOTICE)
if notice and notice[1] == n_heads and notice[2] == d_model:
    st.warning(notice[0], icon="🧩")
else:
    st.session_state.pop(NOTICE, None)

sc = compute(inp.tokens, d_model, sh.seed, sh.embedding, sh.pe, n_heads, mh_seed, bool(mh_causal))
r, d_head = sc.result, sc.d_head
st.caption(f"{n} tokens · d_model = {d_model} · n_heads = {n_heads} · d_head = {d_head} · weight seed = {mh_seed} · "
           f"embeddings: {sh.embedding}{' + positional encoding' if sh.pe else ''} (seed {sh.seed})"
           f"{' · causal' if mh_causal else ''}. The sidebar's d_k is not used here: every head's width is "
           "d_model / n_heads.")

big = d_model > mhfig.MAX_AXIS
step = int(mhfig.sample_indices(d_model)[1]) if big else 1
sample_note = (f" d_model = {d_model} is large, so one row and column in every {step} is drawn (ticks give the "
               "true indices); the numbers expander has them all." if big else "")


TABLE_MAX = 20_000  # cells shown as a table; a bigger matrix is offered as a CSV download (built on click)


def show_frame(frame: pd.DataFrame, name: str) -> None:
    """A table a learner can copy, or, when it is big, a CSV download generated only when clicked."""
    if frame.size <= TABLE_MAX:
        st.dataframe(frame, width="stretch")
    else:
        st.caption(f"{frame.shape[0]} × {frame.shape[1]} numbers: too many for a table on the page.")
        st.download_button(f"Download {name} (CSV)", frame.to_csv, f"{name}.csv", "text/csv",
                           key=f"mh_dl_{name}")


def numbers(matrix: np.ndarray, rows, cols, title: str = "Numbers", name: str = "numbers") -> None:
    """The exact numbers behind a picture, in a table a learner can copy."""
    with st.expander(title):
        show_frame(pd.DataFrame(matrix, index=rows, columns=cols), name)


dims = [f"dim {j}" for j in range(d_model)]

# ----------------------------------------------------------------------------------------------
st.header("1 · How the split works")
st.latex(rf"d_\text{{head}} = \frac{{d_\text{{model}}}}{{n_\text{{heads}}}} = \frac{{{d_model}}}{{{n_heads}}} "
         rf"= {d_head}, \qquad Q = X W_q,\ \ Q_i = Q[:,\ {d_head} i : {d_head}(i+1)]")
st.markdown(
    f"`W_q`, `W_k` and `W_v` are ordinary `[d_model, d_model]` = `[{d_model}, {d_model}]` matrices. Head *i* "
    f"simply owns **columns {d_head}·i to {d_head}·i + {d_head - 1}** of each (the coloured bands). The matrices do "
    "not change with `n_heads` — only how their columns are grouped does."
)
st.caption("Bands above each matrix: the columns each head owns; black lines: head boundaries. "
           "Rows = input dimension, columns = output dimension." + sample_note)
wcols = st.columns(3)
for col, name, W in zip(wcols, ("W_q", "W_k", "W_v"), (sc.W_q, sc.W_k, sc.W_v), strict=True):
    with col:
        st.plotly_chart(mhfig.blocked_heatmap(W, n_heads, title=f"{name} [{d_model}, {d_model}]", height=360),
                        key=f"mh_fig_{name}")
with st.expander("Numbers of W_q, W_k, W_v"):
    which = st.radio("Matrix", ["W_q", "W_k", "W_v", "W_o"], horizontal=True, key="mh_numbers_matrix")
    show_frame(pd.DataFrame(getattr(sc, which), index=dims,
                            columns=[f"col {j} (head {j // d_head})" for j in range(d_model)]), which)

st.subheader("`split_heads` on readable numbers")
ex = smh.split_example(d_model, n_heads)
st.markdown(
    f"Below, entry `[i, j]` of a `[{ex.x.shape[0]}, {ex.d_model}]` matrix is `100·i + j` — the hundreds give the "
    f"row (token), the rest the column — so you can see where every number lands. Colour = the head that owns "
    f"the column."
    + (f" (A small stand-in with {ex.n_heads} heads of width {ex.d_head}; the page's d_model = {d_model} is too "
       "wide to print.)" if ex.stand_in else "")
)
st.code(f"x                                              # [n, d_model]         = {list(ex.x.shape)}\n"
        f"x.reshape(n, n_heads, d_head)                  # [n, n_heads, d_head] = "
        f"{[ex.x.shape[0], ex.n_heads, ex.d_head]}\n"
        f"x.reshape(n, n_heads, d_head).swapaxes(0, 1)   # [n_heads, n, d_head] = {list(ex.heads.shape)}\n"
        "# = attention.split_heads(x, n_heads); attention.merge_heads undoes it", language="python")
s1, s2 = st.columns([1, 2])
with s1:
    st.plotly_chart(mhfig.split_panels(ex.x[None], ex.owner[None], tokens=(ex.x // 100)[None],
                                       titles=[f"x: [{ex.x.shape[0]}, {ex.d_model}]"]), key="mh_fig_split_x")
with s2:
    st.plotly_chart(mhfig.split_panels(ex.heads, ex.heads_owner, tokens=ex.heads // 100,
                                       titles=[f"head {h}: [{ex.x.shape[0]}, {ex.d_head}]" for h in range(ex.n_heads)]),
                    key="mh_fig_split_heads")
if ex.n_heads > 1:
    with st.expander("The classic mistake: reshaping straight to [n_heads, n, d_head]"):
        st.markdown("`x.reshape(n_heads, n, d_head)` has the right shape but the wrong content: it cuts the "
                    "flattened matrix into equal pieces, so a 'head' holds columns of **different tokens** and "
                    "other heads' columns (the colours mix). Reshape to `[n, n_heads, d_head]` first, then swap "
                    "the first two axes.")
        st.plotly_chart(mhfig.split_panels(ex.wrong, ex.wrong_owner, tokens=ex.wrong // 100,
                                           titles=[f"'head' {h} (wrong)" for h in range(ex.n_heads)]),
                        key="mh_fig_split_wrong")

# ----------------------------------------------------------------------------------------------
st.header("2 · Every head's attention weights")
st.latex(r"W^{(i)} = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_\text{head}}}"
         + (r" + M_\text{causal}" if mh_causal else "") + r"\right),\qquad "
         rf"\sqrt{{d_\text{{head}}}} = \sqrt{{{d_head}}} = {np.sqrt(d_head):.4g}")
if n_heads > GRID_MAX:
    windows = [(a, min(a + GRID_MAX, n_heads)) for a in range(0, n_heads, GRID_MAX)]
    window = st.selectbox("Heads shown in the grids", windows, format_func=lambda w: f"heads {w[0]}–{w[1] - 1}",
                          key="mh_head_window")
    st.caption(f"{n_heads} heads: the grids show {GRID_MAX} at a time; the diagnostics below cover all of them.")
else:
    window = (0, n_heads)
shown = list(range(*window))
st.caption(f"{len(shown)} heat map{'s' if len(shown) != 1 else ''}, each [n_q, n_k] = [{n}, {n}], "
           "all on the same colour range [0, 1]; rows = queries (top to bottom), columns = keys; "
           "each row sums to 1. Title: the head's mean row entropy H (0 = every query looks at one key, "
           f"{fmt(float(np.log(n)), 2)} = log n = spread evenly).")
grid_cols = {1: 1, 2: 2, 3: 3, 4: 2}.get(len(shown), 4)
grid = mhfig.head_weights_grid(r.weights[window[0]:window[1]], labels, shown, n_cols=grid_cols,
                               entropy=sc.head_entropy[window[0]:window[1]], mask=sc.mask,
                               show_text=n * grid_cols <= 12)  # cell text while a panel is wide enough
g1, g2 = st.columns([grid_cols, 1.15])
with g1:
    st.plotly_chart(grid, key="mh_fig_heads")
with g2:
    single_row = len(shown) <= grid_cols
    st.plotly_chart(mhfig.token_map(r.mean_weights, labels, labels, mask=sc.mask, max_xticks=8,
                                    show_text=n <= 6 and grid_cols <= 2,
                                    title=f"MEAN of {n_heads} head{'s' if n_heads != 1 else ''}", colorbar_title="mean",
                                    height=grid.layout.height if single_row else None),
                    key="mh_fig_mean")
    st.caption("⬆ the **average** of all heads, cell by cell — not a head of its own.")
st.info(f"**The right-hand map is an average, not a head.** Each cell is the mean of the {n_heads} heads' weights "
        "there, which is what `torch.nn.MultiheadAttention` returns by default (`average_attn_weights=True`). "
        "No head computes it, and the output is *not* this matrix times V."
        + (" With one head it is that head." if n_heads == 1 else ""), icon="➗")
with st.expander("Numbers of every head's weights" + (" (the heads shown)" if n_heads > GRID_MAX else "")):
    frame = pd.DataFrame(r.weights[window[0]:window[1]].reshape(-1, n),
                         index=pd.MultiIndex.from_product([[f"head {h}" for h in shown], labels],
                                                          names=["head", "query"]), columns=labels)
    show_frame(frame, "head_weights")
numbers(r.mean_weights, labels, labels, "Numbers of the mean over heads", "mean_weights")

# ----------------------------------------------------------------------------------------------
st.header("3 · The rest of the path")
st.markdown("Each head blends its own slice of the values; the slices are glued back side by side and "
            "`W_o` mixes them into the final output.")
st.latex(r"\mathrm{head}_i = W^{(i)} V_i \in \mathbb{R}^{n \times d_\text{head}},\qquad "
         r"C = [\mathrm{head}_0 \,|\, \cdots \,|\, \mathrm{head}_{h-1}] \in \mathbb{R}^{n \times d_\text{model}}")
st.latex(r"\text{output} = C\, W_o = \sum_i \mathrm{head}_i\, W_o[\text{rows of head } i,\ :]")
st.subheader("Per-head outputs")
st.caption(f"{len(shown)} × [n, d_head] = [{n}, {d_head}], one diverging colour range centred on 0"
           + (f"; each head's {d_head} columns are drawn on a sample of {len(mhfig.sample_indices(d_head, 16))}"
              if d_head > 16 else "") + ".")
st.plotly_chart(mhfig.head_output_panels(r.head_outputs[window[0]:window[1]], labels, shown, d_head=d_head),
                key="mh_fig_head_outputs")
p1, p2 = st.columns(2)
with p1:
    st.subheader("Concatenation C")
    st.caption(f"[n, d_model] = [{n}, {d_model}]: head i's output fills the columns head i owns." + sample_note)
    st.plotly_chart(mhfig.blocked_heatmap(r.concat, n_heads, row_labels=labels, row_name="token",
                                          col_name="dim", title="C = concat(heads)"), key="mh_fig_concat")
    numbers(r.concat, labels, dims, name="concat")
with p2:
    st.subheader("Output projection W_o")
    st.caption(f"[d_model, d_model] = [{d_model}, {d_model}]: the rows of head i (band on the right) multiply "
               "head i's output." + sample_note)
    st.plotly_chart(mhfig.blocked_heatmap(sc.W_o, n_heads, block_axis="rows", title="W_o"), key="mh_fig_W_o")
st.subheader("Final output")
st.caption(f"output = C W_o, [n, d_model] = [{n}, {d_model}]: every output dimension mixes every head." + sample_note)
out_cols = mhfig.sample_indices(d_model)
st.plotly_chart(mhfig.token_map(r.output[:, out_cols], labels, [f"dim {j}" for j in out_cols], kind="diverging",
                                row_name="token", col_name="dim", title="output = C W_o", show_text=False),
                key="mh_fig_output")
numbers(r.output, labels, dims, name="output")

# ----------------------------------------------------------------------------------------------
st.header("4 · What each head does")
d1, d2 = st.columns(2)
with d1:
    st.subheader("Entropy per head")
    st.latex(r"H^{(i)} = \frac{1}{n}\sum_q \Big(-\sum_k W^{(i)}_{qk} \ln W^{(i)}_{qk}\Big)")
    st.caption("Low = the head's queries focus on few keys; the dashed line is attention spread evenly.")
    st.plotly_chart(mhfig.entropy_bars(sc.head_entropy, n, causal=bool(mh_causal)), key="mh_fig_entropy")
with d2:
    st.subheader("How alike are the heads?")
    st.latex(r"\mathrm{overlap}(a, b) = \frac{1}{n}\sum_q \sum_k \min\big(W^{(a)}_{qk},\, W^{(b)}_{qk}\big)")
    st.caption("The attention mass two heads put on the same keys, averaged over queries: 1 = identical "
               "patterns, 0 = no key in common.")
    if sc.overlap is not None:
        heads_all = mhfig.head_labels(range(n_heads))
        st.plotly_chart(figures.heatmap(sc.overlap, heads_all, heads_all, row_name="head", col_name="head",
                                        title="head-to-head overlap", colorbar_title="overlap",
                                        show_text=n_heads <= 8), key="mh_fig_similarity")
    else:
        st.info(f"With {n_heads} heads (d_head = {d_head}) the head-to-head matrix is not computed: it would be "
                f"{n_heads} × {n_heads} and cost ~n_heads²·n² operations. Choose at most "
                f"{smh.OVERLAP_MAX_HEADS} heads to see it.")

st.subheader("One query, every head")
qi = st.selectbox("Query token", range(n), format_func=lambda k: labels[k], key="mh_query")
top, top_w = sc.top_keys(qi)  # [n_heads] each
q1, q2 = st.columns([1, 1])
with q1:
    st.dataframe(pd.DataFrame({
        "head": [f"head {h}" for h in range(n_heads)],
        "attends most to": [labels[k] for k in top],
        "weight": top_w,
        "entropy of this row (nats)": sc.row_entropy[:, qi],
    }), hide_index=True, width="stretch", height=min(400, 38 + 35 * n_heads))
with q2:
    st.plotly_chart(mhfig.token_map(r.weights[:, qi, :], mhfig.head_labels(range(n_heads)), labels,
                                    row_name="head", col_name="key", mask=None if sc.mask is None else sc.mask[qi],
                                    show_text=n <= 12 and n_heads <= 16,
                                    title=f"weights of query {labels[qi]} in each head"),
                    key="mh_fig_query_heads")

# ----------------------------------------------------------------------------------------------
st.header("5 · Check: vectorised vs a plain loop")
st.markdown("The page's numbers come from `MultiHeadAttention.forward_detailed`: all heads at once with "
            "`split_heads`, one batched matrix product and `merge_heads`. Right here, the same layer is also "
            "computed **one head at a time** with a plain loop (below) — they must agree.")
v1, v2, v3 = st.columns(3)


def diff_text(x: float) -> str:
    return "0 (same bits)" if x == 0 else f"{x:.1e}"


v1.metric("max |vectorised − loop|, output", diff_text(sc.max_diff_output))
v2.metric("max |vectorised − loop|, per-head weights", diff_text(sc.max_diff_weights))
worst = max(sc.max_diff_output, sc.max_diff_weights)
v3.metric("verdict", "agree" if worst <= 1e-12 else "DIFFER")
if worst <= 1e-12:
    st.success(f"Vectorised and loop results agree: largest difference {diff_text(worst)} (float64, "
               "tolerance 1e-12).", icon="✅")
else:
    st.error(f"Vectorised and loop results differ by {worst:.1e} (tolerance 1e-12).", icon="❌")
with st.expander("The loop, as run"):
    st.code(inspect.getsource(smh.per_head_loop), language="python")
st.caption("The test suite also checks this code against PyTorch: `MultiHeadAttention.from_torch` loads the parameters "
           "of a `torch.nn.MultiheadAttention`, and the per-head weights (`average_attn_weights=False`), the averaged "
           "weights and the output are compared with PyTorch's recorded numbers (`tests/data/torch_reference.npz`, "
           "`tests/test_multihead_numbers.py`).")
