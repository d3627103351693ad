#!/usr/bin/env bash
# File: torch_ddp_check.sh
# Does whale predict a framework other than whale-run? With Debian's PyTorch on the CPU, the small
# GPT of scripts/torch_gpt_trace.py (the shape of configs/models/bench-d256.yaml) is traced and
# timed single-process, the gloo all-reduce between two processes is timed, and whale-sim then
# predicts the step of the same model trained as DistributedDataParallel over gloo with 2 ranks
# (one thread each, the same micro-batch per rank), which is measured last. Nothing of the DDP
# run goes into the prediction:
#   - the CPU's profile: whale-profile --device cpu;
#   - the layers' forward and backward times: the single-process torch.profiler trace, taken
#     beside a neighbour process training on the other core (whale-calibrate --layer-times);
#   - the remaining fixed cost of a step: whale-calibrate on the single-process step time;
#   - the link: gloo's all-reduce fit (scripts/torch_ddp_step.py allreduce).
# Prints `torch ddp: measured X s, predicted Y s, error E%` and exits 1 when |E| > 10%, 77 when
# python3 has no torch (a skip for ctest).
#
# Usage: scripts/torch_ddp_check.sh BUILD_DIR [WORK_DIR] [--micro-batch B] [--steps S]
#   WORK_DIR defaults to BUILD_DIR/torch-ddp; it is the only folder written.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${1:?usage: scripts/torch_ddp_check.sh BUILD_DIR [WORK_DIR] [--micro-batch B] [--steps S]}")
shift
WORK="$BUILD/torch-ddp"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then WORK=$(realpath -m "$1"); shift; fi
MICRO_BATCH=4 STEPS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --micro-batch) MICRO_BATCH=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    *) echo "torch_ddp_check.sh: error: unknown argument '$1' (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch, torch.distributed" 2>/dev/null; then
  echo "torch_ddp_check.sh: skipped: $PYTHON has no torch (on Debian: apt-get install python3-torch)"
  exit 77
fi
for tool in whale-profile whale-calibrate whale-sim; do
  [ -x "$BUILD/apps/$tool" ] || { echo "torch_ddp_check.sh: error: no $BUILD/apps/$tool (build it first)" >&2; exit 2; }
done
rm -rf "$WORK"
mkdir -p "$WORK/profiles"
# The model's shape, read from the model YAML that the plans use, for the PyTorch scripts.
MODEL="$ROOT/configs/models/bench-d256.yaml"
shape() { sed -n "s/^$1: *\([0-9]*\).*/\1/p" "$MODEL"; }
TORCH_SHAPE=(--layers "$(shape layers)" --hidden "$(shape hidden)" --heads "$(shape heads)"
             --sequence "$(shape sequence)" --vocabulary "$(shape vocabulary)" --micro-batch "$MICRO_BATCH")

echo "torch ddp: profiling the CPU (whale-profile --device cpu) ..."
"$BUILD/apps/whale-profile" --device cpu --out "$WORK/profiles/cpu-measured.yaml" > "$WORK/profile.log" 2>&1
echo "torch ddp: timing gloo's all-reduce between 2 processes ..."
"$PYTHON" "$ROOT/scripts/torch_ddp_step.py" allreduce --ranks 2 --steps 9 --warmup 2 > "$WORK/allreduce.json"
read -r latency_us bandwidth_gbps < <("$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["latency_us"], d["bandwidth_gbps"])' "$WORK/allreduce.json")
cat > "$WORK/cluster.yaml" <<YAML
# Two CPU processes of this machine joined by gloo (scripts/torch_ddp_check.sh): the link is
# gloo's all-reduce fit (latency $latency_us us, bandwidth $bandwidth_gbps Gbit/s).
name: cpu-gloo
nodes:
  - name: local
    devices: [{model: cpu-measured, count: 2}]
    intra_link: {kind: shm, bandwidth_gbps: $bandwidth_gbps, latency_us: $latency_us}
    network: {kind: shm, bandwidth_gbps: 1, latency_us: 0}  # one host: never used
YAML
plan() {  # NAME DEVICES SHARES: a one-stage plan of the model at this micro-batch per rank
  cat > "$WORK/$1.yaml" <<YAML
cluster: cluster.yaml
model: $MODEL
profiles_dir: $WORK/profiles
precision: fp32
micro_batch_size: $(( MICRO_BATCH * $3 ))
micro_batches: 1
schedule: 1f1b
stages:
  - {layers: [0, $(( $(shape layers) + 1 ))], devices: "$2", shares: [$(printf "$MICRO_BATCH%.0s," $(seq "$3") | sed 's/,$//')]}
YAML
}
plan single 0 1
plan ddp 0-1 2

# The single process is traced and timed beside a neighbour that trains the same model on the
# other core, as the DDP ranks will run side by side: one core busy alone runs faster (the memory
# bandwidth and the shared cache are its own) than under training, which keeps every core busy.
echo "torch ddp: tracing and timing single-process training, beside a neighbour process ..."
"$PYTHON" "$ROOT/scripts/torch_ddp_step.py" single "${TORCH_SHAPE[@]}" --steps 1000 > /dev/null 2>&1 &
neighbour=$!
trap 'kill $neighbour 2>/dev/null || true' EXIT
"$PYTHON" "$ROOT/scripts/torch_gpt_trace.py" "$WORK/trace.json" "${TORCH_SHAPE[@]}" --steps 4 > "$WORK/trace.log" 2>&1
"$PYTHON" "$ROOT/scripts/torch_ddp_step.py" single "${TORCH_SHAPE[@]}" --steps "$STEPS" > "$WORK/single.json"
kill $neighbour 2>/dev/null || true
wait $neighbour 2>/dev/null || true
single_s=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["step_s"])' "$WORK/single.json")
printf 'plan,step_time_s,peak_memory_gib,failed\nsingle.yaml,%s,,false\n' "$single_s" > "$WORK/runs.csv"
"$BUILD/apps/whale-calibrate" --runs "$WORK/runs.csv" --profiles "$WORK/profiles" \
  --layer-times "$WORK/trace.json" --layer-times-device cpu-measured \
  --layer-times-micro-batch "$MICRO_BATCH" --out "$WORK/calibrated" > "$WORK/calibrate.log" 2>&1
sed -i "s|^profiles_dir: .*|profiles_dir: $WORK/calibrated|" "$WORK/ddp.yaml"
"$BUILD/apps/whale-sim" "$WORK/ddp.yaml" --format json > "$WORK/predicted.json"
predicted_s=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$WORK/predicted.json")

echo "torch ddp: timing DistributedDataParallel over gloo, 2 ranks ..."
"$PYTHON" "$ROOT/scripts/torch_ddp_step.py" ddp --ranks 2 "${TORCH_SHAPE[@]}" --steps "$STEPS" > "$WORK/ddp.json"
ddp_s=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["step_s"])' "$WORK/ddp.json")
"$PYTHON" - "$single_s" "$predicted_s" "$ddp_s" <<'PY'
import sys
single, predicted, measured = map(float, sys.argv[1:])
error = 100 * (predicted - measured) / measured
print(f"torch ddp: single-process step {single:.4g} s; DDP step measured {measured:.4g} s, "
      f"predicted {predicted:.4g} s, error {error:+.1f}%")
sys.exit(0 if abs(error) <= 10 else 1)
PY
