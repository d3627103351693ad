#!/usr/bin/env bash
# File: equality_cli.sh
# End-to-end checks of whale-run, one per call (from the source root):
#   scripts/equality_cli.sh CHECK WHALE_RUN [WHALE_SIM]
# CHECK: clip (clipping by the global gradient norm: six plans equal their single-rank plans,
# norms included), schedule (a learning-rate schedule with weight decay: dp3 equals single, and resumes bit
# for bit), resume (10 steps == 5 + resume 5, bit for bit, on 1 to 3 ranks, GPT, Llama, mixed tp and SGD), bad_input (each
# case exits 2 with its message and overwrites nothing), signal (SIGINT writes a checkpoint
# and exits 0), trace (a measured Chrome trace), layer_times (whale-run --layer-times read back
# by whale-calibrate --layer-times and priced by whale-sim), learning (the loss falls on data/corpus.txt, AdamW and SGD),
# buckets (whale-run's measured trace and WHALE_SIM's predicted one reduce the same gradient
# buckets on the same devices: those of the schedule program, as written in the plan's header;
# under ZeRO-2 both also all-gather the weights on every device), split_ops (under zb-h1 both
# traces list the same forward, input-gradient and weight-gradient passes on each device, in
# the same order), moe (an expert-parallel plan and a tp 2 x ep 2 sigmoid_bias plan, its experts
# split over the tensor group and its expert biases in the checkpoint, resume bit for bit),
# moe_layouts (a folded plan under ZeRO-2, its experts' optimizer state and gradients sharded
# over their own group, a plan of dp 1 whose experts are sharded over expert dp 2, and one
# whose experts are split wider than attention resume bit for bit), compare (whale-sim --compare holds
# its prediction of the tiny hybrid plan against whale-run's measured trace: a table row for
# every class both have, the picture).
set -uo pipefail
check=$1 run=$2 sim=${3:-}
# Scratch in the build folder that holds WHALE_RUN (BUILD/apps/whale-run), one per call, so that
# checks run in parallel (ctest -j) never share files.
out=$(mktemp -d "$(cd "$(dirname "$run")/.." && pwd)/equality-cli-$check.XXXXXX")
trap 'rm -rf "$out"' EXIT
data=data/corpus.txt
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
losses() { sed 's/.*"loss":\([^,]*\),.*/\1/' "$@"; }
# expect_error NAME TEXT CMD...: CMD exits 2 and its stderr contains TEXT.
expect_error() {
  local name=$1 text=$2; shift 2
  "$@" >"$out/$name.out" 2>"$out/$name.err"; local rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit code $rc, expected 2"
  grep -qF -- "$text" "$out/$name.err" || fail "$name: stderr lacks '$text': $(head -c 400 "$out/$name.err")"
}
# resume_equal PLAN NP [ARGS...]: 10 steps in one go equal 5 steps, then --resume to 10, bit for
# bit, each run with ARGS.
resume_equal() {
  local plan=$1 np=$2 tag; tag=$(basename "$1" .yaml); shift 2
  local launch=("$run"); [ "$np" -gt 1 ] && launch=(mpirun -np "$np" --oversubscribe "$run")
  "${launch[@]}" "$plan" --data $data --steps 10 --log-every 0 "$@" --metrics "$out/$tag-full.jsonl" || fail "$tag: full run"
  "${launch[@]}" "$plan" --data $data --steps 5 --log-every 0 "$@" --checkpoint-dir "$out/$tag-ckpt" \
    --metrics "$out/$tag-a.jsonl" || fail "$tag: first half"
  "${launch[@]}" "$plan" --data $data --steps 10 --log-every 0 "$@" --checkpoint-dir "$out/$tag-ckpt" \
    --resume --metrics "$out/$tag-b.jsonl" || fail "$tag: resumed half"
  if [ "$(losses "$out/$tag-full.jsonl")" != "$(losses "$out/$tag-a.jsonl" "$out/$tag-b.jsonl")" ]; then
    fail "$tag: resumed losses differ"; paste <(losses "$out/$tag-full.jsonl") <(losses "$out/$tag-a.jsonl" "$out/$tag-b.jsonl")
  fi
  [ "$(wc -l <"$out/$tag-b.jsonl")" -eq 5 ] || fail "$tag: resumed run did not run steps 6..10"
}

