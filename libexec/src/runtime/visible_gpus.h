// File: visible_gpus.h
// The names of the GPUs this process sees, by CUDA ordinal (private to libexec's runtime).
#pragma once

#include <string>
#include <vector>

namespace whale::exec {

/// By the CUDA runtime (cudaGetDeviceProperties' name, which nvidia-smi also prints), in the
/// order and the subset CUDA_VISIBLE_DEVICES gives; empty when the runtime finds no device or
/// no driver. Defined only in a CUDA build (runtime/cuda/visible_gpus_cuda.cpp).
std::vector<std::string> cuda_visible_gpu_names();

/// By `nvidia-smi --query-gpu=name --format=csv,noheader` (for builds without CUDA), keeping
/// the GPUs that CUDA_VISIBLE_DEVICES lists by index when it is set; empty when nvidia-smi is
/// missing or fails.
std::vector<std::string> nvidia_smi_gpu_names();

/// The lines of `smi_output` (one GPU name each, trailing white space dropped), restricted as
/// CUDA restricts them to CUDA_VISIBLE_DEVICES = `visible`: all when `visible` is null, else the
/// listed indices in the listed order, up to the first entry that is not an index of a listed
/// GPU ("0,2" keeps two; "" and a UUID, which only CUDA can resolve, keep none).
std::vector<std::string> select_visible_gpus(const std::string& smi_output, const char* visible);

}  // namespace whale::exec
