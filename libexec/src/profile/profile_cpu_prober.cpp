// File: profile_cpu_prober.cpp
// CpuProber: measures whale-run's own CPU Backend (Eigen GEMMs on mapped float buffers): an fp32
// matmul sweep, a copy bandwidth sweep, MemAvailable, the cost of a tiny op call, and the
// wall-clock times of one GPT layer's forward ops.
#include "whale/exec/profile/profile_cpu_prober.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include <unistd.h>

#include "profile/profile_cpu_block.h"
#include "profile/profile_cpu_op_bandwidth.h"
#include "whale/exec/backend/backend_factory.h"
#include "whale/exec/profile/profile_cpu_cache_walk.h"
#include "whale/exec/profile/profile_output.h"
#include "whale/exec/profile/profile_statistics.h"
#include "whale/exec/profile/profile_cache_flusher.h"
#include "whale/exec/profile/profile_cache_sweep.h"
#include "whale/exec/profile/profile_cpu_cache.h"
#include "whale/exec/profile/profile_timer.h"
#include "whale/plan/check.h"
#include "profile/profile_text.h"

namespace whale::exec {
namespace {

std::string read_text_file(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The value after "KEY<spaces>:" on the first line that starts with key; "" if none.
std::string first_field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

/// fp32 tensors of the backend, released by the destructor; get() is the host address (the
/// CPU backend's memory is host memory) for the cache flusher.
class BackendBuffer {
 public:
  BackendBuffer(Backend& backend, std::size_t count) : tensor_(backend, count, DType::fp32) {}
  float* get() { return tensor_.view().as<float>(); }
  TensorView view(std::size_t offset = 0) {
    return tensor_.slice(offset, tensor_.count() - offset);
  }

 private:
  Tensor tensor_;
};

class CpuProber : public DeviceProber {
 public:
  CpuProber()
      : model_name_(first_field(read_text_file("/proc/cpuinfo"), "model name")),
        backend_(make_backend(BackendRequest{})) {}

  std::string description() const override {
    return "cpu: " + (model_name_.empty() ? std::string("unknown model") : model_name_) + ", " +
           std::to_string(Eigen::nbThreads()) + " Eigen thread(s)";
  }

  std::string default_name() const override {
    return "cpu-" + (model_name_.empty() ? std::string("unknown") : profile_name_slug(model_name_));
  }

  ProbeResult measure(const ProbeOptions& options, const ProgressFn& progress) override {
    TimerOptions timer;
    timer.samples = options.quick ? 3 : 7;
    timer.min_sample_s = options.quick ? 5e-3 : 20e-3;
    timer.in_step = options.in_step;  // every timer below is a copy of this one

    ProbeResult result;
    plan::DeviceProfile& profile = result.profile;
    profile.name = options.name.empty() ? default_name() : options.name;
    profile.kind = "cpu";
    profile.framework_memory = plan::default_framework_memory("cpu");  // whale-run's CPU backend
    profile.framework_memory.source =
        "whale-run's CPU backend: it counts its tensors only, and its stage modules cache their "
        "micro-batch activations and block gradient buffers (stage_buffer_cache)";

    // The flush before every cold timing is sized by sysfs's cache; the read sweep that stands
    // in where sysfs has none runs last, away from the other cores' profilers starting at once
    // (CacheFlusher).
    const LastLevelCache sysfs_cache = read_last_level_cache(kSysfsCacheDir);
    CacheFlusher flusher(sysfs_cache.size_bytes);
    CacheFlusher warm_flusher = CacheFlusher::of_private_caches(sysconf(_SC_LEVEL2_CACHE_SIZE));

    // GEMMs and the op classes are timed from cold caches (CacheFlusher) and warm, from the
    // last-level cache (CacheFlusher::of_private_caches; libsim picks one of the two by the
    // working set a device's layers touch: cache_working_set.h);
    // the copy sweep stays hot: its small sizes are meant to read the caches' bandwidth.
    TimerOptions cold = timer;
    cold.samples = options.quick ? 5 : 9;
    BlockSeconds walk_reference;
    const std::string source_peak =
        measure_gemm(options.quick, cold, flusher, warm_flusher, progress, &profile, &walk_reference);
    const std::string source_memory = measure_memory(options.quick, timer, progress, &profile);
    profile.memory_bytes = mem_available_bytes(read_text_file("/proc/meminfo"));
    progress(format("memory: MemAvailable %.2f GiB", profile.memory_bytes / kBytesPerGiB));

    BackendBuffer one(*backend_, 3);
    profile.kernel_launch_s = median_call_time_s(
        [&] { backend_->matmul(false, false, 1, 1, 1, one.view(0), one.view(1), one.view(2), false); },
        timer);
    progress(format("launch: 1x1x1 matmul call %.3f us", profile.kernel_launch_s * 1e6));
    measure_cpu_op_bandwidth(*backend_, options.quick, cold, flusher, warm_flusher, progress, &profile);
    LastLevelCache cache = sysfs_cache;
    if (cache.size_bytes > 0) {
      progress(format("cache: sysfs: L%.0f %.1f MiB", cache.level, cache.size_bytes / kBytesPerMiB));
    } else {
      cache = swept_cache(options.quick, timer, progress);
    }
    profile.cache.cache_bytes_per_device = cache_bytes_per_device(cache, Eigen::nbThreads());
    if (profile.cache.empty()) {
      progress("cache: neither sysfs nor a read sweep shows the last-level cache: the profile keeps the cold figures only");
    } else {
      progress(format("cache: %.1f MiB shared by %.0f CPU(s): %.1f MiB per device", cache.size_bytes / kBytesPerMiB,
                      cache.shared_cpus, profile.cache.cache_bytes_per_device / kBytesPerMiB));
    }
    if (2 * cache.size_bytes > flusher.bytes()) {
      progress(format("cache: warning: the flush before each cold timing wrote %.1f MiB, under twice this cache: "
                      "the cold figures may be partly warm", flusher.bytes() / kBytesPerMiB));
    }
    // Under --lockstep the walk runs on every core whatever its cache shows (a stand-in size
    // where none, its figures dropped), so that the cores time as many walks.
    if (!profile.cache.empty() || timer.in_step) {
      const plan::EfficiencyCurve walked = measure_warm_fraction_by_working_set(
          *backend_, profile.cache.empty() ? kWalkCacheStandIn : profile.cache.cache_bytes_per_device,
          walk_reference.cold_s, walk_reference.warm_s, options.quick, timer, progress);
      if (!profile.cache.empty()) profile.cache.warm_fraction_by_working_set = walked;
    }
    result.op_timings = time_layer_ops(options.quick, timer);
    result.op_timing_source = "wall clock, CPU backend";

    profile.source = "measured by whale-profile --device cpu" +
                     std::string(options.quick ? " --quick" : "") + " on " +
                     (model_name_.empty() ? "an unknown CPU" : model_name_) + "; " + source_peak +
                     "; " + source_memory;
    return result;
  }

 private:
  // The cache walk's stand-in where no cache shows (its figures are then dropped).
  static constexpr Bytes kWalkCacheStandIn = 16 * kBytesPerMiB;
  // One block's GEMM seconds, cold and warm.
  struct BlockSeconds {
    Seconds cold_s = 0, warm_s = 0;
  };

  /// The last-level cache a read sweep shows, for machines whose sysfs has none (some VMs, whose
  /// sysconf reports the host's cache), taken as this device's own: profiled as ranks train (one
  /// profiler per core at once, docs/profile-tool.md), the sweep already shares the cache with
  /// the other cores' work.
  LastLevelCache swept_cache(bool quick, const TimerOptions& timer, const ProgressFn& progress) {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const Bytes smallest = 2.0 * (l2 > 0 ? static_cast<double>(l2) : kBytesPerMiB);
    const Bytes largest = (quick ? 128.0 : 512.0) * kBytesPerMiB;
    const std::vector<CacheSweepPoint> sweep = sweep_read_bandwidth(smallest, largest, timer);
    std::string points;
    for (const CacheSweepPoint& p : sweep) points += format(" %.1f:%.1f", p.bytes / kBytesPerMiB, p.read_bytes_per_s / 1e9);
    progress("cache: not in sysfs; read sweep MiB:GB/s" + points);
    LastLevelCache cache;
    cache.size_bytes = cache_capacity_from_sweep(sweep);
    return cache;
  }

  /// Fills the fp32 peak and curve, and `walk_reference` with the block of width
  /// kCacheWalkWidth (the cache walk's references); returns the sentence of `source` that says
  /// where the peak comes from.
  std::string measure_gemm(bool quick, const TimerOptions& timer, CacheFlusher& flusher, CacheFlusher& warm_flusher,
                           const ProgressFn& progress, plan::DeviceProfile* profile, BlockSeconds* walk_reference) {
    // Each point: the GEMMs a transformer block of width h runs in training, over 2h tokens,
    // which is what libsim prices with this curve. Square GEMMs of the same FLOPs run up to 15%
    // faster in Eigen (and power-of-two squares hit cache-set conflicts the model's shapes
    // partly avoid), so a square sweep made every prediction optimistic. For each linear
    // (m tokens, k in, n out), the three products of a training step: forward x * W^T (NT),
    // input gradient dy * W accumulated (NN), weight gradient dy^T * x accumulated (TN). The
    // point is (mean FLOPs of one product, total FLOPs / total time).
    const std::vector<int> widths = quick ? std::vector<int>{32, 64, 128, 256}
                                          : std::vector<int>{32, 64, 128, 256, 384, 512};
    // Warm: each product's samples in a row (its previous call leaves its operands in the
    // last-level cache). Cold: every product's samples in turn over all widths
    // (interleaved_median_call_times_s), so that a transient of the machine lands on one sample
    // of many points, not on every sample of one width.
    struct WidthBuffers {
      WidthBuffers(Backend& backend, std::size_t activations, std::size_t weights)
          : x(backend, activations), w(backend, weights), y(backend, activations) {}
      BackendBuffer x, w, y;
    };
    std::vector<std::unique_ptr<WidthBuffers>> buffers;
    std::vector<TimedOp> cold_products;
    std::vector<double> flops, block_flops, warm_s;
    for (int h : widths) {
      const int m = kTokensPerWidth * h;
      const std::size_t widest = static_cast<std::size_t>(4) * h;
      buffers.push_back(std::make_unique<WidthBuffers>(*backend_, m * widest, widest * h));
      WidthBuffers& b = *buffers.back();
      block_flops.push_back(0);
      warm_s.push_back(0);
      Backend& be = *backend_;
      for (const BlockLinear& linear : kBlockLinears) {
        const int k = linear.in * h, n = linear.out * h;
        // Cold: hot are the activation x in the forward, the output gradient dy (in y) in both
        // backward products; the weight and the saved x of the weight gradient are cold. Warm:
        // they are in the last-level cache, out of the private caches.
        const std::size_t x_count = static_cast<std::size_t>(m) * k, y_count = static_cast<std::size_t>(m) * n;
        const std::vector<std::pair<std::function<void()>, CacheFlusher::HotBuffer>> products = {
            {[&be, &b, m, n, k] { be.matmul(false, true, m, n, k, b.x.view(), b.w.view(), b.y.view(), false); }, {b.x.get(), x_count}},
            {[&be, &b, m, n, k] { be.matmul(false, false, m, k, n, b.y.view(), b.w.view(), b.x.view(), true); }, {b.y.get(), y_count}},
            {[&be, &b, m, n, k] { be.matmul(true, false, n, k, m, b.y.view(), b.x.view(), b.w.view(), true); }, {b.y.get(), y_count}},
        };
        for (const auto& [product, hot] : products) {
          cold_products.push_back({product, flusher.cold_except(timer, {hot})});
          warm_s.back() += median_call_time_s(product, warm_flusher.cold_except(timer, {hot}));
        }
        block_flops.back() += 3 * 2.0 * m * n * k;
      }
      flops.push_back(block_flops.back() / kProductsPerWidth);
    }
    const std::vector<Seconds> cold_product_s = interleaved_median_call_times_s(cold_products);
    std::vector<double> cold_achieved, warm_achieved;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      Seconds cold_s = 0;
      for (std::size_t p = 0; p < kProductsPerWidth; ++p) cold_s += cold_product_s[i * kProductsPerWidth + p];
      cold_achieved.push_back(block_flops[i] / cold_s);
      warm_achieved.push_back(block_flops[i] / warm_s[i]);
      if (widths[i] == kCacheWalkWidth) *walk_reference = {cold_s, warm_s[i]};
      progress(format("gemm fp32 block h=%.0f (%.0f tokens): ", widths[i], kTokensPerWidth * widths[i]) +
               format("cold %.3f ms, %.2f GFLOP/s; warm %.3f ms, %.2f GFLOP/s", cold_s * 1e3,
                      cold_achieved.back() / 1e9, warm_s[i] * 1e3, warm_achieved.back() / 1e9));
    }
    const double best = std::max(max_value(cold_achieved), max_value(warm_achieved));
    const CpuPeak computed = cpu_peak_from_cpuinfo(read_text_file("/proc/cpuinfo"));
    double peak = best / 0.9;
    std::string source = format("fp32 peak = best measured GEMM %.2f GFLOP/s / 0.9", best / 1e9);
    if (computed.flops_per_s >= best) {
      peak = computed.flops_per_s;
      source = format("fp32 peak computed = %.0f thread(s) x %.0f MHz x %.0f flop/cycle",
                      computed.threads, computed.clock_hz / 1e6, computed.flops_per_cycle) +
               " (" + computed.isa + ")";
    } else if (computed.flops_per_s > 0) {
      source += format(" (computed %.2f GFLOP/s is below what was measured)",
                       computed.flops_per_s / 1e9);
    }
    progress("gemm fp32: " + source);
    profile->peak_flops_per_s[plan::Precision::fp32] = peak;
    profile->gemm_efficiency[plan::Precision::fp32] = gemm_efficiency_curve(flops, cold_achieved, peak);
    profile->cache.warm_gemm_efficiency[plan::Precision::fp32] = gemm_efficiency_curve(flops, warm_achieved, peak);
    return source;
  }

  /// Fills the bandwidth and the curve; returns the sentence of `source` about them.
  std::string measure_memory(bool quick, const TimerOptions& timer, const ProgressFn& progress,
                      plan::DeviceProfile* profile) {
    const std::size_t largest = quick ? (std::size_t{64} << 20) : (std::size_t{256} << 20);
    std::vector<double> moved, achieved;
    BackendBuffer src(*backend_, largest / sizeof(float)), dst(*backend_, largest / sizeof(float));
    for (std::size_t bytes = 4096; bytes <= largest; bytes *= 4) {
      const Seconds t = median_call_time_s(
          [&] { backend_->copy(dst.view().slice(0, bytes / sizeof(float)), src.view().slice(0, bytes / sizeof(float)), Stream::compute); }, timer);
      moved.push_back(2.0 * bytes);  // read + write
      achieved.push_back(2.0 * bytes / t);
      progress(format("copy %.0f KiB: %.2f GB/s (read + write)", bytes / 1024.0,
                      achieved.back() / 1e9));
    }
    const double largest_copy = achieved.back();  // the DRAM figure: no cache holds it
    profile->memory_bandwidth_bytes_per_s = largest_copy;
    profile->memory_efficiency = efficiency_curve(moved, achieved, largest_copy);
    progress(format("copy: largest %.2f GB/s, best %.2f GB/s", largest_copy / 1e9,
                    max_value(achieved) / 1e9));
    return format("memory bandwidth = median copy of %.0f MiB (read + write bytes); smaller "
                  "copies reached up to %.2f GB/s, clamped to efficiency 1",
                  largest / kBytesPerMiB, max_value(achieved) / 1e9);
  }

  /// Wall-clock medians of one GPT layer's forward ops through the backend, at 512 tokens x
  /// 256 channels (quick: 128 tokens).
  std::vector<OpTiming> time_layer_ops(bool quick, const TimerOptions& timer) {
    const int rows = quick ? 128 : 512, channels = 256, wide = 4 * channels;
    // Activations are at most rows x wide; the weight buffer must hold the largest linear
    // layer (wide x channels), which is larger than rows x wide in quick mode.
    const std::size_t big = static_cast<std::size_t>(rows) * wide;
    const std::size_t weights = std::max(big, static_cast<std::size_t>(wide) * channels);
    BackendBuffer x(*backend_, big), y(*backend_, big), w(*backend_, weights),
        stats(*backend_, 2 * rows);
    struct Op {
      const char* name;
      std::function<void()> run;
    };
    const auto linear = [&](int in, int out) {
      WHALE_CHECK(static_cast<std::size_t>(in) * out <= weights &&
                      static_cast<std::size_t>(rows) * std::max(in, out) <= big,
                  "time_layer_ops: a " + std::to_string(in) + "x" + std::to_string(out) +
                      " layer does not fit its buffers");
      backend_->linear_forward(y.view(), x.view(), w.view(), TensorView{}, rows, in, out);
    };
    const std::vector<Op> ops = {
        {"gelu_forward", [&] { backend_->gelu_forward(y.view(), x.view(), big); }},
        {"layernorm_forward",
         [&] {
           backend_->layernorm_forward(y.view(), stats.view(), stats.view(rows), x.view(),
                                       w.view(), w.view(channels), rows, channels);
         }},
        {"linear_forward attention_out", [&] { linear(channels, channels); }},
        {"linear_forward mlp_down", [&] { linear(wide, channels); }},
        {"linear_forward mlp_up", [&] { linear(channels, wide); }},
        {"linear_forward qkv", [&] { linear(channels, 3 * channels); }},
    };
    std::vector<OpTiming> timings;
    for (const Op& op : ops) {
      OpTiming t;
      t.name = op.name;
      t.calls = timer.samples;
      t.median_s = median_call_time_s(op.run, timer);
      t.total_s = t.median_s * t.calls;
      timings.push_back(t);
    }
    return timings;
  }

  std::string model_name_;
  std::unique_ptr<Backend> backend_;
};

}  // namespace

CpuPeak cpu_peak_from_cpuinfo(const std::string& cpuinfo) {
  CpuPeak peak;
#if defined(EIGEN_VECTORIZE_AVX512)
  const int lanes = 16;
  peak.isa = "avx512";
#elif defined(EIGEN_VECTORIZE_AVX)
  const int lanes = 8;
  peak.isa = "avx";
#else
  const int lanes = 4;
  peak.isa = "sse";
#endif
#if defined(EIGEN_VECTORIZE_FMA)
  peak.isa += "+fma";
  peak.flops_per_cycle = lanes * 2.0 * 2.0;  // two FMA ports, 2 flops per lane each
#else
  peak.flops_per_cycle = lanes * 2.0;        // one add port and one multiply port
#endif
  peak.threads = Eigen::nbThreads();
  const std::string mhz = first_field(cpuinfo, "cpu MHz");
  peak.clock_hz = mhz.empty() ? 0.0 : std::atof(mhz.c_str()) * 1e6;
  peak.flops_per_s = peak.threads * peak.clock_hz * peak.flops_per_cycle;
  return peak;
}

Bytes mem_available_bytes(const std::string& meminfo) {
  const std::string kib = first_field(meminfo, "MemAvailable");
  return kib.empty() ? 0.0 : std::atof(kib.c_str()) * 1024.0;
}

std::unique_ptr<DeviceProber> make_cpu_prober() { return std::make_unique<CpuProber>(); }

}  // namespace whale::exec
