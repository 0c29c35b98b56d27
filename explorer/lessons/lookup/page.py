"""Page: attention as a soft database lookup — the same table queried two ways."""

import pandas as pd
import streamlit as st

from explorer.lessons.lookup import CONTROLS, draw
from explorer.lessons.lookup import model as S
from explorer.shell import controls, i18n
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names the domain

draw.intro()
controls.not_used({  # the sidebar's controls this lesson has no use for, and why
    "sentence": _("this lesson queries its own table (section 1), not a sentence."),
    "embedding": _("the table's keys and values are typed in, not embedded."),
    "positional": _("the table's rows have no order."),
    "seed": _("nothing on this page is random."),
    "d_model": _("the keys and values are points (k1, k2) and (v1, v2): width 2."),
    "d_k": _("d_k = 2 here: the query and every key are points in the plane."),
})

# ---- 1 · the table ---------------------------------------------------------------------------
version = controls.edition("lookup_table_version")
t1, t2 = st.columns([3, 2])
with t1:
    # The default rows and the headers are in the run's language: another language is another editor (Streamlit
    # keys a dynamic editor on its data and settings), so a language change starts from that language's table.
    edited = st.data_editor(
        pd.DataFrame(S.table_rows(i18n.current()), columns=list(S.COLUMNS)), key=f"lookup_table_{version}",
        num_rows="dynamic", hide_index=True, width="stretch",
        column_config={c: st.column_config.TextColumn(label, help=why)
                       for c, (label, why) in S.column_texts(i18n.current()).items()},
    )
with t2:
    draw.table_help()
    if st.button(_("↺ Restore the default table"), key="lookup_restore"):
        controls.next_edition("lookup_table_version", "lookup_last_valid")

check = S.parse_table(edited.to_dict("records"))
table = controls.last_valid("lookup_last_valid", check.table) or S.default_table()
if check.table is None:
    st.error(_("**The table cannot be used**, so everything below shows the last valid table:") + "\n\n"
             + "\n".join(f"- {p}" for p in check.problems), icon="✋")
if check.n_empty_rows and check.table is not None:
    st.caption(_n("{n} empty row ignored.", "{n} empty rows ignored.", check.n_empty_rows).format(n=check.n_empty_rows))

# ---- 2 · the query and the sharpness ------------------------------------------------------------


def apply_preset(choices: dict[str, tuple[float, float]]) -> None:
    """Move the query sliders to the chosen preset, then clear the chooser."""
    name = st.session_state.get("lookup_preset")
    if name in choices:
        controls.set_value("lookup_qx", choices[name][0])  # the sliders leave their default out on the next run
        controls.set_value("lookup_qy", choices[name][1])
    controls.reset("lookup_preset")


st.header(_("2 · The query and the sharpness"))


@controls.fragment  # the query and the sharpness change parts 2-4 only: rerun alone, the table is not resent (issue 20)
def query_and_lookups(table: S.LookupTable) -> None:
    """Part 2's controls and parts 3-4 (everything that follows the query and the sharpness), on ``table``."""
    presets = S.presets(table)
    c1, c2 = st.columns(2)
    with c1:
        st.selectbox(_("Jump to a query"), list(presets), index=None, placeholder=_("capital of France, a tie, …"),
                     key="lookup_preset", on_change=apply_preset, args=(presets,),
                     help=_("Moves the two sliders below. A row's own key is the exact-match query for that row."))
        qx = controls.draw(CONTROLS["qx"])
        qy = controls.draw(CONTROLS["qy"])
    with c2:
        sharp = controls.draw(CONTROLS["sharpness"])
        draw.sharpness_formula(sharp=float(sharp))

    # ---- 3 · the same query, two lookups; 4 · many queries at once ---------------------------------------------
    draw.lookups(table, (float(qx), float(qy)), float(sharp), controls.color_scale())


query_and_lookups(table)
