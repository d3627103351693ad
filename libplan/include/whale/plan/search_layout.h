// File: search_layout.h
// From a structure and a choice to concrete stages: shares per replica, the layer partition,
// stage-aware recomputation and optimizer sharding, with the analytic step-time estimate.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "whale/plan/layout_memo.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_estimate.h"
#include "whale/plan/search_space.h"

namespace whale::plan {

/// Memory-saving rungs, cheapest first: 0 none, 1 sharded optimizer, 2 selective
/// recomputation (+ sharding), 3 full recomputation (+ sharding), 4 full recomputation +
/// sharded optimizer and gradients (ZeRO-2). Sharding applies when dp > 1.
constexpr int kMaxRung = 4;
Recompute rung_recompute(int rung);
bool rung_shards(int rung, int dp);
bool rung_shards_gradients(int rung, int dp);
/// The highest rung the analytic model's strategies allow (3 without ZeRO-2).
int max_rung(const AnalyticModel& analytic);

/// The pipeline's fill and drain in build_layout's estimate, as a share of 1f1b's (1/3 for
/// zb-h1).
double bubble_share(ScheduleKind kind);

/// How the layers are split over the stages. With one stage per group the two agree.
enum class Split {
  best,        // whichever of the two below has the lower analytic step time
  per_stage,   // min-max of the single stage's cost (partition_layers)
  per_group,   // min-max of each group's summed stage cost (partition_layers_grouped)
};

struct LayoutRules {
  std::vector<int> fixed_boundaries;  // non-empty: stage s holds [b[s], b[s+1]) (from hints)
  Split split = Split::best;          // ignored with fixed boundaries or even layers
  bool even_layers = false;           // baseline: even split of the transformer layers
  bool even_shares = false;           // baseline: even shares, no speed weighting
  bool uniform_rung = false;          // baseline: one recomputation/sharding rung for all stages
  std::vector<int> min_rung;          // per group: the lowest rung allowed (empty = 0)
};

/// The per-device memory gap of a layout that does not fit, at its most frugal rung.
struct Shortfall {
  Bytes need_bytes = 0;
  Bytes usable_bytes = 0;
  Bytes state_bytes = 0;          // of need: weights, gradients, optimizer state
  int device = -1;                // one device that overflows
  std::string device_model;
  Bytes gap() const { return need_bytes - usable_bytes; }
};

struct Layout {
  bool fits = false;               // false: no split fits (see shortfall)
  std::vector<Stage> stages;       // filled when fits
  std::vector<int> rungs;          // per group
  Seconds estimate_s = 0;          // analytic step time
  Split split = Split::per_stage;  // the split it took
  /// With several stages per group and Split::best: the analytic step time of the other split
  /// when it differs and fits (0 otherwise). The analytic model misjudges interleaved bubbles
  /// by a few percent, so the planner simulates both when they are that close.
  Seconds other_split_estimate_s = 0;
  Shortfall shortfall;             // when !fits
};

/// Builds the layout of one candidate. Deterministic; never throws. `memo`, when given, keeps
/// range costs and partitions for the next calls of the same search (the same AnalyticModel):
/// the same layouts, bit for bit, with less work.
Layout build_layout(AnalyticModel& analytic, const Structure& structure, const Choice& choice,
                    const LayoutRules& rules, LayoutMemo* memo = nullptr);

/// A lower bound of build_layout(...).estimate_s over every choice of `structure` with this
/// micro-batch size: the global batch over the summed per-sample speed of the replicas (compute
/// and tensor-parallel all-reduces), each at the largest share it could get, times the least
/// pipeline bubble (1 + (p - 1) / (4 m)).
Seconds structure_bound_s(AnalyticModel& analytic, const Structure& structure, int micro_batch_size,
                          int global_batch);

/// How much of the model's state (weights, gradients, sharded optimizer state) the structure
/// can hold: the sum over groups of the fraction each could hold alone (capped at 1). Below 1
/// no layout of the structure fits.
double structure_hold_fraction(AnalyticModel& analytic, const Structure& structure);

/// structure_bound_s and structure_hold_fraction with their per-group figures remembered by
/// group (the structures of one search share their groups, each in many structures): the same
/// values, bit for bit. The groups must outlive it; not thread-safe.
class StructureFigures {
 public:
  explicit StructureFigures(AnalyticModel& analytic) : analytic_(analytic) {}
  Seconds bound_s(const Structure& structure, int micro_batch_size, int global_batch);
  double hold_fraction(const Structure& structure);
  /// A lower bound of bound_s(structure, b, global_batch) over every micro-batch size b >=
  /// `smallest_micro_batch_size` that divides the global batch and gives every replica a sample
  /// (b >= each group's dp), rounding included: what a search needs to visit structures lazily
  /// in the order of their items' bounds. Each replica counts at its best speed over all such
  /// b, with the bubble of the smallest b.
  Seconds least_bound_s(const Structure& structure, int smallest_micro_batch_size, int global_batch);
  /// The memory verdict and step-time lower bound of the choices of `structure` at one
  /// micro-batch size, before any layout is built: +infinity when no layout of them can fit
  /// (the verdict), else a lower bound of their build_layout(...).estimate_s at least
  /// bound_s. `one_chunk`: the choices run one stage per group (1f1b, gpipe, zb-h1), so each
  /// group's layers share one memory rung; otherwise (interleaved-1f1b, wave) each layer
  /// counts at its cheapest time and its smallest memory over the rungs. Group g of p keeps at
  /// least min(m, p - g) micro-batches of activations (1f1b's count, the least of every
  /// schedule), can hold only the layers whose summed memory fits its usable memory and spends
  /// at least their summed time per micro-batch at its slowest replica class; the bound is m
  /// times the least per-micro-batch time of the slowest group over every assignment of the
  /// layers (taking the cheapest layers of each group: a relaxation of contiguous ranges).
  /// Beyond the slowest group it counts the pipeline's fill and drain, at least
  /// `bubble_factor` (the least over the choices of build_layout's bubble share over its
  /// divisor) times the summed time of the other groups (each layer at its fastest group), and
  /// the exposed gradient reduction of a group holding ceil(layers / p) layers or more.
  Seconds memory_bound_s(const Structure& structure, int micro_batch_size, int global_batch, bool even_shares,
                         bool one_chunk, double bubble_factor);

