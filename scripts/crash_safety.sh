#!/usr/bin/env bash
# File: crash_safety.sh
# Crash-safety checks of whale-run, one per call (from the source root):
#   scripts/crash_safety.sh CHECK WHALE_RUN
# CHECK: fallback (a corrupt or truncated latest checkpoint is named and --resume continues from
# the previous good one, losses equal to an uninterrupted run), disk_full (a checkpoint write
# that hits the file-size limit stops with exit 2 and leaves the previous checkpoint intact),
# kill_rank (SIGKILL of rank 1 mid-run ends the whole job within 30 s, naming rank 1).
# Writes only into a folder of the build folder (beside WHALE_RUN's apps/), which it removes.
set -uo pipefail
check=$1 run=$2
out=$(mktemp -d "$(cd "$(dirname "$run")/.." && pwd)/crash-safety-$check.XXXXXX")  # in the build folder
trap 'rm -rf "$out"' EXIT
data=data/corpus.txt
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
losses() { sed 's/.*"loss":\([^,]*\),.*/\1/' "$@"; }
mpi2=(mpirun -np 2 --oversubscribe)

case $check in
fallback)
  plan=configs/plans/tiny/pp2-1f1b.yaml
  "${mpi2[@]}" "$run" $plan --data $data --steps 6 --log-every 0 --metrics "$out/full.jsonl" ||
    fail "uninterrupted run"
  "${mpi2[@]}" "$run" $plan --data $data --steps 6 --log-every 0 --checkpoint-dir "$out/ck" \
    --checkpoint-every 2 || fail "checkpointed run"
  # Rank 1's latest (step 6) gets one flipped byte; rank 0's step 4 is cut short.
  file6="$out/ck/step-00000006/rank-00001.ckpt" file4="$out/ck/step-00000004/rank-00000.ckpt"
  printf '\xff' | dd of="$file6" bs=1 seek=100 conv=notrunc status=none
  truncate -s 1000 "$file4"
  "${mpi2[@]}" "$run" $plan --data $data --steps 6 --log-every 0 --checkpoint-dir "$out/ck" \
    --resume --metrics "$out/resumed.jsonl" >"$out/log" 2>"$out/err" || fail "resumed run: $(head -c 600 "$out/err")"
  for text in "whale-run: warning: rank 1: $file6: checksum: a checksum that matches the contents" \
      "falling back to the checkpoint of step 4" \
      "whale-run: warning: rank 0: $file4: header.count:" "falling back to the checkpoint of step 2" \
      "whale-run: warning: the checkpoint of step 6 is damaged or incomplete; resuming from step 2"; do
    grep -qF -- "$text" "$out/err" || fail "fallback: stderr lacks '$text': $(head -c 800 "$out/err")"
  done
  [ "$(losses "$out/resumed.jsonl")" = "$(losses "$out/full.jsonl" | tail -4)" ] ||
    fail "fallback: steps 3..6 after resuming from step 2 differ from the uninterrupted run"
  ;;
disk_full)
  plan=configs/plans/tiny/single.yaml
  "$run" $plan --data $data --steps 2 --log-every 0 --checkpoint-dir "$out/ck" || fail "first run"
  file="$out/ck/step-00000002/rank-00000.ckpt"
  sum_before=$(md5sum <"$file")
  # A file-size limit of 1 MiB (the checkpoint has about 5 MiB); SIGXFSZ ignored, so that the
  # write fails with EFBIG as on a full disk instead of killing the process.
  # PMIX_MCA_gds=hash keeps MPI's singleton start-up out of shared-memory files, which the
  # limit would also refuse.
  (trap '' XFSZ; ulimit -f 1024; PMIX_MCA_gds=hash exec "$run" $plan --data $data --steps 4 --log-every 0 \
    --checkpoint-dir "$out/ck" --resume) >"$out/log" 2>"$out/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "disk_full: exit code $rc, expected 2: $(head -c 600 "$out/err")"
  grep -qF "step-00000004/rank-00000.ckpt: a file that can be written completely" "$out/err" &&
    grep -qF "File too large: a file-size limit was reached; nothing was replaced" "$out/err" ||
    fail "disk_full: stderr: $(head -c 600 "$out/err")"
  [ "$(wc -l <"$out/err")" -eq 1 ] || fail "disk_full: more than one line on stderr"
  [ "$(md5sum <"$file")" = "$sum_before" ] || fail "disk_full: the previous checkpoint changed"
  [ "$(cat "$out/ck/latest")" = "step-00000002" ] || fail "disk_full: latest changed"
  [ -z "$(find "$out/ck" -name '*.tmp.*')" ] || fail "disk_full: a temporary file was left behind"
  "$run" $plan --data $data --steps 4 --log-every 0 --checkpoint-dir "$out/ck" --resume ||
    fail "disk_full: resuming without the limit"
  [ "$(cat "$out/ck/latest")" = "step-00000004" ] || fail "disk_full: the retry did not reach step 4"
  ;;
kill_rank)
  start=$(date +%s)
  "${mpi2[@]}" "$run" configs/plans/tiny/pp2-1f1b.yaml --data $data --steps 1000000 \
    --log-every 1 >"$out/log" 2>&1 &
  launcher=$!
  for _ in $(seq 600); do grep -q "^step 2/" "$out/log" && break; sleep 0.1; done
  victim=""
  for pid in $(pgrep -P "$launcher"); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$pid
  done
  if [ -z "$victim" ]; then
    fail "kill_rank: rank 1 not found: $(head -c 600 "$out/log")"; kill -9 "$launcher"
  else
    killed=$(date +%s)
    kill -KILL "$victim"
    for _ in $(seq 300); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$launcher" 2>/dev/null; then
      fail "kill_rank: the job still runs 30 s after rank 1 was killed"
      pkill -KILL -P "$launcher"; kill -KILL "$launcher"
    fi
    wait "$launcher"; rc=$?
    echo "kill_rank: the job ended $(($(date +%s) - killed)) s after SIGKILL (exit code $rc)"
    [ "$rc" -ne 0 ] || fail "kill_rank: exit code 0"
    grep -q "rank 1 .*signal 9" "$out/log" || fail "kill_rank: no line names rank 1: $(tail -c 800 "$out/log")"
  fi
  [ $(($(date +%s) - start)) -le 90 ] || fail "kill_rank: took more than 90 s in all"
  ;;
*) echo "unknown check $check"; exit 2 ;;
esac
[ "$failures" -eq 0 ] && echo "$check: ok"
exit $((failures > 0))
