#!/usr/bin/env python3
"""Does a query's background (how its raw score spreads over the whole store) tell relevant
memories from near misses better than the raw score alone? (A study, stdlib only.)

    wt-memory eval testdata/eval/dev --features /tmp/feat.jsonl
    python3 -m studies.background /tmp/feat.jsonl

Each row of the features file is a query with its top 10 (memory, raw score) and the mean and
standard deviation of the raw score over every memory. For each feature set below, a logistic
curve per query kind is fitted leaving the query out (cross-validated), and the query's top 5 are
gated as `proactive` gates them (floor, and half the best). Printed: abstention on unanswerable
queries, coverage (a relevant memory passes) and precision of what passes, at three floors.
"""
import json, math, sys

FEATURES = {
    "raw": lambda q, raw, r: [raw],
    "raw - mean": lambda q, raw, r: [raw - q["mean"]],
    "z-score": lambda q, raw, r: [(raw - q["mean"]) / max(q["sd"], 1e-6)],
    "raw, z-score": lambda q, raw, r: [raw, (raw - q["mean"]) / max(q["sd"], 1e-6)],
    "raw - 5th best": lambda q, raw, r: [raw - r[min(4, len(r) - 1)]],
    "raw - mean, raw - 5th best": lambda q, raw, r: [raw - q["mean"], raw - r[min(4, len(r) - 1)]],
}


def fit(X, y, steps=400, rate=0.5, l2=1e-3):
    """Logistic regression on standardised features; returns the probability function."""
    d = len(X[0])
    mu = [sum(x[j] for x in X) / len(X) for j in range(d)]
    sd = [max(1e-9, math.sqrt(sum((x[j] - mu[j]) ** 2 for x in X) / len(X))) for j in range(d)]
    Xs = [[(x[j] - mu[j]) / sd[j] for j in range(d)] for x in X]
    w, b = [0.0] * d, 0.0
    for _ in range(steps):
        gw, gb = [0.0] * d, 0.0
        for x, t in zip(Xs, y):
            p = 1 / (1 + math.exp(-(sum(a * c for a, c in zip(w, x)) + b)))
            for j in range(d):
                gw[j] += (t - p) * x[j]
            gb += t - p
        w = [w[j] + rate * (gw[j] / len(X) - l2 * w[j]) for j in range(d)]
        b += rate * gb / len(X)
    return lambda x: 1 / (1 + math.exp(-(sum(w[j] * (x[j] - mu[j]) / sd[j] for j in range(d)) + b)))


def study(rows, feature, floor):
    ab = abn = cov = n = passed = right = 0
    for k, q in enumerate(rows):
        train = [r for j, r in enumerate(rows) if j != k and r["query_kind"] == q["query_kind"]]
        X, y = [], []
        for t in train:
            scores = [raw for _, raw in t["rows"]]
            for i, raw in t["rows"]:
                X.append(feature(t, raw, scores))
                y.append(1.0 if i in t["relevant"] else 0.0)
        if not any(y):
            continue
        p = fit(X, y)
        scores = [raw for _, raw in q["rows"]]
        top = [(i, p(feature(q, raw, scores))) for i, raw in q["rows"][:5]]
        best = max((s for _, s in top), default=0.0)
        inject = [i for i, s in top if s >= max(floor, 0.5 * best)][:3]
        if q["relevant"]:
            n += 1
            cov += any(i in q["relevant"] for i in inject)
        else:
            abn += 1
            ab += not inject
        passed += len(inject)
        right += sum(i in q["relevant"] for i in inject)
    return ab / max(abn, 1), cov / max(n, 1), right / max(passed, 1)


rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{len(rows)} queries; leave-one-out logistic fit per query kind")
print(f"{'features':28s} {'floor':>5s} {'abstain':>8s} {'coverage':>9s} {'precision':>10s}")
for name, feature in FEATURES.items():
    for floor in (0.2, 0.3, 0.4):
        ab, cov, prec = study(rows, feature, floor)
        print(f"{name:28s} {floor:5.1f} {ab:8.3f} {cov:9.3f} {prec:10.3f}")
