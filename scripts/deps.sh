#!/usr/bin/env bash
# Install what building and testing need on a fresh Debian machine (idempotent, quiet when done).
set -euo pipefail
need_apt=()
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
[ -e /usr/lib/llvm-14/lib/libclang.so ] || ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need_apt+=(libclang-dev)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet uv 2>/dev/null || python3 -m pip install --quiet --user uv
  hash -r
fi
command -v uv >/dev/null 2>&1 || export PATH="$HOME/.local/bin:$PATH"
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