case $check in
clip)  # clipping by the global gradient norm: parallel plans count every element once
  clip=(--data $data --steps 6 --log-every 0 --seed 7 --clip-grad 0.5)
  norms() { grep -o '"grad_norm":[^,}]*' "$1" | cut -d: -f2; }
  # clip_equal PLAN NP REFERENCE: PLAN and its single-rank REFERENCE clip alike: the same
  # losses and parameters (compare_runs.sh) and the same norm at every step within 1e-6.
  clip_equal() {
    local plan=$1 np=$2 reference=$3 tag; tag=$(basename "$(dirname "$1")")-$(basename "$1" .yaml)
    "$run" "$reference" "${clip[@]}" --metrics "$out/$tag-ref.jsonl" --dump-params "$out/$tag-ref.params" ||
      fail "clip: $reference"
    mpirun -np "$np" --oversubscribe "$run" "$plan" "${clip[@]}" --metrics "$out/$tag.jsonl" \
      --dump-params "$out/$tag.params" || fail "clip: $plan"
    bash scripts/compare_runs.sh "$out/$tag-ref.jsonl" "$out/$tag.jsonl" "$out/$tag-ref.params" "$out/$tag.params" 6 \
      >/dev/null || fail "clip: $plan differs from $reference"
    paste <(norms "$out/$tag-ref.jsonl") <(norms "$out/$tag.jsonl") | awk -v tag="$tag" '
      { n++; d = ($1 - $2) / $1; if (d < 0) d = -d; if ($2 == "" || d > 1e-6) { print "FAIL: clip: " tag " norm " $1 " vs " $2; bad = 1 }
        if ($1 > 0.5) clipped = 1 }
      END { if (n != 6) { print "FAIL: clip: " tag " has " n " norms"; bad = 1 }
            if (!clipped) { print "FAIL: clip: " tag " never clipped"; bad = 1 }; exit bad }' || failures=$((failures + 1))
  }
  clip_equal configs/plans/tiny/dp3-uneven-zero2.yaml 3 configs/plans/tiny/single.yaml  # slices of ZeRO-2
  clip_equal configs/plans/tiny/mixed-tp.yaml 3 configs/plans/tiny/single.yaml  # replicas at tp 2 and 1
  clip_equal configs/plans/tiny/tp2-pp2-sp.yaml 4 configs/plans/tiny/single.yaml  # tp copies of the norms
  clip_equal configs/plans/tiny-llama/wave-tied-dp2.yaml 4 configs/plans/tiny-llama/single.yaml  # two tied copies
  clip_equal configs/plans/tiny-moe/ep2-dp2-uneven-zero2.yaml 4 configs/plans/tiny-moe/single-mb3.yaml  # experts apart
  clip_equal configs/plans/tiny-moe-sigmoid/ep2-dp2.yaml 4 configs/plans/tiny-moe-sigmoid/single-mb3.yaml  # untrained biases
  # Clipping changes the update: without it step 2's loss differs.
  "$run" configs/plans/tiny/single.yaml --data $data --steps 2 --log-every 0 --seed 7 --metrics "$out/free.jsonl" ||
    fail "clip: unclipped run"
  [ "$(losses "$out/free.jsonl" | sed -n 2p)" != "$(losses "$out/tiny-dp3-uneven-zero2-ref.jsonl" | sed -n 2p)" ] ||
    fail "clip: clipping left step 2 as it was"
  ;;
