#!/usr/bin/env bash
# File: fidelity.sh
# The fidelity check: profiles this machine's MPI links, then runs every plan of
# configs/plans/fidelity/ with whale-run and simulates it with whale-sim from a profile of the
# CPU cores taken just before the run, and prints predicted
# against measured step time, then predicted against measured peak memory per rank. Summary
# lines: `fidelity: N plans, MAPE X%, mean signed error S%, rank correlation Y`; `fidelity by
# round: ...`, the rank correlations within each round and of the measured steps between rounds
# (how reproducible the plans' order is on this machine); the same as the first for
# the predictions with every op priced cold (`fidelity priced cold: ...`, the profiles without
# their cache: block) and `fidelity memory: N plans, ...`.
#
# Usage: scripts/fidelity.sh [--build DIR] [--work DIR] [--steps N] [--rounds R] [--reuse-profile]
#                            [--plans LIST] [--calibrate-on LIST]
#   --build DIR       build folder holding apps/whale-{profile,run,sim} (default: build)
#   --work DIR        output folder (default: $WHALE_FIDELITY_DIR, else <build>/fidelity)
#   --steps N         training steps per run; step 1 is warm-up, the median of the rest counts (5)
#   --rounds R        runs of every plan, round by round; the tables average them (5: on a 2-vCPU VM
#                     a plan's run moves 5-10% from one run to the next, and seven of the 12 plans
#                     measure within 10% of each other; docs/fidelity.md)
#   --reuse-profile   keep the profiles and cluster that an earlier run wrote last into the work folder
#   --plans LIST      only these plans of configs/plans/fidelity/, comma-separated names (default: all)
#   --calibrate-on LIST  also fit each round's profile with whale-calibrate to the measured step
#                     times of these plans (comma-separated names, e.g. dp2,tp2,pp2-gpipe) and
#                     report MAPE and rank correlation on the other plans, calibrated and not;
#                     the last line is then `fidelity calibrated on LIST: N held-out plans, ...`;
#                     the calibration runs also write whale-run --layer-times, and a second fit
#                     with those measured layer times in place (whale-calibrate --layer-times)
#                     is reported the same way: `fidelity calibrated with layer times on LIST: ...`
#   --calibrate-parameters LIST  with --calibrate-on: one more fit of the figures LIST (whale-calibrate
#                     --parameters, e.g. gemm_efficiency_scale,step_overhead_us,micro_batch_overhead_us),
#                     reported as `fidelity calibrated with LIST on ...`
# Rank r runs on core r (mpirun --map-by core --bind-to core), and core r is profiled as device
# model cpu-core<r> by a rank bound to it (whale-profile --lockstep): the cores of a virtual
# machine need not be equally fast, and a plan's step waits for its slowest rank.
# Writes only into the work folder: generated/profiles/cpu-core<r>.yaml,
# generated/clusters/cpu-measured.yaml, the plans pointed at them (generated/plans/), the logs,
# metrics, traces, fidelity.tsv, fidelity-cold.tsv and fidelity-compare.tsv (each run's measured seconds per device
# and op class against whale-sim's, printed per round after the memory table).
# The tracked profiles/ and configs/ are never rewritten.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=build
STEPS=5
ROUNDS=5
REUSE=0
ONLY=""
CALIBRATE_ON=""
CALIBRATE_PARAMETERS=""
WORK=${WHALE_FIDELITY_DIR:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --reuse-profile) REUSE=1; shift ;;
    --plans) ONLY=$2; shift 2 ;;
    --calibrate-on) CALIBRATE_ON=$2; shift 2 ;;
    --calibrate-parameters) CALIBRATE_PARAMETERS=$2; shift 2 ;;
    *) echo "fidelity.sh: error: unknown argument '$1' (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
if ! [ "$STEPS" -ge 2 ] 2>/dev/null || ! [ "$ROUNDS" -ge 1 ] 2>/dev/null; then
  echo "fidelity.sh: error: --steps must be an integer >= 2 (step 1 is warm-up) and --rounds >= 1, got $STEPS and $ROUNDS" >&2
  exit 2
