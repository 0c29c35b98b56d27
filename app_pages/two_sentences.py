"""Page: two sentences through one set of weights, and why position matters (lesson exercise 3)."""

import pandas as pd
import streamlit as st

from app import figures, scenarios, scenarios_two_sentences, state, textviews
from app.figures import two_sentences as tfig

two_sentences_scenario = st.cache_data(max_entries=32, show_spinner=False)(
    scenarios_two_sentences.two_sentences_scenario)

DEFAULT_B = "The dog sat on the rug"
LAST_B = "two_last_valid_b"

st.title("Two sentences, one set of weights")
st.markdown(
    "Feed two sentences through the **same** self-attention layer (the same `W_q`, `W_k`, `W_v`, drawn from the "
    "sidebar's seed) and compare what each token attends to (lesson exercise 3). Then shuffle the words: "
    "attention on its own does not know the order of the words."
)
st.latex(r"W^{(s)} = \mathrm{softmax}\!\left(\frac{X^{(s)} W_q \,\big(X^{(s)} W_k\big)^\top}{\sqrt{d_k}}\right),"
         r"\qquad s \in \{A, B\},\ \text{one } W_q, W_k, W_v")

sh = state.shared()
inp_a = state.sentence_input("to compare it with a second one (it is sentence A here)")
if sh.embedding != "per-token":
    st.info("This page always uses **per-token** embeddings (the sidebar's *lesson* choice is not used here): "
            "each distinct word has one fixed vector, so a word shared by both sentences has the same vector in "
            "both. With the lesson's random rows, a row depends on its position, not on the word.", icon="ℹ️")


c1, c2 = st.columns(2)
with c1:
    st.markdown("**Sentence A** (the sidebar's sentence)")
    st.code(sh.sentence, language=None)
with c2:
    sentence_b = st.text_input("Sentence B", DEFAULT_B, key="two_sentence", bind="query-params",
                               max_chars=state.SENTENCE_MAX_CHARS,
                               help="Same length as A compares position by position; otherwise the common length "
                                    "is compared.")
    state.check_link("two_sentence", sentence_b, f"text of at most {state.SENTENCE_MAX_CHARS} characters")
info_box = st.container()
inp_b = scenarios.sentence_tokens(sentence_b)
if inp_b.tokens:
    st.session_state[LAST_B] = inp_b.tokens
tokens_b = st.session_state.get(LAST_B, ())
if not inp_b.tokens:
    if tokens_b:
        st.warning("Sentence B is empty: type a sentence to compare. Below is the last valid sentence B:",
                   icon="✍️")
        st.text(" ".join(tokens_b))
    else:
        st.warning("Sentence B is empty: type a sentence to compare it with A. The order test below uses A alone.",
                   icon="✍️")
if inp_b.n_dropped:  # sentence A's note comes from state.sentence_input
    st.info(f"Sentence B has {len(inp_b.tokens) + inp_b.n_dropped} tokens; the first {scenarios.MAX_TOKENS} "
            f"are used ({inp_b.n_dropped} dropped).")

st.header("1 · Same weights, two sentences")
section1 = st.container()
st.header("2 · Order: attention alone does not know word order")
section2 = st.container()
with section2:
    st.markdown(
        "Self-attention compares every token with every token; nothing in the formula says *where* a token "
        "stands. Shuffle the words of sentence A (a permutation matrix P) and, without positional encoding, the "
        "attention map is the original with its rows **and** columns shuffled the same way:"
    )
    st.latex(r"\mathrm{softmax}\!\left(\frac{(PX) W_q\, \big((PX) W_k\big)^\top}{\sqrt{d_k}}\right) "
             r"= P\, \mathrm{softmax}\!\left(\frac{X W_q (X W_k)^\top}{\sqrt{d_k}}\right) P^\top")
    s1, s2 = st.columns([1, 1])
    with s1:
        shuffle = st.toggle("Shuffle the words of sentence A", False, key="two_shuffle", bind="query-params")
        state.check_link("two_shuffle", shuffle, "true or false")
    with s2:
        shuffle_seed = st.number_input("Shuffle seed", 0, state.SEED_MAX, 0, step=1, key="two_shuffle_seed",
                                       bind="query-params", help="Seeds the permutation, so a link reproduces it.")
        state.check_link("two_shuffle_seed", shuffle_seed, f"a whole number from 0 to {state.SEED_MAX}")

sc = two_sentences_scenario(inp_a.tokens, tuple(tokens_b), sh.d_model, sh.d_k, sh.seed, sh.pe, int(shuffle_seed))
pe_text = "with" if sh.pe else "without"
info_box.caption(f"per-token embeddings · d_model = {sh.d_model} · d_k = d_v = {sh.d_k} · seed = {sh.seed} · "
           f"{pe_text} positional encoding (sidebar)")


