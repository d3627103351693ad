#!/usr/bin/env bash
# The cache-warmth grid: how much of a CPU step runs at the profile's warm figures, by working set.
# For each model shape (GPT blocks of width 64, 128 and 256, one to four of them, sequence 128,
# byte vocabulary), one rank bound to core 0 trains eight one-sample micro-batches, right after a
# quick whale-profile of that core; whale-sim then prices the same plan three ways from that
# profile: all cold (the profile without its cache block), all warm (the warm figures in place of
# the cold ones) and by libsim's rule (warm_fraction of the working set against the cache,
# cache_working_set.h). Prints per shape and round the measured step, the three predictions'
# errors, the warm fraction the rule gave and the one the measurement implies, each as
# (cold - step) / (cold - warm) in time, and the cache C per device that the profile recorded.
#
# Usage: scripts/cache_warmth_grid.sh [--build DIR] [--work DIR] [--rounds R]
#   --build DIR   build folder holding apps/whale-{profile,run,sim} (default: build)
#   --work DIR    where the models, plans, profiles and runs go (default: BUILD/cache-warmth)
#   --rounds R    profile-and-run rounds per shape (default: 2)
# Writes only into the work folder. About 40 s a shape and round on 2 cores.
set -euo pipefail

BUILD=build
WORK=
ROUNDS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "cache_warmth_grid.sh: error: unknown argument '$1' (hint: --build DIR, --work DIR, --rounds R)" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$BUILD/cache-warmth}
for tool in whale-profile whale-run whale-sim; do
  [ -x "$BUILD/apps/$tool" ] || { echo "cache_warmth_grid.sh: error: $BUILD/apps/$tool not found (hint: build first, or pass --build DIR)" >&2; exit 1; }
done
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BUILD=$(cd "$BUILD" && pwd)
source "$ROOT/scripts/core_binding.sh"   # CORE_BINDING: rank r on core r
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI and containers run as root

cat > "$WORK/cluster.yaml" <<EOF
# One CPU core, profiled by scripts/cache_warmth_grid.sh before each run.
name: cpu-core
nodes:
  - name: local
    devices: [{model: cpu-core0, count: 1}]
    intra_link: {kind: shm, bandwidth_gbps: 1, latency_us: 0}  # one device: never used
    network: {kind: shm, bandwidth_gbps: 1, latency_us: 0}
EOF

# profile_variant PROFILE KIND OUT: the profile priced all cold (KIND cold: no cache block) or all
# warm (KIND warm: the warm figures in place of the cold ones, no cache block).
profile_variant() {
  python3 - "$@" <<'EOF'
import sys, yaml
source, kind, out = sys.argv[1:]
profile = yaml.safe_load(open(source))
cache = profile.pop("cache", {}) or {}
if kind == "warm":
    profile["gemm_efficiency"].update(cache.get("warm_gemm_efficiency", {}))
    for key, warm_key in (("op_bandwidth_gbytes_per_s", "warm_op_bandwidth_gbytes_per_s"),
                          ("op_backward_bandwidth_gbytes_per_s", "warm_op_backward_bandwidth_gbytes_per_s")):
        if warm_key in cache:
            profile.setdefault(key, {}).update(cache[warm_key])
yaml.safe_dump(profile, open(out, "w"), sort_keys=False)
EOF
}
step_s() {  # PLAN PROFILES_DIR: whale-sim's step time
  "$BUILD/apps/whale-sim" "$1" --profiles "$2" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])'
}

printf '%-12s %5s %11s %8s %8s %8s %10s %13s %7s\n' shape round measured_s cold warm rule rule_warm measured_warm C_mib
for shape in "64 2" "128 1" "128 2" "256 1" "256 2" "256 4"; do
  read -r hidden layers <<< "$shape"
  name=d$hidden-l$layers
  sed -e "s/^name: .*/name: bench-$name/" -e "s/^layers: .*/layers: $layers/" -e "s/^hidden: .*/hidden: $hidden/" \
      -e "s/^ffn_hidden: .*/ffn_hidden: $((4 * hidden))/" -e "s/^heads: .*/heads: $((hidden / 32))/" \
      "$ROOT/configs/models/bench-d256.yaml" > "$WORK/$name.model.yaml"
  cat > "$WORK/$name.plan.yaml" <<EOF
cluster: $WORK/cluster.yaml
model: $WORK/$name.model.yaml
precision: fp32
micro_batch_size: 1
micro_batches: 8
schedule: 1f1b
stages:
  - {layers: [0, $((layers + 1))], devices: "0"}
EOF
  for round in $(seq 1 "$ROUNDS"); do
    dir=$WORK/$name-$round
    mkdir -p "$dir/rule" "$dir/cold" "$dir/warm"
    mpirun -np 1 "${CORE_BINDING[@]}" "$BUILD/apps/whale-profile" --device cpu --quick --out "$dir/rule/cpu-core0.yaml" > "$dir/profile.log" 2>&1 ||
      { echo "cache_warmth_grid.sh: error: whale-profile failed (log: $dir/profile.log)" >&2; exit 1; }
    profile_variant "$dir/rule/cpu-core0.yaml" cold "$dir/cold/cpu-core0.yaml"
    profile_variant "$dir/rule/cpu-core0.yaml" warm "$dir/warm/cpu-core0.yaml"
    echo "profiles_dir: $dir/rule" > "$dir/plan.yaml"
    cat "$WORK/$name.plan.yaml" >> "$dir/plan.yaml"
    (cd "$ROOT" && mpirun -np 1 "${CORE_BINDING[@]}" "$BUILD/apps/whale-run" "$dir/plan.yaml" --data data/corpus.txt --steps 6 \
      --metrics "$dir/metrics.jsonl" > "$dir/run.log" 2>&1) ||
      { echo "cache_warmth_grid.sh: error: whale-run failed (log: $dir/run.log)" >&2; exit 1; }
    python3 - "$dir" "$name" "$round" "$(step_s "$dir/plan.yaml" "$dir/cold")" "$(step_s "$dir/plan.yaml" "$dir/warm")" \
      "$(step_s "$dir/plan.yaml" "$dir/rule")" <<'EOF'
import json, statistics, sys, yaml
folder, name, rnd, cold, warm, rule = sys.argv[1:]
cold, warm, rule = float(cold), float(warm), float(rule)
steps = [s["step_time_s"] for s in map(json.loads, open(folder + "/metrics.jsonl")) if s["step"] > 1]
measured = statistics.median(steps)
warm_fraction = lambda step: (cold - step) / (cold - warm) if cold != warm else float("nan")
err = lambda p: f"{100 * (p / measured - 1):+.1f}%"
cache_mib = (yaml.safe_load(open(folder + "/rule/cpu-core0.yaml")).get("cache") or {}).get("last_level_cache_mib_per_device", 0)
print(f"{name:<12} {rnd:>5} {measured:11.4f} {err(cold):>8} {err(warm):>8} {err(rule):>8} "
      f"{warm_fraction(rule):10.2f} {warm_fraction(measured):13.2f} {cache_mib:7.1f}")
EOF
  done
done
