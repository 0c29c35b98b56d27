"""The head statistics in words: one name, unit, short name and meaning per statistic of :mod:`attention.heads`, in
the shell's domain, so every lesson that names a score ("Inside a real model", "What made it say that?", "Watch
attention learn", the sinks lesson) states the same definition in the same words and the same formula
(:func:`attention.heads.formula`). No Streamlit.

Sources: Olsson et al. (2022), "In-context Learning and Induction Heads" (induction heads, prefix matching);
Xiao et al. (2023), "Efficient Streaming Language Models with Attention Sinks", section 3.1 (attention sinks).
"""

from __future__ import annotations

from dataclasses import dataclass

from attention import heads
from explorer.shell import i18n
from explorer.shell.i18n import N_

_, _n = i18n.translator(__name__)


@dataclass(frozen=True)
class Statistic:
    """One head statistic in words: its key (:data:`attention.heads.KEYS`, the link's value), its ``name``, ``unit``,
    ``short`` name (as a sentence says it: "the head with the highest {short}") and ``meaning``; all four are
    messages (shown with :func:`name`, :func:`unit`, :func:`short`, :func:`meaning`, in the run's language)."""

    key: str
    name: str
    unit: str
    short: str
    meaning: str

    @property
    def formula(self) -> str:
        """Averaged over its rows (LaTeX, :func:`attention.heads.formula`)."""
        return heads.formula(self.key)

    @property
    def last_formula(self) -> str:
        """On the last row (LaTeX)."""
        return heads.formula(self.key, heads.LAST)


STATISTICS: dict[str, Statistic] = {s.key: s for s in (
    Statistic("sink", N_("attention to the first token (sink)"), N_("weight"), N_("weight on the first token"),
              N_("How much of each query's attention lands on token 0. Many heads park weight there when they "
                 "have nothing better to do: an attention sink (Xiao et al. 2023).")),
    Statistic("previous", N_("attention to the previous token"), N_("weight"), N_("weight on the previous token"),
              N_("How much each query attends to the token just before it: a previous-token head.")),
    Statistic("self", N_("attention to itself"), N_("weight"), N_("weight on itself"),
              N_("How much each query attends to its own position.")),
    Statistic("entropy", N_("entropy (bits)"), N_("bits"), N_("entropy"),
              N_("How spread out each row is: 0 bits = all weight on one key, log₂(i+1) bits = uniform over the "
                 "i+1 keys query i may see.")),
    Statistic("distance", N_("mean distance looked back"), N_("tokens"), N_("mean distance looked back"),
              N_("How far back a query looks, on average, weighted by attention: 0 = itself, 1 = the previous "
                 "token, i = the first token.")),
    Statistic("induction", N_("induction score"), N_("weight"), N_("induction score"),
              N_("On a repeated sequence, how much a token attends to the token that followed its earlier "
                 "occurrence (“last time I saw this, what came next?”): an induction head (Olsson et al. 2022). "
                 "R = the query rows whose token occurred at least three positions before: for an occurrence right "
                 "before (j = i−1) the token after it is i itself, and for one two back (j = i−2) it is the previous "
                 "token, so a self or previous-token head would score there.")),
)}
"""Every statistic of :data:`attention.heads.KEYS`, in that order."""


def name(key: str) -> str:
    """The statistic's name in the run's language (``"attention to the first token (sink)"``)."""
    return _(STATISTICS[key].name)


def unit(key: str) -> str:
    """The statistic's unit in the run's language (``weight``, ``bits``, ``tokens``)."""
    return _(STATISTICS[key].unit)


def short(key: str) -> str:
    """The statistic as a sentence names it, in the run's language (``"weight on the first token"``)."""
    return _(STATISTICS[key].short)


def meaning(key: str) -> str:
    """What the statistic measures, in the run's language (its one definition in words)."""
    return _(STATISTICS[key].meaning)
