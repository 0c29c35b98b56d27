"""explorer.shell.jobs.in_steps: the one progress bar over a computation done in steps (the door's sweeps)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script():
    import streamlit as st

    from explorer.shell import jobs

    seen = []

    def work(*, progress):
        for finished in range(3):
            progress(finished + 1, 3)
            seen.append(finished)
        return "result"

    result = jobs.in_steps(work, lambda step: f"step {step}", "all done", first=1)
    st.write(result, len(seen))


def test_in_steps_returns_the_work_and_leaves_the_bar_full_saying_done():
    at = AppTest.from_function(_script).run()
    assert not at.exception
    (bar,) = at.get("progress")
    assert (bar.proto.value, bar.proto.text) == (100, "all done")
    assert "result" in at.markdown[0].value and "3" in at.markdown[0].value


def _stopped_script():
    import streamlit as st

    from explorer.shell import jobs

    def work(*, progress):
        progress(1, 4)
        st.stop()  # the run ends after the first of 4 steps: the bar shows what runs next

    jobs.in_steps(work, lambda step: f"block {step}", "all done")


def test_each_step_moves_the_bar_and_names_the_next_step():
    at = AppTest.from_function(_stopped_script).run()
    (bar,) = at.get("progress")
    assert (bar.proto.value, bar.proto.text) == (25, "block 1")
