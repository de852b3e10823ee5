#!/usr/bin/env bash
# Fresh machine -> working memory, end to end: install build deps, build the binaries, install
# the embedding model, then in a throwaway demo repository remember a decision, wire the repo with
# `wt-project init`, and show the exact context Claude Code would receive for a matching prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

step "build dependencies (scripts/deps.sh)"
. scripts/deps.sh
step "cargo build --bins (a first build compiles the engine: 16-37 minutes on 2 cores, docs/performance.md)"
cargo build --bins
bin="$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)"
export PATH="$bin:$PATH"
step "embedding model (wt-memory setup)"
wt-memory setup

demo_root="$(mktemp -d /tmp/wt-memory-demo.XXXXXX)"
demo="$demo_root/demo"
mkdir -p "$demo" && cd "$demo"
git init -q -b main && git -c user.name=demo -c user.email=demo@example.invalid commit -q --allow-empty -m init
# The demo's store lives next to it, not among your real stores.
export WT_MEMORY_HOME="$demo_root/store"

step "remember three facts in $demo"
echo "We chose Postgres over SQLite for the job queue because several workers write concurrently" |
  wt-memory remember --type Decision --tags database,queue
echo "Run the integration tests with 'make itest'; they need Docker running" |
  wt-memory remember --type Learning --tags testing
echo "API handlers live in src/api/, one file per resource" | wt-memory remember --type Context
prompt="Should the job queue use SQLite or Postgres?"
step "wt-memory recall \"$prompt\""
wt-memory recall "$prompt" --limit 1 | python3 -c '
import json, sys
for m in json.load(sys.stdin):
    score, kind, text = m["relevance_score"], m["experience_type"], m["content"]
    print(f"  relevance {score:.2f}  [{kind}] {text}")'

step "wt-project init (hooks, MCP server, CLAUDE.md section)"
wt-project init

step "a UserPromptSubmit hook, as Claude Code runs it"
# A new session id each run: the hook injects a memory once per session.
payload="$(python3 -c 'import json, sys, uuid
print(json.dumps({"session_id": str(uuid.uuid4()), "transcript_path": "", "cwd": sys.argv[1],
  "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": sys.argv[2]}))' "$demo" "$prompt")"
echo "prompt: $prompt"
echo "additionalContext Claude Code receives:"
echo "$payload" | CLAUDE_PROJECT_DIR="$demo" wt-hook-memory UserPromptSubmit | python3 -c '
import json, sys
out = sys.stdin.read().strip()
if not out:
    sys.exit("  (nothing injected: the hook found no memory relevant enough; see its log under ~/.local/state/wt-tools/)")
print("  " + json.loads(out)["hookSpecificOutput"]["additionalContext"].replace("\n", "\n  "))'

cat <<EOF

Done. The demo is in $demo (its store in $WT_MEMORY_HOME); delete it when you like.
Next:
  cargo install --path .        # put wt-memory (+ wt-memory-engine), wt-hook-memory, wt-mcp-server, wt-project on PATH
  cd /path/to/your/repo && wt-project init
  wt-memory doctor              # checks binaries, model, store and wiring, with fixes
EOF
