#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test.
#
#   tests/run.sh              normal build + every test, then the ASan+UBSan
#                             build + every test, then a bounded libFuzzer run
#                             of every target (what CI runs)
#   tests/run.sh --fast       normal build + every test only
#   tests/run.sh --sanitize   ASan+UBSan build + every test only
#   tests/run.sh --fuzz       the fuzz run only (tests/fuzz.sh; PA_FUZZ_SECONDS,
#                             PA_FUZZ_SKIP=image,... as there)
#   tests/run.sh --tsan       ThreadSanitizer build + the multi-threaded tests
#                             (the sim's worker pool, the shm rings across
#                             processes, the gateway's threads)
#   tests/run.sh ... -- ARGS  extra ctest arguments (e.g. -R shm); mode flags
#                             may be combined, and ARGS without any mode
#                             flag run the normal build only
#   tests/run.sh ... --dry-run  print the modes and ctest arguments, run nothing
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

modes=()
ctest_args=()
dry_run=0
while (($#)); do
  case $1 in
    --fast) modes+=(normal); shift ;;
    --sanitize) modes+=(sanitize); shift ;;
    --fuzz) modes+=(fuzz); shift ;;
    --tsan) modes+=(tsan); shift ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "tests/run.sh: unknown argument '$1' (see tests/run.sh --help)" >&2; exit 2 ;;
  esac
done
if ((${#modes[@]} == 0)); then
  # ctest arguments pick tests of one build; the fuzz run takes none.
  if ((${#ctest_args[@]})); then modes=(normal); else modes=(normal sanitize fuzz tsan); fi
fi
if ((dry_run)); then
  echo "modes: ${modes[*]}"
  echo "ctest arguments: ${ctest_args[*]}"
  exit 0
fi

# Mesa must not probe for a GPU; sanitizers fail hard and quietly skip
# leaks inside the GL driver, which are not ours (tests/lsan.supp).
export LIBGL_ALWAYS_SOFTWARE=1
# Nor write the user's shader cache (~/.cache/mesa_shader_cache): its
# writer thread, still running at exit, made LeakSanitizer's tracer crash
# after test_render_shade had passed (3 runs in 16).
export MESA_SHADER_CACHE_DISABLE=true
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}

shmctl() { [[ -x $dir/bin/pa-shmctl ]] && "$dir/bin/pa-shmctl" "$@"; }

# Every process this run starts carries PA_TEST_RUN=<id> (inherited through
# ctest, the test binaries, playarea and its children); the checks below
# report and end only those, never a stack the user runs from the same
# build (scripts/run.sh in another terminal).
run_id=run$$-$(date +%s%N)
export PA_TEST_RUN=$run_id
# "PID CMDLINE" of this run's processes still running from $dir/bin.
run_procs() {
  local p pid exe env
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    [[ $exe == "$dir/bin/"* ]] || continue
    env=$(tr '\0' '\n' <"$p/environ" 2>/dev/null) || continue
    grep -qxF "PA_TEST_RUN=$run_id" <<<"$env" || continue
    echo "$pid $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
  done
}
# Stale test instances ("t<pid>-..."; their owner is dead): leaked by a test.
# Live ones belong to a concurrent run; other names are not ours to touch.
gc_test_instances() {
  local inst
  for inst in $(shmctl ls 2>/dev/null | awk '$2 == "stale" && $1 ~ /^t[0-9]+-/ {print $1}'); do
    shmctl rm "$inst" >/dev/null 2>&1 && echo "removed stale instance $inst"
  done
}

# What failed, printed again at the very end: a CI log is often read from
# its tail, and the first failure may be a thousand lines above it.
failed_logs=()
problems=()
# The block ctest printed for each failed test (--output-on-failure puts a
# test's output right after its status line), 60 lines at most each.
summarize() {
  local entry mode log
  echo "== tests/run.sh: what failed =="
  for entry in "${problems[@]}"; do echo "- $entry"; done
  for entry in "${failed_logs[@]}"; do
    mode=${entry%%:*}
    log=${entry#*:}
    echo "-- $mode build: $(grep -c -E '\*\*\*|\(Failed\)|\(Timeout\)' "$log") lines of failure in $log"
    sed -n '/The following tests FAILED:/,$p' "$log"
    awk '/Test +#[0-9]+: .*(\*\*\*|Failed|Timeout|Exception)/ {keep = 60; print "--"; print; next}
         /^ *Start +[0-9]+: |^ *[0-9]+\/[0-9]+ Test +#/ {keep = 0}
         keep > 0 {print; keep--}' "$log"
  done
}

status=0
for mode in "${modes[@]}"; do
  if [[ $mode == fuzz ]]; then
    # libFuzzer targets in build-fuzz, each for a bounded time; a crash fails
    # the run and keeps its reproducer (tests/fuzz.sh prints where).
    echo "== fuzz (build-fuzz) =="
    if ! tests/fuzz.sh; then
      status=1
      problems+=("fuzz: tests/fuzz.sh failed (its output above names the target and the reproducer)")
    fi
    continue
  fi
  mode_args=()
  if [[ $mode == sanitize ]]; then
    dir=$root/build-asan
    scripts/setup.sh --test-deps --build-dir "$dir" --sanitize
  elif [[ $mode == tsan ]]; then
    # The multi-threaded tests, in process: the sim's worker pool and
    # overlapped scans, the gateway's threads, the shm primitives. The ones
    # that time several processes (sim_proc, shm_mp, e2e, robust, chaos) run
    # in the other modes: TSan's 5-15x slows them past their time bounds on
    # a busy 2-core machine, not into races (docs/operations.md: how to run
    # them under TSan by hand).
    dir=$root/build-tsan
    scripts/setup.sh --test-deps --build-dir "$dir" -- -DPA_TSAN=ON
    mode_args=(-R '^(test_shm|test_sim_run|test_sim_collide|test_netgw)$')
  else
    dir=$root/build
    scripts/setup.sh --test-deps --build-dir "$dir"
  fi
  # Test instances ("t<pid>-...") left by an earlier, interrupted run.
  gc_test_instances >/dev/null || true
  echo "== tests ($mode build) =="
  log=$dir/Testing/run-$mode.log
  mkdir -p "$dir/Testing"
  if ! TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
      ctest --test-dir "$dir" --output-on-failure --timeout 600 -j2 \
      "${mode_args[@]}" "${ctest_args[@]}" 2>&1 | tee "$log"; then
    status=1
    failed_logs+=("$mode:$log")
  fi
  # Nothing may be left behind by a test, even a failed one. A test instance
  # whose owner is dead was leaked (live ones belong to a concurrent run).
  leaked=$(gc_test_instances || true)
  if [[ -n $leaked ]]; then
    echo "tests/run.sh: shared-memory objects left behind by $mode tests:" >&2
    echo "$leaked" >&2
    status=1
    problems+=("$mode: shared-memory objects left behind: $(tr '\n' ' ' <<<"$leaked")")
  fi
  procs=$(run_procs)
  if [[ -n $procs ]]; then
    echo "tests/run.sh: processes left running by $mode tests:" >&2
    echo "$procs" >&2
    kill -KILL $(cut -d' ' -f1 <<<"$procs") 2>/dev/null || true
    status=1
    problems+=("$mode: processes left running: $(tr '\n' ';' <<<"$procs")")
  fi
done
if ((status == 0)); then
  echo "tests/run.sh: all tests passed (${modes[*]})"
else
  summarize
fi
exit $status
