#!/usr/bin/env bash
# Latency and memory figures for the hot paths (a benchmark, not a test): a cold `wt-memory recall`
# and `proactive` on a seeded store, and one `wt-hook-memory PostToolUse` (Read) end to end.
# Usage: scripts/bench.sh [runs]   (build first: cargo build --bins; model: wt-memory setup)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
bin="$PWD/target/debug"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export WT_MEMORY_HOME="$tmp/store" XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run"
repo="$tmp/repo"; mkdir -p "$repo" && cd "$repo" && git init -q -b main && git commit -q --allow-empty -m init
python3 - "$OLDPWD/testdata/eval/dev/memories.jsonl" > "$tmp/notes.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    print(json.loads(line)["content"].replace("\n", " "))
PY
while IFS= read -r note; do printf '%s' "$note" | "$bin/wt-memory" remember --type Learning >/dev/null; done < "$tmp/notes.txt"
echo "store: $(wc -l < "$tmp/notes.txt") memories"
sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/post_tool_use.read.json" > "$tmp/payload.json"
measure() { # name, command...
  local name="$1"; shift
  local start end ms total=0 rss max=0
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$tmp/rss" "$@" >/dev/null 2>&1 || true
    rss=$(tail -1 "$tmp/rss")
    end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 )); total=$(( total + ms ))
    [ "${rss:-0}" -gt "$max" ] 2>/dev/null && max=$rss
  done
  printf '%-34s mean %5d ms   peak RSS %6d KB   (%d runs)\n' "$name" $(( total / runs )) "$max" "$runs"
}
measure "wt-memory recall (cold process)" "$bin/wt-memory" recall "how are background jobs retried"
measure "wt-memory proactive (cold process)" "$bin/wt-memory" proactive "crates/jobs/src/worker.rs" --limit 2
measure "wt-memory list" "$bin/wt-memory" list
measure "wt-hook-memory PostToolUse (Read)" sh -c "rm -rf '$tmp/run'; '$bin/wt-hook-memory' PostToolUse < '$tmp/payload.json'"
