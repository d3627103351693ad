#!/usr/bin/env bash
# File: gpu-check.sh
# Verifies whale's GPU path on a machine with an NVIDIA GPU and the CUDA Toolkit: builds whale,
# runs every GPU check and writes OUT/gpu-check.md and OUT/gpu-check.json, each check PASS, FAIL
# or SKIP with its numbers (docs/gpu-check.md lists them and their bounds). Exits 1 when a check
# fails, or at once, before building, when the machine has no CUDA device.
# Usage (from anywhere): scripts/gpu-check.sh [--build DIR] [--out DIR] [--steps N]
#   --build  build folder (default build-gpu, gitignored)
#   --out    report folder (default BUILD/gpu-check); scratch files go to OUT/work
#   --steps  steps of the bf16-vs-fp32 loss curves (default 300)
set -uo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.." || exit 2
build=build-gpu out="" curve_steps=300
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --steps) curve_steps=$2; shift 2 ;;
    *) echo "gpu-check: unknown argument '$1' (usage: scripts/gpu-check.sh [--build DIR] [--out DIR] [--steps N])"; exit 2 ;;
  esac
done
out=${out:-$build/gpu-check}
# Folders named on the command line are relative to where the script was called from.
case $build in /*) ;; *) [ "$build" = build-gpu ] || build=$caller/$build ;; esac
case $out in /*) ;; *) [ "$out" = build-gpu/gpu-check ] || out=$caller/$out ;; esac

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "gpu-check: no CUDA device (nvidia-smi/cudaGetDeviceCount): nothing to check"
  exit 1
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$out/work"
out=$(cd "$out" && pwd) work=$out/work results=$out/work/results.tsv
: > "$results"
src=$(pwd)

# record NAME STATUS NUMBERS: one check's outcome (a line of results.tsv and of stdout).
record() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$results"
  echo "gpu-check: $1: $2 - $3"
}
# one_line FILE: the last non-empty line of a log, for a FAIL reason.
one_line() { grep -v '^\s*$' "$1" 2>/dev/null | tail -1 | tr '\t' ' ' | cut -c1-300; }
# on_gpu METRICS: whale-run reports the device of every rank in --metrics ("device":"cuda:N").
on_gpu() { grep -q '"device":"cuda' "$1" 2>/dev/null; }
no_gpu_reason='whale-run did not report a CUDA device in --metrics ("device":"cuda:N"): was it built with the CUDA Toolkit, and does the plan give rank 0 a GPU?'

# --- build ---------------------------------------------------------------------------------
generator=(); command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 &&
   cmake --build "$build" -j"$(nproc)" > "$work/build.log" 2>&1; then
  if grep -q "whale: CUDA parts enabled" "$work/configure.log"; then
    record build PASS "$(grep -o 'nvcc [0-9.]*' "$work/configure.log" | head -1) in $build"
  else
    record build FAIL "configured without CUDA: $(grep 'whale: ' "$work/configure.log" | head -1)"
  fi
else
  record build FAIL "$(one_line "$work/build.log")"
fi
bin=$(cd "$build" 2>/dev/null && pwd)/apps
run=$bin/whale-run

# --- the device and its datasheet profile --------------------------------------------------
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -1)
case $gpu_name in
  *H100*) datasheet=h100-sxm-80gb ;;
  *A100*80GB*) datasheet=a100-sxm4-80gb ;;
  *A100*) datasheet=a100-sxm4-40gb ;;
  *V100*32GB*) datasheet=v100-sxm2-32gb ;;
  *V100*) datasheet=v100-sxm2-16gb ;;
  *P100*) datasheet=p100-sxm2-16gb ;;
  *L4*) datasheet=l4 ;;
  *A10*) datasheet=a10 ;;
  *T4*) datasheet=t4 ;;
  *3090*) datasheet=rtx3090 ;;
  *) datasheet="" ;;
esac
# whale-run needs a GPU profile name for the plans' clusters (only its kind matters there).
run_profile=${datasheet:-h100-sxm-80gb}

# Profiles for whale-sim: the shipped ones, with this GPU's datasheet name measured afresh.
mkdir -p "$work/profiles"
cp profiles/*.yaml "$work/profiles/"
if "$bin/whale-profile" --device cuda:0 --out "$work/profiles/$run_profile.yaml" \
     > "$work/profile.log" 2>&1; then
  profiled=1
else
  profiled=0
fi

# --- clusters and plans --------------------------------------------------------------------
# One host: GPU 0 as device 0, then seven CPU ranks. Link figures are placeholders: the checks
# that use this cluster compare numerics, not times.
cat > "$work/gpu-cpu.yaml" <<EOF
name: gpu-check-gpu-cpu
nodes:
  - name: gpu
    devices:
      - {model: $run_profile, count: 1}
    intra_link: {kind: nvlink, bandwidth_gbps: 100, latency_us: 5}   # placeholder (numerics only)
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}    # placeholder (numerics only)
  - name: cpus
    devices:
      - {model: cpu, count: 7}
    intra_link: {kind: shm, bandwidth_gbps: 80, latency_us: 2}       # placeholder (numerics only)
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}    # placeholder (numerics only)
EOF
# gpu_plan SOURCE NAME [SED...]: SOURCE with its cluster replaced by gpu-cpu.yaml and its model
# path made absolute, edited further by the sed expressions; prints the new path.
gpu_plan() {
  local source=$1 name=$2; shift 2
  mkdir -p "$work/plans"
  sed -e "s|^cluster: .*|cluster: $work/gpu-cpu.yaml|" \
      -e "s|^model: \.\./\.\./models/|model: $src/configs/models/|" "$@" "$source" \
      > "$work/plans/$name.yaml"
  echo "$work/plans/$name.yaml"
}
# train PLAN NP TAG ARGS...: whale-run PLAN on NP ranks into work/TAG.{jsonl,params,log}.
train() {
  local plan=$1 np=$2 tag=$3; shift 3
  local launcher=(); [ "$np" -gt 1 ] && launcher=(mpirun -np "$np" --oversubscribe)
  # --device gpu: the plans' GPU profile may not be this GPU's (run_profile above).
  "${launcher[@]}" "$run" "$plan" --data data/corpus.txt --log-every 0 --seed 7 --device gpu \
    --metrics "$work/$tag.jsonl" --dump-params "$work/$tag.params" "$@" > "$work/$tag.log" 2>&1
}
# compare TAG_REF TAG_RUN STEPS: scripts/compare_runs.sh on two runs; prints its summary.
compare() {
  bash scripts/compare_runs.sh "$work/$1.jsonl" "$work/$2.jsonl" "$work/$1.params" \
    "$work/$2.params" "$3" > "$work/compare-$2.log" 2>&1
}
summary_of() { grep -E '^(losses|parameters):' "$work/compare-$1.log" | tr '\n' ' ' | cut -c1-400; }

# --- op tests: every executable under BUILD/tests/cuda --------------------------------------
shopt -s nullglob
cuda_tests=("$build"/tests/cuda/*)
if [ ${#cuda_tests[@]} -eq 0 ]; then
  record ops FAIL "no executables under $build/tests/cuda (they are built only when nvcc, cuBLAS, NCCL and CUPTI are found)"
fi
for exe in "${cuda_tests[@]}"; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  name=$(basename "$exe")
  (cd "$src" && "$exe") > "$work/$name.log" 2>&1
  rc=$?
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$work/$name.log" | grep 'test cases:' | tail -1)
  failed=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) failed.*/\1/p')
  if [ $rc -eq 0 ] && [ -n "$line" ] && [ "${failed:-1}" = 0 ]; then
    record "ops/$name" PASS "$(echo "$line" | sed 's/.*test cases: *//')"
  else
    record "ops/$name" FAIL "exit $rc; ${line:-no doctest summary}"
  fi
