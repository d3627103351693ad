// File: test_torch_trace_layer_times.cpp
// Layer times from PyTorch profiler Chrome traces written here in the profiler's event format
// (ph "X", ts and dur in microseconds, args "Sequence number", "Fwd thread id",
// "correlation"): record_function ranges with the backward linked through sequence numbers,
// GPU kernels, nn.Module ranges, backward ranges as the fallback, and the errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "calibrate_scratch.h"
#include "whale/plan/error.h"
#include "whale/plan/layer_times_import.h"
#include "whale/plan/model.h"
#include "whale/sim/layer_times_file.h"

using namespace whale;

namespace {

std::string scratch(const std::string& name, const std::string& text) {
  return test::calibrate_scratch("torch-trace", name, text);
}

/// One complete event as the profiler writes it; `args` is the inside of its args object.
std::string event(const std::string& cat, const std::string& name, int pid, int tid, double ts, double dur,
                  const std::string& args = "") {
  return R"({"ph": "X", "cat": ")" + cat + R"(", "name": ")" + name + R"(", "pid": )" + std::to_string(pid) +
         R"(, "tid": )" + std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" +
         std::to_string(dur) + R"(, "args": {)" + args + "}}";
}

std::string seq(long n) { return R"("Sequence number": )" + std::to_string(n); }
std::string backward_seq(long n) { return seq(n) + R"(, "Fwd thread id": 1)"; }

std::string trace(const std::vector<std::string>& events) {
  std::string out = R"({"schemaVersion": 1, "deviceProperties": [], "traceEvents": [)" "\n";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "") + events[i];
  return out + "\n], \"traceName\": \"x.pt.trace.json\"}\n";
}

/// One CPU training step of a 4-layer model (embedding, two blocks, head) on thread 10, its
/// backward on the autograd thread 20, every time and place scaled by `k` from `t0`; sequence
/// numbers from `s0`. Layer forwards: 100, 1000, 1200, 300 us x k. Backwards (the outermost
/// linked ops): 150, 700 + 300 + 800 = 1800, 2000, 500 us x k.
void cpu_step(double t0, double k, long s0, std::vector<std::string>* out) {
  const auto at = [&](double t) { return t0 + k * t; };
  const std::vector<std::string> step = {
      event("user_annotation", "layer.0.forward", 1, 10, at(0), k * 100),
      event("cpu_op", "aten::embedding", 1, 10, at(10), k * 50, seq(s0 + 1)),
      event("user_annotation", "layer.1.forward", 1, 10, at(100), k * 1000),
      event("cpu_op", "aten::addmm", 1, 10, at(110), k * 400, seq(s0 + 2)),
      event("cpu_op", "aten::gelu", 1, 10, at(520), k * 60, seq(s0 + 3)),
      event("cpu_op", "aten::linear", 1, 10, at(600), k * 300),
      event("cpu_op", "aten::addmm", 1, 10, at(610), k * 280, seq(s0 + 4)),
      event("user_annotation", "layer.2.forward", 1, 10, at(1100), k * 1200),
      event("cpu_op", "aten::addmm", 1, 10, at(1110), k * 500, seq(s0 + 5)),
      event("user_annotation", "layer.3.forward", 1, 10, at(2300), k * 300),
      event("cpu_op", "aten::mm", 1, 10, at(2310), k * 200, seq(s0 + 6)),
      // The loss, outside every layer: its backward belongs to none.
      event("cpu_op", "aten::cross_entropy_loss", 1, 10, at(2700), k * 50, seq(s0 + 7)),
      event("cpu_op", "autograd::engine::evaluate_function: NllLossBackward0", 1, 20, at(2900), k * 90,
            backward_seq(s0 + 7)),
      event("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 1, 20, at(3000), k * 500,
            backward_seq(s0 + 6)),
      event("cpu_op", "MmBackward0", 1, 20, at(3010), k * 480, backward_seq(s0 + 6)),  // nested: once
      event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 20, at(3500), k * 2000,
            backward_seq(s0 + 5)),
      event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 20, at(5500), k * 700,
            backward_seq(s0 + 4)),
      event("cpu_op", "autograd::engine::evaluate_function: GeluBackward0", 1, 20, at(6200), k * 300,
            backward_seq(s0 + 3)),
      event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 20, at(6500), k * 800,
            backward_seq(s0 + 2)),
      event("cpu_op", "autograd::engine::evaluate_function: EmbeddingBackward0", 1, 20, at(7300), k * 150,
            backward_seq(s0 + 1)),
  };
  out->insert(out->end(), step.begin(), step.end());
}

