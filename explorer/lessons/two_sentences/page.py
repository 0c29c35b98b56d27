"""Page: two sentences through one set of weights, and why position matters (lesson exercise 3)."""

import streamlit as st

from explorer.lessons.two_sentences import CONTROLS
from explorer.lessons.two_sentences import draw as sections
from explorer.lessons.two_sentences.model import LayerSettings
from explorer.shell import controls, i18n, settings
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

TWINS_B = {"pt": "O cachorro sentou no tapete", "tr": "Köpek paspasın üzerine oturdu"}
# Sentence B in the learner's language, one click away: the twin of the sidebar's translated sentence A
# (explorer.shell.controls.SENTENCE_TWINS), with the words they share. The default stays the lesson's English
# sentence, whose numbers are the lesson's. (A comment, not a docstring: Streamlit's magic would show a string.)
LAST_B = "two_last_valid_b"

sections.intro()

sidebar = controls.lesson_settings(_("to compare it with a second one (it is sentence A here)"))
layer = LayerSettings.of(sidebar)  # this page always uses per-token embeddings, whatever the sidebar says
controls.not_used({"embedding": _("this page always uses per-token embeddings, so a word has the same vector "
                                  "in both sentences.")})
if sidebar.embedding != "per-token":
    sections.embedding_note()

c1, c2 = st.columns(2)
with c1:
    sections.sentence_a(controls.shared().sentence)
with c2:
    sentence_b = controls.draw(CONTROLS["sentence_b"])
    twin_b = TWINS_B.get(i18n.current())
    if twin_b and sentence_b != twin_b:
        st.button(_("↳ Try it in Portuguese: {sentence}").format(sentence=twin_b) if i18n.current() == "pt"
                  else _("↳ Try it in Turkish: {sentence}").format(sentence=twin_b),
                  key="two_sentence_twin", type="tertiary", on_click=controls.set_value,
                  args=("two_sentence", twin_b),
                  help=_("The lesson's own numbers are for its English sentences; any sentence works."))
sections.settings_caption(layer)
inp_b = settings.sentence_tokens(sentence_b)
tokens_b = controls.last_valid(LAST_B, inp_b.tokens or None, ())
if not inp_b.tokens:
    if tokens_b:
        st.warning(_("Sentence B is empty: type a sentence to compare. Below is the last valid sentence B:"), icon="✍️")
        st.text(" ".join(tokens_b))
    else:
        st.warning(_("Sentence B is empty: type a sentence to compare it with A. The order test below uses A "
                     "alone."), icon="✍️")
if inp_b.n_dropped:  # sentence A's note comes from controls.lesson_settings
    st.info(_("Sentence B has {n} tokens; the first {limit} are used ({dropped} dropped).").format(
        n=len(inp_b.tokens) + inp_b.n_dropped, limit=settings.MAX_TOKENS, dropped=inp_b.n_dropped))

# Part 1 (A and B through one layer) and part 2's intro.
sections.compare(sidebar.tokens, tuple(tokens_b), layer, controls.color_scale())


@controls.fragment  # the shuffle controls change part 2's test and its gap table only: rerun them alone (issue 20)
def shuffle_part(tokens_a: tuple[str, ...], layer: LayerSettings, color_scale: str) -> None:
    """Part 2's controls, the shuffle test, the two copies of a word and the gaps table (which follows the seed)."""
    s1, s2 = st.columns([1, 1])
    with s1:
        shuffle = controls.draw(CONTROLS["shuffle"])
    with s2:
        shuffle_seed = controls.draw(CONTROLS["shuffle_seed"])
    sections.order(tokens_a, layer, shuffle, shuffle_seed, color_scale)


shuffle_part(sidebar.tokens, layer, controls.color_scale())
sections.positional_encoding(len(sidebar.tokens), layer.d_model)  # does not depend on the shuffle