schedule)  # a learning-rate schedule and weight decay: parallel equals single, and resumes
  schedule=(--lr 0.003 --lr-warmup-steps 3 --lr-decay-style cosine --lr-decay-steps 10 --min-lr 3e-4
            --weight-decay 0.1)
  common=(--data $data --steps 10 --log-every 0 --seed 7)
  "$run" configs/plans/tiny/single.yaml "${common[@]}" "${schedule[@]}" --metrics "$out/single.jsonl" \
    --dump-params "$out/single.params" || fail "schedule: single run"
  mpirun -np 3 --oversubscribe "$run" configs/plans/tiny/dp3-uneven-zero2.yaml "${common[@]}" "${schedule[@]}" \
    --metrics "$out/plan.jsonl" --dump-params "$out/plan.params" || fail "schedule: dp3-uneven-zero2 run"
  bash scripts/compare_runs.sh "$out/single.jsonl" "$out/plan.jsonl" "$out/single.params" "$out/plan.params" 10 ||
    fail "schedule: dp3-uneven-zero2 differs from single"
  # The options take effect: without them (a constant 0.003, no decay) the losses differ from step 2.
  "$run" configs/plans/tiny/single.yaml "${common[@]}" --lr 0.003 --metrics "$out/constant.jsonl" ||
    fail "schedule: constant run"
  [ "$(losses "$out/single.jsonl" | head -1)" = "$(losses "$out/constant.jsonl" | head -1)" ] ||
    fail "schedule: step 1's loss should not depend on the optimizer"
  [ "$(losses "$out/single.jsonl" | sed -n 2p)" != "$(losses "$out/constant.jsonl" | sed -n 2p)" ] ||
    fail "schedule: the schedule's step 2 equals the constant rate's"
  resume_equal configs/plans/tiny/dp3-uneven-zero2.yaml 3 "${schedule[@]}"
  ;;
resume)
  resume_equal configs/plans/tiny/single.yaml 1
  resume_equal configs/plans/tiny/dp2-zero.yaml 2
  resume_equal configs/plans/tiny/dp2-zero2.yaml 2
  resume_equal configs/plans/tiny-sgd/dp3-uneven-zero2.yaml 3  # SGD's sharded momentum buffer
  resume_equal configs/plans/tiny/pp2-1f1b.yaml 2
  resume_equal configs/plans/tiny-llama/pp2.yaml 2  # the tied token table's copy resumes too
  resume_equal configs/plans/tiny-llama/dp3-uneven.yaml 3
  resume_equal configs/plans/tiny/mixed-tp.yaml 3  # replicas at tp 2 and tp 1, each its own shards
  ;;
moe)
  resume_equal configs/plans/tiny-moe/ep2.yaml 2  # each ep rank's file holds its experts
  resume_equal configs/plans/tiny-moe-sigmoid/tp2-ep2.yaml 4  # tp-split experts and the biases
  ;;
moe_layouts)  # the expert layouts apart from attention's, resumed
  resume_equal configs/plans/tiny-moe/tp2-dp2-ep2-folded-zero2.yaml 4  # folded, ZeRO's 2 ranges
  resume_equal configs/plans/tiny-moe/tp2-expert-dp2-zero2.yaml 2  # experts sharded at dp 1
  resume_equal configs/plans/tiny-moe/dp4-ep2-etp2.yaml 4  # experts split wider than attention
  ;;
