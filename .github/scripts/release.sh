#!/usr/bin/env bash
# The steps of .github/workflows/release.yml, one per argument, for the runner it is on:
#   deps     Rust with the target, the C/C++ toolchain and libclang, git, tmux, a browser for the
#            report test, Python with uv, jsonschema and pytest (in the venv scripts/deps.sh makes),
#            and on Linux zig with cargo-zigbuild (the binaries then need only glibc 2.28)
#   test     as root, like the project's CI: SUITE=full: .ci/run, the whole suite (Linux x86_64,
#            Docker); SUITE=cargo: the Rust suite on both paths (the service and direct), with the
#            model from `wt-memory setup`; SUITE=windows: the engine-free crate's tests (the Rust
#            suite is POSIX-only), the rest of Windows' checking is the smoke step
#   build    the release binaries for $TARGET, in target/$TARGET/release
#   dist     scripts/dist.sh: the archive and its .sha256 in dist/release, pinned in a copy of the
#            lock (dist/release/dist.lock; the publish job writes the real one)
#   smoke    the archive as a user gets it: the plugin's launcher downloads it from file://,
#            verifies and unpacks it; its programs remember, recall and inject with its own model
#   publish  (the publish job) checks the five archives, pins them all in plugin/dist.lock and
#            creates the GitHub release $TAG with the archives, their checksums, the lock and
#            Windows' install.ps1
# Environment: TARGET (a Rust target triple), SUITE (full|cargo|windows); for publish TAG, REPO,
# GH_TOKEN. On Windows the steps run in the runner's Git Bash.
# macOS runners have bash 3.2: nothing newer is used here.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"

# Pins of the tools installed from PyPI here (the versions scripts/cross-build.sh builds with here).
ZIGLANG=0.17.1
CARGO_ZIGBUILD=0.24.1
# The oldest glibc the Linux binaries need: that of the ONNX Runtime they load (manylinux_2_28).
GLIBC=2.28

log() { printf '[release %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[release] error: %s\n' "$*" >&2; exit 1; }
: "${GITHUB_PATH:=/dev/null}" "${GITHUB_ENV:=/dev/null}" "${GITHUB_STEP_SUMMARY:=/dev/null}"
os="$(uname -s)"
case "$os" in MINGW* | MSYS*) os=Windows ;; esac
venv="${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/uv-venv"
tools="$HOME/.wt-release-bin"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

