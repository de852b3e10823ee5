"""Install to first injection, with the real Claude Code, on a machine with nothing to build.

A container of the project's Debian base image plus what a user's machine has anyway (curl, CA
certificates, git) and nothing else: no Rust, no C toolchain, no uv, no Python. The pinned Claude
Code CLI is copied in; the plugin is added from a marketplace and installed with `claude plugin`;
its release archive (made by scripts/dist.sh, pinned in the plugin's dist.lock) is served over HTTP
by a local server (`WT_TOOLS_DIST_BASE`); the model behind the Messages API is the scripted one of
tests/claude/mock_api.py. Then real `claude -p` sessions:

1. the first asks the agent to remember a decision (the MCP `remember` tool, whose server's first
   start downloads and unpacks the archive); what the agent is told at SessionStart meanwhile is
   recorded;
2. the second asks a question whose answer is that decision: its prompt must carry the memory.

Measured: seconds from `plugin install` until the second session's prompt reaches the model with
the memory (target: at most 30 s on the CI machine), written to $WT_INSTALL_TIMING (JSON) and
printed. Run by .ci/integration.sh (it needs Docker and the base image of .ci/images.sh).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "claude"))

import harness  # noqa: E402
from harness import context_text, last_tool_result, system_messages, tool_use_ids  # noqa: E402
from mock_api import MockApi, last_user_message, tool_result_text, tool_results  # noqa: E402

REPO = harness.REPO
BASE_IMAGE = os.environ.get("WT_BASE_IMAGE", "debian:bookworm-slim")
USER_IMAGE = "wt-tools-user-machine:latest"
PREFIX = harness.MCP_PREFIX["plugin"]
DECISION = "We deploy with blue-green releases behind the load balancer, never in place"
QUESTION = "How do we deploy the service to production?"
TARGET_SECONDS = 30.0


def need(ok: bool, why: str) -> None:
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why} (CI=true: this test may not skip)", pytrace=False)
        pytest.skip(why)


def docker(*args: str, check: bool = True, timeout: float = 300, input: str | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p


def user_machine_image() -> str:
    """The base image with curl, CA certificates and git: a user's machine, no build tools."""
    if docker("image", "inspect", USER_IMAGE, check=False).returncode == 0:
        return USER_IMAGE
    need(docker("image", "inspect", BASE_IMAGE, check=False).returncode == 0, f"no {BASE_IMAGE} image: run .ci/images.sh base")
    dockerfile = (
        f"FROM {BASE_IMAGE}\n"
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        "curl ca-certificates git >/dev/null && rm -rf /var/lib/apt/lists/*\n"
    )
    docker("build", "-q", "-t", USER_IMAGE, "-", input=dockerfile, timeout=600)
    return USER_IMAGE