bad_input)
  echo keep >"$out/metrics.jsonl"
  keep=(--metrics "$out/metrics.jsonl")
  expect_error world_size "dp2.yaml: stages: the plan uses 2 devices but MPI runs 1 ranks" \
    "$run" configs/plans/tiny/dp2.yaml --data $data "${keep[@]}"
  expect_error world_size_mpi "configs/plans/tiny/dp2.yaml: stages: the plan uses 2 devices but MPI runs 3 ranks" \
    mpirun -np 3 --oversubscribe "$run" configs/plans/tiny/dp2.yaml --data $data "${keep[@]}"
  grep -q "whale-run: error: rank [0-2]: configs/plans/tiny/dp2.yaml" "$out/world_size_mpi.err" ||
    fail "world_size_mpi: no line names the failed rank: $(head -c 600 "$out/world_size_mpi.err")"
  # The tiny Llama: a tp that does not divide the key/value heads.
  llama_plan() {  # NAME SCHEDULE STAGES...: a tiny-llama plan in $out
    local name=$1 schedule=$2; shift 2
    { echo "cluster: $PWD/configs/clusters/cpu-local-8.yaml"
      echo "model: $PWD/configs/models/tiny-llama.yaml"
      echo "precision: fp32"; echo "micro_batch_size: 2"; echo "micro_batches: 4"
      echo "schedule: $schedule"; echo "stages:"; printf '  - %s\n' "$@"; } >"$out/$name.yaml"
  }
  llama_plan kv_tp4 1f1b '{layers: [0, 3], devices: "0-3", tp: 4}'
  expect_error llama_kv_tp4 "kv_tp4.yaml: stages[0].tp: tp 4 does not divide the model's 2 kv_heads" \
    mpirun -np 4 --oversubscribe "$run" "$out/kv_tp4.yaml" --data $data "${keep[@]}"
  head -c 20 $data >"$out/short.txt"
  expect_error data_short "short.txt: tokens: at least 33 tokens (sequence 32 + 1) for one step, got 20" \
    "$run" configs/plans/tiny/single.yaml --data "$out/short.txt" "${keep[@]}"
  # Binary token files: header, then 40 tokens of value 1 (vocabulary 512), or token 300 at 5.
  ones=$(printf '\\x01\\x00%.0s' $(seq 40))
  printf "WHALETOK\x01\x00\x00\x00\x00\x02\x00\x00\x28\x00\x00\x00\x00\x00\x00\x00$ones" >"$out/vocab512.bin"
  expect_error vocab_header "vocab512.bin: vocabulary: the model's vocabulary 256, but the data's tokenizer has 512" \
    "$run" configs/plans/tiny/single.yaml --data "$out/vocab512.bin" "${keep[@]}"
  printf "WHALETOK\x01\x00\x00\x00\x00\x01\x00\x00\x28\x00\x00\x00\x00\x00\x00\x00$ones" >"$out/big.bin"
  printf '\x2c\x01' | dd of="$out/big.bin" bs=1 seek=$((24 + 2 * 5)) conv=notrunc status=none
  expect_error vocab_token "big.bin: tokens[5]: a token below the vocabulary 256, got 300" \
    "$run" configs/plans/tiny/single.yaml --data "$out/big.bin" "${keep[@]}"
  # Checkpoints: a corrupt one, a foreign one, and a corrupt file of one rank only.
  "$run" configs/plans/tiny/single.yaml --data $data --steps 2 --log-every 0 --checkpoint-dir "$out/ck1"
  file="$out/ck1/step-00000002/rank-00000.ckpt"
  printf '\xff' | dd of="$file" bs=1 seek=100 conv=notrunc status=none
  sum_before=$(md5sum <"$file")
  expect_error corrupt "rank-00000.ckpt: checksum: a checksum that matches the contents" \
    "$run" configs/plans/tiny/single.yaml --data $data --steps 4 --checkpoint-dir "$out/ck1" --resume "${keep[@]}"
  [ "$(md5sum <"$file")" = "$sum_before" ] || fail "corrupt: the checkpoint was changed"
  [ "$(cat "$out/ck1/latest")" = "step-00000002" ] || fail "corrupt: latest was changed"
  mpirun -np 2 --oversubscribe "$run" configs/plans/tiny/pp2-1f1b.yaml --data $data --steps 2 \
    --log-every 0 --checkpoint-dir "$out/ck2" || fail "pp2 checkpoint run"
  expect_error foreign "header.fingerprint: a checkpoint of this plan and model, but it was written by another" \
    mpirun -np 2 --oversubscribe "$run" configs/plans/tiny/dp2.yaml --data $data --steps 4 \
    --checkpoint-dir "$out/ck2" --resume "${keep[@]}"
  printf '\xff' | dd of="$out/ck2/step-00000002/rank-00001.ckpt" bs=1 seek=100 conv=notrunc status=none
  # The healthy rank must be stopped by the failing one: `timeout` turns a hang into exit 124
  # (a failure with a message) long before ctest's own timeout.
  expect_error one_rank "whale-run: error: rank 1: $out/ck2/step-00000002/rank-00001.ckpt: checksum" \
    timeout 120 mpirun -np 2 --oversubscribe "$run" configs/plans/tiny/pp2-1f1b.yaml --data $data --steps 4 \
    --checkpoint-dir "$out/ck2" --resume "${keep[@]}"
  [ "$(cat "$out/metrics.jsonl")" = keep ] || fail "the metrics file was overwritten"
  ;;
