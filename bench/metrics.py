#!/usr/bin/env python3
"""What the metrics log costs a hook (issue 16: at most 1 ms of p50).

    python3 bench/metrics.py [RUNS] [BIN_DIR]

Seeds a temp store with the 209 dev memories, then runs the same two hooks (a prompt that injects,
a Read that abstains) alternately with metrics on and off (WT_MEMORY_METRICS=0), through the
resident service, each run in a new session. Interleaving keeps the machine's drift out of the
difference. Prints medians per mode and the difference.

The hooks run as hook processes of their own (`wt-memory-engine --hook`): `wt-hook-memory` hands a
hook to the service only when their configurations match, so through it one of the two modes
would run in the service and the other in a process, and the difference would be that.
"""
import json, os, statistics, subprocess, sys, tempfile, time

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
bin_dir = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "target/debug")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tmp = tempfile.mkdtemp()
env = dict(os.environ, WT_MEMORY_HOME=f"{tmp}/store", XDG_STATE_HOME=f"{tmp}/state",
           XDG_RUNTIME_DIR=f"{tmp}/run")
env.pop("WT_MEMORY_DAEMON", None)
env.pop("WT_MEMORY_METRICS", None)
repo = f"{tmp}/repo"
os.makedirs(repo)
subprocess.run(["git", "init", "-q", repo], check=True)
for line in open(f"{root}/testdata/eval/dev/memories.jsonl"):
    subprocess.run([f"{bin_dir}/wt-memory", "remember", "--type", "Learning"],
                   input=json.loads(line)["content"].encode(), cwd=repo, env=env,
                   capture_output=True, check=True)

def payload(name, **fields):
    text = open(f"{root}/testdata/fixtures/hooks/{name}.json").read().replace("/path/to/proj", repo)
    p = json.loads(text)
    p.update(fields)
    return p

hooks = {
    "UserPromptSubmit (injects)": payload(
        "user_prompt_submit.normal",
        prompt="refactor InvoiceRepo::next_number so it no longer locks the counter row"),
    "PostToolUse Read (abstains)": payload("post_tool_use.read"),
}
for name, p in hooks.items():
    times = {"on": [], "off": []}
    for i in range(2 * runs):
        mode = ("on", "off")[i % 2]
        e = dict(env, WT_MEMORY_METRICS="0") if mode == "off" else env
        p["session_id"] = f"bench-{name[:4]}-{i}"
        started = time.perf_counter()
        subprocess.run([f"{bin_dir}/wt-memory-engine", "--hook", p["hook_event_name"]],
                       input=json.dumps(p).encode(), cwd=repo, env=e, capture_output=True)
        times[mode].append((time.perf_counter() - started) * 1000)
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    print(f"{name:<30} metrics on {on:6.2f} ms   off {off:6.2f} ms   cost {on - off:+.2f} ms"
          f"   (medians of {runs} each)")
subprocess.run([f"{bin_dir}/wt-memory", "daemon", "stop"], cwd=repo, env=env, capture_output=True)
