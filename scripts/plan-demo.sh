#!/usr/bin/env bash
# The README's main command: builds whale-plan if needed, plans a shipped heterogeneous cluster and
# model, and prints the plan. Extra arguments go to whale-plan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target whale-plan whale-sim >/dev/null
./build/apps/whale-plan --cluster configs/clusters/a100-v100.yaml \
  --model configs/models/gpt3-1.3b.yaml --out build/plan-a100-v100-gpt3-1.3b.yaml "$@"
