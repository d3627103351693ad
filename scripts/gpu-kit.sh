#!/usr/bin/env bash
# File: gpu-kit.sh
# Builds the GPU kit on a machine with nvcc and no GPU: whale-run, whale-sim, whale-profile and
# the CUDA tests for sm_90a (H100, H200) only, Release, portable x86-64, stripped, together with
# every shared library they and Open MPI's mpirun need beside the C runtime and the NVIDIA
# driver and CUDA libraries (scripts/kit-libs.sh says which). scripts/gpu-check.sh --kit DIR runs
# it on a GPU machine that has none of whale's Debian packages. Fails when the kit is over 48 MiB.
# Usage (from anywhere): scripts/gpu-kit.sh DIR [--build BUILD]
#   DIR     the kit (replaced; a gitignored folder such as build-kit)
#   --build the build folder (default build-kit-tree): a separate one, since its configuration
#           (sm_90a, static CUDA runtime, portable code, $ORIGIN run path) is not the normal build's
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
src=$(pwd)
source scripts/kit-libs.sh
usage="usage: scripts/gpu-kit.sh DIR [--build BUILD]"
kit="" build=build-kit-tree
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    -*) echo "gpu-kit: error: unknown option '$1' ($usage)" >&2; exit 2 ;;
    *) [ -z "$kit" ] || { echo "gpu-kit: error: one DIR only ($usage)" >&2; exit 2; }
       kit=$1; shift ;;
  esac
