"""AppTest of the page "Watch attention learn": the defaults, a training run drawing its curves and sentences, the
experiments, a link reproducing the run (from the server's shared run, and trained afresh), bad link values."""

from __future__ import annotations

import base64
from urllib.parse import parse_qsl, urlparse

import numpy as np
import pytest

from attention import heads
from explorer.lessons.training import model
from explorer.shell import controls, jobs, llm
from tests.apptest_utils import app_at, assert_clean, figures


def runs() -> jobs.Jobs:
    """This process's training runs, the page's (:func:`explorer.shell.jobs.shared`)."""
    return jobs.shared(model.WORKER, model.train_run, _pin=model.is_default_run)

PAGE = "training"
QUICK = {"tr_steps": "300"}  # the default model, 300 steps: an induction head forms at about step 220
pytestmark = pytest.mark.slow  # whole-app runs; training takes seconds


def texts(at, kinds=("markdown", "caption", "info", "warning", "success", "error", "text")) -> str:
    return " ".join(str(e.value) for kind in kinds for e in getattr(at.main, kind))


def trained(query: dict, *, clicks=("tr_train",)):
    """The page at ``query`` with the buttons ``clicks`` pressed (a button the page no longer shows, because the
    server already holds those runs, is skipped)."""
    at = app_at(PAGE, query=query, timeout=600)
    for key in clicks:
        if any(b.key == key for b in at.main.button):
            at.button(key=key).click().run(timeout=600)
        assert_clean(at)
    return at