class Files:
    """A static file server on 127.0.0.1 (the release archives), in a thread."""

    def __init__(self, root: Path):
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
        handler.log_message = lambda *a, **k: None  # type: ignore[assignment]
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def machine(tmp_path):
    need(shutil.which("docker") is not None and docker("info", check=False).returncode == 0, "no Docker daemon")
    claude = harness.claude_bin()
    need(claude is not None, "WT_CLAUDE_BIN is unset: `. scripts/deps.sh` installs the pinned CLI")
    bins = harness.bin_dir()
    need(not harness.missing_programs(bins), f"{bins} lacks our programs: build them first")
    model = harness.model_package_dir()
    need(model is not None, "no model: run `wt-memory setup`")
    image = user_machine_image()

    # The marketplace: this checkout's plugin, its lock pinning the archive built here.
    mkt = tmp_path / "marketplace"
    shutil.copytree(REPO / ".claude-plugin", mkt / ".claude-plugin")
    shutil.copytree(REPO / "plugin", mkt / "plugin")
    dist = tmp_path / "dist"
    p = subprocess.run(
        [str(REPO / "scripts/dist.sh"), "--out", str(dist), "--bin-dir", str(bins), "--shodh-dir", str(model), "--lock", str(mkt / "plugin/dist.lock")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, f"scripts/dist.sh failed: {p.stderr}"
    archive = next(dist.glob("*.tar.gz"))

    home, repo = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("a service\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    harness.onboard(home, repo)
    files = Files(dist)
    with MockApi(log_path=tmp_path / "api.jsonl") as api:
        name = f"wt-install-{os.getpid()}-{int(time.time())}"
        docker(
            "run", "-d", "--rm", "--name", name, "--network", "host",
            "-v", f"{tmp_path}:{tmp_path}", "-v", f"{claude}:/usr/local/bin/claude:ro",
            "-w", str(repo), image, "sleep", "900",
        )  # fmt: skip
        try:
            yield Machine(name, tmp_path, home, repo, mkt, api, files.url, archive)
        finally:
            docker("rm", "-f", name, check=False)
            files.close()
            # The container wrote as root into the mounted folder: hand it back.
            subprocess.run(["chmod", "-R", "u+rwX", str(tmp_path)], check=False)


class Machine:
    def __init__(self, name, root, home, repo, mkt, api, dist_url, archive):
        self.name, self.root, self.home, self.repo, self.mkt = name, root, home, repo, mkt
        self.api, self.dist_url, self.archive = api, dist_url, archive
        self.runs = 0

    def env(self) -> list[str]:
        env = {
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "WT_TOOLS_DIST_BASE": self.dist_url,
        }
        return [a for k, v in env.items() for a in ("-e", f"{k}={v}")]

    def sh(self, script: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return docker("exec", *self.env(), "-w", str(self.repo), self.name, "sh", "-c", script, check=False, timeout=timeout)

    def claude(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return docker("exec", *self.env(), "-w", str(self.repo), self.name, "claude", *args, check=False, timeout=timeout)

    def session(self, prompt: str, script: list) -> tuple[subprocess.CompletedProcess, list[dict], Path]:
        self.api.set_script(script)
        self.runs += 1
        debug = self.root / f"debug-{self.runs}.txt"
        seen = len(self.api.requests())
        p = self.claude("-p", prompt, "--debug-file", str(debug), "--allowedTools", PREFIX.rstrip("_"))
        messages = [r for r in self.api.requests()[seen:] if r["path"] == "/v1/messages" and harness.MAIN_MODEL in str(r["body"].get("model", ""))]
        return p, messages, debug


def test_plugin_install_to_first_injection_with_nothing_to_build(machine):
    m = machine
    tools = m.sh("for t in cargo rustc cc gcc c++ python3 python uv; do command -v $t; done; true").stdout.split()
    assert tools == [], f"the user's machine has build tools: {tools}"

    start = time.time()
    for args in (("plugin", "marketplace", "add", str(m.mkt)), ("plugin", "install", "wt-tools@wt-tools")):
        p = m.claude(*args)
        assert p.returncode == 0, f"claude {' '.join(args)}: {p.stdout}\n{p.stderr}"
    installed = time.time()

    remember = [
        {"when": {"last_is_tool_result": False}, "reply": {"text": "Saving it.", "tool_use": {"name": PREFIX + "remember", "input": {"content": DECISION, "type": "Decision", "keys": [QUESTION]}}}},
        {"when": {"last_is_tool_result": True}, "reply": {"text": "Remembered."}},
    ]
    p1, first_session, debug1 = m.session("Remember this: we deploy with blue-green releases, never in place.", remember)
    assert p1.returncode == 0, f"{p1.stdout}\n{p1.stderr}\n{debug1.read_text(errors='replace')[-3000:]}"
    assert first_session, "the first session sent no request"
    told = "\n".join(system_messages(first_session[0])) or context_text(first_session[0])
    session_start = told.split("SessionStart hook additional context:", 1)[1].strip().split("\n\n")[0][:400] if "SessionStart hook additional context:" in told else ""
    saved = [
        r
        for r in first_session
        if any(b.get("tool_use_id") in tool_use_ids(r["body"], PREFIX + "remember") for b in tool_results(last_user_message(r["body"])))
    ]
    assert saved, f"the agent's remember call never came back:\n{debug1.read_text(errors='replace')[-3000:]}"
    result = last_tool_result(saved[0])
    assert not result.get("is_error"), f"remember failed: {tool_result_text(result)}"
    first_done = time.time()

    answer = [{"when": {"last_is_tool_result": False}, "reply": {"text": "Blue-green, behind the load balancer."}}]
    p2, second_session, debug2 = m.session(QUESTION, answer)
    assert p2.returncode == 0, f"{p2.stdout}\n{p2.stderr}"
    assert second_session, "the second session sent no request"
    context = "\n".join(system_messages(second_session[0])) or context_text(second_session[0])
    assert "UserPromptSubmit hook additional context:" in context, debug2.read_text(errors="replace")[-3000:]
    prompt_part = context.split("UserPromptSubmit hook additional context:", 1)[1]
    assert "blue-green" in prompt_part, prompt_part[:2000]
    injected_at = second_session[0]["ts"]

    unpacked = m.sh("ls -d \"$HOME\"/.claude/plugins/data/*/dist/*/*/bin/wt-memory").stdout.strip()
    assert unpacked, "the archive was not unpacked in the plugin's data folder"
    timing = {
        "archive": m.archive.name,
        "archive_mb": round(m.archive.stat().st_size / 1e6, 1),
        "install_s": round(installed - start, 1),
        "first_session_s": round(first_done - installed, 1),
        "install_to_injection_s": round(injected_at - installed, 1),
        "first_session_told_at_start": session_start.strip(),
    }
    print("install timing:", json.dumps(timing))
    out = os.environ.get("WT_INSTALL_TIMING")
    if out:
        Path(out).write_text(json.dumps(timing, indent=2) + "\n")
    assert timing["install_to_injection_s"] <= TARGET_SECONDS, timing
