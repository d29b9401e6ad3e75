#!/usr/bin/env bash
# The test suites built with sanitizers, each kind in a build folder of its own, and run.
#
#   scripts/sanitize.sh [light|full|thread] [build dir]       (default: light, build/sanitize-*)
#
#   light   AddressSanitizer + UndefinedBehaviorSanitizer on the modules without LibTorch: the
#           spec library, the dataset library (COCO reader, mask API, loader, shards), the COCO
#           evaluation and the event schema, with their tests. ctest runs it (sanitize_light).
#   full    light, and the engine's own tests (LibTorch, not instrumented itself: our code
#           around it is): test_engine, test_ops, the model tests. About 30 minutes cold on
#           2 cores; by hand, results in docs/BENCHMARKS.md ("Sanitizers").
#   thread  ThreadSanitizer on the data loader's threads and the GUI's engine-process
#           handling (test_dataset_loader, test_ui_engine_process). By hand.
#
#   MRCNN_SANITIZE_TESTS="test_ops test_rpn" scripts/sanitize.sh full   builds and runs only
#   those of the mode's tests (e.g. the model's before the engine's, on a busy machine).
#
# A report fails the run (halt_on_error); leaks are reported (LeakSanitizer) except those of
# libraries outside the project, listed in tests/sanitize/lsan.supp.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-light}"
case "$mode" in
  light|full)
    # GCC warns of maybe-uninitialized inside libstdc++ when it instruments (false positives).
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    flags="$flags -Wno-maybe-uninitialized"
    build="${2:-$root/build/sanitize-address}" ;;
  thread)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    build="${2:-$root/build/sanitize-thread}" ;;
  *) echo "usage: scripts/sanitize.sh [light|full|thread] [build dir]" >&2; exit 2 ;;
esac

light_tests=(test_specs test_dataset_shapes test_dataset_rle test_dataset_mask_api
             test_dataset_coco test_dataset_loader test_dataset_shards test_eval)
case "$mode" in
  light) tests=("${light_tests[@]}") ;;
  full) tests=("${light_tests[@]}" test_engine test_ops test_roi_align test_multilevel_roi_align
               test_rpn test_backbone test_roi_heads test_mask_head test_mask_rcnn) ;;
  thread) tests=(test_dataset_loader test_ui_engine_process) ;;
esac
if [[ -n "${MRCNN_SANITIZE_TESTS:-}" ]]; then
  chosen=()
  for t in $MRCNN_SANITIZE_TESTS; do
    [[ " ${tests[*]} " == *" $t "* ]] ||
      { echo "sanitize.sh: $t is not one of the $mode tests: ${tests[*]}" >&2; exit 2; }
    chosen+=("$t")
  done
  tests=("${chosen[@]}")
fi

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
if [[ ! -f "$build/build.ninja" ]]; then
  # -O1 -g1 (line tables): the stacks a report needs, in half the compile of -O2 -g
  # (eval/coco_eval.cpp instrumented: 9 s against 18 s of CPU, AMD EPYC, 2026-11-29).
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" > "$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log"; exit 1; }
fi
started=$(date +%s)
ninja -C "$build" "${tests[@]}" > "$build.build.log" 2>&1 || { tail -40 "$build.build.log"; exit 1; }
echo "[sanitize $mode] built ${#tests[@]} test executables in $(( $(date +%s) - started )) s"

supp="$root/tests/sanitize"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# Instrumented, a Qt test function can take longer than Qt's 300 s default (test_mask_rcnn's
# longest: 263 s under ASan); ctest's per-test limit (900 s) still applies: run a long test's
# functions one at a time (`tests/test_mask_rcnn <function>`) with these options.
export QTEST_FUNCTION_TIMEOUT="${QTEST_FUNCTION_TIMEOUT:-1800000}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
cd "$build"
ctest --output-on-failure --timeout 1800 -R "$regex"
