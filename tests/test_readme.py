"""README stays true: its Python example runs, and .ci/run calls its test command."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
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
    run_section = README.split("## Run it", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", run_section, flags=re.S)
    assert any("streamlit run streamlit_app.py" in b for b in blocks), blocks
    assert "venv" in blocks[0] and "3.11" in run_section  # a virtual environment first, and the Python it needs


def test_a_local_run_opens_the_browser():
    """The config must not set server.headless: a learner's `streamlit run` opens the app in the browser
    (the e2e suite and CI pass --server.headless true themselves)."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert "headless" not in config.get("server", {})


# SHA-256 of the shared golden file's content (json.dumps(..., sort_keys=True)) when the copy was made.
GOLDEN_SHA256 = "cb9937250d37361f9a2dc3bdadfa63c3e5bd12ef687dbfddb7e9b9512ebe4174"


def _content_hash(path: Path) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(json.loads(path.read_text(encoding="utf-8")), sort_keys=True).encode()).hexdigest()


def test_golden_copy_is_current():
    """The repository's copy of the lessons' numbers is the shared file's content, byte for byte as JSON.

    Checked against the recorded hash, so it runs on a clone without ``shared/`` too; where the shared
    file is present it must still have that content (if the shared numbers change, copy them and update
    the hash).
    """
    from tests.conftest import GOLDEN_COPY, GOLDEN_SHARED

    assert _content_hash(GOLDEN_COPY) == GOLDEN_SHA256, "tests/data/lesson_examples.json was edited"
    if GOLDEN_SHARED.is_file():
        assert _content_hash(GOLDEN_SHARED) == GOLDEN_SHA256, "the shared golden file changed: copy it again"
