#!/usr/bin/env bash
# File: time_limit.sh
# whale-plan under a time limit already spent when the search starts (--time-limit 0.001): it
# still prints a plan that whale-sim accepts, and says the search was cut, on a cluster of
# 1,024 GPUs (whose pipeline enumeration the limit cuts) and on a small one. No timing is
# asserted: what is checked is what the command prints.
# Usage (from the source root): time_limit.sh APPS_DIR WORK_DIR
set -uo pipefail
apps=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
status=0
fail() { echo "FAIL: $*"; status=1; }

# cut NAME CLUSTER MODEL [whale-plan arguments]
cut() {
  local name=$1 cluster=$2 model=$3
  shift 3
  "$apps/whale-plan" --cluster "configs/clusters/$cluster.yaml" --model "configs/models/$model.yaml" \
    --time-limit 0.001 --out "$work/$name.plan.yaml" "$@" >"$work/$name.txt" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || { fail "$name: whale-plan exited $rc"; cat "$work/$name.txt"; return; }
  grep -q '^best plan: ' "$work/$name.txt" || fail "$name: no 'best plan:' line"
  grep -q '^search cut: the time limit ended the search; the best plan is the best found so far$' "$work/$name.txt" ||
    fail "$name: no 'search cut' line"
  grep -q '^search: .*(time limit reached)$' "$work/$name.txt" || fail "$name: the search line does not say the limit was reached"
  "$apps/whale-sim" "$work/$name.plan.yaml" >"$work/$name.sim.txt" 2>&1 || fail "$name: whale-sim rejects the plan"
}

cut mixed-1024 mixed-1024 gpt3-175b --global-batch 8192
cut a100-v100 a100-v100 gpt3-1.3b

[ "$status" -eq 0 ] && echo "time_limit: all checks passed"
exit "$status"