signal)
  "$run" configs/plans/tiny/single.yaml --data $data --steps 100000 --checkpoint-dir "$out/ck" \
    --metrics "$out/m.jsonl" >"$out/log" 2>&1 &
  pid=$!
  # The log shows progress (the metrics file appears only when the run ends: atomic outputs).
  for _ in $(seq 600); do grep -q "^step 2/" "$out/log" 2>/dev/null && break; sleep 0.1; done
  kill -INT $pid
  wait $pid; rc=$?
  [ "$rc" -eq 0 ] || fail "signal: exit code $rc"
  grep -q "stopped by signal after step .*, checkpoint written" "$out/log" || fail "signal: log: $(tail -2 "$out/log")"
  steps=$(wc -l <"$out/m.jsonl")
  [ "$(cat "$out/ck/latest")" = "$(printf 'step-%08d' "$steps")" ] || fail "signal: latest is not step $steps"
  ;;
layer_times)
  # whale-run --layer-times writes one row per layer kind of the tiny pp2-1f1b plan (tp 1, 3
  # samples per micro-batch), and whale-calibrate --layer-times reads it back into the profile
  # that whale-sim then prices every layer of the plan with.
  plan=configs/plans/tiny/pp2-1f1b.yaml
  mpirun -np 2 --oversubscribe "$run" $plan --data $data --steps 3 --log-every 0 \
    --metrics "$out/metrics.jsonl" --layer-times "$out/layers.csv" || fail "layer-times run"
  shapes=$(cut -d, -f1-4 "$out/layers.csv" | tr '\n' ' ')
  [ "$shapes" = "device_model,layer_kind,tp,micro_batch cpu,embedding,1,3 cpu,head,1,3 cpu,transformer,1,3 " ] ||
    fail "layer times rows: $shapes"
  step=$(sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' "$out/metrics.jsonl" | tail -1)
  printf 'plan,step_time_s,peak_memory_gib,failed\n%s,%s,,\n' "$PWD/$plan" "$step" > "$out/runs.csv"
  calibrate=$(dirname "$sim")/whale-calibrate
  "$calibrate" --runs "$out/runs.csv" --layer-times "$out/layers.csv" --out "$out/profiles" \
    > "$out/calibrate.log" 2>&1 || fail "whale-calibrate --layer-times: $(tail -2 "$out/calibrate.log")"
  grep -qF "source: $out/layers.csv" "$out/profiles/cpu.yaml" || fail "calibrated profile lacks the layer times' source"
  "$sim" $plan --profiles "$out/profiles" > "$out/sim.txt" || fail "whale-sim with the layer times"
  grep -qF "layer times: 10 of 10 (stage replica, layer) pairs from measurements" "$out/sim.txt" ||
    fail "whale-sim's report: $(grep 'layer times' "$out/sim.txt")"
  ;;
trace)
  mpirun -np 2 --oversubscribe "$run" configs/plans/tiny/pp2-1f1b.yaml --data $data --steps 2 \
    --log-every 0 --trace "$out/trace.json" || fail "trace run"
  for text in '"traceEvents"' '"F s1 mb3"' '"B s0 mb0"' 'dev 0 cpu' 'dev 1 cpu' 'send act s0 mb2' '"ph":"X"'; do
    grep -qF -- "$text" "$out/trace.json" || fail "trace lacks $text"
  done
  ;;