def numbers(frame: pd.DataFrame, label: str = "Numbers") -> None:
    """The exact numbers behind a picture, in a table a learner can copy."""
    with st.expander(label):
        st.dataframe(frame, width="stretch")


with section1:
    cmp = sc.comparison
    if cmp is None:
        st.info("Type sentence B above to compare the two sentences.")
    else:
        m = cmp.m
        if cmp.n_a != cmp.n_b:
            st.info(f"The sentences have different lengths (A: {cmp.n_a} tokens, B: {cmp.n_b}). Comparing the first "
                    f"{m} tokens of each; the rest of the longer one is left out.")
        labels_a = tfig.marked_labels(cmp.tokens_a, cmp.shared_a)
        labels_b = tfig.marked_labels(cmp.tokens_b, cmp.shared_b)
        table = pd.DataFrame({
            "A": list(cmp.tokens_a), "B": list(cmp.tokens_b),
            "same word here?": ["yes" if a == b else "no" for a, b in zip(cmp.tokens_a, cmp.tokens_b, strict=True)],
            "A's word occurs in B?": ["★ yes" if s else "no" for s in cmp.shared_a],
            "B's word occurs in A?": ["★ yes" if s else "no" for s in cmp.shared_b],
        }, index=pd.Index(range(m), name="position"))
        shared_cells = pd.DataFrame(False, index=table.index, columns=table.columns)
        shared_cells["A"], shared_cells["B"] = cmp.shared_a, cmp.shared_b
        st.dataframe(table.style.apply(lambda _: shared_cells.map(
            lambda s: "background-color: #fff3cd" if s else ""), axis=None), width="stretch")
        st.caption(f"{tfig.SHARED_MARK} = a word both sentences contain: per-token embeddings give it the same "
                   "vector in both, so differences come from its neighbours (and, if on, its position).")
        left, right = st.columns(2)
        for col, name, steps, labels in ((left, "A", cmp.steps_a, labels_a), (right, "B", cmp.steps_b, labels_b)):
            fig = figures.heatmap(steps.weights, labels, labels, title=f"sentence {name}: attention weights")
            col.plotly_chart(fig, key=f"two_fig_weights_{name.lower()}")
        st.caption(f"shape [{m}, {m}] each · one colour range, [0, 1], for both · row = query, column = key")
        gap = float(abs(cmp.diff).max())
        if cmp.identical:
            st.success(f"Same sentence twice: the difference is exactly {gap!r} everywhere (same words, same "
                       "vectors, same weights).", icon="✅")
        pairs = tfig.pair_labels(cmp.tokens_a, cmp.tokens_b)
        d1, d2 = st.columns(2)
        with d1:
            st.latex(r"\Delta = W^{(A)} - W^{(B)}")
            st.plotly_chart(figures.heatmap(cmp.diff, pairs, pairs, kind="diverging", title="difference A − B",
                                            colorbar_title="Δ weight"), key="two_fig_diff")
            st.caption(f"diverging scale centred on 0 · largest |Δ| = {textviews.fmt(gap, 4)}")
        with d2:
            st.latex(r"H_i = -\sum_j w_{ij} \ln w_{ij}")
            st.plotly_chart(tfig.entropy_bars(cmp.entropy_a, cmp.entropy_b, pairs, names=("A", "B"),
                                              title="entropy of each query's weights"), key="two_fig_entropy")
            st.caption("0 = all weight on one key; log n = spread evenly over all keys.")
        with st.expander("Numbers"):
            st.markdown("Weights A")
            st.dataframe(pd.DataFrame(cmp.steps_a.weights, index=labels_a, columns=labels_a), width="stretch")
            st.markdown("Weights B")
            st.dataframe(pd.DataFrame(cmp.steps_b.weights, index=labels_b, columns=labels_b), width="stretch")
            st.markdown("Difference A − B, and entropies")
            st.dataframe(pd.DataFrame(cmp.diff, index=pairs, columns=pairs), width="stretch")
            st.dataframe(pd.DataFrame({"entropy A": cmp.entropy_a, "entropy B": cmp.entropy_b}, index=pairs),
                         width="stretch")


def gap_text(value: float) -> str:
    return "0 (exact)" if value == 0.0 else f"{value:.2e}"


