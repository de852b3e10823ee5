#!/usr/bin/env python3
"""Refit the calibration of src/rank.rs on an evaluation set (stdlib only).

    wt-memory eval testdata/eval/dev --features /tmp/feat.jsonl
    python3 scripts/tune_rank.py /tmp/feat.jsonl

The features file holds, per query, the top 10 memories with their score before calibration.
relevance = 1/(1+exp(-S*(raw-M))) is fitted by logistic regression of "is relevant" on raw, so
relevance estimates the probability that a memory answers the query. The script prints S and M
(CAL_SLOPE, CAL_MIDPOINT) and the abstention/coverage trade-off at several floors.
"""
import json, math, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
xs, ys = [], []
for q in rows:
    for i, raw in q["rows"]:
        xs.append(raw); ys.append(1.0 if i in q["relevant"] else 0.0)
S, M = 10.0, 0.5
for _ in range(20000):
    gS = gM = 0.0
    for x, y in zip(xs, ys):
        p = 1 / (1 + math.exp(-S * (x - M)))
        gS += (y - p) * (x - M); gM += -(y - p) * S
    S += 2.0 * gS / len(xs); M += 0.002 * gM / len(xs)
print(f"CAL_SLOPE={S:.2f} CAL_MIDPOINT={M:.3f}")

def at(floor):
    T = M + math.log(floor / (1 - floor)) / S
    ab = abn = cov = n = 0
    for q in rows:
        inj = [i for i, raw in q["rows"][:5] if raw >= T]
        if not q["relevant"]:
            abn += 1; ab += not inj
        else:
            n += 1; cov += any(i in q["relevant"] for i in inj)
    return ab / abn, cov / n

for floor in [0.2, 0.25, 0.3, 0.35, 0.4, 0.5]:
    print("floor %.2f: abstain=%.3f coverage=%.3f" % (floor, *at(floor)))
