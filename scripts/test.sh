#!/usr/bin/env bash
# Builds whale from scratch and runs every test (the README's test command; .ci/run calls it).
# Installs its own dependencies from Debian's packages on a fresh Debian 12 machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DWHALE_WERROR=ON
cmake --build build -j"$(nproc)"
# OpenMPI refuses to run as root without these; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Measurements of real run times (label `measurement`) are left out: a busy machine decides them.
# The tests run on every core at once; each one that writes files has a folder of its own.
ctest --test-dir build --output-on-failure --timeout 900 -j"$(nproc)" -LE measurement
bash scripts/sanitize.sh build-asan  # Clang ASan+UBSan+LSan unit tests, then 30 s of each fuzzer
# Clang: the same tree builds warning-free (-Wall -Wextra -Werror) with Clang too; its fast unit
# tests run there as well.
if command -v clang++ >/dev/null; then
  cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DWHALE_WERROR=ON
  cmake --build build-clang -j"$(nproc)"
  ctest --test-dir build-clang --output-on-failure --timeout 900 -R '^(test_plan|test_sim)$'
fi
# Builds, tests and scripts write only into build folders: the tree is as checked out.
dirty=$(git status --porcelain 2>/dev/null || true)
if git rev-parse --git-dir >/dev/null 2>&1 && [ -n "$dirty" ]; then
  echo "test.sh: error: the build or the tests changed the source tree:" >&2
  echo "$dirty" >&2
  exit 1
fi
