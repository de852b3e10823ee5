#!/usr/bin/env python3
"""Round-trip latency of MCP tool calls over stdio (a benchmark, not a test).

Usage: bench/mcp.py SERVER_BINARY PROJECT_DIR RUNS
Starts the server with CLAUDE_PROJECT_DIR=PROJECT_DIR (the environment is inherited), does the
MCP handshake, then times RUNS `recall` calls and RUNS `remember` calls, one at a time, each
from the request's write to the response's read. Prints one line per tool: min/median/p95 in ms.
"""
import json
import os
import subprocess
import sys
import time


def main():
    server, project, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    env = dict(os.environ, CLAUDE_PROJECT_DIR=project)
    proc = subprocess.Popen([server], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=project)
    next_id = [0]

    def request(method, params):
        next_id[0] += 1
        msg = {"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                sys.exit("server closed its output")
            reply = json.loads(line)
            if reply.get("id") == next_id[0]:
                return reply

    request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}})
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.flush()

    def timed(tool, args_for):
        times = []
        for i in range(runs):
            start = time.perf_counter()
            reply = request("tools/call", {"name": tool, "arguments": args_for(i)})
            times.append((time.perf_counter() - start) * 1000)
            if reply.get("result", {}).get("isError"):
                sys.exit(f"{tool} failed: {reply['result']['content'][0]['text']}")
        times.sort()
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        median = times[len(times) // 2] if len(times) % 2 else (times[len(times) // 2 - 1] + times[len(times) // 2]) / 2
        print(f"MCP {tool:<8} round trip          min {times[0]:6.0f}  median {median:6.0f}  p95 {p95:6.0f} ms  ({runs} runs)")

    timed("recall", lambda i: {"query": "how are background jobs retried", "limit": 5})
    timed("remember", lambda i: {"content": f"Benchmark note {i}: the nightly export runs at 02:{i % 60:02d}", "type": "Context"})
    proc.stdin.close()
    proc.wait(timeout=30)


if __name__ == "__main__":
    main()
