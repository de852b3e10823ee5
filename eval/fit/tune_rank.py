#!/usr/bin/env python3
"""Refit the calibration of crates/core/src/rank.rs on an evaluation set, per query kind (stdlib only).

    wt-memory eval testdata/eval/dev --features /tmp/feat.jsonl
    python3 -m eval.fit.tune_rank /tmp/feat.jsonl

The features file holds, per query, its kind as the ranker is told it (prompt, path, command,
error) and the top 10 memories with their score before calibration. For each kind,
relevance = 1/(1+exp(-S*(raw-M))) is fitted by logistic regression of "is relevant" on raw, so
relevance estimates the probability that a memory answers a query of that kind. A kind with few
queries is pulled towards the fit on all kinds (a prior worth PRIOR_ROWS rows), so a handful of
queries cannot swing its curve. The script prints S and M per kind (QueryKind::calibration) and
the abstention/coverage trade-off at several floors.

Run the eval without the model (XDG_DATA_HOME pointing at a directory with no `wt-memory setup`
cache) and the same fit gives the terms-only curves, QueryKind::lexical_calibration.
"""
import json, math, sys
from collections import defaultdict

PRIOR_ROWS = 60.0


def fit(points, prior=None):
    """Logistic fit of y on x by gradient ascent; `prior` = (S, M) adds a Gaussian pull."""
    S, M = prior or (10.0, 0.5)
    n = max(len(points), 1)
    for _ in range(20000):
        gS = gM = 0.0
        for x, y in points:
            p = 1 / (1 + math.exp(-S * (x - M)))
            gS += (y - p) * (x - M)
            gM += -(y - p) * S
        if prior:
            # A prior worth PRIOR_ROWS rows: slope in its own units, midpoint scaled to match.
            gS -= PRIOR_ROWS * (S - prior[0]) / 100.0
            gM -= PRIOR_ROWS * (M - prior[1]) * 10.0
        S += 2.0 * gS / n
        M += 0.002 * gM / n
    return S, M


def points(rows):
    return [(raw, 1.0 if i in q["relevant"] else 0.0) for q in rows for i, raw in q["rows"]]


def counts(rows, S, M, floor):
    """(abstained, abstain queries, covered, answerable queries) with the top 5 gated at `floor`."""
    T = M + math.log(floor / (1 - floor)) / S
    ab = abn = cov = n = 0
    for q in rows:
        inj = [i for i, raw in q["rows"][:5] if raw >= T]
        if not q["relevant"]:
            abn += 1
            ab += not inj
        else:
            n += 1
            cov += any(i in q["relevant"] for i in inj)
    return ab, abn, cov, n


def at(rows, S, M, floor):
    ab, abn, cov, n = counts(rows, S, M, floor)
    return (ab / abn if abn else float("nan")), (cov / n if n else float("nan"))


def fit_kinds(rows):
    """(S0, M0) over all kinds, and {kind: (S, M)} pulled towards it."""
    S0, M0 = fit(points(rows))
    by_kind = defaultdict(list)
    for q in rows:
        by_kind[q.get("query_kind", "prompt")].append(q)
    fits = {}
    for kind in ["prompt", "path", "command", "error"]:
        qs = by_kind.get(kind, [])
        fits[kind] = fit(points(qs), prior=(S0, M0)) if qs else (S0, M0)
    return (S0, M0), by_kind, fits


def gated(by_kind, fits, floor):
    """Abstention and coverage over all kinds at `floor`, each kind on its own curve."""
    per_kind = [counts(by_kind.get(kind, []), S, M, floor) for kind, (S, M) in fits.items()]
    ab, abn, cov, n = (sum(c[j] for c in per_kind) for j in range(4))
    return ab / max(abn, 1), cov / max(n, 1)


def main():
    rows = [json.loads(l) for l in open(sys.argv[1])]
    (S0, M0), by_kind, fits = fit_kinds(rows)
    print(f"all kinds: slope {S0:.2f} midpoint {M0:.3f} ({len(rows)} queries)")
    for kind, (S, M) in fits.items():
        qs = by_kind.get(kind, [])
        n_abstain = sum(not q["relevant"] for q in qs)
        print(f"QueryKind::{kind.capitalize()} => ({S:.2f}, {M:.3f}),  "
              f"# {len(qs)} queries, {n_abstain} with nothing relevant")
    for floor in [0.2, 0.25, 0.3, 0.35, 0.4]:
        parts = []
        for kind, (S, M) in fits.items():
            ab, cov = at(by_kind.get(kind, []), S, M, floor)
            parts.append(f"{kind} abstain={ab:.2f} coverage={cov:.2f}")
        print(f"floor {floor:.2f}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