 private:
  // What memory_bound_s needs of one group at one micro-batch size, remembered.
  struct GroupLayers {
    // Per device model of the group: its largest share, usable bytes and index into per_model_.
    std::vector<std::tuple<int, Bytes, const std::vector<std::vector<double>>*>> models;
    // [rung][k]: seconds per micro-batch of the k cheapest blocks (layers but the outer ones,
    // outer_layer) at the slowest class.
    // Rows 0..top as above; row top + 1: each layer's seconds at rung 0, in layer order.
    const std::vector<std::vector<double>>* time_prefix = nullptr;
    // [k]: the least data-parallel gradient reduction seconds of any k layers of the group.
    std::vector<double> reduction_prefix;
    // By micro-batches in flight: [rung] the most blocks that fit (last: each at its least memory).
    std::map<int, std::vector<int>> most_layers;
  };
  GroupLayers& group_layers(const GroupSpec& group, int micro_batch_size, bool even_shares);
  bool outer_layer(int layer) const;   // the embedding or the head
  const std::vector<int>& most_layers(const GroupSpec& group, GroupLayers& layers, int in_flight);
  struct KeyHash {
    size_t operator()(const std::pair<const GroupSpec*, int>& k) const {
      return std::hash<const void*>()(k.first) * 31 + static_cast<size_t>(k.second);
    }
  };
  // Per replica kind of a group: samples per second per sample of share, at that share.
  const std::vector<double>& kind_speeds(const GroupSpec& group, int share);
  double group_hold_fraction(const GroupSpec& group);
  // Samples per second of the group's replicas, each at its best share over the micro-batch
  // sizes that divide the global batch.
  double group_best_speed(const GroupSpec& group, int global_batch);

  AnalyticModel& analytic_;
  std::unordered_map<std::pair<const GroupSpec*, int>, std::vector<double>, KeyHash> speeds_;
  std::unordered_map<const GroupSpec*, double> held_;
  std::unordered_map<const GroupSpec*, double> best_speed_;   // at best_speed_batch_
  int best_speed_batch_ = 0;
  std::vector<int> batch_divisors_;   // of best_speed_batch_
  std::map<std::tuple<const GroupSpec*, int, bool>, GroupLayers> group_layers_;
  // By (device model, tp, dp): [rung][2 * layer] the layer's state bytes, [2 * layer + 1] its
  // kept activation bytes per sample and micro-batch in flight (rungs 0..kMaxRung, then the
  // smallest of each over the rungs).
  std::map<std::tuple<std::string, int, int>, std::vector<std::vector<double>>> per_model_;
  // By (device model, tp, share, link bandwidth, link latency): time rows as GroupLayers.
  std::map<std::tuple<std::string, int, int, double, double>, std::vector<std::vector<double>>> time_rows_;
};

/// Writes `choice` and `layout` into `plan` (stages, micro-batching, schedule, precision);
/// keeps its cluster and model.
void apply_layout(Plan& plan, const Choice& choice, const Layout& layout);

}  // namespace whale::plan
