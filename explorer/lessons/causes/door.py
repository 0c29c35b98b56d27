"""A thin stand-in for the lessons' one door (``explorer.shell.real_model``, issue 26, ``/work/brief/DOOR.md``) until
it is merged: the same names and signatures this lesson uses, built on what the shell has today. Delete this file
and import ``explorer.shell.real_model as rm`` once the door is on main.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attention import llama
from explorer.shell import controls
from explorer.shell.real_model import INSTALL_COMMAND, MODEL_NAME, model_or_explain, piece_labels, visible_piece

__all__ = ["INSTALL_COMMAND", "MODEL_NAME", "PROMPT_MAX_CHARS", "PROMPT_MAX_TOKENS", "Prompt", "describe", "labels",
           "model_or_explain", "prompt", "prompt_input", "visible_piece"]

PROMPT_MAX_TOKENS = 64
PROMPT_MAX_CHARS = 2000


@dataclass(frozen=True)
class Prompt:
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    labels: tuple[str, ...]
    n_total: int | None
    kept_text: str

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def is_cut(self) -> bool:
        return self.n_total is None or self.n_total > len(self.ids)


@st.cache_data(max_entries=16, ttl="30m", show_spinner=False)
def prompt(_llm: llama.LlamaModel, text: str, max_tokens: int = PROMPT_MAX_TOKENS) -> Prompt:
    if not text:
        raise ValueError("empty prompt")
    try:
        ids = _llm.encode(text)
        n_total: int | None = len(ids)
    except ValueError:
        ids, n_total = _llm.encode(text, truncate=True), None
    kept = [int(i) for i in ids[:max_tokens]]
    pieces = tuple(_llm.token_strings(kept))
    return Prompt(tuple(kept), pieces, tuple(piece_labels(list(pieces))), n_total, _llm.decode(kept))


def prompt_input(llm: llama.LlamaModel, *, key: str, default: str, label: str = "Prompt",
                 max_tokens: int = PROMPT_MAX_TOKENS, help: str | None = None) -> Prompt:  # noqa: A002
    last = f"_{key}_last"
    ss = st.session_state
    controls.refuse_unusable(key, lambda raw: len(raw) <= PROMPT_MAX_CHARS)
    kwargs = {} if key in ss else {"value": default}
    text = st.text_area(label, key=key, bind="query-params", max_chars=PROMPT_MAX_CHARS, height=68, help=help,
                        **kwargs)
    controls.check_link(key, text, f"text of at most {PROMPT_MAX_CHARS} characters")
    if not text:
        text = ss.get(last, default)
        st.warning("The prompt is empty, so there is nothing for the model to read. The page keeps showing the "
                   "last prompt.", icon="✍️")
    else:
        ss[last] = text
    p = prompt(llm, text, max_tokens)
    if p.is_cut:
        total = f"{p.n_total} tokens" if p.n_total is not None else f"more than {llama.MAX_TOKENS} tokens"
        st.warning(f"This prompt is {total}; the page reads its first {max_tokens}. It is cut after:", icon="✂️")
        st.text("…" + p.kept_text[-80:])
    return p


def labels(llm: llama.LlamaModel, ids) -> list[str]:
    return piece_labels(llm.token_strings(list(ids)))


def describe(config) -> str:
    return (f"{config.n_layers} layers, {config.n_heads} query heads of d_head {config.d_head} sharing "
            f"{config.n_kv_heads} key/value heads, d_model {config.d_model}")
