#!/usr/bin/env python3
"""Refit the ranking constants of src/rank.rs on an evaluation set (stdlib only).

    wt-memory eval testdata/eval/dev --features /tmp/feat.jsonl
    python3 scripts/tune_rank.py /tmp/feat.jsonl

The features file holds, per query, every memory's (eval id, cosine, lexical share, highest cosine
to any newer memory). This script mirrors rank.rs: raw = cos + W*lex - P*[superseded], then fits the
calibration relevance = 1/(1+exp(-S*(raw-M))) by logistic regression of "is relevant" on raw over
each query's top 10, so relevance estimates the probability that a memory answers the query.
"""
import json, math, sys, itertools

rows = [json.loads(l) for l in open(sys.argv[1])]

def ranked(q, W, P, SAME):
    scored = [(r[1] + W * r[2], r) for r in q["rows"]]
    scored.sort(key=lambda x: -x[0])
    top = scored[:20]
    out = []
    for raw, r in scored:
        pen = P if (r[3] >= SAME and any(x[1] is r for x in top)) else 0.0
        out.append((raw - pen, r[0]))
    out.sort(key=lambda x: -x[0])
    return out

def metrics(W, P, SAME, T):
    r5 = mrr = 0.0; n = 0; ab = abn = cov = 0
    for q in rows:
        res = ranked(q, W, P, SAME)
        rel = q["relevant"]
        inj = [i for s, i in res[:5] if s >= T]
        if not rel:
            abn += 1; ab += (len(inj) == 0); continue
        n += 1
        ids = [i for _, i in res]
        r5 += len([i for i in ids[:5] if i in rel]) / min(5, len(rel))
        for k, i in enumerate(ids):
            if i in rel:
                mrr += 1 / (k + 1); break
        cov += any(i in rel for i in inj)
    return r5 / n, mrr / n, ab / max(abn, 1), cov / n

best = None
for W, P, SAME in itertools.product([0.0, 0.2, 0.3, 0.4, 0.5, 0.7], [0.0, 0.03, 0.06, 0.1], [0.65, 0.72, 0.8]):
    r5, mrr, _, _ = metrics(W, P, SAME, 9)
    key = (round(r5 + mrr, 4))
    if best is None or key > best[0]:
        best = (key, W, P, SAME, r5, mrr)
_, W, P, SAME, r5, mrr = best
print(f"ranking: W={W} P={P} SAME={SAME} recall@5={r5:.3f} mrr={mrr:.3f}")

# Logistic calibration on the top 10 of every query (answerable and abstain).
xs, ys = [], []
for q in rows:
    for s, i in ranked(q, W, P, SAME)[:10]:
        xs.append(s); ys.append(1.0 if i in q["relevant"] else 0.0)
S, M = 10.0, 0.5
for _ in range(4000):
    gS = gM = 0.0
    for x, y in zip(xs, ys):
        p = 1 / (1 + math.exp(-S * (x - M)))
        gS += (y - p) * (x - M); gM += -(y - p) * S
    S += 0.5 * gS / len(xs) * 10; M += 0.5 * gM / len(xs) / 10
print(f"calibration: S={S:.2f} M={M:.3f}")
T = M + math.log(0.3 / 0.7) / S
print("at floor 0.3 (raw >= %.3f): recall@5=%.3f mrr=%.3f abstain=%.3f coverage=%.3f" % ((T,) + metrics(W, P, SAME, T)))
for floor in [0.2, 0.25, 0.3, 0.35, 0.4, 0.5]:
    T = M + math.log(floor / (1 - floor)) / S
    print("  floor %.2f: abstain=%.3f coverage=%.3f" % (floor, *metrics(W, P, SAME, T)[2:]))
