#!/usr/bin/env bash
# File: gpu-check.sh
# The six-minute GPU check: runs the GPU kit (scripts/gpu-kit.sh) on a machine with an NVIDIA GPU,
# with nothing built there and none of whale's Debian packages, under a hard deadline of 360 s.
# The phases run in the order that says the most when a run is cut short, each under its own
# time budget (docs/gpu-check.md). Writes OUT/gpu-check.md, OUT/gpu-check.json,
# OUT/torch-grid.csv, OUT/kernels.csv and OUT/gpu-check-logs.tar.gz (every log, plan, metrics and profile of the
# run, from OUT/work, which it then removes); exits 1 when a phase fails.
# Without a GPU it prints one line and exits 1 before writing anything; --dry-run instead prints
# the phases with their budgets and runs what needs no GPU.
# --only LIST runs the named phases alone (comma-separated; env and report always run), for a
# second, shorter run that repeats what failed.
# Usage (from anywhere): scripts/gpu-check.sh --kit DIR [--out DIR] [--only LIST] [--dry-run]
set -uo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.." || exit 2
src=$(pwd)
source scripts/kit-libs.sh
usage="usage: scripts/gpu-check.sh --kit DIR [--out DIR] [--only LIST] [--dry-run]"
kit="" out=build/gpu-check dry=0 only=""
while [ $# -gt 0 ]; do
  case $1 in
    --kit) kit=${2:-}; shift 2 || shift ;;
    --out) out=${2:-}; shift 2 || shift ;;
    --only) only=${2:-}; shift 2 || shift ;;
    --dry-run) dry=1; shift ;;
    *) echo "gpu-check: error: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
done
[ -n "$kit" ] ||
  { echo "gpu-check: error: no --kit DIR ($usage; scripts/gpu-kit.sh DIR makes one)" >&2; exit 2; }
