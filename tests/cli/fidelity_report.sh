#!/usr/bin/env bash
# File: fidelity_report.sh
# scripts/fidelity_report.py on a hand-made table of 3 plans in 2 rounds:
#   plan a: predicted 1.0 and 2.0, measured 1.0 and 2.2 (means 1.5 and 1.6: -6.25%)
#   plan b: predicted 2.0 and 1.0, measured 2.0 and 1.0 (means 1.5 and 1.5: 0%)
#   plan c: predicted 3.0 twice, measured 3.0 twice (0%)
# MAPE and mean signed error 6.25 / 3 = 2.08%. Ranks of the predicted means (1.5, 1.5, 3) are
# (1.5, 1.5, 3), of the measured (1.6, 1.5, 3) (2, 1, 3): Pearson of the ranks 1.5 / sqrt(1.5 x 2)
# = 0.866. Within each round the predictions and the measured steps order alike (1.00, 1.00);
# the measured orders of rounds 1 (1, 2, 3) and 2 (2, 1, 3) correlate at 1 / 2 = 0.50.
# Usage: tests/cli/fidelity_report.sh SCRATCH_DIR (from the source root)
set -euo pipefail
scratch=$1
mkdir -p "$scratch"
table=$scratch/fidelity.tsv
printf 'plan\tround\tranks\tpredicted_s\tmeasured_s\n' > "$table"
printf '%s\t%s\t2\t%s\t%s\n' a 1 1.0 1.0 a 2 2.0 2.2 b 1 2.0 2.0 b 2 1.0 1.0 c 1 3.0 3.0 c 2 3.0 3.0 >> "$table"
out=$(python3 scripts/fidelity_report.py "$table" check --rounds)
failures=0
expect() {
  if ! grep -qxF -- "$1" <<< "$out"; then echo "FAIL: expected the line '$1' in:"; echo "$out"; failures=$((failures + 1)); fi
}
expect "check: 3 plans, MAPE 2.1%, mean signed error -2.1%, rank correlation 0.87"
expect "check by round: rank correlation within each round 1: 1.00 2: 1.00; the measured steps' between rounds 1-2: 0.50"
expect "c                    2       3.0000      3.0000    +0.0%"
# Without --rounds, no by-round line; a missing table is one error line.
if python3 scripts/fidelity_report.py "$table" check | grep -q "by round"; then echo "FAIL: by-round line without --rounds"; failures=$((failures + 1)); fi
if err=$(python3 scripts/fidelity_report.py "$scratch/none.tsv" check 2>&1); then
  echo "FAIL: a missing table was accepted"; failures=$((failures + 1))
elif [ "$(wc -l <<< "$err")" != 1 ] || [[ "$err" != "fidelity_report.py: error: $scratch/none.tsv: "* ]]; then
  echo "FAIL: a missing table: '$err'"; failures=$((failures + 1))
fi
# A wrong command line (a label missing, an unknown flag) fails with the usage line alone.
for args in "$table" "$table check --round"; do
  # shellcheck disable=SC2086
  if err=$(python3 scripts/fidelity_report.py $args 2>&1); then
    echo "FAIL: '$args' was accepted"; failures=$((failures + 1))
  elif [ "$err" != "fidelity_report.py: error: usage: fidelity_report.py TSV LABEL [--rounds]" ]; then
    echo "FAIL: '$args': '$err'"; failures=$((failures + 1))
  fi
done
[ "$failures" = 0 ] && echo "fidelity_report: all checks passed"
exit "$failures"
