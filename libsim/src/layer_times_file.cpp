// File: layer_times_file.cpp
// Tells the formats of a layer-times file apart and reads it with its reader
// (layer_times_file.h).
#include "whale/sim/layer_times_file.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "whale/plan/error.h"
#include "whale/plan/layer_times_import.h"
#include "whale/plan/limits.h"
#include "whale/plan/text_file.h"

namespace whale::sim {
namespace {

// Enough of the file to see its kind: PyTorch writes "traceEvents" after the device
// properties, a few kilobytes in.
constexpr std::size_t kSniffBytes = 1 << 20;

std::string head_of(const std::string& path) {
  plan::read_text_file(path, "layer-times");  // the one error per unusable file
  std::ifstream in(path, std::ios::binary);
  std::string head(kSniffBytes, '\0');
  in.read(&head[0], static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

const char* format_name(LayerTimesFormat format) {
  switch (format) {
    case LayerTimesFormat::csv: return "a CSV";
    case LayerTimesFormat::layer_profile_json: return "a per-layer profile JSON";
    case LayerTimesFormat::torch_trace: return "a PyTorch profiler trace";
    case LayerTimesFormat::megatron_log: return "a Megatron-LM log";
  }
  return "";
}

void check_device_model(const std::string& path, LayerTimesFormat format, const std::string& model,
                        const std::string& profiles_dir) {
  if (format == LayerTimesFormat::csv) {
    if (!model.empty()) {
      throw Error(path, "--layer-times-device", "no device model for a CSV, got '" + model + "'",
                  "the CSV names the device model on each row; --layer-times-device goes with the other formats");
    }
    return;
  }
  if (model.empty() || !std::filesystem::is_regular_file(profiles_dir + "/" + model + ".yaml")) {
    throw Error(path, "--layer-times-device", std::string("the device model that measured ") + format_name(format) +
                ", with a profile in " + profiles_dir + ", got '" + model + "'",
                "the file does not name its device: add --layer-times-device MODEL");
  }
}

void check_shape_flags(const std::string& path, LayerTimesFormat format, const LayerTimesOptions& options) {
  if (format == LayerTimesFormat::torch_trace) {
    if (!(options.micro_batch > 0) || options.micro_batch > plan::kMaxGlobalBatch) {
      throw Error(path, "--layer-times-micro-batch", "the samples per device per micro-batch of the traced run "
                  "(> 0 and <= " + std::to_string(plan::kMaxGlobalBatch) + "), got " + number_text(options.micro_batch),
                  "a trace does not say its batch: add --layer-times-micro-batch N");
    }
    if (options.tp < 0 || options.tp > plan::kMaxDevices) {
      throw Error(path, "--layer-times-tp", "a tensor-parallel degree >= 1, got " + std::to_string(options.tp),
                  "the degree of the traced run (1 without tensor parallelism)");
    }
    return;
  }
  if (options.micro_batch != 0 || options.tp != 0) {
    throw Error(path, options.micro_batch != 0 ? "--layer-times-micro-batch" : "--layer-times-tp",
                std::string("no micro-batch or tp flag for ") + format_name(format) + ", got one",
                "those flags describe a torch trace; the other formats state their micro-batch and tp");
  }
}

}  // namespace

LayerTimesFormat detect_layer_times_format(const std::string& path) {
  const std::string head = head_of(path);
  std::size_t first = 0;
  if (head.compare(0, 3, "\xEF\xBB\xBF") == 0) first = 3;  // a UTF-8 byte-order mark
  while (first < head.size() && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
  if (first < head.size() && head[first] == '[') return LayerTimesFormat::torch_trace;
  if (first < head.size() && head[first] == '{') {
    return head.find("\"traceEvents\"") != std::string::npos ? LayerTimesFormat::torch_trace
                                                              : LayerTimesFormat::layer_profile_json;
  }
  for (const char* marker : {"------------------------ arguments ------------------------",
                             "time across ranks (ms):", "times across ranks (ms):"}) {
    if (head.find(marker) != std::string::npos) return LayerTimesFormat::megatron_log;
  }
  return LayerTimesFormat::csv;
}

LayerTimesByModel load_layer_times(const std::string& path, const LayerTimesOptions& options,
                                   const std::string& profiles_dir) {
  const LayerTimesFormat format = detect_layer_times_format(path);
  check_device_model(path, format, options.device_model, profiles_dir);
  check_shape_flags(path, format, options);
  switch (format) {
    case LayerTimesFormat::csv: return load_layer_times_csv(path, profiles_dir);
    case LayerTimesFormat::layer_profile_json:
      return {{options.device_model, plan::load_layer_profile_json(path)}};
    case LayerTimesFormat::torch_trace:
      return {{options.device_model,
               plan::load_torch_trace_layer_times(path, options.micro_batch, options.tp == 0 ? 1 : options.tp)}};
    case LayerTimesFormat::megatron_log:
      return {{options.device_model, plan::load_megatron_log_layer_times(path)}};
  }
  return {};
}

}  // namespace whale::sim
