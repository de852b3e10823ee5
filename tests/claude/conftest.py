"""Fixtures for tests/claude: the pinned Claude Code CLI, our programs, the scripted API, worlds.

Run: `. scripts/deps.sh && python3 -m pytest tests/claude -q -rs` (deps.sh exports WT_CLAUDE_BIN).
Without WT_CLAUDE_BIN, or without our programs in $WT_BIN_DIR (default target/debug), the tests
that need them skip. Under CI=true (`.ci/run`) nothing may skip: a missing CLI or program fails,
any skip is reported as a failure, and every test of both wirings (init and plugin) must pass,
as many as were collected for each (`pytest_sessionfinish`).
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

WIRINGS = ("init", "plugin")


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def _missing(why: str) -> None:
    """A prerequisite is missing: a failure under CI=true, where every real-CLI test must run."""
    if in_ci():
        pytest.fail(f"{why} (CI=true: the real-CLI tests may not skip)", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def claude() -> Path:
    c = harness.claude_bin()
    if c is None:
        _missing(
            "WT_CLAUDE_BIN is unset or not executable: `. scripts/deps.sh` installs the pinned "
            "Claude Code 2.1.332 and exports it (no pin for this platform: scripts/claude-cli.sh)"
        )
    return c


@pytest.fixture(scope="session")
def bins() -> Path:
    d = harness.bin_dir()
    missing = harness.missing_programs(d)
    if missing:
        _missing(f"{d} lacks {', '.join(missing)}: build them (`cargo build`) or set WT_BIN_DIR")
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skip, wherever it comes from, is a failure with its reason."""
    outcome = yield
    rep = outcome.get_result()
    if in_ci() and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"skipped under CI=true, where every real-CLI test must run: {reason}"


def _wiring_of(nodeid: str) -> str | None:
    for w in WIRINGS:
        if nodeid.endswith(f"[{w}]"):
            return w
    return None


def pytest_collection_finish(session):
    session.config._wt_collected = {
        w: sum(1 for item in session.items if _wiring_of(item.nodeid) == w) for w in WIRINGS
    }


def pytest_sessionfinish(session, exitstatus):
    """Under CI=true: every test collected for each wiring passed, and each wiring has tests."""
    if not in_ci():
        return
    tr = session.config.pluginmanager.get_plugin("terminalreporter")  # its stats: the reports
    collected = getattr(session.config, "_wt_collected", {})
    passed = {w: 0 for w in WIRINGS}
    for rep in (tr.stats.get("passed", []) if tr else []):
        w = _wiring_of(rep.nodeid)
        if w and rep.when == "call":
            passed[w] += 1
    # A run narrowed with -k/-m checks the wirings it selected; a whole run needs both.
    narrowed = bool(session.config.option.keyword or session.config.option.markexpr)
    bad = [
        f"{w}: {passed[w]} of {collected.get(w, 0)} passed"
        for w in WIRINGS
        if (collected.get(w, 0) == 0 and not narrowed) or passed[w] != collected.get(w, 0)
    ]
    counts = ", ".join(f"{w} {passed[w]}/{collected.get(w, 0)}" for w in WIRINGS)
    session.config._wt_wirings = [f"real Claude Code, per wiring (CI=true): {counts} passed"]
    if bad:
        session.config._wt_wirings.append(
            "FAILED: under CI=true every test of both wirings must pass: " + "; ".join(bad))
        if session.exitstatus == 0:
            session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, config):
    for line in getattr(config, "_wt_wirings", []):
        terminalreporter.write_line(line, red=line.startswith("FAILED"))
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