done

# --- one fp32 step on the GPU equals the CPU ------------------------------------------------
single_gpu=$(gpu_plan configs/plans/tiny/single.yaml single-gpu)
whale_run_cpu_only=0  # set when whale-run ran a GPU plan on the CPU: benchmarks would take hours
train configs/plans/tiny/single.yaml 1 cpu-1 --steps 1
if ! train "$single_gpu" 1 gpu-1 --steps 1; then
  record fp32_step FAIL "whale-run: $(one_line "$work/gpu-1.log")"
elif ! on_gpu "$work/gpu-1.jsonl"; then
  record fp32_step FAIL "$no_gpu_reason"
  whale_run_cpu_only=1
elif compare cpu-1 gpu-1 1; then
  record fp32_step PASS "$(summary_of gpu-1)"
else
  record fp32_step FAIL "$(summary_of gpu-1)"
fi

# --- tiny plans: rank 0 on the GPU, the others on CPUs, against single.yaml -----------------
train configs/plans/tiny/single.yaml 1 cpu-20 --steps 20
for plan in configs/plans/tiny/*.yaml; do
  name=$(basename "$plan" .yaml)
  [ "$name" = single ] && continue
  np=$("$bin/whale-sim" "$plan" --format json 2>/dev/null | python3 -c \
    'import json,sys; print(len(json.load(sys.stdin)["devices"]))' 2>/dev/null || echo 0)
  mixed=$(gpu_plan "$plan" "mixed-$name")
  if [ "$np" -lt 1 ] || [ "$np" -gt 8 ]; then
    record "mixed/$name" FAIL "could not count the plan's devices with whale-sim"
  elif ! train "$mixed" "$np" "mixed-$name" --steps 20; then
    record "mixed/$name" FAIL "whale-run on $np ranks: $(one_line "$work/mixed-$name.log")"
  elif ! on_gpu "$work/mixed-$name.jsonl"; then
    record "mixed/$name" FAIL "$no_gpu_reason"
  elif compare cpu-20 "mixed-$name" 20; then
    record "mixed/$name" PASS "$np ranks: $(summary_of "mixed-$name")"
  else
    record "mixed/$name" FAIL "$np ranks: $(summary_of "mixed-$name")"
  fi
done

# --- bf16 loss curve within 2% of fp32's ----------------------------------------------------
bf16=$(gpu_plan configs/plans/tiny/single.yaml curve-bf16 -e 's/^precision: .*/precision: bf16/')
fp32=$(gpu_plan configs/plans/tiny/single.yaml curve-fp32)
if train "$fp32" 1 curve-fp32 --steps "$curve_steps" && train "$bf16" 1 curve-bf16 --steps "$curve_steps"; then
  if ! on_gpu "$work/curve-bf16.jsonl"; then
    record bf16_curve FAIL "$no_gpu_reason"
  else
    # Losses averaged over 10-step windows; the largest relative gap of bf16 to fp32.
    verdict=$(python3 - "$work/curve-fp32.jsonl" "$work/curve-bf16.jsonl" "$curve_steps" <<'PY'
import json, sys
def losses(path): return [json.loads(l)["loss"] for l in open(path) if l.strip()]
a, b, steps = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
if len(a) != steps or len(b) != steps: print(f"FAIL {len(a)} and {len(b)} of {steps} steps"); sys.exit()
win = lambda v, i: sum(v[i:i + 10]) / len(v[i:i + 10])
gap = max(abs(win(b, i) - win(a, i)) / abs(win(a, i)) for i in range(0, steps, 10))
print(("PASS" if gap <= 0.02 else "FAIL") + f" {steps} steps, largest gap of 10-step means {gap:.4f} "
      f"(bound 0.02); final loss fp32 {a[-1]:.4f}, bf16 {b[-1]:.4f}")
PY
)
    record bf16_curve "${verdict%% *}" "${verdict#* }"
  fi
