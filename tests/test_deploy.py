"""The container image and the HAProxy deployment stay in step with README (issue 21).

No container registry is reachable here, so the image is not built: these tests read the ``Dockerfile`` and
check that it installs exactly README's requirements and runs exactly README's command. The HAProxy
configuration is checked by HAProxy itself (``haproxy -c``, Debian's package; ``.ci/run`` installs it): the
shared policy ``deploy/haproxy.cfg`` with the compose server list and with the list ``deploy/run_local.sh``
writes. The replicas themselves run in ``tests/deploy/test_replicas.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DEPLOY = ROOT / "deploy"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def readme_run_command() -> tuple[list[list[str]], list[str]]:
    """README's "Run it" install-and-start line: its pip installs and its ``streamlit run`` command, as argv lists."""
    run_section = README.split("## Run it", 1)[1].split("\n## ", 1)[0]
    lines = [line for block in re.findall(r"```bash\n(.*?)\n```", run_section, flags=re.S)
             for line in block.splitlines() if "streamlit run" in line]
    assert len(lines) == 1, f"README's Run it section should have one line with `streamlit run`: {lines}"
    commands = [shlex.split(part) for part in lines[0].split("&&")]
    installs = [c for c in commands if c[:4] == ["python", "-m", "pip", "install"]]
    starts = [c for c in commands if c[:2] == ["streamlit", "run"]]
    assert installs and len(starts) == 1 and len(installs) + 1 == len(commands), commands
    return installs, starts[0]


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions ``(KEYWORD, arguments)``, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, args = line.strip().partition(" ")
            out.append((keyword.upper(), args.strip()))
    return out


def test_the_image_installs_exactly_readmes_requirements():
    installs, _ = readme_run_command()
    steps = dockerfile()
    pip = [shlex.split(part) for keyword, args in steps if keyword == "RUN" for part in args.split("&&")
           if "pip" in part]
    # Only README's installs, in README's order (the pip options that change no package, such as
    # --no-cache-dir, go in the environment: PIP_NO_CACHE_DIR).
    assert pip == installs, f"Dockerfile installs {pip}, README {installs}"
    copies = [shlex.split(args) for keyword, args in steps if keyword == "COPY"]
    first_install = next(i for i, (k, a) in enumerate(steps) if k == "RUN" and "pip" in a)
    copied_before = [c for i, (k, a) in enumerate(steps) if k == "COPY" and i < first_install
                     for c in shlex.split(a)[:-1]]
    for command in installs:
        for i, arg in enumerate(command):
            if arg == "-r":
                assert command[i + 1] in copied_before, f"{command[i + 1]} is not copied before it is installed"
    # The app's code and config are in the image (everything streamlit_app.py imports from this repository).
    sources = {s.rstrip("/") for c in copies for s in c[:-1]}
    assert {"streamlit_app.py", "attention", "explorer", ".streamlit", "requirements.txt"} <= sources, sources


def test_the_image_runs_exactly_readmes_command():
    _, start = readme_run_command()
    steps = dockerfile()
    cmds = [args for keyword, args in steps if keyword == "CMD"]
    assert len(cmds) == 1 and not any(k == "ENTRYPOINT" for k, _ in steps), steps
    assert json.loads(cmds[0]) == start, f"CMD {cmds[0]} is not README's {start}"


def test_the_image_is_slim_python_311_runs_as_a_user_and_checks_its_health():
    steps = dockerfile()
    assert steps[0][0] == "FROM" and re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", steps[0][1]), steps[0]
    users = [args for keyword, args in steps if keyword == "USER"]
    assert users and users[-1] not in ("root", "0"), users
    env = " ".join(args for keyword, args in steps if keyword == "ENV")
    assert re.search(r"\bSTREAMLIT_SERVER_PORT=\d+", env), "the port comes from STREAMLIT_SERVER_PORT"
    assert "STREAMLIT_SERVER_HEADLESS=true" in env
    health = [args for keyword, args in steps if keyword == "HEALTHCHECK"]
    assert len(health) == 1 and "/_stcore/health" in health[0] and "STREAMLIT_SERVER_PORT" in health[0], health