buckets)
  plan=configs/plans/tiny/buckets.yaml
  mpirun -np 4 --oversubscribe "$run" $plan --data $data --steps 1 --log-every 0 \
    --trace "$out/run.json" || fail "buckets run"
  "$sim" $plan --trace "$out/sim.json" >/dev/null || fail "buckets simulation"
  # "device: reduce_bucket sS bB", one line per bucket reduction in the trace, sorted.
  reductions() { grep -o '"name":"reduce_bucket s[0-9]* b[0-9]*","ph":"X","pid":[0-9]*' "$1" |
    sed 's/"name":"\([^"]*\)","ph":"X","pid":\(.*\)/\2: \1/' | sort; }
  expected=$(for d in 0 1; do for b in 0 1 2; do echo "$d: reduce_bucket s0 b$b"; done; done
             for d in 2 3; do for b in 0 1 2; do echo "$d: reduce_bucket s1 b$b"; done; done)
  [ "$(reductions "$out/run.json")" = "$expected" ] ||
    fail "whale-run's buckets: $(reductions "$out/run.json" | tr '\n' ',') expected $(echo "$expected" | tr '\n' ',')"
  [ "$(reductions "$out/sim.json")" = "$expected" ] ||
    fail "whale-sim's buckets: $(reductions "$out/sim.json" | tr '\n' ',') expected $(echo "$expected" | tr '\n' ',')"
  # Mixed tp: every device of the stage, whatever its replica's tp, reduces the one bucket in both.
  plan=configs/plans/tiny/mixed-tp.yaml
  mpirun -np 3 --oversubscribe "$run" $plan --data $data --steps 1 --log-every 0 \
    --trace "$out/run-mixed.json" || fail "mixed-tp run"
  "$sim" $plan --trace "$out/sim-mixed.json" >/dev/null || fail "mixed-tp simulation"
  expected=$(for d in 0 1 2; do echo "$d: reduce_bucket s0 b0"; done)
  for trace in run-mixed sim-mixed; do
    [ "$(reductions "$out/$trace.json")" = "$expected" ] ||
      fail "mixed-tp buckets ($trace): $(reductions "$out/$trace.json" | tr '\n' ',')"
  done
  # ZeRO-2: the same reduce-scattered buckets, and the all-gather of the weights on every device.
  plan=configs/plans/tiny/dp2-zero2.yaml
  mpirun -np 2 --oversubscribe "$run" $plan --data $data --steps 1 --log-every 0 \
    --trace "$out/run2.json" || fail "zero2 run"
  "$sim" $plan --trace "$out/sim2.json" >/dev/null || fail "zero2 simulation"
  [ "$(reductions "$out/run2.json" | wc -l)" -gt 2 ] || fail "zero2: fewer than two buckets per device"
  [ "$(reductions "$out/run2.json")" = "$(reductions "$out/sim2.json")" ] ||
    fail "zero2 buckets: whale-run $(reductions "$out/run2.json" | tr '\n' ','), whale-sim $(reductions "$out/sim2.json" | tr '\n' ',')"
  for trace in run2 sim2; do
    for d in 0 1; do
      grep -q "\"name\":\"allgather weights s0\",\"ph\":\"X\",\"pid\":$d" "$out/$trace.json" ||
        fail "zero2: $trace.json lacks allgather weights s0 on device $d"
    done
  done
  ;;
