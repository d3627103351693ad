#!/usr/bin/env bash
# File: script_arguments.sh
# The measurement scripts refuse an argument they do not know: exit 2 and exactly one error line
# that names the script and the argument, before any work (nothing is written, no tool runs).
# Usage (from the source root): tests/cli/script_arguments.sh BUILD_DIR SCRATCH_DIR
set -uo pipefail
build=$(realpath -m "$1")
scratch=$(realpath -m "$2")
rm -rf "$scratch"
mkdir -p "$scratch"
status=0
fail() { echo "FAIL: $*"; status=1; }
# expect_refusal NAME EXPECTED_LINE COMMAND...: COMMAND exits 2 and prints EXPECTED_LINE alone.
expect_refusal() {
  local name=$1 expected=$2
  shift 2
  local output rc
  output=$("$@" 2>&1)
  rc=$?
  [ $rc = 2 ] || fail "$name: exit code $rc (expected 2)"
  [ "$output" = "$expected" ] || fail "$name: expected the one line '$expected', got '$output'"
}
expect_refusal fidelity.sh \
  "fidelity.sh: error: unknown argument '--stpes' (see the usage at the top of the script)" \
  bash scripts/fidelity.sh --build "$build" --work "$scratch/fidelity" --stpes 3
expect_refusal hetero_demo.sh \
  "hetero_demo.sh: error: unknown argument '--rounds' (see the usage at the top of the script)" \
  bash scripts/hetero_demo.sh --build "$build" --work "$scratch/hetero" --rounds 2
expect_refusal torch_ddp_check.sh \
  "torch_ddp_check.sh: error: unknown argument '--ranks' (see the usage at the top of the script)" \
  bash scripts/torch_ddp_check.sh "$build" "$scratch/torch-ddp" --ranks 4
expect_refusal gpu-kit.sh \
  "gpu-kit: error: unknown option '--arch' (usage: scripts/gpu-kit.sh DIR [--build BUILD])" \
  bash scripts/gpu-kit.sh "$scratch/kit" --arch sm_80
left=$(find "$scratch" -mindepth 1 | head -3)
[ -z "$left" ] || fail "a refused script wrote: $left"
exit $status
