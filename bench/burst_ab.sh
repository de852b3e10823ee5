#!/usr/bin/env bash
# Two builds side by side on the burst (a benchmark, not a test): one store of SIZE memories is
# built once (the dev memories, then variants of them through `import`), and each round runs the
# burst (bench/burst.py) on a fresh copy of it with build A, then with build B, so both
# meet the same store and the same moment of a noisy machine. After each burst it prints the
# daemon's service times per request.
# Usage: bench/burst_ab.sh BIN_DIR_A BIN_DIR_B [rounds (3)] [size (10000)]
# (Copy each build's target/debug/wt-* binaries into a directory of its own first.)
set -euo pipefail
A="$(cd "$1" && pwd)"; B="$(cd "$2" && pwd)"; rounds="${3:-3}"; size="${4:-10000}"
cd "$(dirname "$0")/.."
base="$(mktemp -d)"; trap 'rm -rf "$base"' EXIT
export WT_MEMORY_HOME="$base/store" XDG_STATE_HOME="$base/state" XDG_RUNTIME_DIR="$base/run"
repo="$base/repo"; mkdir -p "$repo"; (cd "$repo" && git init -q -b main && git commit -q --allow-empty -m init)
python3 -c '
import json, sys
for line in open(sys.argv[1]): print(json.loads(line)["content"].replace("\n", " "))' \
  testdata/eval/dev/memories.jsonl > "$base/notes.txt"
(
  cd "$repo"
  while IFS= read -r note; do printf '%s' "$note" | "$B/wt-memory" remember --type Learning >/dev/null 2>&1; done < "$base/notes.txt"
  "$B/wt-memory" export --output "$base/seed.json"
  python3 "$OLDPWD/bench/grow_store.py" "$base/seed.json" "$size" > "$base/grown.json"
  "$B/wt-memory" import "$base/grown.json" >/dev/null
  echo "store: $("$B/wt-memory" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])') memories"
  "$B/wt-memory" daemon stop >/dev/null
)
mkdir -p "$base/payloads"
for f in post_tool_use.read user_prompt_submit.normal; do
  sed "s#/path/to/proj#$repo#g" "testdata/fixtures/hooks/$f.json" > "$base/payloads/$f.json"
done
for r in $(seq "$rounds"); do
  for v in A B; do
    bin="${!v}"; run="$(mktemp -d)"
    cp -a "$base/store" "$run/store"
    export WT_MEMORY_HOME="$run/store" XDG_STATE_HOME="$run/state" XDG_RUNTIME_DIR="$run/run"
    (cd "$repo" && "$bin/wt-memory" recall warm-up >/dev/null 2>&1; sleep 2)
    echo "== $v, round $r"
    python3 bench/burst.py "$bin" "$repo" "$base/payloads" | sed -n 1,4p
    (cd "$repo" && "$bin/wt-memory" daemon status | grep -E "^  (command_line|proactive|recall|remember) ")
    (cd "$repo" && "$bin/wt-memory" daemon stop >/dev/null 2>&1 || true)
    sleep 1; rm -rf "$run"
  done
done
