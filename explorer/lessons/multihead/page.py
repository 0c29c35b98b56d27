"""Page: multi-head attention — split Q, K, V into heads, attend in each, concatenate, project with W_o."""

import streamlit as st

from explorer.lessons.multihead import CONTROLS, draw
from explorer.lessons.multihead import model as smh
from explorer.shell import controls, tables
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

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

controls.retired_link_key("mh_seed", _("this page's weights W_q, W_k, W_v, W_o now use the sidebar's seed "
                                       "(now {seed}), like every lesson; set it there.").format(seed=settings.seed))
c1, c3 = st.columns([2, 1])
with c1:
    n_heads = int(controls.draw(CONTROLS["n_heads"], {"d_model": d_model}))
with c3:
    is_causal = controls.draw(CONTROLS["causal"])

controls.not_used({"d_k": _("every head's width is d_head = d_model / n_heads = {d_model} / {n_heads} = "
                             "{d_head} (choose n_heads on the page).").format(d_model=d_model, n_heads=n_heads,
                                                                             d_head=d_model // n_heads)})
mh = smh.MultiHead(settings, n_heads, settings.seed, is_causal)  # W_q, W_k, W_v, W_o from the sidebar's seed


def download(name: str, heads: tuple[int, int] | None = None) -> None:
    """A table too big for the page: its size and a CSV download, generated only when clicked."""
    tables.csv_download(name, smh.table_size(mh, name, heads),
                        lambda: smh.frame(smh.View(mh, draw.scenario(mh), heads), name).to_csv(), key=f"mh_dl_{name}")


def too_big(name: str, heads: tuple[int, int] | None = None) -> bool:
    return tables.too_big(*smh.table_size(mh, name, heads))


draw.intro(mh)
with st.expander(_("Numbers of W_q, W_k, W_v, W_o")):
    which = controls.draw(CONTROLS["matrix"], inline_warning=False)  # a closed expander would hide the warning
    if too_big(which):
        download(which)
    else:
        draw.matrix_table(mh, which)

draw.split(d_model, n_heads, mh.is_causal)
window = (0, n_heads)
if n_heads > smh.GRID_MAX:
    first = controls.draw(CONTROLS["head_window"], {"n_heads": n_heads})
    window = (int(first), min(int(first) + smh.GRID_MAX, n_heads))
    st.caption(_("{n_heads} heads: the grids show {shown} at a time; the diagnostics below cover all of them.").format(
        n_heads=n_heads, shown=smh.GRID_MAX))


def numbers(name: str) -> None:
    """The numbers of table ``name``: a table in its expander, or a CSV download when it is too big for the page."""
    heads = window if name == "head_weights" else None  # the other tables cover every head
    if too_big(name, heads):
        with st.expander(smh.numbers_title(name, n_heads)):
            download(name, heads)
    else:
        draw.table(mh, name, heads)


if any(too_big(name, window) for name in smh.TABLES):
    # section by section, the downloads in between
    draw.heads_to_diagnostics(mh, window, numbers, controls.color_scale())
else:
    draw.heads(mh, window, controls.color_scale())  # the same, every table on the page: one cached call

qi = controls.draw(CONTROLS["query"], {"labels": labels})
draw.query_and_check(mh, qi, controls.color_scale())
