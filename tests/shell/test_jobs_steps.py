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


def _each_script():
    import streamlit as st

    from explorer.shell import jobs

    done = jobs.each(lambda x: x * x, [1, 2, 3], lambda i, x: f"item {i}: {x}", "starting", "squared")
    st.write(str(done))


def _each_stopped_script():
    import streamlit as st

    from explorer.shell import jobs

    def work(x):
        if x == 3:
            st.stop()  # the run ends before the third item: the bar shows that item
        return x

    jobs.each(work, [1, 2, 3, 4], lambda i, x: f"item {i}: {x}", "starting")


def test_each_returns_every_result_in_order_and_names_each_item_before_it_runs():
    at = AppTest.from_function(_each_script).run()
    assert not at.exception and at.markdown[0].value == "(1, 4, 9)"
    (bar,) = at.get("progress")
    assert (bar.proto.value, bar.proto.text) == (100, "squared")
    at = AppTest.from_function(_each_stopped_script).run()
    (bar,) = at.get("progress")
    assert (bar.proto.value, bar.proto.text) == (50, "item 2: 3")
