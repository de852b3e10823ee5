#!/usr/bin/env bash
# The Claude Code CLI this project pins and tests against, and its installer: sourced by
# scripts/deps.sh (for tests/claude), run by the Dockerfile (`--build-arg WITH_CLAUDE=1`) and the
# devcontainer feature (`installClaudeCode`). Run as a script it installs the CLI at
# $WT_CLAUDE_DEST (default: the per-user cache below) and prints the path.
# Needs python3 with pip (download, sha256 check and unzip use Python's standard library).
# Claude Code 2.1.332 ships as `claude_agent_sdk/_bundled/claude` inside the PyPI wheel
# claude-agent-sdk 0.2.189 (PyPI is the one registry reached; no npm). The wheel for this machine
# is downloaded once, its sha256 checked against the pin below, and only the binary is kept, in a
# cache that is never put on PATH: tests find it through WT_CLAUDE_BIN.
wt_claude_version=2.1.332
wt_claude_sdk_version=0.2.189
wt_claude_bin="${WT_CLAUDE_DEST:-${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/claude-code/$wt_claude_version/claude}"
wt_claude_wheel() { # prints this machine's wheel platform tag and its pinned sha256
  case "$(uname -sm)" in
    'Linux x86_64') echo manylinux_2_17_x86_64 b26a6a30a4e2cb025a6f5c95e1ce4469b38fcc51015c392f627bea7c948d67ad ;;
    'Linux aarch64' | 'Linux arm64') echo manylinux_2_17_aarch64 7e89e56f968a2f2b09e1a86cb66a937f004fc33948faad66425df847b07c5769 ;;
    'Darwin arm64') echo macosx_11_0_arm64 52787450048ce5eb950106e0566ed7c36544e6fc6c974f11d2c3c8c953612445 ;;
    'Darwin x86_64') echo macosx_11_0_x86_64 3f52f027373b68080cdcb2f01da01835cf4967a4e9f1647fcd35fdbdfa785591 ;;
    *) return 1 ;;
  esac
}
wt_install_claude() {
  [ -x "$wt_claude_bin" ] && return 0
  local tag sha py tmp
  read -r tag sha <<<"$(wt_claude_wheel)" || true
  # Another platform: no pin, so no CLI; tests/claude then skip (and fail under CI=true).
  [ -n "${tag:-}" ] || { echo "deps: no pinned claude-agent-sdk wheel for $(uname -sm): tests/claude will not run" >&2; return 0; }
  py="${wt_python_for_claude:-python3}"
  echo "deps: installing Claude Code $wt_claude_version (claude-agent-sdk==$wt_claude_sdk_version, $tag) into ${wt_claude_bin%/*}" >&2
  mkdir -p "${wt_claude_bin%/*}"
  tmp="$(mktemp -d "${wt_claude_bin%/*}/.tmp.XXXXXX")"
  if ! "$py" -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps \
    --only-binary=:all: --platform "$tag" -d "$tmp" "claude-agent-sdk==$wt_claude_sdk_version"; then
    rm -rf "$tmp"; echo "deps: downloading claude-agent-sdk==$wt_claude_sdk_version failed" >&2; return 1
  fi
  # Verify, then extract the one member, with Python's standard library (no unzip, no sha256sum).
  if ! "$py" - "$tmp" "$sha" "$wt_claude_bin" <<'PYEOF'
import glob, hashlib, os, shutil, sys, zipfile
tmp, want, dest = sys.argv[1:4]
wheels = glob.glob(os.path.join(tmp, "*.whl"))
if len(wheels) != 1:
    sys.exit(f"deps: expected one wheel in {tmp}, found {wheels}")
h = hashlib.sha256()
with open(wheels[0], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
if h.hexdigest() != want:
    sys.exit(f"deps: {os.path.basename(wheels[0])}: sha256 {h.hexdigest()} is not the pinned {want}: refused")
part = os.path.join(tmp, "claude")
with zipfile.ZipFile(wheels[0]) as z, z.open("claude_agent_sdk/_bundled/claude") as src, open(part, "wb") as out:
    shutil.copyfileobj(src, out, 1 << 20)
os.chmod(part, 0o755)
os.replace(part, dest)
PYEOF
  then
    rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  wt_install_claude
  [ -x "$wt_claude_bin" ] || exit 1
  echo "$wt_claude_bin"
fi
