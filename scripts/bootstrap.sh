#!/usr/bin/env bash
# Fresh machine -> working memory: install build deps, build the four binaries, install the
# embedding model, and run a remember/recall round trip in a demo git repo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
cargo build --bins
bin="$PWD/target/debug"
"$bin/wt-memory" setup
demo="$(mktemp -d)/demo"
mkdir -p "$demo" && cd "$demo" && git init -q -b main && git commit -q --allow-empty -m init
export WT_MEMORY_HOME="$(dirname "$demo")/store"
echo "We chose Postgres over SQLite because of concurrent writers" | "$bin/wt-memory" remember --type Decision
"$bin/wt-memory" recall "which database and why" --limit 1
"$bin/wt-memory" health
echo "Demo store in $WT_MEMORY_HOME; wire a real project with: $bin/wt-project init /path/to/repo"
