#!/usr/bin/env bash
# Run the previous system's (tatargabor/wt-tools) pytest files for the memory CLI and hook
# against our binaries. Nothing is fetched and nothing of theirs is kept in this tree.
#   usage: tests/legacy_suite/run.sh <wt-tools checkout> [extra pytest args]
#   env:   WT_BIN (default: target/debug), PYTHON (a python with pytest + pytest-timeout)
# Their tests locate programs as <tests>/../bin/wt-memory and wt-hook-memory, isolate stores
# with SHODH_STORAGE (ours reads it when WT_MEMORY_HOME is unset, so WT_MEMORY_HOME is unset
# here), and skip unless `import shodh_memory` works: an empty stub module satisfies that check.
set -euo pipefail
OLD=$(cd "${1:?usage: run.sh <wt-tools checkout> [pytest args]}" && pwd); shift
HERE=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(cd "${WT_BIN:-$HERE/target/debug}" && pwd)
PY=${PYTHON:-python3}
FILES="test_memory_branch_tags.py test_memory_cheat_sheet.py test_memory_export_import.py
       test_memory_rules.py test_memory_sync.py"
W=$(mktemp -d /tmp/wt-legacy.XXXXXX); chmod 700 "$W"
mkdir -p "$W/bin" "$W/tests" "$W/stub" "$W/state" "$W/run" "$W/claude"; chmod 700 "$W/run"
for b in wt-memory wt-hook-memory wt-mcp-server wt-project wt-memory-engine; do
  ln -s "$BIN/$b" "$W/bin/$b"; done
cp "$OLD/tests/__init__.py" "$W/tests/"
for f in $FILES; do cp "$OLD/tests/$f" "$W/tests/"; done
: > "$W/stub/shodh_memory.py"
printf '[pytest]\n' > "$W/pytest.ini"
echo "work dir: $W (binaries from $BIN)"
cd "$W"
unset WT_MEMORY_HOME SHODH_STORAGE CLAUDE_PROJECT_DIR
rc=0
env PATH="$W/bin:$PATH" PYTHONPATH="$W/stub" XDG_STATE_HOME="$W/state" \
    XDG_RUNTIME_DIR="$W/run" CLAUDE_CONFIG_DIR="$W/claude" WT_MEMORY_DAEMON_IDLE_SECS=20 \
    "$PY" -m pytest -p no:cacheprovider -q -rA --timeout=180 \
      $(for f in $FILES; do echo "tests/$f"; done) "$@" || rc=$?
exit $rc