deps() {
  : "${TARGET:?TARGET is not set}"
  mkdir -p "$tools"
  echo "$tools" >>"$GITHUB_PATH"
  export PATH="$tools:$PATH"
  case "$os" in
    Linux)
      log "apt: the C/C++ toolchain, libclang, git, tmux, python3-venv"
      sudo_ apt-get update -qq
      sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        clang libclang-dev g++ make git python3-venv tmux >/dev/null
      browser="$(command -v chromium || command -v google-chrome || command -v google-chrome-stable || true)"
      ;;
    Darwin)
      log "brew: tmux and GNU tar; Xcode's clang and libclang"
      HOMEBREW_NO_AUTO_UPDATE=1 HOMEBREW_NO_INSTALL_CLEANUP=1 brew install --quiet tmux gnu-tar >/dev/null
      xcode="$(xcode-select -p)"
      for d in "$xcode/Toolchains/XcodeDefault.xctoolchain/usr/lib" "$xcode/usr/lib"; do
        if [ -e "$d/libclang.dylib" ]; then echo "LIBCLANG_PATH=$d" >>"$GITHUB_ENV"; break; fi
      done
      browser=""
      for b in "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" "/Applications/Chromium.app/Contents/MacOS/Chromium"; do
        if [ -x "$b" ]; then browser="$b"; break; fi
      done
      ;;
    Windows)
      # The image's MSVC, LLVM (libclang for RocksDB's bindings) and Python.
      log "Windows: the image's MSVC and LLVM"
      echo "LIBCLANG_PATH=C:\\Program Files\\LLVM\\bin" >>"$GITHUB_ENV"
      browser=""
      ;;
    *) die "no release build on $os" ;;
  esac
  # tests/suite/report.rs runs `chromium`: the runner's Chrome under that name, where it has one.
  if [ -n "$browser" ] && [ "$browser" != "$tools/chromium" ] && ! command -v chromium >/dev/null 2>&1; then
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$browser" >"$tools/chromium"
    chmod +x "$tools/chromium"
  fi

  if ! command -v rustup >/dev/null 2>&1; then
    log "rustup (not on this image)"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --no-modify-path
    echo "$HOME/.cargo/bin" >>"$GITHUB_PATH"
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  rustup toolchain install stable --profile minimal --component rustfmt,clippy
  rustup default stable
  rustup target add "$TARGET"

  log "Python venv $venv: uv, jsonschema, pytest"
  if [ "$os" = Windows ]; then
    # Nothing of Python is needed for the Windows leg (no Python suite, no zig).
    return 0
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check uv jsonschema pytest
  if [ "$os" = Linux ]; then
    log "zig $ZIGLANG and cargo-zigbuild $CARGO_ZIGBUILD"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "ziglang==$ZIGLANG" "cargo-zigbuild==$CARGO_ZIGBUILD"
  fi
  echo "$venv/bin" >>"$GITHUB_PATH"

  # The container tests' base image: .ci/images.sh makes it with debootstrap where no registry is
  # reached; a runner pulls the official one.
  if [ "${SUITE:-cargo}" = full ]; then
    docker pull -q debian:bookworm-slim
  fi

  # The suite makes real git commits.
  git config --global user.email >/dev/null 2>&1 || {
    git config --global user.name "wt-tools release"
    git config --global user.email "release@wt-tools.invalid"
  }
}

# The suite runs as root, as the project's CI does (.ci/run): its cross-user tests need a second
# uid, and under CI=true a test that cannot run fails. A runner's user has sudo without a password;
# what root wrote in the checkout and the home is given back to that user afterwards.
test_suite() {
  if [ "${SUITE:-cargo}" = windows ]; then
    cargo fmt --all -- --check
    cargo test --locked -p wt-memory-base
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    sudo -n true 2>/dev/null || die "the suite runs as root (cross-user tests), and sudo asks for a password"
    local rc=0 me
    me="$(id -u):$(id -g)"
    log "the suite runs as root (sudo)"
    sudo -n -E env "PATH=$PATH" "HOME=$HOME" "TARGET=${TARGET:-}" "SUITE=${SUITE:-cargo}" "CI=${CI:-}" \
      "$ROOT/.github/scripts/release.sh" test || rc=$?
    sudo -n chown -R "$me" "$ROOT"
    sudo -n find "$HOME" -xdev -user 0 -exec chown -h "$me" {} + 2>/dev/null || true
    return "$rc"
  fi
  case "${SUITE:-cargo}" in
    full) .ci/run ;;
    cargo)
      skip=()
      if ! command -v chromium >/dev/null 2>&1; then
        log "no browser on this runner: the HTML report's rendering test is skipped here"
        skip=(--skip report_renders_in_chromium)
      fi
      cargo fmt --all -- --check
      cargo test --locked --no-run
      cargo test --locked -p wt-memory-base
      "${CARGO_TARGET_DIR:-target}/debug/wt-memory" setup
      # tests/suite/setup.rs serves this platform's pinned files from a local mirror.
      WT_TEST_WHEELS="$PWD/${CARGO_TARGET_DIR:-target}/test-wheels"
      export WT_TEST_WHEELS
      "${CARGO_TARGET_DIR:-target}/debug/wt-memory" setup --download-to "$WT_TEST_WHEELS" >/dev/null
      cargo test --locked --no-fail-fast -- --test-threads=2 ${skip[@]+"${skip[@]}"}
      WT_MEMORY_DAEMON=0 cargo test --locked --no-fail-fast -- --test-threads=2 ${skip[@]+"${skip[@]}"}
      ;;
    *) die "SUITE is full or cargo, not $SUITE" ;;
  esac
}

