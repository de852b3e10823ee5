"""A scripted Anthropic Messages API on loopback, for running the real Claude Code CLI in tests.

Python standard library only. It answers what Claude Code 2.1.332 asks of `ANTHROPIC_BASE_URL`:

- `POST /v1/messages` (with or without `?beta=true`): streaming SSE exactly in the API's event
  order (message_start, content_block_start/delta/stop per text or tool_use block, message_delta
  with stop_reason `end_turn` or `tool_use`, message_stop), or one JSON message when `stream` is
  false;
- `POST /v1/messages/count_tokens`: a plausible `input_tokens` (bytes / 4);
- anything else: 200 with `{}` (logged with `"unknown": true`, so a probe shows up in the log).

Every request is appended to a JSONL log: method, path, query, headers (keys redacted), the full
JSON body, its size in bytes, and which rule answered.

Turns are scripted as a list of rules, `{"when": {...}, "reply": {...}}`; the first rule whose
conditions all hold answers, else the default reply (text "ok"). Conditions (all optional; a
string condition may be a list, then every item must hold):

    model                 substring of the request's model (an exact name is a substring too)
    contains              substring of the JSON-serialised request body
    not_contains          not a substring of the serialised body
    last_contains         substring of the last user message's text (tool results included)
    last_is_tool_result   the last user message carries a tool_result block (bool)
    tool_result_contains  substring of the text of the last user message's tool_result blocks
    stream                the request streams (bool)
    times                 answer with this rule at most N times (counted since the script was set)

Replies: `{"text": "..."}`, `{"tool_use": {"name": "Bash", "input": {...}}}` (or a list of them
under `tool_use`), both together (text first, then the tool calls), or `{"content": [...]}` with
raw blocks. `stop_reason` is `tool_use` when the reply calls a tool, else `end_turn`.

A script is a JSON list of rules, or `{"rules": [...], "default": {...}}`; given as a file it is
re-read whenever the file changes.

    with MockApi([{"when": {"last_is_tool_result": False}, "reply": {"tool_use": {...}}}]) as api:
        ... ANTHROPIC_BASE_URL=api.url ...
        api.requests()            # every logged request, oldest first
        api.message_requests()    # only POST /v1/messages
        api.set_script([...])     # a new script (and fresh `times` counters)
"""

from __future__ import annotations

import argparse
import copy
import http.server
import json
import os
import socketserver
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_REPLY: dict[str, Any] = {"text": "ok"}
# Headers whose values are never written to the log.
SECRET_HEADERS = {"x-api-key", "authorization", "cookie", "proxy-authorization"}


