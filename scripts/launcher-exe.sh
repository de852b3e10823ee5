#!/usr/bin/env bash
# Build the plugin's Windows launcher (crates/launch) with Debian's MinGW-w64 and put it in
# plugin/bin as wt-launch.exe and under each program's name (wt-hook-memory.exe, wt-mcp-server.exe,
# wt-memory.exe, wt-project.exe: Claude Code's exec form starts PROGRAM.exe on Windows), with
# plugin/bin/wt-launch.exe.sha256 recording the exe's sha256 and its source's. The suite checks
# that the committed exe is the recorded one and its source unchanged since (a change to the
# launcher's code without a rebuild fails it). Seconds; installs MinGW-w64 on first use.
#
#   scripts/launcher-exe.sh                 build and commit-ready copies
#   scripts/launcher-exe.sh --source-sha256 print the source's sha256 only (the suite's check)
set -euo pipefail
cd "$(dirname "$0")/.."

# What the launcher is built from: its crate and the two os files it calls.
source_sha256() {
  for f in crates/launch/Cargo.toml crates/launch/src/*.rs crates/base/src/os/process.rs \
    crates/base/src/os/platform.rs; do
    printf '%s\n' "$f"
    cat "$f"
  done | sha256sum | cut -d' ' -f1
}
if [ "${1:-}" = --source-sha256 ]; then
  source_sha256
  exit 0
fi

target=x86_64-pc-windows-gnu
mingw=x86_64-w64-mingw32
command -v "$mingw-gcc-posix" >/dev/null 2>&1 || {
  echo "launcher-exe: installing MinGW-w64 from Debian's packages" >&2
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get install -y -q gcc-mingw-w64-x86-64-posix >/dev/null
}
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="$mingw-gcc-posix" \
  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS="-C link-arg=-static" \
  cargo build -q -p wt-launch --profile launcher --target "$target"
exe="${CARGO_TARGET_DIR:-target}/$target/launcher/wt-launch.exe"
# Only Windows' own DLLs: nothing of MinGW's to ship beside it.
if "$mingw-objdump" -p "$exe" | grep -i 'DLL Name' | grep -viE 'kernel32|ntdll|msvcrt|ws2_32|bcrypt|advapi32|userenv|api-ms-win'; then
  echo "launcher-exe: $exe needs the DLLs above" >&2
  exit 1
fi
for name in wt-launch wt-hook-memory wt-mcp-server wt-memory wt-project; do
  cp "$exe" "plugin/bin/$name.exe"
done
{
  echo "# scripts/launcher-exe.sh: the sha256 of plugin/bin/wt-launch.exe and of what it is built from"
  echo "exe $(sha256sum "$exe" | cut -d' ' -f1)"
  echo "source $(source_sha256)"
} >plugin/bin/wt-launch.exe.sha256
echo "launcher-exe: $(stat -c %s "$exe") bytes, in plugin/bin as wt-launch.exe and each program's .exe" >&2