def test_the_build_context_keeps_out_what_the_app_does_not_run():
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert ignore[ignore.index("**")] == "**" and "!tests/" not in ignore  # an allowlist: only what is named
    for needed in ("requirements.txt", "streamlit_app.py", ".streamlit/", "attention/", "explorer/"):
        assert f"!{needed}" in ignore, needed


def haproxy_check(*configs: Path) -> subprocess.CompletedProcess:
    assert Path(HAPROXY).exists(), "haproxy is not installed: apt-get install haproxy (.ci/run does)"
    env = {**os.environ, "HAPROXY_BIND": "127.0.0.1:65000", "HAPROXY_COOKIE_KEY": "test"}
    args = [HAPROXY, "-c"] + [a for c in configs for a in ("-f", str(c))]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.parametrize("servers", ["compose", "local"])
def test_haproxy_accepts_the_shared_policy_with_each_server_list(servers, tmp_path):
    if servers == "compose":
        server_list = DEPLOY / "servers.compose.cfg"
    else:  # what run_local.sh writes for 2 replicas
        server_list = tmp_path / "servers.cfg"
        server_list.write_text("backend replicas\n    server app1 127.0.0.1:8501\n    server app2 127.0.0.1:8502\n")
    result = haproxy_check(DEPLOY / "haproxy.cfg", server_list)
    said = result.stdout + result.stderr
    assert result.returncode == 0 and "WARNING" not in said.upper(), said


def test_the_policy_is_sticky_passes_websockets_and_checks_every_replica():
    cfg = (DEPLOY / "haproxy.cfg").read_text(encoding="utf-8")
    directives = [line.split("#", 1)[0].strip() for line in cfg.splitlines()]
    assert any(re.match(r"cookie \S+ insert .*\bdynamic\b", d) for d in directives), "cookie stickiness"
    assert "timeout tunnel 1h" in directives, "websockets: an idle session's connection is kept"
    assert "option httpchk GET /_stcore/health" in directives
    assert any(d.startswith("default-server check") for d in directives), "a health check on every server"
    assert any(d.startswith("option redispatch") for d in directives), "a dead replica's requests go elsewhere"
    # Policy lives in haproxy.cfg; the server lists hold servers only (so both deployments share it).
    compose_servers = (DEPLOY / "servers.compose.cfg").read_text(encoding="utf-8")
    assert "cookie" not in compose_servers and "check" not in compose_servers.replace("init-addr", "")


def test_compose_and_run_local_use_the_same_haproxy_cfg():
    compose = (DEPLOY / "compose.yaml").read_text(encoding="utf-8")
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg" in compose
    assert "./servers.compose.cfg:/usr/local/etc/haproxy/servers.cfg" in compose
    assert re.search(r"context: \.\.\n\s+dockerfile: Dockerfile", compose)
    script = (DEPLOY / "run_local.sh").read_text(encoding="utf-8")
    assert script.count('-f "$ROOT/deploy/haproxy.cfg" -f "$RUN_DIR/servers.cfg"') == 2  # checked, then run
    assert "trap cleanup EXIT" in script
    assert subprocess.run(["bash", "-n", str(DEPLOY / "run_local.sh")], capture_output=True).returncode == 0
    # The replicas run README's command (plus the options a server behind a proxy needs).
    _, start = readme_run_command()
    assert f'-m {" ".join(start)} \\' in script


def test_ci_installs_haproxy():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"apt-get install .*\bhaproxy\b", ci), "the replica tests need Debian's haproxy"


