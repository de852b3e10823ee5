"""Fixtures for tests/claude: the pinned Claude Code CLI, our programs, the scripted API, worlds.

Run: `. scripts/deps.sh && python3 -m pytest tests/claude -q` (deps.sh exports WT_CLAUDE_BIN).
Without WT_CLAUDE_BIN the tests skip, except under CI=true, where they fail. Without our
programs in $WT_BIN_DIR (default target/debug) the tests that need them skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from mock_api import MockApi  # noqa: E402

# First-request sizes measured by the tests, printed at the end of the run (not asserted).
MEASURED: dict[str, dict] = {}


@pytest.fixture(scope="session")
def claude() -> Path:
    c = harness.claude_bin()
    if c is None:
        why = (
            "WT_CLAUDE_BIN is unset or not executable: `. scripts/deps.sh` installs the pinned "
            "Claude Code 2.1.332 and exports it"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return c


@pytest.fixture(scope="session")
def bins() -> Path:
    d = harness.bin_dir()
    missing = harness.missing_programs(d)
    if missing:
        pytest.skip(f"{d} lacks {', '.join(missing)}: build them (`cargo build`) or set WT_BIN_DIR")
    # The embedding model, once (a no-op when `wt-memory setup` already ran).
    if harness.model_package_dir() is None:
        p = subprocess.run([str(d / "wt-memory"), "setup"], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"wt-memory setup failed: {p.stderr}"
    return d


@pytest.fixture
def api(tmp_path):
    with MockApi(log_path=tmp_path / "api.jsonl") as a:
        yield a


@pytest.fixture
def world(tmp_path, api, claude):
    """`world(wiring=None|"init"|"plugin", bins=...)`: a fresh World (several share one API)."""
    made: list[harness.World] = []

    def make(wiring: str | None = None, bins: Path | None = None) -> harness.World:
        w = harness.World(tmp_path / f"world{len(made)}", api, claude, bins)
        made.append(w)
        if wiring == "init":
            w.wire_init()
        elif wiring == "plugin":
            w.wire_plugin()
        elif wiring is not None:
            raise ValueError(wiring)
        return w

    yield make
    for w in made:
        w.close()


def pytest_terminal_summary(terminalreporter):
    if not MEASURED:
        return
    tr = terminalreporter
    tr.section("first request to the API (bytes; measured, not asserted)")
    base = MEASURED.get("bare", {}).get("size")
    for name in ("bare", "init", "plugin"):
        m = MEASURED.get(name)
        if not m:
            continue
        extra = f" (+{m['size'] - base} over bare)" if base and name != "bare" else ""
        tr.write_line(
            f"{name:>6}: {m['size']:>7}{extra}; system {m['system']}, tools {m['tools']} "
            f"({m['n_tools']} tools), messages {m['messages']}"
        )
