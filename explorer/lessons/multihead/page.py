"""Page: multi-head attention — split Q, K, V into heads, attend in each, concatenate, project with W_o."""

import streamlit as st

import attention as A
from explorer.lessons.multihead import draw as sections
from explorer.lessons.multihead import model as smh
from explorer.shell import controls

SEED_MAX = controls.SEED_MAX
GRID_MAX = sections.GRID_MAX  # heads drawn at once in the per-head grids
NOTICE = "mh_heads_notice"

st.title("Multi-head attention")
st.markdown(
    "One attention is one way of comparing tokens. **Multi-head attention** runs several in parallel: "
    "it splits the queries, keys and values into `n_heads` narrower parts, attends in each part on its own, "
    "glues the results back together and mixes them with one more matrix, `W_o` (the lesson's second exercise)."
)
st.latex(r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_0, \dots, \mathrm{head}_{h-1})\, W_o,"
         r"\qquad \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_\text{head}}}\right) V_i")

sh = controls.shared()
inp = controls.sentence_input("to see the heads at work")
labels, n, d_model = inp.labels, len(inp.tokens), sh.d_model

# --- the head count: only divisors of d_model; a bad link value or a changed d_model -> nearest valid ---
valid = A.valid_head_counts(d_model)
valid_text = ", ".join(map(str, valid))
default_heads = smh.default_head_count(d_model)
# The raw link value, read before the bound widget silently drops an invalid one: from the session's
# first-run snapshot (app.state; controls.check_link below consumes it and warns), or straight from the URL on
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
    controls.check_link("n_heads", n_heads, f"a divisor of d_model = {d_model}, one of {valid_text}; "
                                         "the nearest valid count is shown")
with c2:
    mh_seed = st.number_input(
        "Weight seed", 0, SEED_MAX, smh.DEFAULT_SEED, step=1, key="mh_seed", bind="query-params",
        help="Seeds W_q, W_k, W_v, W_o of MultiHeadAttention(d_model, n_heads, seed). The embeddings X use the "
             "sidebar's seed. The default, 3, gives heads with visibly different patterns at d_model = 8; "
             "many seeds give flatter ones at this small size.",
    )
    controls.check_link("mh_seed", mh_seed, f"a whole number from 0 to {SEED_MAX}")
with c3:
    mh_causal = st.toggle("Causal mask (every head)", False, key="mh_causal", bind="query-params",
                          help="Query i may only look at keys j ≤ i, in every head.")
    controls.check_link("mh_causal", mh_causal, "true or false")
n_heads, mh_seed = int(n_heads), int(mh_seed)
notice = st.session_state.get(NOTICE)
if notice and notice[1] == n_heads and notice[2] == d_model:
    st.warning(notice[0], icon="🧩")
else:
    st.session_state.pop(NOTICE, None)

# The pictures, tables and text come from app.sections.multihead: replayed from Streamlit's cache when the
# settings they depend on have not changed (one call per run of pieces between two widgets).
inputs = (inp.tokens, d_model, sh.seed, sh.embedding, sh.positional, n_heads, mh_seed, bool(mh_causal))


def big(name: str, window: tuple[int, int] | None) -> bool:
    """Whether table ``name`` is too big for the page (then it is a CSV download, see :func:`download`)."""
    rows, cols = sections.table_shape(name, n, d_model, window or (0, n_heads))
    return rows * cols > sections.TABLE_MAX


def download(name: str, window: tuple[int, int] | None) -> None:
    """A table too big for the page: its size and a CSV download, generated only when clicked."""
    rows, cols = sections.table_shape(name, n, d_model, window or (0, n_heads))
    st.caption(f"{rows} × {cols} numbers: too many for a table on the page.")
    st.download_button(f"Download {name} (CSV)", lambda: sections.csv(inputs, window, name), f"{name}.csv",
                       "text/csv", key=f"mh_dl_{name}", on_click="ignore")  # no rerun: see the walkthrough


def draw(names: list[str], window: tuple[int, int] | None) -> None:
    """The named pieces (``sections.PIECES``) in order, with as few section calls as the big tables allow."""
    run: list[str] = []

    def flush() -> None:
        if run:
            sections.pieces(inputs, window, tuple(run))
            run.clear()

    for name in names:
        table = name.removeprefix("numbers:")
        if name.startswith("numbers:") and big(table, window):
            flush()
            with st.expander(sections.numbers_title(table, n_heads)):
                download(table, window)
        elif name == "columns" and big("concat", window):
            flush()
            p1, p2 = st.columns(2)
            with p1:
                sections.pieces(inputs, window, ("concat",))
                with st.expander(sections.numbers_title("concat", n_heads)):
                    download("concat", window)
            with p2:
                sections.pieces(inputs, window, ("W_o",))
        else:
            run.append(name)
    flush()


MATRICES = ["W_q", "W_k", "W_v", "W_o"]
draw(["intro"], None)
with st.expander("Numbers of W_q, W_k, W_v, W_o"):
    which = st.radio("Matrix", MATRICES, horizontal=True, key="mh_numbers_matrix", bind="query-params")
    if big(which, None):
        download(which, None)
    else:
        sections.pieces(inputs, None, (f"table:{which}",))
controls.check_link("mh_numbers_matrix", which, "one of " + ", ".join(MATRICES))  # outside: a closed expander hides it

HEADS = ["grid", "numbers:head_weights", "numbers:mean_weights", "path", "columns", "output", "numbers:output",
         "diagnostics"]
if n_heads > GRID_MAX:
    draw(["split", "heads_formula"], None)
    starts = list(range(0, n_heads, GRID_MAX))  # a window = GRID_MAX heads from its first head (in the link)
    if st.session_state.get("mh_head_window", 0) not in starts:  # fewer heads now: the last window there is
        st.session_state["mh_head_window"] = starts[-1]
    def window_label(a: int) -> str:
        return f"heads {a}-{min(a + GRID_MAX, n_heads) - 1}"

    first = st.selectbox("Heads shown in the grids", starts, format_func=window_label, key="mh_head_window",
                         bind="query-params")
    controls.check_link("mh_head_window", window_label(first),  # the link holds the label
                     "one of " + ", ".join(f"'{window_label(a)}'" for a in starts))
    window = (int(first), min(int(first) + GRID_MAX, n_heads))
    st.caption(f"{n_heads} heads: the grids show {GRID_MAX} at a time; the diagnostics below cover all of them.")
    draw(HEADS, window)
else:
    draw(["split", "heads_formula", *HEADS], None)

if st.session_state.get("mh_query", 0) >= n:  # a shorter sentence: its last token
    st.session_state["mh_query"] = n - 1
qi = st.selectbox("Query token", range(n), format_func=lambda k: labels[k], key="mh_query", bind="query-params")
qi = 0 if qi is None else min(int(qi), n - 1)
controls.check_link("mh_query", labels[qi], "one of the sentence's tokens, as 'token (position)'")  # link = label
sections.query_and_check(inputs, qi)
