#!/usr/bin/env bash
# Check the GitHub workflows with no GitHub reached: each against the workflow schema
# (check-jsonschema's vendored copy of SchemaStore's github-workflow.json), then zizmor's offline
# audits (pinned actions, permissions, credentials left in checkouts, template injection, cache
# poisoning, ...). Any finding fails. Both tools are installed from PyPI, pinned, into the venv
# scripts/deps.sh makes (made here if missing) when they are not there yet.
# Usage: scripts/check-workflows.sh
set -euo pipefail
cd "$(dirname "$0")/.."

check_jsonschema_version=0.39.0
zizmor_version=1.32.0
venv="${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/uv-venv"

installed() { # TOOL VERSION: the venv's TOOL is that version
  [ -x "$venv/bin/$1" ] && "$venv/bin/$1" --version 2>/dev/null | grep -q "[ v]$2\$"
}
if ! installed check-jsonschema "$check_jsonschema_version" || ! installed zizmor "$zizmor_version"; then
  echo "check-workflows: installing check-jsonschema $check_jsonschema_version and zizmor $zizmor_version into $venv" >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  if [ -x "$venv/bin/uv" ]; then
    "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" \
      "check-jsonschema==$check_jsonschema_version" "zizmor==$zizmor_version"
  else
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "check-jsonschema==$check_jsonschema_version" "zizmor==$zizmor_version"
  fi
fi

shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
[ ${#workflows[@]} -gt 0 ] || { echo "check-workflows: no workflow in .github/workflows" >&2; exit 1; }
"$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows "${workflows[@]}"
# No colour, no progress bar: the log stays plain. Exit status 0 only with no finding at all.
NO_COLOR=1 "$venv/bin/zizmor" --offline --no-progress --format plain .github/workflows/
echo "check-workflows: ${#workflows[@]} workflow(s): schema valid, no zizmor finding"