def _listify(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def message_text(message: dict) -> str:
    """The text of one message: text blocks and tool_result contents, joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(tool_result_text(block))
    return "\n".join(parts)


def tool_result_text(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c or [] if isinstance(b, dict))


def last_user_message(body: dict) -> dict:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            return m
    return {}


def tool_results(message: dict) -> list[dict]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


class Script:
    """Rules, their use counts, and the default reply. Thread-safe."""

    def __init__(self, rules: Any = None, default: dict | None = None):
        self.lock = threading.Lock()
        self.file: Path | None = None
        self.mtime: float | None = None
        self.set(rules, default)

    def set(self, rules: Any = None, default: dict | None = None) -> None:
        with self.lock:
            self.file, self.mtime = None, None
            if isinstance(rules, (str, os.PathLike)):
                self.file = Path(rules)
                self._load_file()
            else:
                self._set(rules or [], default)

    def _set(self, rules: Any, default: dict | None) -> None:
        if isinstance(rules, dict):
            default = rules.get("default", default)
            rules = rules.get("rules", [])
        self.rules = copy.deepcopy(list(rules))
        self.used = [0] * len(self.rules)
        self.default = copy.deepcopy(default or DEFAULT_REPLY)

    def _load_file(self) -> None:
        assert self.file is not None
        mtime = self.file.stat().st_mtime_ns
        if mtime != self.mtime:
            self._set(json.loads(self.file.read_text()), None)
            self.mtime = mtime

    def pick(self, body: dict, stream: bool) -> tuple[int | None, dict]:
        """(index of the rule that answers, or None for the default; the reply)."""
        with self.lock:
            if self.file is not None:
                self._load_file()
            for i, rule in enumerate(self.rules):
                if matches(rule.get("when") or {}, body, stream, self.used[i]):
                    self.used[i] += 1
                    return i, copy.deepcopy(rule.get("reply") or DEFAULT_REPLY)
            return None, copy.deepcopy(self.default)


def matches(when: dict, body: dict, stream: bool, used: int) -> bool:
    if "times" in when and used >= int(when["times"]):
        return False
    serialised = json.dumps(body, ensure_ascii=False)
    last = last_user_message(body)
    results = tool_results(last)
    for key, want in when.items():
        if key == "times":
            continue
        if key == "model":
            ok = any(w in str(body.get("model", "")) for w in _listify(want))
        elif key == "contains":
            ok = all(w in serialised for w in _listify(want))
        elif key == "not_contains":
            ok = not any(w in serialised for w in _listify(want))
        elif key == "last_contains":
            text = message_text(last)
            ok = all(w in text for w in _listify(want))
        elif key == "last_is_tool_result":
            ok = bool(results) == bool(want)
        elif key == "tool_result_contains":
            text = "\n".join(tool_result_text(b) for b in results)
            ok = all(w in text for w in _listify(want))
        elif key == "stream":
            ok = bool(stream) == bool(want)
        else:
            raise ValueError(f"mock_api: unknown condition {key!r}")
        if not ok:
            return False
    return True


class Builder:
    """Turns a reply into the API's content blocks."""

    counter = 0
    lock = threading.Lock()

    @classmethod
    def tool_id(cls) -> str:
        with cls.lock:
            cls.counter += 1
            return f"toolu_mock{os.getpid()}_{cls.counter:05d}"

    @classmethod
    def content(cls, reply: dict) -> list[dict]:
        if "content" in reply:
            return reply["content"]
        blocks: list[dict] = []
        if reply.get("text"):
            blocks.append({"type": "text", "text": reply["text"]})
        for tu in _listify(reply.get("tool_use") or []):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tu.get("id") or cls.tool_id(),
                    "name": tu["name"],
                    "input": tu.get("input") or {},
                }
            )
        if not blocks:
            blocks.append({"type": "text", "text": ""})
        return blocks


def _stop_reason(blocks: list[dict]) -> str:
    return "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"


