#!/usr/bin/env python3
"""The hooks' rules on a new user's store: three memories, not 209 (stdlib only).

    python3 -m eval.fit.small_store_eval [--bin-dir target/debug] [--cache DIR] [--folds 5]

Small stores are made from the dev hook set: for each case, a store of three memories of the
dev set, the case's expected ones (at most two) and others drawn at random (seeded by the case),
or three random ones for a case that expects nothing. Each store goes through `hook_eval.py`
(the real hooks and service) under every rule of the grid:
  beside   the floor of index entries shown beside memories injected in full (1.01: none)
  small    the ratio to the best score a memory of a store no larger than a hook's limit must
           reach to be injected in full (0.5: the big store's ratio)
  index    the index floor of a store of at most 10 memories (0.25: the big store's)
A rule is chosen by k-fold cross-validation on the utility of `cv_gates.py` (fixed before
looking), over these small stores together with the 60 cases on the full dev store (where only
`beside` matters; read from `cv_beside.py`'s cache, run that first). A tie keeps today's rule.
"""
import argparse
import json
import os
import random
import subprocess
import sys

from eval import DATA, HOOK_EVAL, ROOT
from eval.fit.cv_gates import cross_validate, figures, folds_by, row_text, utility

GRID = [(beside, small, index) for beside in (1.01, 0.3) for small in (0.5, 0.0)
        for index in (0.25, 0.15, 0.1, 0.07, 0.05, 0.03)
        if index in (0.25, 0.03) or (beside, small) == (1.01, 0.5)]
TODAY = (1.01, 0.5, 0.25)


def small_store(case, memories, ids):
    rng = random.Random(case["case"])
    chosen = list(case["expect"][:2])
    others = [i for i in ids if i not in case["expect"] and i not in case.get("acceptable", [])]
    while len(chosen) < 3:
        pick = rng.choice(others)
        if pick not in chosen:
            chosen.append(pick)
    return [memories[i] for i in chosen]


def run_case(args, case, store, rule):
    beside, small, index = rule
    path = os.path.join(args.cache, f"{case['case']}-{beside}-{small}-{index}.jsonl")
    if not os.path.exists(path):
        cases_file = os.path.join(args.cache, f"{case['case']}.case.jsonl")
        mem_file = os.path.join(args.cache, f"{case['case']}.memories.jsonl")
        with open(cases_file, "w") as f:
            f.write(json.dumps(case) + "\n")
        with open(mem_file, "w") as f:
            f.writelines(json.dumps(m) + "\n" for m in store)
        env = dict(os.environ, WT_MEMORY_TUNE_BESIDE=str(beside),
                   WT_MEMORY_TUNE_SMALL_RELATIVE=str(small), WT_MEMORY_TUNE_SMALL_INDEX=str(index))
        subprocess.run([sys.executable, HOOK_EVAL, cases_file,
                        "--memories", mem_file, "--bin-dir", args.bin_dir, "--out", path,
                        "--no-warmup"], env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(open(path).readline())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"))
    ap.add_argument("--cache", default="/tmp/small-store-eval")
    ap.add_argument("--big-cache", default="/tmp/cv-beside", help="cv_beside.py's cache")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    memories = {m["id"]: m for m in map(json.loads, open(os.path.join(DATA, "dev", "memories.jsonl")))}
    ids = sorted(memories)
    cases = [json.loads(l) for l in open(os.path.join(DATA, "dev-hooks", "cases.jsonl"))]
    cases = [c for c in cases if not c.get("must_be_silent")]
    small = {rule: {} for rule in GRID}
    for n, case in enumerate(cases):
        store = small_store(case, memories, ids)
        # The case as it reads against this store: only its memories can be named.
        held = {m["id"] for m in store}
        case = dict(case, expect=[i for i in case["expect"] if i in held],
                    acceptable=[i for i in case.get("acceptable", []) if i in held])
        for rule in GRID:
            small[rule]["small:" + case["case"]] = run_case(args, case, store, rule)
        print(f"{n + 1}/{len(cases)} small stores", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    big = {}
    for rule in GRID:
        path = os.path.join(args.big_cache, f"beside-{rule[0]}.jsonl")
        big[rule] = {"big:" + r["case"]: r for r in map(json.loads, open(path))}
    both = {rule: {**small[rule], **big[rule]} for rule in GRID}

    print("| rule (beside floor, small-store ratio, small-store index floor) | hit | precision | abstain | hit_any | index lines | "
          "index precision | index lines per abstain case | utility |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rule in GRID:
        print(row_text(f"{rule} small stores", figures(list(small[rule].values()))))
    for rule in GRID:
        print(row_text(f"{rule} small + full store", figures(list(both[rule].values()))))
    keys = sorted(both[TODAY])
    fold = folds_by(both[TODAY], args.folds, lambda k, row: (k.split(":")[0], row["event"]))
    chosen, held = cross_validate(both, fold, args.folds, TODAY)
    print(row_text(f"cross-validated ({args.folds} folds; chosen: {', '.join(map(str, chosen))})",
                   figures(held)))
    print(f"(held-out rows: {len(held)}; today's rule on the same rows: utility "
          f"{sum(utility(both[TODAY][k]) for k in keys):.2f})")


if __name__ == "__main__":
    main()
