// File: search_mixed_tp.cpp
// mixed_tp_variants: per-model tp degrees for the device groups that mix device models, the
// replicas re-cut model by model and the micro-batch split by replica peak.
#include "whale/plan/search_mixed_tp.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "whale/plan/framework_precision.h"

namespace whale::plan {
namespace {

/// The devices of one device model in a group, in the group's order.
struct ModelDevices {
  std::string model;
  std::vector<int> devices;
};

std::vector<ModelDevices> models_in_order(const Cluster& cluster, const std::vector<int>& devices) {
  std::vector<ModelDevices> out;
  for (int d : devices) {
    const std::string& model = cluster.devices.at(d).model;
    auto it = std::find_if(out.begin(), out.end(), [&](const ModelDevices& m) { return m.model == model; });
    if (it == out.end()) out.push_back({model, {d}});
    else it->devices.push_back(d);
  }
  return out;
}

/// The degrees a model's devices in a group may take, ascending.
std::vector<int> degree_options(const Plan& plan, const std::vector<int>& devices) {
  std::vector<int> out;
  const int count = static_cast<int>(devices.size());
  for (int tp = 1; tp <= count; tp *= 2) {
    if (count % tp != 0) continue;
    if (!tp_splits_layers(plan.model, tp)) continue;
    if (plan.cluster.runs_inside_nodes(devices, tp)) out.push_back(tp);
  }
  return out;
}

/// `total` samples over replicas weighted by `weights`: at least one each, the rest by largest
/// remainder (ties to the lower index). Requires total >= weights.size().
std::vector<int> split_samples(int total, const std::vector<double>& weights) {
  double sum = 0;
  for (double w : weights) sum += w;
  const int spare = total - static_cast<int>(weights.size());
  std::vector<int> shares(weights.size(), 1);
  std::vector<double> remainder(weights.size());
  int given = 0;
  for (std::size_t r = 0; r < weights.size(); ++r) {
    const double want = spare * weights[r] / sum;
    shares[r] += static_cast<int>(std::floor(want));
    given += static_cast<int>(std::floor(want));
    remainder[r] = want - std::floor(want);
  }
  for (; given < spare; ++given) {
    const std::size_t r = std::max_element(remainder.begin(), remainder.end()) - remainder.begin();
    ++shares[r];
    remainder[r] = -1;
  }
  return shares;
}

/// `plan` with every stage on `group` laid out as replicas of `degrees[m]` devices of model m.
Plan with_degrees(const Plan& plan, int group, const std::vector<ModelDevices>& models,
                  const std::vector<int>& degrees) {
  Plan out = plan;
  std::vector<int> devices, replica_tps;
  std::vector<double> weights;
  for (std::size_t m = 0; m < models.size(); ++m) {
    const DeviceProfile& profile = plan.cluster.profile_of(models[m].devices.front());
    const double peak = profile.peak(effective_gemm_precision(plan.precision, plan.framework_precision, profile));
    devices.insert(devices.end(), models[m].devices.begin(), models[m].devices.end());
    for (std::size_t r = 0; r < models[m].devices.size() / degrees[m]; ++r) {
      replica_tps.push_back(degrees[m]);
      weights.push_back(peak * degrees[m]);
    }
  }
  const std::vector<int> shares = split_samples(plan.micro_batch_size, weights);
  for (int s = 0; s < static_cast<int>(out.stages.size()); ++s) {
    if (out.group_of_stage(s) != group) continue;
    Stage& stage = out.stages[s];
    stage.devices = devices;
    stage.replica_tps = replica_tps;
    stage.tp = *std::max_element(replica_tps.begin(), replica_tps.end());
    stage.shares = shares;
    stage.sequence_parallel = false;
    stage.shard_optimizer = false;
    stage.shard_gradients = false;
  }
  return out;
}

}  // namespace

std::vector<Plan> mixed_tp_variants(const Plan& plan, std::size_t max_variants) {
  std::vector<Plan> out;
  if (plan.model.moe) return out;
  for (int group = 0; group < plan.pipeline_groups(); ++group) {
    int first = 0;
    while (plan.group_of_stage(first) != group) ++first;
    const std::vector<ModelDevices> models = models_in_order(plan.cluster, plan.stages[first].devices);
    if (models.size() < 2) continue;
    std::vector<std::vector<int>> options;
    for (const ModelDevices& m : models) options.push_back(degree_options(plan, m.devices));
    std::vector<std::size_t> pick(models.size(), 0);
    while (out.size() < max_variants) {
      std::vector<int> degrees;
      for (std::size_t m = 0; m < models.size(); ++m) degrees.push_back(options[m][pick[m]]);
      int replicas = 0;
      for (std::size_t m = 0; m < models.size(); ++m) replicas += static_cast<int>(models[m].devices.size()) / degrees[m];
      const bool uniform = std::all_of(degrees.begin(), degrees.end(), [&](int d) { return d == degrees.front(); });
      if (!uniform && replicas <= plan.micro_batch_size) out.push_back(with_degrees(plan, group, models, degrees));
      std::size_t m = models.size();  // the last model's degree changes fastest
      while (m > 0 && ++pick[m - 1] == options[m - 1].size()) pick[--m] = 0;
      if (m == 0) break;
    }
  }
  return out;
}

}  // namespace whale::plan
