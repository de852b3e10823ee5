#!/usr/bin/env python3
"""Learning from use, simulated on the dev hook set (stdlib only; issue 47).

    python3 -m studies.use_simulation [--bin-dir target/debug] [--set testdata/eval/dev-hooks]
                                      [--rounds 4]

The real hooks and service on one store of the dev memories. Each round replays every case of
the hook set in a new session, then ends that session with a Stop whose answer cites, by the id
it was shown with, each expected memory the hook showed (in full or in its index): a scripted
agent that uses what answers it and nothing else. The use counts that builds up shift the next
round's relevance (`metrics::UseCounts::prior`), and a prompt whose answer cited a memory becomes
that memory's learned key (the Stop hook reads the prompt from the session's transcript). Printed per round: hit, precision, abstain,
hit_any and index lines, as `hook_eval.py` counts them, and the cases whose expected memory was
injected in full in round 1 but not in a later round (lost). Round 1 has no use history: its
figures are the hook set's as shipped. The replay writes to the store as real sessions do (a
commit, a failure), so the same rounds with the prior off (`WT_MEMORY_USE_PRIOR=0`) run beside
it: the difference between the two is learning's (the prior and the learned keys).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from eval import DATA, ROOT
from eval.hook_eval import load_jsonl, make_env, make_repo, run

PLACEHOLDER = "/path/to/proj"
LINE = re.compile(r"^\s*([-~]) \[MEM#([0-9a-f]+)\]")


def shown(stdout):
    """[(tier, short id)] of what a hook printed: tier "full" or "index"."""
    try:
        out = json.loads(stdout)
        text = out["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        text = stdout
    return [("full" if m.group(1) == "-" else "index", m.group(2))
            for m in map(LINE.match, text.splitlines()) if m]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"))
    ap.add_argument("--set", default=os.path.join(DATA, "dev-hooks"))
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    # The replay itself writes (commits, failures), so round 2 differs from round 1 even without
    # the prior: the same rounds with it off are the control.
    for prior in ("1", "0"):
        print(f"\nuse prior {'on' if prior == '1' else 'off (control)'}")
        simulate(a, prior)


def simulate(a, prior):
    bins = os.path.abspath(a.bin_dir)
    home = tempfile.mkdtemp(prefix="use-sim-")
    e = make_env(home)
    e["WT_MEMORY_USE_PRIOR"] = prior
    # No `claude` on PATH: the Stop hook's extraction has no model to call.
    e["PATH"] = bins + os.pathsep + "/usr/bin:/bin"
    e["WT_MEMORY_HARVEST"] = "foreground"
    repo = make_repo(home, "tallybook", e)
    e["CLAUDE_PROJECT_DIR"] = repo
    for m in load_jsonl(os.path.join(a.set, "..", "dev", "memories.jsonl")):
        tags = [t for t in m.get("tags", []) if not t.startswith(("dupgroup:", "supersedes:"))]
        r = run([os.path.join(bins, "wt-memory"), "remember", "--type", m["type"], "--tags",
                 ",".join(tags + ["eval:" + m["id"]])], repo, e, stdin=m["content"])
        if r.returncode:
            sys.exit(f"remember failed: {r.stderr.strip()}")
    dev_of = {}
    for rec in json.loads(run([os.path.join(bins, "wt-memory"), "list"], repo, e).stdout):
        tag = next(t for t in rec["tags"] if t.startswith("eval:"))
        dev_of[rec["id"].replace("-", "")] = tag[5:]

    def dev_id(short):
        found = [d for u, d in dev_of.items() if u.startswith(short)]
        return found[0] if len(found) == 1 else None

    cases = load_jsonl(os.path.join(a.set, "cases.jsonl"))
    empty = os.path.join(home, "empty.jsonl")
    open(empty, "w").close()
    hook = os.path.join(bins, "wt-hook-memory")
    first_hits, lost = None, set()
    print("| round | hit | precision | abstain | hit_any | index lines |")
    print("|---|---|---|---|---|---|")
    for rnd in range(1, a.rounds + 1):
        hits, good, injected, abstained, abstain_cases, hit_any, index_lines = set(), 0, 0, 0, 0, 0, 0
        answerable = 0
        for c in cases:
            session = f"sim-{rnd}-{c['case']}"
            p = json.loads(json.dumps(c["payload"]).replace(PLACEHOLDER, repo))
            p["session_id"] = session
            r = subprocess.run([hook, c["event"]], cwd=repo, env=e, input=json.dumps(p).encode(),
                               capture_output=True, timeout=60)
            lines = shown(r.stdout.decode(errors="replace"))
            expect, ok = set(c["expect"]), set(c["expect"]) | set(c.get("acceptable", []))
            full = [dev_id(s) for t, s in lines if t == "full"]
            listed = [dev_id(s) for t, s in lines if t == "index"]
            if c.get("must_be_silent"):
                pass
            elif expect:
                answerable += 1
                if expect & set(full):
                    hits.add(c["case"])
                if expect & set(full + listed):
                    hit_any += 1
            else:
                abstain_cases += 1
                abstained += not full
            injected += len(full)
            good += sum(1 for d in full if d in ok)
            index_lines += len(listed)
            cited = [s for t, s in lines if dev_id(s) in expect]
            answer = " ".join(f"Per [MEM#{s}]." for s in cited) or "Done; nothing from memory."
            # A prompt's session has the prompt in its transcript, so a cited memory learns it as a
            # key; a tool event's case has no prompt.
            transcript = empty
            if c["event"] == "UserPromptSubmit":
                transcript = os.path.join(home, session + ".jsonl")
                with open(transcript, "w") as f:
                    f.write(json.dumps({"type": "user", "message": {
                        "role": "user", "content": p["prompt"]}}) + "\n")
            stop = {"session_id": session, "hook_event_name": "Stop", "cwd": repo,
                    "transcript_path": transcript, "stop_hook_active": False,
                    "last_assistant_message": answer}
            subprocess.run([hook, "Stop"], cwd=repo, env=e, input=json.dumps(stop).encode(),
                           capture_output=True, timeout=60)
        # The service writes its metrics buffer, and reads the use counts again.
        run([os.path.join(bins, "wt-memory"), "metrics", "--json"], repo, e)
        if first_hits is None:
            first_hits = hits
        lost |= first_hits - hits
        print(f"| {rnd} | {len(hits) / answerable:.3f} | {good / max(injected, 1):.3f} | "
              f"{abstained / max(abstain_cases, 1):.3f} | {hit_any / answerable:.3f} | {index_lines} |")
    print(f"expected memories injected in full in round 1 and not in a later round: "
          f"{sorted(lost) or 'none'}")
    run([os.path.join(bins, "wt-memory"), "daemon", "stop"], repo, e)


if __name__ == "__main__":
    main()
