// File: test_kernel_times.cpp
// whale-run --kernel-times: the CSV's rows per timed step, longest first, names quoted; and the
// recorder's refusals (rank 0 on a CPU; a build without CUDA) before any output is written.
#include <doctest/doctest.h>

#include <string>

#include "runtime/kernel_times.h"
#include "whale/plan/error.h"

using whale::Error;
using whale::exec::format_kernel_times_csv;
using whale::exec::KernelTimesRecorder;

TEST_CASE("kernel times: per step, the longest first, shares of the summed time, names quoted") {
  // 2 timed steps: 6 launches over 3 ms and 2 over 1 ms are 3 and 1 per step, 1.5 and 0.5 ms.
  const std::string csv = format_kernel_times_csv(
      {{"flash<bf16, 128>", 2, 1e-3}, {"nvjet \"tst\"", 6, 3e-3}}, 2);
  CHECK(csv ==
        "kernel,launches_per_step,ms_per_step,share\n"
        "\"nvjet \"\"tst\"\"\",3,1.5000,0.7500\n"
        "\"flash<bf16, 128>\",1,0.5000,0.2500\n");
  // Equal times fall back to the name's order; no kernel gives the header alone.
  CHECK(format_kernel_times_csv({{"b", 1, 1e-3}, {"a", 1, 1e-3}}, 1) ==
        "kernel,launches_per_step,ms_per_step,share\n\"a\",1,1.0000,0.5000\n\"b\",1,1.0000,0.5000\n");
  CHECK(format_kernel_times_csv({}, 3) == "kernel,launches_per_step,ms_per_step,share\n");
}

TEST_CASE("kernel times: no file and ranks other than 0 record nothing; rank 0 on a CPU is refused") {
  CHECK_NOTHROW(KernelTimesRecorder("", true, "cpu"));
  CHECK_NOTHROW(KernelTimesRecorder("times.csv", false, "cpu"));
#if WHALE_HAVE_CUDA
  CHECK_THROWS_WITH_AS(KernelTimesRecorder("times.csv", true, "cpu"),
                       doctest::Contains("--kernel-times"), Error);
#else
  CHECK_THROWS_WITH_AS(KernelTimesRecorder("times.csv", true, "cpu"),
                       doctest::Contains("built with CUDA"), Error);
#endif
  // An inactive recorder's steps and finish write nothing.
  KernelTimesRecorder idle("", true, "cpu");
  idle.before_step(0, 0, 3);
  CHECK_NOTHROW(idle.finish());
}
