#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang and runs each for a while.
#
#   scripts/fuzz.sh [seconds per target] [work dir]      (default 20 s, build/fuzz)
#   MRCNN_FUZZ_TARGETS="fuzz_spec fuzz_shard" scripts/fuzz.sh 3600    (some targets, an hour)
# ctest runs it short; run it by hand for longer and write the executions down in
# docs/BENCHMARKS.md ("Fuzzing").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-20}"
work="${2:-$root/build/fuzz}"
mkdir -p "$work"
if [[ ! -f "$work/build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -G Ninja -S "$root/tests/fuzz" -B "$work/build" > "$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; exit 1; }
fi
ninja -C "$work/build" > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }

# Seed corpora: real COCO files and a few masks and polygons, and the small seeds kept in
# tests/fuzz/corpus/<target> (specs, shards, engine events).
mkdir -p "$work/corpus/coco_json" "$work/corpus/rle_string" "$work/corpus/polygon"
for seeds in "$root"/tests/fuzz/corpus/*/; do
  name="$(basename "$seeds")"
  mkdir -p "$work/corpus/$name"
  cp -n "$seeds"* "$work/corpus/$name/" 2>/dev/null || true
done
shared="${MRCNN_SHARED_DIR:-$root/../shared}"
cp -n "$shared"/data/tinycoco/annotations/*.json "$work/corpus/coco_json/" 2>/dev/null || true
cp -n "$root"/tests/dataset/coco_reader_warnings.json "$work/corpus/coco_json/" 2>/dev/null || true
printf '\x0a\x00\x0a\x0052<0ROa0' > "$work/corpus/rle_string/seed1"
printf '\x10\x00\x20\x00' > "$work/corpus/rle_string/empty"
printf '\x40\x40\x00\x00\x00\x00\x00\x00\x00\x24\x40\x00\x00\x00\x00\x00\x00\x24\x40' > "$work/corpus/polygon/seed1"

status=0
targets="${MRCNN_FUZZ_TARGETS:-fuzz_coco_json fuzz_rle_string fuzz_polygon fuzz_spec fuzz_shard fuzz_events}"
for target in $targets; do
  mkdir -p "$work/corpus/${target#fuzz_}"
  corpus="$work/corpus/${target#fuzz_}"
  log="$work/$target.log"
  # A fixed seed keeps the suite's short run repeatable; set MRCNN_FUZZ_SEED=0 for a random one.
  if "$work/build/$target" "$corpus" -seed="${MRCNN_FUZZ_SEED:-1}" -max_total_time="$seconds" \
      -max_len=65536 -timeout=10 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/$target-" > "$log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "$target: ${runs} executions in ${seconds} s, no failure"
  else
    echo "$target: FAILED (see $log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5
    status=1
  fi
done
exit $status
