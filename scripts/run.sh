#!/usr/bin/env bash
# The run command: installs what is missing, builds, and starts the whole
# stack in the foreground on the built-in default map. Flags go to playarea.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Build output goes to stderr: stdout carries only the ready line.
"$root/scripts/setup.sh" --build-dir "$root/build" >&2
export LIBGL_ALWAYS_SOFTWARE=${LIBGL_ALWAYS_SOFTWARE:-1}
exec "$root/build/bin/playarea" "$@"
