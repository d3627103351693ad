# File: kit-libs.sh
# Which shared libraries the GPU kit carries, and copying them: sourced by scripts/gpu-kit.sh
# and tests/gpu/kit_libs_test.sh. The kit carries every library its programs load except the C
# runtime every Linux system has (glibc, libstdc++, libgcc_s) and the NVIDIA driver's and CUDA
# Toolkit's libraries, which scripts/gpu-check.sh finds on the GPU machine.
# shellcheck shell=bash

# kit_base_lib NAME: true for a library of the C runtime that every Linux system has.
kit_base_lib() {
  case $1 in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

# kit_cuda_lib NAME: true for a library of the NVIDIA driver or of the CUDA Toolkit (its
# runtime, cuBLAS, cuBLASLt, NCCL, CUPTI, cuDNN, NVRTC).
kit_cuda_lib() {
  case $1 in
    libcuda.so.* | libnvidia-*.so* | libcudart.so.* | libcublas.so.* | libcublasLt.so.* | \
      libnccl.so.* | libcupti.so.* | libcudnn*.so.* | libnvrtc*.so.* | libnvJitLink.so.* | \
      libnvperf_*.so*) return 0 ;;
  esac
  return 1
}

# kit_fabric_lib NAME: true for a library of a network between hosts (libfabric, UCX, verbs,
# PSM). The kit runs on one host, so it leaves out the MPI components that need them.
kit_fabric_lib() {
  case $1 in
    libfabric.so.* | libucp.so.* | libucs.so.* | libuct.so.* | libucm.so.* | libibverbs.so.* | \
      librdmacm.so.* | libpsm_infinipath.so.* | libpsm2.so.* | libefa.so.* | libmlx*.so.*) return 0 ;;
  esac
  return 1
}

# kit_needed ELF: the libraries ELF loads, directly or through others, one "NAME PATH" line
# each, PATH being "missing" where the loader finds none.
kit_needed() {
  ldd "$1" 2>/dev/null | awk '
    $2 == "=>" && $3 == "not" { print $1, "missing"; next }
    $2 == "=>" && $3 ~ /^\// { print $1, $3; next }'
}

# kit_collect DEST ELF...: copies into DEST every library the ELFs load that the kit carries
# (not kit_base_lib, not kit_cuda_lib), named by the name the ELFs ask for, links resolved.
# Prints nothing; fails with one line naming the first library the loader cannot find.
kit_collect() {
  local dest=$1 elf name path; shift
  mkdir -p "$dest"
  for elf in "$@"; do
    while read -r name path; do
      kit_base_lib "$name" && continue
      kit_cuda_lib "$name" && continue
      if [ "$path" = missing ]; then
        echo "gpu-kit: error: $elf: needs $name, which the loader cannot find" >&2
        return 1
      fi
      [ -e "$dest/$name" ] || cp -L "$path" "$dest/$name" || return 1
    done < <(kit_needed "$elf")
  done
}

# kit_needs_fabric ELF: true when ELF loads a kit_fabric_lib library.
kit_needs_fabric() {
  local name path
  while read -r name path; do
    kit_fabric_lib "$name" && return 0
  done < <(kit_needed "$1")
  return 1
}

# kit_cuda_needs ELF...: the CUDA libraries (kit_cuda_lib) the ELFs name directly, one per line,
# sorted: what scripts/gpu-check.sh must find on the GPU machine.
kit_cuda_needs() {
  local elf
  for elf in "$@"; do
    readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
  done | while read -r name; do
    if kit_cuda_lib "$name"; then echo "$name"; fi
  done | sort -u
}

# kit_cuda_folders: the folders where a GPU machine keeps the CUDA libraries, in the order they
# are searched: the CUDA Toolkit's ($CUDA_HOME, /usr/local/cuda, /usr/local/cuda-*), then the
# NVIDIA wheels and PyTorch's lib of python3's site-packages (found without importing them).
kit_cuda_folders() {
  local home sub
  for home in ${CUDA_HOME:-} /usr/local/cuda /usr/local/cuda-*; do
    for sub in lib64 targets/x86_64-linux/lib extras/CUPTI/lib64 lib; do
      [ -d "$home/$sub" ] && echo "$home/$sub"
    done
  done
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - <<'PY' 2>/dev/null || true
import glob, importlib.util
for name, pattern in (("nvidia", "*/lib"), ("torch", "lib")):
    spec = importlib.util.find_spec(name)
    for top in (spec.submodule_search_locations or []) if spec else []:
        print("\n".join(sorted(glob.glob(f"{top}/{pattern}"))))
PY
}

# kit_use_cuda_libs LIST: finds each library named in LIST (cuda-libs.txt of a kit) through the
# loader's cache (ldconfig -p) or in kit_cuda_folders, prints "NAME: PATH" for each (or
# "NAME: not found"), and appends the folders to LD_LIBRARY_PATH. Fails when one is not found.
kit_use_cuda_libs() {
  local name path folders=() status=0 candidates
  candidates=$(kit_cuda_folders)
  while read -r name; do
    [ -n "$name" ] || continue
    path=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }')
    if [ -z "$path" ]; then
      while read -r folder; do
        [ -n "$folder" ] && [ -e "$folder/$name" ] && { path=$folder/$name; break; }
      done <<< "$candidates"
    fi
    if [ -z "$path" ]; then
      echo "$name: not found"; status=1; continue
    fi
    echo "$name: $path"
    folders+=("$(dirname "$path")")
  done < "$1"
  local folder
  for folder in $(printf '%s\n' "${folders[@]}" | awk '!seen[$0]++'); do
    case ":${LD_LIBRARY_PATH:-}:" in *":$folder:"*) ;; *) LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$folder ;; esac
  done
  export LD_LIBRARY_PATH
  return $status
}
