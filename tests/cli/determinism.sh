#!/usr/bin/env bash
# File: determinism.sh
# Determinism across processes: whale-sim and whale-plan, each run twice as separate processes
# on the same inputs, write byte-identical reports, traces, pictures and plans (a second
# evaluation inside one process could share state that a new process does not).
# Usage (from the source root): determinism.sh APPS_DIR WORK_DIR
set -uo pipefail
apps=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
plan=configs/plans/a100-v100-gpt3-1.3b.yaml
status=0
for run in 1 2; do
  "$apps/whale-sim" "$plan" --format json --trace "$work/sim-$run.trace.json" \
    --svg "$work/sim-$run.svg" >"$work/sim-$run.json" || { echo "FAIL: whale-sim run $run"; status=1; }
  "$apps/whale-plan" --cluster configs/clusters/cpu-local-4.yaml --model configs/models/tiny.yaml \
    --threads "$run" --out "$work/plan-$run.yaml" --trace "$work/plan-$run.trace.json" \
    >"$work/plan-$run.txt" || { echo "FAIL: whale-plan run $run"; status=1; }
done
# whale-plan's text report also prints the search's wall time, so its plan and trace are compared.
for output in sim-%s.json sim-%s.trace.json sim-%s.svg plan-%s.yaml plan-%s.trace.json; do
  first=$work/$(printf "$output" 1) second=$work/$(printf "$output" 2)
  if [ ! -s "$first" ]; then
    echo "FAIL: $first is empty"; status=1
  elif ! cmp "$first" "$second"; then
    echo "FAIL: $first and $second differ"; status=1
  fi
done
[ "$status" = 0 ] && echo "determinism: 5 outputs byte-identical across processes"
exit $status
