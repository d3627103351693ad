#!/usr/bin/env bash
# File: fuzz.sh
# Runs every libFuzzer harness of BUILD_DIR (built with -DWHALE_FUZZ=ON) for SECONDS each on a
# fresh copy of its seed corpus tests/fuzz/corpus/<loader>/; the copy, new inputs, crash
# artifacts and logs stay in BUILD_DIR/fuzz/. Fails on the first finding (crash, leak,
# sanitizer report, uncaught exception, one input running over 25 s, over 2 GiB RSS).
# Usage (from anywhere): scripts/fuzz.sh [BUILD_DIR] [SECONDS]   (defaults: build-asan 30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build-asan}" && pwd)
seconds=${2:-30}
work="$build/fuzz"
for fuzzer in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$fuzzer" ] || continue
  loader=$(basename "$fuzzer"); loader=${loader#fuzz_}
  rm -rf "$work/corpus/$loader" && mkdir -p "$work/corpus/$loader" "$work/artifacts" "$work/run"
  cp tests/fuzz/corpus/"$loader"/* "$work/corpus/$loader/"
  log="$work/$loader.log"
  # Harnesses write their input file into the current folder.
  if ! (cd "$work/run" && "$fuzzer" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$loader-" \
        "$work/corpus/$loader" >"$log" 2>&1); then
    tail -n 60 "$log"
    echo "fuzz: $loader: FINDING (input under $work/artifacts/, log $log)"
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz: $loader: ${runs:-?} runs in ${seconds} s, no finding"
done
