"""The model's weights mode follows the host's memory (issue 26, item 8): a faked cgroup limit, no real container.

``attention.llama.memory.CGROUP_LIMIT_FILES`` is pointed at files in ``tmp_path`` and the machine's RAM
(``os.sysconf``) is faked, so every case reads exactly what the test wrote.
"""

from __future__ import annotations

import os

import pytest

from attention import llama
from explorer.shell import llm

GiB = 2**30
V1_UNLIMITED = "9223372036854771712"  # what cgroup v1 writes when there is no limit (2**63 rounded to a page)


@pytest.fixture
def host(monkeypatch, tmp_path):
    """``host(v2=..., v1=..., ram=...)``: the cgroup v2 and v1 files (text, bytes, or None for no file) and the
    machine's RAM in bytes (None: ``os.sysconf`` cannot tell)."""
    monkeypatch.delenv(llama.WEIGHTS_ENV, raising=False)
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory" / "memory.limit_in_bytes"
    monkeypatch.setattr(llama.memory, "CGROUP_LIMIT_FILES", (v2, v1))
    monkeypatch.setattr(llama.memory, "CGROUP_USAGE_FILES", (tmp_path / "memory.current",))  # none: nothing used yet
    real_sysconf = os.sysconf

    def make(v2_text: str | bytes | None = None, v1_text: str | bytes | None = None, ram: int | None = 16 * GiB):
        for path, text in ((v2, v2_text), (v1, v1_text)):
            if path.exists():
                path.unlink()
            if text is not None:
                path.parent.mkdir(exist_ok=True)
                (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)

        def sysconf(name):
            if name in ("SC_PAGE_SIZE", "SC_PHYS_PAGES"):
                if ram is None:
                    raise ValueError("unsupported")
                return 4096 if name == "SC_PAGE_SIZE" else ram // 4096
            return real_sysconf(name)

        monkeypatch.setattr(os, "sysconf", sysconf)

    return make


def test_cgroup_v2_max_means_no_limit_so_the_ram_decides(host):
    host(v2_text="max\n", ram=16 * GiB)
    assert llm.memory_limit_bytes() == 16 * GiB
    assert llm.weights_mode() == "float32"
    host(v2_text="max\n", ram=GiB)  # a small machine without a container limit
    assert llm.memory_limit_bytes() == GiB
    assert llm.weights_mode() == "compact"


def test_cgroup_v2_limit_below_2_gib_picks_the_compact_weights(host):
    host(v2_text=f"{GiB}\n")  # Community Cloud's low end is about 0.7 GB
    assert llm.memory_limit_bytes() == GiB
    assert llm.weights_mode() == "compact"
    host(v2_text=str(llm.COMPACT_BELOW_BYTES - 1))
    assert llm.weights_mode() == "compact"


def test_cgroup_v2_limit_of_2_gib_or_more_keeps_float32(host):
    host(v2_text=str(llm.COMPACT_BELOW_BYTES))
    assert llm.weights_mode() == "float32"
    host(v2_text=f"{3 * GiB}\n")
    assert llm.memory_limit_bytes() == 3 * GiB
    assert llm.weights_mode() == "float32"


def test_a_cgroup_limit_above_the_ram_is_the_ram(host):
    host(v2_text=str(64 * GiB), ram=GiB)
    assert llm.memory_limit_bytes() == GiB
    assert llm.weights_mode() == "compact"


def test_cgroup_v1_file(host):
    host(v1_text=f"{int(1.5 * GiB)}\n")  # no v2 file: a v1 host
    assert llm.memory_limit_bytes() == int(1.5 * GiB)
    assert llm.weights_mode() == "compact"
    host(v1_text=V1_UNLIMITED + "\n", ram=16 * GiB)  # v1's "no limit"
    assert llm.memory_limit_bytes() == 16 * GiB
    assert llm.weights_mode() == "float32"


def test_v2_wins_over_v1(host):
    host(v2_text=str(GiB), v1_text=str(8 * GiB))
    assert llm.memory_limit_bytes() == GiB


@pytest.mark.parametrize("garbage", ["", "abc", "-5", "1.5e9", "0x40000000", "1 GiB", "١٠٠٠٠٠٠٠٠٠",
                                     b"\xff\xfe\x00", "1073741824 max"])
def test_garbage_in_a_cgroup_file_is_skipped(host, garbage):
    host(v2_text=garbage, ram=16 * GiB)  # nothing usable: the RAM decides
    assert llm.memory_limit_bytes() == 16 * GiB
    assert llm.weights_mode() == "float32"
    host(v2_text=garbage, v1_text=str(GiB))  # the next file is read
    assert llm.memory_limit_bytes() == GiB
    assert llm.weights_mode() == "compact"


def test_nothing_readable(host):
    host(ram=None)
    assert llm.memory_limit_bytes() is None
    assert llm.weights_mode() == "float32"
    host(v2_text=str(GiB), ram=None)  # a limit without the RAM is still the limit
    assert llm.memory_limit_bytes() == GiB
    assert llm.weights_mode() == "compact"


def test_the_environment_overrides_the_limit(host, monkeypatch):
    host(v2_text=str(GiB))
    monkeypatch.setenv(llama.WEIGHTS_ENV, "float32")
    assert llm.weights_mode() == "float32"
    host(v2_text="max", ram=64 * GiB)
    monkeypatch.setenv(llama.WEIGHTS_ENV, " Compact ")
    assert llm.weights_mode() == "compact"
    monkeypatch.setenv(llama.WEIGHTS_ENV, "")  # empty: as if not set
    assert llm.weights_mode() == "float32"


def test_a_bad_environment_value_is_named_by_the_loader(host, monkeypatch):
    host(v2_text=str(GiB))
    monkeypatch.setenv(llama.WEIGHTS_ENV, "bfloat16")
    assert llm.weights_mode() == "bfloat16"
    with pytest.raises(ValueError, match="bfloat16"):
        llama.load(weights=llm.weights_mode())


@pytest.mark.slow
def test_a_small_container_loads_the_compact_weights(host):
    """What a 1 GB Community Cloud app gets: the compact weights, about a quarter of float32's bytes."""
    host(v2_text=str(GiB))
    model = llama.load(weights=llm.weights_mode())
    assert model.weights_mode == "compact"
    assert model.nbytes < 200 * 2**20
    host(v2_text="max", ram=16 * GiB)
    assert llm.weights_mode() == "float32"
