#!/usr/bin/env python3
"""Choose the floor of index entries shown beside memories injected in full, by cross-validation
on the hook-level dev set (stdlib only).

    python3 -m eval.fit.cv_beside [--bin-dir target/debug] [--set testdata/eval/dev-hooks]
                                  [--cache DIR] [--folds 5]

Each floor of the grid (1.01 = none beside full memories, today's rule before issue 43) is run
once through `hook_eval.py` with `WT_MEMORY_TUNE_BESIDE` (the real hooks, the real service;
results cached in --cache). Then for each of k folds (cases dealt round-robin within each event)
the floor with the best utility on the other folds is scored on that fold. The utility is
`cv_gates.py`'s, fixed before looking: +1 expected memory in full, else +0.5 indexed, -1 per wrong
memory in full, -0.25 per wrong index entry. One parameter, so over-fitting has little room; a
tie keeps today's rule.
"""
import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

from eval import DATA, HOOK_EVAL, ROOT
from eval.fit.cv_gates import cross_validate, figures, folds_by, row_text, utility

GRID = [1.01, 0.3, 0.35, 0.4, 0.45, 0.5]
TODAY = 1.01


def run(args, floor):
    path = os.path.join(args.cache, f"beside-{floor}.jsonl")
    if not os.path.exists(path):
        cmd = [sys.executable, HOOK_EVAL,
               os.path.join(args.set, "cases.jsonl"), "--memories",
               os.path.join(args.set, "..", "dev", "memories.jsonl"),
               "--bin-dir", args.bin_dir, "--out", path]
        env = dict(os.environ, WT_MEMORY_TUNE_BESIDE=str(floor))
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"ran beside floor {floor}", file=sys.stderr)
    return {r["case"]: r for r in map(json.loads, open(path))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"))
    ap.add_argument("--set", default=os.path.join(DATA, "dev-hooks"))
    ap.add_argument("--cache", default="/tmp/cv-beside")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    results = {floor: run(args, floor) for floor in GRID}
    cases = sorted(results[TODAY])
    fold = folds_by(results[TODAY], args.folds, lambda c, row: row["event"])
    by_event = defaultdict(list)
    for c in cases:
        by_event[results[TODAY][c]["event"]].append(c)
    print("| beside-full floor | hit | precision | abstain | hit_any | index lines | "
          "index precision | index lines per abstain case | utility |")
    print("|---|---|---|---|---|---|---|---|---|")
    for floor in GRID:
        print(row_text(f"{floor} in-sample", figures([results[floor][c] for c in cases])))
    chosen, held = cross_validate(results, fold, args.folds, TODAY)
    print(row_text(f"cross-validated ({args.folds} folds; chosen: {', '.join(map(str, chosen))})",
                   figures(held)))
    today = figures([results[TODAY][c] for c in cases])
    print(row_text("today's rule, same folds", today))
    for event, cs in sorted(by_event.items()):
        line = ", ".join(f"{x}: {sum(utility(results[x][c]) for c in cs):.2f}" for x in GRID)
        print(f"utility by floor, {event} ({len(cs)} cases): {line}")


if __name__ == "__main__":
    main()
