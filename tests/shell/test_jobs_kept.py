"""Results a class shares (issue 47, item 2): a registry keeps a result computed in a script run as a finished job,
for its ttl after its last use (not after it was stored), the pinned ones (the default inputs') past the ttl and
last under the bounds; its clock is the test's to move."""

from __future__ import annotations

from explorer.shell import jobs, textviews


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def registry(**bounds) -> tuple[jobs.Jobs, Clock]:
    clock = Clock()
    return jobs.Jobs(None, ttl=60, clock=clock, pin=lambda key: key == "default", **bounds), clock


def test_a_kept_result_lives_its_ttl_after_its_last_use_not_after_it_was_stored():
    kept, clock = registry()
    kept.keep("a", 1)
    for _ in range(5):  # a learner's page reruns every 50 s for 250 s: each rerun uses it
        clock.now += 50
        assert kept.get("a").result == 1
    clock.now += 61  # then nobody looks at it for more than the ttl
    assert kept.get("a") is None


def test_the_default_inputs_result_is_pinned_past_the_ttl_and_dropped_last():
    kept, clock = registry(max_finished=2)
    kept.keep("default", "shared")
    kept.keep("b", 2)
    clock.now += 10_000
    assert kept.get("b") is None and kept.get("default").result == "shared"
    kept.keep("c", 3)
    kept.keep("d", 4)  # beyond max_finished: the least recently used unpinned one goes first
    assert kept.get("default") is not None and kept.get("c") is None and kept.get("d").result == 4


def test_an_estimate_counts_passes_of_the_timed_pass_flat_up_to_64_tokens():
    from explorer.shell import llm

    assert llm.pass_seconds(0.3, 5, 40) == 0.3  # a short pass costs about the same: its fixed work dominates
    assert llm.pass_seconds(0.3, 5, 128) == 0.6
    assert [textviews.passes_time(k, 0.3) for k in (1, 7, 60, 600)] == ["under a second", "about 2 s", "about 18 s",
                                                                    "about 3 min"]
