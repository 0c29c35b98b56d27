"""The charts package's public API (explorer/shell/charts/__init__.py): what ``from explorer.shell import charts``
offers the lessons. That lessons use nothing else is checked in ``tests/test_imports.py``."""

import inspect

import plotly.io as pio

from explorer.shell import charts
from explorer.shell.charts import geometry
from tests.test_imports import charts_all


def test_the_public_api_is_exported_and_documented():
    assert charts_all() == set(charts.__all__)  # what tests/test_imports.py reads is what the package exports
    assert len(set(charts.__all__)) == len(charts.__all__)
    for name in charts.__all__:
        obj = getattr(charts, name)
        if callable(obj):
            assert inspect.getdoc(obj), f"charts.{name} is public: it needs a docstring"
    for name in ("heatmap", "weights_bar", "paired_bars", "COLOR_SCALES", "escape_label"):
        assert name in charts.__all__


def test_public_geometry_says_so():
    """A geometry function lessons may use says in its docstring that it is public; the inside is not exported."""
    for name, obj in vars(geometry).items():
        if inspect.isfunction(obj) and obj.__module__ == geometry.__name__:
            assert ("Public" in inspect.getdoc(obj)) == (name in charts.__all__), name
    assert not {"AXIS_PAD_PX", "UPRIGHT_X_PX", "label_px", "theme_text_px", "position_ticks"} & set(charts.__all__)


def test_importing_the_charts_sets_the_json_encoder():
    """(``plotly_fast``'s ``to_dict``, also installed here, is checked in ``tests/shell/test_plotly_fast.py``.)"""
    assert pio.json.config.default_engine == "json"  # orjson leaked memory on the heat maps' object arrays
