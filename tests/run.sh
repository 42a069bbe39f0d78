#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test.
#
#   tests/run.sh              normal build + every test, then the ASan+UBSan
#                             build + every test (what CI runs)
#   tests/run.sh --fast       normal build + every test only
#   tests/run.sh --sanitize   ASan+UBSan build + every test only
#   tests/run.sh ... -- ARGS  extra ctest arguments (e.g. -R shm)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

modes=(normal sanitize)
ctest_args=()
while (($#)); do
  case $1 in
    --fast) modes=(normal); shift ;;
    --sanitize) modes=(sanitize); shift ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "tests/run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# Mesa must not probe for a GPU; sanitizers fail hard and quietly skip
# leaks inside the GL driver, which are not ours (tests/lsan.supp).
export LIBGL_ALWAYS_SOFTWARE=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}

status=0
for mode in "${modes[@]}"; do
  if [[ $mode == sanitize ]]; then
    dir=$root/build-asan
    scripts/setup.sh --build-dir "$dir" --sanitize
  else
    dir=$root/build
    scripts/setup.sh --build-dir "$dir"
  fi
  echo "== tests ($mode build) =="
  if ! ctest --test-dir "$dir" --output-on-failure --timeout 300 -j2 "${ctest_args[@]}"; then
    status=1
  fi
done

# Nothing may be left behind by a test, even a failed one: remove stale
# segments (owner pid dead) and report any that remain.
if [[ -x $root/build/bin/pa-shmctl ]]; then
  "$root/build/bin/pa-shmctl" gc >/dev/null 2>&1 || true
fi
left=$(ls /dev/shm 2>/dev/null | grep '^playarea\.t' || true)
if [[ -n $left ]]; then
  echo "tests/run.sh: shared-memory objects left behind by tests:" >&2
  echo "$left" >&2
  status=1
fi
exit $status
