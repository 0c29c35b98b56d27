"""A position axis zoomed in keeps whole-number ticks readable (issue 30): between two tokens Plotly's automatic
ticks step by 0.5, and those labels are blank instead of a raw position such as "3.5" or "−0,5"."""

from __future__ import annotations

from explorer.shell.charts.geometry import position_ticks


def test_labels_between_positions_are_blank_and_positions_keep_their_tokens():
    labels = [f"tok{i}" for i in range(40)]
    ticks = position_ticks(labels, phone_ticks=range(0, 40, 8))
    alias = ticks["labelalias"]
    assert ticks["tickmode"] == "auto" and "nticks" not in ticks  # 5 would step by 10, a desktop's 10 by 5
    assert position_ticks(labels, phone_ticks=range(0, 40, 8), nticks=9)["nticks"] == 9  # by 5, as a desktop's
    assert all(alias[str(i)] == labels[i] for i in range(40))
    for text in ("3.5", "3,5", "39.5", "-0.5", "\u22120.5", "\u22120,5", "0.5"):
        assert alias[text] == "", text
    assert "40" not in alias


def test_a_chart_that_shows_every_label_names_each_position():
    ticks = position_ticks(["a", "b"], phone_ticks=[0, 1])
    assert ticks == {"tickmode": "array", "tickvals": [0, 1], "ticktext": ["a", "b"]}
