#!/usr/bin/env bash
# File: compare_runs.sh
# The comparison of "parallel equals single" (scripts/equality.sh, scripts/gpu-check.sh): two
# runs' --metrics losses agree step by step within relative 1e-5, and their --dump-params
# parameters as one vector within norm-relative 1e-5 and each tensor within 5e-5 (equality.sh
# says why; TENSOR_BOUND replaces the 5e-5). Prints one line per tensor and a summary; exits 1
# when anything differs.
# Usage: scripts/compare_runs.sh REF_METRICS RUN_METRICS REF_PARAMS RUN_PARAMS STEPS [TENSOR_BOUND]
set -euo pipefail
ref_metrics=$1 run_metrics=$2 ref_params=$3 run_params=$4 steps=$5 tensor_bound=${6:-5e-5}
losses() { sed 's/.*"loss":\([^,]*\),.*/\1/' "$1"; }
paste <(losses "$ref_metrics") <(losses "$run_metrics") | awk -v steps="$steps" '
  function abs(x) { return x < 0 ? -x : x }
  { n++; d = abs($1 - $2) / abs($1); if (d > worst) worst = d
    if ($2 == "" || d > 1e-5) { printf "step %d: loss %s (single) vs %s (plan)\n", n, $1, $2; bad = 1 } }
  END { if (n != steps) { printf "expected %d steps, got %d\n", steps, n; bad = 1 }
        printf "losses: %d steps, largest relative difference %.3g\n", n, worst; exit bad }'
# The dump: "name count", then one value a line. All values as one vector: the norm-based
# relative error ||plan - single||_2 / ||single||_2 within 1e-5. Tensor by tensor: the same
# within tensor_bound, and the largest element difference |plan - single| for reference; the key third
# of attn.qkv.bias (elements [n/3, 2n/3)) is left out of its tensor's norm and checked by
# absolute difference within 1e-4 instead.
paste -d' ' "$ref_params" "$run_params" | awk -v tensor_bound="$tensor_bound" '
  function abs(x) { return x < 0 ? -x : x }
  function finish() {
    if (name == "") return
    if (seen != count) { printf "%s: %d of %d values\n", name, seen, count; bad = 1 }
    rel = norm > 0 ? sqrt(diff / norm) : sqrt(diff); if (rel > worst) worst = rel
    if (key_noise > worst_key) worst_key = key_noise
    fail = rel > tensor_bound + 0 || key_noise > 1e-4; if (fail) bad = 1
    printf "%s %d: relative error %.3g, largest element difference %.3g", name, count, rel, largest
    if (has_key) printf " (key third: %.3g)", key_noise
    printf "%s\n", fail ? "  FAIL" : ""
    name = "" }
  NF == 4 { finish(); n++
    if ($1 != $3 || $2 != $4) {
      printf "parameter %s (%s) vs %s (%s)\n", $1, $2, $3, $4; bad = 1; exit }
    name = $1; count = $2; seen = 0; diff = 0; norm = 0; largest = 0; key_noise = 0
    has_key = name ~ /attn[.]qkv[.]bias$/; next }
  NF == 2 && name != "" { d = abs($2 - $1); all_diff += d * d; all_norm += $1 * $1
    if (has_key && 3 * seen >= count && 3 * seen < 2 * count) { if (d > key_noise) key_noise = d }
    else { if (d > largest) largest = d; diff += d * d; norm += $1 * $1 }
    seen++; next }
  { printf "line %d: the two dumps are not aligned\n", NR; bad = 1; exit }
  END { finish()
        if (n == 0) { print "no parameters"; bad = 1 }
        all = all_norm > 0 ? sqrt(all_diff / all_norm) : 1; if (all > 1e-5) bad = 1
        printf "parameters: all %d tensors as one vector: relative error %.3g%s; largest per-tensor " \
               "relative error %.3g (attn.qkv.bias key third: largest difference %.3g)\n",
               n, all, (all > 1e-5 ? "  FAIL" : ""), worst, worst_key; exit bad }'
