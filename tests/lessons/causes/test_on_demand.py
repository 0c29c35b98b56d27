"""What made it say that? computes what is on screen (issue 47, item 2): the induction experiment and the patching run
when switched on, and the sweep, kept for the class, is said to be gone when the server dropped it."""

from __future__ import annotations

import pytest
import streamlit as st

from explorer.lessons.causes import model as M
from explorer.shell import jobs, llm
from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow  # whole-app runs
PAGE = "causes"


@pytest.fixture
def calls(monkeypatch, door_model):
    """The door's calls during the test, by name: ``forward`` (its token count each), ``patch_residual_sweep`` and
    ``knockout_sweep`` (every cache emptied first, so a call is a computation)."""
    st.cache_data.clear()
    st.cache_resource.clear()
    seen: dict[str, list] = {"forward": [], "patch_residual_sweep": [], "knockout_sweep": []}
    for name in seen:
        real = getattr(llm, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen[_name].append(len(args[1]) if _name == "forward" else 1)
            return _real(*args, **kwargs)

        monkeypatch.setattr(llm, name, spy)
    return seen


def repeated_passes(calls, lm) -> int:
    """The forward passes of the induction experiment (the repeated random prompt, 2 k tokens)."""
    return calls["forward"].count(2 * llm.repeat_words(lm, M.REPEAT_TOKENS))


def test_a_first_visit_runs_neither_the_induction_experiment_nor_the_patching(calls, door_model):
    at = app_at(PAGE, timeout=600)
    assert_clean(at)
    assert repeated_passes(calls, door_model) == 0 and calls["patch_residual_sweep"] == []
    assert calls["knockout_sweep"] == []
    assert "ca_fig_induction" not in figures(at) and "ca_fig_patch" not in figures(at)
    labels = [e.label for e in at.toggle]
    said = [x for x in labels if x.startswith(("Run the repeated prompt", "Run the patching"))]
    assert len(said) == 2 and all("forward passes" in x and "on this server" in x for x in said), labels
    at.session_state["ca_induct"] = True  # the learner switches the induction experiment on
    at.run()
    assert repeated_passes(calls, door_model) == M.INDUCTION_PASSES and "ca_fig_induction" in figures(at)
    assert calls["patch_residual_sweep"] == []
    at.session_state["ca_patch"] = True
    at.run()
    assert_clean(at)
    assert calls["patch_residual_sweep"] == [1] and "ca_fig_patch" in figures(at)


def test_a_link_that_names_a_sections_values_opens_it(calls):
    at = app_at(PAGE, query={"ca_rseed": "3", "ca_layer": "1"}, timeout=600, opened_by_link=True)
    assert_clean(at)
    assert "ca_fig_induction" in figures(at) and "ca_fig_patch" in figures(at)


def sweep_registry() -> jobs.Jobs:
    return jobs.shared("causes-sweeps", None)


def test_a_dropped_sweep_is_said_and_run_again_only_when_asked(calls, monkeypatch):
    at = app_at(PAGE, query={"ca_ablation": "mean"}, timeout=600)  # mean ablation: not the class's pinned sweep
    at.button(key="ca_reveal").click().run()
    assert calls["knockout_sweep"] == [1] and "ca_sweep_grid" in figures(at)
    at.run()  # a rerun shows the kept sweep: not run again
    assert calls["knockout_sweep"] == [1] and "ca_sweep_grid" in figures(at)
    registry = sweep_registry()
    later = registry.clock() + 2 * registry.ttl
    monkeypatch.setattr(registry, "clock", lambda: later)  # nobody looked at it for twice the ttl
    at.run()
    assert_clean(at)
    assert calls["knockout_sweep"] == [1] and "ca_sweep_grid" not in figures(at)
    said = " ".join(i.value for i in at.info)
    assert "Dropped from the server's memory: the sweep of every head." in said and "30 minutes" in said
    at.button(key="ca_resweep").click().run()
    assert_clean(at)
    assert calls["knockout_sweep"] == [1, 1] and "ca_sweep_grid" in figures(at)
    assert "Dropped from the server's memory" not in " ".join(i.value for i in at.info)


def test_the_default_prompts_sweep_stays_for_the_class(calls, monkeypatch):
    at = app_at(PAGE, timeout=600)
    at.button(key="ca_reveal").click().run()
    registry = sweep_registry()
    later = registry.clock() + 10 * registry.ttl
    monkeypatch.setattr(registry, "clock", lambda: later)
    other = app_at(PAGE, timeout=600)  # another learner, much later
    other.button(key="ca_reveal").click().run()
    assert_clean(other)
    assert calls["knockout_sweep"] == [1] and "ca_sweep_grid" in figures(other)
