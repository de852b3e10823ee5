#!/usr/bin/env python3
"""Do two builds print the same bytes for the same hook inputs on the same store? (stdlib only)

    python3 -m eval.same_hook_output OLD_BIN_DIR NEW_BIN_DIR [--set testdata/eval/dev-hooks]

For a refactoring that must not change what the hooks print (issue 45: the hooks the service runs
answered in-process). One store is made with the dev memories; a snapshot of the whole temp home is
taken; then each build, from that same snapshot at the same path and with its own service, replays
every case of the hook set and every hook fixture payload (testdata/fixtures/hooks), each under a
session id of its own that both builds share. Stdout and exit status are compared byte for byte,
except that a memory the replay itself wrote (a commit, a failure) has a new random id in each
run: such ids are numbered by first appearance. The differing cases are printed and the exit
status is 1 when any differ.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from eval import DATA, ROOT
from eval.hook_eval import load_jsonl, make_env, make_repo, run

PLACEHOLDER = "/path/to/proj"


def inputs(set_dir):
    """(name, event, payload) of every hook-set case and fixture payload."""
    out = [(c["case"], c["event"], c["payload"]) for c in load_jsonl(os.path.join(set_dir, "cases.jsonl"))]
    fixtures = os.path.join(ROOT, "testdata", "fixtures", "hooks")
    for name in sorted(os.listdir(fixtures)):
        payload = json.load(open(os.path.join(fixtures, name)))
        out.append((name, payload.get("hook_event_name", ""), payload))
    return out


def renumber(printed, known):
    """Ids of memories not in the snapshot (`known`, short ids) numbered by first appearance."""
    seen = {}

    def name(m):
        short = m.group(1).decode()
        if short in known:
            return m.group(0)
        return b"MEM#new" + str(seen.setdefault(short, len(seen))).encode()

    return {n: (rc, re.sub(rb"MEM#([0-9a-f]{4,})", name, out)) for n, (rc, out) in printed.items()}


def replay(bin_dir, home, repo, cases):
    e = make_env(home)
    e["PATH"] = bin_dir + os.pathsep + e["PATH"]
    e["CLAUDE_PROJECT_DIR"] = repo
    e["WT_MEMORY_HARVEST"] = "foreground"
    printed = {}
    for i, (name, event, payload) in enumerate(cases):
        text = json.dumps(payload, ensure_ascii=False).replace(PLACEHOLDER, repo)
        p = json.loads(text)
        p["session_id"] = f"same-output-{i:04d}"
        r = subprocess.run([os.path.join(bin_dir, "wt-hook-memory"), event], cwd=repo, env=e,
                           input=json.dumps(p).encode(), capture_output=True, timeout=60)
        printed[name] = (r.returncode, r.stdout)
    subprocess.run([os.path.join(bin_dir, "wt-memory"), "daemon", "stop"], cwd=repo, env=e,
                   capture_output=True)
    return printed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--set", default=os.path.join(DATA, "dev-hooks"))
    a = ap.parse_args()
    home = tempfile.mkdtemp(prefix="same-output-")
    snapshot = home + ".snapshot"
    e = make_env(home)
    e["PATH"] = a.new + os.pathsep + e["PATH"]
    repo = make_repo(home, "tallybook", e)
    for m in load_jsonl(os.path.join(a.set, "..", "dev", "memories.jsonl")):
        tags = [t for t in m.get("tags", []) if not t.startswith(("dupgroup:", "supersedes:"))]
        r = run([os.path.join(a.new, "wt-memory"), "remember", "--type", m["type"], "--tags",
                 ",".join(tags)], repo, e, stdin=m["content"])
        if r.returncode:
            sys.exit(f"remember failed: {r.stderr.strip()}")
    listed = run([os.path.join(a.new, "wt-memory"), "list"], repo, e).stdout
    known = {m["id"][:n] for m in json.loads(listed) for n in range(4, 9)}
    run([os.path.join(a.new, "wt-memory"), "daemon", "stop"], repo, e)
    shutil.copytree(home, snapshot, symlinks=True)
    cases = inputs(a.set)
    outputs = []
    for bin_dir in (a.old, a.new):
        # One untimed call first, so neither build's first case meets a cold service.
        warm = [("warm-up", "UserPromptSubmit", {"hook_event_name": "UserPromptSubmit", "cwd": repo,
                                                   "prompt": "warm up"})]
        shutil.rmtree(home)
        shutil.copytree(snapshot, home, symlinks=True)
        outputs.append(renumber(replay(bin_dir, home, repo, warm + cases), known))
    differ = [n for n in outputs[0] if outputs[0][n] != outputs[1][n]]
    printed = sum(1 for n in outputs[0] if outputs[0][n][1].strip())
    for n in differ:
        print(f"differs: {n}\n  old: {outputs[0][n]!r}\n  new: {outputs[1][n]!r}")
    print(f"{len(outputs[0])} inputs ({printed} printed something): {len(differ)} differ")
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(snapshot, ignore_errors=True)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
