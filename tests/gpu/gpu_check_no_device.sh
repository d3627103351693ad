#!/usr/bin/env bash
# File: gpu_check_no_device.sh
# Runs scripts/gpu-check.sh on a machine without a CUDA device and asserts its exact line, its
# exit code 1, and that it wrote nothing (it stops before running anything).
# Usage (from the source root): tests/gpu/gpu_check_no_device.sh SCRATCH_DIR
set -uo pipefail
scratch=$1
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "skipped: this machine has a GPU; run scripts/gpu-check.sh itself"
  exit 77
fi
rm -rf "$scratch"
output=$(bash scripts/gpu-check.sh --kit "$scratch/kit" --out "$scratch/report" 2>&1)
rc=$?
expected="gpu-check: no CUDA device (nvidia-smi/cudaGetDeviceCount): nothing to check"
status=0
if [ "$output" != "$expected" ]; then
  echo "expected the one line: $expected"; echo "got: $output"; status=1
fi
if [ $rc -ne 1 ]; then echo "expected exit code 1, got $rc"; status=1; fi
if [ -e "$scratch" ]; then echo "expected nothing written, found $scratch"; status=1; fi
[ $status -eq 0 ] && echo "ok: '$output', exit $rc, nothing written"
exit $status
