"""Page: multi-head attention — split Q, K, V into heads, attend in each, concatenate, project with W_o."""

import streamlit as st

import attention as A
from explorer.lessons.multihead import draw
from explorer.lessons.multihead import model as smh
from explorer.shell import controls, i18n
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

GRID_MAX = draw.GRID_MAX  # heads drawn at once in the per-head grids
NOTICE = "mh_heads_notice"

st.title(_("Multi-head attention"))
st.markdown(_(
    "One attention is one way of comparing tokens. **Multi-head attention** runs several in parallel: "
    "it splits the queries, keys and values into `n_heads` narrower parts, attends in each part on its own, "
    "glues the results back together and mixes them with one more matrix, `W_o` (the lesson's second exercise)."
))
st.latex(r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_0, \dots, \mathrm{head}_{h-1})\, W_o,"
         r"\qquad \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_\text{head}}}\right) V_i")

settings = controls.lesson_settings(_("to see the heads at work"))
labels, n, d_model = settings.labels, settings.n, settings.d_model

# --- the head count: only divisors of d_model; a bad link value or a changed d_model -> nearest valid ---
valid = A.valid_head_counts(d_model)
valid_text = ", ".join(map(str, valid))
default_heads = smh.default_head_count(d_model)
# A link's n_heads is corrected in the link itself before the selectbox reads it (a whole number that does not
# divide d_model -> the nearest that does; anything else -> the default), so Streamlit seeds the widget from the
# link; check_link below warns about the link's value and consumes it (later runs see None).
given = controls.link_value("n_heads")
if given is not None:
    asked = controls.link_number(given, -(2**63), 2**63, integer=True)
    target = default_heads if asked is None else smh.nearest_head_count(d_model, asked)
    controls.correct_link("n_heads", str(target))
current = st.session_state.get("n_heads")
if given is None and current is not None and current not in valid:  # d_model changed under the chosen count
    nearest = smh.nearest_head_count(d_model, int(current))
    st.session_state["n_heads"] = nearest  # the selectbox has no default (controls.choice): no Streamlit warning
    st.session_state[NOTICE] = (int(current), nearest, d_model)  # its words are written where it is shown

controls.retired_link_key("mh_seed", _("this page's weights W_q, W_k, W_v, W_o now use the sidebar's seed "
                                       "(now {seed}), like every lesson; set it there.").format(seed=settings.seed))
c1, c3 = st.columns([2, 1])
with c1:
    n_heads = controls.choice(
        _("Number of heads n_heads (divisors of d_model = {d_model})").format(d_model=d_model), valid, default_heads,
        key="n_heads",
        expected=_("a divisor of d_model = {d_model}, one of {valid}; the nearest valid count is shown").format(
            d_model=d_model, valid=valid_text),
        help=_("Each head gets d_head = d_model / n_heads columns of Q, K and V, so n_heads must divide d_model. "
               "Change d_model in the sidebar for other choices."),
    )
with c3:
    is_causal = st.toggle(_("Causal mask (every head)"), False, key="mh_causal", bind="query-params",
                          help=_("Query i may only look at keys j ≤ i, in every head."))
    controls.check_link("mh_causal", is_causal, _("true or false"))
n_heads = int(n_heads)
notice = st.session_state.get(NOTICE)
if notice and notice[1] == n_heads and notice[2] == d_model:
    st.warning(_("n_heads = {current} does not divide the new d_model = {d_model} (every head needs the same whole "
                 "width d_model / n_heads). The valid counts are {valid}; showing the nearest, n_heads = {nearest}."
                 ).format(current=notice[0], d_model=d_model, valid=valid_text, nearest=n_heads), icon="🧩")
else:
    st.session_state.pop(NOTICE, None)

