#!/usr/bin/env bash
# File: kit_libs_test.sh
# The library collection of the GPU kit (scripts/kit-libs.sh) on small cases: which libraries
# are carried, the closure of a program built here and of Open MPI's mpirun, the one-line error
# for a library the loader cannot find, the MPI components left out for needing a network
# between hosts, and where the CUDA libraries are found. Needs gcc and Open MPI (CI has both).
# Usage (from the source root): tests/gpu/kit_libs_test.sh BUILD_DIR SCRATCH_DIR
set -uo pipefail
build=$1 scratch=$2
source scripts/kit-libs.sh
rm -rf "$scratch" && mkdir -p "$scratch"
status=0
fail() { echo "FAIL: $*"; status=1; }
expect() {  # expect WHAT WANT GOT
  [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

# Which libraries are carried: base C runtime and CUDA no, everything else yes.
for name in libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 ld-linux-x86-64.so.2; do
  kit_base_lib "$name" || fail "$name should be a base library"
done
for name in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2 \
  libcupti.so.13 libcudnn.so.9 libcudnn_ops.so.9 libnvidia-ml.so.1; do
  kit_cuda_lib "$name" || fail "$name should be a CUDA library"
done
for name in libyaml-cpp.so.0.7 libmpi.so.40 libopen-pal.so.40 libhwloc.so.15 libz.so.1 libpmix.so.2; do
  kit_base_lib "$name" && fail "$name is not a base library"
  kit_cuda_lib "$name" && fail "$name is not a CUDA library"
  kit_fabric_lib "$name" && fail "$name is not a fabric library"
done
for name in libfabric.so.1 libucp.so.0 libibverbs.so.1 librdmacm.so.1 libpsm2.so.2; do
  kit_fabric_lib "$name" || fail "$name should be a fabric library"
done

# The closure of whale-sim (yaml-cpp) and of mpirun (Open MPI's runtime and what it needs).
kit_collect "$scratch/lib" "$build/apps/whale-sim" "$(readlink -f "$(command -v mpirun)")" ||
  fail "kit_collect of whale-sim and mpirun failed"
for name in libyaml-cpp.so.0.7 libopen-rte.so.40 libopen-pal.so.40 libhwloc.so.15 \
  libevent_core-2.1.so.7; do
  [ -f "$scratch/lib/$name" ] && [ ! -L "$scratch/lib/$name" ] || fail "$name not copied as a file"
done
for file in "$scratch"/lib/*; do
  name=$(basename "$file")
  kit_base_lib "$name" && fail "base library $name copied"
  kit_cuda_lib "$name" && fail "CUDA library $name copied"
done

# A program whose library is gone: one line naming both, and failure.
printf 'int gone(void) { return 0; }\n' |
  gcc -shared -fPIC -x c - -o "$scratch/libgone.so.1" -Wl,-soname,libgone.so.1
printf 'int gone(void);\nint main(void) { return gone(); }\n' |
  gcc -x c - -x none "$scratch/libgone.so.1" -o "$scratch/prog"
rm "$scratch/libgone.so.1"
message=$(kit_collect "$scratch/lib2" "$scratch/prog" 2>&1)
rc=$?
expect "exit of kit_collect with a missing library" 1 "$rc"
expect "its message" "gpu-kit: error: $scratch/prog: needs libgone.so.1, which the loader cannot find" "$message"

# MPI components: TCP is kept; openib (verbs), where Open MPI has it, is left out.
components=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
kit_needs_fabric "$components/mca_btl_tcp.so" && fail "mca_btl_tcp needs no network library"
if [ -f "$components/mca_btl_openib.so" ]; then
  kit_needs_fabric "$components/mca_btl_openib.so" || fail "mca_btl_openib needs libibverbs"
fi

# The CUDA libraries whale-run names, where it was built with CUDA: not yaml-cpp, MPI or libc;
# the CUDA runtime only where it is linked as a shared library (not WHALE_CUDA_STATIC_RUNTIME).
if readelf -d "$build/apps/whale-run" 2>/dev/null | grep -q 'libnccl'; then
  cudart=""
  readelf -d "$build/apps/whale-run" | grep -q 'libcudart' && cudart="libcudart.so.13 "
  expect "kit_cuda_needs of whale-run" \
    "libcublas.so.13 libcublasLt.so.13 ${cudart}libcupti.so.13 libnccl.so.2" \
    "$(kit_cuda_needs "$build/apps/whale-run" | tr '\n' ' ' | sed 's/ $//')"
fi

# Finding CUDA libraries: a folder under CUDA_HOME, and one that is nowhere.
mkdir -p "$scratch/cuda/lib64" && : > "$scratch/cuda/lib64/libwhalefake.so.99"
printf 'libwhalefake.so.99\nlibwhalegone.so.99\n' > "$scratch/list.txt"
found=$(CUDA_HOME=$scratch/cuda LD_LIBRARY_PATH=/x bash -c \
  'source scripts/kit-libs.sh; kit_use_cuda_libs "$1"; echo "rc=$? path=$LD_LIBRARY_PATH"' _ "$scratch/list.txt")
expect "kit_use_cuda_libs" "libwhalefake.so.99: $scratch/cuda/lib64/libwhalefake.so.99
libwhalegone.so.99: not found
rc=1 path=/x:$scratch/cuda/lib64" "$found"

[ $status = 0 ] && echo "ok: kit library collection"
exit $status
