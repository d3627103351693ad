// File: profile_cpu_op_bandwidth.cpp
// The op-class bandwidths of a CPU profile: each class is timed forward and backward through
// the same Backend whale-run uses, and expressed in the bytes the model's memory ops count.
#include "profile/profile_cpu_op_bandwidth.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "whale/exec/profile/profile_op_class_rates.h"

namespace whale::exec {
namespace {

constexpr double kFloatBytes = 4;
/// libsim's optimizer bytes per fp32 AdamW parameter: gradient 4 + (m, v) read and written 16
/// + weight read and written 8 (cost_table.cpp, optimizer_s).
constexpr double kAdamwBytesPerParameter = 28;
/// libsim's optimizer bytes per fp32 SGD parameter: gradient 4 + momentum read and written 8
/// + weight read and written 8.
constexpr double kSgdBytesPerParameter = 20;

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
  double gemm_s = 0;             // time of the GEMMs inside forward, priced by the cold curve
  std::vector<CacheFlusher::HotBuffer> forward_hot, backward_hot;  // just written before it
};

struct OpTimes {
  Seconds forward_s = 0, backward_s = 0;
};

/// The op's forward and backward medians under the timer options `options(hot buffers)` gives.
template <typename Options>
OpTimes time_op(const OpClass& op, const Options& options) {
  OpTimes t;
  t.forward_s = median_call_time_s(op.forward, options(op.forward_hot));
  t.backward_s = op.backward ? median_call_time_s(op.backward, options(op.backward_hot)) : t.forward_s;
  return t;
}

/// The class's figures (op_class_rates), with a progress line of the times and figures.
OpClassRates class_rates(const OpClass& op, const OpTimes& t, Seconds gemm_s, const char* state,
                         const ProgressFn& progress) {
  const OpClassRates out = op_class_rates(op.model_bytes, t.forward_s, t.backward_s, gemm_s, bool(op.backward));
  char line[260];
  if (out.forward <= 0) {
    std::snprintf(line, sizeof line, "op %s (%s): forward %.3f ms, backward %.3f ms: nothing left "
                  "after the GEMMs, not recorded", op.name.c_str(), state, t.forward_s * 1e3,
                  t.backward_s * 1e3);
  } else if (out.backward > 0) {
    std::snprintf(line, sizeof line, "op %s (%s): forward %.3f ms, backward %.3f ms: %.3f and %.3f GB/s "
                  "as the model counts bytes", op.name.c_str(), state, t.forward_s * 1e3, t.backward_s * 1e3,
                  out.forward / 1e9, out.backward / 1e9);
  } else {
    std::snprintf(line, sizeof line, "op %s (%s): forward %.3f ms, backward %.3f ms: %.3f GB/s as the model "
                  "counts bytes, %s", op.name.c_str(), state, t.forward_s * 1e3, t.backward_s * 1e3,
                  out.forward / 1e9, op.backward ? "both passes" : "no backward");
  }
  progress(line);
  return out;
}

}  // namespace

void measure_cpu_op_bandwidth(Backend& backend, bool quick, const TimerOptions& timer,
                              CacheFlusher& flusher, CacheFlusher& warm_flusher, const ProgressFn& progress,
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
  // over heads and samples, forward once, backward twice; cold and warm by the curve of each.
  const double attention_gemm_flops = 2.0 * sequence * sequence * head_size * heads * batch;
  const double peak = profile->peak(plan::Precision::fp32);
  const auto attention_gemm_s = [&](const plan::EfficiencyCurve& curve) {
    return 2.0 * attention_gemm_flops / (peak * curve.at(attention_gemm_flops));
  };
  const double cold_attention_gemm_s = attention_gemm_s(profile->gemm_curve(plan::Precision::fp32));
  const double warm_attention_gemm_s =
      attention_gemm_s(profile->cache.warm_gemm_efficiency.at(plan::Precision::fp32));

  // A backward adds into its input gradient, which the blocks (gpt_block.cpp, llama_block.cpp)
  // zero first: the GELU's and the attention's backward are timed with that fill, as they run.
  const TensorView dqkv = dy.slice(0, static_cast<std::size_t>(rows) * 3 * channels);
  std::vector<OpClass> classes = {
      {"gelu", 2 * wide_count * kFloatBytes, [&] { backend.gelu_forward(y, x, wide_count); },
       [&] {
         backend.fill_zero(dy, Stream::compute);
         backend.gelu_backward(dy, x, y, wide_count);
       },
       0, {{x.as<float>(), wide_count}},
       {{y.as<float>(), wide_count}}},
      {"layernorm", 2.0 * rows * channels * kFloatBytes,
       [&] { backend.layernorm_forward(y, mean, rstd, x, w, b, rows, channels); },
       [&] { backend.layernorm_backward(dy, w, b, y, x, w, mean, rstd, rows, channels); },
       0, {{x.as<float>(), narrow_count}}, {{y.as<float>(), narrow_count}}},
      {"softmax", 2 * probs_count * kFloatBytes,
       [&] { backend.attention_forward(y, probs, qkv, batch, sequence, heads, head_size); },
       [&] {
         backend.fill_zero(dqkv, Stream::compute);
         backend.attention_backward(dqkv, y, qkv, probs, batch, sequence, heads, head_size);
       },
       cold_attention_gemm_s, {{qkv.as<float>(), 3 * narrow_count}}, {{y.as<float>(), narrow_count}}},
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
      {"sgd", kSgdBytesPerParameter * parameters,
       [&] { backend.sgd_update(state(0), state(1), state(2), parameters, 1e-9, 0.9, 0.0); }, nullptr, 0, {}, {}},
  };
  // Each class cold (the flusher before every call, its hot inputs read back) and warm (the
  // private caches flushed before every call, its hot inputs read back: the rest comes from the
  // last-level cache, as in a training step whose working set fits it).
  for (const OpClass& op : classes) {
    const OpTimes cold = time_op(op, [&](const std::vector<CacheFlusher::HotBuffer>& hot) {
      return flusher.cold_except(timer, hot);
    });
    const OpTimes warm = time_op(op, [&](const std::vector<CacheFlusher::HotBuffer>& hot) {
      return warm_flusher.cold_except(timer, hot);
    });
    const double warm_gemm_s = op.gemm_s > 0 ? warm_attention_gemm_s : 0.0;
    const OpClassRates cold_bandwidth = class_rates(op, cold, op.gemm_s, "cold", progress);
    const OpClassRates warm_bandwidth = class_rates(op, warm, warm_gemm_s, "warm", progress);
    if (cold_bandwidth.forward <= 0) continue;
    profile->op_bandwidth_bytes_per_s[op.name] = cold_bandwidth.forward;
    if (cold_bandwidth.backward > 0) profile->op_backward_bandwidth_bytes_per_s[op.name] = cold_bandwidth.backward;
    if (warm_bandwidth.forward <= 0) continue;
    profile->cache.warm_op_bandwidth_bytes_per_s[op.name] = warm_bandwidth.forward;
    if (warm_bandwidth.backward > 0) {
      profile->cache.warm_op_backward_bandwidth_bytes_per_s[op.name] = warm_bandwidth.backward;
    }
  }
}

}  // namespace whale::exec