# The pictures, tables and text come from draw's sections: replayed from Streamlit's cache when the
# settings they depend on have not changed.
controls.not_used({"d_k": _("every head's width is d_head = d_model / n_heads = {d_model} / {n_heads} = "
                             "{d_head} (choose n_heads on the page).").format(d_model=d_model, n_heads=n_heads,
                                                                             d_head=d_model // n_heads)})
mh = smh.MultiHead(settings, n_heads, settings.seed, bool(is_causal))  # W_q, W_k, W_v, W_o from the sidebar's seed


def download(name: str, heads: tuple[int, int] | None = None) -> None:
    """A table too big for the page: its size and a CSV download, generated only when clicked."""
    rows, cols = draw.table_shape(name, n, d_model, heads or (0, n_heads))
    st.caption(_("{rows} × {cols} numbers: too many for a table on the page.").format(
        rows=i18n.integer(rows), cols=i18n.integer(cols)))
    st.download_button(_("Download {name} (CSV)").format(name=name), lambda: draw.csv(mh, name, heads), f"{name}.csv",
                       "text/csv", key=f"mh_dl_{name}", on_click="ignore")  # no rerun: see the walkthrough


MATRICES = ["W_q", "W_k", "W_v", "W_o"]
draw.intro(mh)
with st.expander(_("Numbers of W_q, W_k, W_v, W_o")):
    which = st.radio(_("Matrix"), MATRICES, horizontal=True, key="mh_numbers_matrix", bind="query-params")
    if draw.too_big(mh, which):
        download(which)
    else:
        draw.matrix_table(mh, which)
controls.check_link("mh_numbers_matrix", which, controls.one_of(MATRICES))  # outside: a closed expander hides it

draw.split(d_model, n_heads, mh.is_causal)
window = (0, n_heads)
if n_heads > GRID_MAX:
    starts = list(range(0, n_heads, GRID_MAX))  # a window = GRID_MAX heads from its first head (in the link)
    if st.session_state.get("mh_head_window", 0) not in starts:  # fewer heads now: the last window there is
        st.session_state["mh_head_window"] = starts[-1]

    run_lang = i18n.current()  # Streamlit may call a select box's format_func after the run (to write the link)

    def window_label(a: int, lang: str | None = None) -> str:
        with i18n.using(lang or run_lang):
            return _("heads {first}-{last}").format(first=a, last=min(a + GRID_MAX, n_heads) - 1)

    # The link holds the label (a bound select box): a link written in another language names the same window,
    # so it is rewritten in this run's language before the box reads it (as the head count above).
    given_window = controls.link_value("mh_head_window")
    for a in starts:
        if given_window != window_label(a) and given_window in {window_label(a, lang) for lang in i18n.LANGUAGES}:
            controls.correct_link("mh_head_window", window_label(a))
    first = st.selectbox(_("Heads shown in the grids"), starts, format_func=window_label, key="mh_head_window",
                         bind="query-params")
    linked = {window_label(first, lang) for lang in i18n.LANGUAGES}  # the link holds the label, in any language
    controls.check_link("mh_head_window", given_window if given_window in linked else window_label(first),
                        controls.one_of([f"'{window_label(a)}'" for a in starts]))
    window = (int(first), min(int(first) + GRID_MAX, n_heads))
    st.caption(_("{n_heads} heads: the grids show {shown} at a time; the diagnostics below cover all of them.").format(
        n_heads=n_heads, shown=GRID_MAX))


def numbers(name: str) -> None:
    """The numbers of table ``name``: a table in its expander, or a CSV download when it is too big for the page."""
    heads = window if name == "head_weights" else None  # the other tables cover every head
    if draw.too_big(mh, name, heads):
        with st.expander(draw.numbers_title(name, n_heads)):
            download(name, heads)
    else:
        draw.table(mh, name, heads)


if any(draw.too_big(mh, name, window) for name in draw.TABLES):
    # section by section, the downloads in between
    draw.heads_to_diagnostics(mh, window, numbers, controls.color_scale())
else:
    draw.heads(mh, window, controls.color_scale())  # the same, every table on the page: one cached call

qi = controls.token_picker(_("Query token"), labels, "mh_query")
draw.query_and_check(mh, qi, controls.color_scale())
