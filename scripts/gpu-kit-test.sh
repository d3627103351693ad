#!/usr/bin/env bash
# File: gpu-kit-test.sh
# Proves that the GPU kit (scripts/gpu-kit.sh) carries what it needs: in a minimal Debian root
# made with debootstrap, which has none of whale's packages (no yaml-cpp, Open MPI, hwloc, PMIx,
# libevent), every kit program and MPI component loads, `whale-run --device cpu` trains the tiny
# model, and `mpirun -np 2` trains the dp2 plan equal to it (scripts/compare_runs.sh). The CUDA
# Toolkit's folder is mounted read-only into the root, as the GPU machine has one, and found the
# way scripts/gpu-check.sh finds it. Needs root (chroot, mount), and debootstrap and the network
# the first time; the root is cached. Not part of CI.
# Usage (from anywhere): scripts/gpu-kit-test.sh KIT [--root DIR]
#   KIT    the kit folder
#   --root the Debian root (default build/kit-test-root; made once, reused)
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
usage="usage: scripts/gpu-kit-test.sh KIT [--root DIR]"
kit="" root=build/kit-test-root
while [ $# -gt 0 ]; do
  case $1 in
    --root) root=$2; shift 2 ;;
    -*) echo "gpu-kit-test: error: unknown option '$1' ($usage)" >&2; exit 2 ;;
    *) kit=$1; shift ;;
  esac
done
[ -n "$kit" ] || { echo "gpu-kit-test: error: no KIT ($usage)" >&2; exit 2; }
case $kit in /*) ;; *) kit=$caller/$kit ;; esac
case $root in /*) ;; *) [ "$root" = build/kit-test-root ] || root=$caller/$root ;; esac
[ -f "$kit/env.sh" ] ||
  { echo "gpu-kit-test: error: $kit: not a kit (no env.sh; scripts/gpu-kit.sh makes one)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "gpu-kit-test: error: needs root (chroot and mount)" >&2; exit 2; }
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -d "$cuda" ] || { echo "gpu-kit-test: error: no CUDA Toolkit at $cuda (set CUDA_HOME)" >&2; exit 2; }

# --- the Debian root, made once --------------------------------------------------------------
if [ ! -f "$root/.whale-minbase" ]; then
  command -v debootstrap >/dev/null 2>&1 ||
    { echo "gpu-kit-test: error: no debootstrap (apt-get install debootstrap)" >&2; exit 2; }
  rm -rf "$root.partial"
  mkdir -p "$(dirname "$root")"
  echo "gpu-kit-test: making a minimal Debian root in $root (debootstrap, a few minutes)"
  debootstrap --variant=minbase bookworm "$root.partial" \
    "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" > "$root.debootstrap.log" 2>&1 ||
    { tail -5 "$root.debootstrap.log"; echo "gpu-kit-test: error: debootstrap failed" >&2; exit 1; }
  rm -rf "$root" && mv "$root.partial" "$root" && touch "$root/.whale-minbase"
fi
root=$(cd "$root" && pwd)
# None of whale's libraries may be in it: what runs must come from the kit.
found=$(find "$root/usr/lib" "$root/usr/local" -name 'libyaml-cpp*' -o -name 'libmpi*' \
  -o -name 'libopen-pal*' -o -name 'libhwloc*' -o -name 'libpmix*' -o -name 'libevent*' | head -3)
[ -z "$found" ] || { echo "gpu-kit-test: error: the root is not bare: $found" >&2; exit 1; }
echo "gpu-kit-test: $root: $(. "$root/etc/os-release" && echo "$PRETTY_NAME")," \
  "$(chroot "$root" dpkg-query -W | wc -l) packages, none of yaml-cpp, Open MPI, hwloc, PMIx, libevent"

# --- the kit and the inputs in it; the system's folders mounted ------------------------------
mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}"
  done
  rm -rf "$root/whale"
}
trap cleanup EXIT
rm -rf "$root/whale"
mkdir -p "$root/whale/src/scripts" "$root/whale/out"
cp -a "$kit" "$root/whale/kit"
cp -a configs data "$root/whale/src/"
cp scripts/kit-libs.sh scripts/compare_runs.sh "$root/whale/src/scripts/"
mount_in() {  # mount_in ARGS... TARGET: mount, and remember it for cleanup
  mkdir -p "${!#}"
  mount "$@"
  mounts+=("${!#}")
}
mount_in -t proc proc "$root/proc"
mount_in -t sysfs sys "$root/sys"
mount_in --bind /dev "$root/dev"
mount_in --bind "$(readlink -f "$cuda")" "$root/usr/local/cuda"
mount -o remount,bind,ro "$root/usr/local/cuda"

# --- in the root -----------------------------------------------------------------------------
cat > "$root/whale/in-root.sh" <<'IN_ROOT'
set -euo pipefail
cd /whale/src
source /whale/kit/env.sh
source scripts/kit-libs.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
kit_use_cuda_libs /whale/kit/cuda-libs.txt
missing=0
for elf in /whale/kit/bin/* /whale/kit/lib/*.so* /whale/kit/lib/openmpi/*.so /whale/kit/lib/pmix/*.so; do
  [ -L "$elf" ] || ! head -c4 "$elf" | grep -q ELF && continue
  if ldd "$elf" | grep 'not found'; then echo "  in $elf"; missing=1; fi
done
[ $missing = 0 ] || { echo "gpu-kit-test: FAIL: libraries the kit does not carry"; exit 1; }
echo "gpu-kit-test: every program, library and MPI component of the kit loads" \
  "($(ls /whale/kit/bin | wc -l) programs, $(ls /whale/kit/lib/openmpi | wc -l) MPI components)"
out=/whale/out
run=(whale-run --device cpu --data data/corpus.txt --steps 3 --seed 7 --log-every 0)
"${run[@]}" configs/plans/tiny/single.yaml --metrics $out/single.jsonl \
  --dump-params $out/single.params > $out/single.log 2>&1 ||
  { cat $out/single.log; echo "gpu-kit-test: FAIL: whale-run --device cpu"; exit 1; }
losses=$(sed 's/.*"loss":\([^,]*\),.*/\1/' $out/single.jsonl | tr '\n' ' ')
echo "gpu-kit-test: whale-run --device cpu, tiny model, 3 steps: losses $losses"
mpirun -np 2 "${run[@]}" configs/plans/tiny/dp2.yaml --metrics $out/dp2.jsonl \
  --dump-params $out/dp2.params > $out/dp2.log 2>&1 ||
  { cat $out/dp2.log; echo "gpu-kit-test: FAIL: mpirun -np 2 whale-run dp2"; exit 1; }
bash scripts/compare_runs.sh $out/single.jsonl $out/dp2.jsonl $out/single.params $out/dp2.params 3 \
  > $out/compare.log 2>&1 ||
  { cat $out/compare.log; echo "gpu-kit-test: FAIL: dp2 differs from single"; exit 1; }
echo "gpu-kit-test: mpirun -np 2 whale-run dp2 equals single:" \
  "$(grep -E '^(losses|parameters):' $out/compare.log | tr '\n' ' ')"
if [ -s $out/dp2.log ]; then
  echo "gpu-kit-test: mpirun printed:"
  sed 's/^/  /' $out/dp2.log | head -20
fi
IN_ROOT
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  /bin/bash /whale/in-root.sh < /dev/null
echo "gpu-kit-test: PASS"