else
  record bf16_curve FAIL "whale-run: $(one_line "$work/curve-bf16.log")"
fi

# --- checkpoints: GPU -> CPU and CPU -> GPU -------------------------------------------------
train configs/plans/tiny/single.yaml 1 ckpt-ref --steps 4
tail -2 "$work/ckpt-ref.jsonl" > "$work/ckpt-ref-tail.jsonl"
cp "$work/ckpt-ref.params" "$work/ckpt-ref-tail.params"
for direction in gpu-cpu cpu-gpu; do
  first=$single_gpu second=configs/plans/tiny/single.yaml
  [ "$direction" = cpu-gpu ] && first=configs/plans/tiny/single.yaml second=$single_gpu
  rm -rf "$work/ckpt-$direction"
  if train "$first" 1 "ckpt-$direction-a" --steps 2 --checkpoint-dir "$work/ckpt-$direction" \
       --checkpoint-every 2 &&
     train "$second" 1 "ckpt-$direction" --steps 4 --checkpoint-dir "$work/ckpt-$direction" --resume; then
    if ! on_gpu "$work/ckpt-$direction$([ "$direction" = gpu-cpu ] && echo -a).jsonl"; then
      record "checkpoint/$direction" FAIL "$no_gpu_reason"
    elif compare ckpt-ref-tail "ckpt-$direction" 2; then
      record "checkpoint/$direction" PASS "steps 1-2 then resumed 3-4: $(summary_of "ckpt-$direction")"
    else
      record "checkpoint/$direction" FAIL "$(summary_of "ckpt-$direction")"
    fi
  else
    record "checkpoint/$direction" FAIL "whale-run: $(one_line "$work/ckpt-$direction.log")"
  fi
