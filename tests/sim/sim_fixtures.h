// File: sim_fixtures.h
// Tiny hand-checkable inputs for the simulator tests, built in code: flat-efficiency profiles,
// one-link clusters, single-GEMM layers and pipelines of them.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/cost_model.h"
#include "whale/plan/plan.h"

namespace whale::sim::test {

/// A device with efficiency 1 everywhere (empty curves): bf16 peak `peak_flops_per_s`, memory
/// bandwidth `bandwidth_bytes_per_s`, capacity `memory_bytes`, launch 0.
inline plan::DeviceProfile flat_profile(double peak_flops_per_s, double bandwidth_bytes_per_s,
                                        double memory_bytes = 80e9) {
  plan::DeviceProfile p;
  p.name = "flat";
  p.kind = "gpu";
  p.memory_bytes = memory_bytes;
  p.memory_bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  p.peak_flops_per_s[plan::Precision::bf16] = peak_flops_per_s;
  p.peak_flops_per_s[plan::Precision::fp32] = peak_flops_per_s / 2;
  return p;
}

inline plan::Link link(double bandwidth_bytes_per_s, double latency_s) {
  plan::Link l;
  l.kind = "test";
  l.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  l.latency_s = latency_s;
  return l;
}

/// `nodes` nodes of `per_node` devices of `profile`, every node with the same links.
inline plan::Cluster make_cluster(int nodes, int per_node, const plan::DeviceProfile& profile,
                                  plan::Link intra, plan::Link network) {
  plan::Cluster c;
  c.name = "test";
  c.profiles[profile.name] = profile;
  for (int n = 0; n < nodes; ++n) {
    plan::Node node;
    node.name = "node" + std::to_string(n);
    node.intra_link = intra;
    node.network = network;
    for (int i = 0; i < per_node; ++i) {
      const int id = static_cast<int>(c.devices.size());
      c.devices.push_back(plan::Device{id, n, i, profile.name});
      node.device_ids.push_back(id);
    }
    c.nodes.push_back(node);
  }
  return c;
}

/// A layer of one m x n x k GEMM and one memory op of `memory_bytes`, per sample.
inline plan::Layer gemm_layer(double m, double n, double k, double memory_bytes,
                              double parameters = 0) {
  plan::Layer l;
  l.name = "layer";
  l.gemms.push_back(plan::GemmOp{"fc", m, n, k, 1, true});
  if (memory_bytes > 0) l.memory_ops.push_back(plan::MemoryOp{"norm", memory_bytes, false});
  l.parameters = parameters;
  return l;
}

/// A plan of one stage per layer; stage s runs on devices [s*per_stage, (s+1)*per_stage) with
/// the given tp, and every replica takes `share` samples of each micro-batch.
inline plan::Plan pipeline_plan(const plan::Cluster& cluster, std::vector<plan::Layer> layers,
                                plan::ScheduleKind kind, int micro_batches, int per_stage = 1,
                                int tp = 1, int share = 1) {
  plan::Plan p;
  p.cluster = cluster;
  p.model.name = "test";
  p.model.family = "listed";
  p.model.sequence = 1;
  p.model.layers = std::move(layers);
  p.precision = plan::Precision::bf16;
  p.schedule.kind = kind;
  p.micro_batches = micro_batches;
  const int dp = per_stage / tp;
  p.micro_batch_size = dp * share;
  for (int s = 0; s < static_cast<int>(p.model.layers.size()); ++s) {
    plan::Stage st;
    st.first_layer = s;
    st.end_layer = s + 1;
    st.tp = tp;
    for (int d = 0; d < per_stage; ++d) st.devices.push_back(s * per_stage + d);
    st.shares.assign(dp, share);
    p.stages.push_back(st);
  }
  return p;
}

/// The duration of device `device`'s event `name` in the estimate's timeline (evaluated with
/// a timeline); -1 when it has none.
inline double device_event_s(const plan::Estimate& estimate, const std::string& name, int device = 0) {
  for (const plan::TimelineEvent& e : estimate.timeline)
    if (e.device == device && e.name == name) return e.duration_s;
  return -1;
}

/// Four CPUs of one node on a shared-memory link (cluster YAML), and a tiny llama of two MoE
/// blocks (4 experts of width 6, top 2, fp32; model YAML): the MoE tests' scratch specs.
inline const char* const kFourCpuClusterYaml =
    "name: four\nnetwork: {kind: shm, bandwidth_gbps: 40, latency_us: 1}\n"
    "nodes:\n  - {name: n, devices: [{model: cpu, count: 4}], intra_link: {kind: shm, bandwidth_gbps: 40, latency_us: 1}}\n";
inline const char* const kTinyMoeLlamaYaml =
    "name: moe\nfamily: llama\nlayers: 2\nhidden: 8\nheads: 2\nffn_hidden: 16\nsequence: 4\nvocabulary: 10\n"
    "moe: {experts: 4, top_k: 2, expert_ffn_hidden: 6}\ntraining: {global_batch: 8, precision: fp32}\n";

}  // namespace whale::sim::test
