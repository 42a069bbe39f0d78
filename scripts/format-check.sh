#!/usr/bin/env bash
# Checks that the C lines added since BASE are clang-format clean.
#
#   scripts/format-check.sh [BASE]    default BASE: the commit that added
#                                     .clang-format (older code is as it was)
#   scripts/format-check.sh --fix [BASE]   reformat those lines in place
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fix=0
if [[ ${1:-} == --fix ]]; then fix=1; shift; fi
cfd=$(command -v clang-format-diff-14 || command -v clang-format-diff || true)
if [[ -z $cfd ]]; then
  echo "format-check: clang-format-diff not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "format-check: not a git checkout: nothing to compare" >&2
  exit 0
fi
base=${1:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -n 1)}
if [[ -z $base ]]; then
  echo "format-check: .clang-format is not committed yet: nothing to compare" >&2
  exit 0
fi
# Only our C sources; generated and third-party code is not ours to format.
paths=(':(glob)**/*.c' ':(glob)**/*.h')
if ((fix)); then
  git diff -U0 --no-color "$base" -- "${paths[@]}" | "$cfd" -p1 -i
  exit 0
fi
out=$(git diff -U0 --no-color "$base" -- "${paths[@]}" | "$cfd" -p1)
if [[ -n $out ]]; then
  printf '%s\n' "$out"
  echo "format-check: lines added since ${base:0:9} are not clang-format clean;" \
       "run scripts/format-check.sh --fix" >&2
  exit 1
fi
echo "format-check: lines added since ${base:0:9} are clean"
