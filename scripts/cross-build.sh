#!/usr/bin/env bash
# Linked release binaries for the other platforms, built on this machine (Linux x86_64) with zig
# as the C/C++ compiler and linker (cargo-zigbuild; both from PyPI, installed here on first use),
# and for Windows with Debian's MinGW-w64 (the posix thread model: RocksDB needs std::mutex and
# std::thread, which the win32 model lacks), C++ runtime linked in statically so the programs
# need no MinGW DLL beside them (installed here on first use, from Debian's packages):
#
#   scripts/cross-build.sh [TARGET...]     default: all five release targets
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
all=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu aarch64-apple-darwin x86_64-apple-darwin
  x86_64-pc-windows-gnu)
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
  build=(cargo zigbuild)
  case "$t" in
    *-linux-gnu) zig_target="$t.2.28" ;;
    *-apple-darwin)
      zig_target="$t"
      # An empty archive in place of jemalloc (see the top of this file).
      mkdir -p "$stub/$t"
      python3 -m ziglang ar rcs "$stub/$t/libjemalloc.a"
      env=(JEMALLOC_OVERRIDE="$stub/$t/libjemalloc.a")
      ;;
    x86_64-pc-windows-gnu)
      zig_target="$t"
      build=(cargo build)
      mingw=x86_64-w64-mingw32
      command -v "$mingw-g++-posix" >/dev/null 2>&1 || {
        echo "cross-build: installing MinGW-w64 (posix threads) from Debian's packages" >&2
        sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
        $sudo_ apt-get install -y -q g++-mingw-w64-x86-64-posix gcc-mingw-w64-x86-64-posix >/dev/null
      }
      gcc_lib="$(dirname "$("$mingw-g++-posix" -print-libgcc-file-name)")"
      env=(
        CC_x86_64_pc_windows_gnu="$mingw-gcc-posix"
        CXX_x86_64_pc_windows_gnu="$mingw-g++-posix"
        AR_x86_64_pc_windows_gnu="$mingw-ar"
        CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="$mingw-gcc-posix"
        # libstdc++ and winpthread inside the programs (dynamically linked, RocksDB also crashed
        # in std::call_once under Wine).
        CXXSTDLIB_STATIC_x86_64_pc_windows_gnu=1
        CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS="-L native=$gcc_lib -C link-arg=-static -C link-arg=-static-libgcc -C link-arg=-static-libstdc++"
      )
      ;;
    *) echo "cross-build: unknown target $t (one of: ${all[*]})" >&2; exit 2 ;;
  esac
  echo "cross-build: $t ($(date -u +%H:%M:%S))" >&2
  start=$(date +%s)
  if env "${env[@]}" nice -n 10 "${build[@]}" --release --bins --target "$zig_target"; then
    echo "cross-build: $t built in $(( ($(date +%s) - start) / 60 )) min: target/$t/release" >&2
  else
    echo "cross-build: $t FAILED after $(( ($(date +%s) - start) / 60 )) min (the first error above says where)" >&2
    status=1
  fi
done
exit $status