done

# --- benchmarks, predicted step time and peak memory ----------------------------------------
# bench_plan MODEL LAST_LAYER MICRO_BATCH: a one-GPU bf16 plan of MODEL.
bench_plan() {
  cat > "$work/plans/bench-$1.yaml" <<EOF
cluster: $work/gpu-cpu.yaml
model: $src/configs/models/$1.yaml
precision: bf16
micro_batch_size: $3
micro_batches: 1
schedule: 1f1b
stages:
  - {layers: [0, $2], devices: "0"}
EOF
  echo "$work/plans/bench-$1.yaml"
}
for spec in "gpt2-124m 13 8" "gpt3-1.3b 25 2"; do
  set -- $spec
  model=$1 plan=$(bench_plan "$@")
  if [ "$whale_run_cpu_only" = 1 ]; then
    record "bench/$model" FAIL "not run: $no_gpu_reason"
    record "memory/$model" FAIL "not run: $no_gpu_reason"
    continue
  fi
  if [ "$profiled" != 1 ]; then
    record "bench/$model" FAIL "whale-profile --device cuda:0: $(one_line "$work/profile.log")"
    record "memory/$model" FAIL "whale-profile --device cuda:0 failed: nothing to predict with"
    continue
  fi
  "$bin/whale-sim" "$plan" --profiles "$work/profiles" --format json > "$work/sim-$model.json" 2> "$work/sim-$model.log"
  if ! timeout 3600 "$run" "$plan" --data data/corpus.txt --log-every 0 --seed 7 --steps 20 \
         --metrics "$work/bench-$model.jsonl" > "$work/bench-$model.log" 2>&1; then
    record "bench/$model" FAIL "whale-run: $(one_line "$work/bench-$model.log")"
    record "memory/$model" FAIL "whale-run did not finish"
    continue
  fi
  if ! on_gpu "$work/bench-$model.jsonl"; then
    record "bench/$model" FAIL "$no_gpu_reason"
    record "memory/$model" FAIL "$no_gpu_reason"
    continue
  fi
  # Measured: the median step time of steps 6-20; MFU = whale-sim's model FLOPs per step over
  # (measured step time x the datasheet bf16 peak). Prediction within 30%, memory within 25%.
  verdict=$(python3 - "$work/sim-$model.json" "$work/bench-$model.jsonl" "$work/profiles/$run_profile.yaml" \
                      "profiles/$run_profile.yaml" <<'PY'
import json, re, statistics, sys
sim = json.load(open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][5:]
measured = statistics.median(r["step_time_s"] for r in rows)
tokens = statistics.median(r["tokens_per_s"] for r in rows)
peak = float(re.search(r"^\s*bf16:\s*([0-9.]+)", open(sys.argv[4]).read(), re.M).group(1)) * 1e12
mfu = sim["model_flops_per_step"] / measured / peak
err = sim["step_time_s"] / measured - 1
print(("PASS" if abs(err) <= 0.30 else "FAIL") +
      f" {tokens:.0f} tokens/s, MFU {mfu:.3f}; step {measured * 1e3:.1f} ms measured, "
      f"{sim['step_time_s'] * 1e3:.1f} ms predicted ({err:+.1%}, bound 30%)")
have = [r for r in rows if "peak_memory_bytes" in r]
if not have:
    print("FAIL whale-run --metrics has no peak_memory_bytes; predicted "
          f"{sim['devices'][0]['peak_memory_bytes'] / 2**30:.2f} GiB")
else:
    got = max(r["peak_memory_bytes"] for r in have)
    want = sim["devices"][0]["peak_memory_bytes"]
    print(("PASS" if abs(want / got - 1) <= 0.25 else "FAIL") +
          f" peak {got / 2**30:.2f} GiB measured, {want / 2**30:.2f} GiB predicted "
          f"({want / got - 1:+.1%}, bound 25%)")
PY
)
  bench=$(echo "$verdict" | sed -n 1p) memory=$(echo "$verdict" | sed -n 2p)
  record "bench/$model" "${bench%% *}" "${bench#* }"
  record "memory/$model" "${memory%% *}" "${memory#* }"
