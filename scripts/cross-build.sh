#!/usr/bin/env bash
# Linked release binaries for the other platforms, built on this machine (Linux x86_64) with zig
# as the C/C++ compiler and linker (cargo-zigbuild; both from PyPI, installed here on first use):
#
#   scripts/cross-build.sh [TARGET...]     default: all four release targets
#
# Linux targets are linked against glibc 2.28 (2018: Debian 10, RHEL 8, Ubuntu 20.04), so one
# archive runs on any current distribution; 2.28 and not older because the ONNX Runtime the model
# needs is itself built for manylinux_2_28.
# The binaries land in target/<TARGET>/release; scripts/dist.sh --target <TARGET> --bin-dir …
# packs them. Not part of CI (a target's clean build takes 20-40 minutes on 2 cores); the cheap
# per-target check CI runs is scripts/check-targets.sh. Measured results: docs/platforms.md.
#
# macOS: jemalloc's own build (which the engine's RocksDB dependency turns on everywhere) needs
# headers zig does not ship; RocksDB does not use jemalloc on macOS (librocksdb-sys leaves it
# out for darwin), so its build is skipped with an empty stand-in library and macOS's own
# allocator serves, as on the native macOS build's RocksDB. What still needs Apple's SDK is
# reported by the link step (docs/platforms.md); the release workflow builds macOS natively.
set -euo pipefail
cd "$(dirname "$0")/.."
all=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu aarch64-apple-darwin x86_64-apple-darwin)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

venv="${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/uv-venv"
if ! command -v cargo-zigbuild >/dev/null 2>&1; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  [ -x "$venv/bin/cargo-zigbuild" ] || {
    echo "cross-build: installing ziglang and cargo-zigbuild into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check ziglang cargo-zigbuild
  }
  export PATH="$venv/bin:$PATH"
fi
installed="$(rustup target list --installed)"
stub="$(mktemp -d)"
trap 'rm -rf "$stub"' EXIT
status=0
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
  env=()
  case "$t" in
    *-linux-gnu) zig_target="$t.2.28" ;;
    *-apple-darwin)
      zig_target="$t"
      # An empty archive in place of jemalloc (see the top of this file).
      mkdir -p "$stub/$t"
      python3 -m ziglang ar rcs "$stub/$t/libjemalloc.a"
      env=(JEMALLOC_OVERRIDE="$stub/$t/libjemalloc.a")
      ;;
    *) echo "cross-build: unknown target $t (one of: ${all[*]})" >&2; exit 2 ;;
  esac
  echo "cross-build: $t ($(date -u +%H:%M:%S))" >&2
  start=$(date +%s)
  if env "${env[@]}" cargo zigbuild --release --bins --target "$zig_target"; then
    echo "cross-build: $t built in $(( ($(date +%s) - start) / 60 )) min: target/$t/release" >&2
  else
    echo "cross-build: $t FAILED after $(( ($(date +%s) - start) / 60 )) min (the first error above says where)" >&2
    status=1
  fi
done
exit $status
