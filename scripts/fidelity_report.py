#!/usr/bin/env python3
# File: fidelity_report.py
# The fidelity check's table and summary lines (scripts/fidelity.sh; docs/fidelity.md).
# Usage: fidelity_report.py TSV LABEL [--rounds]
# TSV: a header, then rows (plan, round, ranks, predicted_s, measured_s), one plan in one round.
# Per plan: the mean over the rounds of the predicted and of the measured step time, and the
# error of the one against the other; then `LABEL: N plans, MAPE X%, mean signed error S%, rank
# correlation Y`: the mean absolute percentage error over the plans, the mean signed error
# (positive: predicted too slow; a bias that the absolute error hides) and Spearman's rank
# correlation (average ranks for ties). With --rounds and two rounds or more, also `LABEL by
# round: ...` (below).
import sys
if len(sys.argv) < 3 or any(a != "--rounds" for a in sys.argv[3:]):
    sys.exit("fidelity_report.py: error: usage: fidelity_report.py TSV LABEL [--rounds]")
try:
    rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
except OSError as e:
    sys.exit(f"fidelity_report.py: error: {sys.argv[1]}: {e.strerror} (hint: scripts/fidelity.sh writes <work>/fidelity.tsv)")
by_plan = {}
for name, _, n, predicted, measured in rows:
    by_plan.setdefault(name, (int(n), []))[1].append((float(predicted), float(measured)))
plans = [(name, n, sum(p for p, _ in pairs) / len(pairs), sum(m for _, m in pairs) / len(pairs))
         for name, (n, pairs) in by_plan.items()]
label = sys.argv[2]

def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out

def pearson(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a) ** 0.5
    vb = sum((y - mb) ** 2 for y in b) ** 0.5
    return cov / (va * vb) if va > 0 and vb > 0 else 0.0

print(f"{'plan':<16} {'ranks':>5} {'predicted_s':>12} {'measured_s':>11} {'error':>8}")
errors = []
for name, n, predicted, measured in plans:
    error = (predicted - measured) / measured
    errors.append(error)
    print(f"{name:<16} {n:>5} {predicted:>12.4f} {measured:>11.4f} {100 * error:>+7.1f}%")
mape = 100 * sum(abs(e) for e in errors) / len(errors)
bias = 100 * sum(errors) / len(errors)
rho = pearson(ranks([p[2] for p in plans]), ranks([p[3] for p in plans]))
print(f"{label}: {len(plans)} plans, MAPE {mape:.1f}%, mean signed error {bias:+.1f}%, "
      f"rank correlation {rho:.2f}")
# With --rounds: how far the plans' order is reproducible on this machine. Within each round,
# the rank correlation of the predictions with the steps measured just after their profiles;
# between rounds, of one round's measured steps with another's. Where the measured order moves
# from round to round as much as the predictions miss it, the rank correlation of the averages
# is bound by the machine's noise, not by the model.
rounds = sorted({r for _, r, _, _, _ in rows}, key=int)
if "--rounds" in sys.argv[3:] and len(rounds) > 1:
    round_pairs = {r: {name: (float(p), float(m)) for name, rr, _, p, m in rows if rr == r} for r in rounds}
    names = sorted(round_pairs[rounds[0]])
    within = [pearson(ranks([round_pairs[r][n][0] for n in names]), ranks([round_pairs[r][n][1] for n in names]))
              for r in rounds]
    between = [(a, b, pearson(ranks([round_pairs[a][n][1] for n in names]), ranks([round_pairs[b][n][1] for n in names])))
               for i, a in enumerate(rounds) for b in rounds[i + 1:]]
    print(f"{label} by round: rank correlation within each round "
          + " ".join(f"{r}: {x:.2f}" for r, x in zip(rounds, within))
          + "; the measured steps' between rounds " + " ".join(f"{a}-{b}: {x:.2f}" for a, b, x in between))
