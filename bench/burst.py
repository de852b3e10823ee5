#!/usr/bin/env python3
"""The burst (a benchmark, not a test): 8 writers x 25 `wt-memory remember`, 8 hook loops
(PostToolUse Read, UserPromptSubmit) and one MCP client doing `remember`/`recall`, all at once on
one project. Reports writes refused (non-zero exit or tool error), writes lost (acknowledged but
absent afterwards) and writer latency (min/median/p95), hook deadline misses and MCP failures.

Usage: bench/burst.py BIN_DIR PROJECT_DIR PAYLOAD_DIR   (environment inherited: store, runtime)
"""
import json
import os
import subprocess
import sys
import threading
import time

WRITERS, WRITES, HOOK_LOOPS, HOOK_RUNS = 8, 25, 8, 10


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else 0


def main():
    bin_dir, project, payloads = sys.argv[1], sys.argv[2], sys.argv[3]
    # Texts of this run only: a burst run again on the same store must not measure duplicates.
    run = os.urandom(3).hex()
    wt = os.path.join(bin_dir, "wt-memory")
    hook = os.path.join(bin_dir, "wt-hook-memory")
    lock = threading.Lock()
    acked, refused, lat = [], [], []
    hook_times, hook_slow = [], []
    mcp_failures = []

    def writer(w):
        for i in range(WRITES):
            text = f"Burst writer {w} note {i} of run {run}: the deploy step {w}-{i} takes {i} seconds"
            start = time.perf_counter()
            r = subprocess.run([wt, "remember", "--type", "Context"], input=text.encode(),
                               capture_output=True, cwd=project)
            ms = (time.perf_counter() - start) * 1000
            with lock:
                lat.append(ms)
                (acked if r.returncode == 0 else refused).append(text)

    def hooks(h):
        for i in range(HOOK_RUNS):
            name = "post_tool_use.read.json" if (h + i) % 2 else "user_prompt_submit.normal.json"
            payload = json.load(open(os.path.join(payloads, name)))
            payload["session_id"] = f"burst-{h}-{i}"
            start = time.perf_counter()
            event = payload["hook_event_name"]
            subprocess.run([hook, event], input=json.dumps(payload).encode(), capture_output=True, cwd=project)
            ms = (time.perf_counter() - start) * 1000
            with lock:
                hook_times.append(ms)
                if ms > 5000:
                    hook_slow.append(ms)

    def mcp():
        env = dict(os.environ, CLAUDE_PROJECT_DIR=project)
        p = subprocess.Popen([os.path.join(bin_dir, "wt-mcp-server")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=project)
        n = [0]

        def req(method, params):
            n[0] += 1
            p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n[0], "method": method, "params": params}) + "\n").encode())
            p.stdin.flush()
            while True:
                reply = json.loads(p.stdout.readline())
                if reply.get("id") == n[0]:
                    return reply

        req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "burst", "version": "0"}})
        p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        p.stdin.flush()
        for i in range(25):
            text = f"MCP burst note {i} of run {run}: cache key {i} expires after {i} minutes"
            r = req("tools/call", {"name": "remember", "arguments": {"content": text, "type": "Context"}})
            if r.get("result", {}).get("isError"):
                mcp_failures.append(r["result"]["content"][0]["text"][:120])
            else:
                with lock:
                    acked.append(text)
            r = req("tools/call", {"name": "recall", "arguments": {"query": "deploy step duration"}})
            if r.get("result", {}).get("isError"):
                mcp_failures.append(r["result"]["content"][0]["text"][:120])
        p.stdin.close()
        p.wait(timeout=60)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads += [threading.Thread(target=hooks, args=(h,)) for h in range(HOOK_LOOPS)]
    threads.append(threading.Thread(target=mcp))
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    listed = json.loads(subprocess.run([wt, "list", "--limit", "100000"], capture_output=True, cwd=project).stdout)
    stored = {r["content"] for r in listed}
    lost = [t for t in acked if t not in stored]
    print(f"burst: {WRITERS}x{WRITES} CLI writes + {HOOK_LOOPS}x{HOOK_RUNS} hooks + 25 MCP remember/recall in {took:.1f} s")
    print(f"  writes refused {len(refused)}, lost {len(lost)} (of {len(acked)} acknowledged); "
          f"writer latency min {min(lat):.0f} median {pct(lat, 0.5):.0f} p95 {pct(lat, 0.95):.0f} ms")
    print(f"  hooks: median {pct(hook_times, 0.5):.0f} p95 {pct(hook_times, 0.95):.0f} ms, {len(hook_slow)} past 5 s; "
          f"MCP failures {len(mcp_failures)} {mcp_failures[:2]}")


if __name__ == "__main__":
    main()
