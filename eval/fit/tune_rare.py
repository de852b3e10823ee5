#!/usr/bin/env python3
"""Fit the rare-term weight of crates/core/src/rank.rs (QueryKind::rare_weight: the weight of the rarest
query term a memory holds) per query kind on an evaluation set, by grid search (stdlib only).

    python3 -m eval.fit.tune_rare [BIN_DIR] [SET_DIR]   (defaults: target/debug, testdata/eval/dev)

For each weight, `wt-memory eval --features F` ranks every query with that weight for every kind
(WT_MEMORY_TUNE_RANK); the
calibration is refitted per query kind on those scores (eval/fit/tune_rank.py), so each weight is
judged with the curves it would ship with. Printed per kind and weight: recall@5 and MRR (the
ranking, over the top 10), abstention and coverage at the hooks' floor 0.3 (the gate). Each
kind's weight maximises their sum; ties go to the smaller weight. Then refit the calibration
with the chosen weights (`wt-memory eval SET --features F`, `python3 -m eval.fit.tune_rank F`).

    python3 -m eval.fit.tune_rare --hooks [BIN_DIR] [SET_DIR]

also breaks a tie on the hook-level set (testdata/eval/dev-hooks): where several weights score
the same on the set (the dev set's error queries are short and clean, so it cannot tell them
apart), each tied weight is run through the real hooks with the calibration refitted for it
(WT_MEMORY_TUNE_RANK), and the one with the best hit + precision + abstention on that kind's
hook event wins; ties still go to the smaller weight.
"""
import json, os, re, subprocess, sys, tempfile

from eval import DATA, HOOK_EVAL
from eval.fit.tune_rank import fit_kinds, gated
from eval.hook_eval import summarise  # (the hook-level scorer's own counts)

HOOK_EVENT = {"prompt": ("UserPromptSubmit", None), "path": ("PostToolUse", "Read"),
              "command": ("PostToolUse", "Bash"), "error": ("PostToolUseFailure", None)}
GRID = [0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3]
FLOOR = 0.3


def ranking(qs):
    """recall@5 and MRR (over the top 10 written) of the answerable queries."""
    scored = [q for q in qs if q["relevant"]]
    r5 = mrr = 0.0
    for q in scored:
        ids = [i for i, _ in q["rows"]]
        rel = set(q["relevant"])
        r5 += len(rel & set(ids[:5])) / min(5, len(rel))
        mrr += next((1 / (k + 1) for k, i in enumerate(ids) if i in rel), 0.0)
    n = max(len(scored), 1)
    return r5 / n, mrr / n


def hook_score(bin_dir, set_dir, kind, weight, tmp):
    """hit + precision + abstention of `kind`'s hook event with `weight` and its refitted curve."""
    feat = os.path.join(tmp, f"hook-feat-{kind}-{weight}.jsonl")
    tune = {"WT_MEMORY_TUNE_RANK": f"{kind}:{weight}"}
    subprocess.run([os.path.join(bin_dir, "wt-memory"), "eval", set_dir, "--features", feat],
                   capture_output=True, text=True, env=dict(os.environ, WT_MEMORY_DAEMON="0", **tune),
                   check=True)
    _, _, fits = fit_kinds([json.loads(l) for l in open(feat)])
    slope, midpoint = fits[kind]
    out = os.path.join(tmp, f"hook-{kind}-{weight}.jsonl")
    tune = {"WT_MEMORY_TUNE_RANK": f"{kind}:{weight}:{slope:.4f}:{midpoint:.4f}"}
    subprocess.run([sys.executable, HOOK_EVAL,
                    os.path.join(DATA, "dev-hooks", "cases.jsonl"),
                    "--memories", os.path.join(set_dir, "memories.jsonl"), "--bin-dir", bin_dir,
                    "--out", out], capture_output=True, text=True, env=dict(os.environ, **tune), check=True)
    event, tool = HOOK_EVENT[kind]
    s = summarise([r for r in map(json.loads, open(out))
                   if r["event"] == event and (tool is None or r["tool"] == tool)])
    hit = s["hit_k"] / max(s["hit_n"], 1)
    precision = s["good"] / s["inj"] if s["inj"] else 1.0
    abstain = s["ab_k"] / max(s["ab_n"], 1)
    return hit, precision, abstain, (slope, midpoint)


def main():
    args = [a for a in sys.argv[1:] if a != "--hooks"]
    hooks = "--hooks" in sys.argv[1:]
    bin_dir = os.path.abspath(args[0] if args else "target/debug")
    set_dir = args[1] if len(args) > 1 else "testdata/eval/dev"
    env = dict(os.environ, WT_MEMORY_DAEMON="0")
    table = {}  # kind -> [(weight, r5, mrr, abstain, coverage)]
    with tempfile.TemporaryDirectory() as tmp:
        for w in GRID:
            feat = os.path.join(tmp, f"feat-{w}.jsonl")
            subprocess.run([os.path.join(bin_dir, "wt-memory"), "eval", set_dir,
                            "--features", feat],
                           capture_output=True, text=True, check=True,
                           env=dict(env, WT_MEMORY_TUNE_RANK=",".join(f"{k}:{w}" for k in HOOK_EVENT)))
            _, by_kind, fits = fit_kinds([json.loads(l) for l in open(feat)])
            for kind, qs in by_kind.items():
                r5, mrr = ranking(qs)
                ab, cov = gated({kind: qs}, {kind: fits[kind]}, FLOOR)
                table.setdefault(kind, []).append((w, r5, mrr, ab, cov))
    print(f"{'kind':8s} {'weight':>7s} {'recall@5':>9s} {'MRR':>7s} {'abstain':>8s} {'coverage':>9s} {'sum':>7s}")
    for kind, rows in table.items():
        best = None
        for w, r5, mrr, ab, cov in rows:
            total = r5 + mrr + ab + cov
            print(f"{kind:8s} {w:7.3f} {r5:9.3f} {mrr:7.3f} {ab:8.3f} {cov:9.3f} {total:7.3f}")
            if best is None or total > best[1] + 1e-9:
                best = (w, total)
        tied = [w for w, r5, mrr, ab, cov in rows if r5 + mrr + ab + cov > best[1] - 1e-9]
        if hooks and len(tied) > 1:
            print(f"  {len(tied)} weights tie on the set; judged on the hook-level set ({HOOK_EVENT[kind][0]}):")
            with tempfile.TemporaryDirectory() as tmp:
                judged = []
                for w in tied:
                    hit, precision, abstain, curve = hook_score(bin_dir, set_dir, kind, w, tmp)
                    print(f"  {kind:8s} {w:7.3f} hit {hit:.3f} precision {precision:.3f} abstain {abstain:.3f}"
                          f" sum {hit + precision + abstain:.3f} (curve {curve[0]:.2f}, {curve[1]:.3f})")
                    judged.append((hit + precision + abstain, w))
            top = max(total for total, _ in judged)
            best = (min(w for total, w in judged if total > top - 1e-9), best[1])
        print(f"QueryKind::{kind.capitalize()} rare weight = {best[0]}")


if __name__ == "__main__":
    main()
