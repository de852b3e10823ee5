#!/usr/bin/env python3
"""What do our background processes cost the machine (issue 72)? Opens N projects beside the
personal store, runs a scripted session in each (every hook event a session makes, an MCP
initialize + recall, a Stop), and reports after each project: our processes (count), their
resident memory together (RSS and PSS, from /proc/PID/smaps_rollup), then the first hook with no
service running (cold, median of 5), a warm prompt hook (median of 15), and whether every process
is gone after the idle exit (orphans).

Usage: python3 bench/footprint.py [--projects 3] [--size 1000] [--personal 1000] [--bin DIR]
       [--idle 20] [--churn N | --soak MINUTES [--pace SECONDS]]
Run from the repository root after `cargo build --bins` (DIR defaults to target/debug; pass
target/release for the figures docs/performance.md quotes). Linux only (it reads /proc).

--churn N: N short sessions (start, a prompt, a tool call, Stop, end) across the projects, a
pause past the idle exit after every 25 (so everything starts cold again), the binaries upgraded
in place halfway (the engine written again at its own path, later); a sampler
looks at our processes every 50 ms throughout. Reports the most engines alive at once (1 is the
target: an upgrade replaces the old engine, never runs two), how many engines there were in all,
and the processes left after the idle exit (0 is the target).
--soak MINUTES: sessions across the projects, one every --pace seconds (each also remembers a
note, so the stores grow as a user's do), for MINUTES; our processes' PSS sampled every minute.
Reports PSS after a 10-minute warm-up, at the end, and the growth per hour (least-squares slope
of the samples after the warm-up); the samples go to --samples FILE (JSON lines) if given.
The binaries are copied to a folder of the run's own first, so a rebuild meanwhile changes
nothing it measures.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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
        name = " ".join(a.decode(errors="replace") for a in argv[:4] if a)
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

    def short_session(self, repo):
        """A session's start and end with the least between: a prompt, a tool call, a Stop."""
        self.sessions += 1
        self.hook(repo, "SessionStart", {"source": "startup"})
        self.hook(repo, "UserPromptSubmit", {"prompt": "how are background jobs retried"})
        self.hook(repo, "PreToolUse", {"tool_name": "Bash", "tool_use_id": "t1",
                                       "permission_mode": "default",
                                       "tool_input": {"command": "cargo test -p parser"}})
        self.hook(repo, "Stop", {"stop_hook_active": False})
        self.hook(repo, "SessionEnd", {"reason": "prompt_input_exit"})

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


def report_idle_exit(w, idle):
    """Wait past the services' idle exit and report what is left of ours (0 is the target)."""
    deadline = time.monotonic() + idle + 30
    while our_processes(w.bin) and time.monotonic() < deadline:
        time.sleep(1)
    left = our_processes(w.bin)
    print(f"after the idle exit ({idle} s): {len(left)} process(es) left"
          + (f": {[p[3] for p in left]}" if left else ""))


def engines(procs):
    return [p for p in procs if p[3].endswith(" serve --engine")]


def copy_bins(src, dst):
    os.makedirs(dst, exist_ok=True)
    for name in ("wt-memory", "wt-memory-engine", "wt-hook-memory", "wt-mcp-server"):
        shutil.copy2(f"{src}/{name}", f"{dst}/{name}")


def upgrade_in_place(bin_dir):
    """The engine written again at its own path, a minute later: what a package manager or a
    rebuild does (the running engine's file is replaced, not edited)."""
    path = f"{bin_dir}/wt-memory-engine"
    data = open(path, "rb").read()
    os.remove(path)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o755)
    later = time.time() + 60
    os.utime(path, (later, later))


class Sampler(threading.Thread):
    """Our processes every `every` seconds: the most engines seen at once, every engine pid."""

    def __init__(self, bin_dir, every=0.05):
        super().__init__(daemon=True)
        self.bin, self.every = bin_dir, every
        self.most, self.pids, self.done = 0, set(), False

    def run(self):
        while not self.done:
            seen = engines(our_processes(self.bin))
            self.most = max(self.most, len(seen))
            self.pids.update(p[0] for p in seen)
            time.sleep(self.every)


