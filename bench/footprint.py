#!/usr/bin/env python3
"""What do our background processes cost the machine (issue 72)? Opens N projects beside the
personal store, runs a scripted session in each (every hook event a session makes, an MCP
initialize + recall, a Stop), and reports after each project: our processes (count), their
resident memory together (RSS and PSS, from /proc/PID/smaps_rollup), then the first hook with no
service running (cold, median of 5), a warm prompt hook (median of 15), and whether every process
is gone after the idle exit (orphans).

Usage: python3 bench/footprint.py [--projects 3] [--size 1000] [--personal 1000] [--bin DIR]
       [--idle 20]
Run from the repository root after `cargo build --bins` (DIR defaults to target/debug; pass
target/release for the figures docs/performance.md quotes). Linux only (it reads /proc).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def our_processes(bin_dir):
    """(pid, rss_kb, pss_kb, name) of every live process whose program is in bin_dir."""
    out = []
    real_bin = os.path.realpath(bin_dir)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            exe = os.path.realpath(f"/proc/{pid}/exe")
        except OSError:
            continue
        if os.path.dirname(exe) != real_bin:
            continue
        rss = pss = 0
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss = int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss = int(line.split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        name = " ".join(a.decode(errors="replace") for a in argv[:3] if a)
        out.append((int(pid), rss, pss, os.path.basename(name)))
    return out


def median_ms(samples):
    return round(statistics.median(samples) * 1000)


class World:
    def __init__(self, bin_dir, idle):
        self.bin = os.path.abspath(bin_dir)
        self.tmp = tempfile.mkdtemp(prefix="wt-footprint-")
        self.env = dict(os.environ)
        for k in [k for k in self.env if k.startswith("WT_MEMORY_TUNE_")]:
            del self.env[k]
        self.env.update({
            "WT_MEMORY_HOME": f"{self.tmp}/store",
            "XDG_STATE_HOME": f"{self.tmp}/state",
            "XDG_RUNTIME_DIR": f"{self.tmp}/run",
            "WT_MEMORY_DAEMON_IDLE_SECS": str(idle),
        })
        self.env.pop("CLAUDECODE", None)
        self.sessions = 0

    def wt(self, repo, *args, stdin=None, check=True):
        return subprocess.run([f"{self.bin}/wt-memory", *args], cwd=repo, env=self.env,
                              input=stdin, capture_output=True, text=True, check=check)

    def repo(self, name):
        path = f"{self.tmp}/{name}"
        os.makedirs(path)
        for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
            subprocess.run(["git", *args], cwd=path, env=self.env, check=True, capture_output=True)
        return path

    def hook(self, repo, event, payload):
        payload = {"session_id": f"0d1e2f30-4a5b-4c6d-8e9f-{self.sessions:012d}",
                   "hook_event_name": event, "cwd": repo, **payload}
        started = time.monotonic()
        subprocess.run([f"{self.bin}/wt-hook-memory", event], cwd=repo,
                       env={**self.env, "CLAUDE_PROJECT_DIR": repo},
                       input=json.dumps(payload), capture_output=True, text=True, timeout=30)
        return time.monotonic() - started

    def session(self, repo):
        """One scripted session: every event a session makes, an MCP recall, a Stop."""
        self.sessions += 1
        self.hook(repo, "SessionStart", {"source": "startup"})
        for prompt in ("how are background jobs retried", "fix the failing parser test",
                       "where is the rate limiter configured"):
            self.hook(repo, "UserPromptSubmit", {"prompt": prompt})
        self.hook(repo, "PreToolUse", {"tool_name": "Bash", "tool_use_id": "t1",
                                       "permission_mode": "default",
                                       "tool_input": {"command": "cargo test -p parser"}})
        self.hook(repo, "PostToolUse", {"tool_name": "Read", "tool_use_id": "t2",
                                        "tool_input": {"file_path": f"{repo}/src/lib.rs"},
                                        "tool_response": {"type": "text"}})
        mcp = subprocess.Popen([f"{self.bin}/wt-mcp-server"], cwd=repo,
                               env={**self.env, "CLAUDE_PROJECT_DIR": repo},
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "footprint", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "recall", "arguments": {"query": "background jobs"}}},
        ):
            mcp.stdin.write(json.dumps(message) + "\n")
            mcp.stdin.flush()
            if "id" in message:
                mcp.stdout.readline()
        mcp.stdin.close()
        mcp.wait(timeout=30)
        self.hook(repo, "Stop", {"stop_hook_active": False})

    def stop_services(self, repos):
        for repo in repos:
            self.wt(repo, "daemon", "stop", check=False)
            self.wt(repo, "--scope", "personal", "daemon", "stop", check=False)
        # The user's engine exits shortly after its last store closes: wait for it, so the
        # next hook starts cold (no model loaded anywhere).
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(
                " serve" in p[3] or p[3].endswith("serve") for p in our_processes(self.bin)):
            time.sleep(0.2)


def seed(world, repo, size, scope=None):
    """`size` memories: the evaluation set's notes (written once, through the CLI), grown with
    variants, imported."""
    export = f"{world.tmp}/seed.json"
    if not os.path.exists(export):
        seed_repo = world.repo("seed")
        notes = [json.loads(l)["content"] for l in open(f"{ROOT}/testdata/eval/dev/memories.jsonl")]
        for note in notes:
            world.wt(seed_repo, "remember", "--type", "Learning", stdin=note)
        world.wt(seed_repo, "export", "--output", export)
        world.wt(seed_repo, "daemon", "stop", check=False)
    grown = f"{world.tmp}/grown-{size}.json"
    if not os.path.exists(grown):
        with open(grown, "w") as f:
            subprocess.run([sys.executable, f"{ROOT}/bench/grow_store.py", export, str(size)],
                           stdout=f, check=True)
    scope_args = ["--scope", scope] if scope else []
    for doc in (export, grown):
        world.wt(repo, "--no-daemon", *scope_args, "import", doc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--projects", type=int, default=3)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--personal", type=int, default=1000)
    ap.add_argument("--bin", default=f"{os.environ.get('CARGO_TARGET_DIR', 'target')}/debug")
    ap.add_argument("--idle", type=int, default=20, help="the services' idle exit, seconds")
    a = ap.parse_args()
    w = World(a.bin, a.idle)
    try:
        repos = [w.repo(f"project-{i}") for i in range(a.projects)]
        print(f"seeding {a.projects} project store(s) of {a.size} and a personal store of "
              f"{a.personal} memories ...", file=sys.stderr)
        for repo in repos:
            seed(w, repo, a.size)
        seed(w, repos[0], a.personal, scope="personal")
        w.stop_services(repos)
        if our_processes(w.bin):
            print("note: processes of this build were running before the benchmark",
                  file=sys.stderr)

        cold = []
        for _ in range(5):
            w.stop_services(repos)
            w.sessions += 1
            cold.append(w.hook(repos[0], "UserPromptSubmit",
                               {"prompt": "how are background jobs retried"}))
        w.stop_services(repos)

        print(f"{'projects open':<14} {'processes':>9} {'RSS MB':>8} {'PSS MB':>8} "
              f"{'services PSS':>12} {'settled PSS':>11}")
        for i, repo in enumerate(repos, 1):
            w.session(repo)
            procs = our_processes(w.bin)
            rss = sum(p[1] for p in procs) / 1024
            pss = sum(p[2] for p in procs) / 1024
            # The resident services alone (a Stop worker still finishing is counted above).
            served = sum(p[2] for p in procs if p[3].endswith("serve")) / 1024
            kinds = sorted(p[3] for p in procs)
            # And once the session has been quiet a few seconds (the Stop worker done, the
            # services' quiet-time work done): what stays resident while the user reads.
            time.sleep(4)
            settled = sum(p[2] for p in our_processes(w.bin)) / 1024
            print(f"{i:<14} {len(procs):>9} {rss:>8.0f} {pss:>8.0f} {served:>12.0f} "
                  f"{settled:>11.0f}   {', '.join(kinds)}")

        warm = []
        for _ in range(15):
            w.sessions += 1
            warm.append(w.hook(repos[0], "UserPromptSubmit",
                               {"prompt": "how are background jobs retried"}))
        print(f"cold first prompt hook (no service running): median {median_ms(cold)} ms "
              f"(min {round(min(cold) * 1000)}, 5 runs)")
        print(f"warm prompt hook: median {median_ms(warm)} ms (15 runs)")

        deadline = time.monotonic() + a.idle + 30
        while our_processes(w.bin) and time.monotonic() < deadline:
            time.sleep(1)
        left = our_processes(w.bin)
        print(f"after the idle exit ({a.idle} s): {len(left)} process(es) left"
              + (f": {[p[3] for p in left]}" if left else ""))
    finally:
        w.stop_services([f"{w.tmp}/{d}" for d in os.listdir(w.tmp) if d.startswith(("project-", "seed-"))])
        shutil.rmtree(w.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
