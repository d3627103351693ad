#!/usr/bin/env bash
# File: expect_exit.sh
# Runs a command and checks its exit code and that its output (stdout + stderr) contains a text.
# Usage: expect_exit.sh CODE TEXT COMMAND [ARGS...]
set -u
code="$1"
text="$2"
shift 2
output="$("$@" 2>&1)"
status=$?
if [ "$status" -ne "$code" ]; then
  printf 'expected exit code %s, got %s from: %s\n%s\n' "$code" "$status" "$*" "$output"
  exit 1
fi
if ! grep -qF -- "$text" <<<"$output"; then
  printf 'expected the output to contain: %s\nfrom: %s\n%s\n' "$text" "$*" "$output"
  exit 1
fi
printf '%s\n' "$output"
