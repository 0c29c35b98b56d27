"""The lesson's arrays and the process's shared runs: links, the numbers behind the page's sentences, and the
registry that trains one run per settings key however many sessions ask for it."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from urllib.parse import parse_qsl, urlparse

import numpy as np
import pytest

from attention import heads, training
from explorer.lessons import training as training_lesson
from explorer.lessons.training import model
from explorer.lessons.training.model import RunResult, RunSpec
from explorer.shell import controls, i18n, jobs

TINY = RunSpec(n_layers=2, n_heads=1, d_model=16, d_head=8, n_ctx=12, vocab=64, steps=100, batch=8)


def fake_result(spec: RunSpec, best_pm: np.ndarray, *, prev: np.ndarray | None = None,
                accuracy: np.ndarray | None = None, loss: np.ndarray | None = None,
                score_grad: np.ndarray | None = None,
                score_std: np.ndarray | None = None, saturated: np.ndarray | None = None,
                label: str = "induction") -> RunResult:
    """A RunResult with the given curves (layer 1 head 0 carries ``best_pm``), for the sentence functions."""
    S, L, H, n = len(best_pm), spec.n_layers, spec.n_heads, spec.n_ctx
    pm = np.zeros((S, L, H))
    pm[:, min(1, L - 1), 0] = best_pm
    pt = np.zeros((S, L, H))
    pt[:, 0, 0] = best_pm if prev is None else prev
    z = np.zeros((L, H))
    mech = training.Mechanism(spec.task, 0.9, z, z, z, np.zeros(L), (1, 0), (0, 0), 0.9, z, label)
    snaps = np.arange(0, S, spec.snapshot_every)
    return RunResult(spec, np.arange(S), np.full(S, 4.0) if loss is None else loss,
                     best_pm if accuracy is None else accuracy, pm, pt,
                     np.ones((S, L)) if score_grad is None else score_grad,
                     np.ones((S, L)) if score_std is None else score_std,
                     np.zeros((S, L)) if saturated is None else saturated,
                     snaps, np.zeros((len(snaps), L, H, n, n), np.float32), np.arange(n), 3, {}, mech)


def ramp(S: int, at: int, width: int, top: float = 0.95) -> np.ndarray:
    """0.05 until ``at``, a linear rise to ``top`` over ``width`` steps."""
    x = np.arange(S)
    return 0.05 + (top - 0.05) * np.clip((x - at) / width, 0, 1)


# --- links and specs ---------------------------------------------------------------------------------------------
def test_link_keeps_only_values_the_page_accepts():
    """Links to this lesson are built from its declarations (``controls.link``): numbers onto their grid and the
    nearest of numeric options, codes only when they are options."""
    url = urlparse(controls.link(training_lesson, seed=3, n_layers=1, n_heads=9, lr="0.003", task="repeat_fixed",
                                 scale=False, steps=260, positions="none"))
    assert url.path == "./training"
    assert dict(parse_qsl(url.query)) == {"tr_seed": "3", "tr_layers": "1", "tr_heads": "4", "tr_lr": "0.003",
                                          "tr_task": "repeat_fixed", "tr_steps": "300", "tr_scale": "false"}
    assert controls.link(training_lesson) == "./training"
    with pytest.raises(ValueError, match="declares no control"):
        controls.link(training_lesson, unknown=1)


def test_spec_config_snapshots_and_description():
    spec = RunSpec()
    cfg = spec.config()
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_head, cfg.vocab, cfg.n_ctx) == (2, 2, 32, 16, 64, 32)
    assert spec.snapshot_every == 30 and spec.snapshot_steps[0] == 0 and spec.snapshot_steps[-1] == 600
    assert len(spec.snapshot_steps) == model.SNAPSHOTS + 1
    assert "2 layers × 2 heads" in spec.describe() and "1 layers" not in replace(spec, n_layers=1).describe()
    assert model.snapshot_step(589, spec) == 600 and model.snapshot_step(14, spec) == 0
    assert model.snapshot_step(True, spec) is None and model.snapshot_step("5", spec) is None


def test_run_cost_is_one_at_the_defaults_and_refuses_the_largest_long_runs():
    assert model.run_cost(RunSpec()) == pytest.approx(1.0)
    assert model.run_cost(replace(RunSpec(), steps=1200)) == pytest.approx(2.0)
    largest = RunSpec(n_layers=3, n_heads=4, d_model=64, d_head=64, n_ctx=64)
    measured = {largest: 31.24, replace(RunSpec(), n_ctx=64): 4.10, replace(RunSpec(), d_head=64): 3.97,
                replace(RunSpec(), n_layers=1): 0.77}  # bench_training.py, quiet: passes per step (defaults 1.28)
    for spec, passes in measured.items():
        assert 0.6 <= model.run_cost(spec) / (passes / 1.28) <= 1.4, spec
    assert model.run_cost(replace(largest, steps=2000)) > model.MAX_COST >= model.run_cost(replace(largest, steps=200))


# --- the numbers behind the sentences ------------------------------------------------------------------------------
def test_jump_finds_the_plateau_the_rise_and_the_heads():
    spec = replace(TINY, steps=400)
    best = ramp(401, 200, 40)
    r = fake_result(spec, best, loss=np.where(np.arange(401) < 230, 4.1, 0.5))
    j = model.jump(r)
    assert j.emerged == int(np.argmax(best > 0.4))
    assert j.start is not None and j.start <= j.emerged <= j.end
    assert 195 <= j.start <= 210 and 225 <= j.end <= 245
    assert j.head == (1, 0) and j.previous_head == (0, 0)
    assert j.pm[0] < model.PLATEAU_PM + 0.05 and j.pm[1] > model.FORMED_PM - 0.05
    assert j.plateau_loss[0] == pytest.approx(4.1) and j.plateau_loss[1] == pytest.approx(4.1)
    steps = model.key_steps(r)
    assert list(steps) == ["before", "during", "after"] and steps["before"] < steps["during"] < steps["after"]
    assert set(steps.values()) <= set(r.snapshot_steps.tolist())


def test_jump_without_an_induction_head():
    r = fake_result(replace(TINY, steps=100), np.full(101, 0.1))
    j = model.jump(r)
    assert j.emerged is None and j.start is None and j.end is None and model.key_steps(r) == {}
    assert any("No induction head formed within 100 steps" in s for s in model.jump_sentences(r, j))


def test_the_jump_sentences_say_what_the_numbers_show():
    spec = replace(TINY, steps=400)
    sudden = fake_result(spec, ramp(401, 200, 30))
    text = " ".join(model.jump_sentences(sudden, model.jump(sudden)))
    assert "a sudden jump after a long plateau" in text and "An induction head formed" in text
    slow = fake_result(spec, ramp(401, 20, 360))
    text = " ".join(model.jump_sentences(slow, model.jump(slow)))
    assert "a gradual rise rather than a sudden jump" in text


def test_the_mechanism_sentences_follow_the_verdict():
    spec = replace(TINY, steps=200)
    found = " ".join(model.mechanism_sentences(fake_result(spec, ramp(201, 50, 20), label="induction")))
    shortcut = " ".join(model.mechanism_sentences(fake_result(spec, ramp(201, 50, 20), label="shortcut")))
    assert found != shortcut and "0.90" in found  # the check's accuracy, from the run


def test_the_mechanism_sentences_quote_the_step_maps_numbers():
    """One number per head: the knockout check's sentences quote the prefix-match and previous-token scores the
    attention maps at the last step are titled with (that step's batch, :func:`model.head_title`), not another
    measurement of the same heads (the fresh batch of the knockouts: 0.93, 0.92 beside maps titled 0.94, 0.93)."""
    spec = replace(TINY, n_heads=2, steps=200)
    r = fake_result(spec, ramp(201, 50, 20))
    r.prefix_match[-1, 1] = (0.94, 0.93)
    r.previous_token[-1, 0] = (0.71, 0.12)
    fresh = replace(r.mechanism, prefix_match=np.array([[0.0, 0.0], [0.93, 0.92]]),
                    previous_token=np.array([[0.7, 0.11], [0.0, 0.0]]), knockout_accuracy=np.full((2, 2), 0.8))
    r = replace(r, mechanism=fresh)
    titles = [model.head_title(layer, head, r.prefix_match[-1], r.previous_token[-1])
              for layer in range(2) for head in range(2)]
    text = " ".join(model.mechanism_sentences(r))
    for title in titles:
        assert title.rsplit(" ", 1)[1] in text, (title, text)
    assert "0.92" not in text and "0.11" not in text


def test_the_step_caption_and_the_knockouts_name_which_accuracy_they_quote():
    """One number for one thing: at the last step the maps' caption quotes that step's training batch (1.00) and the
    knockout sentences the fresh sequences of the check (0.99), each naming its measurement (before: "Step 200:
    accuracy 1.00" beside "takes the accuracy from 0.99", the same words for two measurements)."""
    r = fake_result(replace(TINY, steps=200), ramp(201, 50, 20), accuracy=np.full(201, 1.0))
    r = replace(r, mechanism=replace(r.mechanism, accuracy=0.99))
    assert model.snapshot_caption(r, 200).startswith("Step 200, on that step's training batch: accuracy 1.00, loss")
    text = " ".join(model.mechanism_sentences(r))
    assert "takes the accuracy on fresh sequences from 0.99 to" in text and "1.00" not in text
    shortcut = replace(r, mechanism=replace(r.mechanism, label="shortcut"))
    assert "on fresh sequences, accuracy 0.99 on its own task" in " ".join(model.mechanism_sentences(shortcut))


@pytest.mark.parametrize(("lang", "mark"), [("en", "."), ("pt", ","), ("tr", ",")])
def test_the_scaling_sentences_write_gradients_as_the_language_does_unbroken(lang, mark):
    """The gradients are written like the spreads (two significant digits, the language's decimal mark), an
    exponent's hyphen non-breaking (U+2011): before, "1.5e-05 against 1.5e-02" broke at the hyphen on a phone."""
    with i18n.using(lang):
        text = " ".join(model.scaling_sentences(scaling_pair(grad=(1.5e-2, 1.5e-5))))
    assert f"1{mark}5e\u201105" in text and f"0{mark}015" in text and "e-0" not in text, text


@pytest.mark.parametrize("lang", ["pt", "tr"])
def test_every_claim_renders_in_each_language(lang):
    """The claims are composed in model.py from the run's numbers: in Portuguese and Turkish each one is translated
    (not the English text), every placeholder filled, and the numbers written with the language's decimal mark."""
    spec = replace(TINY, steps=400)
    sudden, none = fake_result(spec, ramp(401, 200, 30)), fake_result(replace(TINY, steps=100), np.full(101, 0.1))
    claims = {
        "jump": lambda: model.jump_sentences(sudden, model.jump(sudden)),
        "no jump": lambda: model.jump_sentences(none, model.jump(none)),
        "mechanism": lambda: model.mechanism_sentences(sudden),
        **{f"scaling {i}": lambda pair=pair: model.scaling_sentences(pair) for i, pair in enumerate((
            scaling_pair(), scaling_pair(at=(30, 50), fall=(100, None), saturated=(0.5, 0.2)),
            scaling_pair(at=(30, 30), grad=(1e-2, 6e-3)), scaling_pair(at=(30, None), fall=(None, None)),
            scaling_pair(at=(None, 30)), scaling_pair(at=(None, None))))},
    }
    for name, claim in claims.items():
        english = claim()
        with i18n.using(lang):
            said = claim()
        assert len(said) == len(english) and all(a != b for a, b in zip(said, english, strict=True)), name
        for text in said:
            assert not re.search(r"\{[a-z_]+\}", text) and "0.9" not in text, (name, text)


def scaling_pair(at=(50, 30), fall=(None, 120), spread=(1.0, 8.0), saturated=(0.1, 0.8), grad=(1e-2, 1e-3),
                 S=201) -> model.ScalingComparison:
    """Two fake runs, ``(scaled, unscaled)``: prefix-match rising at ``at`` (``None``: never), accuracy with it,
    falling to 0.1 from ``fall`` (``None``: never), flat layer-1 curves ``spread``, ``saturated`` and ``grad``."""
    runs = []
    for i, spec in enumerate((replace(TINY, steps=S - 1), replace(TINY, steps=S - 1, scale=False))):
        pm = np.full(S, 0.05) if at[i] is None else ramp(S, at[i], 10)
        acc = pm if fall[i] is None else np.where(np.arange(S) < fall[i], pm, 0.1)
        layer1 = [np.column_stack([np.full(S, 99.0), np.full(S, v[i])]) for v in (spread, saturated, grad)]
        runs.append(fake_result(spec, pm, accuracy=acc, score_std=layer1[0], saturated=layer1[1], score_grad=layer1[2]))
    return model.compare_scaling(*runs)


def test_the_scaling_sentences_say_what_this_pair_of_runs_shows():
    """Which run learned faster, whether and when one fell apart, and how spread, saturated and starved of gradient
    each softmax was then: each branch from arrays, its numbers the table's (one number per run and step)."""
    c = scaling_pair()
    assert c.layer == 1 and c.emerged == (int(np.argmax(ramp(201, 50, 10) > 0.4)), int(np.argmax(ramp(201, 30, 10)
                                                                                                  > 0.4)))
    assert c.collapsed[0] is None and 116 <= c.collapsed[1] <= 124 and c.moment == c.collapsed[1]
    text = " ".join(model.scaling_sentences(c))
    for said in ("**Without ÷√d_head this run learned faster**: prefix-match passed 0.4 at step "
                 f"{c.emerged[1]}, against {c.emerged[0]} with it.", "spread wider than the other run's (std 8 "
                 "against 1)", f"without ÷√d_head fell apart**: its accuracy went from 0.95 (step {c.best[1][0]}) "
                 f"to below half of that by step {c.collapsed[1]}; 0.10 at the end",
                 f"At step {c.moment} (when the run without ÷√d_head fell apart), in layer 1", "spread (std) 8 "
                 "without the division against 1 with it (2.8 before ÷√8)", "80% of the rows without it were "
                 "saturated (top weight > 0.99) against 10%", "0.001 against 0.01",
                 "That is what ÷√d_head is for"):
        assert said in text, (said, text)
    row = [r for r in model.scaling_rows(c) if r["step"] == c.moment and r["run"] == "no scaling"][0]
    assert (row["spread the softmax gets"], row["saturated rows"], row["‖∂L/∂s‖"]) == pytest.approx((8.0, 0.8, 1e-3))
    assert [r["moment"] for r in model.scaling_rows(c)][::2] == ["start", "first prefix-match > 0.4", "fell apart"]
    text = " ".join(model.scaling_sentences(scaling_pair(at=(30, 50), fall=(None, None), saturated=(0.5, 0.2))))
    assert "**With ÷√d_head this run learned faster**" in text and "spread wider" not in text
    assert "Neither run fell apart within 200 steps: accuracy at the end 0.95 with ÷√d_head, 0.95 without" in text
    assert "(the last step)" in text and "was not the more saturated one" in text
    text = " ".join(model.scaling_sentences(scaling_pair(at=(30, 30), grad=(1e-2, 6e-3))))
    assert "Both runs learned at the same step: prefix-match passed 0.4 at step" in text
    assert "yet its scores still got more than half as much gradient" in text
    assert "Only the run with ÷√d_head learned" in " ".join(model.scaling_sentences(scaling_pair(at=(30, None),
                                                                                                 fall=(None, None))))
    assert "Only the run without ÷√d_head learned" in " ".join(model.scaling_sentences(scaling_pair(at=(None, 30))))
    assert "Neither run learned within 200 steps" in " ".join(model.scaling_sentences(scaling_pair(at=(None, None))))
    text = " ".join(model.scaling_sentences(scaling_pair(fall=(100, None))))
    assert "**Then the run with ÷√d_head fell apart**" in text and "(when the run with ÷√d_head fell apart)" in text
    with pytest.raises(ValueError, match="scale only"):
        model.compare_scaling(fake_result(TINY, ramp(101, 30, 10)),
                              fake_result(replace(TINY, scale=False, seed=1), ramp(101, 30, 10)))


def test_context_growth_fits_the_exponent_and_names_it():
    runs = [fake_result(replace(TINY, n_ctx=n, steps=1000), ramp(1001, at, 5))
            for n, at in ((16, 100), (24, 225), (32, 400), (48, 1200))]
    g = model.context_growth(runs[::-1])
    assert g.n == (16, 24, 32, 48) and g.emerged[3] is None
    assert [p[:2] for p in g.pairs] == [(16, 24), (24, 32)]
    assert g.exponent == pytest.approx(2.0, abs=0.05) and g.verdict == "about quadratic"
    assert g.pairs[0][3] == pytest.approx(2.0, abs=0.05)
    assert [model.growth_word(k) for k in (0.5, 1.0, 1.5, 2.0, 3.0)] == [
        "slower than linear", "about linear", "between linear and quadratic", "about quadratic",
        "faster than quadratic"]
    with pytest.raises(ValueError, match="n_ctx only"):
        model.context_growth([runs[0], fake_result(replace(TINY, n_ctx=24, seed=5), ramp(101, 5, 5))])


def test_real_heads_scores_a_repeated_run():
    p, n = 5, 10
    w = np.zeros((3, 2, n, n))
    i = np.arange(n)
    w[:, :, i, np.maximum(i - 1, 0)] = 1.0  # previous-token heads everywhere …
    w[2, 1] = 0.0
    w[2, 1, i, i] = 1.0
    q = np.arange(p, n)  # the whole second copy, its last query too (attention.heads' one definition)
    w[2, 1, q] = 0.0
    w[2, 1, q, q - p + 1] = 1.0  # … but layer 2 head 1 is an induction head
    ids = heads.repeated_random_ids(range(10, 100), p, 0)
    rh = model.real_heads(w, ids, top=2)
    assert rh.top_induction[0][:2] == (2, 1) and rh.top_induction[0][2] == 1.0
    assert rh.prefix_match.shape == (3, 2) and rh.previous_token[0, 0] == 1.0 and rh.prefix_match[0, 0] == 0.0
    assert rh.period == p and rh.n_tokens == n


def test_uniform_scores_are_the_scores_of_uniform_attention_on_the_first_batch():
    pm, prev = model.uniform_scores(TINY)
    n = TINY.n_ctx
    assert prev == pytest.approx(np.mean(1 / (np.arange(2, n) + 1)))  # rows 2 .. n-1, every sequence alike
    assert 1 / n < pm < 0.5  # one or two targets among the i + 1 keys of a row i >= 3


@pytest.mark.slow
def test_train_run_is_reproducible_and_keeps_what_the_page_draws():
    seen = []
    a = model.train_run(TINY, seen.append, every=50)
    b = model.train_run(TINY)
    assert np.array_equal(a.loss, b.loss) and np.array_equal(a.snapshots, b.snapshots)
    assert a.step.tolist() == list(range(101)) and a.snapshots.shape == (21, 2, 1, 12, 12)
    assert a.snapshot_steps.tolist() == list(TINY.snapshot_steps)
    assert [p.done_steps for p in seen] == [49, 99, 100]
    assert a.mechanism.knockout_accuracy.shape == (2, 1) and a.nbytes > a.snapshots.nbytes


@pytest.mark.slow
def test_untrained_attention_is_step_0():
    tokens, attention, period, pm, prev = model.untrained_attention(TINY)
    run = model.train_run(replace(TINY, steps=100))
    np.testing.assert_array_equal(attention, run.snapshots[0])
    np.testing.assert_allclose(pm, run.prefix_match[0]) and np.testing.assert_allclose(prev, run.previous_token[0])
    assert np.array_equal(tokens, run.probe) and period == run.probe_period


# --- the shared runs -----------------------------------------------------------------------------------------------
class CountingTrain:
    """A stand-in for ``model.train_run``: counts calls, waits for a release, returns a fake result."""

    def __init__(self, fail: bool = False):
        self.calls: list[RunSpec] = []
        self.release = threading.Event()
        self.fail = fail

    def __call__(self, spec, on_progress):
        self.calls.append(spec)
        on_progress(model.Progress(np.arange(3), np.ones(3), np.zeros(3), np.zeros(3)))
        assert self.release.wait(10)
        if self.fail:
            raise ValueError("boom")
        return fake_result(spec, np.full(spec.steps + 1, 0.1))


def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_thirty_sessions_asking_for_one_run_train_it_once():
    train = CountingTrain()
    runs = jobs.Jobs(train)
    spec = RunSpec(steps=100)
    entries = []
    threads = [threading.Thread(target=lambda: entries.append(runs.request(spec))) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(e) for e in entries}) == 1
    wait_until(lambda: runs.snapshot(entries[0])[1] is not None)
    assert runs.snapshot(entries[0])[0] == "training"
    train.release.set()
    wait_until(lambda: entries[0].state == "done")
    assert len(train.calls) == 1 and runs.trained == 1
    assert runs.get(spec).result.spec == spec


def test_the_queue_is_bounded_and_failures_are_reported_then_retried():
    train = CountingTrain(fail=True)
    runs = jobs.Jobs(train, max_pending=2)
    a, b, c = (RunSpec(seed=s, steps=100) for s in range(3))
    runs.request(a)
    runs.request(b)
    with pytest.raises(jobs.BusyError):
        runs.request(c)
    assert runs.ahead_of(b) >= 1
    train.release.set()
    wait_until(lambda: runs.get(a).finished and runs.get(b).finished)
    assert runs.get(a).state == "failed" and "ValueError: boom" in runs.get(a).error
    train.fail = False
    assert runs.request(a).state in ("queued", "training")  # a failed run is trained again on request
    wait_until(lambda: runs.get(a).state == "done")


def test_finished_runs_are_bounded_by_count_bytes_and_time():
    train = CountingTrain()
    train.release.set()
    runs = jobs.Jobs(train, max_finished=2, ttl=60)
    specs = [RunSpec(seed=s, steps=100) for s in range(3)]
    for s in specs:
        runs.request(s)
        wait_until(lambda s=s: runs.get(s) is not None and runs.get(s).state == "done")
    assert runs.get(specs[0]) is None and runs.get(specs[2]) is not None  # the least recently used went first
    one = runs.get(specs[2]).result.nbytes
    runs.max_bytes = one
    runs.request(RunSpec(seed=9, steps=100))
    wait_until(lambda: runs.get(RunSpec(seed=9, steps=100)) is not None
               and runs.get(RunSpec(seed=9, steps=100)).state == "done")
    assert runs.nbytes() <= one
    runs.ttl = 0.0
    time.sleep(0.01)
    assert runs.get(RunSpec(seed=9, steps=100)) is None


@pytest.mark.slow
def test_smollm2s_top_induction_head_is_layer_18_head_6():
    """The bridge's claim on SmolLM2 itself (moved from test_page.py, whose page run now recomputes the heads on the
    door's model): on the default seed's repeated random run, its top prefix-matching head is layer 18 head 6."""
    from explorer.shell import llm
    from tests.core.llama_support import real_model

    lm = real_model()
    ids = heads.repeated_random_ids(llm.word_ids(lm), 20, training_lesson.CONTROLS["seed"].default)
    rh = model.real_heads(lm.forward(list(ids)).attentions, ids)
    assert rh.top_induction[0][:2] == (18, 6)
