"""The lessons: one package per lesson, each holding everything that lesson alone uses.

Each ``explorer/lessons/<name>/`` has
    ``__init__.py`` its manifest: ``CONTROLS`` (its controls, declared with :mod:`explorer.shell.controls`)
                   and ``STATES`` (the link states its tests visit besides the defaults),
    ``page.py``    the Streamlit page (layout: draws the declared controls and the sections; run by
                   ``st.navigation``),
    ``draw.py``    its cached sections (what it draws from its arguments alone),
    ``charts.py``  its figure builders (arrays in, Plotly figures out; no Streamlit),
    ``model.py``   its arrays (pure NumPy on top of :mod:`attention`; no Streamlit),
and a lesson without charts or arrays of its own has no such file. What every lesson shares
is in :mod:`explorer.shell`. ``docs/lessons.md`` says how to add a lesson.

The folder is not called ``pages/``: with a ``pages/`` folder beside the entrypoint,
Streamlit serves a deep link on a fresh server as a stand-alone page (its old multipage
mode), without the entrypoint's sidebar and navigation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Lesson:
    """One entry of the navigation: the lesson's package ``name``, its title, icon, URL path and group, and
    ``needs``: the names of the earlier lessons that teach the ideas it uses (its "Builds on" line, drawn under its
    title by :func:`explorer.shell.controls.you_need`)."""

    name: str
    title: str
    icon: str
    url_path: str
    group: str
    needs: tuple[str, ...] = ()

    @property
    def page(self) -> str:
        """The page file, relative to the repository root (what ``st.Page`` is given)."""
        return f"explorer/lessons/{self.name}/page.py"


LESSONS: tuple[Lesson, ...] = (  # the first is the default page
    Lesson("walkthrough", "Step-by-step walkthrough", "🧮", "walkthrough", "Learn"),
    Lesson("lookup", "Attention as a soft lookup", "🗂️", "lookup", "Learn"),
    Lesson("scaling", "Why divide by √d_k", "📏", "scaling", "Learn"),
    Lesson("multihead", "Multi-head attention", "🧩", "multihead", "Learn"),
    Lesson("causal", "The causal mask", "⏳", "causal", "Learn"),
    Lesson("two_sentences", "Two sentences, one set of weights", "🔀", "two-sentences", "Learn"),
    Lesson("training", "Watch attention learn", "🌱", "training", "Learn"),
    Lesson("block", "Inside one transformer block", "🧱", "transformer-block", "A real model",
           needs=("walkthrough", "multihead", "causal")),
    Lesson("real_model", "Inside a real model", "🔬", "real-model", "A real model",
           needs=("walkthrough", "scaling", "multihead", "causal", "training", "block")),
    Lesson("causes", "What made it say that?", "🧪", "causes", "A real model",
           needs=("multihead", "training", "block", "real_model")),
    Lesson("kv_cache", "Generating with a KV cache", "🗃️", "kv-cache", "A real model",
           needs=("walkthrough", "multihead", "causal", "block", "real_model")),
    Lesson("sinks", "Attention sinks, smaller caches", "⚓", "attention-sinks", "A real model",
           needs=("walkthrough", "causal", "block", "real_model", "kv_cache")),
    Lesson("quiz", "Check yourself", "✅", "quiz", "Practice"),
)


MODEL_GROUP = "A real model"
"""The group of the lessons that run the chosen real model (each page calls ``llm.model_or_explain``)."""


def model_lessons() -> tuple[Lesson, ...]:
    """The lessons that run the sidebar's chosen model (:data:`MODEL_GROUP`), in the navigation's order."""
    return tuple(entry for entry in LESSONS if entry.group == MODEL_GROUP)


def lesson(name: str) -> Lesson:
    """The :class:`Lesson` called ``name``; ``KeyError`` if there is none."""
    for entry in LESSONS:
        if entry.name == name:
            return entry
    raise KeyError(f"no lesson {name!r}; lessons: {', '.join(e.name for e in LESSONS)}")
