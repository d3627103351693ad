#!/usr/bin/env bash
# File: placement.sh
# Ranks on several "hosts" of one machine (each claims its host through WHALE_HOST_NAME), one
# check per call, from the source root:  tests/exec/placement.sh CHECK TOOLS_DIR
# CHECK: two_hosts (dp2 over two cluster nodes on two claimed hosts trains bit for bit like dp2
# on one), wrong_host (ranks of one cluster node on two hosts: one error line, every rank
# stopped), wrong_device (a plan of A100 GPUs on a host without them: one error line; --device
# cpu runs it), launch_files (whale-plan's and whale-profile's --export-launch, the hostfile
# used by mpirun). TOOLS_DIR holds whale-run, whale-plan and whale-profile.
set -uo pipefail
check=$1 tools=$2
out=$(mktemp -d "$(cd "$tools/.." && pwd)/placement-$check.XXXXXX")
trap 'rm -rf "$out"' EXIT
data=data/corpus.txt
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# as_hosts PLAN HOST... -- ARGS: mpirun, one rank per HOST, rank r claiming the r-th HOST.
as_hosts() {
  local plan=$1; shift
  local hosts=() contexts=()
  while [ "$1" != "--" ]; do hosts+=("$1"); shift; done
  shift
  for h in "${hosts[@]}"; do
    [ ${#contexts[@]} -gt 0 ] && contexts+=(:)
    contexts+=(-np 1 env WHALE_HOST_NAME="$h" "$tools/whale-run" "$plan" --data $data "$@")
  done
  mpirun --oversubscribe "${contexts[@]}"
}
# one_error NAME TEXT: the run failed, and its stderr holds exactly one error line, with TEXT.
one_error() {
  local name=$1 text=$2 rc=$3
  [ "$rc" -ne 0 ] || fail "$name: exit code 0, expected a failure"
  local lines; lines=$(grep -c "whale-run: error: " "$out/$name.err")
  [ "$lines" -eq 1 ] || fail "$name: $lines error lines, expected 1: $(head -c 600 "$out/$name.err")"
  grep -qF -- "$text" "$out/$name.err" || fail "$name: stderr lacks '$text': $(head -c 600 "$out/$name.err")"
}

case $check in
two_hosts)
  as_hosts configs/plans/tiny/dp2-two-hosts.yaml host-a host-b -- --steps 3 --log-every 0 \
    --dump-params "$out/two.txt" >"$out/two.log" 2>&1 || fail "two hosts: $(tail -c 600 "$out/two.log")"
  mpirun -np 2 --oversubscribe "$tools/whale-run" configs/plans/tiny/dp2.yaml --data $data --steps 3 \
    --log-every 0 --dump-params "$out/one.txt" >"$out/one.log" 2>&1 || fail "one host: $(tail -c 600 "$out/one.log")"
  cmp -s "$out/two.txt" "$out/one.txt" || fail "dp2 on two hosts differs from dp2 on one"
  ;;
wrong_host)
  as_hosts configs/plans/tiny/dp2.yaml host-a host-b -- --steps 1 >"$out/host.log" 2>"$out/host.err"
  one_error host "dp2.yaml: rank 1 on host host-b (local rank 0): the host of cluster node local, host-a, where its rank 0 runs (hint: " $?
  ;;
wrong_device)
  cat >"$out/a100.yaml" <<PLAN
cluster: $PWD/configs/clusters/a100-v100.yaml
model: $PWD/configs/models/tiny.yaml
micro_batch_size: 12
micro_batches: 1
schedule: 1f1b
stages:
  - {layers: [0, 9], devices: "0-1", shares: [6, 6]}
PLAN
  as_hosts "$out/a100.yaml" n0 n0 -- --steps 1 >"$out/device.log" 2>"$out/device.err"
  one_error device "a100.yaml: rank 0 on host n0 (local rank 0): GPU 0 as a100-sxm4-40gb (plan device 0, cluster node a100-0), " $?
  as_hosts "$out/a100.yaml" n0 n0 -- --steps 1 --device cpu >"$out/cpu.log" 2>&1 || fail "--device cpu: $(tail -c 600 "$out/cpu.log")"
  ;;
launch_files)
  "$tools/whale-plan" --cluster configs/clusters/cpu-two-hosts.yaml --model configs/models/tiny.yaml --global-batch 12 \
    --out "$out/plan.yaml" --export-launch mpirun "$out/hosts" --export-launch slurm "$out/job.sh" \
    --hosts host-0=node-a,host-1=node-b >"$out/plan.log" 2>"$out/plan.err" || fail "whale-plan: $(cat "$out/plan.err")"
  grep -qx "node-a slots=1" "$out/hosts" || fail "hostfile lacks node-a: $(cat "$out/hosts")"
  grep -qx "#SBATCH --nodelist=node-a,node-b" "$out/job.sh" || fail "job.sh lacks the node list: $(cat "$out/job.sh")"
  grep -qF "run: mpirun -np 2 --hostfile $out/hosts --map-by slot --bind-to none whale-run $out/plan.yaml --data DATA" \
    "$out/plan.err" || fail "whale-plan printed: $(cat "$out/plan.err")"
  bash -n "$out/job.sh" || fail "job.sh is not valid bash"
  # One machine cannot hold two hosts of a hostfile, so the line whale-plan prints is run as
  # printed for a one-node plan whose node is mapped to this machine.
  "$tools/whale-plan" --cluster configs/clusters/cpu-local-4.yaml --model configs/models/tiny.yaml --global-batch 12 \
    --out "$out/local.yaml" --export-launch mpirun "$out/local.hosts" --hosts local=localhost \
    >"$out/local.log" 2>"$out/local.err" || fail "whale-plan on cpu-local-4: $(cat "$out/local.err")"
  line=$(sed -n 's/^  run: //p' "$out/local.err")
  [ -n "$line" ] || fail "whale-plan printed no mpirun line: $(cat "$out/local.err")"
  PATH="$tools:$PATH" bash -c "${line% DATA} $data --steps 1" >"$out/run.log" 2>&1 \
    || fail "$line: $(tail -c 600 "$out/run.log")"
  "$tools/whale-profile" --links --export-launch mpirun "$out/links.hosts" --cluster configs/clusters/a100-v100.yaml \
    --nodes a100-1,v100-0 >"$out/links.log" 2>&1 || fail "whale-profile: $(cat "$out/links.log")"
  grep -qF "whale-profile --links --device cuda:0 --out links.yaml" "$out/links.log" || fail "links: $(cat "$out/links.log")"
  [ "$(grep -v '^#' "$out/links.hosts")" = "$(printf 'a100-1 slots=1\nv100-0 slots=1')" ] || fail "links hostfile: $(cat "$out/links.hosts")"
  "$tools/whale-plan" --cluster configs/clusters/cpu-two-hosts.yaml --model configs/models/tiny.yaml \
    --export-launch pbs "$out/x" >"$out/bad.log" 2>"$out/bad.err"
  [ $? -eq 2 ] && grep -qF "whale-plan: error: --export-launch: slurm or mpirun, got 'pbs'" "$out/bad.err" \
    || fail "bad launcher: $(cat "$out/bad.err")"
  ;;
*) echo "placement.sh: unknown check $check" >&2; exit 2 ;;
esac
[ "$failures" -eq 0 ] && echo "placement $check: OK"
[ "$failures" -eq 0 ]
