#!/usr/bin/env bash
# Install what building and testing need on a fresh Debian machine (idempotent, quiet when done).
# Sourced by bootstrap.sh and test.sh (so PATH changes reach them); `scripts/deps.sh --check`
# installs nothing and exits 1 listing what is missing (the fresh-container CI check uses both).
set -euo pipefail

# clang-sys (bindgen, for RocksDB's bindings) loads libclang at build time and accepts only an
# unversioned `libclang.so` or `libclang-N.so` from LIBCLANG_PATH, `llvm-config --libdir` or these
# directories. Debian's `libclang1-N` ships only `libclang.so.1`, which it ignores: the link comes
# from `libclang-dev`. `libclang-cpp.so` is another library and does not count.
wt_find_libclang() {
  local dirs=() d f
  [ -n "${LIBCLANG_PATH:-}" ] && dirs+=("$LIBCLANG_PATH")
  command -v llvm-config >/dev/null 2>&1 && dirs+=("$(llvm-config --libdir)")
  dirs+=(/usr/local/llvm*/lib* /usr/local/lib*/*/* /usr/local/lib*/* /usr/local/lib* /usr/lib*/*/* /usr/lib*/* /usr/lib*)
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    for f in "$d"/libclang.so "$d"/libclang-[0-9]*.so; do
      [ -e "$f" ] && { echo "$f"; return 0; }
    done
  done
  return 1
}

wt_missing_apt() {
  local missing=()
  command -v clang >/dev/null 2>&1 || missing+=(clang)
  # RocksDB, zstd, lz4 and oniguruma are C/C++ compiled by the cc crate; jemalloc runs make.
  command -v c++ >/dev/null 2>&1 || missing+=(g++)
  command -v make >/dev/null 2>&1 || missing+=(make)
  wt_find_libclang >/dev/null || missing+=(libclang-dev)
  command -v git >/dev/null 2>&1 || missing+=(git)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  # uv is installed into a venv (PEP 668: Debian's python refuses `pip install` outside one).
  command -v uv >/dev/null 2>&1 || python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
  # tests/suite/report.rs renders the HTML metrics report in headless chromium.
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  # tests/suite/tui.rs drives `wt-memory tui` in a real terminal.
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  echo "${missing[@]}"
}

wt_uv_home="${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/uv-venv"
[ -x "$wt_uv_home/bin/uv" ] && export PATH="$wt_uv_home/bin:$PATH"

# ---- Claude Code CLI, pinned, for tests/claude (the real client against a scripted API) ---------
# scripts/claude-cli.sh: the pin (version, wheel sha256s) and its installer, shared with the
# Dockerfile and the devcontainer feature. Installed at the end of this script.
wt_python_for_claude="python3"; [ -x "$wt_uv_home/bin/python" ] && wt_python_for_claude="$wt_uv_home/bin/python"
. "$(dirname "${BASH_SOURCE[0]}")/claude-cli.sh"
[ -x "$wt_claude_bin" ] && export WT_CLAUDE_BIN="$wt_claude_bin"


if [ "${1:-}" = "--check" ]; then
  missing="$(wt_missing_apt)"
  command -v uv >/dev/null 2>&1 || missing="$missing uv"
  command -v cargo >/dev/null 2>&1 || missing="$missing cargo"
  python3 -c 'import jsonschema' >/dev/null 2>&1 || missing="$missing jsonschema"
  python3 -c 'import pytest' >/dev/null 2>&1 || missing="$missing pytest"
  [ -x "$wt_claude_bin" ] || missing="$missing claude-code-$wt_claude_version"
  if [ -n "${missing// /}" ]; then
    echo "deps: missing:$missing" >&2
    return 1 2>/dev/null || exit 1
  fi
  echo "deps: ok (libclang: $(wt_find_libclang), clang: $(command -v clang), uv: $(command -v uv), claude: $wt_claude_bin)"
  return 0 2>/dev/null || exit 0
fi

read -r -a need_apt <<<"$(wt_missing_apt)"
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} with apt-get" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
wt_find_libclang >/dev/null || { echo "deps: libclang-dev is installed but no libclang.so was found; set LIBCLANG_PATH to the directory that has it" >&2; exit 1; }
if ! command -v uv >/dev/null 2>&1; then
  echo "deps: installing uv into $wt_uv_home" >&2
  python3 -m venv "$wt_uv_home"
  "$wt_uv_home/bin/python" -m pip install --quiet --disable-pip-version-check uv
  export PATH="$wt_uv_home/bin:$PATH"
fi
# A Python module the tests import, in the python3 first on PATH: pip into uv's venv once it is
# there, else Debian's python3-<module> (PEP 668: Debian's python refuses a bare `pip install`).
wt_python_module() {
  python3 -c "import $1" >/dev/null 2>&1 && return 0
  if [ "$(command -v python3)" = "$wt_uv_home/bin/python3" ]; then
    echo "deps: installing $1 into $wt_uv_home" >&2
    "$wt_uv_home/bin/python" -m pip install --quiet --disable-pip-version-check "$1"
  else
    echo "deps: installing python3-$1 with apt-get" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "python3-$1" >/dev/null
  fi
}
# tests/suite/plugin.rs and tests/suite/init.rs check the plugin's manifests against Claude Code's
# schemas with jsonschema.
wt_python_module jsonschema
command -v cargo >/dev/null 2>&1 || { echo "deps: cargo not found: install Rust with rustup (https://rustup.rs), then run this again" >&2; exit 1; }

# ---- Claude Code CLI and pytest, for tests/claude ---------------------------------------------
# pytest runs tests/claude.
wt_python_module pytest
wt_install_claude
if [ -x "$wt_claude_bin" ]; then export WT_CLAUDE_BIN="$wt_claude_bin"; fi
# ---- end of Claude Code CLI ---------------------------------------------------------------------
