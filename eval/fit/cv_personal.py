#!/usr/bin/env python3
"""Choose the personal store's relevance factor by cross-validation (stdlib only).

    python3 -m eval.fit.cv_personal [--bin-dir target/debug] [--cache DIR] [--folds 5]

A preference bears on a task at a lower similarity than a project fact on its own subject, so the
personal store's relevance is multiplied by a factor before the hooks' gates and the merge with
the project's (`crates/core/src/recall.rs`, `PERSONAL_SCALE`). Each factor of the grid is run once
through `hook_eval.py` on the personal hook set (`testdata/eval/personal-hooks`: the 209 dev
memories in the project's store, 30 personal memories in the personal store) with
`WT_MEMORY_TUNE_PERSONAL` (the real hooks and services; results cached in --cache). Then, for each
of k folds of the cases (dealt round-robin within each kind), the factor with the best utility on
the other folds is scored on that fold: every case is scored by a factor chosen without it.

The utility of a case is cv_gates.py's, fixed before looking: +1 when an expected memory is
injected in full, else +0.5 when it is indexed; -1 per wrong memory injected in full; -0.25 per
wrong index entry. A tie keeps the smaller factor (the fewer personal injections). Printed: every
factor in-sample, per kind, and the cross-validated figures beside the in-sample ones of the
factor chosen on all cases; `project_first` is the share of conflict cases whose first injected
line is the project's memory.
"""
import argparse
import json
import os
import subprocess
import sys

from eval import DATA, HOOK_EVAL, ROOT
from eval.fit.cv_gates import figures, folds_by, utility

GRID = [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0]


def run(args, factor):
    path = os.path.join(args.cache, f"personal-{factor}.jsonl")
    if not os.path.exists(path):
        cmd = [sys.executable, HOOK_EVAL, os.path.join(args.set, "cases.jsonl"),
               "--memories", os.path.join(DATA, "dev", "memories.jsonl"),
               "--personal-memories", os.path.join(args.set, "personal.jsonl"),
               "--bin-dir", args.bin_dir, "--out", path]
        env = dict(os.environ, WT_MEMORY_TUNE_PERSONAL=str(factor))
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"ran factor {factor}", file=sys.stderr)
    return {r["case"]: r for r in map(json.loads, open(path))}


def project_first(rows):
    firsts = [r for r in rows if r.get("first")]
    return sum(r["first_ok"] for r in firsts) / len(firsts) if firsts else float("nan")


def line(name, rows):
    f = figures(rows)
    return (f"| {name} | {f['hit']:.3f} | {f['precision']:.3f} | {f['abstain']:.3f} | "
            f"{f['hit_any']:.3f} | {project_first(rows):.3f} | {f['utility']:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"))
    ap.add_argument("--set", default=os.path.join(DATA, "personal-hooks"))
    ap.add_argument("--cache", default="/tmp/cv-personal")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    results = {factor: run(args, factor) for factor in GRID}
    cases = sorted(next(iter(results.values())))
    kinds = sorted({results[GRID[0]][c]["kind"] for c in cases})
    fold = folds_by(results[GRID[0]], args.folds, lambda c, row: row["kind"])

    print("| factor | hit | precision | abstain | hit_any | project_first | utility |")
    print("|---|---|---|---|---|---|---|")
    for factor in GRID:
        print(line(f"{factor} in-sample", [results[factor][c] for c in cases]))
    score = lambda factor, cs: (sum(utility(results[factor][c]) for c in cs), -factor)  # noqa: E731
    chosen, held = [], []
    for f in range(args.folds):
        train = [c for c in cases if fold[c] != f]
        best = max(GRID, key=lambda factor: score(factor, train))
        chosen.append(best)
        held += [results[best][c] for c in cases if fold[c] == f]
    overall = max(GRID, key=lambda factor: score(factor, cases))
    print(f"\nchosen per fold: {chosen}; on all cases: {overall}")
    print("| | hit | precision | abstain | hit_any | project_first | utility |")
    print("|---|---|---|---|---|---|---|")
    print(line(f"{overall} in-sample", [results[overall][c] for c in cases]))
    print(line(f"held out ({args.folds}-fold)", held))
    print(line("1.0 (no factor) in-sample", [results[1.0][c] for c in cases]))
    for kind in kinds:
        ks = [c for c in cases if results[overall][c]["kind"] == kind]
        held_k = [r for r in held if r["kind"] == kind]
        print(line(f"{kind}: {overall} in-sample", [results[overall][c] for c in ks]))
        print(line(f"{kind}: held out", held_k))


if __name__ == "__main__":
    main()
