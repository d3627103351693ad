#!/usr/bin/env bash
# File: plan_output_grid.sh
# Runs whale-plan over a grid of shipped clusters x models x global batches and keeps each
# command's printed plan (--top 3, text) and its --out plan YAML, the `search:` line (timings and
# counts of the search itself) left out. Run it with two builds and diff the folders to check
# that a change to the search's speed leaves every plan as it was:
#   scripts/plan_output_grid.sh /tmp/before/whale-plan /tmp/grid-before
#   scripts/plan_output_grid.sh build/apps/whale-plan /tmp/grid-after
#   diff -r /tmp/grid-before /tmp/grid-after
# Usage: scripts/plan_output_grid.sh WHALE_PLAN OUT_DIR
set -euo pipefail
plan=$(realpath "$1") out=$2
cd "$(dirname "$0")/.."
mkdir -p "$out"
# cluster model batch [extra whale-plan arguments]; batch "-" keeps the model's own.
grid=(
  "mixed-1024 gpt3-175b.yaml 512"
  "mixed-1024 gpt3-175b.yaml 1536"
  "mixed-1024 gpt3-175b.yaml 8192"
  "mixed-1024 gpt3-175b.yaml 65536"
  "mixed-1024 gpt3-175b.yaml 2048 --precision bf16"
  "mixed-1024 hf/mixtral-8x7b-config.json 1024 --sequence 4096"
  "mixed-1024 llama2-70b.yaml 1024"
  "a100-64 gpt3-175b.yaml 1536"
  "a100-64 hf/llama3-70b-config.json -"
  "a100-64 gpt3-13b.yaml 4096"
  "a100-64 hf/mixtral-8x22b-config.json 256 --sequence 4096"
  "a100-v100 gpt3-1.3b.yaml -"
  "a100-v100 gpt3-1.3b.yaml 8"
  "a100-v100 gpt3-1.3b.yaml 4096"
  "v100-t4 gpt2-350m.yaml -"
  "v100-t4 gpt3-1.3b.yaml 8"
  "mixed-node gpt2-124m.yaml -"
  "mixed-node tiny-moe.yaml -"
  "a100-v100 qwen2-57b-a14b.yaml 512 --objective cost"
)
for row in "${grid[@]}"; do
  read -r cluster model batch extra <<<"$row"
  name="$cluster-${model//\//_}-$batch${extra:+-${extra// /_}}"
  args=(--cluster "configs/clusters/$cluster.yaml" --model "configs/models/$model" --top 3
        --out "$out/$name.plan.yaml")
  [[ $batch != - ]] && args+=(--global-batch "$batch")
  # shellcheck disable=SC2206
  [[ -n ${extra:-} ]] && args+=($extra)
  start=$(date +%s.%N)
  set +e
  "$plan" "${args[@]}" 2>&1 | grep -v '^ *search:' >"$out/$name.txt"
  rc=${PIPESTATUS[0]}
  set -e
  echo "rc $rc" >>"$out/$name.txt"
  awk -v name="$name" -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { printf "%-70s %6.2f s\n", name, end - start }'
done