void check(const plan::MeasuredLayerTime& m, plan::LayerKind kind, int tp, double micro_batch, double forward_s,
           double backward_s) {
  CHECK(m.kind == kind);
  CHECK(m.tp == tp);
  CHECK(m.micro_batch == micro_batch);
  CHECK(m.forward_s == doctest::Approx(forward_s).epsilon(1e-9));
  CHECK(m.backward_s == doctest::Approx(backward_s).epsilon(1e-9));
}

const std::string kProfiles = std::string(WHALE_SOURCE_DIR) + "/profiles";
using K = plan::LayerKind;

}  // namespace

TEST_CASE("a CPU trace: record_function forwards, backwards linked by sequence number, medians over steps") {
  std::vector<std::string> events;
  cpu_step(0, 1, 0, &events);
  cpu_step(10000, 2, 100, &events);  // the second step takes twice as long: the median is 1.5x
  const std::string path = scratch("cpu.json", trace(events));
  const plan::LayerTimes times = plan::load_torch_trace_layer_times(path, 4, 1);
  CHECK(times.source == path);
  REQUIRE(times.measurements.size() == 3);
  // Layer 0: 1.5 x 100 and 1.5 x 150 us. Blocks: 1.5 x 1000 and 1.5 x 1200 us forward, 1.5 x 1800
  // and 1.5 x 2000 us backward, their median (1650, 2850 us). Head: 1.5 x 300 and 1.5 x 500 us.
  check(times.measurements[0], K::embedding, 1, 4, 150e-6, 225e-6);
  check(times.measurements[1], K::transformer, 1, 4, 1650e-6, 2850e-6);
  check(times.measurements[2], K::head, 1, 4, 450e-6, 750e-6);
  // whale-calibrate --layer-times: by content, with the device, the micro-batch and the tp.
  CHECK(sim::detect_layer_times_format(path) == sim::LayerTimesFormat::torch_trace);
  const sim::LayerTimesByModel by_model = sim::load_layer_times(path, {"a100-sxm4-80gb", 4, 2}, kProfiles);
  CHECK(by_model.at("a100-sxm4-80gb").measurements.at(1).tp == 2);
  CHECK_THROWS_WITH_AS(sim::load_layer_times(path, {"a100-sxm4-80gb"}, kProfiles),
                       doctest::Contains("--layer-times-micro-batch"), Error);
  CHECK_THROWS_WITH_AS(sim::load_layer_times(path, {"", 4, 1}, kProfiles), doctest::Contains("--layer-times-device"),
                       Error);
}

TEST_CASE("a GPU trace: each range is the time of the kernels its runtime calls launched") {
  // Three layers; each forward launches two kernels, each backward one (pid 0, stream 7); the
  // GPU copy of the annotation is not a range of the CPU.
  std::vector<std::string> events;
  const double forward_us[3][2] = {{10, 20}, {40, 60}, {30, 35}};
  const double backward_us[3] = {25, 90, 70};
  for (int l = 0; l < 3; ++l) {
    const double t = 1000.0 * l;
    const int c = 10 * l;
    events.push_back(event("user_annotation", "layer." + std::to_string(l) + ".forward", 1, 10, t, 500));
    events.push_back(event("gpu_user_annotation", "layer." + std::to_string(l) + ".forward", 0, 7, t + 5, 400));
    events.push_back(event("cpu_op", "aten::addmm", 1, 10, t + 10, 300, seq(l)));
    events.push_back(event("cuda_runtime", "cudaLaunchKernel", 1, 10, t + 20, 5, R"("correlation": )" + std::to_string(c)));
    events.push_back(event("cuda_runtime", "cudaLaunchKernel", 1, 10, t + 30, 5, R"("correlation": )" + std::to_string(c + 1)));
    events.push_back(event("kernel", "sm80_gemm", 0, 7, t + 50, forward_us[l][0], R"("correlation": )" + std::to_string(c)));
    events.push_back(event("kernel", "gelu_kernel", 0, 7, t + 80, forward_us[l][1], R"("correlation": )" + std::to_string(c + 1)));
    const double b = 10000 - 1000.0 * l;
    events.push_back(event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 20, b, 600, backward_seq(l)));
    events.push_back(event("cuda_runtime", "cudaLaunchKernel", 1, 20, b + 10, 5, R"("correlation": )" + std::to_string(c + 5)));
    events.push_back(event("kernel", "sm80_gemm_dgrad", 0, 7, b + 50, backward_us[l], R"("correlation": )" + std::to_string(c + 5)));
  }
  const plan::LayerTimes times = plan::load_torch_trace_layer_times(scratch("gpu.json", trace(events)), 8, 1);
  REQUIRE(times.measurements.size() == 3);
  check(times.measurements[0], K::embedding, 1, 8, 30e-6, 25e-6);
  check(times.measurements[1], K::transformer, 1, 8, 100e-6, 90e-6);
  check(times.measurements[2], K::head, 1, 8, 65e-6, 70e-6);
}