fi
TOOLS="whale-profile whale-run whale-sim"
[ -n "$CALIBRATE_ON" ] && TOOLS="$TOOLS whale-calibrate"
for tool in $TOOLS; do
  if [ ! -x "$BUILD/apps/$tool" ]; then
    echo "fidelity.sh: error: $BUILD/apps/$tool not found (hint: cmake --build $BUILD --target $tool)" >&2
    exit 2
  fi
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=0
WORK=${WORK:-$BUILD/fidelity}
case "$WORK" in /*) ;; *) WORK="$ROOT/$WORK" ;; esac
GENERATED=$WORK/generated
mkdir -p "$GENERATED/profiles" "$GENERATED/clusters" "$GENERATED/plans"
cd "$ROOT"
RANKS=2
CORES=$(seq 0 $((RANKS - 1)))
CLUSTER=$GENERATED/clusters/cpu-measured.yaml
for core in $CORES; do
  if [ "$REUSE" = 1 ] && { [ ! -f "$GENERATED/profiles/cpu-core$core.yaml" ] || [ ! -f "$CLUSTER" ]; }; then
    echo "fidelity.sh: error: $GENERATED/profiles/cpu-core$core.yaml or $CLUSTER not found (hint: run once without --reuse-profile)" >&2
    exit 2
  fi
done
if [ "$(nproc)" -lt "$RANKS" ]; then
  echo "fidelity.sh: error: needs $RANKS cores, one per rank, found $(nproc) (hint: run it on a machine with $RANKS or more)" >&2
  exit 2
fi
# shellcheck source=core_binding.sh
source "$ROOT/scripts/core_binding.sh"   # CORE_BINDING: rank r on core r
echo "fidelity: load before measuring: $(cut -d' ' -f1-3 /proc/loadavg)"

profile_cpu() {  # folder: writes folder/cpu-core<r>.yaml for every core r
  # One profiler per core at once, rank r bound to core r as whale-run's rank r will be, and in
  # step (--lockstep: a barrier before each timed sample): the plans keep every core busy,
  # mostly with the same ops at once, so each core times an op while the others time it too
  # (they share caches and memory bandwidth).
  # --quick (about 7 s on 2 cores): it runs before every plan's run.
  mpirun -np "$RANKS" "${CORE_BINDING[@]}" "$BUILD/apps/whale-profile" --device cpu --lockstep --quick \
    --out "$1/cpu-core{rank}.yaml" > "$1/profile.log" 2>&1 ||
    { echo "fidelity.sh: error: whale-profile failed (log: $1/profile.log)" >&2; tail -3 "$1/profile.log" >&2; exit 1; }
}

if [ "$REUSE" = 0 ]; then
  echo "fidelity: profiling the links (mpirun -np $RANKS) ..."
  mpirun -np "$RANKS" "${CORE_BINDING[@]}" "$BUILD/apps/whale-profile" --links --out "$WORK/links.yaml" > "$WORK/links.log" 2>&1
  # The link takes the ping-pong latency but the all-reduce bandwidth: between CPU ranks the
  # ring's bandwidth term is bound by the reduction through memory, not by the copy, and
  # all-reduces (dp gradients, tp activations) carry most bytes here.
  read -r latency_us allreduce_gbps < <(python3 - "$WORK/links.yaml" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
latency = re.search(r"# ping-pong fit: latency ([0-9.e+-]+) us", text).group(1)
bandwidth = re.search(r"# all-reduce fit: latency [0-9.e+-]+ us, bandwidth ([0-9.e+-]+) Gbit/s", text).group(1)
print(latency, bandwidth)
EOF
)
  {
    echo "# Cluster: cpu-measured: $RANKS local CPU ranks, one MPI process per core, as measured on this"
    echo "# machine by scripts/fidelity.sh (whale-profile of each core, and whale-profile --links):"
    grep '^# .* fit:' "$WORK/links.yaml"
    echo "# The link: the ping-pong latency and the all-reduce bandwidth (docs/fidelity.md)."
    echo "name: cpu-measured"
    echo "nodes:"
    echo "  - name: local"
    devices=""
    for core in $CORES; do devices+="${devices:+, }{model: cpu-core$core, count: 1}"; done
    echo "    devices: [$devices]"
    echo "    intra_link: {kind: shm, bandwidth_gbps: $allreduce_gbps, latency_us: $latency_us}"
    echo "    network: {kind: shm, bandwidth_gbps: 1, latency_us: 0}  # one host: never used"
  } > "$CLUSTER"
fi

# Every plan once per round, rounds one after another, so that a change of load on the machine
# spreads over all plans instead of falling on a few; each run counts by its median step (after
# the first), and the tables average a plan's rounds.
# The plans run on the generated cluster: copies in generated/plans point at it.
PLANS=()
for plan in configs/plans/fidelity/*.yaml; do
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$(basename "$plan" .yaml),"* ]]; then continue; fi
  sed -e "s|^cluster: .*|cluster: $CLUSTER|" -e "s|^model: \(.*\)|model: $ROOT/configs/plans/fidelity/\1|" \
    "$plan" > "$GENERATED/plans/$(basename "$plan")"
  echo "profiles_dir: $GENERATED/profiles" >> "$GENERATED/plans/$(basename "$plan")"
  PLANS+=("$GENERATED/plans/$(basename "$plan")")
done
for name in ${ONLY//,/ } ${CALIBRATE_ON//,/ }; do
  if [ ! -f "configs/plans/fidelity/$name.yaml" ] || { [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; }; then
    echo "fidelity.sh: error: --plans/--calibrate-on: no plan '$name' among the plans run (hint: names of configs/plans/fidelity/*.yaml, and --calibrate-on a subset of --plans)" >&2
    exit 2
  fi
done
# Every run is predicted from a profile of the cores taken just before it (round-R/NAME/): the
# speed of a shared machine drifts by more than the model's error within a minute, and a
# profile taken a round earlier describes another machine. Each round's profile for the
# calibration below is the one taken before its first plan.
without_cache() {  # DIR OUT: DIR's profiles without their cache: block (every op priced cold) in OUT
  python3 - "$1" "$2" <<'EOF'
import os, sys, yaml
source, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for name in os.listdir(source):
    if name.endswith(".yaml"):
        profile = yaml.safe_load(open(os.path.join(source, name)))
        profile.pop("cache", None)
        with open(os.path.join(out, name), "w") as f:
            yaml.safe_dump(profile, f, sort_keys=False)
EOF
}
for round in $(seq 1 "$ROUNDS"); do
  mkdir -p "$WORK/round-$round"
  for plan in "${PLANS[@]}"; do
    name=$(basename "$plan" .yaml)
    profiles=$WORK/round-$round/$name
    mkdir -p "$profiles"
    if [ "$REUSE" = 0 ]; then
      echo "fidelity: round $round: $name: profiling the cores ($RANKS at once, in step) ..."
      profile_cpu "$profiles"
    fi
    for core in $CORES; do  # whale-run reads the profiles through the plans
      if [ "$REUSE" = 0 ]; then cp "$profiles/cpu-core$core.yaml" "$GENERATED/profiles/"
      else cp "$GENERATED/profiles/cpu-core$core.yaml" "$profiles/"; fi
      [ -f "$WORK/round-$round/cpu-core$core.yaml" ] || cp "$profiles/cpu-core$core.yaml" "$WORK/round-$round/"
    done
    estimate=$("$BUILD/apps/whale-sim" "$plan" --profiles "$profiles" --format json)
    python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])' <<< "$estimate" > "$WORK/round-$round/$name.predicted"
    without_cache "$profiles" "$profiles-cold"
    "$BUILD/apps/whale-sim" "$plan" --profiles "$profiles-cold" --format json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])' > "$WORK/round-$round/$name.predicted-cold"
    ranks=$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["devices"]))' <<< "$estimate")
    echo "fidelity: round $round: $name on $ranks rank(s), $STEPS steps ..."
    layer_times=()  # the calibration runs also measure their layers
    if [[ ",$CALIBRATE_ON," == *",$name,"* ]]; then layer_times=(--layer-times "$WORK/$name-$round.layers.csv"); fi
    mpirun -np "$ranks" "${CORE_BINDING[@]}" "$BUILD/apps/whale-run" "$plan" --data data/corpus.txt --steps "$STEPS" \
      --metrics "$WORK/$name-$round.jsonl" --trace "$WORK/$name-$round.trace.json" "${layer_times[@]}" \
      > "$WORK/$name-$round.log" 2>&1 ||
      { echo "fidelity.sh: error: whale-run failed on $plan (log: $WORK/$name-$round.log)" >&2
        tail -3 "$WORK/$name-$round.log" >&2; exit 1; }
  done
done

# One row per plan and round: the round's prediction (its profile) against the median of the
# round's measured steps. Each round is one experiment in one state of a shared machine.
measured_median() {  # METRICS.jsonl...: the median step time after each file's first step
  python3 - "$@" <<'EOF'
import json, statistics, sys
times = [s["step_time_s"] for path in sys.argv[1:] for s in map(json.loads, open(path)) if s["step"] > 1]
print(statistics.median(times))
EOF
}
printf '%s\t%s\t%s\t%s\t%s\n' plan round ranks predicted_s measured_s > "$WORK/fidelity.tsv"
printf '%s\t%s\t%s\t%s\t%s\n' plan round ranks predicted_s measured_s > "$WORK/fidelity-cold.tsv"
for plan in "${PLANS[@]}"; do
  name=$(basename "$plan" .yaml)
  ranks=$("$BUILD/apps/whale-sim" "$plan" --profiles "$WORK/round-1" --format json |
          python3 -c 'import json,sys; print(len(json.load(sys.stdin)["devices"]))')
  for round in $(seq 1 "$ROUNDS"); do
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$ranks" "$(cat "$WORK/round-$round/$name.predicted")" \
      "$(measured_median "$WORK/$name-$round.jsonl")" >> "$WORK/fidelity.tsv"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$ranks" "$(cat "$WORK/round-$round/$name.predicted-cold")" \
      "$(measured_median "$WORK/$name-$round.jsonl")" >> "$WORK/fidelity-cold.tsv"
  done
done

echo "fidelity: load after measuring: $(cut -d' ' -f1-3 /proc/loadavg)"
report() {  # TSV LABEL [--rounds]: the table, then `LABEL: N plans, MAPE X%, mean signed error S%, rank correlation Y`
  python3 "$ROOT/scripts/fidelity_report.py" "$@"
}
report "$WORK/fidelity.tsv" fidelity --rounds
# The same runs predicted with every op priced cold (the profiles' cache: blocks taken out): how
# much of the error the warm figures carry.
report "$WORK/fidelity-cold.tsv" "fidelity priced cold" | tail -1

# Peak memory per rank: whale-sim's prediction (devices in id order, the order of whale-run's
# ranks) against the peak whale-run's CPU backend held (its log's "peak memory per rank" line,
# the last round's run).
printf '%s\t%s\t%s\t%s\n' plan rank predicted_mib measured_mib > "$WORK/fidelity-memory.tsv"
for plan in "${PLANS[@]}"; do
  name=$(basename "$plan" .yaml)
  "$BUILD/apps/whale-sim" "$plan" --profiles "$WORK/round-1" --format json |
    python3 -c '
import json, sys
predicted = [d["peak_memory_bytes"] / 2**20 for d in json.load(sys.stdin)["devices"]]
line = [l for l in open(sys.argv[2]) if l.startswith("whale-run: peak memory per rank, MiB:")][-1]
measured = [float(v) for v in line.split(":")[-1].split()]
for rank, (p, m) in enumerate(zip(predicted, measured)):
    print(f"{sys.argv[1]}\t{rank}\t{p:.3f}\t{m:.3f}")
' "$name" "$WORK/$name-$ROUNDS.log" >> "$WORK/fidelity-memory.tsv"
done
python3 - "$WORK/fidelity-memory.tsv" <<'EOF'
# Per plan, the rank with the largest measured peak; the MAPE over all ranks of all plans.
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
print(f"{'plan':<16} {'ranks':>5} {'predicted_mib':>14} {'measured_mib':>13} {'error':>8}")
errors, plans = [], {}
for name, rank, predicted, measured in rows:
    predicted, measured = float(predicted), float(measured)
    errors.append(abs(predicted - measured) / measured)
    plans.setdefault(name, []).append((measured, predicted))
for name, ranks in plans.items():
    measured, predicted = max(ranks)
    print(f"{name:<16} {len(ranks):>5} {predicted:>14.2f} {measured:>13.2f} {100 * (predicted - measured) / measured:>+7.1f}%")
print(f"fidelity memory: {len(plans)} plans, {len(errors)} ranks, MAPE {100 * sum(errors) / len(errors):.1f}% (the table: each plan's rank with the largest measured peak)")
EOF

# Where the time went: each run's measured trace (whale-run --trace, its last step) against
# whale-sim's timeline from the profile taken before that run (whale-sim --compare), summed per
# device (its compute lane's busy time) and per op class over the plans of a round. A device
# whose ratio moves between rounds while the other's holds ran under interference; a compute
# class whose ratio sits away from 1 in every round is a bias of the model. As measured, a
# communication class includes the wait for the slower peer, and under tp the forward and
# backward include the tp all-reduces that whale-run runs inside them (docs/fidelity.md,
# "whale-sim --compare").
printf 'plan\tround\tkind\tname\tpredicted_s\tmeasured_s\n' > "$WORK/fidelity-compare.tsv"
for plan in "${PLANS[@]}"; do
  name=$(basename "$plan" .yaml)
  for round in $(seq 1 "$ROUNDS"); do
    "$BUILD/apps/whale-sim" "$plan" --profiles "$WORK/round-$round/$name" \
      --compare "$WORK/$name-$round.trace.json" --format json |
      python3 -c '
import json, sys
compare = json.load(sys.stdin)["compare"]
rows = [("device", d["id"], d["predicted_compute_s"], d["measured_compute_s"]) for d in compare["devices"]]
rows += [("class", c["class"], c["predicted_s"], c["measured_s"]) for c in compare["classes"]]
for kind, name, predicted, measured in rows:
    print("\t".join([sys.argv[1], sys.argv[2], kind, str(name), repr(predicted), repr(measured)]))
' "$name" "$round" >> "$WORK/fidelity-compare.tsv"
  done
done
python3 - "$WORK/fidelity-compare.tsv" <<'EOF'
# Per round, each device's and each op class's measured / predicted seconds summed over the
# plans, with the least and most of the plans' own ratios (plans where either is zero are left
# out of the range).
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
sums = {}
for plan, rnd, kind, name, predicted, measured in rows:
    entry = sums.setdefault((kind, name, int(rnd)), [0.0, 0.0, []])
    entry[0] += float(predicted)
    entry[1] += float(measured)
    if float(predicted) > 0 and float(measured) > 0:
        entry[2].append(float(measured) / float(predicted))
print("fidelity by device and op class: measured / predicted seconds, summed over the plans "
      "(> 1: slower than priced; the plans' least and most in the last column)")
print(f"{'':<22} {'round':>5} {'predicted_s':>12} {'measured_s':>11} {'ratio':>6}  range")
for kind, name, rnd in sorted(sums, key=lambda k: (k[0] != "device", k[1], k[2])):
    predicted, measured, ratios = sums[(kind, name, rnd)]
    ratio = f"{measured / predicted:6.3f}" if predicted > 0 else f"{'-':>6}"
    spread = f"{min(ratios):.3f}-{max(ratios):.3f}" if ratios else "-"
    label = f"device {name}" if kind == "device" else name
    print(f"{label:<22} {rnd:>5} {predicted:>12.4f} {measured:>11.4f} {ratio}  {spread}")
EOF
[ -n "$CALIBRATE_ON" ] || exit 0

# Calibration: each round's profile fitted to the step times that the --calibrate-on plans
# measured in that round (round-R/runs.csv), then every other plan predicted with it (mean over
# the rounds). Profile, layer times and step times of one round share the machine's state of
# that round, which a median over all rounds would mix.
for round in $(seq 1 "$ROUNDS"); do
  header=--header
  for name in ${CALIBRATE_ON//,/ }; do
    python3 scripts/metrics_to_runs.py $header --relative-to "$WORK/round-$round" \
      "$GENERATED/plans/$name.yaml" "$WORK/$name-$round.jsonl"
    header=""
  done > "$WORK/round-$round/runs.csv"
done
calibrate() {  # ROUND OUT_NAME [--layer-times FILE]: fits the round's profile into round-R/OUT_NAME
  local round=$1 out=$2; shift 2
  "$BUILD/apps/whale-calibrate" --runs "$WORK/round-$round/runs.csv" --profiles "$WORK/round-$round" "$@" \
    --out "$WORK/round-$round/$out" > "$WORK/round-$round/$out.log" 2>&1 ||
    { echo "fidelity.sh: error: whale-calibrate failed (log: $WORK/round-$round/$out.log)" >&2
      tail -3 "$WORK/round-$round/$out.log" >&2; exit 1; }
  echo "fidelity: round $round: $out: $(tail -2 "$WORK/round-$round/$out.log" | head -1)"
}
for round in $(seq 1 "$ROUNDS"); do
  calibrate "$round" calibrated
  # The round's measured layer times: one row per shape, the median over the calibration runs
  # that measured it.
  python3 - "$WORK/round-$round/layers.csv" "$WORK"/*-"$round".layers.csv <<'EOF'
import csv, statistics, sys
rows = {}
for path in sys.argv[2:]:
    for row in csv.DictReader(open(path)):
        key = (row["device_model"], row["layer_kind"], row["tp"], row["micro_batch"])
        rows.setdefault(key, []).append((float(row["forward_s"]), float(row["backward_s"])))
with open(sys.argv[1], "w") as out:
    out.write("device_model,layer_kind,tp,micro_batch,forward_s,backward_s\n")
    for key, times in sorted(rows.items()):
        forward = statistics.median(t[0] for t in times)
        backward = statistics.median(t[1] for t in times)
        out.write(",".join(key) + f",{forward!r},{backward!r}\n")
EOF
  calibrate "$round" calibrated-layers --layer-times "$WORK/round-$round/layers.csv"
  if [ -n "$CALIBRATE_PARAMETERS" ]; then calibrate "$round" calibrated-named --parameters "$CALIBRATE_PARAMETERS"; fi
done
prediction() {  # PLAN_NAME ROUND PROFILES: whale-sim's step time with round-R/PROFILES
  "$BUILD/apps/whale-sim" "$GENERATED/plans/$1.yaml" --profiles "$WORK/round-$2/$3" --format json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])'
}
TABLES="calibrated calibrated-layers"
[ -n "$CALIBRATE_PARAMETERS" ] && TABLES="$TABLES calibrated-named"
for table in held-out $TABLES; do
  head -1 "$WORK/fidelity.tsv" > "$WORK/fidelity-$table.tsv"
done
tail -n +2 "$WORK/fidelity.tsv" | while IFS=$'\t' read -r name round ranks predicted measured; do
  if [[ ",$CALIBRATE_ON," == *",$name,"* ]]; then continue; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$ranks" "$predicted" "$measured" >> "$WORK/fidelity-held-out.tsv"
  for table in $TABLES; do
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$ranks" "$(prediction "$name" "$round" "$table")" "$measured" \
      >> "$WORK/fidelity-$table.tsv"
  done
done
report "$WORK/fidelity-held-out.tsv" "fidelity uncalibrated, held out from $CALIBRATE_ON"
report "$WORK/fidelity-calibrated.tsv" "fidelity calibrated on $CALIBRATE_ON"
report "$WORK/fidelity-calibrated-layers.tsv" "fidelity calibrated with layer times on $CALIBRATE_ON"
if [ -n "$CALIBRATE_PARAMETERS" ]; then
  report "$WORK/fidelity-calibrated-named.tsv" "fidelity calibrated with $CALIBRATE_PARAMETERS on $CALIBRATE_ON"
fi

