#!/usr/bin/env bash
# Does the code build for every platform we ship (Linux and macOS, x86_64 and arm64, and Windows
# x86_64)? The cheap check CI runs (seconds, no C compiler for other targets): everything that
# differs per system lives in crates/base/src/os/ and only there calls libc or windows-sys (no
# other crate depends on them), so checking the engine-free crate for each target, warnings as
# errors, catches a call of one system; and no other code may name a system of its own (no
# `cfg(target_os)`, `cfg(unix)` or `cfg(windows)`, no `std::os::unix`, `std::os::windows` or
# `std::os::linux`).
# The linked cross builds of the whole project are scripts/cross-build.sh (hours, not CI).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin
  x86_64-pc-windows-gnu)
installed="$(rustup target list --installed)"
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t" >/dev/null
done
status=0
if grep -rnE 'cfg\((all\(|not\()?(target_os|unix|windows)|std::os::(linux|unix|windows)|libc::|windows_sys::' src crates/vectors/src crates/foundation/src crates/core/src crates/ops/src crates/service/src; then
  echo "check-targets: the lines above name a system outside crates/base/src/os/: move them there" >&2
  status=1
fi
if grep -rnE 'cfg\((all\(|not\()?(target_os|unix|windows)|std::os::(linux|unix|windows)|libc::|windows_sys::' crates/base/src --include=*.rs | grep -v '^crates/base/src/os/'; then
  echo "check-targets: the lines above name a system outside crates/base/src/os/: move them there" >&2
  status=1
fi
for t in "${targets[@]}"; do
  echo "check-targets: $t" >&2
  RUSTFLAGS="-D warnings" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/check-targets" \
    cargo check -q -p wt-memory-base --all-targets --target "$t" || status=1
done
exit $status
