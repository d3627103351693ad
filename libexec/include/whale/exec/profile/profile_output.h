// File: profile_output.h
// Where whale-profile writes: the output path is checked before anything is measured, and a
// written profile is loaded back through whale-plan's validator before the tool reports success.
#pragma once

#include <string>

#include "whale/plan/device_profile.h"

namespace whale::exec {

/// Throws whale::Error(path, "", "a writable output path", hint) when `path` cannot be
/// written: its folder is missing, it is a folder, or opening it for writing fails. Leaves an
/// existing file unchanged and removes a file it had to create.
void check_writable(const std::string& path);

/// The profile name for an output path: its file stem ("profiles/a100.yaml" -> "a100").
std::string profile_name_for(const std::string& path);

/// Each rank's output path of whale-profile --lockstep: `pattern` with every "{rank}" replaced
/// by `rank` ("p/cpu-core{rank}.yaml", 1 -> "p/cpu-core1.yaml"). Throws whale::Error naming
/// --out when `pattern` has no "{rank}" (every rank would write the same file).
std::string rank_output_path(const std::string& pattern, int rank);

/// A device name as a profile name: lower case, runs of other characters as one '-'
/// ("Intel(R) Xeon(R) Processor" -> "intel-r-xeon-r-processor").
std::string profile_name_slug(const std::string& text);

/// Writes `profile` with save_device_profile, then loads it back with load_device_profile and
/// returns what was loaded. A profile that fails validation is a whale::Error naming the file
/// and the field (the measurement produced something whale-plan would refuse).
plan::DeviceProfile write_validated_profile(const plan::DeviceProfile& profile,
                                            const std::string& path);

/// A short YAML-free summary of a profile, one figure per line, for stdout.
std::string summarize_profile(const plan::DeviceProfile& profile);

}  // namespace whale::exec