case $kit in /*) ;; *) kit=$caller/$kit ;; esac
case $out in /*) ;; *) [ "$out" = build/gpu-check ] || out=$caller/$out ;; esac
deadline_s=360
start=$(date +%s)

# The phases in run order: name, budget in seconds, what it does. The budgets add up to at
# most deadline_s; each phase also stops at the deadline, less what the report needs.
phases=(
  "env 8 the GPU, the driver, the kit, and where each CUDA library was found"
  "ops 12 the CUDA op tests (test_cuda_backend) against the CPU backend"
  "memcheck 50 the op tests under compute-sanitizer --tool memcheck"
  "fp32_step 12 one fp32 step of the tiny model on the GPU against the CPU (compare_runs.sh)"
  "bridge 12 the tiny dp2 plan with rank 0 on the GPU and rank 1 on a CPU (host bridge), 4 steps"
  "nccl 12 the one-rank NCCL smoke test (test_cuda_nccl)"
  "bf16_curve 10 the tiny model for 100 steps in bf16 and in fp32 on the GPU"
  "bench_gpt2 25 whale-run GPT-2 124M, bf16, sequence 1024, micro-batch 8, 30 steps"
  "bench_gpt3 55 whale-run GPT-3 1.3B, bf16, sequence 2048, micro-batch 2, 20 steps"
  "torch_bench 40 the same two models in PyTorch eager (SDPA, bf16 autocast, fused AdamW)"
  "torch_grid 45 PyTorch peak memory and step time, micro-batch 1,2,4 x eager/SDPA x fp32/bf16 (memory validation data: docs/memory-validation.md)"
  "profile 15 whale-profile --device cuda:0 --quick"
  "predict 8 whale-sim's step and peak memory of both benchmarks from the fresh profile"
  "kernels 45 whale-run --kernel-times (CUPTI) of both benchmarks, by kernel and op class"
  "report 5 gpu-check.md, gpu-check.json and the archive of every log"
)
report_reserve_s=5
budget_sum=0 known=","
for p in "${phases[@]}"; do set -- $p; budget_sum=$((budget_sum + $2)); known="$known$1,"; done
for n in ${only//,/ }; do
  case $known in *",$n,"*) ;;
    *) echo "gpu-check: error: --only: unknown phase '$n' (the phases: ${known:1:-1})" >&2; exit 2 ;;
  esac
done
# selected NAME: whether --only (when given) names the phase; env and report always run.
selected() {
  [ -z "$only" ] || [ "$1" = env ] || [ "$1" = report ] && return 0
  case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac
}

has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }
if [ $dry = 0 ] && ! has_gpu; then
  echo "gpu-check: no CUDA device (nvidia-smi/cudaGetDeviceCount): nothing to check"
  exit 1
fi
mkdir -p "$out/work"
out=$(cd "$out" && pwd) work=$out/work
rm -rf "$work" "$out"/gpu-check.* "$out/torch-grid.csv" "$out/kernels.csv" "$out/gpu-check-logs.tar.gz"
mkdir -p "$work/plans" "$work/profiles"
results=$work/results.tsv values=$work/values.tsv
: > "$results"; : > "$values"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1

# record NAME STATUS SECONDS BUDGET NUMBERS: one phase's outcome, in results.tsv and on stdout.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >> "$results"
  echo "gpu-check: $1: $2 ($3 s of $4) - $5"
}
# value BENCH KEY VALUE: a figure of a benchmark for gpu-check.json.
value() { [ -n "$3" ] && printf '%s %s %s\n' "$1" "$2" "$3" >> "$values"; }
# one_line FILE: the line of a log that says the most: its last "error:" line (whale's), else its
# last line that is not empty and not mpirun's rule.
one_line() {
  { grep 'error:' "$1" || grep -v -E '^\s*$|^-+$' "$1"; } 2>/dev/null | tail -1 | tr '\t' ' ' | cut -c1-300
}
# limited CMD...: CMD until the running phase's end (phase_end, epoch seconds); exit 124 when it
# ran out.
phase_end=$(($(date +%s) + 30))
limited() {
  local s=$((phase_end - $(date +%s)))
  [ "$s" -ge 1 ] || s=1
  timeout -k 5 "$s" "$@"
}

echo "gpu-check: kit $kit, out $out, deadline $deadline_s s; phases and budgets (sum $budget_sum s):"
for p in "${phases[@]}"; do
  set -- $p; n=$1 b=$2; shift 2
  printf 'gpu-check: phase %-11s %3s s: %s\n' "$n" "$b" "$*"
done
if [ "$budget_sum" -gt "$deadline_s" ]; then
  echo "gpu-check: error: the budgets add up to $budget_sum s, over the deadline of $deadline_s s" >&2
  exit 1
fi

# --- what every phase uses ---------------------------------------------------------------------
kit_ok=0
if [ -f "$kit/env.sh" ]; then
  kit_ok=1
  source "$kit/env.sh"
  kit_use_cuda_libs "$kit/cuda-libs.txt" > "$work/env-cuda-libs.txt"  # onto LD_LIBRARY_PATH
fi
gpu_name=$( [ $dry = 0 ] && nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -1)
case $gpu_name in
  *GH200*) datasheet=gh200-96gb ;;
  *H200*) datasheet=h200-sxm-141gb ;;
  *H100*) datasheet=h100-sxm-80gb ;;
  *A100*80GB*) datasheet=a100-sxm4-80gb ;;
  *A100*) datasheet=a100-sxm4-40gb ;;
  *) datasheet=h100-sxm-80gb ;;  # the dry run's and an unknown GPU's stand-in
esac
peak_bf16=$(sed -n 's/^ *bf16: *\([0-9.][0-9.]*\).*/\1/p' "profiles/$datasheet.yaml" | head -1)
cp profiles/*.yaml "$work/profiles/"
# One host: the GPU as device 0 on its own node, then seven CPU ranks. The link figures are
# placeholders: the plans on this cluster compare numerics, and the benchmarks use one device.
cat > "$work/gpu-cpu.yaml" <<EOF
name: gpu-check-gpu-cpu
nodes:
  - name: gpu
    devices:
      - {model: $datasheet, count: 1}
    intra_link: {kind: nvlink, bandwidth_gbps: 100, latency_us: 5}   # placeholder (numerics only)
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}    # placeholder (numerics only)
  - name: cpus
    devices:
      - {model: cpu, count: 7}
    intra_link: {kind: shm, bandwidth_gbps: 80, latency_us: 2}       # placeholder (numerics only)
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}    # placeholder (numerics only)
EOF
# gpu_plan SOURCE NAME: SOURCE (a tiny plan) on gpu-cpu.yaml, its model path made absolute.
gpu_plan() {
  sed -e "s|^cluster: .*|cluster: $work/gpu-cpu.yaml|" \
      -e "s|^model: \.\./\.\./models/|model: $src/configs/models/|" "$1" > "$work/plans/$2.yaml"
  echo "$work/plans/$2.yaml"
}
# bench_plan MODEL LAST_LAYER MICRO_BATCH: a one-GPU bf16 plan of MODEL.
# whale-run accumulates and reduces parameter gradients in fp32 whatever the precision
# (docs/run.md), so the plan says grad_reduce_precision fp32 for whale-sim to count them so.
bench_plan() {
  printf '%s\n' "cluster: $work/gpu-cpu.yaml" "model: $src/configs/models/$1.yaml" "precision: bf16" \
    "grad_reduce_precision: fp32" "micro_batch_size: $3" "micro_batches: 1" "schedule: 1f1b" "stages:" \
    "  - {layers: [0, $2], devices: \"0\"}" > "$work/plans/bench-$1.yaml"
  echo "$work/plans/bench-$1.yaml"
}
# The benchmarks: name, model, last layer (embedding, blocks, head), micro-batch, steps, and the
# AdamW learning rate of the model's size in the GPT-3 paper (Brown et al. 2020, Table 2.1:
# 6.0e-4 for 125M, 2.0e-4 for 1.3B; whale-run's default 1e-3 without warm-up makes 1.3B's loss
# climb on the first steps).
benches=("gpt2 gpt2-124m 13 8 30 6e-4" "gpt3 gpt3-1.3b 25 2 20 2e-4")
# train PLAN NP TAG ARGS...: whale-run PLAN on NP ranks into work/TAG.{jsonl,params,log}.
train() {
  local plan=$1 np=$2 tag=$3 launcher=(); shift 3
  [ "$np" -gt 1 ] && launcher=(mpirun -np "$np")
  # --device gpu: the plans name the datasheet profile, which may not be this GPU's exact model.
  limited "${launcher[@]}" whale-run "$plan" --data data/corpus.txt --log-every 0 --seed 7 --device gpu \
    --metrics "$work/$tag.jsonl" --dump-params "$work/$tag.params" "$@" > "$work/$tag.log" 2>&1
}
# compare REF RUN STEPS: scripts/compare_runs.sh with each tensor within 1e-4 (the whole vector
# stays within 1e-5): the GPU sums in other orders than the CPU, and the tiny model's norm and
# bias gradients are column sums over rows that largely cancel, so one such small tensor can
# differ by more than the CPU plans' 5e-5 (layernorm biases: 4.2e-5 and 5.8e-5 on an H200,
# with the vector at 7e-7). Prints the summary.
compare() {
  bash scripts/compare_runs.sh "$work/$1.jsonl" "$work/$2.jsonl" "$work/$1.params" \
    "$work/$2.params" "$3" 1e-4 > "$work/compare-$2.log" 2>&1
  local rc=$?
  grep -E '^(losses|parameters):' "$work/compare-$2.log" | tr '\n' ' ' | cut -c1-300
  return $rc
}
on_gpu() { grep -q '"device":"cuda' "$1" 2>/dev/null; }
no_gpu='whale-run did not report a CUDA device in --metrics ("device":"cuda:N")'
# doctest_verdict LOG RC: PASS or FAIL and doctest's summary line.
doctest_verdict() {
  local line failed
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$1" | grep 'test cases:' | tail -1)
  failed=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) failed.*/\1/p')
  if [ "$2" = 0 ] && [ -n "$line" ] && [ "${failed:-1}" = 0 ]; then echo "PASS ${line#*test cases:}"
  elif [ "$2" = 124 ]; then echo "FAIL timed out; ${line:-no doctest summary}"
  else echo "FAIL exit $2; ${line:-$(one_line "$1")}"; fi
}

