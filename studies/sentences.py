#!/usr/bin/env python3
"""Would a vector per sentence (of the memory, or of the query) rank better than one per text? Plain
MiniLM cosine on the dev set, as studies/embedders.py (same model, same metrics; its docstring
has the setup: a venv with numpy, onnxruntime and tokenizers). Issue 47: a paraphrased prompt often
matches one sentence of its answer, and a whole memory's vector might dilute it.

    /tmp/venv/bin/python -m studies.sentences

A memory (or query) scores its best sentence, or that mixed with the whole text's cosine; AUC is the
separation of answerable from abstain queries by their top cosine. Results: docs/research.md.
"""
import os, re, statistics, sys
import numpy as np
from studies.embedders import MiniLM, load, evaluate, auc, KINDS
d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "testdata/eval/dev")
mems, queries = load(os.path.join(d, "memories.jsonl")), load(os.path.join(d, "queries.jsonl"))
ids = [m["id"] for m in mems]
m = MiniLM()
split = lambda t: [s for s in re.split(r"(?<=[.!?;:])\s+", t.strip()) if len(s) > 3] or [t]
W = np.stack([m.embed(x["content"]) for x in mems])
sents = [[m.embed(s) for s in split(x["content"])] for x in mems]
Q = np.stack([m.embed(q["query"]) for q in queries])
Qs = [[m.embed(s) for s in split(q["query"])] for q in queries]
whole = Q @ W.T
maxs = np.array([[max(float(qv @ sv) for sv in ss) for ss in sents] for qv in Q])
qmax = np.array([[max(float(qv @ W[j]) for qv in qs) for j in range(len(mems))] for qs in Qs])
S = {"whole": whole, "memsent-max": maxs, "max(whole,memsent)": np.maximum(whole, maxs),
     "mean(whole,memsent)": (whole + maxs) / 2, "querysent-max": qmax, "max(whole,qsent)": np.maximum(whole, qmax)}
cols = KINDS + ["ALL"]
print(f"{'setting':22} {'metric':4} " + " ".join(f"{c:>11}" for c in cols) + "   AUC")
for name, s in S.items():
    rec, rr, top1 = evaluate(s, queries, ids)
    a = auc(top1["answerable"], top1["abstain"])
    for metric, vals in (("R@5", rec), ("MRR", rr)):
        print(f"{name:22} {metric:4} " + " ".join(f"{statistics.mean(vals[c]):11.3f}" for c in cols) + (f"  {a:.3f}" if metric == "R@5" else ""))
rec, rr, top1 = evaluate(whole, queries, ids)
print("n", {c: len(rec[c]) for c in cols}, "abstain", len(top1["abstain"]))
print("sentences per memory: median", statistics.median(len(s) for s in sents), "max", max(len(s) for s in sents))
