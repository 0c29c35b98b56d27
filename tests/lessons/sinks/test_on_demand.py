"""Attention sinks computes what is on screen (issue 47, item 2): a first visit runs one forward pass (the sink);
another first token, the shift and the four caches run when the learner switches them on, each switch saying how many
passes it runs and about how long they take on this server."""

from __future__ import annotations

import pytest

from explorer.lessons.sinks import model as M
from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow  # whole-app runs
PAGE = "sinks"


def test_a_first_visit_runs_one_pass_and_each_switch_runs_its_own(passes, door_model):
    at = app_at(PAGE, timeout=600)
    assert_clean(at)
    assert len(passes) == 1  # the sink: one pass with every attention weight
    assert not {"sk_fig_first", "sk_fig_losses"} & set(figures(at))
    labels = {t.key: t.label for t in at.toggle}
    assert labels["sk_swap"].startswith("Read your text with another token first: 1 forward pass, ")
    assert labels["sk_shifted"].endswith("on this server") and "2 forward passes" in labels["sk_shifted"]
    assert f"{M.stream_passes(door_model.config, M.DEFAULT_NEW_TOKENS)} forward passes" in labels["sk_streams"]
    at.toggle(key="sk_swap").set_value(True).run()
    assert len(passes) == 2 and "sk_fig_first" in figures(at)
    at.toggle(key="sk_shifted").set_value(True).run()
    assert len(passes) == 4
    at.toggle(key="sk_streams").set_value(True).run()
    assert_clean(at)
    assert "sk_fig_losses" in figures(at) and len(passes) > 4


def test_a_link_that_names_a_sections_values_switches_it_on(passes):
    at = app_at(PAGE, query={"sk_first": "the", "sk_offset": "7", "sk_new": "2"}, timeout=600, opened_by_link=True)
    assert_clean(at)
    assert all(at.toggle(key=k).value for k in ("sk_swap", "sk_shifted", "sk_streams"))
    assert {"sk_fig_first", "sk_fig_losses"} <= set(figures(at))