with section2:
    order = sc.order
    n = len(order.tokens)
    labels = scenarios.SentenceInput(order.tokens, 0).labels
    if not shuffle:
        st.info("Switch on **Shuffle the words** to run the test on sentence A.")
    elif n == 1:
        st.info("Sentence A has one token: there is nothing to shuffle.")
    else:
        shuffled_labels = [f"{t} ({int(p)})" for t, p in zip(order.shuffled_tokens, order.perm, strict=True)]
        st.markdown("Shuffled sentence A (in the pictures each token keeps its original position in brackets):")
        st.text(" ".join(order.shuffled_tokens))
        o1, o2 = st.columns(2)
        o1.plotly_chart(figures.heatmap(order.original.weights, labels, labels, title="original sentence A"),
                        key="two_fig_order_original")
        o2.plotly_chart(figures.heatmap(order.shuffled.weights, shuffled_labels, shuffled_labels,
                                        title="shuffled sentence (its own order)"), key="two_fig_order_shuffled")
        o3, o4 = st.columns(2)
        o3.plotly_chart(figures.heatmap(order.unpermuted_weights, labels, labels,
                                        title="shuffled, rows and columns put back (Pᵀ W P)"),
                        key="two_fig_order_unpermuted")
        o4.plotly_chart(figures.heatmap(order.unpermuted_weights - order.original.weights, labels, labels,
                                        kind="diverging", zrange=(-1.0, 1.0), title="put back − original",
                                        colorbar_title="Δ weight"), key="two_fig_order_gap")
        st.caption(f"shape [{n}, {n}] each · top right: rows and columns follow the shuffled order · bottom left: "
                   "put back in the original order, to compare with top left · bottom right: their difference")
        if sh.pe:
            st.warning(f"With positional encoding the un-shuffled map is **not** the original: the weights differ by "
                       f"up to {order.weight_gap:.3g}, the outputs by up to {order.output_gap:.3g}. Each word now "
                       "carries its position.", icon="📍")
        else:
            st.success(f"Without positional encoding the un-shuffled map equals the original to float rounding "
                       f"(largest |difference| {gap_text(order.weight_gap)} in the weights, "
                       f"{gap_text(order.output_gap)} in the outputs).", icon="✅")
        numbers(pd.DataFrame(order.unpermuted_weights - order.original.weights, index=labels, columns=labels),
                "Numbers: put back − original")

    rep = sc.repeat
    st.subheader("Two copies of the same word")
    rep_labels = scenarios.SentenceInput(rep.tokens, 0).labels
    word = rep.tokens[rep.positions[0]]
    if rep.demo:
        st.markdown("Sentence A repeats no word (note that *The* and *the* are different tokens), so this part "
                    "uses a demo sentence:")
        st.text(" ".join(rep.tokens))
    copies = [rep_labels[i] for i in rep.positions]
    rep_steps = rep.positional if sh.pe else rep.plain
    title = f"weight rows of the copies of the same word ({pe_text} positional encoding)"
    st.plotly_chart(figures.heatmap(rep_steps.weights[list(rep.positions)], copies, rep_labels, title=title),
                    key="two_fig_repeat_rows")
    st.caption(f"shape [{len(copies)}, {len(rep.tokens)}] · one row per copy of the word · same query vector → "
               "same row, unless position is added")
    if sh.pe:
        st.warning(f"With positional encoding the copies' rows differ by up to {rep.row_gap(True):.3g}.", icon="📍")
    else:
        st.success(f"Without positional encoding the copies' rows are identical (largest difference "
                   f"{gap_text(rep.row_gap(False))}).", icon="✅")

    st.subheader("By how much positional encoding changes this")
    st.dataframe(pd.DataFrame({
        "without positional encoding": [gap_text(sc.order_plain.weight_gap), gap_text(sc.order_plain.output_gap),
                                        gap_text(rep.row_gap(False))],
        "with positional encoding": [gap_text(sc.order_positional.weight_gap),
                                     gap_text(sc.order_positional.output_gap), gap_text(rep.row_gap(True))],
    }, index=["shuffled & put back vs original: weights", "shuffled & put back vs original: outputs",
              f"rows of the copies of “{word}”"]).rename_axis("largest |difference|"), width="stretch")
    st.caption("Computed both ways whatever the sidebar says; switch *Add sinusoidal positional encoding* in the "
               "sidebar to see the pictures change. Without it the first two are float rounding (about 1e-16) or 0.")

    st.subheader("The positional-encoding matrix")
    st.latex(r"PE_{p,\,2i} = \sin\!\left(\frac{p}{10000^{2i/d_{\text{model}}}}\right),\qquad "
             r"PE_{p,\,2i+1} = \cos\!\left(\frac{p}{10000^{2i/d_{\text{model}}}}\right)")
    st.plotly_chart(figures.heatmap(sc.pe, [f"position {p}" for p in range(n)],
                                    [f"dim {j}" for j in range(sh.d_model)], kind="diverging", zrange=(-1.0, 1.0),
                                    row_name="position", col_name="dim", title="PE (added to X when switched on)"),
                    key="two_fig_pe")
    st.caption(f"shape [n, d_model] = [{n}, {sh.d_model}] · Vaswani et al. (2017), §3.5 · every row is different, "
               "so the same word at two positions gets two different vectors.")
    numbers(pd.DataFrame(sc.pe, index=[f"position {p}" for p in range(n)],
                         columns=[f"dim {j}" for j in range(sh.d_model)]), "Numbers: PE")