done
[ -n "$kit" ] || { echo "gpu-kit: error: no DIR ($usage)" >&2; exit 2; }
case $kit in /*) ;; *) kit=$caller/$kit ;; esac
case $build in /*) ;; *) [ "$build" = build-kit-tree ] || build=$caller/$build ;; esac
max_bytes=$((48 * 1024 * 1024))  # the kit's cap: the device tool carries 64 MiB in all
programs=(whale-run whale-sim whale-profile)
tests=(test_cuda_backend test_cuda_nccl)

# --- build ---------------------------------------------------------------------------------
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "gpu-kit: error: no nvcc (the CUDA Toolkit) on this machine" >&2; exit 1; }
generator=(); command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
launchers=(); command -v ccache >/dev/null 2>&1 &&
  launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
start=$(date +%s)
mkdir -p "$build"
log=$build/gpu-kit-configure.log
# DT_RPATH (not RUNPATH): $ORIGIN/../lib also serves the libraries' own dependencies.
cmake -S . -B "$build" "${generator[@]}" "${launchers[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real -DWHALE_NATIVE=OFF -DWHALE_CUDA_STATIC_RUNTIME=ON \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags > "$log" 2>&1 ||
  { tail -20 "$log"; echo "gpu-kit: error: cmake configure failed" >&2; exit 1; }
grep -q "whale: CUDA parts enabled" "$log" ||
  { echo "gpu-kit: error: configured without CUDA: $(grep 'whale: ' "$log")" >&2
    exit 1; }
cmake --build "$build" -j"$(nproc)" --target "${programs[@]}" "${tests[@]}"
echo "gpu-kit: built in $(($(date +%s) - start)) s"

# --- whale's programs ----------------------------------------------------------------------
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/etc" "$kit/share"
for p in "${programs[@]}"; do cp "$build/apps/$p" "$kit/bin/"; done
for t in "${tests[@]}"; do cp "$build/tests/cuda/$t" "$kit/bin/"; done
strip --strip-unneeded "$kit"/bin/*
# The shipped device profiles where the tools look beside their folder (profiles_dir.cpp).
mkdir -p "$kit/share/whale"
cp -r profiles "$kit/share/whale/"

# --- Open MPI: mpirun, its components and help files, and PMIx's -----------------------------
ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
ompi_bin=$(ompi_path bindir) ompi_components=$(ompi_path pkglibdir)
cp "$ompi_bin/orterun" "$ompi_bin/orted" "$kit/bin/"
ln -s orterun "$kit/bin/mpirun"
mkdir -p "$kit/lib/openmpi" "$kit/share/openmpi"
left_out=()
for component in "$ompi_components"/*.so; do
  if kit_needs_fabric "$component"; then
    left_out+=("$(basename "$component" .so)")
  else
    cp "$component" "$kit/lib/openmpi/"
  fi
done
cp "$(ompi_path pkgdatadir)"/help-*.txt "$kit/share/openmpi/"
# PMIx (Open MPI's process manager interface) keeps its components beside its library.
pmix_lib=$(kit_needed "$kit/lib/openmpi/mca_pmix_ext3x.so" | awk '$1 ~ /^libpmix/ {print $2}')
pmix_root=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
mkdir -p "$kit/lib/pmix" "$kit/share/pmix"
cp "$pmix_root"/lib/pmix/*.so "$kit/lib/pmix/"
cp "$pmix_root"/share/pmix/help-*.txt "$kit/share/pmix/"
# One host, any user, any number of ranks: no remote launcher, shared memory or TCP.
cat > "$kit/etc/openmpi-mca-params.conf" <<'EOF'
# The GPU kit's Open MPI settings (scripts/gpu-kit.sh): one host, no ssh, shared memory and TCP.
plm = isolated
pml = ob1
btl = self,vader,tcp
btl_vader_single_copy_mechanism = none
btl_base_warn_component_unused = 0
rmaps_base_oversubscribe = 1
EOF
: > "$kit/etc/openmpi-default-hostfile"
: > "$kit/etc/pmix-mca-params.conf"

# --- every library they load -----------------------------------------------------------------
kit_collect "$kit/lib" "$kit"/bin/whale-* "$kit"/bin/test_* "$kit/bin/orterun" "$kit/bin/orted" \
  "$kit"/lib/openmpi/*.so "$kit"/lib/pmix/*.so
kit_cuda_needs "$kit"/bin/whale-* "$kit"/bin/test_* > "$kit/cuda-libs.txt"

# env.sh: sourced before running anything of the kit.
cat > "$kit/env.sh" <<'EOF'
# The GPU kit's environment (scripts/gpu-kit.sh): source it, then add the CUDA libraries' folders
# to LD_LIBRARY_PATH (scripts/gpu-check.sh finds them). Open MPI and PMIx find their components,
# help files and settings in the kit, wherever it lies.
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$kit/bin:$PATH
export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$kit OPAL_EXEC_PREFIX=$kit OPAL_BINDIR=$kit/bin OPAL_LIBDIR=$kit/lib \
  OPAL_LIBEXECDIR=$kit/bin OPAL_PKGLIBDIR=$kit/lib/openmpi OPAL_DATAROOTDIR=$kit/share \
  OPAL_DATADIR=$kit/share OPAL_PKGDATADIR=$kit/share/openmpi OPAL_SYSCONFDIR=$kit/etc
export PMIX_PREFIX=$kit PMIX_EXEC_PREFIX=$kit PMIX_LIBDIR=$kit/lib PMIX_PKGLIBDIR=$kit/lib/pmix \
  PMIX_DATAROOTDIR=$kit/share PMIX_DATADIR=$kit/share PMIX_PKGDATADIR=$kit/share/pmix \
  PMIX_SYSCONFDIR=$kit/etc
EOF

{
  echo "whale GPU kit (scripts/gpu-kit.sh)"
  echo "commit: $(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)$(
    git -C "$src" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")," \
    "$(ldd --version | head -1)"
  echo "nvcc: $(grep -o 'nvcc [0-9.]*' "$log" | head -1 | cut -d" " -f2), sm_90a only, CUDA runtime static"
  echo "open mpi: $(ompi_info --version 2>/dev/null | head -1)"
  echo "CUDA libraries the GPU machine must have: $(tr '\n' ' ' < "$kit/cuda-libs.txt")"
  echo "mpi components left out (networks between hosts): ${left_out[*]:-none}"
} > "$kit/kit.txt"

bytes=$(du -sb "$kit" | cut -f1)
echo "gpu-kit: $kit: $(find "$kit" -type f | wc -l) files, $bytes bytes" \
  "($(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB of 48)"
if [ "$bytes" -gt "$max_bytes" ]; then
  echo "gpu-kit: error: the kit is over 48 MiB; largest files:" >&2
  find "$kit" -type f -printf '%s %P\n' | sort -rn | head -8 >&2
  exit 1
fi