build() {
  : "${TARGET:?TARGET is not set}"
  case "$TARGET" in
    *-linux-gnu)
      log "cargo zigbuild --release --target $TARGET.$GLIBC"
      cargo zigbuild --release --locked -p wt-memory --bins --target "$TARGET.$GLIBC"
      ;;
    *-apple-darwin)
      # macOS 11 (Big Sur) and later: the oldest the arm64 Macs run, and the ONNX Runtime's floor.
      export MACOSX_DEPLOYMENT_TARGET="${MACOSX_DEPLOYMENT_TARGET:-11.0}"
      log "cargo build --release --target $TARGET (macOS $MACOSX_DEPLOYMENT_TARGET or later)"
      cargo build --release --locked -p wt-memory --bins --target "$TARGET"
      ;;
    *-windows-msvc)
      log "cargo build --release --target $TARGET"
      cargo build --release --locked -p wt-memory --bins --target "$TARGET"
      ;;
    *) die "no release build for $TARGET" ;;
  esac
}

dist() {
  : "${TARGET:?TARGET is not set}"
  mkdir -p dist/release
  cp plugin/dist.lock dist/release/dist.lock
  # The model and runtime `wt-memory setup` installed (the test step ran it).
  "target/$TARGET/release/wt-memory" setup
  scripts/dist.sh --target "$TARGET" --bin-dir "target/$TARGET/release" \
    --out dist/release --lock dist/release/dist.lock
}

# On Windows the plugin's Windows launcher (plugin/bin/*.exe, as Claude Code's exec form starts
# it) fetches the .zip and unpacks it with Windows' own tar, with no Git Bash between Claude Code
# and the programs; paths it is given are Windows paths.
smoke() {
  : "${TARGET:?TARGET is not set}"
  local archive="wt-tools-$version-$TARGET.tar.gz" x="" work repo data out
  if [ "$os" = Windows ]; then archive="wt-tools-$version-$TARGET.zip" x=.exe; fi
  [ -f "dist/release/$archive" ] || die "dist/release/$archive is missing: run the dist step first"
  work="$(mktemp -d)"
  repo="$work/repo"
  data="$work/plugin-data"
  cp -R plugin "$work/plugin"
  cp dist/release/dist.lock "$work/plugin/dist.lock"
  mkdir -p "$work/home" "$repo"
  git -C "$repo" init -q
  git -C "$repo" commit -q --allow-empty -m init
  native() { if [ "$os" = Windows ]; then cygpath -m "$1"; else printf '%s' "$1"; fi; }
  # A user's first run: nothing of ours on PATH or in the data folder, the archive from file://.
  run() {
    if [ "$os" = Windows ]; then
      (cd "$repo" && env -u SHODH_PACKAGE_DIR -u WT_TOOLS_BIN_DIR -u CARGO_TARGET_DIR \
        USERPROFILE="$(native "$work/home")" LOCALAPPDATA="$(native "$work/home/local")" \
        CLAUDE_PLUGIN_ROOT="$(native "$work/plugin")" CLAUDE_PLUGIN_DATA="$(native "$data")" \
        CLAUDE_PROJECT_DIR="$(native "$repo")" WT_TOOLS_DIST_BASE="file:///$(native "$ROOT/dist/release")" "$@")
    else
      (cd "$repo" && env -u SHODH_PACKAGE_DIR -u WT_TOOLS_BIN_DIR -u CARGO_TARGET_DIR \
        HOME="$work/home" XDG_DATA_HOME="$work/home/data" XDG_CONFIG_HOME="$work/home/config" \
        XDG_STATE_HOME="$work/home/state" CLAUDE_PLUGIN_ROOT="$work/plugin" CLAUDE_PLUGIN_DATA="$data" \
        CLAUDE_PROJECT_DIR="$repo" WT_TOOLS_DIST_BASE="file://$ROOT/dist/release" \
        PATH="/usr/local/bin:/usr/bin:/bin" "$@")
    fi
  }
  log "the plugin's launcher fetches $archive"
  out="$(run "$work/plugin/bin/wt-memory$x" --version)"
  case "$out" in *" $version"*) ;; *) die "wt-memory --version printed: $out" ;; esac
  [ -f "$data/dist/$version/$TARGET/bin/wt-memory-engine$x" ] || die "the archive was not unpacked for $TARGET"
  log "remember, recall, a prompt hook"
  echo "We chose Postgres over SQLite because of concurrent writers" |
    run "$work/plugin/bin/wt-memory$x" remember --type Decision --keys "what database do we use, and why?" "Postgres SQLite"
  out="$(run "$work/plugin/bin/wt-memory$x" recall "which database and why")"
  printf '%s\n' "$out"
  case "$out" in *Postgres*) ;; *) die "recall did not find the memory" ;; esac
  out="$(printf '{"session_id":"smoke","hook_event_name":"UserPromptSubmit","prompt":"which database do we use, and why?","cwd":"%s"}' "$(native "$repo")" |
    run "$work/plugin/bin/wt-hook-memory$x" UserPromptSubmit)"
  printf '%s\n' "$out"
  case "$out" in *Postgres*) ;; *) die "the prompt hook injected nothing" ;; esac
  run "$work/plugin/bin/wt-memory$x" daemon stop >/dev/null 2>&1 || true
  rm -rf "$work"
  log "smoke test of $archive passed"
}

