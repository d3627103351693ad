#!/usr/bin/env bash
# File: memory_flags.sh
# Out-of-memory flags. (1) Every shipped plan (configs/plans/**): whale-sim's `fits` is true
# exactly when every device's predicted peak is within its capacity, and a plan that does not
# fit carries the OUT OF MEMORY section and a warning on standard error; one that fits carries
# neither. (2) A plan that fits on paper only without the framework's reserve: the shipped
# a100-v100 plan against copies of its profiles whose capacity lies between its busiest
# device's tensors and tensors + reserve. Without the reserve it fits; with it, it is flagged,
# and whale-plan on that cluster picks a plan that fits.
# Usage (from the source root): memory_flags.sh APPS_DIR WORK_DIR
set -uo pipefail
apps=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
status=0
fail() { echo "FAIL: $*"; status=1; }

# check PLAN [PROFILES]: prints "fits" or "oom"; fails on any inconsistency.
check() {
  local plan=$1 profiles=${2:-} name
  name=$(echo "$plan" | tr '/' '_')
  local args=("$plan")
  [ -n "$profiles" ] && args+=(--profiles "$profiles")
  "$apps/whale-sim" "${args[@]}" --format json >"$work/$name.json" 2>"$work/$name.json.err" ||
    { fail "$plan: whale-sim --format json exited $?"; return; }
  python3 - "$work/$name.json" <<'PY' || fail "$plan: fits disagrees with the devices' peaks"
import json, sys
report = json.load(open(sys.argv[1]))
over = [d for d in report["devices"] if d["peak_memory_bytes"] > d["capacity_bytes"]]
sys.exit(0 if report["fits"] == (not over) else 1)
PY
  if grep -q '"fits": false' "$work/$name.json"; then
    grep -q "does not fit in memory" "$work/$name.json.err" || fail "$plan: no warning on stderr"
    "$apps/whale-sim" "${args[@]}" >"$work/$name.txt" 2>/dev/null || fail "$plan: whale-sim exited $?"
    grep -q "^OUT OF MEMORY on" "$work/$name.txt" || fail "$plan: no OUT OF MEMORY section"
    echo oom
  else
    # The text report's section is the same function (tests/sim/test_report.cpp).
    [ -s "$work/$name.json.err" ] && fail "$plan: fits, yet warns: $(cat "$work/$name.json.err")"
    echo fits
  fi
}

plans=0 flagged=0
while read -r plan; do
  verdict=$(check "$plan")
  echo "$plan: $verdict"
  case "$verdict" in *FAIL*) status=1 ;; esac
  plans=$((plans + 1))
  case "$verdict" in *oom) flagged=$((flagged + 1)) ;; esac
done < <(find configs/plans -name '*.yaml' | sort)
[ "$plans" -ge 50 ] || fail "expected the shipped plans (50 or more), found $plans"

# (2) The a100-v100 plan's busiest device by tensors, and profiles whose capacity lies halfway
# between its tensors and tensors + a 2 GiB reserve (no slack).
plan=configs/plans/a100-v100-gpt3-1.3b.yaml
"$apps/whale-sim" "$plan" --format json >"$work/base.json" || fail "whale-sim on $plan"
mkdir -p "$work/no-reserve" "$work/reserve"
python3 - "$work/base.json" profiles "$work" <<'PY' || fail "could not write the test profiles"
import json, sys, yaml
report, shipped, work = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
gib = 2.0 ** 30
tensors = {}
for d in report["devices"]:
    tensors[d["model"]] = max(tensors.get(d["model"], 0), d["tensor_memory_bytes"])
for model, need in tensors.items():
    profile = yaml.safe_load(open(f"{shipped}/{model}.yaml"))
    profile["memory_gib"] = (need + 1.0 * gib) / gib
    for folder, reserve in (("no-reserve", 0), ("reserve", 2)):
        profile["framework_memory"] = {"source": "memory_flags.sh", "reserve_gib": reserve,
                                       "allocator_slack_fraction": 0, "attention_implementation": "fused_softmax"}
        yaml.safe_dump(profile, open(f"{work}/{folder}/{model}.yaml", "w"))
PY
[ "$(check "$plan" "$work/no-reserve")" = fits ] || fail "without the reserve the plan should fit"
[ "$(check "$plan" "$work/reserve")" = oom ] || fail "with the 2 GiB reserve the plan should be flagged"
grep -q "framework reserve 2.00 GiB + allocator slack 0% (memory_flags.sh)" \
  "$work/$(echo "$plan" | tr '/' '_').txt" || fail "the flag does not name the reserve and its source"

# whale-plan on the tight profiles only chooses a plan that fits them.
"$apps/whale-plan" --cluster configs/clusters/a100-v100.yaml --model configs/models/gpt3-1.3b.yaml --precision bf16 \
  --profiles "$work/reserve" --out "$work/tight-plan.yaml" >"$work/tight-plan.txt" 2>&1 ||
  fail "whale-plan on the tight profiles: $(tail -2 "$work/tight-plan.txt")"
[ "$(check "$work/tight-plan.yaml" "$work/reserve")" = fits ] || fail "whale-plan chose a plan that does not fit"

[ "$status" = 0 ] && echo "memory flags: $plans shipped plans checked ($flagged flagged), the reserve-only case flagged"
exit $status
