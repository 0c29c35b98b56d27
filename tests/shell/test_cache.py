"""explorer.shell.cache: dataclass keys hashed by their fields, and told apart by every field."""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from explorer.shell.cache import cached, key_hash_funcs
from explorer.shell.settings import Settings

BASE = Settings(("The", "cat"), 8, 4, 42, "lesson", False)


@dataclass(frozen=True)
class Outer:
    settings: Settings
    n_heads: int


def test_hash_funcs_cover_dataclasses_in_hints_unions_and_fields():
    def f(a: Outer, b: Settings | None, c: int) -> None: ...

    assert set(key_hash_funcs(f)) == {Outer, Settings}


def test_a_cached_function_tells_every_field_apart():
    calls = []

    @cached(max_entries=64)
    def compute(settings: Settings, outer: Outer) -> tuple:
        calls.append(1)
        return settings.tokens, outer.n_heads

    st.cache_data.clear()
    variants = [BASE, replace(BASE, tokens=("A", "cat")), replace(BASE, d_model=9), replace(BASE, d_k=5),
                replace(BASE, seed=7), replace(BASE, embedding="per-token"), replace(BASE, positional=True)]
    for v in variants:
        compute(v, Outer(v, 2))
    assert len(calls) == len(variants)  # each a new entry
    compute(BASE, Outer(BASE, 2))
    assert len(calls) == len(variants)  # equal values: from the cache
    compute(BASE, Outer(BASE, 3))
    assert len(calls) == len(variants) + 1  # a nested field counts too
