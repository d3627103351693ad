#!/usr/bin/env bash
# Builds whale from scratch and runs every test (the README's test command; .ci/run calls it).
# Installs its own dependencies from Debian's packages on a fresh Debian 12 machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
# OpenMPI refuses to run as root without these; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure --timeout 900
bash scripts/sanitize.sh build-asan  # Clang ASan+UBSan+LSan unit tests, then 30 s of each fuzzer
