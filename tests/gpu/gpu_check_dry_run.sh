#!/usr/bin/env bash
# File: gpu_check_dry_run.sh
# scripts/gpu-check.sh --dry-run without a kit or a GPU: it prints its phases in the order that
# says the most when a run is cut short, their budgets add up to at most the 360 s deadline (the
# printed sum), every phase that needs a GPU or the kit is SKIP, nothing FAILs, and the report
# (gpu-check.md, gpu-check.json with every phase, the archive of the logs) is written. --only with
# a phase that does not exist ends with exit 2 and one error line naming it, before any phase.
# Usage (from the source root): tests/gpu/gpu_check_dry_run.sh SCRATCH_DIR
set -uo pipefail
scratch=$(realpath -m "$1")
rm -rf "$scratch"
output=$(bash scripts/gpu-check.sh --kit "$scratch/no-kit" --out "$scratch/report" --dry-run 2>&1)
rc=$?
status=0
fail() { echo "FAIL: $*"; status=1; }
[ $rc = 0 ] || fail "exit code $rc (expected 0)"
want="env ops memcheck fp32_step bridge nccl bf16_curve bench_gpt2 bench_gpt3 torch_bench torch_grid profile predict kernels report"
got=$(sed -n 's/^gpu-check: phase \([a-z0-9_]*\) .*/\1/p' <<< "$output" | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || fail "phases: expected '$want', got '$got'"
sum=$(sed -n 's/^gpu-check: phase [a-z0-9_]* *\([0-9]*\) s:.*/\1/p' <<< "$output" | awk '{s += $1} END {print s}')
printed=$(sed -n 's/.*deadline 360 s; phases and budgets (sum \([0-9]*\) s):$/\1/p' <<< "$output")
[ "$sum" = "$printed" ] || fail "budgets add up to $sum, the script says '$printed'"
[ "${sum:-999}" -le 360 ] || fail "budgets add up to $sum s, over 360 s"
for phase in ops memcheck fp32_step bridge nccl bench_gpt2 bench_gpt3 torch_grid profile kernels; do
  grep -q "^gpu-check: $phase: SKIP .* - dry run: needs a GPU$" <<< "$output" || fail "$phase not SKIP (needs a GPU)"
done
grep -q "^gpu-check: env: SKIP .* - no kit at $scratch/no-kit" <<< "$output" || fail "env not SKIP (no kit)"
grep -q "^gpu-check: torch_bench: SKIP .* - dry run: the script reads both models$" <<< "$output" ||
  fail "the PyTorch script did not read both models"
grep -q ": FAIL (" <<< "$output" && fail "a phase failed"
phases=$(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(len(d["phases"]), d["counts"]["FAIL"], "mfu" in d)' \
  "$scratch/report/gpu-check.json" 2>&1)
[ "$phases" = "15 0 True" ] || fail "gpu-check.json: expected 15 phases, 0 FAIL and an mfu key, got '$phases'"
[ -s "$scratch/report/gpu-check.md" ] || fail "no gpu-check.md"
archived=$(tar -tzf "$scratch/report/gpu-check-logs.tar.gz")
grep -qx 'work/results.tsv' <<< "$archived" || fail "the archive lacks work/results.tsv"
unknown=$(bash scripts/gpu-check.sh --kit "$scratch/no-kit" --out "$scratch/only" --dry-run --only ops,opz 2>&1)
rc=$?
[ $rc = 2 ] || fail "--only with an unknown phase: exit code $rc (expected 2)"
[ "$unknown" = "gpu-check: error: --only: unknown phase 'opz' (the phases: ${want// /,})" ] ||
  fail "--only with an unknown phase: expected one error line naming 'opz' and the phases, got '$unknown'"
[ $status = 0 ] && echo "ok: 15 phases in order, budgets $sum s of 360, report written"
exit $status
