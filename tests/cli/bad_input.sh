#!/usr/bin/env bash
# File: bad_input.sh
# Runs one row of the bad-input table (tests/cli/bad_input_table.txt): writes the row's input
# files from the small snippets below into WORK/NAME, runs the tool, and checks its exit code
# and that its stderr contains every expected text (the file and the field among them).
# Usage (from the source root): bad_input.sh APPS_DIR WORK_DIR TABLE ROW_NAME
# Exit: 0 pass, 1 fail, 77 skipped (the tool was not built).
set -uo pipefail
apps=$1 work=$2 table=$3 name=$4

row=$(grep -E "^${name}[[:space:]]*\|" "$table")
[ -n "$row" ] || { echo "no row '$name' in $table"; exit 1; }
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
IFS='|' read -r -a fields <<<"$row"
tool=$(trim "${fields[1]}") input=$(trim "${fields[2]}") args=$(trim "${fields[3]}")
code=$(trim "${fields[4]}")
[ -x "$apps/$tool" ] || { echo "SKIP: $apps/$tool was not built"; exit 77; }

dir="$work/$name"
rm -rf "$dir" && mkdir -p "$dir/in" "$dir/out"

# The snippets: small valid inputs that rows break one way each.
cat >"$dir/cluster.yaml" <<'YAML'
name: two-cpus
network: {kind: shm, bandwidth_gbps: 40, latency_us: 1}
nodes:
  - name: local
    devices: [{model: cpu, count: 2}]
    intra_link: {kind: shm, bandwidth_gbps: 40, latency_us: 1}
YAML
cat >"$dir/model.yaml" <<'YAML'
name: tiny
family: gpt
layers: 8
hidden: 64
heads: 4
ffn_hidden: 256
sequence: 32
vocabulary: 256
training: {global_batch: 8, precision: fp32, optimizer: adamw}
YAML
# moe.yaml: model.yaml with four experts in every block.
sed -e 's/^name: tiny$/name: tiny-moe/' \
  -e 's/^vocabulary: 256$/vocabulary: 256\nmoe: {experts: 4, top_k: 2, router: softmax_topk, load_imbalance: 1.5}/' \
  "$dir/model.yaml" >"$dir/moe.yaml"
cat >"$dir/plan.yaml" <<'YAML'
cluster: cluster.yaml
model: model.yaml
precision: fp32
micro_batch_size: 4
micro_batches: 2
schedule: 1f1b
stages:
  - {layers: [0, 4], devices: "0", tp: 1}
  - {layers: [5, 9], devices: "1", tp: 1}
YAML
cat >"$dir/single.yaml" <<'YAML'
cluster: cluster.yaml
model: model.yaml
precision: fp32
micro_batch_size: 8
micro_batches: 1
schedule: 1f1b
stages:
  - {layers: [0, 9], devices: "0"}
YAML
cat >"$dir/cpu.yaml" <<'YAML'
name: cpu
kind: cpu
source: "bad-input table snippet"
memory_gib: 12
memory_bandwidth_gbytes_per_s: 10
peak_tflops: {fp32: 0.096}
kernel_launch_us: 1
gemm_efficiency:
  fp32: [{gflop: 0.001, efficiency: 0.3}, {gflop: 1, efficiency: 0.6}]
memory_efficiency: [{mib: 0.01, efficiency: 0.4}, {mib: 10, efficiency: 0.7}]
YAML
cat >"$dir/hints.yaml" <<'YAML'
layers:
  - {range: [0, 3], tp: 1}
YAML
cat >"$dir/llama.json" <<'JSON'
{"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4,
 "num_key_value_heads": 2, "num_hidden_layers": 2, "max_position_embeddings": 32,
 "vocab_size": 256, "rope_theta": 10000, "tie_word_embeddings": true}
JSON
head -c 4000 data/corpus.txt >"$dir/data.txt"