# --- nothing assumes a single process -------------------------------------------------------------------------
# Module-level state that functions change, in the app's modules (a page file runs afresh on every script run, so
# its module-level names are per run). Each entry is process bookkeeping that is right per replica; anything
# else would be state one process keeps for every learner, which a second replica would not see.
PER_PROCESS_STATE = {
    ("attention/blocked.py", "_pool"): "the worker threads of the blocked path, started once per process",
    ("attention/llama/gguf_file.py", "_VERIFIED"): "the weights file's SHA-256 was checked (once per process and file)",
    ("explorer/shell/blas.py", "_once_done"): "BLAS threads set for this process (OpenBLAS: one setting per process)",
    ("explorer/shell/llm.py", "_LOADED"): "which models this process's door holds, least recently used first (the "
                                         "loaded models are shared by every session of the process)",
    ("explorer/shell/cache.py", "_last_run"): "the last script run of this process, for its own idle cache sweep",
    ("explorer/shell/cache.py", "_sweeper"): "the thread of this process's idle cache sweep",
    ("explorer/shell/models.py", "_CACHE"): "each catalogued file's hash and header facts, keyed by path, size and "
                                            "mtime: the operator's files, the same for every learner (no visitor "
                                            "input reaches its keys)",
}
MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "add", "discard",
            "remove", "__setitem__"}


def module_state_changed_by_functions(path: Path) -> set[str]:
    """Names bound at module level that a function of the module rebinds (``global``) or mutates in place
    (``NAME[...] = …``, ``del NAME[...]``, ``NAME.append(…)`` and the other container mutators)."""
    import ast

    text = path.read_text(encoding="utf-8")
    # Parsing every module costs most of the time: first a textual look for a candidate at all.
    names = re.findall(r"^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", text, flags=re.M)
    listed = "|".join(map(re.escape, names))
    mutators = "|".join(MUTATORS)
    mutation = re.compile(rf"\b({listed})(\[[^\n]*\]\s*[-+*/|&^%@]?=(?!=)|\.({mutators})\()|\bdel ({listed})\[")
    if "global " not in text and not (names and mutation.search(text)):
        return set()
    tree = ast.parse(text)
    module_names = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    if isinstance(t, ast.Name)}
    changed = set()
    for top in tree.body:  # the functions and classes (their methods and nested functions are walked with them)
        if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Global):
                changed |= set(node.names)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del) \
                    and isinstance(node.value, ast.Name):
                changed.add(node.value.id)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name):
                changed.add(node.func.value.id)
    return changed & module_names


@pytest.mark.slow
def test_no_module_state_is_shared_by_learners_beyond_per_process_bookkeeping():
    found = {}
    for path in sorted([*ROOT.glob("attention/**/*.py"), *ROOT.glob("explorer/**/*.py")]):
        if path.name == "page.py":
            continue
        for name in module_state_changed_by_functions(path):
            found[(path.relative_to(ROOT).as_posix(), name)] = PER_PROCESS_STATE.get(
                (path.relative_to(ROOT).as_posix(), name), "NOT REVIEWED")
    unreviewed = {k: v for k, v in found.items() if v == "NOT REVIEWED"}
    assert not unreviewed, ("module-level state changed at run time: keep per-learner state in st.session_state, "
                            f"or add it to PER_PROCESS_STATE with why one copy per process is right: {unreviewed}")
    assert set(found) == set(PER_PROCESS_STATE), f"gone from the code: {set(PER_PROCESS_STATE) - set(found)}"


def test_the_module_state_check_sees_a_shared_dict_a_global_and_an_augmented_item(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("SEEN = {}\nCOUNT = 0\nHITS: dict = {}\nCONST = {'a': 1}\n\n"
                      "def f(k):\n    global COUNT\n    COUNT = 1\n    SEEN[k] = 1\n\n"
                      "class C:\n    def g(self):\n        HITS['x'] += 1\n        return CONST['a']\n")
    assert module_state_changed_by_functions(module) == {"SEEN", "COUNT", "HITS"}


def test_a_visitor_never_sees_a_traceback():
    """Every deployment (the image copies ``.streamlit/``; Community Cloud reads it) shows an uncaught exception's type
    and Streamlit's generic text only: no message, no traceback with server paths (Streamlit's option text: "type")."""
    import tomllib

    from streamlit import config

    client = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))["client"]
    assert client.get("showErrorDetails") == config.ShowErrorDetailsConfigOptions.TYPE