publish() {
  : "${TAG:?TAG is not set}" "${REPO:?REPO is not set}"
  [ "$TAG" = "v$version" ] || die "tag $TAG is not v$version, Cargo.toml's version"
  local dir=dist/release archives=() pins=() t f
  for t in aarch64-apple-darwin aarch64-unknown-linux-gnu x86_64-apple-darwin x86_64-unknown-linux-gnu \
    x86_64-pc-windows-msvc; do
    f="$dir/wt-tools-$version-$t.tar.gz"
    [ "$t" = x86_64-pc-windows-msvc ] && f="$dir/wt-tools-$version-$t.zip"
    [ -f "$f" ] && [ -f "$f.sha256" ] || die "$f or its .sha256 is missing"
    (cd "$dir" && sha256sum --check --strict "${f##*/}.sha256") >&2
    archives+=("$f" "$f.sha256")
    pins+=(--pin "$f")
  done
  scripts/dist.sh "${pins[@]}" --lock plugin/dist.lock \
    --base "https://github.com/$REPO/releases/download/$TAG"
  cp plugin/dist.lock "$dir/dist.lock"
  {
    echo "## wt-tools $version"
    echo
    echo "Commit this plugin/dist.lock so that the plugin's launcher downloads these archives:"
    echo
    echo '```text'
    cat plugin/dist.lock
    echo '```'
  } >>"$GITHUB_STEP_SUMMARY"
  log "gh release create $TAG"
  gh release create "$TAG" --repo "$REPO" --verify-tag --title "wt-tools $version" \
    --notes "wt-tools $version for Linux (x86_64, aarch64; glibc $GLIBC or later), macOS (arm64, x86_64) and Windows (x86_64; install.ps1). Each archive holds the programs and the pinned model and ONNX Runtime; dist.lock pins them by sha256 for the Claude Code plugin's launcher." \
    "${archives[@]}" "$dir/dist.lock" "$dir/install.ps1"
}

[ $# -gt 0 ] || die "usage: $0 deps|test|build|dist|smoke|publish"
for step in "$@"; do
  case "$step" in
    deps) deps ;;
    test) test_suite ;;
    build) build ;;
    dist) dist ;;
    smoke) smoke ;;
    publish) publish ;;
    *) die "unknown step $step" ;;
  esac
done