# --- the phases --------------------------------------------------------------------------------
phase_env() {
  local libs missing=""
  if [ $kit_ok = 0 ]; then
    echo "$([ $dry = 1 ] && echo SKIP || echo FAIL) no kit at $kit (scripts/gpu-kit.sh $kit makes one)"
    return
  fi
  for elf in "$kit"/bin/whale-* "$kit"/bin/test_*; do
    ldd "$elf" | grep -q 'not found' && missing="$missing $(basename "$elf")"
  done
  { cat "$kit/kit.txt"; echo; cat "$work/env-cuda-libs.txt"; echo
    [ $dry = 1 ] || limited nvidia-smi; command -v nvcc >/dev/null && nvcc --version | tail -2
  } > "$work/env.log" 2>&1
  libs=$(tr '\n' ';' < "$work/env-cuda-libs.txt")
  local gpu
  gpu=$([ $dry = 0 ] && limited nvidia-smi --query-gpu=name,memory.total,driver_version \
    --format=csv,noheader -i 0)
  if [ -n "$missing" ] || grep -q 'not found' "$work/env-cuda-libs.txt"; then
    echo "FAIL libraries not found for$missing: $libs"
  else
    echo "PASS ${gpu:-no GPU (dry run)}; $(sed -n 's/^commit: //p' "$kit/kit.txt"); $libs"
  fi
}
phase_ops() {
  limited "$kit/bin/test_cuda_backend" > "$work/ops.log" 2>&1
  doctest_verdict "$work/ops.log" $?
}
phase_memcheck() {
  local sanitizer rc errors api memory callers
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  [ -n "$sanitizer" ] || { echo "FAIL no compute-sanitizer on PATH or in /usr/local/cuda/bin"; return; }
  # The verdict counts memory errors. Failed CUDA API calls are counted apart, with the library
  # that made each (the first frame of its host backtrace outside the driver): NCCL's
  # ncclCommInitRank probes its kernels with cudaFuncGetAttributes, which answers 209 ("no kernel
  # image") for those not built for the GPU (4 such calls on an H200, 2026-11-27); whale's own
  # calls are checked by its op tests (cuda_check throws on any error).
  limited "$sanitizer" --tool memcheck --show-backtrace host "$kit/bin/test_cuda_backend" \
    > "$work/memcheck.log" 2>&1
  rc=$?
  errors=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$work/memcheck.log" | tail -1)
  api=$(grep -c '^========= Program hit' "$work/memcheck.log")
  memory=$(( ${errors//[^0-9]/} + 0 - api ))
  # Each failed call's first host frame outside the driver (libcuda) names its caller.
  callers=$(awk '/^========= Program hit/ {want = 1; next}
    want && /Host Frame/ && !/libcuda\.so/ {
      if (match($0, /in [^ ]+$/)) { print substr($0, RSTART + 3); want = 0 } }' \
    "$work/memcheck.log" | sort | uniq -c | tr -s ' \n' ' ')
  if [ $rc = 124 ]; then
    echo "FAIL cut at $1 s: $(grep -c '^========= [A-Z]' "$work/memcheck.log") sanitizer reports" \
      "so far, last test case: $(grep -o 'TEST CASE: .*' "$work/memcheck.log" | tail -1)"
  elif [ -z "$errors" ]; then echo "FAIL exit $rc; $(one_line "$work/memcheck.log")"
  elif [ $rc = 0 ] && [ "$memory" = 0 ]; then
    echo "PASS 0 memory errors; $api failed API calls (${callers:-callers unknown});" \
      "$(doctest_verdict "$work/memcheck.log" 0 | cut -d' ' -f2-)"
  else echo "FAIL exit $rc; $memory memory errors, $api failed API calls; $errors"; fi
}
phase_fp32_step() {
  local plan; plan=$(gpu_plan configs/plans/tiny/single.yaml single-gpu)
  train configs/plans/tiny/single.yaml 1 cpu-1 --steps 1 ||
    { echo "FAIL CPU run: $(one_line "$work/cpu-1.log")"; return; }
  train "$plan" 1 gpu-1 --steps 1 || { echo "FAIL $(one_line "$work/gpu-1.log")"; return; }
  on_gpu "$work/gpu-1.jsonl" || { echo "FAIL $no_gpu"; return; }
  local summary; summary=$(compare cpu-1 gpu-1 1) && echo "PASS $summary" || echo "FAIL $summary"
}
phase_bridge() {
  local plan; plan=$(gpu_plan configs/plans/tiny/dp2.yaml dp2-gpu-cpu)
  train configs/plans/tiny/single.yaml 1 cpu-4 --steps 4 ||
    { echo "FAIL CPU run: $(one_line "$work/cpu-4.log")"; return; }
  train "$plan" 2 bridge --steps 4 ||
    { echo "FAIL mpirun -np 2: $(one_line "$work/bridge.log")"; return; }
  on_gpu "$work/bridge.jsonl" || { echo "FAIL $no_gpu"; return; }
  local summary; summary=$(compare cpu-4 bridge 4) && echo "PASS $summary" || echo "FAIL $summary"
}
phase_nccl() {
  limited mpirun -np 1 "$kit/bin/test_cuda_nccl" > "$work/nccl.log" 2>&1
  doctest_verdict "$work/nccl.log" $?
}
phase_bf16_curve() {
  local steps=100 fp32 bf16
  fp32=$(gpu_plan configs/plans/tiny/single.yaml curve-fp32)
  bf16=$(gpu_plan configs/plans/tiny/single-bf16.yaml curve-bf16)
  train "$fp32" 1 curve-fp32 --steps $steps ||
    { echo "FAIL fp32: $(one_line "$work/curve-fp32.log")"; return; }
  train "$bf16" 1 curve-bf16 --steps $steps ||
    { echo "FAIL bf16: $(one_line "$work/curve-bf16.log")"; return; }
  on_gpu "$work/curve-bf16.jsonl" || { echo "FAIL $no_gpu"; return; }
  python3 scripts/gpu_check_report.py curve "$work/curve-fp32.jsonl" "$work/curve-bf16.jsonl" $steps
}
# phase_bench NAME MODEL LAST MICRO_BATCH STEPS LR SECONDS: one of `benches`.
phase_bench() {
  local name=$1 model=$2 plan; plan=$(bench_plan "$2" "$3" "$4")
  whale-sim "$plan" --profiles "$work/profiles" --format json > "$work/sim-datasheet-$model.json" \
    2> "$work/sim-datasheet-$model.log" ||
    { echo "FAIL whale-sim: $(one_line "$work/sim-datasheet-$model.log")"; return; }
  # Random tokens of the model's vocabulary (the text corpus has the byte tokenizer's 256).
  local vocabulary; vocabulary=$(sed -n 's/^vocabulary: *\([0-9]*\).*/\1/p' "configs/models/$model.yaml")
  python3 scripts/gpu_check_report.py tokens "$work/tokens-$model.bin" "$vocabulary" 1048576 7
  limited whale-run "$plan" --data "$work/tokens-$model.bin" --log-every 0 --seed 7 --device gpu \
    --steps "$5" --lr "$6" --metrics "$work/bench-$model.jsonl" > "$work/bench-$model.log" 2>&1
  local rc=$? facts partial
  # Killed inside a long step, whale-run leaves its metrics, flushed each step, in the
  # temporary file it would have renamed (AtomicFile).
  partial=$(ls "$work/.bench-$model.jsonl.tmp."* 2>/dev/null | head -1)
  [ -s "$work/bench-$model.jsonl" ] || [ -z "$partial" ] || mv "$partial" "$work/bench-$model.jsonl"
  [ -s "$work/bench-$model.jsonl" ] ||
    { echo "FAIL exit $rc, no step finished: $(one_line "$work/bench-$model.log")"; return; }
  facts=$(python3 scripts/gpu_check_report.py bench "$work/bench-$model.jsonl" \
    "$work/sim-datasheet-$model.json" "$peak_bf16")
  local key val steps=0 gpu=0
  while read -r key val; do
    case $key in steps) steps=$val ;; on_gpu) gpu=$val ;; *) value "$model" "$key" "$val" ;; esac
  done <<< "$facts"
  local summary
  summary="$steps of $5 steps; $(grep -v -E '^(steps|on_gpu) ' <<< "$facts" | tr '\n' ' ')"
  summary="$summary(MFU at $peak_bf16 TFLOP/s bf16, $datasheet)"
  if [ "$gpu" != 1 ]; then echo "FAIL not on a CUDA device: $summary"
  elif [ $rc = 0 ]; then echo "PASS $summary"
  else echo "FAIL $([ $rc = 124 ] && echo "cut at $7 s" || echo "exit $rc"): $summary"; fi
}
bench_spec() { local b; for b in "${benches[@]}"; do [ "${b%% *}" = "$1" ] && echo "$b"; done; }
phase_bench_gpt2() { local spec; read -ra spec <<< "$(bench_spec gpt2)"; phase_bench "${spec[@]}" "$1"; }
phase_bench_gpt3() { local spec; read -ra spec <<< "$(bench_spec gpt3)"; phase_bench "${spec[@]}" "$1"; }
phase_torch_bench() {
  local limit=$1 specs=() b
  for b in "${benches[@]}"; do set -- $b; specs+=("configs/models/$2.yaml:$4:$5"); done
  limited python3 scripts/gpu_torch_bench.py bench "${specs[@]}" --deadline-s $((limit - 3)) \
    > "$work/torch-bench.jsonl" 2> "$work/torch-bench.log"
  local rc=$? model tokens peak rows=0
  while IFS=' ' read -r model tokens peak; do
    rows=$((rows + 1))
    value "$model" pytorch_tokens_per_s "$tokens"; value "$model" pytorch_peak_memory_gib "$peak"
  done < <(python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(r["model"], r.get("tokens_per_s", ""), r["peak_memory_gib"])' \
    < "$work/torch-bench.jsonl" 2>/dev/null)
  local summary; summary=$(tr '\n' ' ' < "$work/torch-bench.jsonl" | cut -c1-400)
  if [ $rc = 0 ] && [ $rows = ${#benches[@]} ]; then echo "PASS $summary"
  else
    echo "FAIL exit $rc, $rows of ${#benches[@]} models: ${summary:-$(one_line "$work/torch-bench.log")}"
  fi
}
phase_torch_grid() {
  limited python3 scripts/gpu_torch_bench.py grid "$out/torch-grid.csv" \
    configs/models/gpt2-124m.yaml configs/models/gpt3-1.3b.yaml --micro-batches 1,2,4 \
    --deadline-s $(($1 - 3)) > "$work/torch-grid.log" 2>&1
  local rc=$? rows=0
  [ -f "$out/torch-grid.csv" ] && rows=$(($(wc -l < "$out/torch-grid.csv") - 1))
  if [ $rc = 0 ] && [ "$rows" = 24 ]; then echo "PASS 24 rows in torch-grid.csv"
  else echo "FAIL exit $rc, $rows of 24 rows in torch-grid.csv: $(one_line "$work/torch-grid.log")"; fi
}
phase_profile() {
  limited whale-profile --device cuda:0 --quick --out "$work/profiles/$datasheet.yaml" \
    > "$work/profile.log" 2>&1
  local rc=$?
  if [ $rc = 0 ]; then
    echo "PASS $(grep -E '^ *bf16:|^memory_bandwidth' "$work/profiles/$datasheet.yaml" | head -2 |
      tr -s ' \n' ' ')"
  else
    cp "profiles/$datasheet.yaml" "$work/profiles/"
    echo "FAIL exit $rc: $(one_line "$work/profile.log")"
  fi
}
phase_predict() {
  local limit=$1 b summary="" status=PASS source=fresh
  # Without a fresh profile (a dry run, or whale-profile failed) the datasheet's stands in.
  if cmp -s "profiles/$datasheet.yaml" "$work/profiles/$datasheet.yaml"; then
    source=datasheet; [ $dry = 1 ] || status=FAIL
  fi
  for b in "${benches[@]}"; do
    set -- $b
    local plan; plan=$(bench_plan "$2" "$3" "$4")
    if ! limited whale-sim "$plan" --profiles "$work/profiles" --format json > "$work/sim-$2.json" \
         2> "$work/sim-$2.log"; then
      summary="$summary $2: whale-sim failed: $(one_line "$work/sim-$2.log");"; status=FAIL; continue
    fi
    local key val
    while read -r key val; do value "$2" "$key" "$val"; summary="$summary $2 $key $val"; done \
      < <(python3 scripts/gpu_check_report.py predict "$work/sim-$2.json")
  done
  echo "$status ($source profile $datasheet)$summary"
}

phase_kernels() {
  local b summary="" status=PASS
  # Three steps of each benchmark, GPT-3 1.3B first, with whale-run --kernel-times (CUPTI's
  # activity records of the last two steps; no replay).
  for b in gpt3 gpt2; do
    set -- $(bench_spec $b)
    local plan tokens=$work/tokens-$2.bin; plan=$(bench_plan "$2" "$3" "$4")
    [ -f "$tokens" ] || python3 scripts/gpu_check_report.py tokens "$tokens" \
      "$(sed -n 's/^vocabulary: *\([0-9]*\).*/\1/p' "configs/models/$2.yaml")" 1048576 7
    limited whale-run "$plan" --data "$tokens" --log-every 0 --seed 7 --device gpu --steps 3 \
      --lr "$6" --kernel-times "$work/kernel-times-$2.csv" > "$work/kernel-times-$2.log" 2>&1
    local line; line=$(python3 scripts/gpu_check_report.py kernels "$work/kernel-times-$2.csv" "$2" \
      "$out/kernels.csv")
    [ "${line%% *}" = PASS ] || { status=FAIL; line="$line ($(one_line "$work/kernel-times-$2.log"))"; }
    summary="$summary ${line#* };"
  done
  echo "$status$summary"
}

# run_phase NAME BUDGET: runs phase_NAME under min(BUDGET, the time left before the report).
run_phase() {
  local name=$1 budget=$2 t0 limit verdict
  if ! selected "$name"; then record "$name" SKIP 0 "$budget" "not in --only $only"; return; fi
  t0=$(date +%s)
  limit=$((deadline_s - (t0 - start) - report_reserve_s))
  [ "$limit" -gt "$budget" ] && limit=$budget
  if [ "$limit" -lt 2 ]; then
    record "$name" SKIP 0 "$budget" "the deadline of $deadline_s s has passed"
    return
  fi
  phase_end=$((t0 + limit))
  verdict=$("phase_$name" "$limit")
  [ -n "$verdict" ] || verdict="FAIL the phase printed no verdict"
  record "$name" "${verdict%% *}" "$(($(date +%s) - t0))" "$budget" "${verdict#* }"
}

if [ $dry = 1 ]; then
  # What needs no GPU: the kit and its CUDA libraries, the plans, whale-sim's predictions from
  # the shipped datasheet profile, the PyTorch script's model reading, and the report itself.
  for p in "${phases[@]}"; do
    set -- $p
    case $1 in
      env) run_phase env "$2" ;;
      predict)
        if [ $kit_ok = 1 ]; then run_phase predict "$2"; else record predict SKIP 0 "$2" "no kit: no whale-sim"; fi ;;
      torch_bench)
        t0=$(date +%s)
        if python3 scripts/gpu_torch_bench.py check configs/models/gpt2-124m.yaml \
             configs/models/gpt3-1.3b.yaml > "$work/torch-check.log" 2>&1
        then record torch_bench SKIP $(($(date +%s) - t0)) "$2" "dry run: the script reads both models"
        else
          record torch_bench FAIL $(($(date +%s) - t0)) "$2" "$(one_line "$work/torch-check.log")"
        fi ;;
      report) ;;
      *) record "$1" SKIP 0 "$2" "dry run: needs a GPU" ;;
    esac
  done