split_ops)
  plan=configs/plans/tiny/pp2-zb-h1.yaml
  mpirun -np 2 --oversubscribe "$run" $plan --data $data --steps 1 --log-every 0 \
    --trace "$out/run.json" || fail "split_ops run"
  "$sim" $plan --trace "$out/sim.json" >/dev/null || fail "split_ops simulation"
  # "device: F|B|W sS mbM", one line per compute pass, in trace order within each device.
  passes() { grep -o '"name":"[FBW] s[0-9]* mb[0-9]*","ph":"X","pid":[0-9]*' "$1" |
    sed 's/"name":"\([^"]*\)","ph":"X","pid":\(.*\)/\2: \1/' | sort -s -t: -k1,1n; }
  # Group 1 (the last stage) delays each weight pass by one micro-batch (docs/plan.md).
  expected=$(for p in "F 0" "F 1" "B 0" "W 0" "F 2" "B 1" "W 1" "F 3" "B 2" "W 2" "B 3" "W 3"; do
               echo "0: ${p% *} s0 mb${p#* }"; done
             for p in "F 0" "B 0" "F 1" "B 1" "W 0" "F 2" "B 2" "W 1" "F 3" "B 3" "W 2" "W 3"; do
               echo "1: ${p% *} s1 mb${p#* }"; done)
  [ "$(passes "$out/run.json")" = "$expected" ] ||
    fail "whale-run's passes: $(passes "$out/run.json" | tr '\n' ',') expected $(echo "$expected" | tr '\n' ',')"
  [ "$(passes "$out/sim.json")" = "$expected" ] ||
    fail "whale-sim's passes: $(passes "$out/sim.json" | tr '\n' ',') expected $(echo "$expected" | tr '\n' ',')"
  ;;
compare)
  plan=configs/plans/tiny/hybrid-8.yaml
  mpirun -np 8 --oversubscribe "$run" $plan --data $data --steps 2 --log-every 0 \
    --trace "$out/run.json" || fail "compare run"
  "$sim" $plan --compare "$out/run.json" --compare-svg "$out/compare.svg" >"$out/compare.txt" ||
    fail "compare simulation"
  # Both timelines have these classes (whale-run times tensor-parallel all-reduces inside F and
  # B): each row has both times, a ratio and both event counts.
  for class in forward backward pp-send-recv dp-grad-reduce optimizer; do
    grep -qE "^  $class +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9][0-9]*/[1-9][0-9]*\$" "$out/compare.txt" ||
      fail "compare table lacks a $class row with both timelines: $(cat "$out/compare.txt")"
  done
  for text in '<svg' "<g id='predicted'>" "<g id='measured'>" 'predicted (whale-sim): step' \
              'measured (whale-run): step'; do
    grep -qF -- "$text" "$out/compare.svg" 2>/dev/null || fail "compare.svg lacks $text"
  done
  "$sim" $plan --compare "$out/run.json" --format json >"$out/compare.json" || fail "compare json"
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["compare"]
assert c["measured_step_s"] > 0 and "forward" in [r["class"] for r in c["classes"]], c' \
    "$out/compare.json" || fail "compare.json lacks a compare object with a forward row"
  ;;
learning)
  "$run" configs/plans/tiny/single.yaml --data $data --steps 40 --lr 0.003 --log-every 0 \
    --metrics "$out/m.jsonl" || fail "learning run"
  first=$(losses "$out/m.jsonl" | head -1) last=$(losses "$out/m.jsonl" | tail -1)
  echo "loss: step 1 $first, step 40 $last"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.6 * a) }' || fail "learning: loss $first -> $last did not fall by 40%"
  # SGD with momentum (training.optimizer: sgd) learns too: 5.55 -> 2.98 here.
  "$run" configs/plans/tiny-sgd/single.yaml --data $data --steps 40 --lr 0.05 --momentum 0.9 --log-every 0 \
    --metrics "$out/sgd.jsonl" || fail "learning run with SGD"
  first=$(losses "$out/sgd.jsonl" | head -1) last=$(losses "$out/sgd.jsonl" | tail -1)
  echo "SGD loss: step 1 $first, step 40 $last"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.6 * a) }' || fail "learning: SGD loss $first -> $last did not fall by 40%"
  # Every record names rank 0's device and a positive peak of backend memory that never falls.
  python3 - "$out/m.jsonl" <<'PY' || fail "learning: device or peak_memory_bytes missing or wrong in --metrics"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
peaks = [r["peak_memory_bytes"] for r in rows]
assert all(r["device"] == "cpu" for r in rows), rows[0]
assert peaks == sorted(peaks) and peaks[0] > 0, peaks[:3]
PY
  ;;
*) echo "unknown check $check"; exit 2 ;;
esac
[ "$failures" -eq 0 ] && echo "$check: ok"
exit $((failures > 0))
