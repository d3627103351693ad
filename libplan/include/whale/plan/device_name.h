// File: device_name.h
// Matching a device's reported name (nvidia-smi's, which is CUDA's cudaDeviceProp::name, e.g.
// "NVIDIA A100-SXM4-40GB") against a device profile's name (profiles/, e.g. "a100-sxm4-40gb").
#pragma once

#include <string>

namespace whale::plan {

/// The comparable form of a device name: lower-case letters and digits only, with the vendor
/// and brand words NVIDIA, Tesla, GeForce and Quadro left out.
/// "NVIDIA A100-SXM4-40GB" and "a100-sxm4-40gb" give "a100sxm440gb"; "NVIDIA GeForce RTX 3090"
/// and "rtx3090" give "rtx3090"; "nvidia-h100-80gb-hbm3" (whale-profile's own name of an H100)
/// gives "h10080gbhbm3".
std::string device_name_key(const std::string& name);

/// The shipped profile that a reported name stands for where the key alone cannot tell it: the
/// names that leave out the form factor the profile names (an H100 SXM5 reports "NVIDIA H100
/// 80GB HBM3", profile "h100-sxm-80gb"); "" for any other name.
std::string shipped_profile_alias(const std::string& reported_name);

/// True when a device reporting `reported_name` is a device of profile `profile_name`: equal
/// keys, or `profile_name` is the name's shipped_profile_alias.
bool device_name_matches(const std::string& reported_name, const std::string& profile_name);

}  // namespace whale::plan