done

# --- whale-profile against the datasheet ----------------------------------------------------
if [ -z "$datasheet" ]; then
  record profile SKIP "no shipped datasheet profile for '$gpu_name' in profiles/"
elif [ "$profiled" != 1 ]; then
  record profile FAIL "whale-profile --device cuda:0: $(one_line "$work/profile.log")"
else
  verdict=$(python3 - "$work/profiles/$datasheet.yaml" "profiles/$datasheet.yaml" <<'PY'
import re, sys
def figures(path):
    text = open(path).read()
    bw = float(re.search(r"^memory_bandwidth_gbytes_per_s:\s*([0-9.eE+-]+)", text, re.M).group(1))
    bf16 = float(re.search(r"^\s+bf16:\s*([0-9.eE+-]+)", text, re.M).group(1))
    return bw, bf16
(bw, bf16), (sheet_bw, sheet_bf16) = figures(sys.argv[1]), figures(sys.argv[2])
ok = 0.5 <= bf16 / sheet_bf16 <= 1.05 and 0.5 <= bw / sheet_bw <= 1.05
print(("PASS" if ok else "FAIL") + f" bf16 {bf16:.1f} of {sheet_bf16:.1f} TFLOP/s ({bf16 / sheet_bf16:.0%}), "
      f"memory {bw:.0f} of {sheet_bw:.0f} GB/s ({bw / sheet_bw:.0%}); bounds 50%-105%")
PY
)
  record profile "${verdict%% *}" "${verdict#* }"
fi

# --- report ---------------------------------------------------------------------------------
python3 - "$results" "$out" "$gpu_name" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
checks = [{"check": r[0], "status": r[1], "numbers": r[2] if len(r) > 2 else ""} for r in rows]
counts = {s: sum(c["status"] == s for c in checks) for s in ("PASS", "FAIL", "SKIP")}
json.dump({"gpu": sys.argv[3], "counts": counts, "checks": checks},
          open(sys.argv[2] + "/gpu-check.json", "w"), indent=1)
with open(sys.argv[2] + "/gpu-check.md", "w") as md:
    md.write(f"# gpu-check on {sys.argv[3]}\n\n{counts['PASS']} PASS, {counts['FAIL']} FAIL, "
             f"{counts['SKIP']} SKIP\n\n| check | status | numbers |\n|---|---|---|\n")
    for c in checks:
        md.write(f"| {c['check']} | {c['status']} | {c['numbers'].replace('|', '/')} |\n")
PY
echo "gpu-check: report in $out/gpu-check.md and $out/gpu-check.json"
! grep -q "	FAIL	" "$results"
