#!/usr/bin/env python3
"""Warm hooks of two builds side by side, on one store kept by scripts/bench.sh.

    WT_BENCH_KEEP=DIR python3 bench/hooks_ab.py BIN_A BIN_B [RUNS] [ROUNDS]

DIR is a store scripts/bench.sh built and kept (`WT_BENCH_KEEP=DIR WT_BENCH_SIZE=N`). The builds
take turns, ROUNDS times (default 3): each starts its own service, warms it with one call, then
waits for it to settle, then runs each hook RUNS times (default 20), each in a new session, timing the whole process. A
machine's drift shows in both columns alike. Prints the median per hook, build and round.
"""
import os, statistics, subprocess, sys, time, shutil

bin_a, bin_b = (os.path.abspath(p) for p in sys.argv[1:3])
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
keep = os.path.abspath(os.environ["WT_BENCH_KEEP"])
env = dict(os.environ, WT_MEMORY_HOME=f"{keep}/store", XDG_STATE_HOME=f"{keep}/state",
           XDG_RUNTIME_DIR=f"{keep}/run")
env.pop("WT_MEMORY_DAEMON", None)
repo = f"{keep}/repo"
runtime = f"{keep}/run/wt-tools"
prompt = open(f"{keep}/prompt.json").read()
hooks = [
    ("PostToolUse (Read)", "PostToolUse", lambda i: open(f"{keep}/payload.json").read()),
    ("UserPromptSubmit", "UserPromptSubmit", lambda i: prompt),
    ("UserPromptSubmit (new)", "UserPromptSubmit",
     lambda i: prompt.replace("implemented?", f"implemented ({time.time_ns()})?")),
    ("SessionStart", "SessionStart", lambda i: open(f"{keep}/start.json").read()),
]


def fresh():
    """Each run is a new session: the session caches and duplicate claims go."""
    if os.path.isdir(runtime):
        for name in os.listdir(runtime):
            path = os.path.join(runtime, name)
            if os.path.isfile(path):
                os.remove(path)
    shutil.rmtree(os.path.join(runtime, "hook-claims"), ignore_errors=True)


def wt(bin_dir, *args):
    return subprocess.run([f"{bin_dir}/wt-memory", *args], cwd=repo, env=env,
                          capture_output=True)


def measure(bin_dir):
    wt(bin_dir, "daemon", "stop")
    wt(bin_dir, "recall", "warm up")
    # `stats` waits for the engine, which a new service opens on a thread of its own (3.5 s at
    # 10^5): the hooks are timed on a settled service.
    wt(bin_dir, "stats")
    medians = {}
    for name, event, payload in hooks:
        times = []
        for i in range(runs):
            fresh()
            data = payload(i).encode()
            started = time.perf_counter()
            subprocess.run([f"{bin_dir}/wt-hook-memory", event], input=data, cwd=repo, env=env,
                           capture_output=True)
            times.append((time.perf_counter() - started) * 1000)
        medians[name] = statistics.median(times)
    wt(bin_dir, "daemon", "stop")
    return medians


print(f"{'hook':<26}" + "".join(f"   A r{r + 1}    B r{r + 1}" for r in range(rounds)))
results = []
for _ in range(rounds):
    results.append((measure(bin_a), measure(bin_b)))
for name, _, _ in hooks:
    print(f"{name:<26}" + "".join(f"  {a[name]:6.1f}  {b[name]:6.1f}" for a, b in results))