def churn(w, repos, n, idle):
    sampler = Sampler(w.bin)
    sampler.start()
    before = None
    # Halfway, a few sessions after a pause: the engine of the old binary is running.
    upgrade_at = n // 2 + 3
    for i in range(n):
        if i == upgrade_at:
            before = set(sampler.pids)
            upgrade_in_place(w.bin)
            print(f"session {i}: the engine binary upgraded in place", file=sys.stderr)
        w.short_session(repos[i % len(repos)])
        if (i + 1) % 25 == 0:
            # A pause past the idle exit: the next session starts everything cold again.
            print(f"{i + 1} sessions; pausing past the idle exit", file=sys.stderr)
            time.sleep(idle + 5)
    after = sampler.pids - (before or set())
    sampler.done = True
    sampler.join()
    print(f"{n} sessions across {len(repos)} projects, upgraded in place after {upgrade_at}: "
          f"at most {sampler.most} engine(s) alive at once; {len(sampler.pids)} engine(s) in all "
          f"({len(before or ())} before the upgrade, {len(after)} after)")
    old_left = [p for p in engines(our_processes(w.bin)) if p[0] in (before or set())]
    print(f"engines of the old binary alive after the upgrade's sessions: {len(old_left)}")


def soak(w, repos, minutes, pace, samples_file):
    started = time.monotonic()
    samples = []
    next_sample = started
    i = 0
    out = open(samples_file, "w") if samples_file else None
    while time.monotonic() - started < minutes * 60:
        repo = repos[i % len(repos)]
        w.short_session(repo)
        w.wt(repo, "remember", "--type", "Context",
             stdin=f"Soak note {i}: the worker pool of service {i % 17} retries after {i % 9} s",
             check=False)
        i += 1
        now = time.monotonic()
        if now >= next_sample:
            procs = our_processes(w.bin)
            served = [p for p in procs if " serve" in p[3]]
            sample = {"minute": round((now - started) / 60, 2), "sessions": i,
                      "pss_mb": round(sum(p[2] for p in served) / 1024, 1),
                      "rss_mb": round(sum(p[1] for p in served) / 1024, 1),
                      "processes": len(procs)}
            samples.append(sample)
            if out:
                out.write(json.dumps(sample) + "\n")
                out.flush()
            print(json.dumps(sample), file=sys.stderr)
            next_sample += 60
        time.sleep(max(0.0, pace - (time.monotonic() - now)))
    warm = [s for s in samples if s["minute"] >= 10]
    if len(warm) < 2:
        print("too short to tell growth (needs samples after the 10-minute warm-up)")
        return
    xs = [s["minute"] / 60 for s in warm]
    ys = [s["pss_mb"] for s in warm]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"soak: {minutes} min, {i} sessions across {len(repos)} projects; services' PSS "
          f"{warm[0]['pss_mb']:.0f} MB after warm-up, {warm[-1]['pss_mb']:.0f} MB at the end, "
          f"max {max(ys):.0f} MB; growth {slope:+.1f} MB per hour (least squares after warm-up)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--projects", type=int, default=3)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--personal", type=int, default=1000)
    ap.add_argument("--bin", default=f"{os.environ.get('CARGO_TARGET_DIR', 'target')}/debug")
    ap.add_argument("--idle", type=int, default=20, help="the services' idle exit, seconds")
    ap.add_argument("--churn", type=int, help="N session starts and ends, upgraded halfway")
    ap.add_argument("--soak", type=float, help="minutes of sessions, PSS sampled each minute")
    ap.add_argument("--pace", type=float, default=20, help="seconds between soak sessions")
    ap.add_argument("--samples", help="a JSON-lines file for the soak's samples")
    a = ap.parse_args()
    w = World(a.bin, a.idle)
    copy_bins(w.bin, f"{w.tmp}/bin")
    w.bin = f"{w.tmp}/bin"
    try:
        repos = [w.repo(f"project-{i}") for i in range(a.projects)]
        print(f"seeding {a.projects} project store(s) of {a.size} and a personal store of "
              f"{a.personal} memories ...", file=sys.stderr)
        for repo in repos:
            seed(w, repo, a.size)
        seed(w, repos[0], a.personal, scope="personal")
        w.stop_services(repos)
        if a.churn or a.soak:
            if a.churn:
                churn(w, repos, a.churn, a.idle)
            else:
                soak(w, repos, a.soak, a.pace, a.samples)
            report_idle_exit(w, a.idle)
            return

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
            served = sum(p[2] for p in procs if " serve" in p[3]) / 1024
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

        report_idle_exit(w, a.idle)
    finally:
        w.stop_services([f"{w.tmp}/{d}" for d in os.listdir(w.tmp) if d.startswith(("project-", "seed-"))])
        shutil.rmtree(w.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
