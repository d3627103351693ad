// File: profile_cpu_op_bandwidth.cpp
// The op-class bandwidths of a CPU profile: each class is timed forward and backward through
// the same Backend whale-run uses, and expressed in the bytes the model's memory ops count.
#include "profile/profile_cpu_op_bandwidth.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace whale::exec {
namespace {

constexpr double kFloatBytes = 4;
/// libsim's optimizer bytes per fp32 AdamW parameter: gradient 4 + (m, v) read and written 16
/// + weight read and written 8 (cost_table.cpp, optimizer_s).
constexpr double kAdamwBytesPerParameter = 28;

/// Float buffers of the backend filled with deterministic values spread over [0, 1), released
/// together (non-negative, as AdamW's second moment must be). Not zeros: libm's tanh and exp
/// take fast paths at 0 that real activations miss.
class Buffers {
 public:
  explicit Buffers(Backend& backend) : backend_(backend) {}
  ~Buffers() {
    for (Tensor& t : owned_) t.reset();
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  TensorView make(std::size_t count) {
    owned_.emplace_back(backend_, count, DType::fp32);
    std::vector<float> values(count);
    uint32_t state = 12345;
    for (float& v : values) {
      state = state * 1664525u + 1013904223u;  // a linear congruential generator
      v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
    }
    backend_.upload(owned_.back(), values.data(), Stream::compute);
    backend_.synchronize();
    return owned_.back();
  }

 private:
  Backend& backend_;
  std::vector<Tensor> owned_;
};

struct OpClass {
  std::string name;              // the class key, contained in the model's memory op names
  double model_bytes = 0;        // bytes the model counts for the measured forward
  std::function<void()> forward, backward;
  double gemm_s = 0;             // time of the GEMMs inside forward, priced by the curve
  std::vector<CacheFlusher::HotBuffer> forward_hot, backward_hot;  // just written before it
};

}  // namespace

void measure_cpu_op_bandwidth(Backend& backend, bool quick, const TimerOptions& timer,
                              CacheFlusher& flusher, const ProgressFn& progress,
                              plan::DeviceProfile* profile) {
  const int rows = quick ? 128 : 512, channels = 256, wide = 4 * channels;
  const int batch = rows / 128, sequence = 128, heads = 8, head_size = channels / heads;
  const int vocabulary = 256;
  const std::size_t parameters = quick ? (std::size_t{1} << 18) : (std::size_t{1} << 21);
  const std::size_t wide_count = static_cast<std::size_t>(rows) * wide;
  const std::size_t probs_count = static_cast<std::size_t>(batch) * heads * sequence * sequence;
  const std::size_t narrow_count = static_cast<std::size_t>(rows) * channels;
  const std::size_t logits_count = static_cast<std::size_t>(rows) * vocabulary;
  Buffers buf(backend);
  const TensorView x = buf.make(wide_count);
  const TensorView y = buf.make(wide_count);
  const TensorView dy = buf.make(wide_count);
  const TensorView weight = buf.make(2 * channels);
  const TensorView w = weight.slice(0, channels), b = weight.slice(channels, channels);
  const TensorView stats = buf.make(2 * rows);
  const TensorView mean = stats.slice(0, rows), rstd = stats.slice(rows, rows);
  const TensorView qkv = buf.make(static_cast<std::size_t>(rows) * 3 * channels);
  const TensorView probs = buf.make(probs_count);
  const TensorView logits = buf.make(logits_count);
  const TensorView optimizer = buf.make(4 * parameters);
  auto state = [&](int k) { return optimizer.slice(k * parameters, parameters); };
  const std::vector<int32_t> host_targets(rows, 1);
  Tensor targets(backend, host_targets.size(), DType::i32);
  backend.upload(targets, host_targets.data(), Stream::compute);
  backend.synchronize();

  // Attention core GEMMs (scores and context) as libsim prices them: flops of one op summed
  // over heads and samples, forward once, backward twice.
  const double attention_gemm_flops = 2.0 * sequence * sequence * head_size * heads * batch;
  const plan::EfficiencyCurve& curve = profile->gemm_curve(plan::Precision::fp32);
  const double peak = profile->peak(plan::Precision::fp32);
  const double attention_gemm_s = 2.0 * attention_gemm_flops / (peak * curve.at(attention_gemm_flops));

  std::vector<OpClass> classes = {
      {"gelu", 2 * wide_count * kFloatBytes, [&] { backend.gelu_forward(y, x, wide_count); },
       [&] { backend.gelu_backward(dy, x, y, wide_count); }, 0, {{x.as<float>(), wide_count}},
       {{y.as<float>(), wide_count}}},
      {"layernorm", 2.0 * rows * channels * kFloatBytes,
       [&] { backend.layernorm_forward(y, mean, rstd, x, w, b, rows, channels); },
       [&] { backend.layernorm_backward(dy, w, b, y, x, w, mean, rstd, rows, channels); },
       0, {{x.as<float>(), narrow_count}}, {{y.as<float>(), narrow_count}}},
      {"softmax", 2 * probs_count * kFloatBytes,
       [&] { backend.attention_forward(y, probs, qkv, batch, sequence, heads, head_size); },
       [&] { backend.attention_backward(dy, y, qkv, probs, batch, sequence, heads, head_size); },
       attention_gemm_s, {{qkv.as<float>(), 3 * narrow_count}}, {{y.as<float>(), narrow_count}}},
      {"cross_entropy", 2.0 * rows * vocabulary * kFloatBytes,
       [&] { backend.cross_entropy_forward(logits, targets, rows, vocabulary); },
       [&] { backend.cross_entropy_backward(dy, logits, targets, rows, vocabulary, 1.0); },
       0, {{logits.as<float>(), logits_count}}, {{logits.as<float>(), logits_count}}},  // backward follows at once
      {"adamw", kAdamwBytesPerParameter * parameters,
       [&] {
         backend.adamw_update(state(0), state(1), state(2), state(3), parameters, 1e-9, 0.9, 0.95,
                              1e-8, 0.0, 1);
       },
       nullptr, 0, {}, {}},
  };
  for (const OpClass& op : classes) {
    const Seconds forward_s = median_call_time_s(op.forward, flusher.cold_except(timer, op.forward_hot));
    const Seconds backward_s =
        op.backward ? median_call_time_s(op.backward, flusher.cold_except(timer, op.backward_hot)) : forward_s;
    // libsim charges the GEMMs forward once and backward twice, the class once each way.
    const Seconds class_s = (forward_s + backward_s - 3.0 * op.gemm_s) / 2.0;
    char line[200];
    if (class_s <= 0) {
      std::snprintf(line, sizeof line, "op %s: forward %.3f ms, backward %.3f ms: nothing left "
                    "after the GEMMs, not recorded", op.name.c_str(), forward_s * 1e3, backward_s * 1e3);
      progress(line);
      continue;
    }
    profile->op_bandwidth_bytes_per_s[op.name] = op.model_bytes / class_s;
    std::snprintf(line, sizeof line, "op %s: forward %.3f ms, backward %.3f ms, %.3f GB/s as the model counts bytes",
                  op.name.c_str(), forward_s * 1e3, backward_s * 1e3, op.model_bytes / class_s / 1e9);
    progress(line);
  }
}

}  // namespace whale::exec
