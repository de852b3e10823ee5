#!/usr/bin/env python3
"""Should a prompt list more of its near misses? Chosen by cross-validation (stdlib only; issue 47).

    python3 -m eval.fit.cv_prompt_index --dev-features F [--bin-dir target/debug]
                                        [--set testdata/eval/dev-hooks] [--cache DIR]
                                        [--folds 5] [--seeds 5]

A prompt's right memory is often among its first few results but below the full floor, and the
index (`~ [MEM#…] title` lines, shown only when nothing went in full) is where such a memory can
reach the agent. Two parameters decide it for prompts alone: the index floor and how many
entries the index lists. The other events keep today's tiers, so only prompt cases count here:
the prompts of the hook-level set (the real hooks and service, one `hook_eval.py` run per index
floor with `WT_MEMORY_TUNE_GATES`, cached with `cv_gates.py`'s) and the dev set's queries of
the prompt kind (prompts, paraphrases, non-English questions, and those nothing answers; from
`wt-memory eval testdata/eval/dev --features F`, each scored with calibration curves fitted
without it).

For each of k folds (cases dealt round-robin within each source: hook prompts, dev answerable,
dev abstain; the split redrawn for each of --seeds shuffles), the (floor, size) with the best
summed utility on the other folds (`cv_gates.utility`, fixed before looking; a tie keeps today's)
is scored on the fold. Printed: every candidate in-sample, and the held-out-fold figures of the
fitted choice beside today's.
"""
import argparse
import json
import os
import random
from collections import Counter, defaultdict

from eval.fit.cv_event_tiers import cut, kind_of
from eval.fit.cv_gates import dev_relevances, dev_row, figures, row_text, run, run_args, utility

FULL = 0.45
FLOORS = [0.05, 0.1, 0.15, 0.2, 0.25, 1.01]
SIZES = [1, 2, 3]
TODAY = (0.25, 3)


def candidates():
    return [(f, s) for f in FLOORS for s in SIZES if f <= 1 or s == 3]


def main():
    ap = argparse.ArgumentParser()
    run_args(ap)
    ap.add_argument("--dev-features", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    os.makedirs(args.cache, exist_ok=True)

    cases_file = os.path.join(args.set, "cases.jsonl")
    prompts = sorted(c["case"] for c in map(json.loads, open(cases_file))
                     if kind_of(c) == "prompt")
    hook_runs = {f: run(args, FULL, f) for f in FLOORS}
    queries, relevances = dev_relevances(args.dev_features, args.folds)
    queries = [q for q in queries if q.get("query_kind", "prompt") == "prompt"]

    # rows[candidate][case]
    rows = {}
    for f, s in candidates():
        r = {c: cut(hook_runs[f][c], s) for c in prompts}
        r.update({"dev:" + q["qid"]: dev_row(q, relevances[q["qid"]], FULL, f, s)
                  for q in queries})
        rows[(f, s)] = r
    source = {c: "hook" for c in prompts}
    source.update({"dev:" + q["qid"]: "dev-abstain" if not q["relevant"] else "dev"
                   for q in queries})
    cases = sorted(source)
    print(f"{len(cases)} prompt cases: {dict(Counter(source.values()))}")

    header = ("| prompt index (floor, size) | hit | precision | abstain | hit_any | index lines | "
              "index precision | index lines per abstain case | utility |\n|---|---|---|---|---|---|---|---|---|")
    print(header)
    for cand in candidates():
        print(row_text(f"{cand}, in-sample", figures([rows[cand][c] for c in cases])))
        hook_only = figures([rows[cand][c] for c in prompts])
        print(f"    hook prompts only: hit_any {hook_only['hit_any']:.3f}, "
              f"index {hook_only['index_lines']} at {hook_only['index_precision']:.2f}, "
              f"utility {hook_only['utility']:.2f}")

    total = lambda cand, cs: sum(utility(rows[cand][c]) for c in cs)
    held = {"today": [], "fitted": []}
    picks = Counter()
    for seed in range(args.seeds):
        rng = random.Random(seed)
        by_source = defaultdict(list)
        for c in cases:
            by_source[source[c]].append(c)
        fold = {}
        for cs in by_source.values():
            cs = sorted(cs)
            rng.shuffle(cs)
            fold.update({c: j % args.folds for j, c in enumerate(cs)})
        for k in range(args.folds):
            train = [c for c in cases if fold[c] != k]
            test = [c for c in cases if fold[c] == k]
            best = max(candidates(), key=lambda cand: (total(cand, train), cand == TODAY))
            picks[best] += 1
            held["fitted"] += [rows[best][c] for c in test]
            held["today"] += [rows[TODAY][c] for c in test]
    print(header)
    for name, hs in held.items():
        f = figures(hs)
        f["utility"] /= args.seeds
        f["index_lines"] = round(f["index_lines"] / args.seeds, 1)
        print(row_text(f"{name}, held-out folds ({args.folds} folds x {args.seeds} seeds)", f))
        hook = [r for r in hs if not r["case"].startswith("dev:")]
        fh = figures(hook)
        print(f"    hook prompts only: hit_any {fh['hit_any']:.3f}, utility {fh['utility'] / args.seeds:.2f}")
    print("chosen: " + ", ".join(f"{p} x{n}" for p, n in picks.most_common()))


if __name__ == "__main__":
    main()