def array(data) -> np.ndarray:
    """A Plotly data array as NumPy: a plain list, or Plotly's typed-array form ``{"dtype", "bdata"}``."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.array(data, dtype=float)


def numbers(at) -> dict:
    return {k: f["data"] for k, f in figures(at).items()}


def test_defaults_show_the_task_and_the_untrained_model_and_wait_for_the_button():
    at = app_at(PAGE)
    assert_clean(at)
    figs = figures(at)
    assert {"tr_fig_probe", "tr_fig_untrained_0_0", "tr_fig_untrained_1_1"} <= set(figs)
    assert "tr_fig_loss" not in figs or runs().get(model.RunSpec()) is not None
    assert set(at.session_state["_not_used"]) == set(controls.DEFAULTS)
    text = texts(at)
    assert "uniform attention would give" in text and "Filler (" in text
    assert at.button(key="tr_train") is not None
    for key in ("tr_run_layers", "tr_run_shortcut", "tr_run_scaling", "tr_run_context", "tr_real"):
        assert at.button(key=key) is not None


def test_a_training_run_draws_the_curves_the_snapshots_and_the_knockouts():
    runs().clear()
    at = trained(QUICK)
    figs = figures(at)
    for key in ("tr_fig_loss", "tr_fig_accuracy", "tr_fig_scores", "tr_fig_knockout", "tr_fig_step_1_0"):
        assert key in figs, key
    loss = array(figs["tr_fig_loss"]["data"][0]["y"])
    assert loss.shape == (301,) and loss[:20].mean() > 3.9 and loss[-20:].mean() < 1.0  # ln 64 = 4.16, then down
    text = texts(at)
    assert "An induction head formed" in text and "rose from" in text
    assert "Knocking out all of layer 0 takes the accuracy on fresh sequences from" in text  # which accuracy is which
    assert "Step 300, on that step's training batch: accuracy" in text
    for head in (0, 1):  # one number per head: the last step's maps are titled with the sentence's scores
        title = figs[f"tr_fig_step_1_{head}"]["layout"]["title"]["text"].replace("<br>", " ")
        assert "prefix" in title and title.rsplit(" ", 1)[1] in text.split("So layer 1's heads")[1][:60], title
    scores = {tr["name"]: array(tr["y"]) for tr in figs["tr_fig_scores"]["data"]}
    assert max(scores["prefix-match L1H0"][-20:].max(), scores["prefix-match L1H1"][-20:].max()) > 0.8
    # the snapshot slider and its shortcut buttons
    before = figs["tr_fig_step_1_0"]["data"][0]["z"]
    at.button(key="tr_show_before").click().run()
    assert_clean(at)
    assert at.slider(key="tr_step").value < 300 and figures(at)["tr_fig_step_1_0"]["data"][0]["z"] != before


def test_a_link_reproduces_the_run_shared_or_trained_again():
    first = trained(QUICK)
    sent = numbers(first)
    # another session opening the same link: the server's finished run, drawn at once, no button pressed
    other = app_at(PAGE, query=QUICK)
    assert_clean(other)
    assert numbers(other) == sent
    # a server that never saw the run trains it again from the link: the same numbers
    runs().clear()
    again = trained(QUICK)
    got, want = numbers(again), dict(sent)
    assert got == want


def test_the_experiments_one_layer_and_the_shortcut():
    at = trained(QUICK, clicks=("tr_train", "tr_run_layers", "tr_run_shortcut"))
    figs = figures(at)
    assert "tr_fig_layers" in figs and "tr_fig_shortcut_map" in figs
    text = texts(at)
    assert "One layer never gets there" in text
    assert "The fixed-period model took the shortcut" in text
    assert "The random-period model passes the check" in text
    table = at.main.dataframe[-1].value
    assert list(table["verdict"]) == ["induction", "shortcut"]


def test_the_bridge_measures_the_real_model_and_links_to_it(door_model):
    """The bridge's heads recomputed from the core on the door's model (SmolLM2's own, layer 18 head 6: test_model.py's
    test_smollm2s_top_induction_head_is_layer_18_head_6)."""
    at = app_at(PAGE, timeout=600)
    at.button(key="tr_real").click().run(timeout=600)
    assert_clean(at)
    text = texts(at)
    seed = int(at.number_input(key="tr_seed").value)  # the page's seed
    ids = heads.repeated_random_ids(llm.word_ids(door_model), 20, seed)
    rh = model.real_heads(door_model.forward(list(ids)).attentions, ids)
    assert "Measured now on SmolLM2-135M" in text and model.head_name(rh.top_induction[0][:2]) in text
    link = next(m.value for m in at.main.markdown if "Open these heads" in m.value)
    url = urlparse(link.split("](", 1)[1].rstrip(")").split(")")[0])
    target = app_at("real_model", query=dict(parse_qsl(url.query)), timeout=600)
    assert_clean(target)
    assert not target.warning, [w.value for w in target.warning]
    assert target.session_state["rm_stat"] == "induction"


def test_a_run_too_big_for_the_server_is_refused_with_a_note():
    at = app_at(PAGE, query={"tr_layers": "3", "tr_heads": "4", "tr_d_model": "64", "tr_d_head": "64",
                             "tr_n_ctx": "64", "tr_steps": "2000"})
    assert_clean(at)
    assert at.button(key="tr_train").disabled
    assert any("times as long as a run at the defaults" in w.value for w in at.warning)


@pytest.mark.parametrize("query, key", [
    ({"tr_layers": "5"}, "tr_layers"), ({"tr_seed": "abc"}, "tr_seed"), ({"tr_task": "copy"}, "tr_task"),
    ({"tr_lr": "1e-2"}, "tr_lr"), ({"tr_steps": "150"}, "tr_steps"), ({"tr_scale": "maybe"}, "tr_scale"),
    ({"tr_d_head": "<b>16</b>"}, "tr_d_head"),
])
def test_bad_link_values_warn_and_open_at_the_default(query, key):
    at = app_at(PAGE, query=query)
    assert_clean(at)
    warned = [w.value for w in at.warning if key in w.value]
    assert warned and "not valid" in warned[0], [w.value for w in at.warning]
    assert "<b>" not in " ".join(warned) or "`" in warned[0]  # shown as code, never as markup


def test_a_run_the_server_dropped_is_said_and_trained_again_on_the_button(monkeypatch):
    """A trained run stays while pages show it; one nobody looked at for the ttl is dropped, and the page that showed
    it says so (issue 47) instead of falling back to "Not trained yet" silently or raising."""
    at = trained(QUICK)
    assert "tr_fig_loss" in figures(at)
    registry = runs()
    later = registry.clock() + 2 * registry.ttl
    monkeypatch.setattr(registry, "clock", lambda: later)  # nobody looked at it for twice the ttl
    at.run()
    assert_clean(at)
    assert "tr_fig_loss" not in figures(at)
    said = [i.value for i in at.main.info if i.value.startswith("Dropped from the server's memory")]
    assert "Dropped from the server's memory: the training run with these settings." in " ".join(said)
    at.button(key="tr_train").click().run(timeout=600)
    assert_clean(at)
    # The run is back and the notices of its sections gone; other experiments this page showed (in a suite, runs
    # other tests trained in this process are shown at once) stay said as dropped until their own buttons are pressed.
    assert "tr_fig_loss" in figures(at)
    assert len([i for i in at.main.info if i.value.startswith("Dropped from the server's memory")]) < len(said)
