"""Inside a real model: "Compare with another model", the same prompt's head grid for a second model of the server's
catalogue, side by side with the page's (issue 50).

The statistic is the one the page's grid shows (its ``rm_stat`` control); each model reads the prompt with its own
tokenizer (the token counts may differ), and the sentence under the grids is measured from the two grids: the mean
over every head and the highest head of each. The second model is a declared control (``rm_compare``: its id in the
link, so a teacher can share a comparison; a link's id this server does not list is named in a warning and nothing is
compared). Both models stay loaded while the section is open (the door keeps two:
:data:`explorer.shell.llm.LOADED_MAX_ENTRIES`); the memory they hold is stated.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.lessons.real_model import CONTROLS, NO_SECOND, draw
from explorer.shell import charts, controls, head_statistics, i18n, llm
from explorer.shell.i18n import translator
from explorer.shell.textviews import code_span

_, _n = translator(__name__)

PICKER = CONTROLS["compare"].key  # the second model's select, in the link as ?rm_compare=<id>


def size(n: int | None) -> str:
    """``n`` bytes as the picker writes a size (:func:`explorer.shell.llm.megabytes`): ``0.3 MB``, ``540 MB``
    (``?`` when unknown)."""
    return "?" if n is None else f"{llm.megabytes(n)} MB"


def summary(values: np.ndarray) -> tuple[float, int, int, float]:
    """``(mean over every head, layer, head, value)`` of the highest head of a ``[n_layers, n_heads]`` grid."""
    layer, head = np.unravel_index(int(np.argmax(values)), values.shape)
    return float(values.mean()), int(layer), int(head), float(values[layer, head])


def section(lm: llm.LlamaModel, ids: tuple[int, ...]) -> None:
    """The section, for the page's model ``lm`` and the token ids it reads (the second model reads their text with
    its own tokenizer)."""
    st.header(_("Compare with another model"))
    here = llm.shown_entry()
    others = [e for e in llm.catalogue() if e.id != here.id]
    # Drawn on a server of one model too (a link's id is judged and warned about there as well), disabled.
    other_id = controls.draw(CONTROLS["compare"], {"others": {e.id: llm.entry_label(e) for e in others},
                                                   "readable": tuple(e.id for e in others if e.supported)},
                             disabled=not others)
    if not others:
        st.caption(_("This server lists one model. Its operator can list more GGUF files (README, “Other models”); "
                     "then the same prompt's heads of two models show here side by side."))
    if other_id == NO_SECOND:
        return
    entry = next(e for e in others if e.id == other_id)
    second = llm.second_model(entry)
    if second is None:
        return
    stat = controls.value(CONTROLS["stat"])
    other_ids = llm.prompt(second, llm.text(lm, ids).text).ids
    pairs = [(llm.model_name(m), m, i, draw.statistics(m, i)) for m, i in ((lm, tuple(ids)), (second, other_ids))]
    if any(not s.defined or s.get(stat) is None for *_rest, s in pairs):
        st.info(_("The statistic “{statistic}” is not defined on this prompt for both models: choose another "
                  "statistic above or type a longer prompt.").format(statistic=head_statistics.name(stat)), icon="📏")
        return
    columns = st.columns(2)
    measured = []
    for col, (name, model_, ids, stats), key in zip(columns, pairs, ("a", "b"), strict=True):
        values = stats.get(stat)
        mean, layer, head, top = summary(values)
        measured.append((name, mean, layer, head, top))
        with col:
            st.markdown("#### " + code_span(name))  # a file's name: shown as text
            c = model_.config
            st.caption(_("{layers} layers × {heads} query heads; the prompt is {n} of its tokens").format(
                layers=c.n_layers, heads=c.n_heads, n=len(ids)))
            charts.show_fig(draw.grid_figure(values, stats.n, stat, layer, head), key=f"{PICKER}_{key}")
    (a, ma, la, ha, va), (b, mb, lb, hb, vb) = measured
    st.markdown(_("Averaged over every head, the {statistic} is {mean_a} in {a} and {mean_b} in {b}. The highest "
                  "head (outlined) is layer {la}, head {ha} in {a} ({top_a}) and layer {lb}, head {hb} in {b} "
                  "({top_b}).").format(statistic=head_statistics.short(stat), mean_a=i18n.number(ma, 3),
                                       mean_b=i18n.number(mb, 3), a=code_span(a), b=code_span(b), la=la, ha=ha,
                                       lb=lb, hb=hb, top_a=i18n.number(va, 3), top_b=i18n.number(vb, 3)))
    st.caption(_("Memory: both models are loaded at once, their weights about {first} and {second} in this "
                 "server's weights mode ({mode}).").format(first=size(llm.weights_bytes(lm)),
                                                           second=size(llm.weights_bytes(second)),
                                                           mode=lm.weights_mode))
