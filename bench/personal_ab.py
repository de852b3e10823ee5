#!/usr/bin/env python3
"""Warm hooks with and without a personal store beside the project's, side by side, on one store
kept by scripts/bench.sh (docs/user-guide.md, "Two scopes").

    WT_BENCH_KEEP=DIR python3 bench/personal_ab.py BIN_DIR [RUNS] [ROUNDS]

DIR is a store scripts/bench.sh built and kept with a personal store
(`WT_BENCH_KEEP=DIR WT_BENCH_SIZE=N WT_BENCH_PERSONAL=M`). The two settings take turns, ROUNDS
times (default 3): "without" renames the personal store's directory away (a project with no
personal store beside it asks it nothing), "with" puts it back; each hook runs RUNS times
(default 20), each in a new session, timing the whole process. A machine's drift shows in both
columns alike. Prints the median per hook, setting and round.
"""
import os, shutil, statistics, subprocess, sys, time

bin_dir = os.path.abspath(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
keep = os.path.abspath(os.environ["WT_BENCH_KEEP"])
env = dict(os.environ, WT_MEMORY_HOME=f"{keep}/store", XDG_STATE_HOME=f"{keep}/state",
           XDG_RUNTIME_DIR=f"{keep}/run")
env.pop("WT_MEMORY_DAEMON", None)
repo, runtime = f"{keep}/repo", f"{keep}/run/wt-tools"
personal, away = f"{keep}/store/_global", f"{keep}/store/_global.away"
prompt = open(f"{keep}/prompt.json").read()
hooks = [
    ("PostToolUse (Read)", "PostToolUse", lambda: open(f"{keep}/payload.json").read()),
    ("UserPromptSubmit", "UserPromptSubmit", lambda: prompt),
    ("UserPromptSubmit (new)", "UserPromptSubmit",
     lambda: prompt.replace("implemented?", f"implemented ({time.time_ns()})?")),
    ("SessionStart", "SessionStart", lambda: open(f"{keep}/start.json").read()),
]


def fresh():
    """A new session each run: the session caches and duplicate claims go."""
    if os.path.isdir(runtime):
        for name in os.listdir(runtime):
            path = os.path.join(runtime, name)
            if os.path.isfile(path):
                os.unlink(path)
    shutil.rmtree(os.path.join(runtime, "hook-claims"), ignore_errors=True)


def run(event, payload):
    fresh()
    t = time.perf_counter()
    subprocess.run([f"{bin_dir}/wt-hook-memory", event], input=payload.encode(), cwd=repo, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000


table = {}
for r in range(rounds):
    for setting in ("without", "with"):
        if setting == "without" and os.path.isdir(personal):
            os.rename(personal, away)
        if setting == "with" and os.path.isdir(away):
            os.rename(away, personal)
        for name, event, payload in hooks:
            run(event, payload())  # warm
            table.setdefault((name, setting), []).append(
                statistics.median(run(event, payload()) for _ in range(runs)))
if os.path.isdir(away):
    os.rename(away, personal)
print(f"{'hook':<26} {'without personal':>18} {'with personal':>15}   (median ms per round)")
for name, _, _ in hooks:
    cols = [" ".join(f"{m:5.1f}" for m in table[(name, s)]) for s in ("without", "with")]
    print(f"{name:<26} {cols[0]:>18} {cols[1]:>15}")
