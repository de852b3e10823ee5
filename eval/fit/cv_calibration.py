#!/usr/bin/env python3
"""Cross-validate the ranking calibration (stdlib only): does a fitted curve carry over to queries
it was not fitted on?

    wt-memory eval testdata/eval/dev --features /tmp/feat.jsonl
    python3 -m eval.fit.cv_calibration /tmp/feat.jsonl [--folds 5]

The features file is `tune_rank.py`'s (per query: its kind, relevant ids, the top 10 memories with
their raw score). Each candidate calibration is fitted on k-1 folds of the queries (folds dealt
round-robin within each query kind, so every fold holds every kind) and scored on the fold it did
not see, gated as `proactive` gates the hooks: of the top 5, those with relevance at or above the
floor (0.3) and at least half the best one's. Printed per calibration, in-sample (fitted and
scored on all queries) and held-out (each query scored by the fit that did not see it):

- abstain: share of the queries nothing answers that inject nothing;
- coverage: share of answerable queries that inject at least one relevant memory;
- precision: share of injected memories that are relevant.

Candidates: one curve per query kind pulled towards the all-kinds fit (8 parameters: today's),
one curve for every kind (2), and one slope with a midpoint per kind (5).
"""
import argparse
import json
import math
from collections import defaultdict

from eval.fit.tune_rank import fit, fit_kinds, points

KINDS = ["prompt", "path", "command", "error"]
FLOOR = 0.3
RELATIVE = 0.5


def per_kind(rows):
    return fit_kinds(rows)[2]


def one_curve(rows):
    curve = fit(points(rows))
    return {k: curve for k in KINDS}


def shared_slope(rows):
    """The all-kinds slope, and each kind's midpoint fitted with that slope held."""
    S0, M0 = fit(points(rows))
    by_kind = defaultdict(list)
    for q in rows:
        by_kind[q.get("query_kind", "prompt")].append(q)
    out = {}
    for kind in KINDS:
        pts = points(by_kind.get(kind, []))
        M = M0
        for _ in range(5000):
            g = sum(-(y - 1 / (1 + math.exp(-S0 * (x - M)))) * S0 for x, y in pts)
            # The same pull towards the all-kinds midpoint as tune_rank's prior.
            g -= 60.0 * (M - M0) * 10.0
            M += 0.002 * g / max(len(pts), 1)
        out[kind] = (S0, M)
    return out


CANDIDATES = {
    "per-kind curves (8 parameters, today)": per_kind,
    "one slope, a midpoint per kind (5)": shared_slope,
    "one curve for every kind (2)": one_curve,
}


def injected(q, curves):
    S, M = curves[q.get("query_kind", "prompt")]
    rel = [(i, 1 / (1 + math.exp(-S * (raw - M)))) for i, raw in q["rows"][:5]]
    if not rel:
        return []
    gate = max(FLOOR, rel[0][1] * RELATIVE)
    return [i for i, r in rel if r >= gate]


def score(pairs):
    """(abstain, coverage, precision) over (query, injected ids) pairs."""
    ab = abn = cov = n = right = shown = 0
    for q, inj in pairs:
        relevant = set(q["relevant"])
        shown += len(inj)
        right += sum(i in relevant for i in inj)
        if not relevant:
            abn += 1
            ab += not inj
        else:
            n += 1
            cov += any(i in relevant for i in inj)
    return ab / max(abn, 1), cov / max(n, 1), right / max(shown, 1)


def folds_of(rows, k):
    by_kind = defaultdict(list)
    for q in sorted(rows, key=lambda q: q["qid"]):
        by_kind[q.get("query_kind", "prompt")].append(q)
    fold = {}
    for qs in by_kind.values():
        for j, q in enumerate(qs):
            fold[q["qid"]] = j % k
    return fold


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("features")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.features)]
    fold = folds_of(rows, args.folds)
    print(f"{len(rows)} queries, {args.folds} folds, floor {FLOOR}, relative {RELATIVE}")
    print(f"| calibration | in-sample abstain / coverage / precision | held-out abstain / coverage / precision |")
    print("|---|---|---|")
    for name, fitter in CANDIDATES.items():
        curves = fitter(rows)
        inside = score([(q, injected(q, curves)) for q in rows])
        held = []
        for f in range(args.folds):
            train = [q for q in rows if fold[q["qid"]] != f]
            test = [q for q in rows if fold[q["qid"]] == f]
            curves = fitter(train)
            held += [(q, injected(q, curves)) for q in test]
        out = score(held)
        fmt = lambda t: " / ".join(f"{x:.3f}" for x in t)
        print(f"| {name} | {fmt(inside)} | {fmt(out)} |")


if __name__ == "__main__":
    main()
