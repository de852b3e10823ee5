#!/usr/bin/env python3
"""Write-time detection of stale facts, measured (a study, not a test).

Loads the dev memories in file order into a throwaway store through `wt-memory remember`, and for
each memory asks which OLDER memory of the same type is closest in meaning (the content cosine the
ranker computes). The set marks 9 memories that replace an older one (`supersedes:mXXX`); every
other older neighbour is a false link. For each cosine threshold it prints how many true links a
rule "closest older memory of the same type, cosine >= T" finds and how many false ones it makes,
counting near-duplicate pairs (`dupgroup:N`, the same fact twice) apart: linking a duplicate hides
a copy of the same fact, which costs nothing.

Usage: python3 -m studies.supersede [BIN_DIR] [SET_DIR]   (defaults: target/debug, testdata/eval/dev)
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else "target/debug"
    set_dir = sys.argv[2] if len(sys.argv) > 2 else "testdata/eval/dev"
    wt = os.path.abspath(os.path.join(bin_dir, "wt-memory"))
    memories = [json.loads(line) for line in open(os.path.join(set_dir, "memories.jsonl")) if line.strip()]
    order = {m["id"]: i for i, m in enumerate(memories)}
    by_id = {m["id"]: m for m in memories}
    truth = {}
    dup_group = {}
    for m in memories:
        for t in m["tags"]:
            if t.startswith("supersedes:"):
                truth[m["id"]] = t.split(":", 1)[1]
            if t.startswith("dupgroup:"):
                dup_group[m["id"]] = t
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, WT_MEMORY_HOME=f"{tmp}/store", XDG_STATE_HOME=f"{tmp}/state",
                   XDG_RUNTIME_DIR=f"{tmp}/run", WT_MEMORY_METRICS="0")
        project = f"{tmp}/project"
        os.makedirs(project)
        subprocess.run(["git", "init", "-q", project], check=True)
        for m in memories:
            tags = [t for t in m["tags"] if not t.startswith(("supersedes:", "dupgroup:"))]
            subprocess.run([wt, "remember", "--type", m["type"], "--tags", ",".join(tags + [f"evalid:{m['id']}"])],
                           input=m["content"].encode(), env=env, cwd=project, check=True, capture_output=True)
        rows = []
        for m in memories:
            out = subprocess.run([wt, "recall", m["content"], "--limit", "30", "--kind", "prompt"], env=env, cwd=project,
                                 check=True, capture_output=True).stdout
            best = None
            for r in json.loads(out):
                rid = next((t[7:] for t in r.get("tags", []) if t.startswith("evalid:")), None)
                if rid is None or order[rid] >= order[m["id"]] or by_id[rid]["type"] != m["type"]:
                    continue
                cos = float(re.search(r"semantic (-?[0-9.]+)", r["relevance_reason"]).group(1))
                if best is None or cos > best[1]:
                    best = (rid, cos)
            if best:
                rows.append((m["id"], best[0], best[1]))
        subprocess.run([wt, "daemon", "stop"], env=env, cwd=project, capture_output=True)
    print("true links (newer -> older, cosine of the closest older same-type memory):")
    for newer, older in sorted(truth.items()):
        found = next((r for r in rows if r[0] == newer), None)
        print(f"  {newer} -> {older} ({by_id[older]['type']} -> {by_id[newer]['type']}): "
              f"closest {found[1] if found else '-'} at {found[2] if found else 0:.3f}")
    print("\n  T     found/9  false(dup)  false(other)")
    for t in [x / 100 for x in range(50, 96, 5)]:
        hits = [r for r in rows if r[2] >= t]
        found = sum(1 for r in hits if truth.get(r[0]) == r[1])
        dup = sum(1 for r in hits if truth.get(r[0]) != r[1] and r[0] in dup_group
                  and dup_group.get(r[1]) == dup_group[r[0]])
        other = len(hits) - found - dup
        print(f"  {t:.2f}  {found:>5}    {dup:>6}      {other:>6}")
    print("\nfalse links at the highest thresholds:")
    for r in sorted(rows, key=lambda r: -r[2])[:15]:
        if truth.get(r[0]) != r[1]:
            print(f"  {r[2]:.3f} {r[0]} -> {r[1]}: {by_id[r[0]]['content'][:70]!r} / {by_id[r[1]]['content'][:70]!r}")


if __name__ == "__main__":
    main()
