#!/usr/bin/env python3
"""Should each event have its own tiers? Chosen by cross-validation on the hook-level dev set
(stdlib only; issue 47).

    python3 -m eval.fit.cv_event_tiers [--bin-dir target/debug] [--set testdata/eval/dev-hooks]
                                       [--cache DIR] [--folds 5] [--seeds 5]

A hook's tiers have three parameters: the full floor, the index floor and the index size (how
many entries it lists). Every (full floor, index floor) pair of the grid is run once through
`hook_eval.py` with `WT_MEMORY_TUNE_GATES` (the real hooks and service; cached in --cache, shared
with `cv_gates.py`); an index size below today's 3 is the same run with its index cut short, as
the hook lists its entries best first. Each case asks one query kind (a prompt, a file read, a
command, a failure), and a pair changes only its own kind's cases, so one set of runs serves
every model:

- today: the shipped tiers for every event;
- shared: one (full, index, size) for all events, fitted;
- per-event index: one full floor for all, an index floor and size per event;
- per-event: all three per event.

For each of k folds (cases dealt round-robin within each event; the whole split redrawn for each
of --seeds shuffles), each model's parameters are fitted on the other folds (best summed utility,
`cv_gates.utility`, fixed before looking; a tie keeps today's) and scored on the fold. Printed:
in-sample and held-out-fold figures per model and per event, and what each model chose.
"""
import argparse
import json
import os
import random
from collections import Counter, defaultdict

from eval.fit.cv_gates import figures, row_text, run, run_args, utility

FULL = [0.35, 0.4, 0.45, 0.5]
INDEX = [0.05, 0.1, 0.15, 0.2, 0.25, 1.01]
SIZES = [1, 2, 3]
TODAY = (0.45, 0.25, 3)
KINDS = ["prompt", "path", "command", "error"]


def kind_of(case):
    event = case["event"]
    tool = case["payload"].get("tool_name", "")
    if event == "UserPromptSubmit":
        return "prompt"
    if event == "PostToolUseFailure":
        return "error"
    return "path" if tool == "Read" else "command" if tool == "Bash" else "other"


def cut(row, size):
    """The row as if the hook listed at most `size` index entries."""
    if len(row["index"]) <= size:
        return row
    ok = set(row["expect"]) | set(row["acceptable"])
    index = row["index"][:size]
    expect = set(row["expect"])
    return dict(row, index=index, index_good=sum(i in ok for i in index),
                hit_any=row["hit"] or bool(expect & set(row["injected"] + index)))


class Results:
    def __init__(self, runs, kinds):
        self.runs, self.kinds = runs, kinds

    def row(self, case, params):
        full, index, size = params
        return cut(self.runs[(full, index)][case], size)

    def rows(self, cases, choose):
        """Rows of `cases`, each under the parameters `choose(kind)` gives its kind."""
        return [self.row(c, choose(self.kinds[c])) for c in cases]


def grid():
    return [(f, i, s) for f in FULL for i in INDEX for s in SIZES if i <= 1 or s == 3]


def fit(res, train, model):
    """{kind: params} fitted on `train` under `model`."""
    total = lambda rows: sum(utility(r) for r in rows)
    by_kind = defaultdict(list)
    for c in train:
        by_kind[res.kinds[c]].append(c)
    if model == "today":
        return defaultdict(lambda: TODAY)
    if model == "shared":
        best = max(grid(), key=lambda p: (total(res.rows(train, lambda k: p)), p == TODAY))
        return defaultdict(lambda: best)
    if model == "per-event":
        chosen = {k: max(grid(), key=lambda p: (total(res.rows(cs, lambda _: p)), p == TODAY))
                  for k, cs in by_kind.items()}
        return defaultdict(lambda: TODAY, chosen)
    # per-event index: one full floor, then per kind the best (index floor, size) under it
    def under(full):
        chosen = {}
        for k, cs in by_kind.items():
            options = [(full, i, s) for i in INDEX for s in SIZES if i <= 1 or s == 3]
            chosen[k] = max(options, key=lambda p: (total(res.rows(cs, lambda _: p)),
                                                     p == (full,) + TODAY[1:]))
        return chosen
    best_full = max(FULL, key=lambda f: (total(res.rows(train, lambda k: under(f)[k])), f == TODAY[0]))
    return defaultdict(lambda: TODAY, under(best_full))


MODELS = ["today", "shared", "per-event index", "per-event"]


def main():
    ap = argparse.ArgumentParser()
    run_args(ap)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    runs = {(f, i): run(args, f, i) for f in FULL for i in INDEX}
    cases_file = os.path.join(args.set, "cases.jsonl")
    kinds = {c["case"]: kind_of(c) for c in map(json.loads, open(cases_file))}
    res = Results(runs, kinds)
    cases = sorted(kinds)
    print(f"{len(cases)} cases: {dict(Counter(kinds.values()))}")
    print("| model | hit | precision | abstain | hit_any | index lines | index precision | "
          "index lines per abstain case | utility |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in MODELS:
        chosen = fit(res, cases, model)
        print(row_text(f"{model}, in-sample", figures(res.rows(cases, lambda k: chosen[k]))))
        print(f"  chosen on all cases: " + ", ".join(f"{k} {chosen[k]}" for k in KINDS))
    held_by_model = {m: [] for m in MODELS}
    picks = {m: Counter() for m in MODELS}
    for seed in range(args.seeds):
        by_kind = defaultdict(list)
        for c in cases:
            by_kind[kinds[c]].append(c)
        rng = random.Random(seed)
        fold = {}
        for cs in by_kind.values():
            cs = sorted(cs)
            rng.shuffle(cs)
            fold.update({c: j % args.folds for j, c in enumerate(cs)})
        for model in MODELS:
            for f in range(args.folds):
                train = [c for c in cases if fold[c] != f]
                test = [c for c in cases if fold[c] == f]
                chosen = fit(res, train, model)
                for k in KINDS:
                    picks[model][(k, chosen[k])] += 1
                held_by_model[model] += res.rows(test, lambda k: chosen[k])
    for model in MODELS:
        held = held_by_model[model]
        f = figures(held)
        # Every case is held out once per seed: counts are per pass over the set.
        f["utility"] /= args.seeds
        f["index_lines"] = round(f["index_lines"] / args.seeds, 1)
        print(row_text(f"{model}, held-out folds ({args.folds} folds x {args.seeds} seeds)", f))
    for model in MODELS[1:]:
        for k in KINDS:
            top = [(p, n) for (kk, p), n in picks[model].most_common() if kk == k][:3]
            print(f"  {model} {k}: " + ", ".join(f"{p} x{n}" for p, n in top))
    # held-out utility per event
    for model in MODELS:
        by = defaultdict(float)
        for r in held_by_model[model]:
            by[kinds[r["case"]]] += utility(r) / args.seeds
        print(f"held-out utility by event, {model}: " + ", ".join(f"{k} {by[k]:.2f}" for k in KINDS))


if __name__ == "__main__":
    main()