TEST_CASE("a trace without record_function ranges: the outermost nn.Module blocks") {
  // Two GPTBlock modules (each with a nested LayerNorm and Linear, and the second with a nested
  // block class that must not count twice) and an nn.Embedding, which is no block.
  std::vector<std::string> events = {
      event("python_function", "nn.Module: Embedding_0", 1, 10, 0, 50),
      event("python_function", "nn.Module: GPTBlock_0", 1, 10, 100, 800),
      event("python_function", "nn.Module: LayerNorm_0", 1, 10, 110, 50),
      event("cpu_op", "aten::addmm", 1, 10, 200, 300, seq(1)),
      event("python_function", "nn.Module: GPTBlock_1", 1, 10, 1000, 1000),
      event("python_function", "nn.Module: MLPLayer_0", 1, 10, 1100, 600),
      event("cpu_op", "aten::addmm", 1, 10, 1200, 300, seq(2)),
      event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 20, 3000, 1700, backward_seq(2)),
      event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 1, 20, 5000, 1500, backward_seq(1)),
  };
  const plan::LayerTimes times = plan::load_torch_trace_layer_times(scratch("modules.json", trace(events)), 2, 1);
  REQUIRE(times.measurements.size() == 1);  // the embedding and the head are left to the curves
  check(times.measurements[0], K::transformer, 1, 2, 900e-6, 1600e-6);  // medians of 800/1000, 1500/1700
}

TEST_CASE("without autograd linkage the backward ranges give the backward") {
  std::vector<std::string> events;
  for (int l = 0; l < 3; ++l) {
    events.push_back(event("user_annotation", "layer." + std::to_string(l) + ".forward", 1, 10, 100.0 * l, 50 + l));
    events.push_back(event("user_annotation", "layer." + std::to_string(l) + ".backward", 1, 10, 1000 - 100.0 * l, 70 + l));
  }
  const plan::LayerTimes times = plan::load_torch_trace_layer_times(scratch("ranges.json", trace(events)), 1, 1);
  REQUIRE(times.measurements.size() == 3);
  check(times.measurements[1], K::transformer, 1, 1, 51e-6, 71e-6);
}

TEST_CASE("a trace that cannot give layer times fails naming what it lacks") {
  const std::string none = scratch("none.json", trace({event("cpu_op", "aten::mm", 1, 10, 0, 5)}));
  CHECK_THROWS_WITH_AS(plan::load_torch_trace_layer_times(none, 1, 1), doctest::Contains("layer.<i>.forward"), Error);
  std::vector<std::string> gap;
  for (int l : {0, 1, 3}) gap.push_back(event("user_annotation", "layer." + std::to_string(l) + ".forward", 1, 10, 0, 5));
  CHECK_THROWS_WITH_AS(plan::load_torch_trace_layer_times(scratch("gap.json", trace(gap)), 1, 1),
                       doctest::Contains("got none for layer.2"), Error);
  std::vector<std::string> forward_only;
  for (int l : {0, 1, 2}) forward_only.push_back(event("user_annotation", "layer." + std::to_string(l) + ".forward", 1, 10, 10.0 * l, 5));
  CHECK_THROWS_WITH_AS(plan::load_torch_trace_layer_times(scratch("forward-only.json", trace(forward_only)), 1, 1),
                       doctest::Contains("layer.0.backward"), Error);
  const std::string no_dur = scratch("no-dur.json", R"({"traceEvents": [{"ph": "X", "name": "layer.0.forward", "ts": 1}]})");
  CHECK_THROWS_WITH_AS(plan::load_torch_trace_layer_times(no_dur, 1, 1), doctest::Contains("traceEvents[0].dur"), Error);
}
