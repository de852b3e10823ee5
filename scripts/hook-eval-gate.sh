#!/usr/bin/env bash
# Regression gate on what the hooks inject (issue 15): replays the 60 real hook payloads of
# testdata/eval/dev-hooks (a copy of shared/eval/dev-hooks; its scorer is eval/hook_eval.py) against the
# 209 dev memories and fails when hit (in full), precision, abstention or hit_any (in full or in
# the index) drop below the floors, or when any
# hook breaks silence or the output contract.
# The floors sit at today's figures (README.md, docs/evaluation.md: hit 0.650, precision 0.946,
# abstain 0.929, hit_any 0.700) minus a noise margin of at most 0.02; raising a figure raises its
# floor in the same change (docs/evaluation.md, "What the hooks inject").
# It measures the shipped configuration: no WT_MEMORY_TUNE_* variable of the caller reaches the
# scorer or the hooks (unset here, and hook_eval.py --clean ignores any; its `tuning:` line must
# say none).
# Usage: scripts/hook-eval-gate.sh   (binaries: $CARGO_TARGET_DIR or target, /debug)
set -euo pipefail
cd "$(dirname "$0")/.."
MIN_HIT=0.63 MIN_PRECISION=0.93 MIN_ABSTAIN=0.91 MIN_HIT_ANY=0.68
while read -r v; do [ -n "$v" ] && unset "$v"; done < <(compgen -e | grep '^WT_MEMORY_TUNE_' || true)
bin="$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)"
out="$(mktemp)"; trap 'rm -f "$out"' EXIT
python3 eval/hook_eval.py testdata/eval/dev-hooks/cases.jsonl \
  --memories testdata/eval/dev/memories.jsonl --bin-dir "$bin" --clean | tee "$out"
python3 - "$out" "$MIN_HIT" "$MIN_PRECISION" "$MIN_ABSTAIN" "$MIN_HIT_ANY" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
floors = dict(zip(("hook_hit", "hook_precision", "hook_abstain", "hook_hit_any"),
                  map(float, sys.argv[2:6])))
got = dict(re.findall(r"(\w+)=([\d.]+)", text.strip().splitlines()[-1]))
bad = [f"{k} {float(got[k]):.3f} < {v}" for k, v in floors.items() if float(got[k]) < v]
if int(got["silent_violations"]):
    bad.append(f"{got['silent_violations']} silence violations")
if "contract violations: none" not in text:
    bad.append("hook output contract violated")
if "\ntuning: none\n" not in text:
    bad.append("the run was tuned (WT_MEMORY_TUNE_*): the gate measures the shipped configuration")
if bad:
    sys.exit("hook eval gate FAILED: " + "; ".join(bad))
print("hook eval gate: ok (" + ", ".join(f"{k} {float(got[k]):.3f} >= {v}" for k, v in floors.items()) + ")")
PY
