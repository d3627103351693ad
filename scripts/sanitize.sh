#!/usr/bin/env bash
# File: sanitize.sh
# Builds the unit tests with Clang's AddressSanitizer + UndefinedBehaviorSanitizer (CPU only)
# and runs them with LeakSanitizer on, plus one short MPI test and a quick CPU profile; then
# builds the libFuzzer harnesses (WHALE_FUZZ) in the same folder and runs each for
# FUZZ_SECONDS (default 30) with scripts/fuzz.sh.
# Usage (from anywhere): scripts/sanitize.sh [BUILD_DIR]   (default: build-asan)
# Writes only into BUILD_DIR. Any sanitizer report fails the run (-fno-sanitize-recover=all).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
flags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Build type "Sanitize" has no flags of its own: the optimisation level is the one above, and
# assertions stay on.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Sanitize -DWHALE_CUDA=OFF -DWHALE_FUZZ=ON \
  -DCMAKE_CXX_COMPILER=/usr/bin/clang++ -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
tests=(test_plan test_sim test_exec test_planner test_profile)
mpi_test=mpi_tp_np2
cmake --build "$build" -j"$(nproc)" --target "${tests[@]}" $mpi_test whale-profile whale-sim
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# LeakSanitizer stays on; OpenMPI's own allocations are suppressed by library name.
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
pattern="^($(IFS='|'; echo "${tests[*]}"))\$"
ctest --test-dir "$build" --output-on-failure --timeout 900 -R "$pattern"
# The MPI test: OpenMPI unloads its plugins at MPI_Finalize, which would leave their leaks in
# "<unknown module>"; the shim keeps them loaded, and the slow unwinder walks through OpenMPI's
# frames (built without frame pointers), so that lsan.supp can name them.
/usr/bin/clang -shared -fPIC -O1 -o "$build/libkeep_modules.so" tests/sanitizers/keep_modules.c
LD_PRELOAD="$(realpath "$build/libkeep_modules.so")" ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
  ctest --test-dir "$build" --output-on-failure --timeout 900 -R "^$mpi_test\$"
"$build/apps/whale-profile" --device cpu --quick --out "$build/cpu-quick.yaml" >/dev/null
echo "sanitize: ok (${tests[*]} $mpi_test, whale-profile --quick)"
fuzzers=(cluster model profile plan hints tokens checkpoint trace)
cmake --build "$build" -j"$(nproc)" --target "${fuzzers[@]/#/fuzz_}"
bash scripts/fuzz.sh "$build" "${FUZZ_SECONDS:-30}"