def _usage(body_bytes: int, out_tokens: int) -> dict:
    return {
        "input_tokens": max(1, body_bytes // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": out_tokens,
        "service_tier": "standard",
    }


def _chunks(s: str, n: int) -> list[str]:
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


def sse_events(model: str, blocks: list[dict], body_bytes: int) -> list[tuple[str, dict]]:
    """The events of one streamed message, in the API's order."""
    msg_id = f"msg_mock_{int(time.time() * 1000)}_{Builder.tool_id()[-5:]}"
    out_tokens = max(1, sum(len(json.dumps(b)) for b in blocks) // 4)
    events: list[tuple[str, dict]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(body_bytes, 1),
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                )
            )
            for piece in _chunks(b["text"], 40):
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}},
                    )
                )
        elif b["type"] == "tool_use":
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
            for piece in _chunks(json.dumps(b.get("input") or {}), 30):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        else:
            raise ValueError(f"mock_api: cannot stream a {b['type']!r} block")
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop_reason(blocks), "stop_sequence": None},
                "usage": {"output_tokens": out_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def json_message(model: str, blocks: list[dict], body_bytes: int) -> dict:
    return {
        "id": f"msg_mock_{int(time.time() * 1000)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": _stop_reason(blocks),
        "stop_sequence": None,
        "usage": _usage(body_bytes, max(1, sum(len(json.dumps(b)) for b in blocks) // 4)),
    }


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # Set by MockApi.
    script: Script
    log_path: Path
    log_lock: threading.Lock

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up is normal at exit; anything else goes to `<log>.errors`."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
            return
        import traceback

        with self.log_lock, open(str(self.log_path) + ".errors", "a", encoding="utf-8") as f:
            f.write(f"{time.time()} {client_address}\n{traceback.format_exc()}\n")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet
        pass

    def _log(self, entry: dict) -> None:
        with self.server.log_lock, open(self.server.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def _headers(self) -> dict:
        return {
            k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()
        }

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_mock_{int(time.time() * 1000)}")
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return raw
                raw += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _other(self) -> None:
        raw = self._read_body() if self.command in ("POST", "PUT", "PATCH") else b""
        path, _, query = self.path.partition("?")
        self._log(
            {
                "ts": time.time(),
                "method": self.command,
                "path": path,
                "query": query,
                "headers": self._headers(),
                "size": len(raw),
                "body_text": raw.decode("utf-8", "replace")[:4000],
                "unknown": True,
            }
        )
        if self.command == "HEAD":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send_json(200, {})

    do_GET = do_HEAD = do_PUT = do_PATCH = do_DELETE = _other

    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._other()
        raw = self._read_body()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        entry = {
            "ts": time.time(),
            "method": "POST",
            "path": path,
            "query": query,
            "headers": self._headers(),
            "size": len(raw),
            "body": body,
        }
        if path == "/v1/messages/count_tokens":
            self._log(entry)
            return self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
        stream = bool(body.get("stream"))
        rule, reply = self.server.script.pick(body, stream)
        blocks = Builder.content(reply)
        entry.update(rule=rule, reply=blocks, stream=stream)
        self._log(entry)
        model = str(body.get("model") or "claude-mock")
        if not stream:
            return self._send_json(200, json_message(model, blocks, len(raw)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_mock_{int(time.time() * 1000)}")
        self.end_headers()
        for name, data in sse_events(model, blocks, len(raw)):
            chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class MockApi:
    """The scripted API on 127.0.0.1 (a free port), in a background thread."""

    def __init__(self, script: Any = None, log_path: str | os.PathLike | None = None, default: dict | None = None):
        self.script = Script(script, default)
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="mock-api-", suffix=".jsonl")
            os.close(fd)
            log_path = name
        self.log_path = Path(log_path)
        self.log_path.touch()
        self.server: _Server | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> "MockApi":
        server = _Server(("127.0.0.1", 0), _Handler)
        server.script = self.script
        server.log_path = self.log_path
        server.log_lock = threading.Lock()
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, name="mock-api", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> "MockApi":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self.server is not None, "not started"
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_script(self, rules: Any, default: dict | None = None) -> None:
        """A new script (a list of rules, `{"rules", "default"}`, or a file's path)."""
        self.script.set(rules, default)

    def clear(self) -> None:
        """Forget the logged requests."""
        with open(self.log_path, "w"):
            pass

    def requests(self) -> list[dict]:
        with open(self.log_path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def message_requests(self, model: str | None = None) -> list[dict]:
        """POST /v1/messages requests, oldest first (optionally only a model's, by substring)."""
        return [
            r
            for r in self.requests()
            if r["path"] == "/v1/messages" and (model is None or model in str(r["body"].get("model", "")))
        ]

    def errors(self) -> str:
        """Tracebacks of requests the server failed to answer (empty when none)."""
        p = Path(str(self.log_path) + ".errors")
        return p.read_text() if p.exists() else ""

    def unknown(self) -> list[dict]:
        return [r for r in self.requests() if r.get("unknown")]


def main() -> None:
    ap = argparse.ArgumentParser(description="Scripted Anthropic Messages API on 127.0.0.1")
    ap.add_argument("--script", help="JSON file of rules (re-read when it changes)")
    ap.add_argument("--log", required=True, help="JSONL file every request is appended to")
    args = ap.parse_args()
    with MockApi(args.script, args.log) as api:
        print(api.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    sys.exit(main())