# The input: "-" none; "BASE" a copy of a snippet; "BASE: OLD => NEW" a copy with the first
# OLD replaced by NEW; "text: T" the text T (printf %b escapes); empty, binary, folder, missing;
# deep (YAML nested 3000 levels); "checkpoint: truncate|foreign|latest|none|fp16|bf16" a
# one-step checkpoint of single.yaml, then damaged (or not, or @in@ a copy of single.yaml at
# another precision). In ARGUMENTS, @empty@ stands for an empty argument ('').
in="$dir/in/input.yaml"
case $input in
-) ;;
empty) : >"$in" ;;
binary) printf 'ELF\x00\x01\x02\xff\xfe' >"$in" ;;
deep) python3 -c 'print("a: " + "[" * 3000 + "]" * 3000)' >"$in" ;;
folder) mkdir -p "$in" ;;
missing) ;;
text:*) printf '%b\n' "$(trim "${input#text:}")" >"$in" ;;
checkpoint:*)
  "$apps/whale-run" "$dir/single.yaml" --data "$dir/data.txt" --steps 1 --log-every 0 \
    --checkpoint-dir "$dir/ck" >/dev/null || { echo "FAIL: the checkpoint run failed"; exit 1; }
  ckpt="$dir/ck/step-00000001/rank-00000.ckpt"
  case $(trim "${input#checkpoint:}") in
  truncate) head -c 30 "$ckpt" >"$ckpt.cut" && mv "$ckpt.cut" "$ckpt" ;;
  foreign) printf 'PK\x03\x04 a zip file, not a checkpoint; padding padding padding padding' >"$ckpt" ;;
  # latest names a step that is gone and no other checkpoint is left to fall back to.
  latest) echo "step-00000099" >"$dir/ck/latest" && rm -rf "$dir/ck/step-00000001" ;;
  # fp16, bf16: @in@ is single.yaml at that precision (the checkpoint stays fp32).
  fp16 | bf16)
    sed "s/precision: fp32/precision: $(trim "${input#checkpoint:}")/" "$dir/single.yaml" >"$in"
    cp -n "$dir"/*.yaml "$dir"/*.json "$dir/in/" ;;
  none) ;;
  esac ;;
*)
  base=$(trim "${input%%:*}")
  [ -f "$dir/$base" ] || { echo "FAIL: unknown snippet '$base'"; exit 1; }
  in="$dir/in/$base"
  if [[ $input == *:* ]]; then
    edit=${input#*:}
    old=$(trim "${edit%%=>*}") new=$(trim "${edit#*=>}")
    python3 - "$dir/$base" "$in" "$old" "$new" <<'PY' || exit 1
import sys
src, dst, old, new = sys.argv[1:]
text = open(src).read()
old = old.encode().decode("unicode_escape")
if old not in text:
    sys.exit("FAIL: '%s' is not in %s" % (old, src))
open(dst, "w").write(text.replace(old, new.encode().decode("unicode_escape"), 1))
PY
  else
    cp "$dir/$base" "$in"
  fi
  # Relative references (cluster.yaml, model.yaml) resolve to the snippets beside the input.
  cp -n "$dir"/*.yaml "$dir"/*.json "$dir/in/" ;;
esac

subst() {
  local s=$1
  s=${s//@in@/$in} s=${s//@dir@/$dir} s=${s//@out@/$dir/out}
  printf '%s' "$s"
}
read -r -a argv <<<"$(subst "$args")"
for i in "${!argv[@]}"; do [ "${argv[$i]}" = "@empty@" ] && argv[$i]=""; done
"$apps/$tool" "${argv[@]}" >"$dir/stdout" 2>"$dir/stderr" </dev/null
rc=$?
status=0
if [ "$rc" != "$code" ]; then
  echo "FAIL: exit code $rc, expected $code"; status=1
fi
if [ "$(grep -c . "$dir/stderr")" -lt 1 ] && [ "$code" != 0 ]; then
  echo "FAIL: nothing on stderr"; status=1
fi
for ((i = 5; i < ${#fields[@]}; i++)); do
  text=$(subst "$(trim "${fields[$i]}")")
  [ -z "$text" ] && continue
  grep -qF -- "$text" "$dir/stderr" || { echo "FAIL: stderr lacks: $text"; status=1; }
done
if grep -qE "terminate called|Aborted|core dumped|internal error" "$dir/stderr" && [ "$code" != 3 ]; then
  echo "FAIL: an abort or internal error"; status=1
fi
echo "command: $tool $(subst "$args")"
echo "stderr:"; cat "$dir/stderr"
exit $status