else
  for p in "${phases[@]}"; do
    set -- $p
    case $1 in
      report) ;;
      *) run_phase "$1" "$2" ;;
    esac
  done
fi

# --- report ------------------------------------------------------------------------------------
t0=$(date +%s)
title="${gpu_name:-dry run, no GPU}, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
python3 scripts/gpu_check_report.py report "$results" "$values" "$out" "$title" 2> "$work/report.log"
record report "$([ -s "$out/gpu-check.json" ] && echo PASS || echo FAIL)" "$(($(date +%s) - t0))" 5 \
  "$out/gpu-check.md, gpu-check.json, gpu-check-logs.tar.gz; $(($(date +%s) - start)) s in all"
python3 scripts/gpu_check_report.py report "$results" "$values" "$out" "$title" 2>> "$work/report.log"
# The benchmarks' random tokens are data, not logs (4 MiB each, incompressible).
rm -f "$work"/tokens-*.bin
tar -czf "$out/gpu-check-logs.tar.gz" -C "$out" work
# OUT keeps five files, so that all of it comes back from a machine that returns a few files.
failed=$(grep -c "	FAIL	" "$results")
rm -rf "$work"
echo "gpu-check: report in $out/gpu-check.md and $out/gpu-check.json, logs in $out/gpu-check-logs.tar.gz"
[ "$failed" = 0 ]
