#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, build dir build-fuzz) and
# runs each one for a bounded time, or replays the committed inputs once.
#
#   tests/fuzz.sh [--replay] [--build-only] [TARGET...]
#
#   TARGET          text json world map_yaml image ws mcap http player (default: all)
#   --replay        run every target once over tests/fuzz/corpus/<t> and
#                   tests/fuzz/crashes/<t>, no fuzzing (a regression test)
#   --build-only    configure and build, run nothing
#   PA_FUZZ_SECONDS seconds per target (default 20)
#   PA_FUZZ_SKIP    comma-separated targets not to run (e.g. image,json)
#   PA_FUZZ_BUILD_DIR  build dir (default <repo>/build-fuzz)
#
# A crash, leak, sanitizer report or timeout fails the run (exit 1) after
# every target has run; the reproducer is kept under tests/fuzz/artifacts/<t>/
# and its path printed. Replay it: build-fuzz/bin/fuzz_<t> <file>.
# New corpus entries found while fuzzing go to build-fuzz/fuzz-corpus/<t>/
# (not the repository's seed corpus). docs/operations.md, "Fuzzing".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

all=(text json world map_yaml image ws mcap http player)
replay=0
build_only=0
targets=()
while (($#)); do
  case $1 in
    --replay) replay=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "tests/fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *)
      if [[ " ${all[*]} " != *" $1 "* ]]; then
        echo "tests/fuzz.sh: unknown target '$1' (one of: ${all[*]})" >&2
        exit 2
      fi
      targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${all[@]}")
secs=${PA_FUZZ_SECONDS:-20}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
  echo "tests/fuzz.sh: PA_FUZZ_SECONDS '$secs' is not a whole number of seconds > 0" >&2
  exit 2
fi
IFS=, read -r -a skip <<<"${PA_FUZZ_SKIP:-}"
for s in "${skip[@]}"; do
  if [[ -n $s && " ${all[*]} " != *" $s "* ]]; then
    echo "tests/fuzz.sh: PA_FUZZ_SKIP names unknown target '$s' (one of: ${all[*]})" >&2
    exit 2
  fi
done
dir=${PA_FUZZ_BUILD_DIR:-$root/build-fuzz}

# clang and its libFuzzer runtime come from scripts/setup.sh's package list.
scripts/setup.sh --test-deps --no-build
cmake -S "$root" -B "$dir" -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPA_FUZZ=ON -DPA_BUILD_TESTS=OFF \
  -DPA_BUILD_RENDER=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzz_all pa-shmctl
((build_only)) && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}

dict_of() { case $1 in world|map_yaml) echo yaml ;; *) echo "$1" ;; esac; }
max_len_of() {
  case $1 in text) echo 1100 ;; image) echo 32768 ;; *) echo 16384 ;; esac
}

status=0
failed=()
for t in "${targets[@]}"; do
  if [[ ",${PA_FUZZ_SKIP:-}," == *",$t,"* ]]; then
    echo "== fuzz $t: skipped (PA_FUZZ_SKIP)"
    continue
  fi
  bin=$dir/bin/fuzz_$t
  art=$root/tests/fuzz/artifacts/$t
  mkdir -p "$art"
  inputs=("$root/tests/fuzz/corpus/$t")
  [[ -d $root/tests/fuzz/crashes/$t ]] && inputs+=("$root/tests/fuzz/crashes/$t")
  log=$art/last.log
  args=(-artifact_prefix="$art/" -rss_limit_mb=2048 -timeout=25
        -max_len="$(max_len_of "$t")" -dict="$root/tests/fuzz/$(dict_of "$t").dict")
  if ((replay)); then
    echo "== replay $t"
    args+=(-runs=0)
  else
    echo "== fuzz $t (${secs} s)"
    work=$dir/fuzz-corpus/$t
    mkdir -p "$work"
    args+=(-max_total_time="$secs" -print_final_stats=1)
    inputs=("$work" "${inputs[@]}")
  fi
  # the file targets' input files: a crash skips their own clean-up
  tmp=$dir/fuzz-tmp
  rm -rf "$tmp" && mkdir -p "$tmp"
  rc=0
  TMPDIR=$tmp "$bin" "${args[@]}" "${inputs[@]}" >"$log" 2>&1 || rc=$?
  rm -rf "$tmp"
  # the json target's test instance, if it died before removing it
  "$dir/bin/pa-shmctl" gc t >/dev/null 2>&1 || true
  if ((rc != 0)); then
    status=1
    failed+=("$t")
    echo "tests/fuzz.sh: fuzz_$t failed (exit $rc); the end of its log ($log):" >&2
    grep -v '^INFO:\|^#[0-9]' "$log" | tail -n 40 >&2 || true
    repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [[ -n $repro ]]; then
      echo "tests/fuzz.sh: reproducer: $repro" >&2
      echo "tests/fuzz.sh: replay it: $bin $repro" >&2
    else
      echo "tests/fuzz.sh: the failing input is one of: ${inputs[*]}" >&2
    fi
  else
    grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec)|DONE ' \
      "$log" | tail -n 3 | sed 's/^/  /'
    rm -f "$log"
  fi
done
if ((status == 0)); then
  echo "tests/fuzz.sh: no crash ($(((replay)) && echo replay || echo "${secs} s each"))"
else
  echo "tests/fuzz.sh: FAILED: ${failed[*]}" >&2
fi
exit $status
