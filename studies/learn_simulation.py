#!/usr/bin/env python3
"""Keys learned from use, simulated on the dev sets (stdlib only; issue 47).

    python3 -m studies.learn_simulation [--bin-dir target/debug] [--teach 0,3] [--out KEYS.jsonl]

A project's earlier sessions ask about its memories in their own words; the agent finds a memory
(a hook shows it, in full or in the index, or the `recall` tool has it among its first 5) and
cites it; the Stop hook then gives that memory the prompt as a learned key. Which prompts do
later sessions then answer better?

Earlier sessions: for each dev memory, its retrieval keys of `../shared/eval/dev/keys.jsonl` at
the positions --teach gives (0: an English question, 1: a task, 3: a question in another
language), each asked as a prompt in a session of its own, through the real prompt hook, the
CLI's `recall` (what the MCP tool runs) and the real Stop hook, on one store of the 209 dev
memories (`WT_MEMORY_HARVEST=foreground`). The scripted agent cites the asked-about memory only
when it found it, so a memory nobody can find learns nothing.

Later sessions: the learned keys, read back from the store, are what `hook_eval.py --keys` and
`wt-memory eval` store with each memory in a fresh store (so no use counts sink anything there):
the hook-level set's 60 payloads and the dev set's 99 queries, beside the same without keys.
The dev set's queries and the hook payloads never taught anything: they are the later sessions.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from eval import DATA, HOOK_EVAL, ROOT
from eval.hook_eval import load_jsonl, make_env, make_repo, run

LINE = re.compile(r"^\s*[-~] \[MEM#([0-9a-f]+)\]")


def shown(stdout):
    """The short ids a hook's output shows, in full or in its index."""
    try:
        text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        text = stdout
    return [m.group(1) for m in map(LINE.match, text.splitlines()) if m]


def teach(bins, keys_file, positions):
    """Run the earlier sessions; returns {dev id: [learned keys]} as the store holds them."""
    home = tempfile.mkdtemp(prefix="learn-sim-")
    e = make_env(home)
    e["PATH"] = bins + os.pathsep + "/usr/bin:/bin"  # no `claude`: Stop extracts nothing
    e["WT_MEMORY_HARVEST"] = "foreground"
    repo = make_repo(home, "tallybook", e)
    e["CLAUDE_PROJECT_DIR"] = repo
    wm, hook = os.path.join(bins, "wt-memory"), os.path.join(bins, "wt-hook-memory")
    memories = load_jsonl(os.path.join(DATA, "dev", "memories.jsonl"))
    for m in memories:
        r = run([wm, "remember", "--type", m["type"], "--tags", "eval:" + m["id"]], repo, e,
                stdin=m["content"])
        if r.returncode:
            sys.exit(f"remember failed: {r.stderr.strip()}")
    full_of = {}
    for rec in json.loads(run([wm, "list"], repo, e).stdout):
        tag = next(t for t in rec["tags"] if t.startswith("eval:"))
        full_of[tag[5:]] = rec["id"]
    keys = {k["id"]: k["keys"] for k in load_jsonl(keys_file)}
    asked = found_by_hook = found_by_recall = 0
    for pos in positions:
        for m in memories:
            prompt = keys[m["id"]][pos]
            session = f"teach-{pos}-{m['id']}"
            plain = full_of[m["id"]].replace("-", "")
            transcript = os.path.join(home, session + ".jsonl")
            payload = {"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": repo,
                       "transcript_path": transcript, "prompt": prompt}
            r = subprocess.run([hook, "UserPromptSubmit"], cwd=repo, env=e, capture_output=True,
                               input=json.dumps(payload).encode(), timeout=60)
            asked += 1
            cite = next((s for s in shown(r.stdout.decode(errors="replace"))
                         if plain.startswith(s)), None)
            if cite:
                found_by_hook += 1
            else:
                top = json.loads(run([wm, "recall", prompt, "--limit", "5"], repo, e).stdout or "[]")
                if any(t["id"] == full_of[m["id"]] for t in top):
                    cite = plain[:8]
                    found_by_recall += 1
            answer = f"From memory [MEM#{cite}]: that is the answer." if cite else "Nothing in memory."
            with open(transcript, "w") as f:
                f.write(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n")
                f.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": answer}]}}) + "\n")
            stop = {"session_id": session, "hook_event_name": "Stop", "cwd": repo,
                    "transcript_path": transcript, "stop_hook_active": False}
            subprocess.run([hook, "Stop"], cwd=repo, env=e, input=json.dumps(stop).encode(),
                           capture_output=True, timeout=60)
    learned = {}
    for rec in json.loads(run([wm, "list"], repo, e).stdout):
        tag = next(t for t in rec["tags"] if t.startswith("eval:"))
        got = [k for k in rec.get("metadata", {}).get("keys_learned", "").split("\n") if k]
        if got:
            learned[tag[5:]] = got
    run([wm, "daemon", "stop"], repo, e)
    print(f"earlier sessions: {asked}; the agent found the memory through the hook in "
          f"{found_by_hook}, through recall in {found_by_recall}; memories with learned keys: "
          f"{len(learned)}, keys: {sum(map(len, learned.values()))}")
    return learned


def hook_figures(bins, keys_path):
    cmd = [sys.executable, HOOK_EVAL, os.path.join(DATA, "dev-hooks"), "--bin-dir", bins]
    if keys_path:
        cmd += ["--keys", keys_path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    per_event = [l for l in lines if l.startswith(("UserPromptSubmit", "PostToolUse"))]
    return "\n".join(per_event + lines[-2:])


def dev_figures(bins, keys):
    """`wt-memory eval` on the dev set with `keys` stored with each memory."""
    d = tempfile.mkdtemp(prefix="learn-dev-")
    src = os.path.join(DATA, "dev")
    with open(os.path.join(d, "memories.jsonl"), "w") as f:
        for m in load_jsonl(os.path.join(src, "memories.jsonl")):
            if keys.get(m["id"]):
                m = dict(m, keys=keys[m["id"]])
            f.write(json.dumps(m) + "\n")
    with open(os.path.join(d, "queries.jsonl"), "w") as f:
        f.write(open(os.path.join(src, "queries.jsonl")).read())
    home = tempfile.mkdtemp(prefix="learn-dev-home-")
    e = make_env(home)
    r = subprocess.run([os.path.join(bins, "wt-memory"), "eval", d], env=e, capture_output=True,
                       text=True)
    return r.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"))
    ap.add_argument("--keys", default=os.path.join(ROOT, "..", "shared", "eval", "dev", "keys.jsonl"))
    ap.add_argument("--teach", default="0", help="key positions asked as earlier prompts")
    ap.add_argument("--out", help="write the learned keys here (JSONL of {id, keys})")
    a = ap.parse_args()
    bins = os.path.abspath(a.bin_dir)
    learned = teach(bins, a.keys, [int(p) for p in a.teach.split(",")])
    path = a.out or os.path.join(tempfile.mkdtemp(prefix="learned-"), "keys.jsonl")
    with open(path, "w") as f:
        for mid, ks in sorted(learned.items()):
            f.write(json.dumps({"id": mid, "keys": ks}) + "\n")
    print(f"learned keys: {path}")
    print("\nhook-level set, no keys:\n" + hook_figures(bins, None))
    print("\nhook-level set, learned keys:\n" + hook_figures(bins, path))
    print("\ndev set, no keys:\n" + dev_figures(bins, {}))
    print("\ndev set, learned keys:\n" + dev_figures(bins, learned))


if __name__ == "__main__":
    main()
