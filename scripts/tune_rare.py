#!/usr/bin/env python3
"""Fit the rare-term weight of src/rank.rs (QueryKind::rare_weight: the weight of the rarest
query term a memory holds) per query kind on an evaluation set, by grid search (stdlib only).

    python3 scripts/tune_rare.py [BIN_DIR] [SET_DIR]   (defaults: target/debug, testdata/eval/dev)

For each weight, `wt-memory eval --rare-weight W --features F` ranks every query; the
calibration is refitted per query kind on those scores (scripts/tune_rank.py), so each weight is
judged with the curves it would ship with. Printed per kind and weight: recall@5 and MRR (the
ranking, over the top 10), abstention and coverage at the hooks' floor 0.3 (the gate). Each
kind's weight maximises their sum; ties go to the smaller weight. Then refit the calibration
with the chosen weights (`wt-memory eval SET --features F`, scripts/tune_rank.py F).
"""
import os, re, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_rank import fit_kinds, gated  # noqa: E402
import json  # noqa: E402

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


def main():
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else "target/debug"
    set_dir = sys.argv[2] if len(sys.argv) > 2 else "testdata/eval/dev"
    env = dict(os.environ, WT_MEMORY_DAEMON="0")
    table = {}  # kind -> [(weight, r5, mrr, abstain, coverage)]
    with tempfile.TemporaryDirectory() as tmp:
        for w in GRID:
            feat = os.path.join(tmp, f"feat-{w}.jsonl")
            subprocess.run([os.path.join(bin_dir, "wt-memory"), "eval", set_dir,
                            "--rare-weight", str(w), "--features", feat],
                           capture_output=True, text=True, env=env, check=True)
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
        print(f"QueryKind::{kind.capitalize()} rare weight = {best[0]}")


if __name__ == "__main__":
    main()
