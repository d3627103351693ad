// File: test_profile_output.cpp
// The output path check, profile names, and write-then-validate (a profile that whale-plan
// would refuse is an error naming the file and the field).
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "whale/exec/profile/profile_output.h"
#include "whale/plan/error.h"
#include "whale/plan/input_equality.h"

using namespace whale::exec;
using whale::plan::DeviceProfile;
using whale::plan::EfficiencyCurve;
using whale::plan::Precision;

namespace {

const std::string kOutDir = std::string(WHALE_BINARY_DIR) + "/profile-tests";

std::string error_of(void (*f)(const std::string&), const std::string& arg) {
  try {
    f(arg);
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

DeviceProfile small_profile(const std::string& name) {
  DeviceProfile p;
  p.name = name;
  p.kind = "cpu";
  p.source = "test";
  p.memory_bytes = 2.0 * whale::kBytesPerGiB;
  p.memory_bandwidth_bytes_per_s = 10e9;
  p.peak_flops_per_s[Precision::fp32] = 16e9;
  p.gemm_efficiency[Precision::fp32] = EfficiencyCurve({{1e6, 0.25}, {1e9, 0.5}});
  p.memory_efficiency = EfficiencyCurve({{1048576, 1.0}});
  p.kernel_launch_s = 5e-8;
  return p;
}

}  // namespace

TEST_CASE("check_writable refuses a missing folder and a folder") {
  CHECK(error_of(check_writable, "/nonexistent-whale-dir/p.yaml") ==
        "/nonexistent-whale-dir/p.yaml: a writable output path (hint: the folder "
        "/nonexistent-whale-dir does not exist)");
  CHECK(error_of(check_writable, kOutDir) ==
        kOutDir + ": a writable output path (hint: it is a folder; give a file name)");
  CHECK(error_of(check_writable, "") ==
        "--out: a writable output path (hint: give a file name such as profiles/NAME.yaml)");
}

TEST_CASE("check_writable leaves no file behind and keeps an existing one") {
  const std::string fresh = kOutDir + "/fresh.yaml";
  std::remove(fresh.c_str());
  check_writable(fresh);
  CHECK_FALSE(file_exists(fresh));
  const std::string kept = kOutDir + "/kept.yaml";
  std::ofstream(kept) << "content\n";
  check_writable(kept);
  std::ifstream in(kept);
  std::string line;
  std::getline(in, line);
  CHECK(line == "content");
}

TEST_CASE("profile names come from the output file stem or the device name") {
  CHECK(profile_name_for("profiles/a100.yaml") == "a100");
  CHECK(profile_name_for("dir.d/cpu-box") == "cpu-box");
  CHECK(profile_name_slug("Intel(R) Xeon(R) Processor") == "intel-r-xeon-r-processor");
  CHECK(profile_name_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3");
}

TEST_CASE("each lockstep rank writes the --out pattern with its rank, and a pattern needs {rank}") {
  CHECK(rank_output_path("p/cpu-core{rank}.yaml", 1) == "p/cpu-core1.yaml");
  CHECK(rank_output_path("r{rank}/cpu-{rank}.yaml", 12) == "r12/cpu-12.yaml");
  CHECK(profile_name_for(rank_output_path("p/cpu-core{rank}.yaml", 0)) == "cpu-core0");
  try {
    rank_output_path("p/cpu.yaml", 0);
    FAIL("a pattern without {rank} was accepted");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()).find("--out: a path with {rank}") != std::string::npos);
  }
}

TEST_CASE("write_validated_profile round-trips a valid profile") {
  const std::string path = kOutDir + "/roundtrip.yaml";
  const DeviceProfile loaded = write_validated_profile(small_profile("roundtrip"), path);
  CHECK(loaded.name == "roundtrip");
  CHECK(loaded.kind == "cpu");
  CHECK(loaded.peak(Precision::fp32) == doctest::Approx(16e9));
  CHECK(loaded.gemm_curve(Precision::fp32).at(1e9) == doctest::Approx(0.5));
  CHECK(loaded.memory_bandwidth_bytes_per_s == doctest::Approx(10e9));
  CHECK(loaded.kernel_launch_s == doctest::Approx(5e-8));
  CHECK(summarize_profile(loaded) ==
        "profile roundtrip (cpu)\n"
        "  gemm fp32 peak 16.00 GFLOP/s, at the largest size 8.00 GFLOP/s\n"
        "  memory 2.00 GiB usable, bandwidth 10.00 GB/s\n"
        "  kernel launch 0.050 us\n");
  DeviceProfile cached = small_profile("cached");
  cached.cache.cache_bytes_per_device = 16 * 1024 * 1024;
  cached.cache.warm_gemm_efficiency[Precision::fp32] = EfficiencyCurve({{1e9, 0.75}});
  cached.cache.warm_op_bandwidth_bytes_per_s = {{"gelu", 4e9}, {"adamw", 5e9}};
  const DeviceProfile cached_loaded = write_validated_profile(cached, kOutDir + "/cached.yaml");
  CHECK(cached_loaded.cache == cached.cache);
  const std::string summary = summarize_profile(cached_loaded);
  CHECK(summary.substr(summary.find("  cache")) ==
        "  cache 16.0 MiB per device; warm figures for 1 GEMM curve(s), 2 op class(es)\n");
  cached.cache.warm_fraction_by_working_set = EfficiencyCurve({{4.0 * 1024 * 1024, 0.9}, {64.0 * 1024 * 1024, 0.25}});
  cached.name = "walked";
  const DeviceProfile walked_loaded = write_validated_profile(cached, kOutDir + "/walked.yaml");
  CHECK(walked_loaded.cache == cached.cache);
  const std::string walked_summary = summarize_profile(walked_loaded);
  CHECK(walked_summary.substr(walked_summary.find("  cache walk")) ==
        "  cache walk: warm fraction 0.90 at 4.0 MiB to 0.25 at 64.0 MiB\n");
}

TEST_CASE("write_validated_profile names the file and field a measurement got wrong") {
  const std::string path = kOutDir + "/broken.yaml";
  DeviceProfile broken = small_profile("broken");
  broken.gemm_efficiency[Precision::fp32] = EfficiencyCurve({{1e6, 0.5}, {1e9, 1.25}});
  try {
    write_validated_profile(broken, path);
    FAIL("expected a validation error");
  } catch (const whale::Error& e) {
    CHECK(e.file() == path);
    CHECK(std::string(e.what()).find("gemm_efficiency.fp32[1].efficiency: expected an "
                                     "efficiency in (0, 1], got 1.25") != std::string::npos);
  }
  broken = small_profile("other-name");  // name differs from the file stem
  try {
    write_validated_profile(broken, path);
    FAIL("expected a validation error");
  } catch (const whale::Error& e) {
    CHECK(e.file() == path);
    CHECK(e.yaml_path() == "name");
  }
}
