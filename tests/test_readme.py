"""README stays true: its Python example runs, and .ci/run calls its test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_ci_runs_the_readme_test_command():
    test_section = README.split("## Test it", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", test_section, flags=re.S).group(1).strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command in ci.splitlines(), f"{command!r} not in .ci/run"
    run_section = README.split("## Run it", 1)[1]
    assert "streamlit run streamlit_app.py" in re.search(r"```bash\n(.*?)\n```", run_section, flags=re.S).group(1)


def test_golden_copy_is_current():
    """The repository's copy of the lessons' numbers equals the shared file (when it is there)."""
    import json

    import pytest

    from tests.conftest import GOLDEN_COPY, GOLDEN_SHARED

    if not GOLDEN_SHARED.is_file():
        pytest.skip(f"no shared golden file at {GOLDEN_SHARED} to compare the copy with")
    assert json.loads(GOLDEN_COPY.read_text(encoding="utf-8")) == json.loads(GOLDEN_SHARED.read_text(encoding="utf-8"))
