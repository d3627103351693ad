// File: layer_times_csv.cpp
// Reads and checks the CSV of measured layer times, and hands them to the plans and the
// calibrated profiles (layer_times_csv.h).
#include "whale/sim/layer_times_csv.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "csv_rows.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "whale/plan/model.h"

namespace whale::sim {
namespace {

const std::vector<std::string> kColumns = {"device_model", "layer_kind", "tp", "micro_batch",
                                           "forward_s", "backward_s"};
// The range of each number (docs/calibrate.md): tp up to whale's device limit, a micro-batch
// up to its batch limit (docs/limits.md), a layer's pass up to an hour (more is a unit mix-up).
constexpr long kMaxTp = plan::kMaxDevices;
constexpr CsvRange kMicroBatch{"samples", plan::kMaxGlobalBatch};
constexpr CsvRange kLayerTime{"seconds", 3600};

int parse_tp(const std::string& path, const CsvRow& row) {
  const std::string& text = row.fields[2];
  errno = 0;
  char* end = nullptr;
  const long tp = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || tp < 1 || tp > kMaxTp) {
    throw Error(path, csv_where(row.line, 3, kColumns),
                "expected an integer >= 1 and <= " + std::to_string(kMaxTp) + ", got '" + text + "'",
                "the tensor-parallel degree of the stage the layer ran in (1 without tensor parallelism)");
  }
  return static_cast<int>(tp);
}

plan::MeasuredLayerTime parse_row(const std::string& path, const std::string& profiles_dir, const CsvRow& row,
                                  std::string* model) {
  *model = row.fields[0];
  if (model->empty() || !std::filesystem::is_regular_file(profiles_dir + "/" + *model + ".yaml")) {
    throw Error(path, csv_where(row.line, 1, kColumns), "a device model with a profile, got '" + *model + "'",
                "name the model as cluster files do; its profile must be in " + profiles_dir);
  }
  plan::MeasuredLayerTime m;
  if (!plan::parse_layer_kind(row.fields[1], &m.kind)) {
    throw Error(path, csv_where(row.line, 2, kColumns), "a layer kind, got '" + row.fields[1] + "'",
                "use embedding, transformer, head or custom");
  }
  m.tp = parse_tp(path, row);
  m.micro_batch = *csv_positive(path, row, 4, kColumns, kMicroBatch, false,
                                "the samples one device processed in one micro-batch");
  const std::string seconds_hint = "the median time of the layer's pass in seconds";
  m.forward_s = *csv_positive(path, row, 5, kColumns, kLayerTime, false, seconds_hint);
  m.backward_s = *csv_positive(path, row, 6, kColumns, kLayerTime, false, seconds_hint);
  return m;
}

}  // namespace

LayerTimesByModel load_layer_times_csv(const std::string& path, const std::string& profiles_dir) {
  LayerTimesByModel out;
  for (const CsvRow& row : read_csv_rows(path, kColumns, "row", "e.g. 'a100-sxm4-80gb,transformer,1,4,0.0021,0.0043'",
                                         std::string("add a row per measured layer shape: ") +
                                             plan::kLayerTimesCsvHeader)) {
    std::string model;
    const plan::MeasuredLayerTime m = parse_row(path, profiles_dir, row, &model);
    plan::LayerTimes& times = out[model];
    times.source = path;
    for (const plan::MeasuredLayerTime& other : times.measurements) {
      if (other.kind == m.kind && other.tp == m.tp && other.micro_batch == m.micro_batch) {
        throw Error(path, "line " + std::to_string(row.line),
                    "one row per (device_model, layer_kind, tp, micro_batch), got a second " + model + " " +
                        row.fields[1] + " tp " + row.fields[2] + " micro-batch " + row.fields[3],
                    "remove the duplicate or keep the median of both");
      }
    }
    times.measurements.push_back(m);
  }
  return out;
}

void apply_layer_times(const LayerTimesByModel& times, plan::Plan* plan) {
  for (auto& [model, profile] : plan->cluster.profiles) {
    const auto it = times.find(model);
    if (it != times.end()) profile.layer_times = it->second;
  }
}

void add_layer_times_profiles(const LayerTimesByModel& times, const std::string& profiles_dir,
                              CalibrationResult* result) {
  for (const auto& [model, layer_times] : times) {
    auto it = result->profiles.find(model);
    if (it == result->profiles.end()) {
      it = result->profiles.emplace(model, plan::load_device_profile(profiles_dir + "/" + model + ".yaml")).first;
    }
    it->second.layer_times = layer_times;
  }
}

}  // namespace whale::sim
